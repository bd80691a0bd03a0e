//! Platform leaves: the system calls and kernel interfaces netsweep uses, each behind one
//! small interface with one file per operating system chosen by `cfg(target_os)`: socket
//! options and TCP_INFO (`sockopt`), zero-copy sending (`zerocopy`), UDP batching
//! (`udpbatch`), thread scheduling (`sched`), network namespaces for labs (`netns`, Linux
//! only), signals (`signals`), file locks (`filelock`), output files that never follow a
//! final symlink (`outfile`), the open-file limit (`fdlimit`), CPU time of the host and of a
//! thread (`cputime`), the wall clock as Unix time (`clock`), whether a congestion control
//! can be set here (`congestion`), password prompts with echo off (`terminal`). Kernel counters, host and NIC
//! facts and sysctl access are read
//! through `host`, which picks the system's sources by `THIS_OS`.

pub mod clock;
pub mod congestion;
pub mod cputime;
pub mod fdlimit;
pub mod filelock;
pub mod netns;
pub mod outfile;
pub mod process;
pub mod sched;
pub mod signals;
pub mod sockopt;
pub mod sysctl;
pub mod terminal;
pub mod udpbatch;
pub mod zerocopy;

/// The operating systems netsweep knows the kernel interfaces of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    Linux,
    FreeBsd,
}

impl Os {
    pub fn name(self) -> &'static str {
        match self {
            Os::Linux => "Linux",
            Os::FreeBsd => "FreeBSD",
        }
    }
}

/// The system this build runs on.
#[cfg(target_os = "linux")]
pub const THIS_OS: Os = Os::Linux;
#[cfg(target_os = "freebsd")]
pub const THIS_OS: Os = Os::FreeBsd;

/// Makes a FIFO at `path` (mode 0600). The tests of everything that must never block on one
/// make theirs here.
pub fn mkfifo(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `uname -a`'s first fields, as iperf3's `system_info`: "Linux host 6.1.0 #1 SMP ... x86_64".
pub fn system_info() -> String {
    // SAFETY: `uname` fills the zeroed struct it is given; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return std::env::consts::OS.to_string();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    [
        field(&u.sysname),
        field(&u.nodename),
        field(&u.release),
        field(&u.version),
        field(&u.machine),
    ]
    .join(" ")
}
