//! Zero-copy sending on FreeBSD: an anonymous shared-memory object (shm_open(SHM_ANON)) and
//! sendfile(2) with FreeBSD's signature (descriptor first, bytes sent returned through a
//! pointer, EAGAIN with a partial count on a non-blocking or timed-out socket).

use std::io;
use std::os::fd::AsRawFd;

/// An anonymous in-memory file holding `data`, for zero-copy sends with `send_file`.
pub fn payload_file(data: &[u8]) -> io::Result<std::fs::File> {
    // SAFETY: SHM_ANON asks for an unnamed object; on success we own the descriptor.
    let fd = unsafe { libc::shm_open(libc::SHM_ANON, libc::O_RDWR | libc::O_CLOEXEC, 0o600) };
    super::filled(fd, data)
}

/// Sends `len` bytes of `file` from `offset` on `sock` without copying them through user
/// space. A partial send (EAGAIN or EINTR after some bytes) counts what went.
pub fn send_file<S: AsRawFd, F: AsRawFd>(
    sock: &S,
    file: &F,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let offset = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut sent: libc::off_t = 0;
    // SAFETY: both descriptors are open for the call; `sent` is a local the kernel writes.
    let rc = unsafe {
        libc::sendfile(
            file.as_raw_fd(),
            sock.as_raw_fd(),
            offset,
            len,
            std::ptr::null_mut(),
            &mut sent,
            0,
        )
    };
    if rc == 0 || sent > 0 {
        Ok(sent as usize)
    } else {
        Err(io::Error::last_os_error())
    }
}
