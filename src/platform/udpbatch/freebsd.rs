//! FreeBSD has no UDP segmentation or receive coalescing: one datagram per call each way.

use std::io;
use std::os::fd::AsRawFd;

/// No segmentation offload: the engine sends one datagram per call from the start.
pub const SEGMENTATION: bool = false;

/// No receive coalescing on FreeBSD.
pub fn enable_udp_gro<S: AsRawFd>(_sock: &S) -> bool {
    false
}

/// Never called (`SEGMENTATION` is false); says why if it is.
pub fn send_segmented<S: AsRawFd>(_sock: &S, _buf: &[u8], _segment: u16) -> io::Result<usize> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "FreeBSD has no UDP segmentation offload",
    ))
}

/// Receives one datagram; never coalesced. (Never asked to truncate: receivers do not skip
/// the copy on FreeBSD, `sockopt::RECV_TRUNC_DISCARDS`.)
pub fn recv_coalesced<S: AsRawFd>(
    sock: &S,
    buf: &mut [u8],
    truncate: bool,
) -> io::Result<(usize, Option<usize>)> {
    if truncate {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "FreeBSD receivers copy what they receive",
        ));
    }
    // SAFETY: recv writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok((rc as usize, None))
    }
}
