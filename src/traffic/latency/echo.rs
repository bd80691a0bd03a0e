//! The server's side of the latency probe: one UDP socket per test that echoes the test's
//! probes, stamped with its own receive and send times, to the control connection's peer only.
//! It is on the server's port where the server takes datagrams there (as the UDP streams are:
//! one port to open in a firewall), a socket connected to the prober once its hello arrives,
//! else on a port of its own; either way it echoes the prober's hello, which tells the client
//! the path is open before the idle baseline starts.
//! It stops when its owner drops it or at a deadline, whichever comes first, and answers at
//! most twice the asked probe rate (plus a small burst), so the token's holder cannot turn it
//! into a flood.

use super::probe::{self, ECHO_LEN, Echo};
use crate::traffic::protocol::{self, LATENCY_STREAM, Token};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the loop looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// A running echo; stops and joins on drop.
pub struct EchoServer {
    port: u16,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<u64>>,
}

impl EchoServer {
    /// Binds on `ip` (an ephemeral port) and echoes probes carrying `token` that come from
    /// `peer` until dropped or until `until`.
    pub fn spawn(
        ip: IpAddr,
        token: Token,
        peer: IpAddr,
        rate_hz: u32,
        until: Instant,
    ) -> std::io::Result<EchoServer> {
        let sock = UdpSocket::bind(SocketAddr::new(ip, 0))?;
        sock.set_read_timeout(Some(POLL))?;
        let port = sock.local_addr()?.port();
        EchoServer::start(port, move |stop| {
            serve(&sock, &token, peer, rate_hz, until, stop)
        })
    }

    /// Echoes on the server's own port (`on`): once the prober's hello from `peer` arrives
    /// through `on.hellos`, from a socket `on.bind` makes there, connected to the prober.
    pub fn on_port(
        on: OnPort,
        token: Token,
        peer: IpAddr,
        rate_hz: u32,
        until: Instant,
    ) -> std::io::Result<EchoServer> {
        EchoServer::start(on.at.port(), move |stop| {
            match greeted((&on, &token), peer, until, stop) {
                Some(sock) => serve(&sock, &token, peer, rate_hz, until, stop),
                None => 0,
            }
        })
    }

    /// Runs `echo` on its own thread, at the timely priority where the process may, until
    /// the server drops it.
    fn start(
        port: u16,
        echo: impl FnOnce(&AtomicBool) -> u64 + Send + 'static,
    ) -> std::io::Result<EchoServer> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("latency-echo".into())
            .spawn(move || {
                let _ = crate::platform::sched::prefer_timely();
                echo(&flag)
            })?;
        Ok(EchoServer {
            port,
            stop,
            handle: Some(handle),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

/// Where an echo on the server's port takes its prober's hello and makes its socket.
pub struct OnPort {
    /// The server's UDP address (its port's socket takes the hellos).
    pub at: SocketAddr,
    /// Each hello of this test's prober that reached the port, with its sender.
    pub hellos: Receiver<(u16, SocketAddr)>,
    /// Binds a socket on `at` beside the port's own (SO_REUSEPORT).
    pub bind: fn(SocketAddr) -> std::io::Result<UdpSocket>,
}

/// The echo's socket on the server's port, connected to the prober whose hello came from
/// `peer`, the hello answered on it; `None` when none came before `until` or `stop`.
fn greeted(
    (on, token): (&OnPort, &Token),
    peer: IpAddr,
    until: Instant,
    stop: &AtomicBool,
) -> Option<UdpSocket> {
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        let Ok((_, from)) = on.hellos.recv_timeout(POLL) else {
            continue;
        };
        if from.ip().to_canonical() != peer.to_canonical() {
            continue;
        }
        let sock = (on.bind)(on.at).ok()?;
        sock.connect(from).ok()?;
        sock.set_read_timeout(Some(POLL)).ok()?;
        // The answer tells the prober the path is open; a repeat of the hello (this answer
        // lost) reaches this socket, which answers it too (`serve`).
        let _ = sock.send(&protocol::udp_hello(token, LATENCY_STREAM));
        return Some(sock);
    }
    None
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The echo loop; returns how many probes it answered.
fn serve(
    sock: &UdpSocket,
    token: &Token,
    peer: IpAddr,
    rate_hz: u32,
    until: Instant,
    stop: &AtomicBool,
) -> u64 {
    let base = Instant::now();
    let ns = |t: Instant| u64::try_from(t.duration_since(base).as_nanos()).unwrap_or(u64::MAX);
    let mut bucket = Bucket::new(f64::from(rate_hz) * 2.0, 10.0 + f64::from(rate_hz) / 10.0);
    let mut buf = [0u8; ECHO_LEN + 1];
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let rx = Instant::now();
        if from.ip().to_canonical() != peer.to_canonical() {
            continue;
        }
        // The prober's hello, answered so it knows the path is open (within the same budget).
        if protocol::parse_udp_hello(&buf[..n]) == Some((*token, LATENCY_STREAM)) {
            if bucket.take(rx) {
                let _ = sock.send_to(&buf[..n], from);
            }
            continue;
        }
        let Some(p) = probe::parse_probe(&buf[..n], token) else {
            continue;
        };
        if !bucket.take(rx) {
            continue;
        }
        let echo = Echo {
            probe: p,
            server_rx_ns: ns(rx),
            server_tx_ns: ns(Instant::now()),
        };
        if sock.send_to(&probe::encode_echo(token, echo), from).is_ok() {
            answered += 1;
        }
    }
    answered
}

/// A token bucket: `rate` per second, at most `burst` at once.
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Bucket {
        Bucket {
            rate,
            burst,
            tokens: burst,
            last: None,
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        if let Some(last) = self.last {
            let refill = now.saturating_duration_since(last).as_secs_f64() * self.rate;
            self.tokens = (self.tokens + refill).min(self.burst);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::latency::probe::{Probe, encode_probe, parse_echo};

    /// On the server's port: nothing is bound until the prober's hello from the peer arrives;
    /// then a socket connected to the prober answers it, and the probes after it.
    #[test]
    fn an_echo_on_the_port_answers_from_a_socket_connected_to_the_prober() {
        let token = Token::random();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let hub = UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = hub.local_addr().unwrap();
        let (tx, hellos) = std::sync::mpsc::channel();
        let on = OnPort {
            at,
            hellos,
            // The test's stand-in for the port's reuseport socket: one of its own, on another
            // port, which the prober's packets then reach because it is connected to them.
            bind: |_| UdpSocket::bind("127.0.0.1:0"),
        };
        let echo =
            EchoServer::on_port(on, token, lo, 100, Instant::now() + Duration::from_secs(30))
                .unwrap();
        assert_eq!(echo.port(), at.port());
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        // A hello from elsewhere is not taken.
        tx.send((LATENCY_STREAM, "127.0.0.2:9".parse().unwrap()))
            .unwrap();
        tx.send((LATENCY_STREAM, c.local_addr().unwrap())).unwrap();
        let mut buf = [0u8; 128];
        let (n, from) = c.recv_from(&mut buf).unwrap();
        assert_eq!(
            protocol::parse_udp_hello(&buf[..n]),
            Some((token, LATENCY_STREAM))
        );
        c.connect(from).unwrap();
        c.send(&encode_probe(&token, Probe { seq: 1, sent_ns: 3 }))
            .unwrap();
        let n = c.recv(&mut buf).unwrap();
        assert_eq!(parse_echo(&buf[..n], &token).map(|e| e.probe.seq), Some(1));
        drop(hub);
    }

    #[test]
    fn the_bucket_allows_its_rate_and_no_more() {
        let t0 = Instant::now();
        let mut b = Bucket::new(100.0, 5.0);
        let first: usize = (0..20).filter(|_| b.take(t0)).count();
        assert_eq!(first, 5, "the burst");
        let later = t0 + Duration::from_millis(100);
        let more: usize = (0..20).filter(|_| b.take(later)).count();
        assert_eq!(more, 5, "100/s for 0.1 s, capped by the burst");
    }

    #[test]
    fn echoes_this_tests_probes_only_and_stops_when_dropped() {
        let token = Token::random();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let echo = EchoServer::spawn(lo, token, lo, 100, Instant::now() + Duration::from_secs(30))
            .unwrap();
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(SocketAddr::new(lo, echo.port())).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let other = Token::random();
        c.send(&encode_probe(&other, Probe { seq: 1, sent_ns: 1 }))
            .unwrap();
        c.send(b"junk").unwrap();
        c.send(&encode_probe(&token, Probe { seq: 2, sent_ns: 7 }))
            .unwrap();
        let mut buf = [0u8; 128];
        let n = c.recv(&mut buf).unwrap();
        let e = parse_echo(&buf[..n], &token).expect("an echo");
        assert_eq!(
            e.probe,
            Probe { seq: 2, sent_ns: 7 },
            "only the right token"
        );
        assert!(e.server_tx_ns >= e.server_rx_ns);
        // The prober's hello is answered as it came; another test's is not.
        c.send(&protocol::udp_hello(&other, LATENCY_STREAM))
            .unwrap();
        let hello = protocol::udp_hello(&token, LATENCY_STREAM);
        c.send(&hello).unwrap();
        let n = c.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], &hello[..]);
        let t = Instant::now();
        drop(echo);
        assert!(t.elapsed() < Duration::from_secs(1), "stops promptly");
    }
}
