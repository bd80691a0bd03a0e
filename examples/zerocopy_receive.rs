//! How a TCP receiver's CPU per byte depends on how it takes the data, on this host's loopback:
//! copying it (`read`), dropping it in the kernel (`recv` with `MSG_TRUNC`, `--skip-rx-copy`),
//! or mapping the received pages into its address space (`getsockopt(TCP_ZEROCOPY_RECEIVE)`,
//! the kernel's `tcp_mmap` selftest's method). The facts behind netsweep's receive modes
//! (`traffic::engine::sendpath`'s notes and docs/performance.md).
//!
//!     cargo run --release --example zerocopy_receive -- --seconds 4 --rounds 3
//!
//! The receiver's listening socket asks for an MSS of 4096 bytes of payload (`TCP_MAXSEG` 4108
//! with timestamps), so each segment carries one page; the sender sends page-aligned pages of
//! an in-memory file with `sendfile(2)`, 1 MiB a call. Pages of the receive queue that are not
//! whole and aligned cannot be mapped: the kernel says how many bytes to read instead
//! (`recv_skip_hint`), and the line's `mapped` share counts what was mapped. Prints one JSON
//! object per mode and round: `{"mode":"mmap","gbps":..,"rx_cpu_s_per_gb":..,"mapped":0.99}`.
//! Traffic goes to 127.0.0.1 only and stops after `--seconds`.

#[cfg(target_os = "linux")]
mod linux {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    const CHUNK: usize = 1 << 20;
    const SOURCE: usize = 4 << 20;
    /// One page of payload plus the 12 bytes of the timestamp option.
    const MSS: libc::c_int = 4096 + 12;

    /// `struct tcp_zerocopy_receive` of linux/tcp.h (5.11 and later).
    #[repr(C)]
    #[derive(Default)]
    struct ZeroCopyReceive {
        address: u64,
        length: u32,
        recv_skip_hint: u32,
        inq: u32,
        err: i32,
        copybuf_address: u64,
        copybuf_len: i32,
        flags: u32,
        msg_control: u64,
        msg_controllen: u64,
        msg_flags: u32,
        reserved: u32,
    }

    fn thread_cpu_s() -> f64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime fills the timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
    }

    fn check(rc: libc::c_int, what: &str) {
        if rc != 0 {
            eprintln!("{what}: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
    }

    /// Sends 1 MiB a call with MSG_ZEROCOPY from one page-aligned buffer until `end` (the
    /// buffer never changes, so it is sent again before earlier sends complete; completions
    /// are drained from the error queue and not waited for).
    fn send_msg_zerocopy(sock: TcpStream, end: Instant) {
        let fd = sock.as_raw_fd();
        let one: libc::c_int = 1;
        // SAFETY: setsockopt with a live c_int on our socket.
        check(
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_ZEROCOPY,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            },
            "SO_ZEROCOPY",
        );
        let layout = std::alloc::Layout::from_size_align(CHUNK, 4096).expect("layout");
        // SAFETY: a page-aligned allocation of CHUNK bytes, filled before use, freed below.
        let buf = unsafe { std::alloc::alloc(layout) };
        assert!(!buf.is_null(), "allocation");
        for i in 0..CHUNK {
            // SAFETY: within the CHUNK bytes allocated above.
            unsafe { *buf.add(i) = (i * 7 % 251) as u8 };
        }
        let drain = || {
            let mut control = [0u8; 256];
            loop {
                // SAFETY: a zeroed msghdr pointing at our live control buffer.
                let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = control.len();
                // SAFETY: recvmsg of the error queue into the msghdr above.
                let r =
                    unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
                if r < 0 {
                    break;
                }
            }
        };
        while Instant::now() < end {
            // SAFETY: send from the live CHUNK-byte buffer.
            let n = unsafe { libc::send(fd, buf.cast(), CHUNK, libc::MSG_ZEROCOPY) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOBUFS) {
                    drain();
                    std::thread::sleep(Duration::from_micros(50));
                    continue;
                }
                break;
            }
            drain();
        }
        drop(sock);
        // SAFETY: freeing the allocation above; the socket is closed, and a benchmark does not
        // wait for the kernel's last completions (their pages stay pinned until then).
        std::thread::sleep(Duration::from_millis(200));
        unsafe { std::alloc::dealloc(buf, layout) };
    }

    /// Sends pages of a 4 MiB in-memory file with sendfile until `end`.
    fn send(sock: TcpStream, end: Instant) {
        // SAFETY: memfd_create with a NUL-terminated name; the descriptor is ours.
        let file = unsafe { libc::memfd_create(c"zc-source".as_ptr(), 0) };
        if file < 0 {
            check(-1, "memfd_create");
        }
        let data: Vec<u8> = (0..SOURCE).map(|i| (i * 7 % 251) as u8).collect();
        // SAFETY: writes `data` (live, SOURCE bytes) to the memfd we own.
        let w = unsafe { libc::write(file, data.as_ptr().cast(), SOURCE) };
        assert_eq!(w as usize, SOURCE, "memfd write");
        let mut off: libc::off_t = 0;
        while Instant::now() < end {
            if off as usize >= SOURCE {
                off = 0;
            }
            // SAFETY: sendfile from our memfd to our socket; `off` is ours.
            let n = unsafe { libc::sendfile(sock.as_raw_fd(), file, &mut off, CHUNK) };
            if n <= 0 {
                break;
            }
        }
        // SAFETY: closing the memfd we own.
        unsafe { libc::close(file) };
    }

    /// Receives until the sender closes; returns (bytes, bytes mapped, thread CPU seconds, the
    /// error that ended a mapping receiver early).
    fn receive(mut sock: TcpStream, mode: &str) -> (u64, u64, f64, Option<String>) {
        let cpu0 = thread_cpu_s();
        let mut failed = None;
        let mut buf = vec![0u8; CHUNK];
        let (mut bytes, mut mapped) = (0u64, 0u64);
        let fd = sock.as_raw_fd();
        let map = if mode == "mmap" {
            // SAFETY: a read-only shared mapping of the TCP socket, CHUNK bytes, as
            // TCP_ZEROCOPY_RECEIVE requires; unmapped below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    CHUNK,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                check(-1, "mmap of the socket");
            }
            Some(p)
        } else {
            None
        };
        loop {
            let n = match (mode, map) {
                ("mmap", Some(p)) => {
                    let mut zc = ZeroCopyReceive {
                        address: p as u64,
                        length: CHUNK as u32,
                        ..Default::default()
                    };
                    let mut len = std::mem::size_of::<ZeroCopyReceive>() as libc::socklen_t;
                    // SAFETY: getsockopt with a live, correctly sized struct we own; the
                    // kernel maps into the region mapped above.
                    let rc = unsafe {
                        libc::getsockopt(
                            fd,
                            libc::IPPROTO_TCP,
                            libc::TCP_ZEROCOPY_RECEIVE,
                            (&mut zc as *mut ZeroCopyReceive).cast(),
                            &mut len,
                        )
                    };
                    if rc != 0 {
                        failed = Some(std::io::Error::last_os_error().to_string());
                        break;
                    }
                    mapped += u64::from(zc.length);
                    let mut got = u64::from(zc.length);
                    if zc.recv_skip_hint > 0 {
                        let want = (zc.recv_skip_hint as usize).min(CHUNK);
                        match sock.read(&mut buf[..want]) {
                            Ok(r) => got += r as u64,
                            Err(_) => break,
                        }
                    } else if zc.length == 0 {
                        // Nothing mapped or to skip: wait for data (or the end) with a read.
                        match sock.read(&mut buf[..4096]) {
                            Ok(0) | Err(_) => break,
                            Ok(r) => got += r as u64,
                        }
                    }
                    got
                }
                ("trunc", _) => {
                    // SAFETY: recv into our live buffer; MSG_TRUNC drops the data unread.
                    let r =
                        unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), CHUNK, libc::MSG_TRUNC) };
                    if r <= 0 {
                        break;
                    }
                    r as u64
                }
                _ => match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(r) => r as u64,
                },
            };
            bytes += n;
        }
        if let Some(p) = map {
            // SAFETY: unmapping the region mapped above.
            unsafe { libc::munmap(p, CHUNK) };
        }
        (bytes, mapped, thread_cpu_s() - cpu0, failed)
    }

    fn one(mode: &str, sender: &str, seconds: f64) {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let mss = MSS;
        // SAFETY: setsockopt with a live c_int on the listener we own.
        check(
            unsafe {
                libc::setsockopt(
                    l.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_MAXSEG,
                    (&mss as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            },
            "TCP_MAXSEG",
        );
        let addr = l.local_addr().expect("address");
        let end = Instant::now() + Duration::from_secs_f64(seconds);
        let kind = sender.to_string();
        let sending = std::thread::spawn(move || {
            let s = TcpStream::connect(addr).expect("connect");
            if kind == "msg_zerocopy" {
                send_msg_zerocopy(s, end);
            } else {
                send(s, end);
            }
        });
        let (sock, _) = l.accept().expect("accept");
        let t0 = Instant::now();
        let (bytes, mapped, cpu, failed) = receive(sock, mode);
        let wall = t0.elapsed().as_secs_f64();
        let _ = sending.join();
        let gb = bytes as f64 / 1e9;
        println!(
            "{{\"sender\":\"{sender}\",\"mode\":\"{mode}\",\"gbps\":{:.2},\"rx_cpu_s_per_gb\":{:.3},\"mapped\":{:.3},\"error\":{:?}}}",
            gb * 8.0 / wall,
            if gb > 0.0 { cpu / gb } else { 0.0 },
            if bytes > 0 {
                mapped as f64 / bytes as f64
            } else {
                0.0
            },
            failed.unwrap_or_default()
        );
    }

    pub fn main() {
        let args: Vec<String> = std::env::args().collect();
        let value = |flag: &str, default: f64| -> f64 {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        let seconds = value("--seconds", 4.0).clamp(0.5, 60.0);
        let rounds = value("--rounds", 3.0).clamp(1.0, 20.0) as usize;
        for _ in 0..rounds {
            for sender in ["msg_zerocopy", "sendfile"] {
                for mode in ["copy", "trunc", "mmap"] {
                    one(mode, sender, seconds);
                }
            }
        }
    }
}

fn main() {
    #[cfg(target_os = "linux")]
    linux::main();
    #[cfg(not(target_os = "linux"))]
    eprintln!("zerocopy_receive: TCP_ZEROCOPY_RECEIVE is Linux's");
}
