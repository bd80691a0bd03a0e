//! The iperf3 installed on this host, as pScheduler's iperf3 tool sees it: its
//! `participant-data` runs `iperf3 --version` from the PATH and announces the second word
//! (`iperf 3.12 (cJSON 1.7.15)` is 3.12); its `run` then adds `--use-pkcs1-padding` only where
//! the local version is 3.17 or later and the peer's is older. netsweep started with iperf3's
//! command line (`netsweep -c`/`-s` as the tool's `iperf3_cmd`) logs in with the padding of
//! the version its host announced, so a fleet mixing iperf3 releases and netsweep logs in
//! exactly as it would with iperf3 alone. Called by `cli::auth`.

use super::auth::Padding;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The release from which iperf3 pads with OAEP by default.
pub const OAEP_SINCE: (u64, u64) = (3, 17);

/// How long `iperf3 --version` may take (pScheduler's `participant-data` waits 2 s).
const VERSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The version pScheduler's iperf3 tool reads from `iperf3 --version`'s output: its second
/// word, as (major, minor); `None` when that is not a version.
pub fn announced_version(version_output: &str) -> Option<(u64, u64)> {
    let word = version_output.split_whitespace().nth(1)?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = match parts.next() {
        Some(m) => m
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()?,
        None => 0,
    };
    Some((major, minor))
}

/// The padding of an iperf3 of this version when no `--use-pkcs1-padding` is given; `None`
/// (no iperf3 on the PATH, or an output pScheduler could not read either): OAEP, the
/// default of the iperf3 releases netsweep follows.
pub fn default_padding(version: Option<(u64, u64)>) -> Padding {
    match version {
        Some(v) if v < OAEP_SINCE => Padding::Pkcs1,
        _ => Padding::Oaep,
    }
}

/// Runs `iperf3 --version` from the PATH, as pScheduler's tool does, at most 2 s; its
/// standard output, or `None` when it cannot be run or does not finish in time.
pub fn version_output() -> Option<String> {
    let mut child = Command::new("iperf3")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + VERSION_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child
        .stdout
        .take()?
        .take(4096)
        .read_to_string(&mut out)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_pschedulers_tool_reads_them() {
        assert_eq!(
            announced_version("iperf 3.12 (cJSON 1.7.15)\nLinux host 6.1 #1 SMP\n"),
            Some((3, 12))
        );
        assert_eq!(
            announced_version("iperf 3.17.1 (cJSON 1.7.15)"),
            Some((3, 17))
        );
        assert_eq!(
            announced_version("iperf 3.19.1+ (cJSON 1.7.15)"),
            Some((3, 19))
        );
        assert_eq!(announced_version("netsweep 0.1.0"), Some((0, 1)));
        assert_eq!(announced_version("iperf"), None);
        assert_eq!(announced_version("iperf three"), None);
    }

    #[test]
    fn iperf3_before_3_17_pads_with_pkcs1_and_later_ones_with_oaep() {
        assert_eq!(default_padding(Some((3, 12))), Padding::Pkcs1);
        assert_eq!(default_padding(Some((3, 16))), Padding::Pkcs1);
        // netsweep itself on the PATH as iperf3 announces its own version: pScheduler
        // takes it for an old iperf3 and asks its peers for PKCS#1.
        assert_eq!(default_padding(Some((0, 1))), Padding::Pkcs1);
        assert_eq!(default_padding(Some((3, 17))), Padding::Oaep);
        assert_eq!(default_padding(Some((4, 0))), Padding::Oaep);
        assert_eq!(default_padding(None), Padding::Oaep);
    }
}
