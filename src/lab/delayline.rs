//! The userspace delay line used where the kernel has no `sch_netem` (in the style of
//! mahimahi's `mm-delay`): packets read from one host's TUN device are held for the one-way
//! delay (plus jitter), dropped with the loss probability, and written to the other host's
//! TUN device. One thread per direction; packets keep their order (jitter never reorders).
//!
//! The path's rate and queue are applied here too, as a router would: each packet waits for
//! the link (its size at the rate) behind the bytes already queued, and is dropped at the tail
//! when the queue is full. A `tbf` on the sender's own TUN device would not do: TCP small
//! queues (TSQ) let one socket keep only about a millisecond of data in its host's qdiscs, so
//! TCP could never fill the queue and the queueing delay a user asks for would not appear.
//!
//! `Schedule` is the pure part (release times, loss draws) and is unit-tested; `forward` is
//! the I/O loop.

use crate::platform::netns;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// About the most one direction of the delay line carries on this machine kind (measured).
pub const CEILING_BPS: f64 = 2.5e9;

/// What one direction of the path does to packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub delay: Duration,
    /// Uniform in [-jitter, +jitter] around `delay`, never below zero, never reordering.
    pub jitter: Duration,
    /// Probability in [0, 1].
    pub loss: f64,
    /// The bottleneck's rate and queue, when the path has a rate.
    pub shaper: Option<Shaper>,
    /// The largest packet each direction's receiving host takes (its MTU): a->b, b->a. A
    /// larger one is dropped as that host's NIC would drop an oversize frame, so a lab with
    /// `--mtu 9000 --mtu-b 1500` shows the mismatch (a TUN device takes any size: a trial's
    /// lab delivered 9000-byte packets to a 1500-byte host, and `rfc6349` read a path MTU of
    /// 9000).
    pub mtu: [u32; 2],
}

/// A link of `rate_bps` fed by a tail-drop queue of at most `queue_bytes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shaper {
    pub rate_bps: f64,
    pub queue_bytes: u64,
}

impl Impairment {
    /// What a lab path does to each direction's packets.
    pub fn of(path: &crate::lab::PathConfig) -> Impairment {
        Impairment {
            delay: path.delay,
            jitter: path.jitter,
            loss: path.loss_percent / 100.0,
            shaper: path.rate_bps.map(|rate_bps| Shaper {
                rate_bps,
                queue_bytes: path.queue_bytes.unwrap_or_else(|| {
                    (path.queue.as_secs_f64() * rate_bps / 8.0)
                        .round()
                        .max(1500.0) as u64
                }),
            }),
            mtu: [path.mtu_b, path.mtu_a],
        }
    }
}

/// What happens to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Written to the other host at this time.
    Release(Instant),
    /// Lost at random (the path's loss).
    Lost,
    /// Dropped at the tail of a full queue.
    QueueFull,
    /// Larger than the receiving host's MTU.
    Oversize,
}

/// Decides each packet's fate: dropped, or released at a time.
pub struct Schedule {
    imp: Impairment,
    /// The largest packet the receiving host takes, bytes.
    max_len: usize,
    rng: StdRng,
    last_release: Option<Instant>,
    /// When the link finishes sending what is queued.
    link_free: Option<Instant>,
}

impl Schedule {
    /// The schedule of direction `dir` (0: a->b, 1: b->a).
    pub fn new(imp: Impairment, dir: usize, seed: u64) -> Schedule {
        Schedule {
            max_len: imp.mtu.get(dir).map_or(usize::MAX, |m| *m as usize),
            imp,
            rng: StdRng::seed_from_u64(seed),
            last_release: None,
            link_free: None,
        }
    }

    /// The fate of a packet of `len` bytes that arrived at `now`.
    pub fn admit(&mut self, now: Instant, len: usize) -> Fate {
        if len > self.max_len {
            return Fate::Oversize;
        }
        if self.imp.loss > 0.0 && self.rng.gen_bool(self.imp.loss.min(1.0)) {
            return Fate::Lost;
        }
        let mut sent = now;
        if let Some(sh) = self.imp.shaper {
            let free = self.link_free.map_or(now, |f| f.max(now));
            let backlog = free.saturating_duration_since(now).as_secs_f64() * sh.rate_bps / 8.0;
            if backlog + len as f64 > sh.queue_bytes as f64 {
                return Fate::QueueFull;
            }
            sent = free + Duration::from_secs_f64(len as f64 * 8.0 / sh.rate_bps);
            self.link_free = Some(sent);
        }
        let mut delay = self.imp.delay.as_secs_f64();
        if !self.imp.jitter.is_zero() {
            let j = self.imp.jitter.as_secs_f64();
            delay = (delay + self.rng.gen_range(-j..=j)).max(0.0);
        }
        let release = sent + Duration::from_secs_f64(delay);
        // FIFO: a packet never overtakes the one before it.
        let release = self.last_release.map_or(release, |l| release.max(l));
        self.last_release = Some(release);
        Fate::Release(release)
    }
}

/// Counters of one direction, readable while it runs.
#[derive(Debug, Default)]
pub struct Counters {
    pub forwarded: AtomicU64,
    pub dropped_loss: AtomicU64,
    pub dropped_queue: AtomicU64,
    pub dropped_oversize: AtomicU64,
    pub bytes: AtomicU64,
}

/// Most packets held at once in one direction (about 1.5 s at 1 Gbit/s of 1500-byte packets).
const MAX_QUEUE: usize = 131_072;

/// Moves packets from `input` to `output` until `stop` is raised.
pub fn forward(
    input: &File,
    output: &File,
    mut schedule: Schedule,
    stop: &AtomicBool,
    counters: &Counters,
) {
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut scratch = vec![0u8; 65_536];
    let mut reader = input;
    let mut writer = output;
    while !stop.load(Ordering::Relaxed) {
        // Take in everything that is waiting.
        loop {
            match reader.read(&mut scratch) {
                Ok(0) => break,
                Ok(n) => {
                    // Held packets are stored at their own size, in recycled buffers.
                    let mut buf = spare.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(&scratch[..n]);
                    match schedule.admit(Instant::now(), n) {
                        Fate::Release(at) if queue.len() < MAX_QUEUE => queue.push_back((at, buf)),
                        Fate::Release(_) | Fate::QueueFull => {
                            counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                            spare.push(buf);
                        }
                        Fate::Lost => {
                            counters.dropped_loss.fetch_add(1, Ordering::Relaxed);
                            spare.push(buf);
                        }
                        Fate::Oversize => {
                            counters.dropped_oversize.fetch_add(1, Ordering::Relaxed);
                            spare.push(buf);
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // Release what is due.
        let now = Instant::now();
        while queue.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, pkt)) = queue.pop_front() {
                if writer.write(&pkt).is_ok() {
                    counters.forwarded.fetch_add(1, Ordering::Relaxed);
                    counters
                        .bytes
                        .fetch_add(pkt.len() as u64, Ordering::Relaxed);
                } else {
                    counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                }
                if spare.len() < 4096 {
                    spare.push(pkt);
                }
            }
        }
        let wait = queue
            .front()
            .map(|(at, _)| at.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(100))
            .min(Duration::from_millis(100));
        if !wait.is_zero() {
            netns::wait_readable(input, wait);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imp(delay_ms: u64, jitter_ms: u64, loss: f64) -> Impairment {
        Impairment {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::from_millis(jitter_ms),
            loss,
            shaper: None,
            mtu: [65_535; 2],
        }
    }

    fn at(f: Fate) -> Instant {
        match f {
            Fate::Release(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fixed_delay_is_exact() {
        let mut s = Schedule::new(imp(10, 0, 0.0), 0, 1);
        let t = Instant::now();
        assert_eq!(
            s.admit(t, 1500),
            Fate::Release(t + Duration::from_millis(10))
        );
    }

    /// A mismatch lab (`--mtu 9000 --mtu-b 1500`): host a's jumbo packets are dropped on
    /// their way to b, as b's NIC would; b's own 1500-byte packets reach a.
    #[test]
    fn packets_past_the_receiving_hosts_mtu_are_dropped() {
        let mismatch = Impairment {
            mtu: [1500, 9000],
            ..imp(1, 0, 0.0)
        };
        let t = Instant::now();
        let mut to_b = Schedule::new(mismatch, 0, 1);
        assert_eq!(to_b.admit(t, 9000), Fate::Oversize);
        assert_eq!(to_b.admit(t, 1501), Fate::Oversize);
        assert!(matches!(to_b.admit(t, 1500), Fate::Release(_)));
        let mut to_a = Schedule::new(mismatch, 1, 1);
        assert!(matches!(to_a.admit(t, 9000), Fate::Release(_)));
        // From a lab's own path: a->b takes host b's MTU.
        let path = crate::lab::PathConfig {
            mtu_a: 9000,
            mtu_b: 1500,
            ..crate::lab::PathConfig::default()
        };
        assert_eq!(Impairment::of(&path).mtu, [1500, 9000]);
    }

    #[test]
    fn loss_rate_matches_the_probability() {
        let mut s = Schedule::new(imp(0, 0, 0.01), 0, 7);
        let t = Instant::now();
        let lost = (0..200_000)
            .filter(|_| s.admit(t, 1500) == Fate::Lost)
            .count();
        let rate = lost as f64 / 200_000.0;
        assert!((rate - 0.01).abs() < 0.001, "{rate}");
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let mut s = Schedule::new(imp(10, 3, 0.0), 0, 3);
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_micros(i * 10);
            let at = at(s.admit(now, 100));
            assert!(at >= last, "reordered");
            assert!(at <= now + Duration::from_millis(13) + Duration::from_micros(10));
            last = at;
        }
    }

    #[test]
    fn the_shaper_sends_at_the_rate_and_drops_at_the_tail_of_a_full_queue() {
        // 12 Mbit/s: a 1500-byte packet takes 1 ms on the link; the queue holds 10 packets.
        let mut s = Schedule::new(
            Impairment {
                shaper: Some(Shaper {
                    rate_bps: 12e6,
                    queue_bytes: 15_000,
                }),
                ..imp(5, 0, 0.0)
            },
            0,
            1,
        );
        let t0 = Instant::now();
        let fates: Vec<Fate> = (0..12).map(|_| s.admit(t0, 1500)).collect();
        for (i, f) in fates.iter().take(10).enumerate() {
            let want = t0 + Duration::from_millis(5 + 1 + i as u64);
            let got = at(*f);
            let err = if got > want { got - want } else { want - got };
            assert!(err < Duration::from_micros(1), "packet {i}: {err:?}");
        }
        assert_eq!(&fates[10..], &[Fate::QueueFull, Fate::QueueFull]);
        // Once the link has sent some, the queue takes packets again; the delay a packet sees
        // is the queue ahead of it at the rate plus the path's delay.
        let later = t0 + Duration::from_micros(3500);
        let got = at(s.admit(later, 1500));
        assert_eq!(got, t0 + Duration::from_millis(5 + 11));
        // An idle link sends at once.
        let idle = t0 + Duration::from_secs(1);
        assert_eq!(
            s.admit(idle, 1500),
            Fate::Release(idle + Duration::from_millis(6))
        );
    }

    #[test]
    fn a_paths_queue_is_its_size_or_its_time_at_the_rate() {
        let mut p = crate::lab::PathConfig {
            rate_bps: Some(100e6),
            queue: Duration::from_millis(20),
            ..crate::lab::PathConfig::default()
        };
        assert_eq!(Impairment::of(&p).shaper.unwrap().queue_bytes, 250_000);
        p.set_queue("32K").unwrap();
        assert_eq!(Impairment::of(&p).shaper.unwrap().queue_bytes, 32_768);
        p.rate_bps = None;
        assert_eq!(Impairment::of(&p).shaper, None);
    }
}
