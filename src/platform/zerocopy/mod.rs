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

/// Takes ownership of a fresh in-memory file descriptor (negative: the call that made it
/// failed) and writes `data` into it.
fn filled(fd: std::os::fd::RawFd, data: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data)?;
    Ok(file)
}
