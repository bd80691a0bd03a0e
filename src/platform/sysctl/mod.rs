//! Platform leaf: reading and writing kernel settings (sysctls) of this host by their dotted
//! names. Linux keeps them as files under `/proc/sys` (per network namespace for `net.*`);
//! FreeBSD serves them through sysctl(3), used here through its `sysctl(8)` command, which
//! prints every type (numbers, strings, multi-line tables) as text.

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "freebsd")]
pub use freebsd::*;
#[cfg(target_os = "linux")]
pub use linux::*;

/// Whitespace-normalised value ("4096\t131072\t6291456" -> "4096 131072 6291456").
pub fn normalize(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `key` is a plain dotted sysctl name (no path tricks, no shell or line breaks).
pub fn valid_name(key: &str) -> bool {
    !key.is_empty()
        && !key.contains("..")
        && !key.starts_with('.')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '%'))
}

/// `sysctl -w KEY=VALUE`, the value quoted for the shell when it needs it.
pub fn sysctl_line(key: &str, value: &str) -> String {
    format!("sysctl -w {key}={}", crate::paste::quote(value))
}

/// The receive and send buffers a new TCP socket of this host starts with, in bytes (Linux:
/// `net.ipv4.tcp_rmem`'s and `tcp_wmem`'s middle values, what SO_RCVBUF and SO_SNDBUF read on
/// a socket nobody set them on). `None` elsewhere or when they cannot be read.
pub fn tcp_socket_defaults() -> Option<(u64, u64)> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let middle =
        |key: &str| -> Option<u64> { read(key).ok()?.split_whitespace().nth(1)?.parse().ok() };
    Some((middle("net.ipv4.tcp_rmem")?, middle("net.ipv4.tcp_wmem")?))
}

/// The largest receive buffer a TCP socket of this host can reach, in bytes: what autotuning
/// may grow it to (Linux `net.ipv4.tcp_rmem`'s maximum, FreeBSD `net.inet.tcp.recvbuf_max`)
/// or what SO_RCVBUF may set (Linux doubles the asked size up to `net.core.rmem_max`;
/// FreeBSD caps the buffer at `kern.ipc.maxsockbuf`). `None` when none can be read.
pub fn receive_buffer_max() -> Option<u64> {
    let field = |key: &str, i: usize| -> Option<u64> {
        read(key).ok()?.split_whitespace().nth(i)?.parse().ok()
    };
    let candidates = if cfg!(target_os = "freebsd") {
        [
            field("net.inet.tcp.recvbuf_max", 0),
            field("kern.ipc.maxsockbuf", 0),
        ]
    } else {
        [
            field("net.ipv4.tcp_rmem", 2),
            field("net.core.rmem_max", 0).map(|m| m.saturating_mul(2)),
        ]
    };
    candidates.into_iter().flatten().max()
}
