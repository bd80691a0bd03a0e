//! The loops of a request/response test, one per connection on each end, on plain blocking
//! sockets (one thread per connection, TCP_NODELAY, buffers allocated once per connection and
//! no allocation per transaction). With `--spin` each wait first polls the socket without
//! sleeping (recv with MSG_DONTWAIT) for up to that long, then blocks as usual: a blocked
//! reader is woken by the scheduler, often on the other CPU by an inter-processor interrupt,
//! and that wake-up is most of a loopback transaction's time. Measured with a C pair on this
//! machine kind (2 vCPUs, loopback, 1-byte messages, 3 s, three rounds): blocking 26-32k
//! transactions/s, polling 49-74k. The client times each transaction from
//! the request's first byte written (crr: from the connect) to the response's last byte read
//! (crr: to the server's close) and records it in a `LatencyHistogram`.
//!
//! The count of `--transactions` is shared by a test's connections (`Budget`): each claims a
//! transaction before it starts one, so the test does exactly that many. Every loop ends by
//! its test's end time as well, and the server's loops by their stop flag or the peer's close.

use crate::platform::sockopt;
use crate::traffic::protocol::{IO_DEADLINE, parse_udp_hello};
use crate::traffic::rr::hdr::LatencyHistogram;
use crate::traffic::rr::{ServerCounts, UDP_RESPONSE_WAIT};
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The byte requests are filled with (responses carry `RESPONSE_FILL`).
const REQUEST_FILL: u8 = b'q';
const RESPONSE_FILL: u8 = b'r';
/// How often a server loop blocked in a read looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

/// The transactions left to a test of `--transactions`, shared by its connections.
#[derive(Debug)]
pub struct Budget(Option<AtomicU64>);

impl Budget {
    pub fn new(transactions: Option<u64>) -> Budget {
        Budget(transactions.map(AtomicU64::new))
    }

    /// Takes one transaction; `false` once none is left.
    #[inline]
    fn claim(&self) -> bool {
        match &self.0 {
            None => true,
            Some(left) => left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// What one end's loop was asked: sizes, the end, the shared count and the stop flag.
#[derive(Clone, Copy)]
pub struct Plan<'a> {
    pub request_bytes: usize,
    pub response_bytes: usize,
    pub end: Instant,
    pub budget: &'a Budget,
    pub stop: &'a AtomicBool,
    /// How long a wait polls before it blocks (`--spin`).
    pub spin: Option<Duration>,
}

impl Plan<'_> {
    #[inline]
    fn another(&self, now: Instant) -> bool {
        now < self.end && !self.stop.load(Ordering::Relaxed) && self.budget.claim()
    }
}

/// What one client connection (or crr worker) measured.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub transactions: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// UDP: requests sent again after `UDP_RESPONSE_WAIT` without a response.
    pub lost: u64,
    pub latency: LatencyHistogram,
    /// What ended this connection's loop early, if something did.
    pub error: Option<String>,
    /// When its last transaction ended: the test's time runs to the last of these, not to
    /// a wait for a response that came no more after the end.
    pub last_end: Option<Instant>,
}

impl Outcome {
    #[inline]
    fn done(&mut self, plan: &Plan<'_>, t0: Instant, t1: Instant) {
        self.transactions += 1;
        self.bytes_sent += plan.request_bytes as u64;
        self.bytes_received += plan.response_bytes as u64;
        self.latency
            .record_ns(u64::try_from(t1.duration_since(t0).as_nanos()).unwrap_or(u64::MAX));
        self.last_end = Some(t1);
    }
}

/// Client, TCP rr: transactions on `sock` until the plan ends; then half-closes it, which ends
/// the server's loop.
pub fn client_tcp(mut sock: TcpStream, plan: &Plan<'_>) -> Outcome {
    let mut out = Outcome::default();
    let request = vec![REQUEST_FILL; plan.request_bytes];
    let mut response = vec![0u8; plan.response_bytes];
    if let Err(e) = sock
        .set_nodelay(true)
        .and_then(|()| sock.set_read_timeout(Some(IO_DEADLINE)))
    {
        out.error = Some(format!("cannot set up the connection: {e}"));
        return out;
    }
    let mut now = Instant::now();
    while plan.another(now) {
        let t0 = now;
        if let Err(e) = sock
            .write_all(&request)
            .and_then(|()| read_full(&mut sock, &mut response, plan.spin))
        {
            out.error = Some(transaction_failed(&e));
            break;
        }
        now = Instant::now();
        out.done(plan, t0, now);
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    out
}

/// Client, crr: for each transaction a new connection from `connect`, the request, the
/// response, and the server's close.
pub fn client_crr(connect: &dyn Fn() -> io::Result<TcpStream>, plan: &Plan<'_>) -> Outcome {
    let mut out = Outcome::default();
    let request = vec![REQUEST_FILL; plan.request_bytes];
    let mut response = vec![0u8; plan.response_bytes];
    let mut now = Instant::now();
    while plan.another(now) {
        let t0 = now;
        let mut one = || -> io::Result<()> {
            let mut s = connect()?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(IO_DEADLINE))?;
            s.write_all(&request)?;
            s.read_exact(&mut response)?;
            // The server closes first (its side keeps TIME_WAIT, not this one's ports).
            let mut more = [0u8; 1];
            match s.read(&mut more)? {
                0 => Ok(()),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the server sent more than the response",
                )),
            }
        };
        if let Err(e) = one() {
            out.error = Some(transaction_failed(&e));
            break;
        }
        now = Instant::now();
        out.done(plan, t0, now);
    }
    out
}

/// Client, UDP rr: one datagram each way per transaction on the connected `sock`; a request
/// unanswered for `UDP_RESPONSE_WAIT` counts as lost and is sent again (its transaction is
/// timed from the first send), unless the test has ended: the transaction is then abandoned,
/// neither lost nor timed. Datagrams of another size, and hello echoes, are skipped.
pub fn client_udp(sock: &UdpSocket, plan: &Plan<'_>) -> Outcome {
    let mut out = Outcome::default();
    let request = vec![REQUEST_FILL; plan.request_bytes];
    let mut buf = vec![0u8; plan.response_bytes.max(64) + 1];
    if let Err(e) = sock.set_read_timeout(Some(UDP_RESPONSE_WAIT)) {
        out.error = Some(format!("cannot set up the socket: {e}"));
        return out;
    }
    let mut now = Instant::now();
    'test: while plan.another(now) {
        let t0 = now;
        if let Err(e) = sock.send(&request) {
            out.error = Some(transaction_failed(&e));
            break;
        }
        loop {
            match recv_spinning(sock, &mut buf, plan.spin) {
                Ok(n) if n == plan.response_bytes && parse_udp_hello(&buf[..n]).is_none() => {
                    break;
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {
                    // Past the end the request is not sent again: a trial's "lost 6 requests
                    // sent again" held one that was not, and the rate the 200 ms wait.
                    if Instant::now() >= plan.end || plan.stop.load(Ordering::Relaxed) {
                        break 'test;
                    }
                    out.lost += 1;
                    if let Err(e) = sock.send(&request) {
                        out.error = Some(transaction_failed(&e));
                        break 'test;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    out.error = Some(transaction_failed(&e));
                    break 'test;
                }
            }
        }
        now = Instant::now();
        out.done(plan, t0, now);
    }
    out
}

fn transaction_failed(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            "the server closed a connection mid-transaction: its log says why".into()
        }
        io::ErrorKind::WouldBlock => format!(
            "no response for {} s: the server or the path stalled",
            IO_DEADLINE.as_secs()
        ),
        _ => format!("a transaction failed: {e}"),
    }
}

/// A read or accept that waited out its deadline (EAGAIN). ETIMEDOUT is not one: it is the
/// connection's end (retransmissions given up), reported in the kernel's words, as the
/// control channel does (`protocol::is_timeout_kind`).
fn is_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Polls `sock` without sleeping for up to `spin`: `Some` with what a read brought (or its
/// error), `None` when nothing came in that time (the caller then blocks).
fn poll_for<S: std::os::fd::AsRawFd>(
    sock: &S,
    buf: &mut [u8],
    spin: Option<Duration>,
) -> Option<io::Result<usize>> {
    let until = Instant::now() + spin?;
    loop {
        match sockopt::recv_nowait(sock, buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            got => return Some(got),
        }
        if Instant::now() >= until {
            return None;
        }
        // Yield, not spin in place: with more polling threads than CPUs (-P 2 with both ends
        // on one 2-vCPU host) the thread that would answer may be waiting for this CPU. -u -P 2
        // --spin 2ms on loopback: spinning in place 766 transactions/s (p50 4 ms); yielding
        // 100k (blocking 116k). One connection: blocking 32k/s, yielding 69k.
        std::thread::yield_now();
    }
}

/// One read of a TCP connection: polled for up to `spin` first, then blocking.
fn read_some(sock: &mut TcpStream, buf: &mut [u8], spin: Option<Duration>) -> io::Result<usize> {
    match poll_for(sock, buf, spin) {
        Some(got) => got,
        None => sock.read(buf),
    }
}

/// One datagram of a UDP socket: polled for up to `spin` first, then blocking.
fn recv_spinning(sock: &UdpSocket, buf: &mut [u8], spin: Option<Duration>) -> io::Result<usize> {
    match poll_for(sock, buf, spin) {
        Some(got) => got,
        None => sock.recv(buf),
    }
}

/// `read_exact` through `read_some`.
fn read_full(sock: &mut TcpStream, buf: &mut [u8], spin: Option<Duration>) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(sock, &mut buf[got..], spin) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Fills `buf` from `sock`; `Ok(false)` when the peer closed before its first byte. A read
/// that times out looks at `stop` and reads on.
fn fill(
    sock: &mut TcpStream,
    buf: &mut [u8],
    stop: &AtomicBool,
    spin: Option<Duration>,
) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(sock, &mut buf[got..], spin) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Server, TCP rr: answers every request on `sock` until the client half-closes it or `stop`.
pub fn serve_tcp(
    mut sock: TcpStream,
    (request_bytes, response_bytes): (usize, usize),
    stop: &AtomicBool,
    spin: Option<Duration>,
) -> ServerCounts {
    let mut c = ServerCounts {
        accepted_connections: 1,
        ..ServerCounts::default()
    };
    let mut request = vec![0u8; request_bytes];
    let response = vec![RESPONSE_FILL; response_bytes];
    if sock.set_nodelay(true).is_err() || sock.set_read_timeout(Some(STOP_POLL)).is_err() {
        return c;
    }
    while let Ok(true) = fill(&mut sock, &mut request, stop, spin) {
        c.bytes_received += request_bytes as u64;
        if sock.write_all(&response).is_err() {
            break;
        }
        c.bytes_sent += response_bytes as u64;
        c.transactions += 1;
    }
    c
}

/// Server, crr: accepts connections from `peer` on the test's own `listener` (non-blocking,
/// shared by the test's workers), answers one request on each and closes it, until `stop`.
/// Connections from anyone else are closed unanswered and not counted.
pub fn serve_crr(
    listener: &TcpListener,
    peer: IpAddr,
    (request_bytes, response_bytes): (usize, usize),
    stop: &AtomicBool,
) -> ServerCounts {
    let mut c = ServerCounts::default();
    let mut request = vec![0u8; request_bytes];
    let response = vec![RESPONSE_FILL; response_bytes];
    while !stop.load(Ordering::Relaxed) {
        if !crate::platform::sockopt::wait_readable(listener, STOP_POLL).unwrap_or(false) {
            continue;
        }
        let (mut sock, from) = match listener.accept() {
            Ok(a) => a,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // Out of descriptors or the like: do not spin.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if from.ip().to_canonical() != peer.to_canonical() {
            continue;
        }
        c.accepted_connections += 1;
        let answered = sock
            .set_nonblocking(false)
            .and_then(|()| sock.set_nodelay(true))
            .and_then(|()| sock.set_read_timeout(Some(IO_DEADLINE)))
            .and_then(|()| fill(&mut sock, &mut request, stop, None))
            .and_then(|got| match got {
                true => sock.write_all(&response).map(|()| true),
                false => Ok(false),
            });
        if let Ok(true) = answered {
            c.bytes_received += request_bytes as u64;
            c.bytes_sent += response_bytes as u64;
            c.transactions += 1;
        }
    }
    c
}

/// Server, UDP rr: answers every datagram of the request's size on the connected `sock`
/// (hellos repeated by the client are skipped) until `stop`.
pub fn serve_udp(
    sock: &UdpSocket,
    (request_bytes, response_bytes): (usize, usize),
    stop: &AtomicBool,
    spin: Option<Duration>,
) -> ServerCounts {
    let mut c = ServerCounts::default();
    let mut buf = vec![0u8; request_bytes.max(64) + 1];
    let response = vec![RESPONSE_FILL; response_bytes];
    if sock.set_read_timeout(Some(STOP_POLL)).is_err() {
        return c;
    }
    while !stop.load(Ordering::Relaxed) {
        match recv_spinning(sock, &mut buf, spin) {
            Ok(n) if n == request_bytes && parse_udp_hello(&buf[..n]).is_none() => {
                c.bytes_received += n as u64;
                if sock.send(&response).is_ok() {
                    c.bytes_sent += response_bytes as u64;
                    c.transactions += 1;
                }
            }
            // Another size, a hello again, a timeout to look at `stop`, or the client's port
            // gone (ICMP): read on until stopped.
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_gives_exactly_its_count_across_threads() {
        let b = Budget::new(Some(10_000));
        let taken = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while b.claim() {
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(taken.load(Ordering::Relaxed), 10_000);
        assert!(Budget::new(None).claim());
    }

    #[test]
    fn a_deadline_is_no_response_and_a_connection_given_up_is_the_kernels_words() {
        let waited = io::Error::from(io::ErrorKind::WouldBlock);
        assert!(is_timeout(&waited));
        let no_response = format!("no response for {} s", IO_DEADLINE.as_secs());
        assert!(transaction_failed(&waited).starts_with(&no_response));
        let gone = io::Error::from_raw_os_error(libc::ETIMEDOUT);
        assert!(!is_timeout(&gone));
        let said = transaction_failed(&gone);
        assert!(
            said.contains("timed out") && !said.contains("no response"),
            "{said}"
        );
    }

    #[test]
    fn one_tcp_connection_does_the_count_and_moves_the_sizes_blocking_or_polling() {
        for spin in [None, Some(Duration::from_millis(1))] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                let server = s.spawn(|| {
                    let (sock, _) = l.accept().unwrap();
                    serve_tcp(sock, (100, 10_000), &stop, spin)
                });
                let budget = Budget::new(Some(500));
                let plan = Plan {
                    request_bytes: 100,
                    response_bytes: 10_000,
                    end: Instant::now() + Duration::from_secs(60),
                    budget: &budget,
                    stop: &stop,
                    spin,
                };
                let out = client_tcp(TcpStream::connect(addr).unwrap(), &plan);
                let served = server.join().unwrap();
                assert_eq!(out.error, None, "{spin:?}");
                assert_eq!((out.transactions, out.latency.count()), (500, 500));
                assert_eq!((out.bytes_sent, out.bytes_received), (50_000, 5_000_000));
                assert_eq!((served.transactions, served.bytes_received), (500, 50_000));
            });
        }
    }

    #[test]
    fn a_polling_udp_pair_answers_every_request() {
        let server_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        client_sock
            .connect(server_sock.local_addr().unwrap())
            .unwrap();
        server_sock
            .connect(client_sock.local_addr().unwrap())
            .unwrap();
        let stop = AtomicBool::new(false);
        let spin = Some(Duration::from_micros(500));
        std::thread::scope(|s| {
            let server = s.spawn(|| serve_udp(&server_sock, (32, 200), &stop, spin));
            let budget = Budget::new(Some(300));
            let plan = Plan {
                request_bytes: 32,
                response_bytes: 200,
                end: Instant::now() + Duration::from_secs(60),
                budget: &budget,
                stop: &stop,
                spin,
            };
            let out = client_udp(&client_sock, &plan);
            stop.store(true, Ordering::Relaxed);
            let served = server.join().unwrap();
            assert_eq!(out.error, None);
            assert_eq!(out.transactions, 300);
            assert_eq!(served.transactions, 300 + out.lost);
        });
    }

    /// A request whose response never comes, and whose wait ends after the test's end, is
    /// abandoned: not counted as lost (it is not sent again), and the test's time ends with
    /// the last transaction, not with the wait.
    #[test]
    fn a_udp_request_unanswered_at_the_end_is_abandoned_not_lost() {
        let server_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let client_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        client_sock
            .connect(server_sock.local_addr().unwrap())
            .unwrap();
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        std::thread::scope(|s| {
            // Answers 20 requests, then none.
            s.spawn(|| {
                let mut buf = [0u8; 64];
                for _ in 0..20 {
                    let Ok((_, from)) = server_sock.recv_from(&mut buf) else {
                        return;
                    };
                    let _ = server_sock.send_to(&[0u8; 16], from);
                }
            });
            let budget = Budget::new(None);
            let plan = Plan {
                request_bytes: 8,
                response_bytes: 16,
                end: start + UDP_RESPONSE_WAIT / 2,
                budget: &budget,
                stop: &stop,
                spin: None,
            };
            let out = client_udp(&client_sock, &plan);
            assert_eq!(out.error, None);
            assert_eq!((out.transactions, out.lost), (20, 0));
            let last = out
                .last_end
                .expect("a last transaction")
                .duration_since(start);
            assert!(last < UDP_RESPONSE_WAIT / 2, "{last:?}");
        });
    }

    #[test]
    fn polling_gives_up_after_its_budget_and_returns_what_came() {
        let (a, b) = (
            UdpSocket::bind("127.0.0.1:0").unwrap(),
            UdpSocket::bind("127.0.0.1:0").unwrap(),
        );
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let t0 = Instant::now();
        assert!(poll_for(&a, &mut buf, Some(Duration::from_millis(20))).is_none());
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_millis(20) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(
            poll_for(&a, &mut buf, None).is_none(),
            "no spin: straight to the blocking read"
        );
        b.send(b"hello").unwrap();
        let got = poll_for(&a, &mut buf, Some(Duration::from_secs(5)))
            .unwrap()
            .unwrap();
        assert_eq!(&buf[..got], b"hello");
    }
}
