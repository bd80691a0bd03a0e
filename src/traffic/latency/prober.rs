//! The client's side of the latency probe: a thread that sends a probe every 1/rate seconds on
//! a UDP socket connected to the server's echo port and records each echo. Sending never waits
//! for an answer, so a lost, late or absent echo costs nothing but that probe; a hostile echo
//! (wrong token, unknown or repeated sequence number) is ignored.

use super::probe::{self, ECHO_LEN, Probe};
use crate::traffic::protocol::Token;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What became of one probe. Times are ns; `sent` is on the client's clock since the prober
/// started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProbeRecord {
    pub sent_ns: u64,
    pub answer: Option<Answer>,
}

/// An echo's times: the round trip without the server's own holding time, and the raw one-way
/// transit each way (between unsynchronised clocks, so meaningful only relative to its
/// minimum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub rtt_ns: u64,
    pub forward_raw_ns: i64,
    pub reverse_raw_ns: i64,
}

/// A running prober.
pub struct Prober {
    base: Instant,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<ProbeRecord>>,
}

/// Longest wait for the last echoes after the prober is stopped.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);

impl Prober {
    /// Starts probing now on `sock` (connected to the echo), at most `max_probes` probes.
    pub fn start(
        sock: UdpSocket,
        token: Token,
        rate_hz: u32,
        max_probes: usize,
    ) -> std::io::Result<Prober> {
        let base = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let period = Duration::from_secs_f64(1.0 / f64::from(rate_hz.max(1)));
        let handle = std::thread::Builder::new()
            .name("latency-probe".into())
            .spawn(move || run(&sock, &token, base, period, max_probes, &flag))?;
        Ok(Prober { base, stop, handle })
    }

    /// When probing started: the origin of `ProbeRecord::sent_ns`.
    pub fn base(&self) -> Instant {
        self.base
    }

    /// Stops sending, waits a little for the last echoes, and returns every probe's record.
    pub fn finish(self) -> Vec<ProbeRecord> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

fn run(
    sock: &UdpSocket,
    token: &Token,
    base: Instant,
    period: Duration,
    max_probes: usize,
    stop: &AtomicBool,
) -> Vec<ProbeRecord> {
    let ns = |t: Instant| u64::try_from(t.duration_since(base).as_nanos()).unwrap_or(u64::MAX);
    let mut records: Vec<ProbeRecord> = Vec::with_capacity(max_probes.min(1 << 20));
    let mut next = base;
    let mut buf = [0u8; ECHO_LEN + 1];
    let mut max_rtt = Duration::ZERO;
    let mut drain_until: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if drain_until.is_none() && stop.load(Ordering::Relaxed) {
            // Twice the slowest round trip seen, at least 200 ms, at most DRAIN_MAX.
            let wait = (max_rtt * 2).clamp(Duration::from_millis(200), DRAIN_MAX);
            drain_until = Some(now + wait);
        }
        let wake = match drain_until {
            Some(d) if now >= d => break,
            Some(d) => d,
            None if now >= next && records.len() < max_probes => {
                let seq = records.len() as u64;
                let sent_ns = ns(now);
                let p = probe::encode_probe(token, Probe { seq, sent_ns });
                // A send that fails (a full queue, an ICMP error) loses this probe only.
                let _ = sock.send(&p);
                records.push(ProbeRecord {
                    sent_ns,
                    answer: None,
                });
                // Never catch up in a burst after a stall: the next probe is one period on.
                next = (next + period).max(now);
                continue;
            }
            None => next.min(now + Duration::from_millis(50)),
        };
        let wait = wake
            .saturating_duration_since(now)
            .max(Duration::from_micros(50));
        if sock.set_read_timeout(Some(wait)).is_err() {
            break;
        }
        let Ok(n) = sock.recv(&mut buf) else {
            continue;
        };
        let arrived = ns(Instant::now());
        let Some(e) = probe::parse_echo(&buf[..n], token) else {
            continue;
        };
        let Some(r) = usize::try_from(e.probe.seq)
            .ok()
            .and_then(|i| records.get_mut(i))
        else {
            continue;
        };
        if r.answer.is_some() || r.sent_ns != e.probe.sent_ns || arrived < r.sent_ns {
            continue;
        }
        let held = e.server_tx_ns.saturating_sub(e.server_rx_ns);
        let rtt_ns = (arrived - r.sent_ns).saturating_sub(held);
        max_rtt = max_rtt.max(Duration::from_nanos(rtt_ns));
        r.answer = Some(Answer {
            rtt_ns,
            forward_raw_ns: signed(e.server_rx_ns) - signed(r.sent_ns),
            reverse_raw_ns: signed(arrived) - signed(e.server_tx_ns),
        });
        if drain_until.is_some() && records.iter().all(|r| r.answer.is_some()) {
            break;
        }
    }
    records
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::latency::echo::EchoServer;
    use std::net::{IpAddr, SocketAddr};

    #[test]
    fn probes_a_live_echo_and_survives_an_absent_one() {
        let token = Token::random();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let echo = EchoServer::spawn(lo, token, lo, 200, Instant::now() + Duration::from_secs(30))
            .unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(SocketAddr::new(lo, echo.port())).unwrap();
        let p = Prober::start(sock, token, 200, 10_000).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let records = p.finish();
        assert!(
            (40..=70).contains(&records.len()),
            "about 60 probes in 0.3 s: {}",
            records.len()
        );
        let answered = records.iter().filter(|r| r.answer.is_some()).count();
        assert!(
            answered * 10 >= records.len() * 9,
            "{answered} of {}",
            records.len()
        );
        for r in records.iter().filter_map(|r| r.answer) {
            assert!(r.rtt_ns < 100_000_000, "loopback: {r:?}");
        }
        // Nobody answers: the prober still sends on time and stops within its drain bound.
        drop(echo);
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(silent.local_addr().unwrap()).unwrap();
        let p = Prober::start(sock, token, 100, 10_000).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        let records = p.finish();
        assert!(t.elapsed() <= DRAIN_MAX + Duration::from_millis(500));
        assert!(records.len() >= 10 && records.iter().all(|r| r.answer.is_none()));
    }

    #[test]
    fn forged_and_repeated_echoes_are_ignored() {
        let token = Token::random();
        let fake = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.connect(fake.local_addr().unwrap()).unwrap();
        let client = sock.local_addr().unwrap();
        let p = Prober::start(sock, token, 100, 10_000).unwrap();
        let mut buf = [0u8; 64];
        fake.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let n = fake.recv(&mut buf).unwrap();
        let probe = probe::parse_probe(&buf[..n], &token).unwrap();
        let echo = probe::Echo {
            probe,
            server_rx_ns: 1,
            server_tx_ns: 2,
        };
        let wrong_seq = probe::Echo {
            probe: Probe {
                seq: 1 << 40,
                ..probe
            },
            ..echo
        };
        fake.send_to(&probe::encode_echo(&Token::random(), echo), client)
            .unwrap();
        fake.send_to(&probe::encode_echo(&token, wrong_seq), client)
            .unwrap();
        fake.send_to(&probe::encode_echo(&token, echo), client)
            .unwrap();
        fake.send_to(
            &probe::encode_echo(
                &token,
                probe::Echo {
                    server_tx_ns: 1 << 50,
                    ..echo
                },
            ),
            client,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let records = p.finish();
        let answered: Vec<_> = records.iter().filter_map(|r| r.answer).collect();
        assert_eq!(answered.len(), 1, "one genuine echo, the repeat ignored");
        assert_eq!(records[0].answer, answered.first().copied());
    }
}
