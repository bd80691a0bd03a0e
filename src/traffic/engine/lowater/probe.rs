//! Whether to keep a low-water mark at all: the receivers' probe.
//!
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
//! with the rule's mark, without one, and napping (`Batching`; `ReceiverMark`: the setting is
//! made before each read); each counts the reads that began and ended in one turn and ended in
//! its last two thirds into the shared sums, and `PROBE_DECIDES_AFTER` the last turn the first
//! receiver to ask decides for all: the incumbent (`incumbent`: the mark, or napping for a
//! test's only receiver dropping the data; the receivers' setting until the decision) goes
//! only when another setting carried more than `PROBE_MARGIN` more (then the one that carried
//! the most is kept); a setting that carried about as much (within the margin) at a quarter
//! less of the receiving threads' CPU per byte is kept instead (`PROBE_CPU_MARGIN`: each
//! receiver reads its thread's CPU clock after each read in the turns); and nothing is decided
//! when no counted turn had a mark above the default to test (a slow stream). When the first
//! half's turns (`PROBE_EARLY_TURNS`) are clear (`decide_early`), the probe decides then and
//! skips the second half. Paced tests and
//! paths slower than `PROBE_MAX_RTT` get no probe. Turning together measures what the machine
//! does when all of them batch one way against another, which is what the choice is. The turns
//! are in the results (they are part of what the test carried); the probe's cost is at most
//! two thirds of its 0.48 s at the worse settings (0.24 s when the first half decides). It
//! runs between the sender's calibration and its first re-check (`sendpath`), so the two
//! measurements do not overlap.

use super::Batching;
use crate::traffic::measure::LowWaterProbe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One turn of the probe.
pub const PROBE_TURN: Duration = Duration::from_millis(40);
/// The probe's turns, by setting: four each, mirrored, so a drift over the probe favours none,
/// and each setting follows itself twice and each other setting once (the turn after a switch
/// pays for it: the first third of each turn is not counted, but a socket's queue and the
/// sender's window may take longer than that to settle).
pub const PROBE_TURNS: [Batching; 12] = {
    use Batching::{Mark, Nap, Off};
    [
        Mark, Off, Off, Nap, Nap, Mark, Mark, Nap, Nap, Off, Off, Mark,
    ]
};
/// How much more the receivers must carry without the mark (napping or not) for the probe to
/// drop it.
pub const PROBE_MARGIN: f64 = 0.05;
/// How much less CPU per byte the receivers must spend at a setting that carried no less than
/// the kept one (within `PROBE_MARGIN`) for the probe to keep that setting instead: where the
/// probe cannot tell two settings apart by what they carried, the receivers take the one
/// that costs their host less. Behind one stream on loopback napping and the mark carry about
/// the same on some machines and in some phases of one machine, and the napping receiver
/// costs several times the marked one: 2-vCPU AMD EPYC VM, kernel 6.18, 2026-11-30, netsweep
/// with the setting forced for the whole test, 8 interleaved rounds of 4 s, medians: napping
/// 36.78 Gbit/s at 0.288 CPU-s/GB (both ends), the mark 35.22 at 0.266; the receiving thread
/// alone used 26-31% of a core napping, 5% with a 4 MiB mark (2026-11-30, sampled per thread).
/// Where napping carries more by more than the margin (other phases of the same machine:
/// 53.7 against 45.7 in the bare pairs) it stays. Copying receivers spend about the same
/// per byte at every setting (the copy dominates), so this decides nothing there. A quarter:
/// chosen, not tuned, well above the turns' noise in what a thread's clock counts and well
/// below the differences measured.
pub const PROBE_CPU_MARGIN: f64 = 0.25;
/// The probe's first half: each setting has had two turns, and the probe decides then
/// (`PROBE_DECIDES_AFTER` later) when one setting carried more than `PROBE_EARLY_MARGIN` more
/// than each other one (`decide_early`), and skips the second half's turns at the worse
/// settings. Behind two dropping streams on loopback the mark carried 1.5-2.1x what going
/// without it or napping did in the probe (2-vCPU AMD EPYC VM, 2026-11-29), so the eight
/// turns at the other settings cost such a test about 3% of 5 s; the early decision halves it.
/// Where the settings are close, the probe runs all its turns. The first half is not mirrored
/// (the mark first and last, going without before napping), so under a rate that climbs
/// through it napping's turns gain on going without; the margin is there for that too.
pub const PROBE_EARLY_TURNS: usize = PROBE_TURNS.len() / 2;
/// How far the setting that carried the most over the first half must lead every other one
/// for the probe to decide then: five times the full probe's `PROBE_MARGIN`, for half its
/// turns and the first half's order. Chosen, not tuned: in six 2 s tests (2026-11-29) the
/// two-stream probes, whose mark led by 1.3-2.4x, decided early, and the one- and
/// eight-stream probes, whose two best settings were 1.17-1.29x apart over all twelve turns,
/// ran them all. A probe that decides early keeps what the full probe would have kept unless
/// the second half reversed a lead of 25%.
pub const PROBE_EARLY_MARGIN: f64 = 0.25;
/// How long after its last turn the probe decides: every receiver's count of that turn is in
/// by then (a receiver counts right after its read returns; this is more than the read timeout,
/// `POLL`). Until then the receivers keep the rule's mark.
pub const PROBE_DECIDES_AFTER: Duration = Duration::from_millis(50);
/// Paths slower to answer than this (the data sockets' round trip at the start) get no probe:
/// 40 ms turns measure nothing there but slow start and the ACK clock, and the mark's wake-ups
/// matter only where the CPU, not the path, is the limit.
pub const PROBE_MAX_RTT: Duration = Duration::from_millis(5);
/// When the probe starts: 50 ms after the sender's calibration, so that it ends and decides
/// (0.53 and 0.58 s after the calibration) before the sender's first re-check (0.7 s after it:
/// see `sendpath`);
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
    pub(super) incumbent: Batching,
    start: Duration,
    pub(super) bytes: [AtomicU64; PROBE_TURNS.len()],
    /// The receiving threads' CPU time in each turn's counted part, in nanoseconds.
    pub(super) cpu_ns: [AtomicU64; PROBE_TURNS.len()],
    tested: AtomicBool,
    /// After the first half: the choice when it was decisive (`decide_early`).
    early: std::sync::OnceLock<Option<LowWaterProbe>>,
    choice: std::sync::OnceLock<Option<LowWaterProbe>>,
}

/// Where a receiver stands in the probe at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeStep {
    /// Before the probe: the incumbent (`incumbent`).
    Before,
    /// In turn `turn`, with its setting; `counts` once the turn has settled.
    Turn {
        turn: usize,
        batching: Batching,
        counts: bool,
    },
    /// After its last turn, until it decides (`PROBE_DECIDES_AFTER`): the incumbent.
    Deciding,
    /// After it.
    After,
}

impl MarkProbe {
    /// A probe starting at `start` on the receivers' clock, whose receivers batch by
    /// `incumbent` until it decides, and keep it unless another setting carries more than
    /// `PROBE_MARGIN` more (`decide`).
    pub fn new(start: Duration, incumbent: Batching) -> MarkProbe {
        MarkProbe {
            incumbent,
            start,
            bytes: Default::default(),
            cpu_ns: Default::default(),
            tested: AtomicBool::new(false),
            early: std::sync::OnceLock::new(),
            choice: std::sync::OnceLock::new(),
        }
    }

    /// When the second half's turns start, if the first half did not decide: after a pause of
    /// `PROBE_DECIDES_AFTER` at the incumbent, in which the first half's counts come in.
    fn resume(&self) -> Duration {
        self.start + PROBE_TURN * PROBE_EARLY_TURNS as u32 + PROBE_DECIDES_AFTER
    }

    /// When the probe's last turn ends, if it runs them all.
    pub fn end(&self) -> Duration {
        self.resume() + PROBE_TURN * (PROBE_TURNS.len() - PROBE_EARLY_TURNS) as u32
    }

    /// Where the probe stands at `now`.
    pub fn step(&self, now: Duration) -> ProbeStep {
        if now < self.start {
            return ProbeStep::Before;
        }
        // Turn `first` + k, `into` the turns that start at `from`.
        let turn = |from: Duration, first: usize| {
            let into = now - from;
            let k = (into.as_nanos() / PROBE_TURN.as_nanos()) as usize;
            let turn = first + k;
            PROBE_TURNS.get(turn).map(|&batching| ProbeStep::Turn {
                turn,
                batching,
                counts: into - PROBE_TURN * k as u32 >= PROBE_TURN / 3,
            })
        };
        let resume = self.resume();
        if now < resume {
            turn(self.start, 0)
                .filter(|t| matches!(t, ProbeStep::Turn { turn, .. } if *turn < PROBE_EARLY_TURNS))
                .unwrap_or(ProbeStep::Deciding)
        } else if self.early_choice().is_some() {
            ProbeStep::After
        } else if let Some(t) = turn(resume, PROBE_EARLY_TURNS) {
            t
        } else if now < self.end() + PROBE_DECIDES_AFTER {
            ProbeStep::Deciding
        } else {
            ProbeStep::After
        }
    }

    /// The first half's choice when it was decisive, made by the first receiver to ask after
    /// its counts are in.
    fn early_choice(&self) -> Option<LowWaterProbe> {
        *self.early.get_or_init(|| {
            let sums = load(&self.bytes[..PROBE_EARLY_TURNS]);
            let cpu = load(&self.cpu_ns[..PROBE_EARLY_TURNS]);
            if self.tested.load(Ordering::Relaxed) {
                decide_early(&sums, &cpu, self.incumbent)
            } else {
                None
            }
        })
    }

    /// Counts `bytes` read in turn `turn` with a mark of `mark` bytes in force.
    pub fn count(&self, turn: usize, bytes: u64, mark: usize) {
        if let Some(sum) = self.bytes.get(turn) {
            sum.fetch_add(bytes, Ordering::Relaxed);
            if PROBE_TURNS[turn] == Batching::Mark && mark > 1 {
                self.tested.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The choice, made by the first receiver to ask after the probe; `None` when no counted
    /// turn had a mark to test (the rule kept the kernel's default: a slow stream), and the
    /// receivers keep the rule.
    pub fn choice(&self) -> Option<LowWaterProbe> {
        if let Some(Some(early)) = self.early.get() {
            return Some(*early);
        }
        *self.choice.get_or_init(|| {
            let (sums, cpu) = (load(&self.bytes), load(&self.cpu_ns));
            self.tested
                .load(Ordering::Relaxed)
                .then(|| decide(&sums, &cpu, self.incumbent))
        })
    }

    /// Counts `ns` of a receiving thread's CPU time spent in turn `turn`'s counted part.
    pub fn count_cpu(&self, turn: usize, ns: u64) {
        if let Some(sum) = self.cpu_ns.get(turn) {
            sum.fetch_add(ns, Ordering::Relaxed);
        }
    }
}

fn load(sums: &[AtomicU64]) -> Vec<u64> {
    sums.iter().map(|b| b.load(Ordering::Relaxed)).collect()
}

/// The batching a probe's outcome keeps.
pub fn kept(c: LowWaterProbe) -> Batching {
    if c.napped {
        Batching::Nap
    } else if c.kept_mark {
        Batching::Mark
    } else {
        Batching::Off
    }
}

/// The setting a probe starts from and keeps unless another carries more than `PROBE_MARGIN`
/// more: napping for a test's only receiver when it drops the data, the mark otherwise.
/// Measured (one stream dropping the data, 2026-11-28, `bench/peers.py`'s tcp1, five tests
/// each): in the probe of the default (which runs just after the send path's calibration)
/// napping carried 0.81-1.47x the mark and was kept once, so those tests carried a median
/// 49.6 Gbit/s; `--no-zerocopy`'s probes (no calibration) kept napping four times and carried
/// 59.1. In the steady state a napping receiver behind one stream carried 60-64 against the
/// mark's 53-56. Behind two and eight dropping streams napping carried less than the mark or
/// no more (0.65-1.13x), and going without either won (1.05-1.48x); behind copying receivers
/// napping lost (0.53-0.98x).
pub fn incumbent(receivers: usize, skip_rx_copy: bool) -> Batching {
    if receivers == 1 && skip_rx_copy {
        Batching::Nap
    } else {
        Batching::Mark
    }
}

/// Each setting's sum of `per_turn` (one per turn of `PROBE_TURNS`, or of its first part):
/// the mark's, going without's, napping's.
fn by_setting(per_turn: &[u64]) -> [u64; 3] {
    let mut sums = [0u64; 3];
    for (&b, &x) in PROBE_TURNS.iter().zip(per_turn) {
        let slot = &mut sums[b as usize];
        *slot = slot.saturating_add(x);
    }
    sums
}

/// What the probe's turns carried (`sums`, one per turn of `PROBE_TURNS`) and what the
/// receiving threads spent on it (`cpu_ns`, likewise; empty or zero where unmeasured), and so
/// how the receivers batch from then on: `incumbent` stays unless another setting carried more
/// than `PROBE_MARGIN` more, and then the setting that carried the most is kept; then, among
/// the settings that carried no less than that one (within `PROBE_MARGIN`), the one whose
/// receivers spent less than it per byte by more than `PROBE_CPU_MARGIN` is kept instead.
pub fn decide(sums: &[u64], cpu_ns: &[u64], incumbent: Batching) -> LowWaterProbe {
    let [marked, unmarked, napped] = by_setting(sums);
    let cpu = by_setting(cpu_ns);
    let carried = |b: Batching| [marked, unmarked, napped][b as usize];
    // CPU-seconds a byte; none where either is unmeasured.
    let per_byte = |b: Batching| {
        let (c, n) = (cpu[b as usize], carried(b));
        (c > 0 && n > 0).then(|| c as f64 / n as f64)
    };
    // The most carried; on a tie the incumbent, then the mark, then napping.
    let best = [incumbent, Batching::Mark, Batching::Nap, Batching::Off]
        .into_iter()
        .fold(
            incumbent,
            |best, b| if carried(b) > carried(best) { b } else { best },
        );
    let by_rate = if carried(best) as f64 > carried(incumbent) as f64 * (1.0 + PROBE_MARGIN) {
        best
    } else {
        incumbent
    };
    let cheaper = per_byte(by_rate).and_then(|kept_cost| {
        [Batching::Mark, Batching::Nap, Batching::Off]
            .into_iter()
            .filter(|&b| {
                b != by_rate && carried(b) as f64 * (1.0 + PROBE_MARGIN) >= carried(by_rate) as f64
            })
            .filter_map(|b| Some((b, per_byte(b)?)))
            .filter(|&(_, cost)| cost * (1.0 + PROBE_CPU_MARGIN) < kept_cost)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(b, _)| b)
    });
    let kept = cheaper.unwrap_or(by_rate);
    LowWaterProbe {
        marked_bytes: marked,
        unmarked_bytes: unmarked,
        napped_bytes: napped,
        kept_mark: kept == Batching::Mark,
        napped: kept == Batching::Nap,
        turns: sums.len().min(PROBE_TURNS.len()) as u32,
        cpu_ns: cpu,
        for_cpu: cheaper.is_some(),
    }
}

/// The first half's decision (`sums` of its turns), when it is clear: the setting `decide`
/// keeps carried more than `PROBE_EARLY_MARGIN` more than each other one. `None`: the probe
/// runs its second half.
pub fn decide_early(sums: &[u64], cpu_ns: &[u64], incumbent: Batching) -> Option<LowWaterProbe> {
    let half = |x: &[u64]| x[..x.len().min(PROBE_EARLY_TURNS)].to_vec();
    let d = decide(&half(sums), &half(cpu_ns), incumbent);
    let all = [
        (Batching::Mark, d.marked_bytes),
        (Batching::Off, d.unmarked_bytes),
        (Batching::Nap, d.napped_bytes),
    ];
    let keep = kept(d);
    let kept_bytes = all.iter().find(|(b, _)| *b == keep).map_or(0, |a| a.1);
    all.iter()
        .filter(|(b, _)| *b != keep)
        .all(|(_, other)| kept_bytes as f64 > *other as f64 * (1.0 + PROBE_EARLY_MARGIN))
        .then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::engine::lowater::{LowWater, NAP_MAX, ReceiverMark, TARGET_ONE};

    #[test]
    fn the_probe_takes_mirrored_turns_counting_their_settled_part() {
        let ms = Duration::from_millis;
        let p = MarkProbe::new(ms(1500), Batching::Mark);
        assert_eq!(p.step(ms(1499)), ProbeStep::Before);
        let turn = |turn, batching, counts| ProbeStep::Turn {
            turn,
            batching,
            counts,
        };
        assert_eq!(p.step(ms(1500)), turn(0, Batching::Mark, false));
        // A third into the turn it counts.
        assert_eq!(p.step(ms(1514)), turn(0, Batching::Mark, true));
        assert_eq!(p.step(ms(1540)), turn(1, Batching::Off, false));
        assert_eq!(p.step(ms(1580)), turn(2, Batching::Off, false));
        assert_eq!(p.step(ms(1620)), turn(3, Batching::Nap, false));
        assert_eq!(p.step(ms(1739)), turn(5, Batching::Mark, true));
        // After the first half, a pause at the incumbent while its counts come in; nothing
        // was counted, so nothing is decided early and the second half follows.
        assert_eq!(p.step(ms(1740)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(1789)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(1790)), turn(6, Batching::Mark, false));
        assert_eq!(p.step(ms(2029)), turn(11, Batching::Mark, true));
        assert_eq!(p.end(), ms(2030));
        assert_eq!(p.step(ms(2030)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(2079)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(2080)), ProbeStep::After);
        // Four turns each, mirrored.
        for b in [Batching::Mark, Batching::Off, Batching::Nap] {
            assert_eq!(PROBE_TURNS.iter().filter(|t| **t == b).count(), 4);
        }
        let mut mirrored = PROBE_TURNS;
        mirrored.reverse();
        assert_eq!(mirrored, PROBE_TURNS);
        assert_eq!(probe_start(Duration::ZERO), ms(300));
        assert_eq!(probe_start(ms(300)), ms(350));
        // It decides before the sender's first re-check (`sendpath`: 0.7 s after calibrating).
        let p = MarkProbe::new(probe_start(ms(300)), Batching::Mark);
        let recheck = Duration::from_secs_f64(crate::traffic::engine::sendpath::RECHECK_AFTER_S[0]);
        assert!(p.end() + PROBE_DECIDES_AFTER < ms(300) + recheck);
    }

    /// What each of `turns` carried when every turn of a setting carried the same.
    fn carried_in(turns: &[Batching], mark: u64, off: u64, nap: u64) -> Vec<u64> {
        turns
            .iter()
            .map(|b| match b {
                Batching::Mark => mark,
                Batching::Off => off,
                Batching::Nap => nap,
            })
            .collect()
    }

    #[test]
    fn the_mark_goes_only_when_going_without_it_carried_more_than_the_margin() {
        let sums = |mark, off, nap| carried_in(&PROBE_TURNS, mark, off, nap);
        let d = decide(&sums(100, 140, 120), &[], Batching::Mark);
        assert_eq!(
            (
                d.marked_bytes,
                d.unmarked_bytes,
                d.napped_bytes,
                d.kept_mark,
                d.napped
            ),
            (400, 560, 480, false, false)
        );
        assert_eq!(kept(d), Batching::Off);
        let d = decide(&sums(100, 90, 130), &[], Batching::Mark);
        assert!(d.napped && !d.kept_mark, "{d:?}");
        // Napping and going without both beat the mark: the better of the two.
        assert_eq!(
            kept(decide(&sums(100, 120, 130), &[], Batching::Mark)),
            Batching::Nap
        );
        assert_eq!(
            kept(decide(&sums(100, 130, 120), &[], Batching::Mark)),
            Batching::Off
        );
        // Within the margin, or behind: the mark stays.
        assert_eq!(
            kept(decide(&sums(100, 104, 104), &[], Batching::Mark)),
            Batching::Mark
        );
        assert_eq!(
            kept(decide(&sums(100, 60, 90), &[], Batching::Mark)),
            Batching::Mark
        );
        assert_eq!(
            kept(decide(&[0; 12], &[], Batching::Mark)),
            Batching::Mark,
            "nothing read"
        );
        // Shared by the receivers: the first to ask decides for all.
        let p = MarkProbe::new(Duration::ZERO, Batching::Mark);
        for (turn, b) in PROBE_TURNS.iter().enumerate() {
            p.count(turn, if *b == Batching::Mark { 10 } else { 20 }, 1 << 20);
        }
        assert_eq!(p.choice().map(kept), Some(Batching::Nap));
        p.count(1, 0, 1);
        p.count(0, 1000, 1 << 20);
        assert_eq!(p.choice().map(kept), Some(Batching::Nap), "decided once");
        // A probe napping from the start keeps napping unless another carried 5% more.
        assert_eq!(
            kept(decide(&sums(104, 90, 100), &[], Batching::Nap)),
            Batching::Nap
        );
        assert_eq!(
            kept(decide(&sums(106, 90, 100), &[], Batching::Nap)),
            Batching::Mark
        );
        assert_eq!(
            kept(decide(&sums(106, 120, 100), &[], Batching::Nap)),
            Batching::Off
        );
        assert_eq!(incumbent(1, true), Batching::Nap);
        assert_eq!(incumbent(1, false), Batching::Mark);
        assert_eq!(incumbent(2, true), Batching::Mark);
        let p = MarkProbe::new(Duration::from_millis(100), Batching::Nap);
        let mut r = ReceiverMark::new(
            LowWater::new(4 << 20, TARGET_ONE, Duration::ZERO),
            Some(p.into()),
        );
        r.after_read(Duration::from_millis(50), 250_000_000, 250_000_000, || {
            6 << 20
        });
        let before = r.before_read(Duration::from_millis(60));
        assert_eq!(
            (before.set_mark, before.nap),
            (None, NAP_MAX),
            "naps before the probe"
        );
        // No counted turn had a mark above the default: nothing was tested, the rule stands.
        let p = MarkProbe::new(Duration::ZERO, Batching::Mark);
        for (turn, b) in PROBE_TURNS.iter().enumerate() {
            p.count(turn, if *b == Batching::Mark { 10 } else { 20 }, 1);
        }
        assert_eq!(p.choice(), None);
    }

    #[test]
    fn between_settings_that_carried_about_as_much_the_cheaper_per_byte_is_kept() {
        let sums = |mark, off, nap| carried_in(&PROBE_TURNS, mark, off, nap);
        // Measured at a 4 Gbit/s path (tbf on a namespace's loopback, 2026-11-30): the turns
        // carried the same; the receivers spent 3.5 ms with the mark, 12.4 going without, 16.1
        // napping (of 12 turns: here per turn).
        let cpu = sums(880_000, 3_100_000, 4_000_000);
        let d = decide(&sums(100, 100, 100), &cpu, Batching::Nap);
        assert!(d.kept_mark && d.for_cpu, "{d:?}");
        assert_eq!(d.cpu_ns, [3_520_000, 12_400_000, 16_000_000]);
        // Napping carried 4% more: within the margin, so still the mark, for its CPU.
        let d = decide(&sums(100, 100, 104), &cpu, Batching::Nap);
        assert!(d.kept_mark && d.for_cpu, "{d:?}");
        // Napping carried 6% more: napping, whatever it costs.
        let d = decide(&sums(100, 100, 106), &cpu, Batching::Nap);
        assert!(d.napped && !d.for_cpu, "{d:?}");
        // Cheaper by less than the CPU margin: what carried the most (the incumbent) stays.
        let close = sums(3_300_000, 3_300_000, 4_000_000);
        let d = decide(&sums(100, 100, 100), &close, Batching::Nap);
        assert!(d.napped && !d.for_cpu, "{d:?}");
        // The cheapest of two cheaper ones; and a cheaper one that carried less than the
        // margin allows is no candidate.
        let d = decide(&sums(100, 100, 100), &sums(2, 1, 10), Batching::Nap);
        assert_eq!((kept(d), d.for_cpu), (Batching::Off, true));
        let d = decide(&sums(90, 100, 100), &sums(1, 9, 10), Batching::Nap);
        assert_eq!((kept(d), d.for_cpu), (Batching::Nap, false));
        // Without CPU figures (another system, an older peer): by rate alone.
        let d = decide(&sums(100, 100, 100), &[], Batching::Nap);
        assert!(d.napped && !d.for_cpu && d.cpu_ns == [0; 3], "{d:?}");
        let d = decide(&sums(100, 100, 100), &sums(0, 9, 10), Batching::Nap);
        assert!(
            d.napped && !d.for_cpu,
            "an unmeasured setting is no candidate: {d:?}"
        );
        // A choice made for the CPU does not lead by the early margin: the probe runs on.
        let half = |x: Vec<u64>| x[..PROBE_EARLY_TURNS].to_vec();
        assert_eq!(
            decide_early(&half(sums(100, 100, 100)), &half(cpu), Batching::Nap),
            None
        );
        // The probe sums what its receivers counted.
        let p = MarkProbe::new(Duration::ZERO, Batching::Nap);
        for (turn, b) in PROBE_TURNS.iter().enumerate() {
            p.count(turn, 1000, 1 << 20);
            p.count_cpu(turn, if *b == Batching::Mark { 10 } else { 40 });
        }
        p.count_cpu(PROBE_TURNS.len(), 1_000_000);
        let c = p.choice().expect("decided");
        assert!(
            c.kept_mark && c.for_cpu && c.cpu_ns == [40, 160, 160],
            "{c:?}"
        );
    }

    #[test]
    fn a_clear_first_half_decides_early_and_skips_the_second() {
        let ms = Duration::from_millis;
        let half = |mark, off, nap| carried_in(&PROBE_TURNS[..PROBE_EARLY_TURNS], mark, off, nap);
        // Each setting twice in the first half.
        for b in [Batching::Mark, Batching::Off, Batching::Nap] {
            let n = PROBE_TURNS[..PROBE_EARLY_TURNS]
                .iter()
                .filter(|t| **t == b)
                .count();
            assert_eq!(n, 2);
        }
        // The kept setting must lead every other by more than the early margin.
        let d = decide_early(&half(200, 100, 150), &[], Batching::Mark).expect("clear");
        assert!(d.kept_mark && d.turns == 6, "{d:?}");
        assert_eq!(
            decide_early(&half(200, 100, 170), &[], Batching::Mark),
            None
        );
        assert_eq!(
            decide_early(&half(100, 200, 150), &[], Batching::Mark).map(kept),
            Some(Batching::Off)
        );
        assert_eq!(decide_early(&half(100, 120, 90), &[], Batching::Mark), None);
        // The incumbent kept within PROBE_MARGIN while another carried more: not clear.
        assert_eq!(decide_early(&half(100, 104, 50), &[], Batching::Mark), None);
        assert_eq!(
            decide_early(&[0; 6], &[], Batching::Nap),
            None,
            "nothing read"
        );
        // A probe whose first half is clear ends after it, with that choice.
        let p = MarkProbe::new(ms(100), Batching::Mark);
        for (turn, b) in PROBE_TURNS[..PROBE_EARLY_TURNS].iter().enumerate() {
            let carried = match b {
                Batching::Mark => 10,
                Batching::Off => 40,
                Batching::Nap => 20,
            };
            p.count(turn, carried, 1 << 20);
        }
        assert_eq!(p.step(ms(389)), ProbeStep::Deciding);
        assert_eq!(p.step(ms(390)), ProbeStep::After);
        assert_eq!(p.step(ms(500)), ProbeStep::After, "no second half");
        let c = p.choice().expect("decided");
        assert!(!c.kept_mark && !c.napped && c.turns == 6, "{c:?}");
        // Counts arriving later change nothing.
        p.count(7, 1_000_000, 1 << 20);
        assert_eq!(p.choice(), Some(c));
        // Without a mark in force in the first half nothing was tested: the second half runs.
        let p = MarkProbe::new(ms(100), Batching::Mark);
        for turn in 0..PROBE_EARLY_TURNS {
            p.count(turn, 10 + 20 * turn as u64, 1);
        }
        assert!(matches!(p.step(ms(390)), ProbeStep::Turn { turn: 6, .. }));
    }
}
