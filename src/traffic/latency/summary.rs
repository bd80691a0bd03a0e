//! From probe records to figures (pure). A probe belongs to the phase in which it was sent:
//! before the load started (idle), in a measured interval of the test (loaded), or in the
//! warm-up (`-O`, reported per interval only). Percentiles interpolate like R's default
//! (`stats::describe::quantile_sorted`). A probe with no echo by the end is lost; one whose
//! echo claimed an impossible hold is rejected (`prober`). A phase whose answers are too few
//! (under `MIN_ANSWERS`) or too small a share of its probes (more than `MAX_INVALID_SHARE` lost
//! or rejected) gets no percentiles, only a note saying why: what is left is the part of the
//! probes a drained or lying echo chose to answer, not the path's latency.

use super::prober::ProbeRecord;
use crate::analysis::stats::describe::quantile_sorted;
use crate::traffic::timeline::Timeline;
use serde::{Deserialize, Serialize};

/// A phase with fewer valid answers than this gets no percentiles.
pub const MIN_ANSWERS: usize = 5;
/// A phase (or interval) whose lost and rejected probes exceed this share of those sent gets
/// no percentiles.
pub const MAX_INVALID_SHARE: f64 = 0.5;

/// Why the answers of a phase of `sent` probes, `valid` of them answered believably, do not
/// make percentiles; `None` when they do. `min` is the fewest answers accepted.
fn unusable(sent: usize, valid: usize, min: usize) -> Option<String> {
    if valid < min {
        return Some(format!(
            "{valid} valid answers of {sent} probes, fewer than {min}"
        ));
    }
    let invalid = sent.saturating_sub(valid);
    (sent > 0 && invalid as f64 > MAX_INVALID_SHARE * sent as f64).then(|| {
        format!(
            "{invalid} of {sent} probes lost or rejected, more than {:.0}%",
            MAX_INVALID_SHARE * 100.0
        )
    })
}

/// The test's latency figures (JSON `latency`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyResult {
    pub probe_rate_hz: u32,
    /// Length of the idle baseline, seconds.
    pub idle_s: f64,
    pub idle_probes: u64,
    pub idle_p50_ms: Option<f64>,
    pub idle_p90_ms: Option<f64>,
    pub idle_p99_ms: Option<f64>,
    pub idle_max_ms: Option<f64>,
    pub loaded_probes: u64,
    pub loaded_p50_ms: Option<f64>,
    pub loaded_p90_ms: Option<f64>,
    pub loaded_p99_ms: Option<f64>,
    pub loaded_max_ms: Option<f64>,
    /// Loaded p50 minus idle p50: the queueing the load added.
    pub added_ms: Option<f64>,
    /// Probes of the idle and loaded phases with no echo, percent of those sent.
    pub probe_loss_percent: Option<f64>,
    pub probes_lost: u64,
    /// Echoes dropped because they claimed an impossible hold (longer than the round trip).
    #[serde(default)]
    pub probes_rejected: u64,
    /// Why figures are missing or what was dropped, one sentence each (printed as warnings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// One-way delay variation under load, relative to the lowest one-way delay of the test.
    pub forward: DelayVariation,
    pub reverse: DelayVariation,
    /// Loaded round trips at fixed quantiles, `[quantile, ms]`: the CDF the report draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_cdf: Vec<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_cdf: Vec<[f64; 2]>,
}

/// One direction's one-way delay above its minimum, under load.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DelayVariation {
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// One interval's probes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct IntervalLatency {
    pub rtt_p50_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    pub probes: u64,
    pub probes_lost: u64,
}

/// Quantiles kept for the CDF.
const CDF_POINTS: [f64; 15] = [
    0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn sorted_ms(v: impl Iterator<Item = u64>) -> Vec<f64> {
    let mut out: Vec<f64> = v.map(ms).collect();
    out.sort_by(f64::total_cmp);
    out
}

fn q(v: &[f64], p: f64) -> Option<f64> {
    (!v.is_empty()).then(|| quantile_sorted(v, p))
}

fn cdf(v: &[f64]) -> Vec<[f64; 2]> {
    if v.is_empty() {
        return Vec::new();
    }
    CDF_POINTS
        .iter()
        .map(|p| [*p, quantile_sorted(v, *p)])
        .collect()
}

/// The figures of `records`. The load started `start_ns` after the prober did; `timeline` is
/// the test's grid from there. Returns the test's figures and one entry per grid slot.
pub fn summarize(
    records: &[ProbeRecord],
    start_ns: u64,
    timeline: &Timeline,
    probe_rate_hz: u32,
) -> (LatencyResult, Vec<IntervalLatency>) {
    let slots = timeline.slots();
    let mut per_slot: Vec<Vec<&ProbeRecord>> = vec![Vec::new(); slots.len()];
    let mut idle: Vec<&ProbeRecord> = Vec::new();
    let mut loaded: Vec<&ProbeRecord> = Vec::new();
    for r in records {
        let Some(since) = r.sent_ns.checked_sub(start_ns) else {
            idle.push(r);
            continue;
        };
        let Some(i) = timeline.index_at(std::time::Duration::from_nanos(since)) else {
            continue;
        };
        per_slot[i].push(r);
        if !slots[i].omitted {
            loaded.push(r);
        }
    }
    let rtts = |v: &[&ProbeRecord]| sorted_ms(v.iter().filter_map(|r| r.answer.map(|a| a.rtt_ns)));
    let mut notes = Vec::new();
    let rejected = idle
        .iter()
        .chain(loaded.iter())
        .filter(|r| r.rejected)
        .count() as u64;
    if rejected > 0 {
        notes.push(format!(
            "{rejected} latency echoes claimed to have held the probe longer than its whole round \
             trip (or sent it before receiving it): impossible, so dropped; the echo's clock or \
             its word is wrong"
        ));
    }
    let mut usable = |name: &str, v: &[&ProbeRecord]| -> Vec<f64> {
        let r = rtts(v);
        if v.is_empty() {
            return r;
        }
        match unusable(v.len(), r.len(), MIN_ANSWERS) {
            None => r,
            Some(why) => {
                notes.push(format!("no {name} latency percentiles: {why}"));
                Vec::new()
            }
        }
    };
    let idle_rtt = usable("idle", &idle);
    let loaded_rtt = usable("loaded", &loaded);
    // One-way minimum over every answered probe of the test, idle ones included.
    let answered = || records.iter().filter_map(|r| r.answer);
    let fwd_min = answered().map(|a| a.forward_raw_ns).min();
    let rev_min = answered().map(|a| a.reverse_raw_ns).min();
    let variation = |min: Option<i64>, pick: fn(&super::prober::Answer) -> i64| {
        let Some(min) = min else {
            return DelayVariation::default();
        };
        let v = sorted_ms(
            loaded
                .iter()
                .filter_map(|r| r.answer.as_ref())
                .map(|a| u64::try_from(pick(a).saturating_sub(min)).unwrap_or(0)),
        );
        DelayVariation {
            p50_ms: q(&v, 0.5),
            p99_ms: q(&v, 0.99),
            max_ms: v.last().copied(),
        }
    };
    let sent = (idle.len() + loaded.len()) as u64;
    let lost = idle
        .iter()
        .chain(loaded.iter())
        .filter(|r| r.answer.is_none() && !r.rejected)
        .count() as u64;
    let idle_p50 = q(&idle_rtt, 0.5);
    let loaded_p50 = q(&loaded_rtt, 0.5);
    let result = LatencyResult {
        probe_rate_hz,
        idle_s: ms(start_ns) / 1e3,
        idle_probes: idle.len() as u64,
        idle_p50_ms: idle_p50,
        idle_p90_ms: q(&idle_rtt, 0.9),
        idle_p99_ms: q(&idle_rtt, 0.99),
        idle_max_ms: idle_rtt.last().copied(),
        loaded_probes: loaded.len() as u64,
        loaded_p50_ms: loaded_p50,
        loaded_p90_ms: q(&loaded_rtt, 0.9),
        loaded_p99_ms: q(&loaded_rtt, 0.99),
        loaded_max_ms: loaded_rtt.last().copied(),
        added_ms: idle_p50.zip(loaded_p50).map(|(i, l)| l - i),
        probe_loss_percent: (sent > 0).then(|| 100.0 * lost as f64 / sent as f64),
        probes_lost: lost,
        probes_rejected: rejected,
        notes,
        forward: variation(fwd_min, |a| a.forward_raw_ns),
        reverse: variation(rev_min, |a| a.reverse_raw_ns),
        loaded_cdf: cdf(&loaded_rtt),
        idle_cdf: cdf(&idle_rtt),
    };
    let intervals = per_slot
        .iter()
        .map(|v| {
            let mut r = rtts(v);
            if unusable(v.len(), r.len(), 0).is_some() {
                r.clear();
            }
            IntervalLatency {
                rtt_p50_ms: q(&r, 0.5),
                rtt_p99_ms: q(&r, 0.99),
                probes: v.len() as u64,
                probes_lost: v
                    .iter()
                    .filter(|r| r.answer.is_none() && !r.rejected)
                    .count() as u64,
            }
        })
        .collect();
    (result, intervals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::latency::prober::Answer;
    use std::time::Duration;

    fn rec(sent_ms: u64, rtt_ms: Option<u64>, fwd_extra_ms: i64) -> ProbeRecord {
        ProbeRecord {
            sent_ns: sent_ms * 1_000_000,
            answer: rtt_ms.map(|r| Answer {
                rtt_ns: r * 1_000_000,
                // A clock offset of 5 s between the ends, which the variation must cancel.
                forward_raw_ns: 5_000_000_000 + fwd_extra_ms * 1_000_000,
                reverse_raw_ns: -3_000_000_000,
            }),
            rejected: false,
        }
    }

    /// Regression (issue 31, item 5): a drained echo answered 26 of 600 probes and the client
    /// printed percentiles from them; a lying echo's rejected answers are not answers either.
    #[test]
    fn a_drained_or_lying_echo_gives_no_percentiles_only_why() {
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        // Idle: 100 probes, 4 answered. Loaded: 200 probes, 150 rejected, 50 answered.
        let mut records: Vec<_> = (0..100)
            .map(|i| rec(i * 10, (i % 25 == 0).then_some(10), 0))
            .collect();
        for i in 0..200 {
            let mut r = rec(1000 + i * 10, (i % 4 == 0).then_some(20), 0);
            r.rejected = i % 4 != 0;
            records.push(r);
        }
        let (r, iv) = summarize(&records, 1_000_000_000, &timeline, 100);
        assert_eq!(
            (r.idle_p50_ms, r.loaded_p50_ms, r.added_ms),
            (None, None, None)
        );
        assert!(r.loaded_cdf.is_empty());
        assert_eq!(r.probes_rejected, 150);
        assert_eq!(r.probes_lost, 96);
        let notes = r.notes.join(" | ");
        assert!(notes.contains("150 latency echoes claimed"), "{notes}");
        assert!(
            notes.contains("no idle latency percentiles: 4 valid answers"),
            "{notes}"
        );
        assert!(
            notes.contains("no loaded latency percentiles: 150 of 200"),
            "{notes}"
        );
        assert!(iv.iter().all(|i| i.rtt_p50_ms.is_none()), "{iv:?}");
        // With most answers valid, the figures come back.
        for r in &mut records {
            r.rejected = false;
            r.answer = r.answer.or(rec(0, Some(20), 0).answer);
        }
        let (r, _) = summarize(&records, 1_000_000_000, &timeline, 100);
        assert_eq!(r.loaded_p50_ms, Some(20.0));
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }

    #[test]
    fn probes_fall_in_their_phase_and_the_added_latency_is_the_difference_of_medians() {
        // 1 s idle at 10 ms; load from 1 s: 1 s warm-up, then 2 s at 30 ms with a queue
        // building one direction; one probe lost in each phase.
        let mut records = Vec::new();
        for i in 0..10 {
            records.push(rec(i * 100, (i != 3).then_some(10), 0));
        }
        for i in 10..20 {
            records.push(rec(i * 100, Some(50), 40));
        }
        for i in 20..40 {
            records.push(rec(i * 100, (i != 25).then_some(30), 20));
        }
        records.push(rec(4500, Some(99), 0)); // after the end: ignored
        let timeline = Timeline::new(
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        let (r, iv) = summarize(&records, 1_000_000_000, &timeline, 10);
        assert_eq!(r.idle_probes, 10);
        assert_eq!(r.loaded_probes, 20);
        assert_eq!(r.idle_p50_ms, Some(10.0));
        assert_eq!(r.loaded_p50_ms, Some(30.0));
        assert_eq!(r.added_ms, Some(20.0));
        assert_eq!(r.probes_lost, 2);
        assert!((r.probe_loss_percent.unwrap() - 100.0 * 2.0 / 30.0).abs() < 1e-9);
        assert_eq!(r.forward.p50_ms, Some(20.0), "relative to the idle minimum");
        assert_eq!(r.reverse.max_ms, Some(0.0));
        assert_eq!(r.idle_s, 1.0);
        assert_eq!(iv.len(), 3);
        assert_eq!(iv[0].rtt_p50_ms, Some(50.0), "warm-up, per interval only");
        assert_eq!(iv[1].probes, 10);
        assert_eq!(iv[1].probes_lost, 1);
        assert_eq!(r.loaded_cdf.first(), Some(&[0.0, 30.0]));
        assert_eq!(r.loaded_cdf.last(), Some(&[1.0, 30.0]));
    }

    #[test]
    fn no_echo_at_all_gives_no_figures_and_full_loss() {
        let records: Vec<_> = (0..30).map(|i| rec(i * 100, None, 0)).collect();
        let timeline = Timeline::new(
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        let (r, iv) = summarize(&records, 1_000_000_000, &timeline, 10);
        assert_eq!(r.idle_p50_ms, None);
        assert_eq!(r.added_ms, None);
        assert_eq!(r.probe_loss_percent, Some(100.0));
        assert_eq!(r.forward, DelayVariation::default());
        assert!(iv.iter().all(|i| i.rtt_p50_ms.is_none()));
    }
}
