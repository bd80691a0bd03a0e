//! Pacing arithmetic: how many bytes a sender may have sent by a given moment at a target rate.
//! Pure calculation; the UDP and rate-limited TCP senders sleep until `next_time` between sends,
//! so traffic leaves in bursts of one batch (tens of microseconds), never in 100 ms lumps.

use std::time::Duration;

/// A byte budget growing at `rate` from `origin`.
#[derive(Debug, Clone)]
pub struct Pacer {
    bytes_per_sec: f64,
    origin: Duration,
    sent: u64,
    /// Most the sender may fall behind before the schedule is moved (a descheduled sender must
    /// not release seconds of debt as one burst).
    max_debt_bytes: f64,
}

impl Pacer {
    /// `rate_bps` in bits per second (must be > 0); `batch` is the largest single send in bytes.
    pub fn new(rate_bps: f64, origin: Duration, batch: usize) -> Pacer {
        let bytes_per_sec = rate_bps / 8.0;
        // Allow catching up 10 ms of traffic, but at least two batches.
        let max_debt_bytes = (bytes_per_sec * 0.010).max(2.0 * batch as f64);
        Pacer {
            bytes_per_sec,
            origin,
            sent: 0,
            max_debt_bytes,
        }
    }

    /// Bytes that may be sent at `now` (time since the test start).
    pub fn allowance(&mut self, now: Duration) -> u64 {
        let elapsed = now.saturating_sub(self.origin).as_secs_f64();
        let due = elapsed * self.bytes_per_sec - self.sent as f64;
        if due > self.max_debt_bytes {
            // Too far behind: forget the excess instead of bursting it out.
            let excess = due - self.max_debt_bytes;
            self.origin = self
                .origin
                .saturating_add(seconds(excess / self.bytes_per_sec));
            return self.max_debt_bytes as u64;
        }
        if due > 0.0 { due as u64 } else { 0 }
    }

    /// When `bytes` more will be allowed.
    pub fn next_time(&self, bytes: u64) -> Duration {
        let due = self.sent.saturating_add(bytes) as f64 / self.bytes_per_sec;
        self.origin.saturating_add(seconds(due))
    }

    pub fn record(&mut self, bytes: u64) {
        self.sent += bytes;
    }
}

/// Seconds as a `Duration`, saturating: a rate of 1e-14 bit/s puts the next send beyond any
/// `Duration` (`from_secs_f64` panicked there, killing the sending thread).
fn seconds(x: f64) -> Duration {
    Duration::try_from_secs_f64(x).unwrap_or(if x > 0.0 {
        Duration::MAX
    } else {
        Duration::ZERO
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `-b 0.00000000000001` panicked a sending thread.
    #[test]
    fn absurdly_low_rates_do_not_panic() {
        for rate in [1e-14, 5e-324, 1e-300] {
            let mut p = Pacer::new(rate, Duration::ZERO, 1400);
            assert_eq!(p.allowance(Duration::from_secs(10)), 0);
            assert!(p.next_time(1400) > Duration::from_secs(1 << 40));
            p.record(u64::MAX);
            assert_eq!(p.next_time(u64::MAX), Duration::MAX);
        }
    }

    #[test]
    fn allowance_grows_at_the_rate() {
        // 8 Mbit/s = 1 MB/s.
        let mut p = Pacer::new(8e6, Duration::ZERO, 1000);
        assert_eq!(p.allowance(Duration::from_millis(1)), 1000);
        p.record(1000);
        assert_eq!(p.allowance(Duration::from_millis(1)), 0);
        assert_eq!(p.next_time(1000), Duration::from_millis(2));
    }

    #[test]
    fn long_stalls_do_not_become_bursts() {
        let mut p = Pacer::new(8e6, Duration::ZERO, 1000);
        // 10 ms of debt at 1 MB/s is 10,000 bytes.
        assert_eq!(p.allowance(Duration::from_secs(5)), 10_000);
        p.record(10_000);
        assert_eq!(p.allowance(Duration::from_secs(5)), 0);
        assert_eq!(p.allowance(Duration::from_millis(5001)), 1000);
    }

    #[test]
    fn average_rate_is_exact_over_a_paced_run() {
        let mut p = Pacer::new(1e9, Duration::ZERO, 1400);
        let mut now = Duration::ZERO;
        let mut sent = 0u64;
        while now < Duration::from_secs(1) {
            let a = p.allowance(now) / 1400 * 1400;
            p.record(a);
            sent += a;
            now = p.next_time(1400).max(now + Duration::from_micros(50));
        }
        let rate = sent as f64 * 8.0;
        assert!((rate - 1e9).abs() / 1e9 < 0.001, "rate {rate}");
    }
}
