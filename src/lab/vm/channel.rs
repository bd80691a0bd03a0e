//! The guest's command channel (`lab exec`, guest tuning and counters), served inside the guest
//! by `netsweep lab guest-channel`. It replaces busybox's `nc -ll -e /bin/sh`, which listened on
//! every address with no authentication, so anything on the lab's measured path (host a's
//! namespace included) could run commands as root in the guest.
//!
//! Now the channel listens only on the guest's control address (`Host::control_ipv4`, on the
//! TAP side; the host namespace routes to it for its own traffic only, never forwarding from
//! the path), accepts only its host namespace's router address as the peer, and runs nothing
//! before the peer has sent the lab's token (a random secret per lab, kept in the lab's
//! owner-only state file and given to the guest on its kernel command line) as the first line.
//! After the token line the connection is a shell's standard input and output, as before.
//! The host's side is `exec`, which connects to `EXEC_PORT`; the guest's /init starts `serve`.

use anyhow::{Context, bail};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Longest token line accepted (the token is 32 hex digits).
const MAX_TOKEN_LINE: usize = 128;

/// How long a peer may take to send its token.
const TOKEN_WAIT: Duration = Duration::from_secs(10);

/// Most shells running at once; more connections are closed at once.
const MAX_SESSIONS: usize = 32;

/// What the guest answers to a wrong token before it closes the connection.
pub const REFUSED: &str = "netsweep-guest: command channel refused";

/// A new random token for a lab (128 bits, hex).
pub fn new_token() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `token` can be one (hex, long enough): a guest never runs a channel with a weak one.
pub fn valid_token(token: &str) -> bool {
    token.len() >= 16
        && token.len() < MAX_TOKEN_LINE
        && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `a == b` in a time that does not depend on where they differ.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Reads the first line (without its newline) one byte at a time, so nothing after it is taken
/// from the shell's input; `None` when it is longer than `MAX_TOKEN_LINE` or ends early.
pub fn read_token_line(r: &mut impl Read) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() <= MAX_TOKEN_LINE {
        match r.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => return Some(line),
            Ok(1) => line.push(byte[0]),
            _ => return None,
        }
    }
    None
}

/// Whether a connection may have a shell: from the allowed peer (when one is set), with the
/// token as its first line.
pub fn admit(peer: IpAddr, allowed: Option<IpAddr>, token: &str, first_line: &[u8]) -> bool {
    allowed.is_none_or(|a| a == peer) && same_secret(first_line, token.as_bytes())
}

/// Serves the channel on `listener` (inside the guest) until accepting fails: each admitted
/// connection gets `/bin/sh` with the connection as its standard input, output and error.
pub fn serve(
    listener: TcpListener,
    token_file: &Path,
    allowed: Option<IpAddr>,
) -> anyhow::Result<()> {
    let token = std::fs::read_to_string(token_file)
        .with_context(|| format!("cannot read {}", token_file.display()))?
        .trim()
        .to_string();
    if !valid_token(&token) {
        bail!("{} holds no valid token", token_file.display());
    }
    let token = Arc::new(token);
    let sessions = Arc::new(AtomicUsize::new(0));
    loop {
        let (stream, peer) = listener.accept().context("accept failed")?;
        if sessions.fetch_add(1, Ordering::SeqCst) >= MAX_SESSIONS {
            sessions.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let (token, sessions) = (token.clone(), sessions.clone());
        std::thread::spawn(move || {
            let _ = session(stream, peer.ip(), allowed, &token);
            sessions.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

fn session(
    mut stream: TcpStream,
    peer: IpAddr,
    allowed: Option<IpAddr>,
    token: &str,
) -> anyhow::Result<()> {
    stream.set_read_timeout(Some(TOKEN_WAIT))?;
    let line = read_token_line(&mut stream).unwrap_or_default();
    if !admit(peer, allowed, token, &line) {
        let _ = writeln!(stream, "{REFUSED}");
        return Ok(());
    }
    stream.set_read_timeout(None)?;
    let io = |s: &TcpStream| -> anyhow::Result<std::process::Stdio> {
        Ok(std::os::fd::OwnedFd::from(s.try_clone()?).into())
    };
    let mut child = std::process::Command::new("/bin/sh")
        .stdin(io(&stream)?)
        .stdout(io(&stream)?)
        .stderr(io(&stream)?)
        .spawn()
        .context("cannot start /bin/sh")?;
    drop(stream);
    child.wait()?;
    Ok(())
}

/// The port the channel listens on: one shell per connection, after the lab's token.
pub const EXEC_PORT: u16 = 5311;

/// The script that runs `argv` in the guest's shell and reports its exit status last.
pub fn exec_script(argv: &[String]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    format!(
        "exec 2>&1\n{}\necho \"{RC_MARK}$?\"\nexit\n",
        quoted.join(" ")
    )
}

const RC_MARK: &str = "__netsweep_rc=";

/// Splits a guest's reply into the command's output and its exit status.
pub fn exec_reply(text: &str) -> (String, Option<i32>) {
    match text.rfind(RC_MARK) {
        Some(at) => {
            let rc = text[at + RC_MARK.len()..].trim().parse().ok();
            (text[..at].to_string(), rc)
        }
        None => (text.to_string(), None),
    }
}

/// How often a command's wait looks whether its guest still runs.
const LIVENESS_POLL: Duration = Duration::from_millis(250);

/// Runs `argv` in the guest over `stream` (connected to its `EXEC_PORT`), sending `token`
/// first; returns its output and exit status. Waits at most `silence` without a byte, and
/// fails at once when `alive` says the guest's QEMU has exited: a dead guest sends no reset,
/// so its connection would have waited out the silence (a profile written while a guest was
/// killed waited about 20 s before its run failed).
pub fn exec(
    mut stream: std::net::TcpStream,
    token: &str,
    argv: &[String],
    silence: Duration,
    alive: &dyn Fn() -> bool,
) -> anyhow::Result<(String, i32)> {
    use std::io::{ErrorKind, Read, Write};
    stream.set_read_timeout(Some(LIVENESS_POLL.min(silence)))?;
    stream.write_all(format!("{token}\n{}", exec_script(argv)).as_bytes())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut quiet_since = std::time::Instant::now();
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                // The guest's output is bounded like any file netsweep reads.
                if out.len() as u64 > crate::inputs::MAX_CONFIG_BYTES {
                    bail!(
                        "the guest's answer is larger than {} bytes",
                        crate::inputs::MAX_CONFIG_BYTES
                    );
                }
                quiet_since = std::time::Instant::now();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if !alive() {
                    bail!("the guest's QEMU exited while the command ran in it");
                }
                if quiet_since.elapsed() >= silence {
                    bail!(
                        "the guest's command channel said nothing for {} s",
                        silence.as_secs()
                    );
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("reading the guest's answer"),
        }
    }
    let (text, rc) = exec_reply(&String::from_utf8_lossy(&out));
    if rc.is_none() && text.starts_with(REFUSED) {
        bail!("the guest's command channel refused the lab's token (a guest of another lab?)");
    }
    let rc = rc.context("the guest's shell ended without an exit status")?;
    Ok((text, rc))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 31, item 13): the guest's shell ran anything for anyone who
    /// connected, with no token and from any address.
    #[test]
    fn only_the_tokens_line_from_the_router_opens_a_shell() {
        let token = new_token();
        assert!(valid_token(&token) && token.len() == 32, "{token}");
        assert_ne!(token, new_token());
        let router: IpAddr = "198.18.0.254".parse().unwrap();
        let far: IpAddr = "198.18.0.1".parse().unwrap();
        assert!(admit(router, Some(router), &token, token.as_bytes()));
        assert!(!admit(far, Some(router), &token, token.as_bytes()));
        assert!(!admit(router, Some(router), &token, b""));
        assert!(!admit(router, Some(router), &token, &token.as_bytes()[1..]));
        assert!(!admit(router, Some(router), &token, b"echo hi"));
        assert!(!valid_token("") && !valid_token("short") && !valid_token(&"z".repeat(32)));
    }

    /// A guest that dies mid-command sends no reset: the wait ends at the next look at its
    /// QEMU, not after the channel's silence; a live guest's answer is read whole.
    #[test]
    fn a_command_ends_when_its_guest_dies_and_reads_a_live_guests_answer() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let answer = std::thread::spawn(move || {
            use std::io::{Read, Write};
            // The first connection hears nothing back (a dead guest); the second is answered
            // once its script is read (closing on unread bytes would reset it).
            let (silent, _) = listener.accept().unwrap();
            let (mut live, _) = listener.accept().unwrap();
            let mut script = Vec::new();
            let mut byte = [0u8; 1];
            while !script.ends_with(b"exit\n") && live.read(&mut byte).unwrap() == 1 {
                script.push(byte[0]);
            }
            live.write_all(format!("hello\n{RC_MARK}3\n").as_bytes())
                .unwrap();
            drop(live);
            silent
        });
        let token = new_token();
        let argv = ["true".to_string()];
        let started = std::time::Instant::now();
        let looks = std::cell::Cell::new(0);
        let dies = || {
            looks.set(looks.get() + 1);
            looks.get() < 3
        };
        let stream = std::net::TcpStream::connect(addr).unwrap();
        let e = exec(stream, &token, &argv, Duration::from_secs(300), &dies).unwrap_err();
        assert!(e.to_string().contains("QEMU exited"), "{e:#}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let stream = std::net::TcpStream::connect(addr).unwrap();
        let (text, rc) = exec(stream, &token, &argv, Duration::from_secs(30), &|| true).unwrap();
        assert_eq!((text.as_str(), rc), ("hello\n", 3));
        drop(answer.join().unwrap());
    }

    #[test]
    fn the_token_line_is_read_without_taking_the_script_after_it() {
        let mut input: &[u8] = b"abc123\necho hi\n";
        assert_eq!(read_token_line(&mut input).as_deref(), Some(&b"abc123"[..]));
        assert_eq!(input, b"echo hi\n");
        let mut long: &[u8] = &[b'a'; 1000];
        assert_eq!(read_token_line(&mut long), None);
        let mut cut: &[u8] = b"abc";
        assert_eq!(read_token_line(&mut cut), None);
    }

    #[test]
    fn commands_are_quoted_for_the_guest_shell_and_their_status_read_back() {
        let s = exec_script(&["netsweep".into(), "doctor".into(), "it's".into()]);
        assert_eq!(
            s,
            "exec 2>&1\n'netsweep' 'doctor' 'it'\\''s'\necho \"__netsweep_rc=$?\"\nexit\n"
        );
        assert_eq!(
            exec_reply("line 1\nline 2\n__netsweep_rc=3\n"),
            ("line 1\nline 2\n".to_string(), Some(3))
        );
        assert_eq!(exec_reply("cut off").1, None);
    }
}
