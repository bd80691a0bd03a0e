//! Statistics over a campaign's stored runs: the per-configuration summary table and the
//! comparisons of one dimension's values within each combination of the others. Pure: takes
//! `RunRow`s, returns values; `app` renders them and `report` will too.

use crate::analysis::stats::{self, Analysis, Config, Description};
use crate::campaigns::store::RunRow;
use serde::Serialize;

/// Which per-run number is analysed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    BitsPerSecond,
    Retransmits,
    LostPercent,
    JitterMs,
    CpuLocalPercent,
    CpuRemotePercent,
    /// Latency probe's loaded round trip, median and 99th percentile (`--latency`).
    LoadedP50Ms,
    LoadedP99Ms,
    /// Loaded median minus idle median: the queueing the load added.
    AddedLatencyMs,
}

impl Metric {
    pub fn parse(s: &str) -> Option<Metric> {
        Some(match s {
            "bits_per_second" | "goodput" | "throughput" => Metric::BitsPerSecond,
            "retransmits" => Metric::Retransmits,
            "lost_percent" | "loss" => Metric::LostPercent,
            "jitter_ms" | "jitter" => Metric::JitterMs,
            "cpu_local_percent" | "cpu" => Metric::CpuLocalPercent,
            "cpu_remote_percent" => Metric::CpuRemotePercent,
            "loaded_p50_ms" | "latency" => Metric::LoadedP50Ms,
            "loaded_p99_ms" => Metric::LoadedP99Ms,
            "added_latency_ms" | "added_ms" | "bufferbloat" => Metric::AddedLatencyMs,
            _ => return None,
        })
    }

    pub fn value(self, r: &RunRow) -> Option<f64> {
        match self {
            Metric::BitsPerSecond => r.bits_per_second,
            Metric::Retransmits => r.retransmits.map(|v| v as f64),
            Metric::LostPercent => r.lost_percent,
            Metric::JitterMs => r.jitter_ms,
            Metric::CpuLocalPercent => r.cpu_local_percent,
            Metric::CpuRemotePercent => r.cpu_remote_percent,
            Metric::LoadedP50Ms => r.loaded_p50_ms,
            Metric::LoadedP99Ms => r.loaded_p99_ms,
            Metric::AddedLatencyMs => r.added_latency_ms,
        }
    }

    /// Words for a verdict: throughput is "faster"/"slower".
    pub fn stats_config(self, confidence: f64) -> Config {
        let (more, less) = match self {
            Metric::BitsPerSecond => ("faster", "slower"),
            _ => ("higher", "lower"),
        };
        Config {
            confidence,
            more: more.into(),
            less: less.into(),
            ..Config::default()
        }
    }
}

/// One row of the summary table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigSummary {
    pub label: String,
    pub ok: usize,
    pub failed: usize,
    /// `None` when no run of this configuration succeeded.
    pub description: Option<Description>,
}

/// Summary per configuration, in first-seen order of `order` (configuration labels).
pub fn summary(runs: &[RunRow], order: &[String], metric: Metric) -> Vec<ConfigSummary> {
    order
        .iter()
        .map(|label| {
            let mine: Vec<&RunRow> = runs.iter().filter(|r| &r.configuration == label).collect();
            let values: Vec<f64> = mine
                .iter()
                .filter(|r| r.status == "ok")
                .filter_map(|r| metric.value(r))
                .collect();
            ConfigSummary {
                label: label.clone(),
                ok: values.len(),
                failed: mine.iter().filter(|r| r.status != "ok").count(),
                description: (!values.is_empty()).then(|| stats::describe(&values)),
            }
        })
        .collect()
}

/// A comparison of one dimension's values where the other dimensions are fixed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The fixed dimensions, e.g. `window=64K`.
    pub context: String,
    pub analysis: Option<Analysis>,
    /// Why there is no analysis (fewer than 3 successful runs somewhere).
    pub note: Option<String>,
    /// The values behind each set of `analysis`, in its order (for ministat's plot).
    #[serde(skip)]
    pub values: Vec<Vec<f64>>,
}

impl Group {
    /// The heading of the group: its fixed dimensions, or "all runs".
    pub fn title(&self) -> &str {
        if self.context.is_empty() {
            "all runs"
        } else {
            &self.context
        }
    }
}

/// A run's other dimensions than `by`, as `k=v` pairs joined by spaces: the group it falls in.
pub fn context_of(dims: &[(String, String)], by: &str) -> String {
    dims.iter()
        .filter(|(k, _)| k != by)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Compares the values of `by` (in `values_order`), grouped by the other dimensions, over runs
/// that match every `filters` entry.
pub fn compare(
    runs: &[RunRow],
    by: &str,
    values_order: &[String],
    filters: &[(String, String)],
    metric: Metric,
    confidence: f64,
) -> Vec<Group> {
    let matching: Vec<&RunRow> = runs
        .iter()
        .filter(|r| r.status == "ok")
        .filter(|r| {
            filters
                .iter()
                .all(|(k, v)| r.dims.iter().any(|(dk, dv)| dk == k && dv == v))
        })
        .collect();
    // Contexts in plan order.
    let mut by_position: Vec<&&RunRow> = matching.iter().collect();
    by_position.sort_by_key(|r| r.config_position);
    let mut contexts: Vec<String> = Vec::new();
    for r in by_position {
        let c = context_of(&r.dims, by);
        if !contexts.contains(&c) {
            contexts.push(c);
        }
    }
    let cfg = metric.stats_config(confidence);
    contexts
        .into_iter()
        .map(|context| {
            let sets: Vec<(String, Vec<f64>)> = values_order
                .iter()
                .map(|v| {
                    let vals = matching
                        .iter()
                        .filter(|r| {
                            context_of(&r.dims, by) == context
                                && r.dims.iter().any(|(k, dv)| k == by && dv == v)
                        })
                        .filter_map(|r| metric.value(r))
                        .collect();
                    (format!("{by}={v}"), vals)
                })
                .filter(|(_, v): &(String, Vec<f64>)| !v.is_empty())
                .collect();
            let (analysis, note) = match stats::analyze(&sets, &cfg) {
                Ok(a) if sets.len() >= 2 => (Some(a), None),
                Ok(_) => (
                    None,
                    Some(format!("only one value of {by} here: nothing to compare")),
                ),
                Err(e) => (None, Some(format!("not enough runs to compare: {e}"))),
            };
            let values = if analysis.is_some() {
                sets.into_iter().map(|(_, v)| v).collect()
            } else {
                Vec::new()
            };
            Group {
                context,
                analysis,
                note,
                values,
            }
        })
        .collect()
}

/// Whether a campaign has enough rounds for `[repeat] until` (the reason, in words), judged
/// on goodput. `by` is the dimension compared for `decided` (values in plan order).
pub fn until_met(
    runs: &[RunRow],
    until: crate::campaigns::plan::Until,
    by: Option<(&str, &[String])>,
) -> Option<String> {
    use crate::campaigns::plan::Until;
    let mut labels: Vec<String> = Vec::new();
    for r in runs {
        if !labels.contains(&r.configuration) {
            labels.push(r.configuration.clone());
        }
    }
    match until {
        Until::Precision(p) => {
            let rows = summary(runs, &labels, Metric::BitsPerSecond);
            let widest = rows
                .iter()
                .map(|r| {
                    let d = r.description.as_ref()?;
                    if d.n < 2 || d.mean <= 0.0 {
                        return None;
                    }
                    let half = stats::ttest::t_critical(0.95, (d.n - 1) as f64) * d.stddev
                        / (d.n as f64).sqrt();
                    Some(half / d.mean)
                })
                .collect::<Option<Vec<f64>>>()?
                .into_iter()
                .fold(0.0, f64::max);
            (widest <= p).then(|| {
                format!(
                    "every configuration's mean is known within ±{:.1}% at 95% (the widest ±{:.1}%)",
                    p * 100.0,
                    widest * 100.0
                )
            })
        }
        Until::Decided(change) => {
            let Some((by, values)) = by else {
                return Some("nothing to compare: the rounds asked for at least are done".into());
            };
            let groups = compare(runs, by, values, &[], Metric::BitsPerSecond, 0.95);
            let decided = groups.iter().all(|g| {
                g.analysis.as_ref().is_some_and(|a| {
                    a.comparisons.iter().all(|c| {
                        c.significant
                            || matches!((c.percent_ci_low, c.percent_ci_high),
                                (Some(lo), Some(hi)) if lo > -change * 100.0 && hi < change * 100.0)
                    })
                })
            });
            decided.then(|| {
                format!(
                    "every comparison by {by} is decided: a difference shown, or a change of {:.0}% ruled out",
                    change * 100.0
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(dims: &[(&str, &str)], bps: f64, ok: bool) -> RunRow {
        let dims: Vec<(String, String)> = dims
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RunRow {
            id: 0,
            config_position: 0,
            configuration: crate::campaigns::plan::label(&dims),
            dims,
            round: 0,
            sequence: 0,
            status: if ok { "ok".into() } else { "failed".into() },
            error: None,
            bits_per_second: Some(bps),
            retransmits: Some(1),
            lost_percent: None,
            jitter_ms: None,
            cpu_local_percent: None,
            cpu_remote_percent: None,
            loaded_p50_ms: None,
            loaded_p99_ms: None,
            added_latency_ms: None,
        }
    }

    #[test]
    fn compares_within_each_context() {
        let mut runs = Vec::new();
        for (i, w) in ["64K", "1M"].iter().enumerate() {
            for k in 0..4 {
                let base = 100.0 * (i + 1) as f64;
                runs.push(row(
                    &[("window", w), ("cc", "cubic")],
                    base + k as f64,
                    true,
                ));
                runs.push(row(
                    &[("window", w), ("cc", "bbr")],
                    base * 1.5 + k as f64,
                    true,
                ));
            }
        }
        runs.push(row(&[("window", "64K"), ("cc", "bbr")], 1.0, false));
        let groups = compare(
            &runs,
            "cc",
            &["cubic".into(), "bbr".into()],
            &[],
            Metric::BitsPerSecond,
            0.95,
        );
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].context, "window=64K");
        let a = groups[0].analysis.as_ref().unwrap();
        assert_eq!(a.sets[0].name, "cc=cubic");
        assert_eq!(a.sets[1].description.n, 4, "failed runs are left out");
        assert!(
            a.comparisons[0].verdict.contains("faster"),
            "{}",
            a.comparisons[0].verdict
        );
        let filtered = compare(
            &runs,
            "cc",
            &["cubic".into(), "bbr".into()],
            &[("window".into(), "1M".into())],
            Metric::BitsPerSecond,
            0.95,
        );
        assert_eq!(filtered.len(), 1);
        let s = summary(&runs, &["window=64K cc=bbr".into()], Metric::BitsPerSecond);
        assert_eq!((s[0].ok, s[0].failed), (4, 1));
    }

    #[test]
    fn decided_means_shown_or_ruled_out_and_precision_means_narrow_cis() {
        use crate::campaigns::plan::Until;
        let values = ["cubic".to_string(), "bbr".to_string()];
        let by = Some(("cc", &values[..]));
        let runs_with = |bbr: &[f64], cubic: &[f64]| -> Vec<RunRow> {
            let mut v: Vec<RunRow> = cubic
                .iter()
                .map(|x| row(&[("cc", "cubic")], *x, true))
                .collect();
            v.extend(bbr.iter().map(|x| row(&[("cc", "bbr")], *x, true)));
            v
        };
        // A clear difference is decided.
        let clear = runs_with(&[120.0, 121.0, 119.0], &[100.0, 101.0, 99.0]);
        assert!(until_met(&clear, Until::Decided(0.05), by).is_some());
        // No difference, measured tightly enough to rule out 5%: decided.
        let same = runs_with(&[100.0, 100.2, 99.9, 100.1], &[100.1, 99.8, 100.0, 100.2]);
        assert!(until_met(&same, Until::Decided(0.05), by).is_some());
        // No difference shown and 5% not ruled out: not yet.
        let noisy = runs_with(&[80.0, 120.0, 100.0], &[90.0, 125.0, 95.0]);
        assert_eq!(until_met(&noisy, Until::Decided(0.05), by), None);
        // Precision: within 1% for the tight runs, not for the noisy ones.
        assert!(until_met(&same, Until::Precision(0.01), by).is_some());
        assert_eq!(until_met(&noisy, Until::Precision(0.01), by), None);
        // A configuration with a single run has no CI: not met.
        let single = runs_with(&[100.0], &[100.0, 100.0]);
        assert_eq!(until_met(&single, Until::Precision(0.5), by), None);
    }
}
