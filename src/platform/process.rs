//! Processes, by their ids: whether one exists, signalling and reaping one, whether this one
//! runs as root, starting a child in a session of its own, where standard error goes, and the
//! kernel's clock tick (the unit of `/proc` CPU counters). The only home of these libc calls;
//! labs, guests, tuning's journal, `doctor` and the server's `-D` call them here.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Whether process `pid` exists, checked with signal 0 (kill(2)): nothing is delivered, it
/// works without `/proc` (FreeBSD) and whatever `/proc`'s `hidepid` hides, and a process of
/// another user counts (`EPERM`). Pid 0 is no process (kill(0, 0) would ask about our own
/// process group, which always exists), nor is a pid beyond `pid_t`.
pub fn alive(pid: u32) -> bool {
    let Some(pid) = pid_t(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Asks process `pid` to end (SIGTERM). The caller has checked that `pid` is its own process.
pub fn terminate(pid: u32) {
    signal(pid, libc::SIGTERM);
}

/// Ends process `pid` (SIGKILL). The caller has checked that `pid` is its own process.
pub fn kill(pid: u32) {
    signal(pid, libc::SIGKILL);
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Some(pid) = pid_t(pid) {
        // SAFETY: kill(2) on a positive pid the caller identified; no memory is touched.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Reaps `pid` if it is an ended child of ours; does not wait, and is harmless otherwise.
pub fn reap(pid: u32) {
    if let Some(pid) = pid_t(pid) {
        // SAFETY: non-blocking waitpid on a positive pid, no status asked.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    }
}

/// A positive `pid_t`, or `None` for 0 and for ids beyond it (which kill(2) would read as a
/// process group or as every process).
fn pid_t(pid: u32) -> Option<libc::pid_t> {
    libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes `cmd`'s child leave our session (setsid(2)) when it starts, so a Ctrl-C here does
/// not stop it.
pub fn detach_session(cmd: &mut Command) {
    // SAFETY: setsid is async-signal-safe, as a pre_exec hook must be.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

/// Points this process's standard error at `file` (dup2(2)): later messages go there.
pub fn stderr_to(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 of a descriptor `file` keeps open onto 2; no memory is touched.
    if unsafe { libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's clock ticks per second (`_SC_CLK_TCK`), at least 1.
pub fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// How to install `package` on this system, as a command where its package manager is on the
/// PATH (`apt-get`, `dnf`, `pkg`, `apk`), else in words: a lab's busybox guest has none of them
/// (a trial's doctor there said `apt-get install ethtool`).
pub fn install_hint(package: &str) -> String {
    install_hint_on(package, &std::env::var_os("PATH").unwrap_or_default())
}

fn install_hint_on(package: &str, path: &std::ffi::OsStr) -> String {
    let has = |tool: &str| std::env::split_paths(path).any(|d| d.join(tool).is_file());
    [
        ("apt-get", "apt-get install"),
        ("dnf", "dnf install"),
        ("pkg", "pkg install"),
        ("apk", "apk add"),
    ]
    .into_iter()
    .find(|(tool, _)| has(tool))
    .map_or_else(
        || format!("install {package} (no package manager known here is on the PATH)"),
        |(_, install)| format!("{install} {package}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_an_ended_child_is_not() {
        assert!(alive(std::process::id()));
        let mut child = Command::new("true").spawn().expect("spawn true");
        let pid = child.id();
        child.wait().expect("wait");
        // Reaped by wait: the pid names no process (unless reused within this instant, which
        // the kernel avoids by cycling through the whole pid space first).
        assert!(!alive(pid));
    }

    /// Regression: the journal's kill(0)-based check called pid 0 alive (kill(0, 0) asks
    /// about our process group), where the registry's /proc check called it dead.
    #[test]
    fn pid_zero_and_pids_beyond_pid_t_are_no_process() {
        assert!(!alive(0));
        assert!(!alive(u32::MAX));
        assert!(!alive(i32::MAX as u32 + 1));
    }

    #[test]
    fn a_detached_child_runs_in_a_session_of_its_own() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "ps -o sid= -p $$"])
            .stdout(std::process::Stdio::piped());
        detach_session(&mut cmd);
        let out = cmd.output().expect("run sh");
        let Ok(sid) = String::from_utf8_lossy(&out.stdout).trim().parse::<u32>() else {
            eprintln!("skipped: `ps -o sid=` printed no session id here (is ps installed?)");
            return;
        };
        // The child leads its own session: its session id is its own pid, never ours.
        // SAFETY: getsid(0) asks about this process; no preconditions.
        let ours = unsafe { libc::getsid(0) } as u32;
        assert_ne!(sid, ours);
    }

    #[test]
    fn a_terminated_child_ends_and_is_reaped() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        terminate(pid);
        let t0 = std::time::Instant::now();
        while alive(pid) && t0.elapsed() < std::time::Duration::from_secs(10) {
            reap(pid);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!alive(pid), "sleep was still there 10 s after SIGTERM");
        // Already reaped above: wait must not find it, or finds it ended by a signal.
        let _ = child.try_wait();
    }

    #[test]
    fn the_clock_tick_is_positive() {
        assert!(clock_ticks_per_second() >= 1.0);
    }

    #[test]
    fn the_install_hint_names_the_package_manager_on_the_path_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let none = install_hint_on("ethtool", dir.path().as_os_str());
        assert!(
            none.starts_with("install ethtool (no package manager"),
            "{none}"
        );
        std::fs::write(dir.path().join("apk"), "").unwrap();
        assert_eq!(
            install_hint_on("ethtool", dir.path().as_os_str()),
            "apk add ethtool"
        );
        std::fs::write(dir.path().join("apt-get"), "").unwrap();
        assert_eq!(
            install_hint_on("ethtool", dir.path().as_os_str()),
            "apt-get install ethtool"
        );
    }
}
