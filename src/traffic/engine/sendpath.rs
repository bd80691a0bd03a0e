//! How a TCP sender hands data to the kernel, and how it picks the fastest way on this host.
//!
//! # What was measured (loopback, one stream, 2-core VMs of one kind, 2026-11-22)
//! The same kernel gives opposite answers on two machines of one kind: on one, sendfile(2) from
//! a 64 KiB in-memory file carried 36-42 Gbit/s and write(2) of 4 MiB 33-35; on another,
//! sendfile peaked at 27 Gbit/s (16 KiB) and fell to 15 at 4 MiB, while write(2) of 1-4 MiB
//! reached 38-42. netsweep's engine with a given path matches the bare program
//! (`examples/ceiling.rs`) within noise, so the path, not the engine, is what varied.
//!
//! Why: on loopback the receiving side is the bottleneck (see below: its wake-ups more than its
//! copy), and what it copies from differs. sendfile's segments reference the same few pages of the file again and again:
//! the source stays in cache, but every segment takes and drops a page reference, an atomic
//! on a cache line that the sending and the receiving core pass back and forth; larger files
//! spread the references but lose the cache. write(2) copies into fresh socket pages that the
//! receiver reads once, with no shared counter, and larger writes amortise the system call.
//! Which effect wins depends on the cache sizes, the core topology the hypervisor gives the VM
//! and its page-reference cost: it cannot be known in advance, so each sender measures. (This
//! explanation fits the measurements: the file's size matters more than the call size for
//! sendfile, and a 4 MiB file with 64 KiB calls was no faster than 64 KiB with 64 KiB; it was
//! not confirmed with hardware counters: `perf stat` here reports them "not supported".) Loopback
//! figures also swing by a factor of 1.5 between runs of one configuration on a shared 2-core
//! VM, so compare medians of interleaved rounds (`bench/peers.py`), never single runs.
//!
//! What does not help here (same machine kind, 2026-11-23, a C sender/receiver pair on loopback,
//! kernel 6.18): receiving into an mmap of the socket (`TCP_ZEROCOPY_RECEIVE`). The kernel maps
//! only whole, plain pages: sendfile's frags are page-cache pages (they have a mapping) and
//! write(2)'s socket pages are compound, so behind netsweep's senders it maps nothing. Behind a
//! `MSG_ZEROCOPY` sender with one page of payload a segment (`TCP_MAXSEG` 4108 on the
//! receiver's listener), which loopback delivers as copies into fresh pages, it maps 94%, and
//! still costs more CPU per byte than copying: `examples/zerocopy_receive.rs`, 2026-11-27, 3
//! rounds of 3 s, medians of the receiving thread's CPU seconds per GB (Gbit/s):
//! MSG_ZEROCOPY sender: copy 0.255 (16.2), MSG_TRUNC 0.151 (20.1), mapped 0.387 (11.6);
//! sendfile sender: copy 0.250 (24.5), MSG_TRUNC 0.131 (28.9), mapped 0.388 (19.1, nothing
//! mapped). Inserting and zapping the pages costs this VM more than the copy, so netsweep
//! offers no mapped receive: `--skip-rx-copy` is the receive mode without the copy. Sending
//! with `MSG_ZEROCOPY` is copied anyway when loopback delivers it and costs its completions:
//! 23 Gbit/s against write(2)'s 44 in the same run. Pinning the sender and the receiver to
//! different cores did not move the median either. Without a low-water mark the receiver's
//! read size matters little: 128 KiB to 16 MiB reads behind 4 MiB writes stayed within the
//! run-to-run noise (37-46); with one, two streams need reads larger than the mark
//! (`read_size`).
//! Nor does a receiver that takes the data out of the socket without copying it (`recv` with
//! `MSG_TRUNC`, `examples/ceiling.rs --discard`, 2026-11-23): behind 4 MiB writes it carried
//! 31-44 Gbit/s against 37-45 for the copying receiver in the same interleaved rounds, so the
//! receiver's copy is not the whole limit either: on two cores the sender's copy, both halves
//! of the protocol and the wake-ups of a receiver that drains faster (more, smaller reads and
//! ACKs) share the same CPUs. What did move the pair is fewer wake-ups of the receiver: a
//! low-water mark of 1 MiB took it from 40-44 to 60-66 Gbit/s (`lowater`, which netsweep's
//! receivers use); the comparisons above were all made without one.
//! Nor sendfile from a file much larger than the socket buffers, which keeps the sender's and
//! the receiver's page references on different pages (2026-11-29, `examples/ceiling.rs
//! --discard --rcvlowat 1M`, three interleaved rounds of 3 s): 1 MiB calls from 64 MiB carried
//! 29-33 Gbit/s on one stream and 23-40 on two, 256 KiB from 256 MiB 31-35 and 25-32, where
//! write(2) of 4 MiB carried 37-41 and 65-68.
//!
//! # Calibration
//! A sender with `TestSpec::calibration` > 0 first warms up (`WARMUP_SHARE` of it, measured for
//! no candidate), then gives each candidate two turns (`CANDIDATES`; against iperf3's
//! receivers, whose senders choose while the test runs instead, `IPERF3_CANDIDATES`), in the
//! mirrored order of `ORDER` (so a drift over the calibration, such as the receiver's buffer
//! still growing, favours no candidate), counts what it writes in the last two thirds of each
//! turn (the first third refills the socket buffer after the switch), and keeps the fastest. A candidate within `TIE` of the fastest
//! that comes earlier in the list wins: the list runs from the least CPU per byte (sendfile) to
//! the most. That time is part of the grid's warm-up and in no result.
//!
//! All sending streams of a test on one end calibrate together (`Pool`): on loopback with two
//! streams, each stream choosing alone sometimes kept sendfile 64 KiB (45 Gbit/s in total)
//! where write(2) carried 52-59, and the streams of one test could keep different paths.
//!
//! # Re-checks on the warm connection
//! The calibration runs while the connection is young, and the paths rank differently then and
//! later. Loopback, one stream, quarter-second intervals (2026-11-27): write 1 MiB carried 13-28
//! Gbit/s in the first quarter second and 39-44 from the second second on; sendfile 1 MiB 24-28,
//! then about 34. With a 0.3 s or a 1 s calibration the default kept sendfile 1 MiB and carried
//! 40.4 Gbit/s where write 1 MiB fixed carried 45.5-47.9 (interleaved rounds,
//! docs/performance.md). So while the test runs, 0.7 s after the calibration every candidate
//! takes two turns of 75 ms again (mirrored, the kept path first and last), and at 3, 9 and
//! 27 s the kept path and that re-check's runner-up do (each re-check only if it ends inside
//! the test). Streams sum their bytes as in the calibration; a path takes over when it carried
//! more than `SWITCH_MARGIN` more than the kept one. These turns are in the results, since they
//! are part of what the test carried: the first costs about six 75 ms turns at the other paths'
//! rates (a 5 s test with paths 20% slower: 1.8%), the later ones two turns each.
//!
//! One test's turns are few and noisy, so a process that remembers (`memory`: `netsweep client`
//! and `netsweep server`, through the host's record) pools every test's re-checks per peer; once
//! the record is confident it picks the path after the calibration and judges the re-checks,
//! and the first re-check then tries the record's best and runner-up alone, every candidate
//! only once `memory::FULL_AFTER` observations have passed since the record last had them all.

pub mod memory;

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A way to send: which system call, and how many bytes per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendPath {
    pub call: SendCall,
    pub chunk_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendCall {
    /// sendfile(2) from an in-memory file of `chunk_bytes` (no copy in the sender).
    Sendfile,
    /// write(2) (writev beyond the buffer) from a buffer: one copy into the socket.
    Write,
}

impl SendCall {
    /// The system call's name, as results report it.
    pub fn name(self) -> &'static str {
        match self {
            SendCall::Sendfile => "sendfile",
            SendCall::Write => "write",
        }
    }
}

impl std::fmt::Display for SendPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            self.call.name(),
            crate::units::Bytes(self.chunk_bytes as u64)
        )
    }
}

/// The paths a sender chooses among, cheapest in CPU per byte first (ties go to the earlier).
pub type Candidates = [SendPath; 4];

/// The paths a calibrating sender tries against netsweep's receivers.
pub const CANDIDATES: Candidates = [
    SendPath {
        call: SendCall::Sendfile,
        chunk_bytes: 64 << 10,
    },
    SendPath {
        call: SendCall::Sendfile,
        chunk_bytes: 1 << 20,
    },
    SendPath {
        call: SendCall::Write,
        chunk_bytes: 1 << 20,
    },
    SendPath {
        call: SendCall::Write,
        chunk_bytes: 4 << 20,
    },
];

/// The paths a sender tries against iperf3's receivers (a thread per stream, reading `-l`
/// bytes, 128 KiB by default, as each segment arrives): write(2) of iperf3's own block in place
/// of sendfile 64 KiB. Measured (2026-11-29, loopback, iperf3 3.21+ server, 2-vCPU AMD EPYC VM,
/// Linux 6.18, interleaved rounds of 4 s, medians, Gbit/s): with eight streams write 128 KiB
/// carried 42-44 where write 1 MiB carried 36 and sendfile 1 MiB 26, and iperf3's own client
/// 43-44; with one and two streams 1 MiB writes carried 1.4-1.6x 128 KiB ones. So the block is
/// a candidate and the senders choose while the test runs (`TestSpec::live_path_choice`),
/// remembered per stream count (`memory::key`). Sendfile 64 KiB gives it its place: in the
/// previous build's record of the same warm-up tests it came last in all four full re-checks
/// at two streams and behind write 4 MiB in three of four at one stream. Cheapest first: the
/// block's writes make eight times the calls of 1 MiB ones.
pub const IPERF3_CANDIDATES: Candidates = [
    SendPath {
        call: SendCall::Sendfile,
        chunk_bytes: 1 << 20,
    },
    SendPath {
        call: SendCall::Write,
        chunk_bytes: 4 << 20,
    },
    SendPath {
        call: SendCall::Write,
        chunk_bytes: 1 << 20,
    },
    SendPath {
        call: SendCall::Write,
        chunk_bytes: crate::traffic::spec::IPERF3_TCP_LENGTH as usize,
    },
];

/// The candidates against the far end's receivers.
pub fn candidates(receivers: memory::Receivers) -> &'static Candidates {
    match receivers {
        memory::Receivers::Iperf3 => &IPERF3_CANDIDATES,
        memory::Receivers::Netsweep { .. } => &CANDIDATES,
    }
}

/// How close to the fastest a cheaper candidate must be to win (measurement noise).
pub const TIE: f64 = 0.03;

/// One candidate's turns during calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub path: SendPath,
    /// Rate written into the socket in the measured parts of its turns; `None` when too few of
    /// its calls started there to tell (calls that outlast a turn: large chunks on a slow path).
    pub bits_per_second: Option<f64>,
    /// Send calls that started in the measured parts of its turns.
    #[serde(default)]
    pub calls: u64,
}

/// Fewer calls than this in a candidate's measured time leave its rate unknown: a call is
/// counted whole where it started, so one call that outlasts a turn would credit the turn with
/// bytes sent after it.
pub const MIN_CALLS: u64 = 4;

impl Trial {
    /// The trial of `path` that wrote `bytes` in `calls` calls over `seconds` of measured time.
    pub fn of(path: SendPath, bytes: u64, calls: u64, seconds: f64) -> Trial {
        let measured = calls >= MIN_CALLS && seconds > 0.0;
        Trial {
            path,
            bits_per_second: measured.then(|| bytes as f64 * 8.0 / seconds),
            calls,
        }
    }
}

/// The index of the trial to keep: the fastest, or an earlier one within `TIE` of it; trials
/// without a rate are passed over.
pub fn choose(trials: &[Trial]) -> Option<usize> {
    let rate = |t: &Trial| t.bits_per_second.filter(|r| r.is_finite());
    let best = trials.iter().filter_map(rate).fold(f64::NAN, f64::max);
    if best.is_nan() || best <= 0.0 {
        return None;
    }
    trials
        .iter()
        .position(|t| rate(t).is_some_and(|r| r >= best * (1.0 - TIE)))
}

/// The turns of a calibration: every candidate twice, mirrored.
pub const ORDER: [usize; 8] = [0, 1, 2, 3, 3, 2, 1, 0];

/// The share of each turn that is measured (its last two thirds).
pub const MEASURED_SHARE: f64 = 2.0 / 3.0;

/// The share of a calibration spent before the first turn, on the first candidate and measured
/// for none: the connection leaves slow start, the socket buffers grow and the receiver sets its
/// low-water mark (`lowater`, after 50 ms). Mirroring cancels a steady drift, not that step:
/// without the warm-up the first candidate's first turn fell in it. Loopback, one stream, 3 s
/// tests, 8 interleaved rounds (2026-11-23): without it sendfile 64 KiB's trial read 25-42
/// Gbit/s, no test kept it, and the tests carried a median 45.2 Gbit/s; with it the trial read
/// 43-52, half the tests kept it, and they carried 48.9 (a 0.5 s calibration: 47.2).
pub const WARMUP_SHARE: f64 = 0.2;

/// Which candidate's turn it is at `elapsed` into a calibration of `total`, and whether that
/// moment is in the measured part of the turn. `None` once calibration is over.
pub fn turn(elapsed: std::time::Duration, total: std::time::Duration) -> Option<(usize, bool)> {
    if elapsed >= total || total.is_zero() {
        return None;
    }
    let warm = elapsed.as_secs_f64() / total.as_secs_f64() - WARMUP_SHARE;
    if warm < 0.0 {
        return Some((ORDER[0], false));
    }
    let share = warm / (1.0 - WARMUP_SHARE) * ORDER.len() as f64;
    let k = (share as usize).min(ORDER.len() - 1);
    Some((ORDER[k], share.fract() >= 1.0 - MEASURED_SHARE))
}

/// The seconds each candidate is measured over a calibration of `total`.
pub fn measured_seconds(total: std::time::Duration) -> f64 {
    let turns_each = ORDER.len() as f64 / CANDIDATES.len() as f64;
    total.as_secs_f64() * (1.0 - WARMUP_SHARE) / ORDER.len() as f64 * MEASURED_SHARE * turns_each
}

/// The path to keep, and the trials that chose it, from the bytes and calls each candidate
/// wrote in the measured parts of a calibration of `total`.
pub fn decide(
    candidates: &Candidates,
    measured: [(u64, u64); CANDIDATES.len()],
    total: std::time::Duration,
) -> (SendPath, Vec<Trial>) {
    let secs = measured_seconds(total);
    let trials: Vec<Trial> = candidates
        .iter()
        .zip(measured)
        .map(|(path, (bytes, calls))| Trial::of(*path, bytes, calls, secs))
        .collect();
    let path = choose(&trials).map_or(candidates[0], |i| candidates[i]);
    (path, trials)
}

/// The calibration of every sending stream of a test on one end. The streams share the test's
/// clock, so they try each candidate in the same turns; what they write is added up and one
/// path is kept for all of them, chosen on the sum: what the test as a whole carries, which is
/// what matters with `-P`, and a steadier estimate than any one stream's. (Each stream choosing
/// alone, two streams on loopback kept different paths in one test and the result could name
/// only one of them.) The first stream past the calibration decides; a call another stream
/// started in the last measured turn and has not finished is left out of the sums, and that
/// turn is the cheapest candidate's, whose calls are short.
#[derive(Debug)]
pub struct Pool {
    /// The paths this test's senders choose among (`candidates`).
    candidates: &'static Candidates,
    bytes: [AtomicU64; CANDIDATES.len()],
    calls: [AtomicU64; CANDIDATES.len()],
    decision: OnceLock<(SendPath, Vec<Trial>)>,
    rechecks: [RecheckPool; RECHECK_AFTER_S.len()],
    /// Under which key this host remembers the test's re-checks (`memory`), and what it
    /// remembered when the test began.
    key: Option<String>,
    prior: Option<memory::Evidence>,
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new(&CANDIDATES)
    }
}

impl Pool {
    /// A pool of senders that choose among `candidates`, each test on its own.
    pub fn new(candidates: &'static Candidates) -> Pool {
        Pool {
            candidates,
            bytes: Default::default(),
            calls: Default::default(),
            decision: OnceLock::new(),
            rechecks: Default::default(),
            key: None,
            prior: None,
        }
    }

    /// A pool that uses and adds to what this process remembers under `key` (`memory`): with
    /// a confident record, the record picks the path after the calibration and re-checks
    /// judge on the pooled evidence.
    pub fn remembering(candidates: &'static Candidates, key: String) -> Pool {
        Pool {
            prior: memory::recall(&key, candidates),
            key: Some(key),
            ..Pool::new(candidates)
        }
    }

    /// The paths this test's senders choose among.
    pub fn candidates(&self) -> &'static Candidates {
        self.candidates
    }

    /// The earlier tests whose re-checks chose this test's path, when the record decided.
    pub fn remembered_tests(&self) -> Option<usize> {
        self.prior
            .as_ref()
            .filter(|p| p.confident())
            .map(memory::Evidence::tests)
    }

    /// Whether the test's first re-check tries every candidate: unless the host's record is
    /// confident and measured them all lately (`memory::Evidence::pair_suffices`).
    pub fn first_full(&self) -> bool {
        !self
            .prior
            .as_ref()
            .is_some_and(memory::Evidence::pair_suffices)
    }

    /// What a first re-check of two tries against `kept`: the record's next best.
    pub fn record_runner_up(&self, kept: SendPath) -> Option<SendPath> {
        self.prior.as_ref()?.runner_up(kept)
    }

    /// One call of `bytes` that started in candidate `idx`'s measured time.
    pub fn record(&self, idx: usize, bytes: u64) {
        if let (Some(b), Some(c)) = (self.bytes.get(idx), self.calls.get(idx)) {
            b.fetch_add(bytes, Ordering::Relaxed);
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The path the host's record ranks first, once it is confident (`memory::Evidence::best`):
    /// the senders send on it through the calibration's time instead of trying every
    /// candidate, whose turns the record would overrule anyway.
    ///
    /// Why (2026-11-28, one stream on loopback, 2-vCPU Intel Xeon VM, kernel 6.18, bbr): with a
    /// confident record the default ended on write 1 MiB, as `--no-zerocopy` does, yet carried
    /// 0.88-0.94x of it in interleaved rounds, steady windows included; neither the re-checks,
    /// the sendfile turns, the sender's buffer nor the threads' placement made the difference;
    /// sending on the record's pick from the start carried 1.00x (docs/performance.md, "One
    /// stream against its own variants again").
    pub fn remembered_best(&self) -> Option<SendPath> {
        self.prior.as_ref().and_then(memory::Evidence::best)
    }

    /// The path every stream keeps after a calibration of `total`, and the trials that chose it
    /// (none when the record chose without one, `remembered_best`).
    pub fn decision(&self, total: std::time::Duration) -> &(SendPath, Vec<Trial>) {
        self.decision.get_or_init(|| {
            let measured: [(u64, u64); CANDIDATES.len()] = std::array::from_fn(|i| {
                (
                    self.bytes[i].load(Ordering::Relaxed),
                    self.calls[i].load(Ordering::Relaxed),
                )
            });
            let best = self.remembered_best();
            match best {
                Some(b) if measured.iter().all(|(_, calls)| *calls == 0) => (b, Vec::new()),
                _ => {
                    let (path, trials) = decide(self.candidates, measured, total);
                    (best.unwrap_or(path), trials)
                }
            }
        })
    }

    /// One call of `bytes` that started in the measured time of re-check `k`'s path `who`.
    pub fn record_recheck(&self, k: usize, who: usize, bytes: u64) {
        if let Some(r) = self.rechecks.get(k)
            && let (Some(b), Some(c)) = (r.bytes.get(who), r.calls.get(who))
        {
            b.fetch_add(bytes, Ordering::Relaxed);
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The verdict of re-check `k` of `paths` (the kept one first), made once on what every
    /// stream wrote (the first stream past its end decides, as with the calibration).
    pub fn recheck(&self, k: usize, paths: &[SendPath]) -> Option<&Recheck> {
        let r = self.rechecks.get(k)?;
        Some(r.verdict.get_or_init(|| {
            let measured: Vec<(u64, u64)> = (0..paths.len().min(CANDIDATES.len()))
                .map(|i| {
                    (
                        r.bytes[i].load(Ordering::Relaxed),
                        r.calls[i].load(Ordering::Relaxed),
                    )
                })
                .collect();
            let verdict = judge(k, paths, &measured);
            let observed = if paths.len() == self.candidates.len() {
                memory::Observation::of(self.candidates, &verdict.trials)
            } else {
                memory::Observation::of_pair(&verdict.trials)
            };
            let verdict = match self.prior.as_ref().filter(|p| p.confident()) {
                Some(prior) => pooled(verdict, prior, observed.as_ref()),
                None => verdict,
            };
            if let (Some(key), Some(o)) = (&self.key, observed) {
                memory::remember(key, o);
            }
            verdict
        }))
    }
}

/// A re-check's verdict judged again on the pooled evidence of earlier tests and this one
/// (`observed`, its turns as `memory` records them): the kept path stays unless the pooled
/// difference puts another `memory::POOLED_MARGIN` ahead.
fn pooled(
    verdict: Recheck,
    prior: &memory::Evidence,
    observed: Option<&memory::Observation>,
) -> Recheck {
    let Some(first) = verdict.trials.first().map(|t| t.path) else {
        return verdict;
    };
    let kept = if verdict.trials.len() == 2 {
        let challenger = verdict.trials[1].path;
        let this_test = observed.and_then(|o| memory::difference(o, first, challenger));
        if prior.prefers(first, challenger, this_test) {
            challenger
        } else {
            first
        }
    } else {
        let mut all = prior.clone();
        if let Some(o) = observed {
            all.add(o);
        }
        match all.best() {
            Some(best) if best != first && all.prefers(first, best, None) => best,
            _ => first,
        }
    };
    Recheck {
        kept,
        switched: kept != first,
        by_record: true,
        ..verdict
    }
}

/// After the calibration, seconds at which a re-check starts (counted from the calibration's
/// end), as long as it ends inside the test: the gaps grow, so a long test re-checks rarely.
pub const RECHECK_AFTER_S: [f64; 4] = [0.7, 3.0, 9.0, 27.0];

/// One turn of a re-check, measured in its last two thirds as the calibration's are.
pub const RECHECK_TURN_S: f64 = 0.075;

/// How much faster another path must be to replace the kept one: above the turn-to-turn noise
/// of loopback rates (a few percent at 100 ms), so two equal paths do not trade places.
pub const SWITCH_MARGIN: f64 = 0.05;

/// How many paths re-check `k` tries: the first one every candidate (the calibration ranked
/// them on a young connection) unless `full` is false (the host's record ranks them,
/// `Pool::first_full`), later ones the kept path and a runner-up.
pub fn contenders(k: usize, full: bool) -> usize {
    if k == 0 && full { CANDIDATES.len() } else { 2 }
}

/// When re-check `k` runs, in seconds after the calibration: its start and end (two turns per
/// contender; `full` as `contenders`).
pub fn recheck_span(k: usize, full: bool) -> Option<(f64, f64)> {
    let start = *RECHECK_AFTER_S.get(k)?;
    Some((
        start,
        start + RECHECK_TURN_S * 2.0 * contenders(k, full) as f64,
    ))
}

/// Which re-check's turn it is `since` the calibration ended, whose turn (an index into
/// `paths_of`'s list: 0 is the kept path; the order is mirrored, kept first and last) and
/// whether that moment is measured. `None` between re-checks.
pub fn recheck_turn(since: std::time::Duration, full: bool) -> Option<(usize, usize, bool)> {
    let t = since.as_secs_f64();
    let k = (0..RECHECK_AFTER_S.len())
        .find(|&k| recheck_span(k, full).is_some_and(|(a, b)| t >= a && t < b))?;
    let (start, _) = recheck_span(k, full)?;
    let n = contenders(k, full);
    let share = (t - start) / RECHECK_TURN_S;
    let turn = (share as usize).min(2 * n - 1);
    let who = if turn < n { turn } else { 2 * n - 1 - turn };
    Some((k, who, share.fract() >= 1.0 - MEASURED_SHARE))
}

/// The paths re-check `k` tries, the kept one first: every candidate in the first (when `full`),
/// the kept path and `runner_up` otherwise (none without a runner-up).
pub fn paths_of(
    candidates: &Candidates,
    k: usize,
    full: bool,
    kept: SendPath,
    runner_up: Option<SendPath>,
) -> Vec<SendPath> {
    if k == 0 && full {
        std::iter::once(kept)
            .chain(candidates.iter().copied().filter(|c| *c != kept))
            .collect()
    } else {
        runner_up.map_or_else(Vec::new, |r| vec![kept, r])
    }
}

/// What one re-check found on the warm connection: each path it tried (the kept one first), the
/// path kept after it, and whether that is another one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recheck {
    /// When it started, in seconds after the calibration ended.
    pub after_s: f64,
    pub trials: Vec<Trial>,
    pub kept: SendPath,
    pub switched: bool,
    /// Judged on the host's record of earlier tests with this one's turns (`memory`), not on
    /// this test's turns alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_record: bool,
}

impl Recheck {
    /// The fastest path it measured other than the one kept: what later re-checks try against it.
    pub fn runner_up(&self) -> Option<SendPath> {
        self.trials
            .iter()
            .filter(|t| t.path != self.kept)
            .filter_map(|t| Some((t.path, t.bits_per_second.filter(|r| r.is_finite())?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(p, _)| p)
    }
}

/// Judges re-check `k` of `paths` (the kept one first) from the bytes and calls of each one's
/// measured time: the fastest takes over if it carried more than `SWITCH_MARGIN` more than the
/// kept path; an unmeasured kept path, or none faster, changes nothing.
pub fn judge(k: usize, paths: &[SendPath], measured: &[(u64, u64)]) -> Recheck {
    let secs = RECHECK_TURN_S * MEASURED_SHARE * 2.0;
    let trials: Vec<Trial> = paths
        .iter()
        .zip(measured)
        .map(|(p, (bytes, calls))| Trial::of(*p, *bytes, *calls, secs))
        .collect();
    let rate = |t: &Trial| t.bits_per_second.filter(|r| r.is_finite());
    let kept_rate = trials.first().and_then(rate);
    let fastest = trials
        .iter()
        .filter_map(|t| Some((t.path, rate(t)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let first = paths.first().copied().unwrap_or(CANDIDATES[0]);
    let kept = match (kept_rate, fastest) {
        (Some(k), Some((p, r))) if r > k * (1.0 + SWITCH_MARGIN) => p,
        _ => first,
    };
    Recheck {
        // The start does not depend on how many paths it tries.
        after_s: recheck_span(k, true).map_or(0.0, |s| s.0),
        trials,
        kept,
        switched: kept != first,
        by_record: false,
    }
}

/// The sums of one re-check, across the sending streams of a test, and its one verdict.
#[derive(Debug, Default)]
struct RecheckPool {
    bytes: [AtomicU64; CANDIDATES.len()],
    calls: [AtomicU64; CANDIDATES.len()],
    verdict: OnceLock<Recheck>,
}

/// What a sender reports about its send path: the one it used after calibration (or the one
/// given), the trials that chose it, and its system calls in the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SendReport {
    pub path: Option<SendPath>,
    pub trials: Vec<Trial>,
    /// The re-checks on the warm connection, in order; the last switch names `path`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rechecks: Vec<Recheck>,
    /// When this host's record of earlier tests to the peer chose the path after calibration
    /// (`memory`): how many tests' re-checks it rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered_tests: Option<u64>,
    /// Send system calls after calibration, and the bytes they moved.
    pub calls: u64,
    pub bytes: u64,
    /// The send buffer set instead of the kernel's autotuning (`sndbuf`), bytes as the kernel
    /// reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn trials(rates: &[f64]) -> Vec<Trial> {
        rates
            .iter()
            .zip(CANDIDATES)
            .map(|(r, path)| Trial {
                path,
                bits_per_second: Some(*r),
                calls: 100,
            })
            .collect()
    }

    #[test]
    fn a_candidate_whose_calls_outlast_its_turns_has_no_rate_and_is_passed_over() {
        // 100 Mbit/s path: 1 MiB calls take 84 ms, longer than a 40 ms turn.
        let secs = measured_seconds(Duration::from_millis(300));
        let slow = Trial::of(CANDIDATES[1], 1 << 20, 1, secs);
        assert_eq!(slow.bits_per_second, None);
        let fine = Trial::of(CANDIDATES[0], 10 * 65536, 10, secs);
        let rate = fine.bits_per_second.unwrap();
        assert!((rate - 10.0 * 65536.0 * 8.0 / secs).abs() < 1e-6);
        assert_eq!(choose(&[slow, fine]), Some(1));
        assert_eq!(choose(&[slow]), None);
        // What the JSON says of it.
        let json = serde_json::to_value(slow).unwrap();
        assert!(json["bits_per_second"].is_null(), "{json}");
    }

    #[test]
    fn the_fastest_wins_unless_a_cheaper_one_ties() {
        // Machine B of the module notes: write 4 MiB clearly ahead.
        assert_eq!(choose(&trials(&[25e9, 20e9, 35e9, 39e9])), Some(3));
        // Machine A: sendfile 64 KiB ahead.
        assert_eq!(choose(&trials(&[40e9, 18e9, 28e9, 34e9])), Some(0));
        // A path-limited WAN: all alike, the cheapest is kept.
        assert_eq!(choose(&trials(&[9.4e8, 9.5e8, 9.45e8, 9.5e8])), Some(0));
        assert_eq!(choose(&trials(&[0.0, 0.0, 0.0, 0.0])), None);
        assert_eq!(
            choose(&trials(&[f64::NAN, 1e9, f64::INFINITY, 2e9])),
            Some(3)
        );
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn streams_of_a_test_pool_their_calibration_and_keep_one_path() {
        let total = Duration::from_millis(300);
        let secs = measured_seconds(total);
        let pool = Pool::default();
        // Stream 1 alone would keep sendfile 64 KiB (candidate 0): 10 GB/s against 9.
        // Stream 2 writes far more with write 4 MiB (candidate 3): the sum decides.
        let per_sec = |gbytes: f64| (gbytes * 1e9 * secs) as u64;
        pool.record(0, per_sec(10.0));
        pool.record(3, per_sec(9.0));
        for _ in 0..3 {
            pool.record(0, 0);
            pool.record(3, 0);
        }
        pool.record(0, per_sec(2.0));
        pool.record(3, per_sec(8.0));
        let (path, trials) = pool.decision(total).clone();
        assert_eq!(path, CANDIDATES[3]);
        assert_eq!(trials.len(), CANDIDATES.len());
        assert_eq!(trials[0].calls, 5);
        let rate = trials[3].bits_per_second.unwrap();
        assert!((rate - 17e9 * 8.0).abs() / rate < 1e-6, "{rate}");
        // Candidates nobody measured have no rate; the decision is made once.
        assert_eq!(trials[1].bits_per_second, None);
        pool.record(0, per_sec(100.0));
        assert_eq!(pool.decision(total).0, CANDIDATES[3]);
        // Out-of-range candidates are ignored rather than panicking.
        pool.record(CANDIDATES.len(), 1);
    }

    /// A confident record's pick is sent from the start: the decision names it with no trials
    /// when nobody calibrated, and a pool without a confident record has no pick to send.
    #[test]
    fn a_confident_record_is_sent_from_the_start_without_calibration_turns() {
        let total = Duration::from_millis(300);
        let mut ev = memory::Evidence::default();
        assert_eq!(Pool::default().remembered_best(), None, "no record");
        // Write 1 MiB (candidate 2) leads in every test.
        for _ in 0..memory::CONFIDENT {
            let pool = Pool {
                prior: Some(ev.clone()),
                ..Pool::default()
            };
            assert_eq!(pool.remembered_best(), None, "not yet confident");
            ev.add(
                &memory::Observation::of(&CANDIDATES, &trials(&[20e9, 25e9, 60e9, 45e9])).unwrap(),
            );
        }
        let pool = Pool {
            prior: Some(ev.clone()),
            ..Pool::default()
        };
        assert_eq!(pool.remembered_best(), Some(CANDIDATES[2]));
        let (path, trials_run) = pool.decision(total).clone();
        assert_eq!(path, CANDIDATES[2]);
        assert!(trials_run.is_empty(), "no calibration ran: {trials_run:?}");
        // Where streams did calibrate, their turns are reported and the record still decides.
        let pool = Pool {
            prior: Some(ev),
            ..Pool::default()
        };
        pool.record(0, 1 << 30);
        let (path, trials_run) = pool.decision(total).clone();
        assert_eq!(path, CANDIDATES[2]);
        assert_eq!(trials_run.len(), CANDIDATES.len());
    }

    fn kept_path() -> SendPath {
        CANDIDATES[2]
    }

    #[test]
    fn the_first_recheck_tries_every_path_mirrored_and_later_ones_two() {
        let at = |ms: u64| recheck_turn(Duration::from_millis(ms), true);
        assert_eq!(at(0), None);
        assert_eq!(at(699), None);
        // 0.7 s: eight turns of 75 ms, kept first: 0 1 2 3 3 2 1 0.
        assert_eq!(at(700), Some((0, 0, false)));
        assert_eq!(at(760), Some((0, 0, true)));
        assert_eq!(at(820), Some((0, 1, true)));
        assert_eq!(at(960), Some((0, 3, true)));
        assert_eq!(at(990), Some((0, 3, true)));
        assert_eq!(at(1060), Some((0, 3, true)));
        assert_eq!(at(1120), Some((0, 2, true)));
        assert_eq!(at(1290), Some((0, 0, true)));
        let (a, b) = recheck_span(0, true).unwrap();
        assert!((a - 0.7).abs() < 1e-9 && (b - 1.3).abs() < 1e-9, "{a} {b}");
        assert_eq!(at(1310), None);
        // 3 s: kept, runner-up, runner-up, kept.
        assert_eq!(at(3000), Some((1, 0, false)));
        assert_eq!(at(3110), Some((1, 1, true)));
        assert_eq!(at(3190), Some((1, 1, true)));
        assert_eq!(at(3290), Some((1, 0, true)));
        assert_eq!(at(3310), None);
        assert_eq!(at(27_120), Some((3, 1, true)));
        assert_eq!(at(60_000), None);
        assert_eq!(recheck_span(RECHECK_AFTER_S.len(), true), None);
        // With the record's ranking the first re-check tries two: kept, runner-up, runner-up,
        // kept, from 0.7 s to 1.0 s; the later ones keep their times.
        let two = |ms: u64| recheck_turn(Duration::from_millis(ms), false);
        assert_eq!(two(760), Some((0, 0, true)));
        assert_eq!(two(900), Some((0, 1, true)));
        assert_eq!(two(990), Some((0, 0, true)));
        assert_eq!(two(1010), None);
        assert_eq!(two(3110), Some((1, 1, true)));
        assert_eq!(
            paths_of(&CANDIDATES, 0, false, kept_path(), Some(CANDIDATES[1])),
            [kept_path(), CANDIDATES[1]]
        );
        let kept = kept_path();
        let all = paths_of(&CANDIDATES, 0, true, kept, None);
        assert_eq!(all.len(), CANDIDATES.len());
        assert_eq!(all[0], kept);
        assert!(CANDIDATES.iter().all(|c| all.contains(c)));
        assert_eq!(
            paths_of(&CANDIDATES, 1, true, kept, Some(CANDIDATES[0])),
            [kept, CANDIDATES[0]]
        );
        assert!(paths_of(&CANDIDATES, 2, true, kept, None).is_empty());
    }

    #[test]
    fn another_path_takes_over_only_when_clearly_faster_and_streams_share_the_verdict() {
        let secs = RECHECK_TURN_S * MEASURED_SHARE * 2.0;
        let bytes = |gbit: f64| (gbit * 1e9 / 8.0 * secs) as u64;
        // Loopback, warm, -P 2 (2026-11-27): write 1 MiB 55 Gbit/s, write 4 MiB 44, sendfile
        // 1 MiB 42, sendfile 64 KiB 40; the young connection's calibration kept write 4 MiB.
        let paths = paths_of(&CANDIDATES, 0, true, CANDIDATES[3], None);
        let rates = [44.0, 40.0, 42.0, 55.0];
        let measured: Vec<(u64, u64)> = rates.iter().map(|g| (bytes(*g), 100)).collect();
        let r = judge(0, &paths, &measured);
        assert!(r.switched, "{r:?}");
        assert_eq!(r.kept, CANDIDATES[2]);
        assert_eq!(r.after_s, 0.7);
        assert_eq!(r.runner_up(), Some(CANDIDATES[3]));
        assert!((r.trials[3].bits_per_second.unwrap() - 55e9).abs() < 1e7);
        // Within the margin: the kept path stays, and the fastest other is the runner-up.
        let m = [(bytes(40.0), 100), (bytes(41.9), 100)];
        let r = judge(1, &[CANDIDATES[1], CANDIDATES[2]], &m);
        assert!(!r.switched && r.kept == CANDIDATES[1], "{r:?}");
        assert_eq!(r.runner_up(), Some(CANDIDATES[2]));
        // A kept path too few calls measured: nothing changes.
        let m = [(bytes(10.0), 2), (bytes(40.0), 100)];
        let r = judge(1, &[CANDIDATES[1], CANDIDATES[2]], &m);
        assert!(!r.switched && r.trials[0].bits_per_second.is_none());
        // Streams add up; the verdict is made once.
        let pool = Pool::default();
        let two = [CANDIDATES[1], CANDIDATES[2]];
        pool.record_recheck(1, 0, bytes(20.0));
        pool.record_recheck(1, 1, bytes(30.0));
        for _ in 0..10 {
            pool.record_recheck(1, 0, 0);
            pool.record_recheck(1, 1, 0);
        }
        pool.record_recheck(1, 0, bytes(20.0));
        pool.record_recheck(1, 1, bytes(2.0));
        let v = pool.recheck(1, &two).unwrap().clone();
        assert!(!v.switched, "{v:?}");
        pool.record_recheck(1, 1, bytes(100.0));
        assert_eq!(pool.recheck(1, &two), Some(&v));
        // Out of range: nothing, no panic.
        pool.record_recheck(9, 0, 1);
        pool.record_recheck(1, CANDIDATES.len(), 1);
        assert_eq!(pool.recheck(9, &two), None);
    }

    #[test]
    fn a_warm_up_comes_first_then_turns_are_mirrored_and_measure_their_last_two_thirds() {
        let total = Duration::from_millis(400);
        // 80 ms of warm-up on the first candidate, measured for none.
        assert_eq!(turn(Duration::ZERO, total), Some((0, false)));
        assert_eq!(turn(Duration::from_millis(60), total), Some((0, false)));
        assert_eq!(turn(Duration::from_millis(79), total), Some((0, false)));
        // Then eight turns of 40 ms: 0 1 2 3 3 2 1 0.
        let at = |ms: u64| turn(Duration::from_millis(80 + ms), total);
        assert_eq!(at(0), Some((0, false)));
        assert_eq!(at(20), Some((0, true)));
        assert_eq!(at(41), Some((1, false)));
        assert_eq!(at(150), Some((3, true)));
        assert_eq!(at(170), Some((3, false)));
        assert_eq!(at(190), Some((3, true)));
        assert_eq!(at(319), Some((0, true)));
        assert_eq!(turn(total, total), None);
        assert_eq!(turn(Duration::ZERO, Duration::ZERO), None);
        // Each candidate: two turns of 40 ms, two thirds measured.
        assert!((measured_seconds(total) - 0.08 * 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn against_iperf3s_receivers_the_senders_try_its_block() {
        let netsweep = memory::Receivers::Netsweep { skip_rx_copy: true };
        assert_eq!(candidates(netsweep), &CANDIDATES);
        let c = candidates(memory::Receivers::Iperf3);
        let block = SendPath {
            call: SendCall::Write,
            chunk_bytes: 128 << 10,
        };
        assert!(c.contains(&block) && !CANDIDATES.contains(&block));
        // The path as given (sendfile of the 1 MiB default) is one of them, so a live choice
        // that starts on it re-checks it against the rest.
        let given = SendPath {
            call: SendCall::Sendfile,
            chunk_bytes: 1 << 20,
        };
        let all = paths_of(c, 0, true, given, None);
        assert_eq!(all.len(), c.len());
        assert_eq!(all[0], given);
        assert!(c.iter().all(|p| all.contains(p)), "{all:?}");
        // A pool calibrating among them keeps what they measured (the block here).
        let pool = Pool::new(c);
        let total = Duration::from_millis(300);
        for (i, rate) in [20.0, 30.0, 34.0, 43.0].into_iter().enumerate() {
            let bytes = rate * 1e9 / 8.0 * measured_seconds(total);
            for _ in 0..10 {
                pool.record(i, (bytes / 10.0) as u64);
            }
        }
        assert_eq!(pool.decision(total).0, block);
    }
}
