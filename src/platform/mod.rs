//! Platform leaves: the system calls and kernel interfaces netsweep uses, each behind one
//! small interface with one file per operating system chosen by `cfg(target_os)`: socket
//! options and TCP_INFO (`sockopt`), zero-copy sending (`zerocopy`), UDP batching
//! (`udpbatch`), thread scheduling (`sched`), network namespaces for labs (`netns`, Linux
//! only), signals (`signals`), file locks (`filelock`), output files that never follow a
//! final symlink (`outfile`), the open-file limit (`fdlimit`). Kernel counters, host and NIC
//! facts and sysctl access are read
//! through `host`, which picks the system's sources by `THIS_OS`.

pub mod fdlimit;
pub mod filelock;
pub mod netns;
pub mod outfile;
pub mod sched;
pub mod signals;
pub mod sockopt;
pub mod sysctl;
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
