//! UDP segmentation and receive offload of Linux (4.18+ and 5.0+).

use crate::platform::sockopt::{recv_with_cmsgs, setsockopt_int};
use std::io;
use std::os::fd::AsRawFd;

/// Whether the kernel can send a batch of datagrams in one call (tried, then kept or dropped
/// per socket by the engine).
pub const SEGMENTATION: bool = true;

const SOL_UDP: libc::c_int = 17;
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

/// Asks the kernel to coalesce received datagrams (UDP_GRO); false when unsupported.
pub fn enable_udp_gro<S: AsRawFd>(sock: &S) -> bool {
    setsockopt_int(sock, SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Sends `buf` as datagrams of `segment` bytes each in one call (UDP_SEGMENT). The last
/// datagram may be shorter. The socket must be connected.
pub fn send_segmented<S: AsRawFd>(sock: &S, buf: &[u8], segment: u16) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // Room for one cmsg carrying a u16.
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; every pointer in it refers to locals that outlive the call,
    // and CMSG_* compute offsets inside `control`, which is large enough for one u16 cmsg.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = SOL_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
        let rc = libc::sendmsg(sock.as_raw_fd(), &msg, 0);
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(rc as usize)
        }
    }
}

/// Receives into `buf`; returns the byte count and, when the kernel coalesced several
/// datagrams (UDP_GRO), their segment size. With `truncate` (MSG_TRUNC) the kernel copies only
/// what fits in `buf` and returns the whole length of what it delivered (udp(7)): the rest is
/// dropped uncopied.
pub fn recv_coalesced<S: AsRawFd>(
    sock: &S,
    buf: &mut [u8],
    truncate: bool,
) -> io::Result<(usize, Option<usize>)> {
    let mut segment = None;
    let flags = if truncate { libc::MSG_TRUNC } else { 0 };
    let n = recv_with_cmsgs(sock, buf, flags, |level, kind, data| {
        if level == SOL_UDP && kind == UDP_GRO && data.len() >= std::mem::size_of::<libc::c_int>() {
            // SAFETY: the kernel wrote a c_int there (length checked above).
            let v = unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<libc::c_int>()) };
            if v > 0 {
                segment = Some(v as usize);
            }
        }
    })?;
    Ok((n, segment))
}
