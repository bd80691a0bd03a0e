//! Socket options of Linux: `struct tcp_info` as the kernel lays it out, forced buffer sizes
//! (root lifts `net.core.{w,r}mem_max`), SO_TIMESTAMPNS, SO_BINDTODEVICE, IP_MTU, timer slack,
//! IPv6 flow labels.

use super::{Buffer, TcpInfo, setsockopt_int};
use std::io;
use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};

/// The kernel's `struct tcp_info` (include/uapi/linux/tcp.h) up to `tcpi_snd_wnd`. Declared
/// here because libc's copy differs between C libraries; the kernel fills what it has.
#[repr(C)]
#[derive(Default)]
struct KernelTcpInfo {
    state: [u8; 8],
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// Reads TCP_INFO of a connected TCP socket.
pub fn tcp_info<S: AsRawFd>(sock: &S) -> io::Result<TcpInfo> {
    let mut info = KernelTcpInfo::default();
    let mut len = std::mem::size_of::<KernelTcpInfo>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into our plain-data struct.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut KernelTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // Fields past what this kernel filled in stay zero: older kernels lack them.
    let has = |end: usize| len as usize >= end;
    let min_rtt_end = std::mem::offset_of!(KernelTcpInfo, min_rtt) + 4;
    let limited_end = std::mem::offset_of!(KernelTcpInfo, sndbuf_limited) + 8;
    let acked_end = std::mem::offset_of!(KernelTcpInfo, bytes_acked) + 8;
    let retrans_end = std::mem::offset_of!(KernelTcpInfo, bytes_retrans) + 8;
    let dsack_end = std::mem::offset_of!(KernelTcpInfo, dsack_dups) + 4;
    Ok(TcpInfo {
        total_retrans: info.total_retrans,
        rtt_us: info.rtt,
        rttvar_us: info.rttvar,
        min_rtt_us: (has(min_rtt_end) && info.min_rtt > 0).then_some(info.min_rtt),
        cwnd_bytes: u64::from(info.snd_cwnd) * u64::from(info.snd_mss),
        snd_mss: info.snd_mss,
        snd_wnd: info.snd_wnd,
        rwnd_limited_us: has(limited_end).then_some(info.rwnd_limited),
        sndbuf_limited_us: has(limited_end).then_some(info.sndbuf_limited),
        bytes_acked: has(acked_end).then_some(info.bytes_acked),
        bytes_received: has(acked_end + 8).then_some(info.bytes_received),
        bytes_sent: has(retrans_end).then_some(info.bytes_sent),
        bytes_retrans: has(retrans_end).then_some(info.bytes_retrans),
        dsack_dups: has(dsack_end).then_some(info.dsack_dups),
    })
}

/// Sets SO_SNDBUF and SO_RCVBUF to `bytes`. With `force`, as root, the `*FORCE` variants lift
/// the `net.core.{w,r}mem_max` cap (without the privilege the plain options are used); without
/// `force` the plain options are used as a non-root iperf does and the kernel clamps silently.
/// Read the granted sizes back with `buffer_sizes`.
pub fn set_buffers<S: AsFd + AsRawFd>(sock: &S, bytes: u64, force: bool) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for (forced, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if !force || setsockopt_int(sock, libc::SOL_SOCKET, forced, v).is_err() {
            setsockopt_int(sock, libc::SOL_SOCKET, plain, v)?;
        }
    }
    Ok(())
}

/// SO_MAX_PACING_RATE (`asm-generic/socket.h`; libc exports it only in its uapi tables).
/// mips, sparc, parisc and alpha number it differently; netsweep builds for x86 and arm.
const SO_MAX_PACING_RATE: libc::c_int = 47;

/// Caps the rate the kernel sends `sock` at (`bytes_per_s`): TCP paces itself to it, and the
/// fq qdisc enforces it for any socket (iperf3's `--fq-rate`). Linux takes a 64-bit value.
pub fn set_max_pacing_rate<S: AsRawFd>(sock: &S, bytes_per_s: u64) -> io::Result<()> {
    // SAFETY: passes a pointer to a live u64 and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MAX_PACING_RATE,
            (&bytes_per_s as *const u64).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The socket protocol of MPTCP connections.
pub fn mptcp_protocol() -> Option<socket2::Protocol> {
    Some(socket2::Protocol::MPTCP)
}

/// `SOL_MPTCP` and its `MPTCP_INFO` option (`linux/mptcp.h`; not in libc).
const SOL_MPTCP: libc::c_int = 284;
const MPTCP_INFO: libc::c_int = 1;

/// Whether `sock` is a connected MPTCP socket that did not fall back to plain TCP: the kernel
/// answers SOL_MPTCP options only then (a fallen-back socket passes them to its one TCP
/// subflow, which refuses them), the check `linux/mptcp.h` documents with a zero length.
pub fn is_mptcp<S: AsRawFd>(sock: &S) -> bool {
    let mut len: libc::socklen_t = 0;
    // SAFETY: a zero length: the kernel writes nothing through the (null) value pointer.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            SOL_MPTCP,
            MPTCP_INFO,
            std::ptr::null_mut(),
            &mut len,
        )
    };
    rc == 0
}

/// Sets the Don't Fragment bit on what `sock` sends (path MTU discovery "do": a datagram
/// larger than the path's MTU fails with EMSGSIZE instead of being fragmented).
pub fn set_dont_fragment<S: AsRawFd>(sock: &S, v6: bool) -> io::Result<()> {
    if v6 {
        setsockopt_int(
            sock,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )
    } else {
        setsockopt_int(
            sock,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
        )
    }
}

/// Raises only the receive buffer (UDP receivers), best effort.
pub fn raise_rcvbuf<S: AsRawFd>(sock: &S, bytes: u64) {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    if setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        let _ = setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVBUF, v);
    }
}

/// Sets one of `sock`'s buffers to `bytes` only where the kernel grants it in full: as root
/// past `net.core.{r,w}mem_max` (the `*FORCE` option), otherwise when that maximum allows it. A
/// set buffer ends the kernel's autotuning for good, so when neither holds nothing is set:
/// Ok(false).
pub fn cap_buffer<S: AsRawFd>(sock: &S, which: Buffer, bytes: u64) -> io::Result<bool> {
    let (forced, plain, max) = match which {
        Buffer::Send => (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, "wmem_max"),
        Buffer::Receive => (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, "rmem_max"),
    };
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    if setsockopt_int(sock, libc::SOL_SOCKET, forced, v).is_ok() {
        return Ok(true);
    }
    let max = std::fs::read_to_string(format!("/proc/sys/net/core/{max}"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    if max.is_none_or(|m| m < bytes) {
        return Ok(false);
    }
    setsockopt_int(sock, libc::SOL_SOCKET, plain, v).map(|()| true)
}

/// Linux has TCP_USER_TIMEOUT (iperf3's `--snd-timeout`).
pub const HAS_USER_TIMEOUT: bool = true;

/// TCP_USER_TIMEOUT: how long data this end sent may stay unacknowledged before the kernel
/// closes the connection with ETIMEDOUT.
pub fn set_user_timeout<S: AsFd>(sock: &S, timeout: std::time::Duration) -> io::Result<()> {
    socket2::SockRef::from(sock).set_tcp_user_timeout(Some(timeout))
}

/// Asks the kernel to stamp every datagram `sock` receives with its arrival time
/// (SO_TIMESTAMPNS, read by `recv_stamped`). False when the kernel refuses.
pub fn enable_rx_timestamps<S: AsFd>(sock: &S) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option value on a valid descriptor.
    unsafe {
        libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// The arrival time in a control message, if this is the one `enable_rx_timestamps` asked for.
pub(super) fn rx_stamp(
    level: libc::c_int,
    kind: libc::c_int,
    data: &[u8],
) -> Option<std::time::SystemTime> {
    if level != libc::SOL_SOCKET
        || kind != libc::SO_TIMESTAMPNS
        || data.len() < std::mem::size_of::<libc::timespec>()
    {
        return None;
    }
    // SAFETY: the kernel wrote a timespec there (length checked above).
    let ts = unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<libc::timespec>()) };
    let (s, ns) = (
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    );
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(s, ns))
}

/// Makes this thread's sleeps wake within microseconds instead of the default 50 µs slack.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Binds `sock` to network device `dev` (SO_BINDTODEVICE): its traffic leaves by that device.
pub fn bind_device(sock: &socket2::Socket, dev: &str, _v6: bool) -> io::Result<()> {
    sock.bind_device(Some(dev.as_bytes()))
}

/// `recv(MSG_TRUNC)` discards without copying (iperf3's `--skip-rx-copy`).
pub const RECV_TRUNC_DISCARDS: bool = true;

/// Receives with MSG_TRUNC: on TCP the kernel drops up to `buf.len()` bytes of the stream
/// without copying them to `buf` (tcp(7)); on UDP it copies the first `buf.len()` bytes of one
/// datagram and returns the datagram's whole length (udp(7)). Returns what `recv` returns.
pub fn recv_trunc<S: AsRawFd>(sock: &S, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is live and writable for `buf.len()` bytes; the kernel writes no more.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_TRUNC,
        )
    };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// The MTU this host would use towards `addr` (IP_MTU of a connected UDP socket).
pub fn route_mtu(addr: SocketAddr) -> Option<u32> {
    let any = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let s = UdpSocket::bind(any).ok()?;
    s.connect(addr).ok()?;
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let (level, name) = if addr.is_ipv4() {
        (libc::IPPROTO_IP, libc::IP_MTU)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    };
    // SAFETY: getsockopt writes one c_int into `v`.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && v > 0).then_some(v as u32)
}

/// How many bytes of buffer `--window-mode clamp` asks per byte of window: Linux advertises
/// the receive buffer times a learned ratio of payload to memory (`tcp_win_from_space`), about
/// 0.6 for 1500-byte frames once the request is doubled; twice the window keeps the clamp, not
/// the buffer, the limit for any ratio above a quarter.
pub const CLAMP_HEADROOM: u64 = 2;

/// Holds a TCP socket's advertised receive window at `bytes` (TCP_WINDOW_CLAMP). The kernel
/// recomputes the clamp from the receive buffer whenever its payload-to-memory ratio changes
/// (`tcp_measure_rcv_mss`, Linux 6.9+), so a receiver calls this again as data arrives; it
/// writes only when the clamp has moved.
pub fn hold_window_clamp<S: AsRawFd>(sock: &S, bytes: u64) -> io::Result<()> {
    let want = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one c_int into `v`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 && v == want {
        return Ok(());
    }
    setsockopt_int(sock, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, want)
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Socket, Type};
    use std::net::{TcpListener, TcpStream, UdpSocket};

    fn getsockopt_u64<S: AsRawFd>(sock: &S, level: libc::c_int, name: libc::c_int) -> u64 {
        let mut v: u64 = 0;
        let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
        // SAFETY: a live u64 and its size.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                level,
                name,
                (&mut v as *mut u64).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        if len == 4 { v & 0xffff_ffff } else { v }
    }

    /// What netsweep sets is what the kernel then holds, read back by the same option.
    #[test]
    fn pacing_tos_and_dont_fragment_are_what_the_kernel_holds() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        set_max_pacing_rate(&s, 12_500_000).unwrap();
        assert_eq!(
            getsockopt_u64(&s, libc::SOL_SOCKET, SO_MAX_PACING_RATE),
            12_500_000
        );
        super::super::set_tos(&s, 0xb8, false).unwrap();
        assert_eq!(super::super::tos(&s, false).unwrap(), 0xb8);
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_dont_fragment(&u, false).unwrap();
        assert_eq!(
            getsockopt_u64(&u, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER),
            libc::IP_PMTUDISC_DO as u64
        );
    }

    /// An MPTCP connection is seen as one; one to a plain TCP listener falls back and is not.
    #[test]
    fn mptcp_is_told_from_its_fallback() {
        let enabled =
            std::fs::read_to_string("/proc/sys/net/mptcp/enabled").is_ok_and(|v| v.trim() == "1");
        let Ok(listener) = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)) else {
            eprintln!("skipped: this kernel has no MPTCP sockets");
            return;
        };
        if !enabled {
            eprintln!("skipped: net.mptcp.enabled is not 1");
            return;
        }
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        listener.bind(&any.into()).unwrap();
        listener.listen(4).unwrap();
        let to = listener.local_addr().unwrap();
        let c = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).unwrap();
        c.connect(&to).unwrap();
        let (a, _) = listener.accept().unwrap();
        assert!(is_mptcp(&c), "an MPTCP pair");
        assert!(is_mptcp(&a), "the accepted end too");
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).unwrap();
        c.connect(&plain.local_addr().unwrap().into()).unwrap();
        let _a = plain.accept().unwrap();
        assert!(!is_mptcp(&c), "fell back to TCP");
        let t = TcpStream::connect(plain.local_addr().unwrap()).unwrap();
        assert!(!is_mptcp(&t), "plain TCP");
    }
}

/// `struct in6_flowlabel_req` of linux/in6.h, which libc does not declare.
#[repr(C)]
#[derive(Default)]
struct FlowlabelReq {
    dst: [u8; 16],
    /// Network byte order.
    label: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

/// `IPV6_FL_A_GET`, `IPV6_FL_F_CREATE`, `IPV6_FL_S_ANY` and `IPV6_FL_F_REMOTE` (linux/in6.h).
const FL_A_GET: u8 = 0;
const FL_F_CREATE: u16 = 1;
const FL_F_REMOTE: u16 = 8;
const FL_S_ANY: u8 = 255;

/// Leases IPv6 flow label `label` (20 bits) towards `dst` for `sock` and turns on sending it
/// (IPV6_FLOWLABEL_MGR, IPV6_FLOWINFO_SEND), as iperf3's `-L` does (iperf_tcp.c): the label
/// takes effect when the socket connects with it as the destination's flowinfo.
pub fn lease_flowlabel<S: AsRawFd>(sock: &S, dst: Ipv6Addr, label: u32) -> io::Result<()> {
    let req = FlowlabelReq {
        dst: dst.octets(),
        label: label.to_be(),
        action: FL_A_GET,
        share: FL_S_ANY,
        flags: FL_F_CREATE,
        ..FlowlabelReq::default()
    };
    // SAFETY: passes a pointer to a live in6_flowlabel_req and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_FLOWLABEL_MGR,
            (&req as *const FlowlabelReq).cast(),
            std::mem::size_of::<FlowlabelReq>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    setsockopt_int(sock, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
}

/// Asks the kernel to keep the flow label of what arrives on `sock` (IPV6_FLOWINFO; set on a
/// listener, its connections inherit it), for `remote_flowlabel`.
pub fn keep_remote_flowlabel<S: AsRawFd>(sock: &S) -> io::Result<()> {
    setsockopt_int(sock, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO, 1)
}

/// The flow label of the last in-order segment a connected TCP socket received, with
/// `keep_remote_flowlabel` set (IPV6_FLOWLABEL_MGR with IPV6_FL_F_REMOTE: `np->rcv_flowinfo`).
pub fn remote_flowlabel<S: AsRawFd>(sock: &S) -> io::Result<u32> {
    let mut req = FlowlabelReq {
        flags: FL_F_REMOTE,
        ..FlowlabelReq::default()
    };
    let mut len = std::mem::size_of::<FlowlabelReq>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into the live request.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_FLOWLABEL_MGR,
            (&mut req as *mut FlowlabelReq).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(u32::from_be(req.label) & 0xf_ffff)
}
