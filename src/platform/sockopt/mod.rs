//! Platform leaf: socket options and system calls the engine needs beyond `std` and `socket2`:
//! TCP_INFO, buffer sizes, receive timestamps, binding to a device, the route's MTU, the timer
//! slack that precise pacing needs, IPv6 flow labels, and per-thread CPU time. Every other
//! module calls these functions and never `libc` directly.
//!
//! What differs between systems lives in one file per system (`linux.rs`, `freebsd.rs`),
//! chosen here by `cfg(target_os)`; what POSIX shares stays in this file. FreeBSD's
//! `struct tcp_info` is translated by `freebsd_tcp_info`, which is plain byte decoding and is
//! compiled and tested everywhere.

pub mod freebsd_tcp_info;

#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "freebsd")]
use freebsd as os;
#[cfg(target_os = "linux")]
use linux as os;

pub use os::{
    CLAMP_HEADROOM, HAS_USER_TIMEOUT, RECV_TRUNC_DISCARDS, bind_device, cap_buffer,
    enable_rx_timestamps, hold_window_clamp, is_mptcp, keep_remote_flowlabel, lease_flowlabel,
    mptcp_protocol, raise_rcvbuf, recv_trunc, remote_flowlabel, route_mtu, set_buffers,
    set_dont_fragment, set_max_pacing_rate, set_user_timeout, tcp_info, tighten_timer_slack,
};

use socket2::SockRef;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};

/// One of a socket's two buffers (`cap_buffer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    Send,
    Receive,
}

/// The TCP_INFO fields netsweep reports, in the same units on every system. Fields a system
/// does not have are `None` (reported as unavailable, never as zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (Linux `tcpi_total_retrans`, FreeBSD
    /// `tcpi_snd_rexmitpack`).
    pub total_retrans: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    /// The smallest RTT seen (Linux 4.6+); FreeBSD has none.
    pub min_rtt_us: Option<u32>,
    /// The congestion window in bytes (Linux counts segments: multiplied by the MSS here;
    /// FreeBSD counts bytes already).
    pub cwnd_bytes: u64,
    pub snd_mss: u32,
    /// The peer's advertised receive window, bytes (0 on Linux before 5.4).
    pub snd_wnd: u32,
    /// Time the sender was limited by the peer's window / its own send buffer, microseconds
    /// (Linux 4.9+); FreeBSD has none.
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    /// Bytes of data the peer acknowledged over the connection's life (Linux 4.1+); FreeBSD
    /// has none.
    pub bytes_acked: Option<u64>,
    /// Bytes of data this end's kernel received over the connection's life (Linux 4.1+).
    pub bytes_received: Option<u64>,
    /// Bytes of data sent, retransmissions included, and bytes retransmitted, over the
    /// connection's life (Linux 4.19+; RFC 6349's TCP Efficiency); FreeBSD has none.
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    /// Segments the peer reported it already had (D-SACK, RFC 2883: retransmissions that were
    /// not needed, from reordering or an ACK late; Linux 4.19+ `tcpi_dsack_dups`); FreeBSD
    /// has none.
    pub dsack_dups: Option<u32>,
}

pub(crate) fn setsockopt_int<S: AsRawFd>(
    sock: &S,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// recv(2) with MSG_DONTWAIT: what is queued on `sock` now, or `WouldBlock` (a connected TCP
/// or UDP socket; `Ok(0)` is a TCP peer's close or an empty datagram).
pub fn recv_nowait<S: AsRawFd>(sock: &S, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the kernel writes at most buf.len() bytes into the live buffer.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Sets a socket's receive low-water mark (`SO_RCVLOWAT`): a blocking read returns once this
/// many bytes (or the read's size, if smaller) are queued, at the end of the data, or when its
/// timeout passes with some data queued.
pub fn set_rcvlowat<S: AsRawFd>(sock: &S, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
    setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v)
}

/// How many bytes of a buffer `buffer_sizes` reports per byte of window asked: Linux doubles
/// a SO_SNDBUF/SO_RCVBUF request (half for data, half for the kernel's bookkeeping) and
/// reports the doubled size; FreeBSD reports what it granted.
pub const REPORTED_PER_WINDOW_BYTE: u64 = if cfg!(target_os = "linux") { 2 } else { 1 };

/// The window (in `-w`'s terms) that buffers reported as (send, receive) allow: the smaller.
pub fn window_of(reported: (u64, u64)) -> u64 {
    reported.0.min(reported.1) / REPORTED_PER_WINDOW_BYTE
}

/// Granted (SO_SNDBUF, SO_RCVBUF) in bytes.
pub fn buffer_sizes<S: AsFd>(sock: &S) -> (u64, u64) {
    let s = SockRef::from(sock);
    (
        s.send_buffer_size().map(|v| v as u64).unwrap_or(0),
        s.recv_buffer_size().map(|v| v as u64).unwrap_or(0),
    )
}

/// Sets the type-of-service byte (DSCP and ECN bits) of what `sock` sends: IP_TOS, and for
/// IPv6 sockets IPV6_TCLASS (plus IP_TOS, best effort, for IPv4-mapped peers), as iperf3 does.
pub fn set_tos<S: AsFd>(sock: &S, tos: u8, v6: bool) -> io::Result<()> {
    let s = SockRef::from(sock);
    if v6 {
        s.set_tclass_v6(u32::from(tos))?;
        let _ = s.set_tos_v4(u32::from(tos));
        Ok(())
    } else {
        s.set_tos_v4(u32::from(tos))
    }
}

/// The type-of-service byte `sock` sends with (IP_TOS or IPV6_TCLASS).
pub fn tos<S: AsFd>(sock: &S, v6: bool) -> io::Result<u8> {
    let s = SockRef::from(sock);
    let v = if v6 { s.tclass_v6()? } else { s.tos_v4()? };
    Ok((v & 0xff) as u8)
}

/// Sets the congestion control of a TCP socket.
pub fn set_congestion<S: AsFd>(sock: &S, name: &str) -> io::Result<()> {
    SockRef::from(sock).set_tcp_congestion(name.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            match crate::platform::THIS_OS {
                crate::platform::Os::Linux => format!(
                    "congestion control {name:?} refused ({e}): see net.ipv4.tcp_available_congestion_control \
                     and tcp_allowed_congestion_control"
                ),
                crate::platform::Os::FreeBsd => format!(
                    "congestion control {name:?} refused ({e}): see net.inet.tcp.cc.available; \
                     load it with `kldload cc_{name}`"
                ),
            },
        )
    })
}

/// The congestion control a TCP socket uses.
pub fn congestion<S: AsFd>(sock: &S) -> Option<String> {
    SockRef::from(sock).tcp_congestion().ok().map(|v| {
        String::from_utf8_lossy(&v)
            .trim_end_matches('\0')
            .to_string()
    })
}

/// A TCP keepalive's settings: idle time before the first probe, time between probes, and
/// unanswered probes before the connection is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub idle: std::time::Duration,
    pub interval: std::time::Duration,
    pub count: u32,
}

/// Turns TCP keepalive on with `k`'s settings (SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL,
/// TCP_KEEPCNT).
pub fn set_keepalive<S: AsFd>(sock: &S, k: Keepalive) -> io::Result<()> {
    // socket2 sets SO_KEEPALIVE too.
    SockRef::from(sock).set_tcp_keepalive(
        &socket2::TcpKeepalive::new()
            .with_time(k.idle)
            .with_interval(k.interval)
            .with_retries(k.count),
    )
}

/// The keepalive settings `sock` has (the system's defaults on a new socket).
pub fn keepalive<S: AsFd>(sock: &S) -> io::Result<Keepalive> {
    let s = SockRef::from(sock);
    Ok(Keepalive {
        idle: s.tcp_keepalive_time()?,
        interval: s.tcp_keepalive_interval()?,
        count: s.tcp_keepalive_retries()?,
    })
}

/// The system's keepalive defaults, read from a new TCP socket (Linux: this network
/// namespace's `net.ipv4.tcp_keepalive_*`; FreeBSD: `net.inet.tcp.keep*`).
pub fn system_keepalive() -> io::Result<Keepalive> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    keepalive(&s)
}

/// Receives one datagram without waiting (EWOULDBLOCK when none is queued); returns its size
/// and, when `enable_rx_timestamps` was called, when the kernel received it (CLOCK_REALTIME).
pub fn recv_stamped_nowait<S: AsRawFd>(
    sock: &S,
    buf: &mut [u8],
) -> io::Result<(usize, Option<std::time::SystemTime>)> {
    let mut stamp = None;
    let n = recv_with_cmsgs(sock, buf, libc::MSG_DONTWAIT, |level, kind, data| {
        if let Some(t) = os::rx_stamp(level, kind, data) {
            stamp = Some(t);
        }
    })?;
    Ok((n, stamp))
}

/// recvmsg(2) into `buf` with `flags`; calls `each` with every control message's level, type
/// and data.
pub(crate) fn recv_with_cmsgs<S: AsRawFd>(
    sock: &S,
    buf: &mut [u8],
    flags: libc::c_int,
    mut each: impl FnMut(libc::c_int, libc::c_int, &[u8]),
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: as in `send_segmented`; the kernel writes at most msg_controllen bytes of cmsgs,
    // which are walked with the CMSG_* macros only within that length, and each cmsg's data
    // slice ends at its cmsg_len, inside `control`.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let rc = libc::recvmsg(sock.as_raw_fd(), &mut msg, flags);
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let data = libc::CMSG_DATA(cmsg);
            let header = data.offset_from(cmsg.cast::<u8>()) as usize;
            let len = ((*cmsg).cmsg_len as usize).saturating_sub(header);
            each(
                (*cmsg).cmsg_level,
                (*cmsg).cmsg_type,
                std::slice::from_raw_parts(data, len),
            );
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok(rc as usize)
    }
}

/// Waits until `sock` is readable (a listener: a connection is pending) or `timeout` passes.
pub fn wait_readable<S: AsRawFd>(sock: &S, timeout: std::time::Duration) -> io::Result<bool> {
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut fds, 1, ms) };
    match rc {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// Waits until any of `fds` is readable or `timeout` passes; which ones are readable.
pub fn poll_readable(fds: &[RawFd], timeout: std::time::Duration) -> io::Result<Vec<bool>> {
    poll_fds(fds, libc::POLLIN, timeout)
}

/// Waits until any of `fds` can take data (a TCP socket: a third of its buffer is free) or
/// `timeout` passes; which ones can.
pub fn poll_writable(fds: &[RawFd], timeout: std::time::Duration) -> io::Result<Vec<bool>> {
    poll_fds(fds, libc::POLLOUT, timeout)
}

/// poll(2) over a handful of descriptors: a wrapper of a few lines, where an event-loop crate
/// (mio, polling) would bring registration and its own threads' conventions for one call.
fn poll_fds(
    fds: &[RawFd],
    events: libc::c_short,
    timeout: std::time::Duration,
) -> io::Result<Vec<bool>> {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    let ms = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `polls` holds `polls.len()` valid pollfd entries for the duration of the call.
    let rc = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(polls.iter().map(|p| p.revents != 0).collect())
}

/// Writes `len` bytes made of `buf` repeated, in one `writev(2)` (so a large `-l` keeps its
/// one-system-call-per-write meaning without a buffer of that size).
pub fn write_repeated<S: AsRawFd>(sock: &S, buf: &[u8], len: usize) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let mut iov = Vec::with_capacity(len.div_ceil(buf.len()).min(1024));
    let mut left = len;
    while left > 0 && iov.len() < 1024 {
        let n = left.min(buf.len());
        iov.push(libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: n,
        });
        left -= n;
    }
    let count = libc::c_int::try_from(iov.len()).unwrap_or(1024);
    // SAFETY: every iovec points into `buf`, which outlives the call; the kernel only reads.
    let rc = unsafe { libc::writev(sock.as_raw_fd(), iov.as_ptr(), count) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}
