//! The machine's own ceiling for TCP on loopback: a bare sender and receiver (two threads, no
//! measurement machinery) moving data for a few seconds with each send path and chunk size, so
//! netsweep's figure can be read as a fraction of what this host can carry.
//!
//!     cargo run --release --example ceiling -- --seconds 4 --paths sendfile,write \
//!         --chunks 16K,64K,256K,1M,4M
//!
//! Prints one JSON object per line: `{"path":"sendfile","chunk":65536,"source":65536,
//! "read":65536,"streams":1,"gbps":38.2}`. `--streams N` runs N such pairs at once (the
//! ceiling for `-P N`) and prints their sum. `--discard` makes the receiver drop the data in
//! the kernel without copying it (`recv` with `MSG_TRUNC`): an experiment on where the ceiling
//! comes from (see `traffic::engine::sendpath`), not a path netsweep uses. `--rcvlowat SIZE`
//! sets the receiver's low-water mark (`SO_RCVLOWAT`; netsweep's receivers set one that
//! follows their rate, see `traffic::engine::lowater`). `--nap MICROS` makes the receiver
//! read without blocking and sleep that long whenever the socket is empty (the napping
//! receivers of `lowater`; with `CEILING_TIGHT_SLACK` set, without the kernel's default timer
//! slack of up to 50 us on each sleep). `--source SIZE` sets the size of the data the sender cycles
//! through (default: the chunk); `--read SIZE` the receiver's read size (default: the larger of
//! 64 KiB and the chunk). `--sndbuf SIZE` and `--rcvbuf SIZE` set the sender's SO_SNDBUF and
//! the receiver's SO_RCVBUF (the kernel grants twice each; default: its autotuning; see
//! `traffic::engine::rcvbuf`). The path `udp-gso` is the UDP ceiling: `--chunks` is then the
//! datagram size, sent in batches of up to 65000 bytes per call with UDP_SEGMENT, to a receiver
//! with UDP_GRO and a 64 MiB buffer that drops the data (`--discard`: `MSG_TRUNC` into a 64-byte
//! buffer, which for UDP copies those bytes and drops the rest) or copies it. Traffic goes to
//! 127.0.0.1 only and stops after `--seconds`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn size(s: &str) -> usize {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    num.parse::<usize>().map(|n| n * mult).unwrap_or_else(|_| {
        eprintln!("ceiling: {s:?} is not a size");
        std::process::exit(2)
    })
}

struct Case {
    path: String,
    chunk: usize,
    source: usize,
    read: usize,
    /// The receiver takes the data out of the socket without copying it (`MSG_TRUNC`).
    discard: bool,
    /// SO_RCVLOWAT on the receiver (0: the kernel's default of 1 byte).
    rcvlowat: usize,
    /// Microseconds the receiver sleeps after draining the socket (0: it blocks in `read`).
    nap: u64,
    /// SO_SNDBUF on the sender and SO_RCVBUF on the receiver (0: the kernel's autotuning).
    sndbuf: usize,
    rcvbuf: usize,
}

/// One run: returns the receiver's rate in Gbit/s over `secs`.
fn run(case: &Case, secs: f64) -> std::io::Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let read = case.read;
    let discard = case.discard;
    let lowat = case.rcvlowat;
    let nap = case.nap;
    if case.rcvbuf > 0 {
        // On the listener, so the accepted socket's window scale is chosen for it.
        socket2::SockRef::from(&listener).set_recv_buffer_size(case.rcvbuf)?;
    }
    let receiver = std::thread::spawn(move || -> std::io::Result<(u64, Duration)> {
        let (mut s, _) = listener.accept()?;
        if lowat > 0 {
            netsweep::platform::sockopt::set_rcvlowat(&s, lowat)?;
        }
        let mut buf = vec![0u8; read];
        let mut total = 0u64;
        let mut t0 = None;
        if nap > 0 {
            s.set_nonblocking(true)?;
            if std::env::var_os("CEILING_TIGHT_SLACK").is_some() {
                // An experiment: a nap of its length, without the default slack of up to 50 us.
                netsweep::platform::sockopt::tighten_timer_slack();
            }
        }
        loop {
            let got = if discard {
                netsweep::platform::sockopt::recv_trunc(&s, &mut buf)
            } else {
                s.read(&mut buf)
            };
            match got {
                Ok(0) => break,
                Ok(n) => {
                    t0.get_or_insert_with(Instant::now);
                    total += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && nap > 0 => {
                    std::thread::sleep(Duration::from_micros(nap));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((total, t0.map_or(Duration::ZERO, |t| t.elapsed())))
    });
    let mut sock = TcpStream::connect(addr)?;
    if case.sndbuf > 0 {
        socket2::SockRef::from(&sock).set_send_buffer_size(case.sndbuf)?;
    }
    let data: Vec<u8> = (0..case.source)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let file = netsweep::platform::zerocopy::payload_file(&data)?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut offset = 0usize;
    while Instant::now() < end {
        for _ in 0..64 {
            let n = match case.path.as_str() {
                "sendfile" => {
                    let want = case.chunk.min(case.source - offset);
                    netsweep::platform::zerocopy::send_file(&sock, &file, offset as u64, want)?
                }
                _ => {
                    let want = case.chunk.min(case.source - offset);
                    sock.write(&data[offset..offset + want])?
                }
            };
            offset = (offset + n) % case.source;
        }
    }
    sock.shutdown(std::net::Shutdown::Write)?;
    let (bytes, took) = receiver
        .join()
        .map_err(|_| std::io::Error::other("receiver panicked"))??;
    Ok(bytes as f64 * 8.0 / took.as_secs_f64().max(1e-9) / 1e9)
}

/// One UDP run (`udp-gso`): datagrams of `chunk` bytes; the receiver's rate in Gbit/s from its
/// first datagram to the sender's deadline.
fn run_udp(case: &Case, secs: f64) -> std::io::Result<f64> {
    use netsweep::platform::{sockopt, udpbatch};
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    udpbatch::enable_udp_gro(&rx);
    sockopt::raise_rcvbuf(&rx, 64 << 20);
    rx.set_read_timeout(Some(Duration::from_millis(100)))?;
    let addr = rx.local_addr()?;
    let done = AtomicBool::new(false);
    let len = case.chunk.clamp(64, 65_000);
    let batch = (65_000 / len).clamp(1, 64);
    std::thread::scope(|scope| {
        let discard = case.discard;
        let done = &done;
        let receiver = scope.spawn(move || {
            let mut buf = vec![0u8; if discard { 64 } else { 65_536 }];
            let (mut total, mut t0) = (0u64, None);
            while !done.load(Ordering::Relaxed) {
                let got = if discard {
                    sockopt::recv_trunc(&rx, &mut buf)
                } else {
                    rx.recv(&mut buf)
                };
                if let Ok(n) = got {
                    t0.get_or_insert_with(Instant::now);
                    total += n as u64;
                }
            }
            (total, t0)
        });
        let tx = UdpSocket::bind("127.0.0.1:0")?;
        tx.connect(addr)?;
        let data = vec![0x5au8; len * batch];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            for _ in 0..64 {
                // A full receive buffer drops datagrams; the receiver counts what it got.
                let _ = udpbatch::send_segmented(&tx, &data, len as u16);
            }
        }
        let stopped = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        done.store(true, Ordering::Relaxed);
        let (bytes, t0) = receiver
            .join()
            .map_err(|_| std::io::Error::other("receiver panicked"))?;
        let took = t0.map_or(Duration::ZERO, |t| stopped.saturating_duration_since(t));
        Ok(bytes as f64 * 8.0 / took.as_secs_f64().max(1e-9) / 1e9)
    })
}

/// `streams` pairs at once; the sum of their rates (each measured over its own receiving time,
/// which all but coincide: they start together and stop at the same deadline).
fn run_parallel(case: &Case, secs: f64, streams: usize) -> std::io::Result<f64> {
    std::thread::scope(|s| {
        let one = || {
            if case.path == "udp-gso" {
                run_udp(case, secs)
            } else {
                run(case, secs)
            }
        };
        let pairs: Vec<_> = (0..streams).map(|_| s.spawn(one)).collect();
        pairs.into_iter().try_fold(0.0, |sum, p| {
            p.join()
                .map_err(|_| std::io::Error::other("stream panicked"))?
                .map(|g| sum + g)
        })
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let secs: f64 = get("--seconds")
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(4.0)
        .clamp(0.2, 60.0);
    let paths = get("--paths").unwrap_or_else(|| "sendfile,write".into());
    let chunks = get("--chunks").unwrap_or_else(|| "16K,64K,256K,1M,4M".into());
    let streams: usize = get("--streams")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 16);
    for path in paths.split(',') {
        for chunk in chunks.split(',').map(size) {
            let source = get("--source").map_or(chunk, |s| size(&s)).max(chunk);
            let read = get("--read").map_or(chunk.max(64 << 10), |s| size(&s));
            let case = Case {
                path: path.to_string(),
                chunk,
                source,
                read,
                discard: args.iter().any(|a| a == "--discard"),
                rcvlowat: get("--rcvlowat").map_or(0, |s| size(&s)),
                nap: get("--nap").map_or(0, |s| {
                    s.parse().unwrap_or_else(|_| {
                        eprintln!("ceiling: --nap takes microseconds, not {s:?}");
                        std::process::exit(2)
                    })
                }),
                sndbuf: get("--sndbuf").map_or(0, |s| size(&s)),
                rcvbuf: get("--rcvbuf").map_or(0, |s| size(&s)),
            };
            match run_parallel(&case, secs, streams) {
                Ok(gbps) => println!(
                    "{{\"path\":\"{path}\",\"chunk\":{chunk},\"source\":{source},\"read\":{read},\"streams\":{streams},\"gbps\":{gbps:.2}}}"
                ),
                Err(e) => eprintln!("ceiling: {path} {chunk}: {e}"),
            }
        }
    }
}
