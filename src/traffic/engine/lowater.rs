//! How a TCP receiver batches its reads: the socket's low-water mark (`SO_RCVLOWAT`), or
//! naps between drains of a socket that does not block.
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
//! over the last `UPDATE`: about `target` worth of data per read, never above `MAX`, the read
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
//! # Napping between drains
//! A receiver that drops the data (`--skip-rx-copy`) left its sender slower than a copying
//! one: one stream, 2-vCPU Intel Xeon VM, kernel 6.18, 2026-11-28, netsweep's default against
//! `--rx-copy`, 6 interleaved rounds of 5 s: 59.6 against 63.7 Gbit/s, the same in the steady
//! part. The sender's core did the difference: pinned apart (`-A 0,1`), its softirq share was
//! 26-34% behind the dropping receiver and 17% behind the copying one, and `/proc/net/snmp`
//! counted 9,400 ACKs a GB against 6,300. A receiver that drains its queue at once keeps it
//! under the mark, and Linux acknowledges every second segment while the queue is under the
//! mark (`__tcp_ack_snd_check`: "we want send ack now if we have not received enough bytes to
//! satisfy the condition"), and a reader blocked in `read` is woken from the sender's core.
//! A copying receiver is slower, so its queue passes the mark. A receiver that reads without
//! blocking until the socket is empty and then sleeps has neither cost: nothing waits on the
//! socket, so arriving segments wake no one, and with the mark at its default the queue is
//! never under it. Bare pair (`examples/ceiling.rs --paths write --chunks 1M --discard`, 3 s
//! runs, three rounds): `--rcvlowat 1M` 47-55 Gbit/s; napping (sleeping with the default
//! 50 us timer slack) 25 us 58-64, 50 us 61-68, 100 us 64-69, 150 us 58-66, 200 us 55-56,
//! 400 us 44-45; with the slack tightened (`CEILING_TIGHT_SLACK`), 50 us 59-62, 100 us 57-67,
//! 150 us 58-62, 200 us 57-61, 300 us 49, against the mark's 45-55 in the same rounds. In
//! netsweep's probe, napping 100 us with the slack tightened carried 0.84-1.06x the mark (four
//! tests), with the default slack 1.10-1.31x, so netsweep's receivers keep the default.
//! In netsweep (one stream, 5 s, 3-5 interleaved rounds, medians; 100 us naps with the
//! default slack): dropping 60-64 napping against 53-56 with the mark; copying 42 napping
//! against 57 with the mark; two dropping streams 146 against 133; two copying streams 101
//! against 80. So napping is one more setting the probe tries, not a rule (except as the
//! incumbent of a test's only receiver dropping the data, `incumbent`):
//! `LowWater::nap` sleeps the time the rule's mark takes to arrive, at most `NAP_MAX`, so no
//! more than the mark (at most a quarter of the buffer) queues while the receiver sleeps, and
//! a stream under the floor never naps. A sleep is a timer on the receiver's own core; the
//! sleeping receiver still sees the end of the test within a nap, and reads are counted as
//! they return, as before.
//!
//! # Whether to keep a mark at all: the probe
//! The receivers of a test measure which batching to keep: `probe`.
//!
//! Linux only: there a read whose timeout passes returns what is queued below the mark. FreeBSD's
//! `soreceive` returns `EWOULDBLOCK` instead and keeps the data until the mark is reached, which
//! would delay a slowed stream's bytes by more than the read timeout; it has not been measured
//! there, so FreeBSD receivers keep the default.

mod probe;

use crate::traffic::measure::LowWaterProbe;
pub use probe::{
    MarkProbe, PROBE_DECIDES_AFTER, PROBE_EARLY_MARGIN, PROBE_EARLY_TURNS, PROBE_MARGIN,
    PROBE_MAX_RTT, PROBE_TURN, PROBE_TURNS, ProbeStep, decide, decide_early, incumbent, kept,
    probe_start,
};
use std::time::Duration;

/// Data time per read the mark of a test's only receiving stream aims at.
pub const TARGET_ONE: Duration = Duration::from_millis(1);
/// Data time per read the marks of several receiving streams aim at. Each of them runs slower
/// than one stream alone, so a millisecond of its data is a smaller mark (eight streams at
/// 50 Gbit/s: 0.8 MB each), and behind several streams larger marks carried more: two-vCPU
/// AMD EPYC VM, kernel 6.18, 2026-11-28, loopback, medians of interleaved rounds of 4 s,
/// Gbit/s. The bare pairs of `bench/peers.py` (`write 4M ... discard x8`): 4 MiB marks 60.64
/// against 1 MiB marks' 52.75 (run 14), 62.15 against 56.60 (run 11). netsweep with 4 ms
/// against 1 ms: eight streams 54.50 against 49.54 (6 rounds) and 52.57 against 48.77 (6
/// more), four 52.09 against 48.68 (5), two 66.47 against 65.64 (6: at 30 Gbit/s a stream's
/// mark reaches the 4 MiB bound either way); then this rule built against the previous build,
/// eight streams: 65.22 against 64.80 (5 rounds), 58.57 against 51.14 (7 rounds; CPU per byte
/// 0.269 against 0.304 s/GB). This machine's rates move by 20% from one test to the next.
pub const TARGET_SEVERAL: Duration = Duration::from_millis(4);

/// The data time per read the marks of `receivers` streams on one end aim at.
pub fn target(receivers: usize) -> Duration {
    if receivers <= 1 {
        TARGET_ONE
    } else {
        TARGET_SEVERAL
    }
}

/// The largest mark: the largest read (`READ_MAX`), so the read size is the bound that acts.
/// One stream reads 1 MiB at a time (`READ_ONE`), so its mark stays at 1 MiB,
/// which carried as much as 2 and 4 MiB there (above). Several streams read 4 MiB each
/// (`read_size`), and behind them a larger mark carried more: two-vCPU AMD EPYC VM, kernel
/// 6.18, 2026-11-28, loopback, interleaved rounds, medians, Gbit/s. The bare pairs
/// (`examples/ceiling.rs --paths write --chunks 4M --discard --streams 2`, 4 s, 5 rounds):
/// `--rcvlowat` 512K 54.2, 1M 65.5, 2M 71.7, 4M 82.9. netsweep, this cap at 1 MiB against
/// 4 MiB (5 s tests, 6 rounds for two dropping streams, else 4 s and 5 rounds): two dropping
/// streams 66.3 against 82.1, two copying 49.2 against 54.2, eight dropping 62.4 against 67.7,
/// eight copying 35.9 against 40.8. The rule still asks for `target` of data, so a slower
/// stream's mark is smaller.
pub const MAX: usize = super::READ_MAX;
/// Below this rate (2 Gbit/s) a receiver keeps the kernel's default: its wake-ups cost little
/// there, and a mark made a paced 100-200 Mbit/s stream on loopback retransmit thousands of
/// segments a second (a few without it; at 500 Mbit/s and above, no more than without).
pub const FLOOR_BYTES_PER_SEC: f64 = 250e6;
/// Whether receivers set a mark on this operating system.
pub const ENABLED: bool = cfg!(target_os = "linux");
/// How often the rate behind the mark is measured.
pub const UPDATE: Duration = Duration::from_millis(50);

/// The longest nap between a napping receiver's drains (`Batching::Nap`); shorter when the
/// rule's mark takes less time to arrive at the stream's rate, so that no more than the mark
/// (at most a quarter of the buffer) arrives while it sleeps. That bound is asked, not held:
/// the kernel adds the thread's timer slack (up to 50 us by default) to every sleep, and a
/// short nap is mostly slack. The probe measures what napping carries, slack included, so a
/// nap too long for a small window loses there. 100 us asked carried the most in the bare
/// pair (see above); netsweep keeps the default slack, which carried more than a tightened
/// one in netsweep's probe.
pub const NAP_MAX: Duration = Duration::from_micros(100);

/// How a receiver batches its reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// Blocking reads with the rule's low-water mark.
    Mark = 0,
    /// Blocking reads at the kernel's default mark: one read a wake-up.
    Off = 1,
    /// Non-blocking reads that drain the socket, then a nap (`LowWater::nap`).
    Nap = 2,
}

/// One receiver's mark over a test: the rule (`LowWater`) and, when there is one, the probe it
/// shares with the test's other receivers on this end. The receive loop asks for its plan (the
/// mark, and whether to nap) before each read and reports each read after it; a read counts for a probe turn only if it
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
    /// The thread's CPU clock (`cputime::thread_cpu_ns`; injected in tests) and, in a probe
    /// turn, the turn and the clock when the last read ended.
    cpu_clock: fn() -> Option<u64>,
    cpu_seen: Option<(usize, u64)>,
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
            cpu_clock: crate::platform::cputime::thread_cpu_ns,
            cpu_seen: None,
        }
    }

    /// The same with `clock` for the thread's CPU time (tests).
    #[cfg(test)]
    fn with_cpu_clock(mut self, clock: fn() -> Option<u64>) -> ReceiverMark {
        self.cpu_clock = clock;
        self
    }

    /// After a read (data or none) that ended at `now`: in a probe turn, the thread's CPU
    /// since the last read that ended in the same turn counts for it (`MarkProbe::count_cpu`)
    /// when this one ended in the turn's counted part. The clock is read only in the turns.
    /// Returns where the probe stands at `now` (none without a probe), asked once a read.
    fn note_cpu(&mut self, now: Duration) -> Option<ProbeStep> {
        let probe = self.probe.as_ref()?;
        let step = probe.step(now);
        let ProbeStep::Turn { turn, counts, .. } = step else {
            self.cpu_seen = None;
            return Some(step);
        };
        let Some(cpu) = (self.cpu_clock)() else {
            return Some(step);
        };
        if let Some((seen_turn, seen)) = self.cpu_seen
            && seen_turn == turn
            && counts
        {
            probe.count_cpu(turn, cpu.saturating_sub(seen));
        }
        self.cpu_seen = Some((turn, cpu));
        Some(step)
    }

    /// Before a read starting at `now`: the mark to set on the socket, when it changes, and
    /// how long to nap before reading when the socket is drained (zero: block in the read).
    pub fn before_read(&mut self, now: Duration) -> Plan {
        let rule = self.rule.current();
        let step = self.probe.as_ref().map(|p| p.step(now));
        self.started = step;
        let batching = match step {
            None => Batching::Mark,
            Some(ProbeStep::Before | ProbeStep::Deciding) => {
                self.probe.as_ref().map_or(Batching::Mark, |p| p.incumbent)
            }
            Some(ProbeStep::Turn { batching, .. }) => batching,
            Some(ProbeStep::After) => {
                let probe = &self.probe;
                let choice = *self
                    .choice
                    .get_or_insert_with(|| probe.as_ref().and_then(|p| p.choice()));
                choice.map_or(Batching::Mark, kept)
            }
        };
        let want = if batching == Batching::Mark { rule } else { 1 };
        match step {
            Some(ProbeStep::Before | ProbeStep::Deciding) => {
                self.largest_before = self.largest_before.max(want);
            }
            None | Some(ProbeStep::After) => self.largest_after = self.largest_after.max(want),
            Some(ProbeStep::Turn { .. }) => {}
        }
        let nap = if batching == Batching::Nap {
            self.rule.nap()
        } else {
            Duration::ZERO
        };
        let set_mark = (want != self.applied).then(|| {
            self.applied = want;
            want
        });
        Plan { set_mark, nap }
    }

    /// After a read that found nothing to read (a napping receiver's drained socket, or a
    /// blocking read's timeout) at `now`, `total` read so far: the rate falls while no data
    /// comes, so a stalled stream stops napping and blocks in its reads again.
    pub fn after_empty_read(&mut self, now: Duration, total: u64, rcvbuf: impl FnOnce() -> usize) {
        self.rule.update(now, total, rcvbuf);
        let _ = self.note_cpu(now);
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
        let step = self.note_cpu(now);
        if let (Some(probe), Some(ProbeStep::Turn { turn: began, .. })) =
            (&self.probe, self.started)
            && let Some(ProbeStep::Turn {
                turn, counts: true, ..
            }) = step
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

/// What a receiver does before a read (`ReceiverMark::before_read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plan {
    /// The mark to set on the socket, when it changes.
    pub set_mark: Option<usize>,
    /// Zero: a blocking read. Otherwise the receiver reads without blocking and, once a read
    /// finds the socket empty, sleeps this long before the next.
    pub nap: Duration,
}

/// The mark for a receiver getting `bytes_per_sec`, aiming at `target` of data per read, with
/// reads of `read_bytes` and a receive buffer of `rcvbuf` bytes (as `SO_RCVBUF` reports it).
pub fn mark(bytes_per_sec: f64, target: Duration, read_bytes: usize, rcvbuf: usize) -> usize {
    let want = if bytes_per_sec.is_finite() && bytes_per_sec >= FLOOR_BYTES_PER_SEC {
        (bytes_per_sec * target.as_secs_f64()) as usize
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
    /// The data time per read the mark aims at.
    target: Duration,
    /// The rate measured last (bytes a second; 0 before the first measurement).
    rate: f64,
}

impl LowWater {
    /// A stream reading `read_bytes` at a time, its mark aiming at `target` of data per read,
    /// at the kernel's default mark, measuring from `now`.
    pub fn new(read_bytes: usize, target: Duration, now: Duration) -> LowWater {
        LowWater {
            read_bytes,
            target,
            since: now,
            since_bytes: 0,
            current: 1,
            rate: 0.0,
        }
    }

    /// How long a napping receiver sleeps between drains: the time the rule's mark takes to
    /// arrive at the last measured rate, at most `NAP_MAX`; zero (no nap: a blocking read)
    /// while the rule keeps the kernel's default.
    pub fn nap(&self) -> Duration {
        if self.current <= 1 || self.rate.is_nan() || self.rate <= 0.0 {
            return Duration::ZERO;
        }
        NAP_MAX.min(Duration::from_secs_f64(self.current as f64 / self.rate))
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
        self.rate = rate;
        self.since = now;
        self.since_bytes = total;
        let next = mark(rate, self.target, self.read_bytes, rcvbuf());
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
    use std::sync::atomic::Ordering;

    #[test]
    fn the_mark_is_a_millisecond_of_data_within_its_bounds() {
        // 4 Gbit/s: 500 kB a millisecond.
        assert_eq!(mark(500e6, TARGET_ONE, 4 << 20, 6 << 20), 500_000);
        // Below the floor (1 Gbit/s): the kernel's default.
        assert_eq!(mark(125e6, TARGET_ONE, 4 << 20, 6 << 20), 1);
        // 40 Gbit/s: capped at 4 MiB, with a buffer autotuned to 32 MiB...
        assert_eq!(mark(5e9, TARGET_ONE, 4 << 20, 32 << 20), MAX);
        // ...and at a quarter of a 6 MiB one.
        assert_eq!(mark(5e9, TARGET_ONE, 4 << 20, 6 << 20), 6 << 18);
        // One stream reads 1 MiB (`READ_ONE`): its mark stays at 1 MiB.
        assert_eq!(mark(5e9, TARGET_ONE, 1 << 20, 32 << 20), 1 << 20);
        // A small read or a small (fixed, -w) buffer bound it.
        assert_eq!(mark(5e9, TARGET_ONE, 64 << 10, 6 << 20), 64 << 10);
        assert_eq!(mark(5e9, TARGET_ONE, 4 << 20, 128 << 10), 32 << 10);
        // Nothing received, or nonsense: the kernel's default.
        assert_eq!(mark(0.0, TARGET_ONE, 4 << 20, 6 << 20), 1);
        assert_eq!(mark(f64::NAN, TARGET_ONE, 4 << 20, 6 << 20), 1);
        assert_eq!(mark(5e9, TARGET_ONE, 4 << 20, 0), 1);
        // Several streams aim at 4 ms: 8 Gbit/s is a 4 MB mark, 2 Gbit/s 1 MB.
        assert_eq!(target(1), TARGET_ONE);
        assert_eq!(target(8), TARGET_SEVERAL);
        assert_eq!(mark(1e9, target(8), 4 << 20, 64 << 20), 4_000_000);
        assert_eq!(mark(250e6, target(2), 4 << 20, 64 << 20), 1_000_000);
        // Below the floor the target changes nothing.
        assert_eq!(mark(125e6, target(8), 4 << 20, 64 << 20), 1);
    }

    #[test]
    fn the_mark_follows_the_rate_and_ignores_small_moves() {
        let ms = Duration::from_millis;
        let mut lw = LowWater::new(4 << 20, TARGET_ONE, ms(0));
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
    fn a_napping_receiver_sleeps_while_the_mark_would_arrive_at_most_nap_max() {
        let ms = Duration::from_millis;
        let mut lw = LowWater::new(4 << 20, TARGET_ONE, ms(0));
        let big = 6 << 20;
        assert_eq!(lw.nap(), Duration::ZERO, "not measured yet: block");
        // 4 Gbit/s: a 500 kB mark arrives in 1 ms, longer than the cap.
        lw.update(ms(50), 25_000_000, || big);
        assert_eq!(lw.nap(), NAP_MAX);
        // 64 Gbit/s (8 GB/s): the 4 MiB mark arrives in 524 us; a 128 KiB buffer bounds the
        // mark to 32 KiB, which arrives in 4 us: the nap lets no more than that queue.
        let mut fast = LowWater::new(4 << 20, TARGET_ONE, ms(0));
        fast.update(ms(50), 400_000_000, || 128 << 10);
        assert_eq!(fast.current(), 32 << 10);
        assert_eq!(fast.nap(), Duration::from_secs_f64(32768.0 / 8e9));
        // Under the floor: no nap (a blocking read at the kernel's default).
        lw.update(ms(100), 26_000_000, || big);
        assert_eq!(lw.current(), 1);
        assert_eq!(lw.nap(), Duration::ZERO);
    }

    #[test]
    fn a_receiver_sets_each_turns_setting_before_its_reads_and_counts_whole_reads_in_one_turn() {
        let ms = Duration::from_millis;
        let probe = std::sync::Arc::new(MarkProbe::new(ms(100), Batching::Mark));
        let mut r = ReceiverMark::new(
            LowWater::new(4 << 20, TARGET_ONE, ms(0)),
            Some(probe.clone()),
        );
        let big = || 32 << 20;
        // 40 Gbit/s throughout: all bytes read by `t` ms; the rule's mark is 4 MiB, which
        // arrives in 839 us: naps are NAP_MAX.
        assert!(NAP_MAX < Duration::from_micros(839));
        let total = |t: u64| 5_000_000 * t;
        let plan = |set_mark, nap| Plan { set_mark, nap };
        assert_eq!(r.before_read(ms(0)), plan(None, Duration::ZERO));
        r.after_read(ms(50), 250_000_000, total(50), big);
        assert_eq!(r.before_read(ms(50)), plan(Some(MAX), Duration::ZERO));
        // Turn 0 (mark) from 100 ms, turns 1 and 2 (off) from 140 ms, turn 3 (nap) from 220.
        assert_eq!(r.before_read(ms(110)), plan(None, Duration::ZERO));
        r.after_read(ms(125), 1000, total(125), big);
        assert_eq!(r.before_read(ms(140)), plan(Some(1), Duration::ZERO));
        // A read that began in turn 1 and ended in turn 2 counts for neither.
        r.after_read(ms(190), 5000, total(190), big);
        assert_eq!(r.before_read(ms(195)), plan(None, Duration::ZERO));
        r.after_read(ms(200), 2000, total(200), big);
        assert_eq!(r.before_read(ms(225)), plan(None, NAP_MAX));
        r.after_read(ms(240), 2200, total(240), big);
        let counted: Vec<u64> = probe
            .bytes
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counted[..4], [1000, 0, 2000, 2200]);
        // The first half (napping 1.1x going without) decides nothing: in the last turn of the
        // second (from 390 ms), the mark's, the rule's mark again, no nap.
        assert_eq!(r.before_read(ms(590)), plan(Some(MAX), Duration::ZERO));
        for (turn, b) in PROBE_TURNS.iter().enumerate() {
            let carried = match b {
                Batching::Mark => 1_000_000,
                Batching::Off => 900_000,
                Batching::Nap => 1_200_000,
            };
            probe.count(turn, carried, MAX);
        }
        // Until the decision, the incumbent; then napping, which carried more.
        assert_eq!(r.before_read(ms(640)), plan(None, Duration::ZERO));
        assert_eq!(r.before_read(ms(680)), plan(Some(1), NAP_MAX));
        assert_eq!(r.before_read(ms(700)), plan(None, NAP_MAX));
        let (mark, outcome) = r.report();
        assert_eq!(mark, 1);
        let outcome = outcome.unwrap();
        assert!(outcome.napped && !outcome.kept_mark, "{outcome:?}");
        assert_eq!(kept(outcome), Batching::Nap);
        assert_eq!(outcome.turns, 12);
        // A receiver whose test ended before the decision reports the marks it set.
        let mut early = ReceiverMark::new(LowWater::new(4 << 20, TARGET_ONE, ms(0)), Some(probe));
        early.after_read(ms(50), 250_000_000, total(50), big);
        early.before_read(ms(60));
        assert_eq!(early.report(), (MAX as u64, None));
    }

    thread_local! {
        static CLOCK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    fn fake_clock() -> Option<u64> {
        Some(CLOCK.with(|c| c.get()))
    }

    #[test]
    fn a_receiver_counts_its_cpu_between_reads_that_ended_in_one_turns_counted_part() {
        let ms = Duration::from_millis;
        let probe = std::sync::Arc::new(MarkProbe::new(ms(100), Batching::Nap));
        let mut r = ReceiverMark::new(
            LowWater::new(1 << 20, TARGET_ONE, ms(0)),
            Some(probe.clone()),
        )
        .with_cpu_clock(fake_clock);
        let big = || 32 << 20;
        let at = |cpu| CLOCK.with(|c| c.set(cpu));
        // Before the probe the clock is not read.
        at(10);
        r.after_read(ms(50), 1000, 1000, big);
        // Turn 0 runs 100-140 ms and counts from its third (113.3 ms).
        at(1000);
        r.after_read(ms(105), 1000, 2000, big);
        at(1500);
        r.after_read(ms(120), 1000, 3000, big);
        at(1800);
        r.after_empty_read(ms(130), 3000, big);
        // Into turn 1 (140-180): the read that crossed counts for neither.
        at(2500);
        r.after_read(ms(145), 1000, 4000, big);
        at(9000);
        r.after_read(ms(170), 1000, 5000, big);
        let cpu: Vec<u64> = probe
            .cpu_ns
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        assert_eq!(cpu[..3], [800, 6500, 0]);
    }
}
