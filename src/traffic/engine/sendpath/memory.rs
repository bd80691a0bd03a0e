//! What this host learned about its send paths in earlier tests to the same peer, so that the
//! default's choice rests on many measurements rather than one test's few 75 ms turns.
//!
//! # Why (2026-11-27, loopback, one stream, 2-core AMD EPYC VM, Linux 6.18)
//! The calibration ranks the paths on a young connection, where they rank otherwise than
//! later; the first warm re-check (`sendpath`) gives every candidate two 75 ms turns, and those
//! turns are noisy on a shared VM: one re-check read write 4 MiB at 56.4 Gbit/s and write
//! 1 MiB at 44.5 where their medians, fixed, are 32 and 43. So about a third of one-stream
//! tests ended on a slower path, and the default carried 0.88-0.92x its best fixed path
//! (docs/performance.md), short of the 0.95x it must reach.
//!
//! # How
//! Each test's first warm re-check measures every candidate; its rates, as logarithms less
//! their mean (so a test's overall speed, which drifts between tests, cancels), are one
//! `Observation`; each later re-check, of the kept path and its runner-up, is another, of that
//! pair only. A host keeps the last `KEEP` of them per peer, stream count and receive mode
//! (`key`) and pools them pair by pair (`Evidence`). Once `CONFIDENT` tests have compared every
//! pair, a test sends on the path with the highest mean lead from its start, without the
//! calibration's turns (`Pool::remembered_best`: they cost the rest of the test under bbr), and
//! its re-checks judge on the pooled evidence: a path takes over when the earlier
//! tests and this one together put it `POOLED_MARGIN` ahead of the kept one.
//! Such a test's first re-check then tries the kept path and the record's runner-up alone, as
//! later ones do, unless the record's newest measurement of every candidate is more than
//! `FULL_AFTER` observations old (`Evidence::pair_suffices`): the turns on the slow paths cost a
//! one-stream test 3-4% of 5 s here, where the record already ranks them.
//! A mean over many tests' turns has the noise of one turn divided by the square root of their
//! number, so a small margin serves. The host still re-measures in every test, so a change of
//! the host (a kernel, a NIC, a sysctl) moves the choice within `KEEP` tests, and a single
//! test's strong evidence can still switch when it outweighs the record.
//!
//! Pure: the process's memory is filled and saved by its owner (`app`), which decides whether
//! a process remembers at all (`enable`); a process that never enables it, such as the library's
//! tests, chooses as before from its own test alone.

use super::{CANDIDATES, Candidates, SendPath, Trial};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Observations kept per key: the newest ones.
pub const KEEP: usize = 48;
/// Observations of every candidate before the record decides.
pub const CONFIDENT: usize = 4;
/// Observations (two or three a 5-10 s test) after which a test's first re-check measures
/// every candidate again (`Evidence::pair_suffices`): one test in three or four.
pub const FULL_AFTER: usize = 6;
/// How far ahead (as a rate ratio) the pooled evidence must put a path to take over.
pub const POOLED_MARGIN: f64 = 0.02;
/// Keys kept in a memory: the most recently used.
pub const MAX_KEYS: usize = 64;

/// One re-check: each path it measured, with its rate as `ln(rate)` less the mean of them all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub paths: Vec<(SendPath, f64)>,
}

impl Observation {
    /// The observation of `trials`, if every one of `candidates` was measured.
    pub fn of(candidates: &Candidates, trials: &[Trial]) -> Option<Observation> {
        let logs: Vec<(SendPath, f64)> = candidates
            .iter()
            .map(|c| {
                let t = trials.iter().find(|t| t.path == *c)?;
                let r = t.bits_per_second.filter(|r| r.is_finite() && *r > 0.0)?;
                Some((*c, r.ln()))
            })
            .collect::<Option<_>>()?;
        let mean = logs.iter().map(|(_, l)| l).sum::<f64>() / logs.len() as f64;
        Some(Observation {
            paths: logs.into_iter().map(|(p, l)| (p, l - mean)).collect(),
        })
    }

    /// The observation of a later re-check's two paths (the kept one and its runner-up).
    pub fn of_pair(trials: &[Trial]) -> Option<Observation> {
        let d = log_ratio(trials)?;
        let (a, b) = (trials.first()?.path, trials.get(1)?.path);
        Some(Observation {
            paths: vec![(a, -d / 2.0), (b, d / 2.0)],
        })
    }

    fn of_path(&self, p: SendPath) -> Option<f64> {
        self.paths.iter().find(|(q, _)| *q == p).map(|(_, l)| *l)
    }
}

/// The observations of one key, newest last.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub observations: Vec<Observation>,
    /// Seconds since the Unix epoch of the last observation (which keys to drop first).
    #[serde(default)]
    pub updated_s: u64,
}

/// The pooled evidence of earlier tests, pair by pair: for each ordered pair of candidates
/// `(a, b)`, the sum of `ln(rate b / rate a)` over the observations that measured both, and
/// their number. An observation of every candidate (the first re-check) adds to every pair; one
/// of two (a later re-check: the kept path and its runner-up) adds to the pair that was in
/// question.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// The paths compared: an observation's other paths are left out.
    candidates: &'static Candidates,
    sum: [[f64; CANDIDATES.len()]; CANDIDATES.len()],
    count: [[usize; CANDIDATES.len()]; CANDIDATES.len()],
    /// Observations since the newest of every candidate (`None` when there is none).
    since_full: Option<usize>,
}

impl Default for Evidence {
    fn default() -> Evidence {
        Evidence::new(&CANDIDATES)
    }
}

impl Evidence {
    /// No evidence yet about `candidates`.
    pub fn new(candidates: &'static Candidates) -> Evidence {
        Evidence {
            candidates,
            sum: Default::default(),
            count: Default::default(),
            since_full: None,
        }
    }

    pub fn of(candidates: &'static Candidates, observations: &[Observation]) -> Evidence {
        let mut e = Evidence::new(candidates);
        for o in observations {
            e.add(o);
        }
        e
    }

    fn index(&self, p: SendPath) -> Option<usize> {
        self.candidates.iter().position(|c| *c == p)
    }

    pub fn add(&mut self, o: &Observation) {
        self.since_full = if o.paths.len() == self.candidates.len() {
            Some(0)
        } else {
            self.since_full.map(|n| n + 1)
        };
        let known: Vec<(usize, f64)> = o
            .paths
            .iter()
            .filter(|(_, l)| l.is_finite())
            .filter_map(|(p, l)| Some((self.index(*p)?, *l)))
            .collect();
        for &(a, la) in &known {
            for &(b, lb) in &known {
                if a != b {
                    self.sum[a][b] += lb - la;
                    self.count[a][b] += 1;
                }
            }
        }
    }

    /// How many tests compared every candidate with every other (the fewest of any pair).
    pub fn tests(&self) -> usize {
        (0..self.candidates.len())
            .flat_map(|a| {
                (0..self.candidates.len())
                    .filter(move |b| *b != a)
                    .map(move |b| (a, b))
            })
            .map(|(a, b)| self.count[a][b])
            .min()
            .unwrap_or(0)
    }

    /// Whether there is enough to decide on.
    pub fn confident(&self) -> bool {
        self.tests() >= CONFIDENT
    }

    /// The mean of `ln(rate b / rate a)`.
    fn lead(&self, a: usize, b: usize) -> Option<f64> {
        let n = self.count[a][b];
        (n > 0).then(|| self.sum[a][b] / n as f64)
    }

    /// A candidate's mean lead over the others summed: with observations of every candidate,
    /// `n` times its logarithm less their mean (the leads over the others sum to
    /// `(n - 1) l_c - sum of the others' l = n l_c`, the `l` summing to zero).
    fn score(&self, c: usize) -> f64 {
        (0..self.candidates.len())
            .filter(|o| *o != c)
            .map(|o| self.lead(o, c).unwrap_or(0.0))
            .sum::<f64>()
    }

    /// The path with the highest score; a cheaper one (earlier in `CANDIDATES`) whose score is
    /// within `POOLED_MARGIN` of it wins, as the calibration's `TIE` does. `None` until
    /// confident.
    pub fn best(&self) -> Option<SendPath> {
        if !self.confident() {
            return None;
        }
        let n = self.candidates.len() as f64;
        let top = (0..self.candidates.len())
            .map(|c| self.score(c))
            .fold(f64::NEG_INFINITY, f64::max);
        (0..self.candidates.len())
            .find(|c| (top - self.score(*c)) / n <= (1.0 + POOLED_MARGIN).ln())
            .map(|c| self.candidates[c])
    }

    /// Whether a test may begin its re-checks with the kept path and the record's runner-up
    /// alone (`sendpath::contenders`): the record is confident and measured every candidate
    /// within its last `FULL_AFTER` observations. Every candidate's first re-check costs the
    /// test its turns on the slow paths (3-4% of a 5 s one-stream test here, measured), and
    /// the record, once confident, already ranks them; a full one still comes every few tests,
    /// so a change of the host reaches the record.
    pub fn pair_suffices(&self) -> bool {
        self.confident() && self.since_full.is_some_and(|n| n < FULL_AFTER)
    }

    /// The path with the best score after `best`.
    pub fn runner_up(&self, best: SendPath) -> Option<SendPath> {
        (0..self.candidates.len())
            .filter(|c| self.candidates[*c] != best)
            .max_by(|a, b| self.score(*a).total_cmp(&self.score(*b)))
            .map(|c| self.candidates[c])
    }

    /// Whether `challenger` should replace `kept`, given this evidence and one more comparison
    /// of the two (`ln(challenger's rate / kept's rate)` in this test, if measured): the pooled
    /// mean of the pair's comparisons must exceed `POOLED_MARGIN`.
    pub fn prefers(&self, kept: SendPath, challenger: SendPath, this_test: Option<f64>) -> bool {
        let (Some(k), Some(c)) = (self.index(kept), self.index(challenger)) else {
            return false;
        };
        let n = self.count[k][c];
        let sum = self.sum[k][c];
        let (sum, weight) = match this_test.filter(|d| d.is_finite()) {
            Some(d) => (sum + d, n + 1),
            None => (sum, n),
        };
        weight > 0 && sum / weight as f64 > (1.0 + POOLED_MARGIN).ln()
    }
}

/// What a process remembers, by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub keys: BTreeMap<String, Record>,
}

impl Memory {
    /// Adds `o` under `key` at `now_s`, keeping the newest `KEEP` and the `MAX_KEYS` most
    /// recently updated keys.
    pub fn learn(&mut self, key: &str, o: Observation, now_s: u64) {
        let r = self.keys.entry(key.to_string()).or_default();
        r.observations.push(o);
        let over = r.observations.len().saturating_sub(KEEP);
        r.observations.drain(..over);
        r.updated_s = now_s;
        while self.keys.len() > MAX_KEYS {
            let oldest = self
                .keys
                .iter()
                .min_by_key(|(_, r)| r.updated_s)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.keys.remove(&k),
                None => break,
            };
        }
    }

    pub fn evidence(&self, key: &str, candidates: &'static Candidates) -> Evidence {
        self.keys.get(key).map_or_else(
            || Evidence::new(candidates),
            |r| Evidence::of(candidates, &r.observations),
        )
    }
}

/// Who receives what a test's senders send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receivers {
    /// netsweep's, copying the data or not (`--skip-rx-copy`).
    Netsweep { skip_rx_copy: bool },
    /// iperf3's (netsweep's client against an iperf3 server).
    Iperf3,
}

/// The key of a test's senders: the peer, the streams and the far end's receivers (each ranks
/// the paths its own way). Against netsweep's receivers one stream or several; against
/// iperf3's the number of streams, since there the best path moved with it (1 MiB writes best
/// at one and two streams, iperf3's 128 KiB block at eight: `super::IPERF3_CANDIDATES`).
/// A peer seen from a network namespace other than init's is that namespace's (`place`: its
/// name): every lab's far host is 198.18.0.2, behind its own rate, delay and NIC model, and a
/// VM trial found one record pooling its guests, other labs' hosts and emulated NICs.
pub fn key(
    peer: std::net::IpAddr,
    place: Option<&str>,
    streams: usize,
    receivers: Receivers,
) -> String {
    let peer = match place {
        Some(ns) => format!("{} in {ns}", peer.to_canonical()),
        None => peer.to_canonical().to_string(),
    };
    let several = if streams > 1 { "streams" } else { "stream" };
    match receivers {
        Receivers::Netsweep { skip_rx_copy } => format!(
            "{peer} {several} {}",
            if skip_rx_copy { "skip-rx-copy" } else { "copy" }
        ),
        Receivers::Iperf3 => format!("{peer} {streams} {several} iperf3"),
    }
}

/// This process's memory, and what it learned that is not saved yet.
struct Process {
    memory: Memory,
    unsaved: Vec<(String, Observation, u64)>,
}

/// `None` until its owner enables it.
static PROCESS: Mutex<Option<Process>> = Mutex::new(None);

/// Makes this process remember, starting from `m` (what an earlier process saved).
pub fn enable(m: Memory) {
    if let Ok(mut p) = PROCESS.lock() {
        *p = Some(Process {
            memory: m,
            unsaved: Vec::new(),
        });
    }
}

/// Saves what this process learned since its last save: `write` gets it (key, observation,
/// time) and returns the memory as saved, which this process then holds, with what it learned
/// while `write` ran. Nothing happens when the process does not remember or learned nothing.
/// Observations are added in the order learned to what the file holds, so the newest `KEEP`
/// per key are kept whichever process saved them, and none is saved twice.
pub fn save_with<E>(
    write: impl FnOnce(&[(String, Observation, u64)]) -> Result<Memory, E>,
) -> Result<(), E> {
    let fresh = match PROCESS.lock() {
        Ok(mut p) => match p.as_mut() {
            Some(p) => std::mem::take(&mut p.unsaved),
            None => return Ok(()),
        },
        Err(_) => return Ok(()),
    };
    if fresh.is_empty() {
        return Ok(());
    }
    let saved = match write(&fresh) {
        Ok(m) => m,
        Err(e) => {
            // Kept for the next save.
            if let Ok(mut p) = PROCESS.lock()
                && let Some(p) = p.as_mut()
            {
                let later = std::mem::replace(&mut p.unsaved, fresh);
                p.unsaved.extend(later);
                // A place that stays unwritable must not make a long-running server grow.
                let over = p.unsaved.len().saturating_sub(KEEP * MAX_KEYS);
                p.unsaved.drain(..over);
            }
            return Err(e);
        }
    };
    if let Ok(mut p) = PROCESS.lock()
        && let Some(p) = p.as_mut()
    {
        let mut memory = saved;
        for (k, o, t) in &p.unsaved {
            memory.learn(k, o.clone(), *t);
        }
        p.memory = memory;
    }
    Ok(())
}

/// The evidence of earlier tests under `key` about `candidates` (`None`: this process does not
/// remember).
pub fn recall(key: &str, candidates: &'static Candidates) -> Option<Evidence> {
    PROCESS
        .lock()
        .ok()
        .and_then(|p| p.as_ref().map(|p| p.memory.evidence(key, candidates)))
}

/// Records one test's observation under `key`, if this process remembers.
pub fn remember(key: &str, o: Observation) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if let Ok(mut p) = PROCESS.lock()
        && let Some(p) = p.as_mut()
    {
        p.memory.learn(key, o.clone(), now);
        p.unsaved.push((key.to_string(), o, now));
    }
}

/// `ln(rate of paths[1] / rate of paths[0])` among `trials`, when both were measured.
fn log_ratio(trials: &[Trial]) -> Option<f64> {
    let rate = |t: &Trial| t.bits_per_second.filter(|r| r.is_finite() && *r > 0.0);
    let (a, b) = (rate(trials.first()?)?, rate(trials.get(1)?)?);
    Some((b / a).ln())
}

/// `ln(challenger's rate / kept's rate)` in one observation, when it measured both.
pub fn difference(o: &Observation, kept: SendPath, challenger: SendPath) -> Option<f64> {
    Some(o.of_path(challenger)? - o.of_path(kept)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trials(rates: [f64; 4]) -> Vec<Trial> {
        trials_of(&CANDIDATES, rates)
    }

    fn trials_of(candidates: &Candidates, rates: [f64; 4]) -> Vec<Trial> {
        candidates
            .iter()
            .zip(rates)
            .map(|(p, r)| Trial {
                path: *p,
                bits_per_second: Some(r),
                calls: 100,
            })
            .collect()
    }

    /// A seeded stream of noisy re-checks whose true ranking is write 1 MiB first: one test's
    /// turns pick it only some of the time, the pooled record every time once confident.
    #[test]
    fn pooled_noisy_rechecks_find_the_path_one_recheck_often_misses() {
        // True sustained rates of the module notes (Gbit/s): sendfile 64K, sendfile 1M,
        // write 1M, write 4M; each turn's reading off by a factor of up to +-25%.
        let truth = [30.5, 37.1, 43.1, 32.3];
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut uniform = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut mem = Memory::default();
        let (mut single_right, mut pooled_right, mut pooled_decided) = (0, 0, 0);
        for test in 0..200 {
            let rates = truth.map(|t| t * (0.75 + 0.5 * uniform()));
            let tr = trials(rates);
            let single = super::super::choose(&tr).map(|i| CANDIDATES[i]);
            single_right += usize::from(single == Some(CANDIDATES[2]));
            let ev = mem.evidence("k", &CANDIDATES);
            if let Some(best) = ev.best() {
                pooled_decided += 1;
                pooled_right += usize::from(best == CANDIDATES[2]);
            }
            mem.learn("k", Observation::of(&CANDIDATES, &tr).unwrap(), test);
        }
        assert!(single_right < 170, "one test alone: {single_right} of 200");
        assert_eq!(pooled_decided, 200 - CONFIDENT);
        assert!(
            pooled_right >= pooled_decided * 97 / 100,
            "pooled: {pooled_right} of {pooled_decided}"
        );
    }

    /// Once confident, a test's first re-check tries the record's best and runner-up alone,
    /// until `FULL_AFTER` observations of two have passed since one of every candidate.
    #[test]
    fn a_confident_record_spares_the_slow_paths_but_measures_them_all_now_and_then() {
        let mut mem = Memory::default();
        let full = Observation::of(&CANDIDATES, &trials([30.0, 37.0, 43.0, 32.0])).unwrap();
        for i in 0..CONFIDENT as u64 {
            assert!(!mem.evidence("k", &CANDIDATES).pair_suffices());
            mem.learn("k", full.clone(), i);
        }
        let ev = mem.evidence("k", &CANDIDATES);
        assert!(ev.pair_suffices());
        assert_eq!(ev.best(), Some(CANDIDATES[2]));
        assert_eq!(ev.runner_up(CANDIDATES[2]), Some(CANDIDATES[1]));
        let t = trials([30.0, 37.0, 43.0, 32.0]);
        let pair = Observation::of_pair(&[t[2], t[1]]).unwrap();
        for i in 0..FULL_AFTER as u64 {
            assert!(
                mem.evidence("k", &CANDIDATES).pair_suffices(),
                "after {i} pairs"
            );
            mem.learn("k", pair.clone(), 10 + i);
        }
        assert!(!mem.evidence("k", &CANDIDATES).pair_suffices());
        mem.learn("k", full, 20);
        assert!(mem.evidence("k", &CANDIDATES).pair_suffices());
    }

    #[test]
    fn an_observation_cancels_the_tests_overall_speed() {
        let slow = Observation::of(&CANDIDATES, &trials([10.0, 20.0, 40.0, 20.0])).unwrap();
        let fast = Observation::of(&CANDIDATES, &trials([20.0, 40.0, 80.0, 40.0])).unwrap();
        for (a, b) in slow.paths.iter().zip(&fast.paths) {
            assert!((a.1 - b.1).abs() < 1e-12);
        }
        let d = difference(&slow, CANDIDATES[0], CANDIDATES[2]).unwrap();
        assert!((d - 4.0f64.ln()).abs() < 1e-12);
        // One candidate unmeasured: no observation.
        let mut t = trials([1.0, 2.0, 3.0, 4.0]);
        t[3].bits_per_second = None;
        assert_eq!(Observation::of(&CANDIDATES, &t), None);
    }

    #[test]
    fn the_record_decides_only_when_confident_and_prefers_the_cheaper_on_a_tie() {
        let mut mem = Memory::default();
        for i in 0..CONFIDENT as u64 {
            assert_eq!(mem.evidence("k", &CANDIDATES).best(), None);
            // sendfile 64K and write 1M within 1%: the cheaper wins.
            mem.learn(
                "k",
                Observation::of(&CANDIDATES, &trials([40.0, 30.0, 40.3, 20.0])).unwrap(),
                i,
            );
        }
        let ev = mem.evidence("k", &CANDIDATES);
        assert_eq!(ev.tests(), CONFIDENT);
        assert_eq!(ev.best(), Some(CANDIDATES[0]));
        // One test's 6% for write 1M does not outweigh four tests' tie (pooled: 1.8%) ...
        assert!(!ev.prefers(CANDIDATES[0], CANDIDATES[2], Some(1.06f64.ln())));
        // ... a 30% one does, and nothing at all never switches.
        assert!(ev.prefers(CANDIDATES[0], CANDIDATES[2], Some(1.30f64.ln())));
        assert!(!Evidence::default().prefers(CANDIDATES[0], CANDIDATES[2], None));
        // The record says write 4M is half as fast: it never takes over.
        assert!(!ev.prefers(CANDIDATES[2], CANDIDATES[3], Some(1.2f64.ln())));
        // Later re-checks of the tied pair, each 8% for write 1M, add to that pair alone.
        for i in 0..4 {
            let mut pair = trials([40.0, 43.2, 0.0, 0.0]);
            pair[1].path = CANDIDATES[2];
            mem.learn("k", Observation::of_pair(&pair[..2]).unwrap(), 10 + i);
        }
        let ev = mem.evidence("k", &CANDIDATES);
        assert_eq!(ev.tests(), CONFIDENT, "pairs alone compare not every path");
        assert!(ev.prefers(CANDIDATES[0], CANDIDATES[2], None));
        assert_eq!(ev.best(), Some(CANDIDATES[2]));
    }

    #[test]
    fn a_memory_keeps_the_newest_observations_and_keys() {
        let o = |r: f64| Observation::of(&CANDIDATES, &trials([r, 1.0, 1.0, 1.0])).unwrap();
        let mut mem = Memory::default();
        for i in 0..(KEEP as u64 + 5) {
            mem.learn("k", o(1.0 + i as f64), i);
        }
        let r = &mem.keys["k"];
        assert_eq!(r.observations.len(), KEEP);
        assert_eq!(r.observations[0], o(6.0));
        for i in 0..(MAX_KEYS as u64 + 3) {
            mem.learn(&format!("peer{i}"), o(2.0), 1000 + i);
        }
        assert_eq!(mem.keys.len(), MAX_KEYS);
        assert!(
            !mem.keys.contains_key("k"),
            "the least recently used key goes first"
        );
        let skipping = Receivers::Netsweep { skip_rx_copy: true };
        assert_eq!(
            key("127.0.0.1".parse().unwrap(), None, 2, skipping),
            "127.0.0.1 streams skip-rx-copy"
        );
        // A dual-stack server sees an IPv4 client as IPv4-mapped: the same peer.
        let copying = Receivers::Netsweep {
            skip_rx_copy: false,
        };
        assert_eq!(
            key("::ffff:127.0.0.1".parse().unwrap(), None, 1, copying),
            "127.0.0.1 stream copy"
        );
        // Against iperf3's receivers each stream count has its own record.
        let lo = "127.0.0.1".parse().unwrap();
        assert_eq!(
            key(lo, None, 8, Receivers::Iperf3),
            "127.0.0.1 8 streams iperf3"
        );
        assert_eq!(
            key(lo, None, 1, Receivers::Iperf3),
            "127.0.0.1 1 stream iperf3"
        );
        assert_ne!(
            key(lo, None, 2, Receivers::Iperf3),
            key(lo, None, 2, copying)
        );
        // Each lab's far host is its own peer, though all of them are 198.18.0.2.
        let far = "198.18.0.2".parse().unwrap();
        assert_eq!(
            key(far, Some("nsw-seeds-a"), 1, skipping),
            "198.18.0.2 in nsw-seeds-a stream skip-rx-copy"
        );
        assert_ne!(
            key(far, Some("nsw-seeds-a"), 1, skipping),
            key(far, Some("nsw-nic-a"), 1, skipping)
        );
    }

    #[test]
    fn evidence_about_iperf3s_candidates_ranks_iperf3s_block() {
        // Against iperf3's receivers with eight streams (the measurements of
        // `IPERF3_CANDIDATES`): write 128 KiB ahead of write 1 MiB and sendfile 1 MiB.
        let c = &super::super::IPERF3_CANDIDATES;
        let tr = trials_of(c, [26.0, 34.0, 36.0, 43.0]);
        let mut mem = Memory::default();
        for t in 0..CONFIDENT as u64 {
            mem.learn("k", Observation::of(c, &tr).unwrap(), t);
        }
        let ev = mem.evidence("k", c);
        assert_eq!(ev.best(), Some(c[3]));
        assert_eq!(ev.runner_up(c[3]), Some(c[2]));
        // The same record read for netsweep's candidates knows nothing of the block's path.
        assert!(Observation::of(&CANDIDATES, &tr).is_none());
        assert_eq!(mem.evidence("k", &CANDIDATES).best(), None);
    }

    #[test]
    fn the_ratio_of_a_two_path_recheck() {
        let t = trials([10.0, 20.0, 1.0, 1.0]);
        assert!((log_ratio(&t).unwrap() - 2.0f64.ln()).abs() < 1e-12);
        assert_eq!(log_ratio(&t[..1]), None);
    }
}
