//! Sysctls of FreeBSD through `sysctl(8)`: `sysctl -n NAME` reads, `sysctl NAME=VALUE` writes
//! (root only; `kern.ipc.maxsockbuf` and the `net.inet.tcp` buffer limits are host-wide).

use super::{normalize, valid_name};
use std::io;
use std::process::Command;

fn sysctl(args: &[&str]) -> io::Result<String> {
    let out = Command::new("sysctl").args(args).output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    } else {
        Err(io::Error::other(format!(
            "sysctl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn check(key: &str) -> io::Result<()> {
    if valid_name(key) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{key:?} is no sysctl name"),
        ))
    }
}

/// The value of `key`, whitespace-normalised.
pub fn read(key: &str) -> io::Result<String> {
    check(key)?;
    sysctl(&["-n", key]).map(|v| normalize(&v))
}

/// Sets `key` to `value`.
pub fn write(key: &str, value: &str) -> io::Result<()> {
    check(key)?;
    sysctl(&[&format!("{key}={value}")]).map(|_| ())
}

/// Whether this process may change sysctls (root).
pub fn writable(_key: &str) -> bool {
    crate::platform::process::is_root()
}
