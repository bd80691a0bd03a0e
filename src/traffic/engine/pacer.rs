//! Pacing arithmetic: how many bytes a sender may have sent by a given moment at a target rate.
//! Pure calculation; the UDP and rate-limited TCP senders sleep until `next_time` between sends,
//! so traffic leaves in bursts of one batch (tens of microseconds), never in 100 ms lumps.
//!
//! A token bucket that catches up: a sender that was descheduled (a busy core) or held back
//! keeps the time it lost, up to `CATCH_UP` of traffic, and makes it up in bursts of at most
//! 10 ms of traffic each, so its average holds the asked rate as iperf3's senders do (they
//! send whenever their average since the start is below the rate). Only debt older than
//! `CATCH_UP` is forgotten.

use std::time::Duration;

/// The most lost sending time a paced sender makes up.
pub const CATCH_UP: Duration = Duration::from_secs(1);
/// The most traffic one allowance releases, in time at the rate.
pub const MAX_BURST: Duration = Duration::from_millis(10);
/// A paced TCP sender writes about this much time of its traffic at once (`write_unit`).
pub const WRITE_UNIT_TIME: Duration = Duration::from_millis(1);
/// ...but never less than this many bytes: a full Ethernet segment's payload, so a slow paced
/// stream still sends whole segments.
pub const WRITE_UNIT_MIN: usize = 1448;

/// How many bytes a paced TCP sender (not one writing iperf3's whole blocks) waits for before it
/// writes: `WRITE_UNIT_TIME` of traffic at the rate, at least `WRITE_UNIT_MIN`, at most its write
/// size `chunk`. About a thousand writes a second at any rate.
///
/// A sender that wrote whatever had accrued since its last write never slept: each write took
/// longer than one byte's time, so the next found a few bytes due. Measured (2026-11-30,
/// loopback, 2-vCPU AMD EPYC VM, `netsweep client 127.0.0.1 -t 2 -b 10M`): 603,445 sendfile
/// calls of 4 bytes on average, the receiver woken 184,703 times, 36-75% of a core at the
/// sender for 10 Mbit/s, and retransmissions on loopback (tiny segments fill a receive buffer
/// accounted by their overhead, not their payload).
pub fn write_unit(bytes_per_sec: f64, chunk: usize) -> usize {
    let chunk = chunk.max(1);
    let unit = bytes_per_sec * WRITE_UNIT_TIME.as_secs_f64();
    // `as` saturates a huge or infinite product at usize::MAX, and NaN at 0.
    (unit as usize).max(WRITE_UNIT_MIN).min(chunk)
}

/// A byte budget growing at `rate` from `origin`.
#[derive(Debug, Clone)]
pub struct Pacer {
    bytes_per_sec: f64,
    origin: Duration,
    sent: u64,
    /// Most one allowance releases (a descheduled sender must not release its debt as one
    /// burst).
    max_burst_bytes: f64,
    /// Most the sender may fall behind before the schedule is moved (`CATCH_UP` of traffic).
    max_debt_bytes: f64,
}

impl Pacer {
    /// `rate_bps` in bits per second (must be > 0); `batch` is the largest single send in bytes.
    pub fn new(rate_bps: f64, origin: Duration, batch: usize) -> Pacer {
        let bytes_per_sec = rate_bps / 8.0;
        let max_burst_bytes = (bytes_per_sec * MAX_BURST.as_secs_f64()).max(2.0 * batch as f64);
        let max_debt_bytes = (bytes_per_sec * CATCH_UP.as_secs_f64()).max(max_burst_bytes);
        Pacer {
            bytes_per_sec,
            origin,
            sent: 0,
            max_burst_bytes,
            max_debt_bytes,
        }
    }

    /// Bytes that may be sent at `now` (time since the test start): what is due, at most one
    /// burst; the rest of a debt stays due for the next calls.
    pub fn allowance(&mut self, now: Duration) -> u64 {
        let elapsed = now.saturating_sub(self.origin).as_secs_f64();
        let due = elapsed * self.bytes_per_sec - self.sent as f64;
        if due > self.max_debt_bytes {
            // Too far behind: forget the excess instead of sending it.
            let excess = due - self.max_debt_bytes;
            self.origin = self
                .origin
                .saturating_add(seconds(excess / self.bytes_per_sec));
        }
        let due = due.min(self.max_debt_bytes).min(self.max_burst_bytes);
        if due > 0.0 { due as u64 } else { 0 }
    }

    /// When `bytes` more will be allowed.
    pub fn next_time(&self, bytes: u64) -> Duration {
        let due = self.sent.saturating_add(bytes) as f64 / self.bytes_per_sec;
        self.origin.saturating_add(seconds(due))
    }

    /// `write_unit` at this pacer's rate.
    pub fn write_unit(&self, chunk: usize) -> usize {
        write_unit(self.bytes_per_sec, chunk)
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
    fn a_paced_tcp_write_is_a_millisecond_of_traffic_within_a_segment_and_the_write_size() {
        // 10 Mbit/s: 1,250 bytes a millisecond, under a segment.
        assert_eq!(write_unit(1.25e6, 128 << 10), WRITE_UNIT_MIN);
        // 1 Gbit/s: 125 kB a millisecond.
        assert_eq!(write_unit(125e6, 1 << 20), 125_000);
        // 10 Gbit/s: bounded by the write size.
        assert_eq!(write_unit(1.25e9, 128 << 10), 128 << 10);
        // A write size under a segment bounds it too; absurd rates do not panic.
        assert_eq!(write_unit(1.25e6, 100), 100);
        assert_eq!(write_unit(f64::INFINITY, 4096), 4096);
        assert_eq!(write_unit(f64::NAN, 4096), WRITE_UNIT_MIN);
        assert_eq!(write_unit(1e9, 0), 1);
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
    fn a_stall_is_made_up_in_bursts_of_10_ms_at_most() {
        // 8 Mbit/s = 1 MB/s: 10 ms is 10,000 bytes, a 50 ms stall 50,000.
        let mut p = Pacer::new(8e6, Duration::ZERO, 1000);
        let now = Duration::from_millis(50);
        let mut released = 0;
        for _ in 0..10 {
            let a = p.allowance(now);
            assert!(a <= 10_000, "{a}");
            p.record(a);
            released += a;
        }
        assert_eq!(released, 50_000);
        assert_eq!(p.allowance(now), 0);
    }

    #[test]
    fn stalls_longer_than_the_catch_up_window_are_forgotten_beyond_it() {
        let mut p = Pacer::new(8e6, Duration::ZERO, 1000);
        let now = Duration::from_secs(5);
        let mut released = 0;
        for _ in 0..1000 {
            let a = p.allowance(now);
            p.record(a);
            released += a;
        }
        // One second of traffic made up, not five (less a byte of rounding).
        assert!((999_999..=1_000_000).contains(&released), "{released}");
        assert_eq!(p.allowance(now), 0);
        assert!((999..=1000).contains(&p.allowance(Duration::from_millis(5001))));
    }

    /// Regression: a paced sender lost every stall beyond 10 ms, so on a busy core
    /// `-R -b 500M` from a netsweep server delivered 372-500 Mbit/s where iperf3 held 500.
    #[test]
    fn paced_rate_holds_when_the_sender_is_descheduled() {
        let rate = 500e6;
        let mut p = Pacer::new(rate, Duration::ZERO, 64 * 1024);
        let mut now = Duration::ZERO;
        let mut sent = 0u64;
        let mut sends = 0u64;
        let mut last_send = Duration::ZERO;
        while now < Duration::from_secs(2) {
            let a = p.allowance(now).min(64 * 1024);
            p.record(a);
            sent += a;
            sends += 1;
            last_send = now;
            // The sender wakes when the next chunk is due, but every 50th wake-up the core
            // is busy elsewhere for 30 ms.
            let wake = p.next_time(64 * 1024).max(now + Duration::from_micros(20));
            now = if sends.is_multiple_of(50) {
                wake + Duration::from_millis(30)
            } else {
                wake
            };
        }
        // Over the time up to the last send (the loop may end inside a stall).
        let got = sent as f64 * 8.0 / last_send.as_secs_f64();
        assert!((got - rate).abs() / rate < 0.01, "{got} of {rate}");
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
