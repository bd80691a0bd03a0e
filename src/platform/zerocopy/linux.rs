//! Zero-copy sending on Linux: memfd_create(2) and sendfile(2).

use std::io;
use std::os::fd::AsRawFd;

/// An anonymous in-memory file holding `data`, for zero-copy sends with `send_file`.
pub fn payload_file(data: &[u8]) -> io::Result<std::fs::File> {
    // SAFETY: the name is a valid C string; on success we own the returned descriptor.
    let fd = unsafe { libc::memfd_create(c"netsweep-payload".as_ptr(), libc::MFD_CLOEXEC) };
    super::filled(fd, data)
}

/// Sends `len` bytes of `file` from `offset` on `sock` without copying them through user
/// space (sendfile(2)). Honours the socket's send timeout like `write`.
pub fn send_file<S: AsRawFd, F: AsRawFd>(
    sock: &S,
    file: &F,
    offset: u64,
    len: usize,
) -> io::Result<usize> {
    let mut offset = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: both descriptors are open for the duration of the call; `offset` is a local.
    let rc = unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut offset, len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}
