//! A lab's child processes found by their command lines, not only by the PIDs its state file
//! records. A PID is known only once a process is started, so a starter killed (kill -9)
//! between the start and its next state write leaves a `netsweep lab relay NAME` or a QEMU guest
//! that no state names; both carry the lab's name and state directory in their arguments
//! (`lab relay NAME --state-dir DIR`, `-pidfile DIR/NAME.qemu.pid`), and that is the record
//! `down_by_name`, `list` and the next start's recovery read. `classify` is the pure part.

use super::topology::LabNames;
use std::path::Path;

/// What a lab process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `netsweep lab relay NAME`: the userspace delay line, holding both TUN devices.
    Relay,
    /// QEMU (or the `ip netns exec` that is about to become it) of one of the lab's guests.
    Guest,
}

/// A running process of a lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabProcess {
    pub pid: u32,
    pub lab: String,
    pub kind: Kind,
}

/// The lab and kind of a process with arguments `argv`, if it is one of the labs kept in
/// `state_dir` (`default_dir` is where a relay started without `--state-dir` keeps its state).
pub fn classify(argv: &[String], state_dir: &Path, default_dir: &Path) -> Option<(String, Kind)> {
    if let Some(at) = argv
        .windows(3)
        .position(|w| w[0] == "lab" && w[1] == "relay")
    {
        let name = &argv[at + 2];
        let dir = argv
            .iter()
            .position(|a| a == "--state-dir")
            .and_then(|i| argv.get(i + 1))
            .map_or(default_dir, |d| Path::new(d.as_str()));
        return (dir == state_dir && LabNames::new(name).is_ok())
            .then(|| (name.clone(), Kind::Relay));
    }
    if !argv.iter().any(|a| a.contains("qemu-system")) {
        return None;
    }
    let pidfile = argv
        .iter()
        .position(|a| a == "-pidfile")
        .and_then(|i| argv.get(i + 1))
        .map(Path::new)?;
    if pidfile.parent() != Some(state_dir) {
        return None;
    }
    let file = pidfile.file_name()?.to_str()?.strip_suffix(".qemu.pid")?;
    // Host a's guest files are `NAME-a.*`; lab names have no `-`.
    let name = file.strip_suffix("-a").unwrap_or(file);
    LabNames::new(name)
        .is_ok()
        .then(|| (name.to_string(), Kind::Guest))
}

/// Every process of a lab kept in `state_dir` that runs now (read from `/proc`).
pub fn scan(state_dir: &Path) -> Vec<LabProcess> {
    let default_dir = Path::new(super::state::STATE_DIR);
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own)
        .filter_map(|pid| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let (lab, kind) = classify(&argv, state_dir, default_dir)?;
            Some(LabProcess { pid, lab, kind })
        })
        .collect()
}

/// The processes of lab `name` kept in `state_dir`.
pub fn of_lab(name: &str, state_dir: &Path) -> Vec<LabProcess> {
    scan(state_dir)
        .into_iter()
        .filter(|p| p.lab == name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    /// Regression (issue 31, item 7): a relay or QEMU started just before its starter was
    /// killed was named by no state file, so `lab list` and `lab down` could not see it.
    #[test]
    fn relays_and_guests_are_known_by_their_command_lines() {
        let dir = Path::new("/run/netsweep/labs");
        let other = Path::new("/tmp/x");
        assert_eq!(
            classify(&argv("/usr/bin/netsweep lab relay r123"), dir, dir),
            Some(("r123".into(), Kind::Relay))
        );
        assert_eq!(
            classify(
                &argv("/x/netsweep lab relay k7 --state-dir /tmp/x"),
                other,
                dir
            ),
            Some(("k7".into(), Kind::Relay))
        );
        // Another state directory's lab is not ours to list or remove.
        assert_eq!(
            classify(
                &argv("netsweep lab relay k7 --state-dir /tmp/y"),
                other,
                dir
            ),
            None
        );
        let qemu = "ip netns exec nsw-t9-b qemu-system-x86_64 -accel tcg -pidfile \
                    /run/netsweep/labs/t9.qemu.pid -m 256";
        assert_eq!(
            classify(&argv(qemu), dir, dir),
            Some(("t9".into(), Kind::Guest))
        );
        let qemu_a = "qemu-system-x86_64 -pidfile /run/netsweep/labs/t9-a.qemu.pid";
        assert_eq!(
            classify(&argv(qemu_a), dir, dir),
            Some(("t9".into(), Kind::Guest))
        );
        // The accelerator probe's QEMU lives in the image directory; other programs are
        // never taken for a lab's.
        let probe = "qemu-system-x86_64 -pidfile /var/cache/netsweep/vm/probe.qemu.pid";
        assert_eq!(classify(&argv(probe), dir, dir), None);
        assert_eq!(classify(&argv("sleep 100"), dir, dir), None);
        assert_eq!(classify(&argv("netsweep lab relay"), dir, dir), None);
        assert_eq!(classify(&argv("netsweep lab relay a/b"), dir, dir), None);
    }
}
