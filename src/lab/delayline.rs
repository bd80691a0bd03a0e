//! The userspace delay line used where the kernel has no `sch_netem` (in the style of
//! mahimahi's `mm-delay`): packets read from one host's TUN device are held for the one-way
//! delay (plus jitter), dropped with the loss probability, and written to the other host's
//! TUN device. One thread per direction; packets keep their order (jitter never reorders).
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

/// What one direction of the path does to packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub delay: Duration,
    /// Uniform in [-jitter, +jitter] around `delay`, never below zero, never reordering.
    pub jitter: Duration,
    /// Probability in [0, 1].
    pub loss: f64,
}

/// Decides each packet's fate: dropped, or released at a time.
pub struct Schedule {
    imp: Impairment,
    rng: StdRng,
    last_release: Option<Instant>,
}

impl Schedule {
    pub fn new(imp: Impairment, seed: u64) -> Schedule {
        Schedule {
            imp,
            rng: StdRng::seed_from_u64(seed),
            last_release: None,
        }
    }

    /// When a packet that arrived at `now` leaves, or `None` if it is lost.
    pub fn admit(&mut self, now: Instant) -> Option<Instant> {
        if self.imp.loss > 0.0 && self.rng.gen_bool(self.imp.loss.min(1.0)) {
            return None;
        }
        let mut delay = self.imp.delay.as_secs_f64();
        if !self.imp.jitter.is_zero() {
            let j = self.imp.jitter.as_secs_f64();
            delay = (delay + self.rng.gen_range(-j..=j)).max(0.0);
        }
        let release = now + Duration::from_secs_f64(delay);
        // FIFO: a packet never overtakes the one before it.
        let release = self.last_release.map_or(release, |l| release.max(l));
        self.last_release = Some(release);
        Some(release)
    }
}

/// Counters of one direction, readable while it runs.
#[derive(Debug, Default)]
pub struct Counters {
    pub forwarded: AtomicU64,
    pub dropped_loss: AtomicU64,
    pub dropped_queue: AtomicU64,
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
                    match schedule.admit(Instant::now()) {
                        Some(_) if queue.len() >= MAX_QUEUE => {
                            counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                            spare.push(buf);
                        }
                        Some(at) => queue.push_back((at, buf)),
                        None => {
                            counters.dropped_loss.fetch_add(1, Ordering::Relaxed);
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
        }
    }

    #[test]
    fn fixed_delay_is_exact() {
        let mut s = Schedule::new(imp(10, 0, 0.0), 1);
        let t = Instant::now();
        assert_eq!(s.admit(t), Some(t + Duration::from_millis(10)));
    }

    #[test]
    fn loss_rate_matches_the_probability() {
        let mut s = Schedule::new(imp(0, 0, 0.01), 7);
        let t = Instant::now();
        let lost = (0..200_000).filter(|_| s.admit(t).is_none()).count();
        let rate = lost as f64 / 200_000.0;
        assert!((rate - 0.01).abs() < 0.001, "{rate}");
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let mut s = Schedule::new(imp(10, 3, 0.0), 3);
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..10_000u64 {
            let now = t0 + Duration::from_micros(i * 10);
            let at = s.admit(now).unwrap();
            assert!(at >= last, "reordered");
            assert!(at <= now + Duration::from_millis(13) + Duration::from_micros(10));
            last = at;
        }
    }
}
