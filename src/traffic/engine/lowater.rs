//! How a TCP receiver batches its reads: the socket's low-water mark (`SO_RCVLOWAT`).
//!
//! # What was measured (loopback, one stream, 2-core VM, kernel 6.18, 2026-11-23)
//! A reader that sleeps in `read` is woken by every segment that arrives, and on loopback a
//! segment is at most 64 KiB: at 40 Gbit/s that is some 80,000 wake-ups a second, each taking
//! the core the sender needs. With the low-water mark at 1 MiB the bare pair of
//! `examples/ceiling.rs` (write 4 MiB, `--rcvlowat 1M`) carried 60-66 Gbit/s against 40-44
//! without it, in the same interleaved rounds; 256 KiB gave 49-51, and 2-4 MiB no more than
//! 1 MiB. Neither the read size (see `sendpath`) nor skipping the copy came close: the wake-ups,
//! not the copies, were what the two cores were short of.
//!
//! # The rule
//! A fixed mark would be wrong on a slow path: at 10 Mbit/s, 1 MiB takes most of a second to
//! arrive, and a read that waits for it reports its bytes late (the read timeout, `POLL`, bounds
//! that, but intervals would jitter by it). So the mark follows the rate this stream received
//! over the last `UPDATE`: about `TARGET` worth of data per read, never above `MAX`, the read
//! size, or a quarter of the socket's receive buffer. The last bound keeps the kernel from
//! growing the buffer and clamping the window to the mark when it is set (Linux does both when
//! the mark needs more buffer than there is), so the mark never changes the window a path
//! gets; a window fixed with `-w` bounds the mark, not the other way round. A stream starts at
//! the kernel's default (1 byte) and sets a new mark only when it moves by more than a quarter.
//! Below `FLOOR_BYTES_PER_SEC` it keeps the default: a paced 100 Mbit/s stream on loopback with
//! a mark of 12-30 kB retransmitted about 4,000 segments in each quarter second (the likeliest
//! cause is the burst the pacer sends after each batched read; not traced further) against 0 to
//! 100 without; paced at 500 Mbit/s to 20 Gbit/s, a mark retransmitted no more than the default.
//!
//! Linux only: there a read whose timeout passes returns what is queued below the mark. FreeBSD's
//! `soreceive` returns `EWOULDBLOCK` instead and keeps the data until the mark is reached, which
//! would delay a slowed stream's bytes by more than the read timeout; it has not been measured
//! there, so FreeBSD receivers keep the default.

use std::time::Duration;

/// Data time per read the mark aims at.
pub const TARGET: Duration = Duration::from_millis(1);
/// The largest mark: 1 MiB carried as much as 2 and 4 MiB on loopback.
pub const MAX: usize = 1 << 20;
/// Below this rate (2 Gbit/s) a receiver keeps the kernel's default: its wake-ups cost little
/// there, and a mark made a paced 100-200 Mbit/s stream on loopback retransmit thousands of
/// segments a second (a few without it; at 500 Mbit/s and above, no more than without).
pub const FLOOR_BYTES_PER_SEC: f64 = 250e6;
/// Whether receivers set a mark on this operating system.
pub const ENABLED: bool = cfg!(target_os = "linux");
/// How often the rate behind the mark is measured.
pub const UPDATE: Duration = Duration::from_millis(50);

/// The mark for a receiver getting `bytes_per_sec` with reads of `read_bytes` and a receive
/// buffer of `rcvbuf` bytes (as `SO_RCVBUF` reports it).
pub fn mark(bytes_per_sec: f64, read_bytes: usize, rcvbuf: usize) -> usize {
    let want = if bytes_per_sec.is_finite() && bytes_per_sec >= FLOOR_BYTES_PER_SEC {
        (bytes_per_sec * TARGET.as_secs_f64()) as usize
    } else {
        1
    };
    want.min(MAX).min(read_bytes).min(rcvbuf / 4).max(1)
}

/// One receiving stream's mark over time.
#[derive(Debug, Clone)]
pub struct LowWater {
    read_bytes: usize,
    since: Duration,
    since_bytes: u64,
    current: usize,
    /// The largest mark set.
    pub largest: usize,
}

impl LowWater {
    /// A stream reading `read_bytes` at a time, at the kernel's default mark, measuring from
    /// `now`.
    pub fn new(read_bytes: usize, now: Duration) -> LowWater {
        LowWater {
            read_bytes,
            since: now,
            since_bytes: 0,
            current: 1,
            largest: 1,
        }
    }

    /// After a read, with the time and all bytes read so far: the mark to set now, if it moved
    /// by more than a quarter. `rcvbuf` is asked only when the rate is measured.
    pub fn update(
        &mut self,
        now: Duration,
        total: u64,
        rcvbuf: impl FnOnce() -> usize,
    ) -> Option<usize> {
        let span = now.saturating_sub(self.since);
        if span < UPDATE {
            return None;
        }
        let rate = total.saturating_sub(self.since_bytes) as f64 / span.as_secs_f64();
        self.since = now;
        self.since_bytes = total;
        let next = mark(rate, self.read_bytes, rcvbuf());
        let (lo, hi) = (self.current.min(next), self.current.max(next));
        if hi * 4 <= lo * 5 {
            return None;
        }
        self.current = next;
        self.largest = self.largest.max(next);
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_is_a_millisecond_of_data_within_its_bounds() {
        // 4 Gbit/s: 500 kB a millisecond.
        assert_eq!(mark(500e6, 4 << 20, 6 << 20), 500_000);
        // Below the floor (1 Gbit/s): the kernel's default.
        assert_eq!(mark(125e6, 4 << 20, 6 << 20), 1);
        // 40 Gbit/s: capped at 1 MiB.
        assert_eq!(mark(5e9, 4 << 20, 6 << 20), MAX);
        // A small read or a small (fixed, -w) buffer bound it.
        assert_eq!(mark(5e9, 64 << 10, 6 << 20), 64 << 10);
        assert_eq!(mark(5e9, 4 << 20, 128 << 10), 32 << 10);
        // Nothing received, or nonsense: the kernel's default.
        assert_eq!(mark(0.0, 4 << 20, 6 << 20), 1);
        assert_eq!(mark(f64::NAN, 4 << 20, 6 << 20), 1);
        assert_eq!(mark(5e9, 4 << 20, 0), 1);
    }

    #[test]
    fn the_mark_follows_the_rate_and_ignores_small_moves() {
        let ms = Duration::from_millis;
        let mut lw = LowWater::new(4 << 20, ms(0));
        let big = 6 << 20;
        // Too soon to measure.
        assert_eq!(lw.update(ms(10), 1_000_000, || big), None);
        // 50 ms at 4 Gbit/s: 500 kB.
        assert_eq!(lw.update(ms(50), 25_000_000, || big), Some(500_000));
        // 10% faster: not worth a system call.
        assert_eq!(lw.update(ms(100), 52_500_000, || big), None);
        // Half as fast: follows.
        assert_eq!(lw.update(ms(150), 66_250_000, || big), Some(275_000));
        // Under the floor: back to the kernel's default.
        assert_eq!(lw.update(ms(200), 67_250_000, || big), Some(1));
        assert_eq!(lw.largest, 500_000);
        // The buffer is asked only when the rate is measured.
        assert_eq!(lw.update(ms(210), 70_000_000, || panic!("asked")), None);
    }
}
