//! A test that ends at a byte or block count (iperf3's `-n`/`-k`): the bytes one direction
//! moves after the warm-up, shared by the streams of that direction on one end. Senders claim
//! what they write before writing it, so together they send the count and no more (UDP in
//! whole datagrams, at most one datagram's bytes past it); receivers add what they read. The
//! first stream to bring the total to the count notes when, on its end's grid.

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
}

impl Quota {
    /// A quota of `target` bytes (at least 1).
    pub fn new(target: u64) -> Quota {
        Quota {
            target: target.max(1),
            claimed: AtomicU64::new(0),
            moved: AtomicU64::new(0),
            reached: OnceLock::new(),
        }
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
