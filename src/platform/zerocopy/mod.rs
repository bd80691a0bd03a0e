//! Platform leaf: zero-copy sending. The payload lives in an in-memory file that `sendfile(2)`
//! hands to the socket without copying it through user space; the call and the file differ
//! per system (Linux: memfd_create and a 4-argument sendfile; FreeBSD: an anonymous
//! shared-memory object and a 7-argument sendfile).

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "freebsd")]
pub use freebsd::*;
#[cfg(target_os = "linux")]
pub use linux::*;
