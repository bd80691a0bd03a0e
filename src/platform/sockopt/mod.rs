//! Platform leaf: socket options and system calls the engine needs beyond `std` and `socket2`:
//! TCP_INFO, forced buffer sizes, UDP segmentation/receive offload (UDP_SEGMENT/UDP_GRO),
//! the timer slack that precise pacing needs, and per-thread CPU time.
//!
//! Linux only for now; every other module calls these functions and never `libc` directly.

use crate::traffic::measure::CpuUsage;
use socket2::SockRef;
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};

/// The TCP_INFO fields netsweep reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    pub total_retrans: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub snd_cwnd: u32,
    pub snd_mss: u32,
    /// The peer's advertised receive window, bytes (0 on kernels before 5.4).
    pub snd_wnd: u32,
    /// Time the sender was limited by the peer's window / its own send buffer, microseconds.
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
}

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
    Ok(TcpInfo {
        total_retrans: info.total_retrans,
        rtt_us: info.rtt,
        rttvar_us: info.rttvar,
        min_rtt_us: info.min_rtt,
        snd_cwnd: info.snd_cwnd,
        snd_mss: info.snd_mss,
        snd_wnd: info.snd_wnd,
        rwnd_limited_us: info.rwnd_limited,
        sndbuf_limited_us: info.sndbuf_limited,
    })
}

fn setsockopt_int<S: AsRawFd>(
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

/// Sets SO_SNDBUF and SO_RCVBUF to `bytes`. As root the `*FORCE` variants lift the
/// `net.core.{w,r}mem_max` cap; otherwise the kernel clamps silently. Read the granted sizes
/// back with `buffer_sizes`.
pub fn set_buffers<S: AsFd + AsRawFd>(sock: &S, bytes: u64) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    for (force, plain) in [
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    ] {
        if setsockopt_int(sock, libc::SOL_SOCKET, force, v).is_err() {
            setsockopt_int(sock, libc::SOL_SOCKET, plain, v)?;
        }
    }
    Ok(())
}

/// Raises only the receive buffer (UDP receivers), best effort.
pub fn raise_rcvbuf<S: AsRawFd>(sock: &S, bytes: u64) {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    if setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        let _ = setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVBUF, v);
    }
}

/// Granted (SO_SNDBUF, SO_RCVBUF) in bytes.
pub fn buffer_sizes<S: AsFd>(sock: &S) -> (u64, u64) {
    let s = SockRef::from(sock);
    (
        s.send_buffer_size().map(|v| v as u64).unwrap_or(0),
        s.recv_buffer_size().map(|v| v as u64).unwrap_or(0),
    )
}

/// Sets the congestion control of a TCP socket.
pub fn set_congestion<S: AsFd>(sock: &S, name: &str) -> io::Result<()> {
    SockRef::from(sock).set_tcp_congestion(name.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "congestion control {name:?} refused ({e}): see net.ipv4.tcp_available_congestion_control \
                 and tcp_allowed_congestion_control"
            ),
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
/// datagrams (UDP_GRO), their segment size.
pub fn recv_coalesced<S: AsRawFd>(sock: &S, buf: &mut [u8]) -> io::Result<(usize, Option<usize>)> {
    let mut segment = None;
    let n = recv_with_cmsgs(sock, buf, 0, |level, kind, data| {
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

/// Receives one datagram without waiting (EWOULDBLOCK when none is queued); returns its size
/// and, when `enable_rx_timestamps` was called, when the kernel received it (CLOCK_REALTIME).
pub fn recv_stamped_nowait<S: AsRawFd>(
    sock: &S,
    buf: &mut [u8],
) -> io::Result<(usize, Option<std::time::SystemTime>)> {
    let mut stamp = None;
    let n = recv_with_cmsgs(sock, buf, libc::MSG_DONTWAIT, |level, kind, data| {
        if level == libc::SOL_SOCKET
            && kind == libc::SO_TIMESTAMPNS
            && data.len() >= std::mem::size_of::<libc::timespec>()
        {
            // SAFETY: the kernel wrote a timespec there (length checked above).
            let ts = unsafe { std::ptr::read_unaligned(data.as_ptr().cast::<libc::timespec>()) };
            if let (Ok(s), Ok(ns)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                stamp = std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(s, ns));
            }
        }
    })?;
    Ok((n, stamp))
}

/// recvmsg(2) into `buf` with `flags`; calls `each` with every control message's level, type
/// and data.
fn recv_with_cmsgs<S: AsRawFd>(
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

/// Makes this thread's sleeps wake within microseconds instead of the default 50 µs slack.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// User and system CPU time of the calling thread so far (`wall_s` left at zero).
pub fn thread_cpu() -> CpuUsage {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return CpuUsage::default();
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    CpuUsage {
        user_s: secs(ru.ru_utime),
        system_s: secs(ru.ru_stime),
        wall_s: 0.0,
    }
}

/// CPU used by the calling thread since `start` (a value from `thread_cpu`).
pub fn thread_cpu_since(start: &CpuUsage) -> CpuUsage {
    let now = thread_cpu();
    CpuUsage {
        user_s: now.user_s - start.user_s,
        system_s: now.system_s - start.system_s,
        wall_s: 0.0,
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
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
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

/// An anonymous in-memory file holding `data`, for zero-copy sends with `send_file`.
pub fn memfd_with(data: &[u8]) -> io::Result<std::fs::File> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: the name is a valid C string; on success we own the returned descriptor.
    let fd = unsafe { libc::memfd_create(c"netsweep-payload".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(data)?;
    Ok(file)
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

/// Sends the first `len` bytes of `file` on `sock` without copying them through user space
/// (sendfile(2)). Honours the socket's send timeout like `write`.
pub fn send_file<S: AsRawFd, F: AsRawFd>(sock: &S, file: &F, len: usize) -> io::Result<usize> {
    let mut offset: libc::off_t = 0;
    // SAFETY: both descriptors are open for the duration of the call; `offset` is a local.
    let rc = unsafe { libc::sendfile(sock.as_raw_fd(), file.as_raw_fd(), &mut offset, len) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}
