//! Host diagnostics and tuning: `doctor`, sysctl profiles with their journal (`tuning`), and
//! the kernel's counters and host facts they read (`counters`, `hostfacts`), and a user's
//! libvirt domain whose NIC model a campaign changes and puts back (`libvirt`), and the
//! record of send paths kept between tests (`sendmemory`).

pub mod counters;
pub mod doctor;
pub mod freebsd;
pub mod hostfacts;
pub mod libvirt;
pub mod sendmemory;
pub mod tuning;

/// netsweep's state directory, on storage that survives a reboot: `/var/lib/netsweep` as root,
/// else the user's state directory (`$XDG_STATE_HOME/netsweep`, `~/.local/state/netsweep`);
/// `NETSWEEP_RUNTIME_DIR` when that is set (tests).
pub fn state_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    if let Some(d) = std::env::var_os("NETSWEEP_RUNTIME_DIR") {
        return PathBuf::from(d);
    }
    if crate::platform::process::is_root() {
        return PathBuf::from("/var/lib/netsweep");
    }
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir)
        .join("netsweep")
}
