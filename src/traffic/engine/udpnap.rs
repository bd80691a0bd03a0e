//! When a UDP receiver sleeps between drains instead of waiting in `recv` to be woken.
//!
//! # What was measured (loopback, one unlimited stream `-u -b 0`, 2-vCPU AMD EPYC VM, Linux
//! 6.18.44, 2026-11-28)
//! A receiver blocked in `recv` is woken by every batch that arrives, and the wake-up runs on
//! the sender's core: `perf record -g` of the sending process put 12% of its samples under
//! `sock_def_readable` (waking the reader: an interprocessor interrupt, which traps in a VM).
//! A receiver that reads without blocking until the socket is empty and then sleeps is not
//! waiting on the socket, so arrivals wake no one; the same `perf` run showed no wake-ups.
//! 8 interleaved rounds of 4 s, medians: blocking 47.8 Gbit/s and 0.229 CPU-s/GB (both ends);
//! napping 50 us 57.8 and 0.204; napping 100 us 59.9 and 0.190.
//!
//! # The rule
//! Over each `WINDOW` the receiver measures the rate it read. It naps when a nap lets at least
//! one full batch (`BATCH_BYTES`, what one GRO read or one segmented send carries) arrive, so
//! it wakes no more often than arrivals would wake it: from about 5 Gbit/s with `MAX`. A nap is
//! no longer than `MAX`, nor than the time to fill `1 / BUFFER_SHARE` of the receive buffer at
//! that rate, so a nap overslept several times over on a loaded machine does not overflow the
//! buffer (a small buffer never naps: the rule's nap is then too short for a batch). Below
//! that rate the receiver blocks as before: a paced test's reads, and the timing histograms
//! taken from them, are those of a receiver woken by each arrival. A napping receiver's arrival
//! gaps and delays are its reads', to the nap's resolution; the result says it napped.

use std::time::Duration;

/// The longest nap.
pub const MAX: Duration = Duration::from_micros(100);
/// How often the rate is measured and the choice made again.
pub const WINDOW: Duration = Duration::from_millis(10);
/// What must arrive during a nap for it to save a wake-up: one 64 KiB batch.
pub const BATCH_BYTES: u64 = 64 << 10;
/// A nap fills at most this share of the receive buffer (its reciprocal).
pub const BUFFER_SHARE: u64 = 8;

/// The nap for a stream read at `bytes_per_sec` into a receive buffer of `rcvbuf` bytes, or
/// `None` to block in `recv`.
pub fn rule(bytes_per_sec: f64, rcvbuf: u64) -> Option<Duration> {
    if bytes_per_sec <= 0.0 || !bytes_per_sec.is_finite() {
        return None;
    }
    let fill = Duration::from_secs_f64((rcvbuf / BUFFER_SHARE) as f64 / bytes_per_sec);
    let nap = fill.min(MAX);
    (bytes_per_sec * nap.as_secs_f64() >= BATCH_BYTES as f64).then_some(nap)
}

/// One receiver's choice, made again every `WINDOW` from what it read.
#[derive(Debug, Clone)]
pub struct ReadNap {
    rcvbuf: u64,
    window_start: Duration,
    bytes: u64,
    nap: Option<Duration>,
    longest: Option<Duration>,
}

impl ReadNap {
    /// A receiver with a buffer of `rcvbuf` bytes, starting at `now` (blocking).
    pub fn new(rcvbuf: u64, now: Duration) -> ReadNap {
        ReadNap {
            rcvbuf,
            window_start: now,
            bytes: 0,
            nap: None,
            longest: None,
        }
    }

    /// `bytes` were read.
    pub fn read(&mut self, bytes: usize) {
        self.bytes = self.bytes.saturating_add(bytes as u64);
    }

    /// At `now`: chooses again when a window has passed. True when the receiver changed between
    /// napping and blocking.
    pub fn update(&mut self, now: Duration) -> bool {
        let spent = now.saturating_sub(self.window_start);
        if spent < WINDOW {
            return false;
        }
        let was = self.nap.is_some();
        self.nap = rule(self.bytes as f64 / spent.as_secs_f64(), self.rcvbuf);
        self.longest = self.longest.max(self.nap);
        (self.window_start, self.bytes) = (now, 0);
        was != self.nap.is_some()
    }

    /// How long to sleep once the socket is empty; `None`: block in `recv`.
    pub fn nap(&self) -> Option<Duration> {
        self.nap
    }

    /// The longest nap taken so far, if any.
    pub fn longest(&self) -> Option<Duration> {
        self.longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBIT: f64 = 1e9 / 8.0;

    #[test]
    fn fast_streams_nap_slow_ones_and_small_buffers_block() {
        // 60 Gbit/s into 64 MiB: the longest nap (750 KB arrive in it).
        assert_eq!(rule(60.0 * GBIT, 64 << 20), Some(MAX));
        // 5.3 Gbit/s: 66 KB arrive in 100 us, just over a batch; 5 Gbit/s: under.
        assert_eq!(rule(5.3 * GBIT, 64 << 20), Some(MAX));
        assert_eq!(rule(5.0 * GBIT, 64 << 20), None);
        // Paced at 1 Gbit/s, or nothing read: blocks.
        assert_eq!(rule(GBIT, 64 << 20), None);
        assert_eq!(rule(0.0, 64 << 20), None);
        assert_eq!(rule(f64::NAN, 64 << 20), None);
        // 4 MiB at 60 Gbit/s: an eighth of it fills in 70 us, which is the nap.
        let nap = rule(60.0 * GBIT, 4 << 20).unwrap();
        assert!(nap < MAX && nap > Duration::from_micros(69), "{nap:?}");
        // The kernel's default 208 KiB: an eighth is 26 KB, under a batch at any rate.
        assert_eq!(rule(100.0 * GBIT, 212_992), None);
    }

    #[test]
    fn the_choice_follows_the_rate_read_in_each_window() {
        let ms = Duration::from_millis;
        let mut n = ReadNap::new(64 << 20, ms(0));
        // 75 MB in 10 ms is 60 Gbit/s: nap, and say the choice changed.
        n.read(75_000_000);
        assert!(!n.update(ms(9)));
        assert_eq!(n.nap(), None);
        assert!(n.update(ms(10)));
        assert_eq!(n.nap(), Some(MAX));
        // The next window the same: no change.
        n.read(75_000_000);
        assert!(!n.update(ms(20)));
        // The sender stops: one window later the receiver blocks again.
        assert!(n.update(ms(30)));
        assert_eq!(n.nap(), None);
        assert_eq!(n.longest(), Some(MAX));
    }
}
