//! Socket options of FreeBSD: its own `struct tcp_info` (decoded by `freebsd_tcp_info`), plain
//! buffer sizes capped by `kern.ipc.maxsockbuf` (no `SO_*BUFFORCE`), SO_TIMESTAMP, binding by
//! the device's address (no SO_BINDTODEVICE), no IP_MTU and no timer slack to tighten.

use super::{Buffer, TcpInfo, freebsd_tcp_info, setsockopt_int};
use std::io;
use std::net::{Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

/// Reads TCP_INFO of a connected TCP socket.
pub fn tcp_info<S: AsRawFd>(sock: &S) -> io::Result<TcpInfo> {
    let mut buf = [0u8; freebsd_tcp_info::BUFFER];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let filled = (len as usize).min(buf.len());
    freebsd_tcp_info::decode(&buf[..filled]).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("TCP_INFO returned {filled} bytes, fewer than FreeBSD's struct tcp_info"),
        )
    })
}

/// Sets one buffer to `bytes`, or, when `kern.ipc.maxsockbuf` refuses that much (ENOBUFS),
/// to the largest size it allows (found by bisection), so the test runs with what the host
/// grants and the grant is reported next to the ask.
fn set_capped<S: AsRawFd>(sock: &S, name: libc::c_int, bytes: u64) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    match setsockopt_int(sock, libc::SOL_SOCKET, name, v) {
        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
            let (mut ok, mut bad) = (0, v);
            while bad - ok > 1 {
                let mid = ok + (bad - ok) / 2;
                if setsockopt_int(sock, libc::SOL_SOCKET, name, mid).is_ok() {
                    ok = mid;
                } else {
                    bad = mid;
                }
            }
            if ok == 0 {
                return Err(e);
            }
            setsockopt_int(sock, libc::SOL_SOCKET, name, ok)
        }
        other => other,
    }
}

/// Sets SO_SNDBUF and SO_RCVBUF to `bytes`, each capped by `kern.ipc.maxsockbuf` (read the
/// granted sizes back with `buffer_sizes`). FreeBSD has no forcing option, so `force` changes
/// nothing: every window is asked.
pub fn set_buffers<S: AsFd + AsRawFd>(sock: &S, bytes: u64, _force: bool) -> io::Result<()> {
    set_capped(sock, libc::SO_SNDBUF, bytes)?;
    set_capped(sock, libc::SO_RCVBUF, bytes)
}

/// Raises only the receive buffer (UDP receivers), best effort.
/// SO_MAX_PACING_RATE (`sys/socket.h`, FreeBSD 11+): bytes per second, an unsigned int.
const SO_MAX_PACING_RATE: libc::c_int = 0x1018;

/// Caps the rate the kernel sends `sock` at (`bytes_per_s`, at most 4 GiB/s here: FreeBSD
/// takes an unsigned int); TCP stacks with pacing (RACK, BBR) and the hardware honour it.
pub fn set_max_pacing_rate<S: AsRawFd>(sock: &S, bytes_per_s: u64) -> io::Result<()> {
    let v = libc::c_uint::try_from(bytes_per_s).unwrap_or(libc::c_uint::MAX);
    // SAFETY: passes a pointer to a live c_uint and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&v as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// FreeBSD has no MPTCP.
pub fn mptcp_protocol() -> Option<socket2::Protocol> {
    None
}

/// FreeBSD has no MPTCP: never.
pub fn is_mptcp<S: AsRawFd>(_sock: &S) -> bool {
    false
}

/// Sets the Don't Fragment bit on what `sock` sends (IP_DONTFRAG, IPV6_DONTFRAG).
pub fn set_dont_fragment<S: AsRawFd>(sock: &S, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt_int(sock, libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1)
    } else {
        setsockopt_int(sock, libc::IPPROTO_IP, libc::IP_DONTFRAG, 1)
    }
}

pub fn raise_rcvbuf<S: AsRawFd>(sock: &S, bytes: u64) {
    let _ = set_capped(sock, libc::SO_RCVBUF, bytes);
}

/// Linux's same-host buffers (`traffic::engine::rcvbuf`, `traffic::engine::sndbuf`) were
/// measured against Linux's autotuning only: FreeBSD keeps its own
/// (`net.inet.tcp.{send,recv}buf_auto`), Ok(false).
pub fn cap_buffer<S: AsRawFd>(_sock: &S, _which: Buffer, _bytes: u64) -> io::Result<bool> {
    Ok(false)
}

/// FreeBSD has no TCP_USER_TIMEOUT (iperf3 built there has no `--snd-timeout` either).
pub const HAS_USER_TIMEOUT: bool = false;

pub fn set_user_timeout<S: AsFd>(_sock: &S, _timeout: std::time::Duration) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "this system has no TCP_USER_TIMEOUT",
    ))
}

/// Asks the kernel to stamp every datagram `sock` receives with its arrival time
/// (SO_TIMESTAMP: a `struct timeval`, CLOCK_REALTIME). False when the kernel refuses.
pub fn enable_rx_timestamps<S: AsFd>(sock: &S) -> bool {
    setsockopt_int(&sock.as_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMP, 1).is_ok()
}

/// The arrival time in a control message, if this is the one `enable_rx_timestamps` asked for.
pub(super) fn rx_stamp(
    level: libc::c_int,
    kind: libc::c_int,
    data: &[u8],
) -> Option<std::time::SystemTime> {
    if level != libc::SOL_SOCKET
        || kind != libc::SCM_TIMESTAMP
        || data.len() < std::mem::size_of::<libc::timeval>()
    {
        return None;
    }
    // SAFETY: the kernel wrote a timeval there (length checked above).
    let tv = unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<libc::timeval>()) };
    let (s, us) = (
        u64::try_from(tv.tv_sec).ok()?,
        u32::try_from(tv.tv_usec).ok()?,
    );
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(s, us.checked_mul(1000)?))
}

/// FreeBSD's sleeps have no per-thread slack to tighten (`kern.timecounter` decides).
pub fn tighten_timer_slack() {}

/// FreeBSD has no SO_BINDTODEVICE: binds `sock` to the device's own address of the socket's
/// family instead (routing by a FIB, `setfib(1)`, is the other way to choose the way out).
pub fn bind_device(sock: &socket2::Socket, dev: &str, v6: bool) -> io::Result<()> {
    let ip = interface_address(dev, v6)?;
    sock.bind(&socket2::SockAddr::from(SocketAddr::new(ip, 0)))
}

/// The first address of family `v6` on interface `dev` (getifaddrs).
fn interface_address(dev: &str, v6: bool) -> io::Result<std::net::IpAddr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = None;
    let mut cur = head;
    // SAFETY: walks the list getifaddrs returned; every pointer is checked for null and the
    // sockaddr is read as the family it declares.
    unsafe {
        while !cur.is_null() && found.is_none() {
            let ifa = &*cur;
            let name = std::ffi::CStr::from_ptr(ifa.ifa_name).to_string_lossy();
            if name == dev && !ifa.ifa_addr.is_null() {
                let family = i32::from((*ifa.ifa_addr).sa_family);
                if family == libc::AF_INET && !v6 {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    found = Some(std::net::IpAddr::from(
                        u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                    ));
                } else if family == libc::AF_INET6 && v6 {
                    let a = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    found = Some(std::net::IpAddr::from(a.sin6_addr.s6_addr));
                }
            }
            cur = ifa.ifa_next;
        }
        libc::freeifaddrs(head);
    }
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "interface {dev} has no {} address to bind to (FreeBSD binds by address, not by device)",
                if v6 { "IPv6" } else { "IPv4" }
            ),
        )
    })
}

/// FreeBSD's TCP has no discarding MSG_TRUNC: receivers copy (the result says so).
pub const RECV_TRUNC_DISCARDS: bool = false;

/// An ordinary `recv`: see `RECV_TRUNC_DISCARDS`.
pub fn recv_trunc<S: AsRawFd>(sock: &S, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is live and writable for `buf.len()` bytes; the kernel writes no more.
    let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// FreeBSD advertises at most the receive buffer (`sbspace`): a window is its buffer.
pub const CLAMP_HEADROOM: u64 = 1;

/// FreeBSD has no TCP_WINDOW_CLAMP; its window never exceeds the receive buffer set to it.
pub fn hold_window_clamp<S: AsRawFd>(_sock: &S, _bytes: u64) -> io::Result<()> {
    Ok(())
}

/// FreeBSD has no IP_MTU socket option: the path MTU check uses ping alone.
pub fn route_mtu(_addr: SocketAddr) -> Option<u32> {
    None
}

/// FreeBSD has no flow label manager (IPV6_FLOWLABEL_MGR); iperf3's `-L` is Linux-only too.
pub fn lease_flowlabel<S: AsRawFd>(_sock: &S, _dst: Ipv6Addr, _label: u32) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "IPv6 flow labels are set on Linux only (as iperf3's -L)",
    ))
}

/// See `lease_flowlabel`.
pub fn keep_remote_flowlabel<S: AsRawFd>(sock: &S) -> io::Result<()> {
    lease_flowlabel(sock, Ipv6Addr::UNSPECIFIED, 0)
}

/// See `lease_flowlabel`.
pub fn remote_flowlabel<S: AsRawFd>(sock: &S) -> io::Result<u32> {
    lease_flowlabel(sock, Ipv6Addr::UNSPECIFIED, 0).map(|()| 0)
}
