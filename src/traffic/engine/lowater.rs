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
//! # Whether to keep a mark at all: the probe
//! The mark is not good for every receiver on every machine. Measured on a 2-vCPU Intel Xeon VM
//! (kernel 6.18, 2026-11-28, `examples/ceiling.rs --paths write --chunks 4M`, 3 s runs,
//! Gbit/s, no mark against 1 MiB): one stream dropping the data (`--discard`) 43-44 against 53;
//! two streams dropping it 140-150 against 104-115 (and 60-75 with 128-256 KiB marks); eight
//! streams dropping it 119-120 against 97-101; eight copying streams 50-52 against 60-64; two
//! copying streams 63-78 against 65-69. On the AMD EPYC VMs of earlier sessions the mark helped
//! two dropping streams as well. The sign flips with the machine, the stream count and the
//! receive mode, so no rule written here could be right everywhere: the receivers of a test
//! measure. Once, `probe_start` into the test, all receivers of the test on one end
//! (`MarkProbe`, shared) take `PROBE_TURNS` turns of `PROBE_TURN` together, in a mirrored order,
//! with the rule's mark and without one (`ReceiverMark`: the setting is made before each read);
//! each counts the reads that began and ended in one turn and ended in its last two thirds into
//! the shared sums, and `PROBE_DECIDES_AFTER` the last turn the first receiver to ask decides
//! for all: without a mark only when that carried more than `PROBE_MARGIN` more, and nothing
//! when no counted turn had a mark above the default to test (a slow stream). Paced tests and
//! paths slower than `PROBE_MAX_RTT` get no probe. Turning together measures what the machine
//! does when all of them batch against when none does, which is what the choice is. The turns
//! are in the results (they are part of what the test carried); the probe's cost is at most
//! half of its 0.4 s at the worse setting. It runs between the sender's calibration and its
//! first re-check (`sendpath`), so the two measurements do not overlap.
//!
//! Linux only: there a read whose timeout passes returns what is queued below the mark. FreeBSD's
//! `soreceive` returns `EWOULDBLOCK` instead and keeps the data until the mark is reached, which
//! would delay a slowed stream's bytes by more than the read timeout; it has not been measured
//! there, so FreeBSD receivers keep the default.

use crate::traffic::measure::LowWaterProbe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

/// One turn of the probe.
pub const PROBE_TURN: Duration = Duration::from_millis(50);
/// The probe's turns, by whether the mark is set: mirrored, so a drift over the probe favours
/// neither.
pub const PROBE_TURNS: [bool; 8] = [true, false, false, true, true, false, false, true];
/// How much more the receivers must carry without a mark for the probe to drop it.
pub const PROBE_MARGIN: f64 = 0.05;
/// How long after its last turn the probe decides: every receiver's count of that turn is in
/// by then (a receiver counts right after its read returns; this is more than the read timeout,
/// `POLL`). Until then the receivers keep the rule's mark.
pub const PROBE_DECIDES_AFTER: Duration = Duration::from_millis(50);
/// Paths slower to answer than this (the data sockets' round trip at the start) get no probe:
/// 50 ms turns measure nothing there but slow start and the ACK clock, and the mark's wake-ups
/// matter only where the CPU, not the path, is the limit.
pub const PROBE_MAX_RTT: Duration = Duration::from_millis(5);
/// When the probe starts: 50 ms after the sender's calibration, so that it ends (0.45 s after
/// the calibration) before the sender's first re-check (0.7 s after it: see `sendpath`);
/// without a calibration, after the first 0.3 s. Every moment before the probe runs at the
/// rule's mark, which may be the worse setting (two dropping streams above: 0.72x), so it
/// comes as early as the sender's turns allow.
pub fn probe_start(calibration: Duration) -> Duration {
    if calibration.is_zero() {
        Duration::from_millis(300)
    } else {
        calibration + Duration::from_millis(50)
    }
}

/// The probe of one test's receivers on one end: where it starts, what each setting carried,
/// whether a mark above the kernel's default was in force in a counted turn at all, and the
/// choice once made.
#[derive(Debug)]
pub struct MarkProbe {
    start: Duration,
    bytes: [AtomicU64; PROBE_TURNS.len()],
    tested: AtomicBool,
    choice: std::sync::OnceLock<Option<LowWaterProbe>>,
}

/// Where a receiver stands in the probe at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeStep {
    /// Before the probe: the rule's mark.
    Before,
    /// In turn `turn`, with the mark or without; `counts` once the turn has settled.
    Turn {
        turn: usize,
        marked: bool,
        counts: bool,
    },
    /// After its last turn, until it decides (`PROBE_DECIDES_AFTER`): the rule's mark.
    Deciding,
    /// After it.
    After,
}

impl MarkProbe {
    /// A probe starting at `start` on the receivers' clock.
    pub fn new(start: Duration) -> MarkProbe {
        MarkProbe {
            start,
            bytes: Default::default(),
            tested: AtomicBool::new(false),
            choice: std::sync::OnceLock::new(),
        }
    }

    /// When the probe ends.
    pub fn end(&self) -> Duration {
        self.start + PROBE_TURN * PROBE_TURNS.len() as u32
    }

    /// Where the probe stands at `now`.
    pub fn step(&self, now: Duration) -> ProbeStep {
        if now < self.start {
            return ProbeStep::Before;
        }
        let into = now - self.start;
        let turn = (into.as_nanos() / PROBE_TURN.as_nanos()) as usize;
        match PROBE_TURNS.get(turn) {
            Some(&marked) => ProbeStep::Turn {
                turn,
                marked,
                counts: into - PROBE_TURN * turn as u32 >= PROBE_TURN / 3,
            },
            None if now < self.end() + PROBE_DECIDES_AFTER => ProbeStep::Deciding,
            None => ProbeStep::After,
        }
    }

    /// Counts `bytes` read in turn `turn` with a mark of `mark` bytes in force.
    pub fn count(&self, turn: usize, bytes: u64, mark: usize) {
        if let Some(sum) = self.bytes.get(turn) {
            sum.fetch_add(bytes, Ordering::Relaxed);
            if PROBE_TURNS[turn] && mark > 1 {
                self.tested.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The choice, made by the first receiver to ask after the probe; `None` when no counted
    /// turn had a mark to test (the rule kept the kernel's default: a slow stream), and the
    /// receivers keep the rule.
    pub fn choice(&self) -> Option<LowWaterProbe> {
        *self.choice.get_or_init(|| {
            let sums: Vec<u64> = self
                .bytes
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
            self.tested.load(Ordering::Relaxed).then(|| decide(&sums))
        })
    }
}

/// One receiver's mark over a test: the rule (`LowWater`) and, when there is one, the probe it
/// shares with the test's other receivers on this end. The receive loop asks for the mark
/// before each read and reports each read after it; a read counts for a probe turn only if it
/// started and ended in that turn, with the turn's setting in force from its start.
#[derive(Debug)]
pub struct ReceiverMark {
    rule: LowWater,
    probe: Option<std::sync::Arc<MarkProbe>>,
    applied: usize,
    /// Where the probe stood when the read under way started.
    started: Option<ProbeStep>,
    /// The largest mark in force before the probe decided, and after it (or throughout, without
    /// a probe).
    largest_before: usize,
    largest_after: usize,
    choice: Option<Option<LowWaterProbe>>,
}

impl ReceiverMark {
    pub fn new(rule: LowWater, probe: Option<std::sync::Arc<MarkProbe>>) -> ReceiverMark {
        ReceiverMark {
            rule,
            probe,
            applied: 1,
            started: None,
            largest_before: 1,
            largest_after: 1,
            choice: None,
        }
    }

    /// Before a read starting at `now`: the mark to set on the socket, when it changes.
    pub fn before_read(&mut self, now: Duration) -> Option<usize> {
        let rule = self.rule.current();
        let step = self.probe.as_ref().map(|p| p.step(now));
        self.started = step;
        let want = match step {
            None => {
                self.largest_after = self.largest_after.max(rule);
                rule
            }
            Some(ProbeStep::Before | ProbeStep::Deciding) => {
                self.largest_before = self.largest_before.max(rule);
                rule
            }
            Some(ProbeStep::Turn { marked, .. }) => {
                if marked {
                    rule
                } else {
                    1
                }
            }
            Some(ProbeStep::After) => {
                let probe = &self.probe;
                let choice = *self
                    .choice
                    .get_or_insert_with(|| probe.as_ref().and_then(|p| p.choice()));
                let want = match choice {
                    Some(c) if !c.kept_mark => 1,
                    _ => rule,
                };
                self.largest_after = self.largest_after.max(want);
                want
            }
        };
        (want != self.applied).then(|| {
            self.applied = want;
            want
        })
    }

    /// After a read that returned `bytes` at `now`, `total` read so far; `rcvbuf` as in
    /// `LowWater::update`.
    pub fn after_read(
        &mut self,
        now: Duration,
        bytes: u64,
        total: u64,
        rcvbuf: impl FnOnce() -> usize,
    ) {
        self.rule.update(now, total, rcvbuf);
        if let (Some(probe), Some(ProbeStep::Turn { turn: began, .. })) =
            (&self.probe, self.started)
            && let ProbeStep::Turn {
                turn, counts: true, ..
            } = probe.step(now)
            && turn == began
        {
            probe.count(turn, bytes, self.applied);
        }
    }

    /// The largest mark in force after the probe decided (1 when it dropped the mark); without
    /// a decision (no probe, a slow stream's, or a test that ended first), the largest set. And
    /// the probe's outcome, when this receiver saw it.
    pub fn report(&self) -> (u64, Option<LowWaterProbe>) {
        match self.choice {
            Some(Some(c)) => (self.largest_after as u64, Some(c)),
            _ => (self.largest_before.max(self.largest_after) as u64, None),
        }
    }
}

/// What the probe's turns carried (`sums`, one per turn of `PROBE_TURNS`), and so whether the
/// receivers keep the mark.
pub fn decide(sums: &[u64]) -> LowWaterProbe {
    let (mut marked, mut unmarked) = (0u64, 0u64);
    for (&with, &sum) in PROBE_TURNS.iter().zip(sums) {
        if with {
            marked = marked.saturating_add(sum);
        } else {
            unmarked = unmarked.saturating_add(sum);
        }
    }
    LowWaterProbe {
        marked_bytes: marked,
        unmarked_bytes: unmarked,
        kept_mark: unmarked as f64 <= marked as f64 * (1.0 + PROBE_MARGIN),
    }
}

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
        }
    }

    /// The rule's mark now (1 before the first measurement).
    pub fn current(&self) -> usize {
        self.current
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
        // The buffer is asked only when the rate is measured.
        assert_eq!(lw.update(ms(210), 70_000_000, || panic!("asked")), None);
    }

    #[test]
    fn the_probe_takes_mirrored_turns_counting_their_settled_part() {
        let ms = Duration::from_millis;
        let p = MarkProbe::new(ms(1500));
        assert_eq!(p.step(ms(1499)), ProbeStep::Before);
        assert_eq!(
            p.step(ms(1500)),
            ProbeStep::Turn {
                turn: 0,
                marked: true,
                counts: false
            }
        );
        // A third into the turn it counts.
        assert_eq!(
            p.step(ms(1517)),
            ProbeStep::Turn {
                turn: 0,
                marked: true,
                counts: true
            }
        );
        assert_eq!(
            p.step(ms(1560)),
            ProbeStep::Turn {
                turn: 1,
                marked: false,
                counts: false
            }
        );
        assert_eq!(
            p.step(ms(1899)),
            ProbeStep::Turn {
                turn: 7,
                marked: true,
                counts: true
            }
        );
        assert_eq!(p.end(), ms(1900));
        assert_eq!(p.step(ms(1900)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(1949)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(1950)), ProbeStep::After);
        // Four turns each way.
        assert_eq!(PROBE_TURNS.iter().filter(|m| **m).count(), 4);
        assert_eq!(probe_start(Duration::ZERO), ms(300));
        assert_eq!(probe_start(ms(300)), ms(350));
    }

    #[test]
    fn a_receiver_sets_each_turns_mark_before_its_reads_and_counts_whole_reads_in_one_turn() {
        let ms = Duration::from_millis;
        let probe = std::sync::Arc::new(MarkProbe::new(ms(100)));
        let mut r = ReceiverMark::new(LowWater::new(4 << 20, ms(0)), Some(probe.clone()));
        let big = || 6 << 20;
        // 40 Gbit/s throughout: all bytes read by `t` ms; the rule's mark is 1 MiB.
        let total = |t: u64| 5_000_000 * t;
        assert_eq!(r.before_read(ms(0)), None);
        r.after_read(ms(50), 250_000_000, total(50), big);
        assert_eq!(r.before_read(ms(50)), Some(MAX));
        // Turn 0 (marked) from 100 ms, turn 1 (unmarked) from 150 ms.
        assert_eq!(r.before_read(ms(120)), None);
        r.after_read(ms(125), 1000, total(125), big);
        assert_eq!(r.before_read(ms(150)), Some(1));
        // A read that began in turn 1 and ended in turn 2 counts for neither.
        r.after_read(ms(210), 5000, total(210), big);
        assert_eq!(r.before_read(ms(210)), None);
        r.after_read(ms(220), 2000, total(220), big);
        let counted: Vec<u64> = probe
            .bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counted[..3], [1000, 0, 2000]);
        // Past the turns, until the decision: the rule's mark again.
        assert_eq!(r.before_read(ms(510)), Some(MAX));
        for (turn, m) in PROBE_TURNS.iter().enumerate() {
            probe.count(turn, if *m { 0 } else { 1_000_000 }, MAX);
        }
        // Decided: without the mark carried more, so it goes, and the report says so.
        assert_eq!(r.before_read(ms(560)), Some(1));
        assert_eq!(r.before_read(ms(600)), None);
        let (mark, outcome) = r.report();
        assert_eq!(mark, 1);
        assert!(!outcome.unwrap().kept_mark);
        // A receiver whose test ended before the decision reports the marks it set.
        let mut early = ReceiverMark::new(LowWater::new(4 << 20, ms(0)), Some(probe));
        early.after_read(ms(50), 250_000_000, total(50), big);
        early.before_read(ms(60));
        assert_eq!(early.report(), (MAX as u64, None));
    }

    #[test]
    fn the_mark_goes_only_when_going_without_it_carried_more_than_the_margin() {
        // Turns marked: 0, 3, 4, 7.
        let sums = |with: u64, without: u64| {
            PROBE_TURNS
                .iter()
                .map(|m| if *m { with } else { without })
                .collect::<Vec<u64>>()
        };
        let d = decide(&sums(100, 140));
        assert_eq!(
            (d.marked_bytes, d.unmarked_bytes, d.kept_mark),
            (400, 560, false)
        );
        assert!(decide(&sums(100, 104)).kept_mark, "within the margin");
        assert!(decide(&sums(100, 60)).kept_mark);
        assert!(decide(&[0; 8]).kept_mark, "nothing read: the rule stands");
        // Shared by the receivers: the first to ask decides for all.
        let p = MarkProbe::new(Duration::ZERO);
        for (turn, m) in PROBE_TURNS.iter().enumerate() {
            p.count(turn, if *m { 10 } else { 20 }, 1 << 20);
        }
        assert!(!p.choice().unwrap().kept_mark);
        p.count(1, 0, 1);
        p.count(0, 1000, 1 << 20);
        assert!(!p.choice().unwrap().kept_mark, "decided once");
        // No counted turn had a mark above the default: nothing was tested, the rule stands.
        let p = MarkProbe::new(Duration::ZERO);
        for (turn, m) in PROBE_TURNS.iter().enumerate() {
            p.count(turn, if *m { 10 } else { 20 }, 1);
        }
        assert_eq!(p.choice(), None);
    }
}
