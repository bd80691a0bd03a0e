//! From probe records to figures (pure). A probe belongs to the phase in which it was sent:
//! before the load started (idle), in a measured interval of the test (loaded), or in the
//! warm-up (`-O`, reported per interval only). Percentiles interpolate like R's default
//! (`stats::describe::quantile_sorted`). A probe with no echo by the end is lost.

use super::prober::ProbeRecord;
use crate::analysis::stats::describe::quantile_sorted;
use crate::traffic::timeline::Timeline;
use serde::{Deserialize, Serialize};

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
    let idle_rtt = rtts(&idle);
    let loaded_rtt = rtts(&loaded);
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
        .filter(|r| r.answer.is_none())
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
        forward: variation(fwd_min, |a| a.forward_raw_ns),
        reverse: variation(rev_min, |a| a.reverse_raw_ns),
        loaded_cdf: cdf(&loaded_rtt),
        idle_cdf: cdf(&idle_rtt),
    };
    let intervals = per_slot
        .iter()
        .map(|v| {
            let r = rtts(v);
            IntervalLatency {
                rtt_p50_ms: q(&r, 0.5),
                rtt_p99_ms: q(&r, 0.99),
                probes: v.len() as u64,
                probes_lost: v.iter().filter(|r| r.answer.is_none()).count() as u64,
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
        }
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
