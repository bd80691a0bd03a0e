//! Platform leaf: sending and receiving many UDP datagrams per system call. Linux segments a
//! batch in the kernel (UDP_SEGMENT, "GSO") and coalesces arrivals (UDP_GRO); FreeBSD has
//! neither, so there the engine sends one datagram per call and each receive returns one.

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "freebsd")]
pub use freebsd::*;
#[cfg(target_os = "linux")]
pub use linux::*;
