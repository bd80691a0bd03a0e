//! Network namespaces (entering one from a thread) and TUN devices: the Linux leaf.
//!
//! A thread that enters a namespace with `setns` stays there, and threads it spawns inherit
//! it; sockets keep the namespace they were created in. `run_in` and `spawn_in` use this to run
//! netsweep's own server and client inside lab hosts without a second binary.

use crate::platform::process::is_root;
use anyhow::{Context, bail};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;
use std::process::Command;

/// Where `ip netns` keeps its namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// Fails with what is needed unless this process can create namespaces.
pub fn check_privileges() -> anyhow::Result<()> {
    if !is_root() {
        bail!(
            "labs need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network namespaces: \
             run `sudo netsweep lab ...`"
        );
    }
    if !Path::new("/proc/self/ns/net").exists() {
        bail!("this kernel has no network namespace support (CONFIG_NET_NS): labs cannot run here");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        bail!("the `ip` command is missing: install iproute2 (apt-get install iproute2)");
    }
    Ok(())
}

pub fn exists(ns: &str) -> bool {
    Path::new(NETNS_DIR).join(ns).exists()
}

/// Processes whose network namespace is `ns` (as `ip netns pids` finds them: the namespace's
/// inode against each process's `/proc/PID/ns/net`), this process excluded.
pub fn pids(ns: &str) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::metadata(Path::new(NETNS_DIR).join(ns)) else {
        return Vec::new();
    };
    let wanted = format!("net:[{}]", target.ino());
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .filter(|&pid| pid != me)
                .filter(|pid| {
                    std::fs::read_link(format!("/proc/{pid}/ns/net"))
                        .is_ok_and(|l| l.to_string_lossy() == wanted)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The name under `/run/netns` of the namespace `link` (`net:[INODE]`, as `/proc/PID/ns/net`
/// reads), when `ip netns` named it.
pub fn name_of(link: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let inode = link
        .strip_prefix("net:[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|n| n.parse::<u64>().ok())?;
    std::fs::read_dir(NETNS_DIR).ok()?.flatten().find_map(|e| {
        std::fs::metadata(e.path())
            .is_ok_and(|m| m.ino() == inode)
            .then(|| e.file_name().to_string_lossy().to_string())
    })
}

/// The network namespace the calling thread is in, when it is not init's: its name under
/// `/run/netns` (a lab host's), else its link (`net:[INODE]`). `None` in init's namespace, or
/// where init's cannot be read and the namespace has no name.
pub fn this_threads() -> Option<String> {
    let link = |p: &str| {
        std::fs::read_link(p)
            .ok()
            .map(|l| l.to_string_lossy().to_string())
    };
    let me = link("/proc/thread-self/ns/net")?;
    match link("/proc/1/ns/net") {
        Some(init) if init == me => None,
        Some(_) => Some(name_of(&me).unwrap_or(me)),
        None => name_of(&me),
    }
}

/// Names of all namespaces `ip netns` knows.
pub fn list() -> Vec<String> {
    std::fs::read_dir(NETNS_DIR)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Lets the calling thread (a delay line: the emulated link) run ahead of the test's own
/// sender and receiver threads when they compete for the same cores, and wake on time.
/// Best effort: without CAP_SYS_NICE the priority stays as it was.
pub fn favour_this_thread() {
    crate::platform::sockopt::tighten_timer_slack();
    // SAFETY: gettid has no preconditions; setpriority on our own thread id.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, -10);
    }
}

/// Moves the calling thread into namespace `ns`.
pub fn enter(ns: &str) -> anyhow::Result<()> {
    let f = File::open(Path::new(NETNS_DIR).join(ns))
        .with_context(|| format!("no network namespace {ns}"))?;
    // SAFETY: setns with a namespace file descriptor we hold open.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot enter namespace {ns}"));
    }
    Ok(())
}

/// Runs `f` on a thread inside namespace `ns` and returns its result.
pub fn run_in<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(ns)?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("thread in namespace {ns} panicked"))?
    })
}

/// Runs `f` on a thread inside a new, unnamed network namespace of its own (`unshare`), which
/// the kernel removes when the thread ends: a scratch namespace to try things in that leaves
/// nothing behind, not even a name under `/run/netns`.
pub fn run_in_scratch<T: Send>(f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare of the network namespace affects only this thread.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .context("cannot create a scratch network namespace (needs root)");
            }
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("thread in a scratch namespace panicked"))?
    })
}

/// Starts a long-running thread inside namespace `ns`.
pub fn spawn_in<F>(ns: &str, f: F) -> anyhow::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let ns = ns.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle =
        std::thread::Builder::new()
            .name(format!("in-{ns}"))
            .spawn(move || match enter(&ns) {
                Ok(()) => {
                    let _ = tx.send(Ok(()));
                    f();
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            })?;
    rx.recv()
        .map_err(|_| anyhow::anyhow!("namespace thread ended early"))??;
    Ok(handle)
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// Attaches to the (persistent) TUN device `name` in the calling thread's namespace.
/// Non-blocking; packets carry no extra header (IFF_NO_PI).
pub fn open_tun(name: &str) -> anyhow::Result<File> {
    if name.len() >= libc::IFNAMSIZ {
        bail!("device name {name:?} is too long");
    }
    // SAFETY: a plain open of a device node; we own the returned descriptor.
    let fd = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error())
            .context("cannot open /dev/net/tun (is the tun module loaded?)");
    }
    // SAFETY: fd is ours.
    let file = unsafe { File::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads an ifreq-sized struct we own.
    if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot attach to TUN device {name}"));
    }
    Ok(file)
}

/// Waits until `fd` is readable or `timeout` passes (microsecond precision).
pub fn wait_readable(fd: &File, timeout: std::time::Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: one pollfd and a timespec, both live for the call.
    unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) > 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A namespace named under /run/netns is known by its inode (root: `ip netns add`).
    #[test]
    fn a_named_network_namespace_is_known_by_its_inode() {
        assert_eq!(name_of("net:[1]"), None);
        assert_eq!(name_of("not a link"), None);
        if !crate::platform::process::is_root() {
            eprintln!("skipped the named namespace: needs root");
            return;
        }
        let name = format!("nsd{}", std::process::id() % 100_000);
        let made = std::process::Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            eprintln!("skipped the named namespace: `ip netns add` failed");
            return;
        }
        use std::os::unix::fs::MetadataExt;
        let inode = std::fs::metadata(format!("/run/netns/{name}")).map(|m| m.ino());
        let known = inode
            .as_ref()
            .is_ok_and(|i| name_of(&format!("net:[{i}]")).as_deref() == Some(name.as_str()));
        // A thread inside it is there by that name; this one, in init's, is nowhere.
        let inside = run_in(&name, this_threads);
        let outside = this_threads();
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &name])
            .status();
        let inode = inode.expect("the namespace's file");
        assert!(known, "inode {inode} under /run/netns");
        assert_eq!(inside.ok().flatten().as_deref(), Some(name.as_str()));
        assert_eq!(outside, None);
        // Gone with its file once deleted.
        assert_eq!(name_of(&format!("net:[{inode}]")), None);
    }
}
