//! When data last arrived on any receiving stream of one end (`Arrivals`), so the owner of a
//! test can end it once nothing has come for its receive timeout (iperf3's `--rcv-timeout`,
//! "idle timeout for receiving data"). Receivers note every read that brought bytes; the
//! owner asks how long the end has been idle.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The latest arrival on any receiving stream of one end, as time since the receivers'
/// start (`origin`, the grid's time zero of the receiving streams).
#[derive(Debug)]
pub struct Arrivals {
    origin: Instant,
    /// Nanoseconds after `origin` of the latest read that brought bytes; 0 before any.
    last_ns: AtomicU64,
}

impl Arrivals {
    /// No arrival yet: idle time counts from `origin`.
    pub fn new(origin: Instant) -> Arrivals {
        Arrivals {
            origin,
            last_ns: AtomicU64::new(0),
        }
    }

    /// Bytes arrived at `at` after `origin` (a receiver's `ctx.elapsed()`).
    pub fn note(&self, at: Duration) {
        let ns = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        self.last_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// How long nothing has arrived, as of `now`: since the latest arrival, or since `origin`.
    pub fn idle_at(&self, now: Instant) -> Duration {
        let last = Duration::from_nanos(self.last_ns.load(Ordering::Relaxed));
        now.saturating_duration_since(self.origin)
            .saturating_sub(last)
    }

    /// How long nothing has arrived until now.
    pub fn idle(&self) -> Duration {
        self.idle_at(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_counts_from_the_start_then_from_the_latest_arrival() {
        let t0 = Instant::now();
        let a = Arrivals::new(t0);
        let s = Duration::from_secs;
        assert_eq!(a.idle_at(t0 + s(3)), s(3));
        a.note(s(2));
        assert_eq!(a.idle_at(t0 + s(3)), s(1));
        // A slower stream's earlier read does not move the latest arrival back.
        a.note(s(1));
        assert_eq!(a.idle_at(t0 + s(5)), s(3));
        // Before the origin (a clock read just before it) is not idle at all.
        assert_eq!(Arrivals::new(t0 + s(1)).idle_at(t0), Duration::ZERO);
    }
}
