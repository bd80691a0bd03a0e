//! Sysctls of Linux: files under `/proc/sys` (`net.ipv4.tcp_rmem` -> `net/ipv4/tcp_rmem`),
//! read in the calling thread's network namespace.

use super::{normalize, valid_name};
use std::io;
use std::path::PathBuf;

fn path(key: &str) -> io::Result<PathBuf> {
    if !valid_name(key) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{key:?} is no sysctl name"),
        ));
    }
    Ok(PathBuf::from("/proc/sys").join(key.replace('.', "/")))
}

/// The value of `key`, whitespace-normalised.
pub fn read(key: &str) -> io::Result<String> {
    std::fs::read_to_string(path(key)?).map(|v| normalize(&v))
}

/// Sets `key` to `value`.
pub fn write(key: &str, value: &str) -> io::Result<()> {
    std::fs::write(path(key)?, value)
}

/// Whether this process may change `key`.
pub fn writable(key: &str) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(p) = path(key) else { return false };
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) with a NUL-terminated path we own.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}
