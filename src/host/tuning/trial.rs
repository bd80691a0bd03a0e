//! Sysctls checked by trying, before a campaign or `run --check`: whether each key of a profile
//! can be written where the profile is meant to act. A lab host is a network namespace, so a
//! key is tried in a scratch namespace (`netns::run_in_scratch`: read, write the same value
//! back, and the namespace goes with its thread, nothing left changed); a host or a guest (its
//! own kernel) is read and given its own value back. The failure says the true reason (absent
//! in a namespace, read-only there on this kernel, refused by the kernel) and where such a key
//! can act instead. Called by `tuning::validate`.

use super::Target;
use crate::platform::{netns, sysctl};

/// Where a key that cannot act in a network namespace can act instead.
pub const ELSEWHERE: &str = "a key like this acts only where a kernel is whole: in the guests \
     of a VM lab, which have their own kernels ([target] vm = \"both\"), or on the host itself \
     (a loopback or address target, or `netsweep tune apply`), where it changes the whole machine";

/// Why `key` cannot be written inside a network namespace on this kernel, or `None` when it
/// can: tried in a scratch namespace.
pub fn in_namespace(key: &str) -> Option<String> {
    let release = kernel_release();
    match netns::run_in_scratch(|| attempt(key)) {
        Err(e) => Some(format!(
            "it could not be tried in a network namespace: {e:#}"
        )),
        Ok(Ok(())) => None,
        Ok(Err(Attempt::Absent)) => Some(format!(
            "{key} does not exist inside a network namespace on this kernel ({release}): it is \
             host-wide, one value for the whole machine"
        )),
        Ok(Err(Attempt::Unreadable(e))) => Some(format!(
            "{key} cannot be read inside a network namespace on this kernel ({release}): {e}"
        )),
        Ok(Err(Attempt::ReadOnly(e))) => Some(format!(
            "{key} is read-only inside a network namespace on this kernel ({release}): writing \
             it there gives \"{e}\"; the namespace sees the host's value and cannot change it"
        )),
        Ok(Err(Attempt::Refused(e))) => Some(format!(
            "the kernel ({release}) refuses to write {key} inside a network namespace: {e}"
        )),
    }
}

/// Why `key` cannot be written on a host or guest target, or `None` when it can: its value is
/// read and written back unchanged, then read again.
pub fn read_back(t: &Target, key: &str) -> Option<String> {
    let before = match t.read(key) {
        Ok(v) => v,
        Err(e) => return Some(format!("{e:#}")),
    };
    if let Err(e) = t.write(key, &before) {
        return Some(format!(
            "{key} cannot be written on {}: {e:#} (its value was written back unchanged as a trial)",
            t.id()
        ));
    }
    match t.read(key) {
        Ok(after) if after == before => None,
        Ok(after) => Some(format!(
            "{key} on {} read {before:?} but {after:?} after the same value was written back: \
             the kernel does not keep what is written",
            t.id()
        )),
        Err(e) => Some(format!("{e:#}")),
    }
}

/// How trying one key in a namespace went.
enum Attempt {
    Absent,
    Unreadable(std::io::Error),
    ReadOnly(std::io::Error),
    Refused(std::io::Error),
}

fn attempt(key: &str) -> Result<(), Attempt> {
    let value = sysctl::read(key).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Attempt::Absent,
        _ => Attempt::Unreadable(e),
    })?;
    sysctl::write(key, &value).map_err(|e| match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EROFS) => Attempt::ReadOnly(e),
        _ => Attempt::Refused(e),
    })
}

fn kernel_release() -> String {
    crate::inputs::read_pseudo(std::path::Path::new("/proc/sys/kernel/osrelease"))
        .map(|r| format!("Linux {}", r.trim()))
        .unwrap_or_else(|_| "this kernel".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Measured on this project's kernels: rmem_max is read-only in a namespace, tcp_rmem is
    /// the namespace's own, netdev_max_backlog is absent. Detected, never assumed: a kernel
    /// where rmem_max became writable per namespace passes the first check.
    #[test]
    fn keys_are_tried_in_a_scratch_namespace() {
        if !crate::platform::process::is_root() {
            eprintln!("SKIPPED keys_are_tried_in_a_scratch_namespace: needs root (unshare)");
            return;
        }
        let host_before = sysctl::read("net.core.rmem_max").unwrap();
        assert_eq!(in_namespace("net.ipv4.tcp_rmem"), None);
        if let Some(why) = in_namespace("net.core.rmem_max") {
            assert!(
                why.contains("read-only inside a network namespace") && why.contains("Linux "),
                "{why}"
            );
        }
        if let Some(why) = in_namespace("net.core.netdev_max_backlog") {
            assert!(
                why.contains("does not exist inside a network namespace"),
                "{why}"
            );
        }
        assert_eq!(sysctl::read("net.core.rmem_max").unwrap(), host_before);
    }
}
