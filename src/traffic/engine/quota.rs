//! A test that ends at a byte or block count (iperf3's `-n`/`-k`): the bytes one direction
//! moves after the warm-up, shared by the streams of that direction on one end. Senders claim
//! what they write before writing it, so together they send the count and no more (UDP in
//! whole datagrams, at most one datagram's bytes past it); receivers add what they read. The
//! first stream to bring the total to the count notes when, on its end's grid.
//!
//! An iperf3 client that receives a UDP count (`-u -n/-k -R`) ends the test only once it has
//! *received* the count, so a lost datagram would leave it waiting until its receive timeout.
//! A sender serving such a client therefore tops up (`TopUp`): once its count is sent and the
//! test still runs after `TOP_UP_GRACE`, it sends one more datagram every `TOP_UP_MIN_GAP` (or
//! at 1% of the asked rate, whichever is slower), never more than the count again.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug)]
pub struct Quota {
    target: u64,
    /// Bytes senders may write: handed out by `claim`, handed back by `unclaim`.
    claimed: AtomicU64,
    /// Bytes written or read.
    moved: AtomicU64,
    reached: OnceLock<Duration>,
    /// Bytes sent past the count by topping-up senders (`claim_extra`).
    extra: AtomicU64,
}

/// How long a UDP sender that has sent its count waits for the peer to end the test before
/// topping up: without loss an iperf3 client says TEST_END well within it.
pub const TOP_UP_GRACE: Duration = Duration::from_millis(250);
/// Least time between two top-up datagrams of a stream.
pub const TOP_UP_MIN_GAP: Duration = Duration::from_millis(10);

impl Quota {
    /// A quota of `target` bytes (at least 1).
    pub fn new(target: u64) -> Quota {
        Quota {
            target: target.max(1),
            claimed: AtomicU64::new(0),
            moved: AtomicU64::new(0),
            reached: OnceLock::new(),
            extra: AtomicU64::new(0),
        }
    }

    /// A top-up datagram of `unit` bytes past the count: granted while the top-ups of this
    /// direction's streams together stay within the count again.
    pub fn claim_extra(&self, unit: u64) -> bool {
        let limit = self.target.max(unit);
        self.extra
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| {
                (e + unit <= limit).then_some(e + unit)
            })
            .is_ok()
    }

    /// A sender's claim of up to `want` bytes in units of `unit` bytes (1 for TCP, the datagram
    /// for UDP): the bytes it may send now, a multiple of `unit` for UDP and exact for TCP
    /// (the last claim of a count that is not a multiple of the unit is rounded up to a whole
    /// unit); 0 once the count is handed out.
    pub fn claim(&self, want: u64, unit: u64) -> u64 {
        let unit = unit.max(1);
        let mut granted = 0;
        let _ = self
            .claimed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |claimed| {
                let left = self.target.saturating_sub(claimed);
                granted = if unit == 1 {
                    want.min(left)
                } else {
                    (want / unit).min(left.div_ceil(unit)) * unit
                };
                (granted > 0).then_some(claimed + granted)
            });
        granted
    }

    /// Hands back claimed bytes that were not sent (a write that timed out or was cut short).
    pub fn unclaim(&self, bytes: u64) {
        let _ = self
            .claimed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some(c.saturating_sub(bytes))
            });
    }

    /// Adds bytes written or read at `at` (time on this end's grid); the stream that brings
    /// the total to the count records when.
    pub fn count(&self, bytes: u64, at: Duration) {
        let before = self.moved.fetch_add(bytes, Ordering::AcqRel);
        if before < self.target && before.saturating_add(bytes) >= self.target {
            let _ = self.reached.set(at);
        }
    }

    /// Bytes written or read so far.
    pub fn moved(&self) -> u64 {
        self.moved.load(Ordering::Acquire)
    }

    /// When the count was reached, on this end's grid.
    pub fn reached(&self) -> Option<Duration> {
        self.reached.get().copied()
    }

    /// Every byte of the count is claimed: a sender has nothing left to send.
    pub fn spent(&self) -> bool {
        self.claimed.load(Ordering::Acquire) >= self.target
    }
}

/// When a UDP sender that has sent its count sends its top-up datagrams: the first
/// `TOP_UP_GRACE` after the count was handed out, then one every gap.
#[derive(Debug)]
pub struct TopUp {
    next: Duration,
    gap: Duration,
}

impl TopUp {
    /// The schedule of a sender that handed out its count at `spent_at` (its elapsed time),
    /// sending datagrams of `len` bytes at `bits_per_second` (`None`: unlimited).
    pub fn new(spent_at: Duration, bits_per_second: Option<f64>, len: usize) -> TopUp {
        let slow = bits_per_second
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| Duration::from_secs_f64((len as f64 * 8.0 / (r * 0.01)).min(1.0)))
            .unwrap_or_default();
        TopUp {
            next: spent_at + TOP_UP_GRACE,
            gap: slow.max(TOP_UP_MIN_GAP),
        }
    }

    /// `None` when a datagram is due at `now` (and the next one is scheduled), or how long
    /// to wait for it.
    pub fn due(&mut self, now: Duration) -> Option<Duration> {
        if now < self.next {
            return Some(self.next - now);
        }
        // A sender that overslept does not catch up in a burst.
        self.next = (self.next + self.gap).max(now);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_claims_add_up_to_the_count_exactly() {
        let q = Quota::new(1000);
        assert_eq!(q.claim(400, 1), 400);
        assert_eq!(q.claim(400, 1), 400);
        assert_eq!(q.claim(400, 1), 200);
        assert_eq!(q.claim(400, 1), 0);
        assert!(q.spent());
        // A write that sent only part of its claim hands the rest back for another.
        q.unclaim(50);
        assert!(!q.spent());
        assert_eq!(q.claim(400, 1), 50);
    }

    #[test]
    fn udp_claims_whole_datagrams_and_the_last_one_rounds_up() {
        let q = Quota::new(3500);
        // Datagrams of 1000 bytes: three whole ones, then one for the last 500 bytes.
        assert_eq!(q.claim(2000, 1000), 2000);
        assert_eq!(q.claim(5000, 1000), 2000);
        assert_eq!(q.claim(5000, 1000), 0);
        // A batch smaller than one datagram claims nothing.
        assert_eq!(Quota::new(3500).claim(999, 1000), 0);
    }

    #[test]
    fn the_stream_that_completes_the_count_records_when_and_later_ones_do_not() {
        let q = Quota::new(100);
        let ms = Duration::from_millis;
        q.count(60, ms(10));
        assert_eq!(q.reached(), None);
        q.count(60, ms(20));
        q.count(60, ms(30));
        assert_eq!(q.reached(), Some(ms(20)));
        assert_eq!(q.moved(), 180);
    }

    #[test]
    fn top_ups_wait_the_grace_then_trickle_and_stay_within_the_count_again() {
        let ms = Duration::from_millis;
        // 100 Mbit/s of 1 KiB datagrams: 1% of the rate is one per 8.2 ms, so the 10 ms floor.
        let mut t = TopUp::new(ms(1000), Some(100e6), 1024);
        assert_eq!(t.due(ms(1100)), Some(ms(150)));
        assert_eq!(t.due(ms(1250)), None);
        assert_eq!(t.due(ms(1255)), Some(ms(5)));
        assert_eq!(t.due(ms(1260)), None);
        // 1 Mbit/s: 1% is 10 kbit/s, one 1 KiB datagram per 819 ms.
        let mut slow = TopUp::new(ms(0), Some(1e6), 1024);
        assert_eq!(slow.due(ms(250)), None);
        assert!(slow.due(ms(1000)).is_some());
        let q = Quota::new(3000);
        assert!(q.claim_extra(1000));
        assert!(q.claim_extra(1000));
        assert!(q.claim_extra(1000));
        assert!(!q.claim_extra(1000));
    }

    #[test]
    fn concurrent_senders_never_claim_past_the_count() {
        let q = std::sync::Arc::new(Quota::new(1_000_003));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || {
                    let mut mine = 0;
                    loop {
                        let n = q.claim(4096, 1);
                        if n == 0 {
                            return mine;
                        }
                        mine += n;
                        q.count(n, Duration::ZERO);
                    }
                })
            })
            .collect();
        let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 1_000_003);
        assert_eq!(q.moved(), 1_000_003);
        assert!(q.reached().is_some());
    }
}
