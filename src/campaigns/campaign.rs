//! Statistics over a campaign's stored runs: the runs set aside as outliers (`screen`), the
//! per-configuration summary table, the comparisons of one dimension's values within each
//! combination of the others, and whether `[repeat] until` is met. Pure: takes `RunRow`s,
//! returns values; `app` and `report` render them. Every verdict comes from
//! `analysis::decide`, the engine `explain` uses.

use crate::analysis::decide::blocked;
use crate::analysis::decide::robust;
use crate::analysis::effects::{self, Observation, Scale};
use crate::analysis::sets::{Analysis, Config, Pairs, analyze_in_design};
use crate::analysis::stats::{self, Description};
use crate::campaigns::store::{ConfigRow, RunRow};
use crate::units::BitRate;
use serde::Serialize;

/// How comparisons are judged: the confidence level, the practical change, the baselines of
/// unordered dimensions (from the plan's `[answer]` or the command line).
#[derive(Debug, Clone, PartialEq)]
pub struct Judging {
    pub confidence: f64,
    pub change: f64,
    pub baselines: Vec<(String, String)>,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            confidence: 0.95,
            change: crate::analysis::decide::DEFAULT_CHANGE,
            baselines: Vec::new(),
        }
    }
}

/// A run set aside: far outside the other runs of its configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlierRun {
    pub run_id: i64,
    pub configuration: String,
    /// Counted from 1.
    pub round: u32,
    pub value: f64,
    pub siblings: usize,
    pub siblings_median: f64,
    /// How many times below (or above) its siblings' median.
    pub factor: f64,
    pub text: String,
}

/// The successful runs of each configuration, less those far outside their siblings (goodput
/// only, `decide::robust`); the others are returned apart, said in words.
pub fn screen(runs: &[RunRow], metric: Metric) -> (Vec<RunRow>, Vec<OutlierRun>) {
    if metric != Metric::BitsPerSecond {
        return (runs.to_vec(), Vec::new());
    }
    let mut labels: Vec<&str> = Vec::new();
    for r in runs {
        if !labels.contains(&r.configuration.as_str()) {
            labels.push(&r.configuration);
        }
    }
    let mut out_ids = Vec::new();
    let mut outliers = Vec::new();
    for label in labels {
        let mine: Vec<(usize, &RunRow)> = runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.configuration == label && r.status == "ok")
            .filter(|(_, r)| metric.value(r).is_some())
            .collect();
        let values: Vec<f64> = mine.iter().filter_map(|(_, r)| metric.value(r)).collect();
        for o in robust::outside(&values) {
            let (at, r) = mine[o.index];
            let factor = match o.factor {
                f if !f.is_finite() => "infinitely".to_string(),
                f if f < 10.0 => format!("{f:.1}x"),
                f => format!("{f:.0}x"),
            };
            outliers.push(OutlierRun {
                run_id: r.id,
                configuration: label.to_string(),
                round: r.round + 1,
                value: values[o.index],
                siblings: values.len() - 1,
                siblings_median: o.siblings_median,
                factor: o.factor,
                text: format!(
                    "{label} round {}: {}, {factor} {} its {} siblings (median {}), excluded from the effects",
                    r.round + 1,
                    BitRate(values[o.index]),
                    if o.below { "below" } else { "above" },
                    values.len() - 1,
                    BitRate(o.siblings_median)
                ),
            });
            out_ids.push(at);
        }
    }
    let kept = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !out_ids.contains(i))
        .map(|(_, r)| r.clone())
        .collect();
    (kept, outliers)
}

/// Each dimension's values in the order of the campaign's configurations.
pub fn dimension_order(configs: &[ConfigRow]) -> Vec<(String, Vec<String>)> {
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    for c in configs {
        for (k, v) in &c.dims {
            match order.iter_mut().find(|(d, _)| d == k) {
                Some((_, vs)) if !vs.contains(v) => vs.push(v.clone()),
                Some(_) => {}
                None => order.push((k.clone(), vec![v.clone()])),
            }
        }
    }
    order
}

/// The successful runs as observations of `metric`.
pub fn observations(runs: &[RunRow], metric: Metric) -> Vec<Observation> {
    runs.iter()
        .filter(|r| r.status == "ok")
        .filter_map(|r| {
            Some(Observation {
                dims: r.dims.clone(),
                round: r.round,
                value: metric.value(r)?,
            })
        })
        .collect()
}

/// The scale a metric is analysed on: rates as ratios when every value is positive.
pub fn scale_of(metric: Metric, obs: &[Observation]) -> Scale {
    if metric == Metric::BitsPerSecond && obs.iter().all(|o| o.value > 0.0) {
        Scale::Log
    } else {
        Scale::Linear
    }
}

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
    /// RFC 6349's TCP Transfer Time Ratio, TCP Efficiency and Buffer Delay Percentage.
    TransferTimeRatio,
    TcpEfficiencyPercent,
    BufferDelayPercent,
    /// A request/response test's transactions per second and 99th-percentile transaction
    /// latency in microseconds (`test = "rr"`/`"crr"`).
    Transactions,
    LatencyP99,
}

impl Metric {
    /// Every metric's name, as `parse` takes it (most also have a shorter alias).
    pub const NAMES: [&'static str; 14] = [
        "bits_per_second",
        "retransmits",
        "lost_percent",
        "jitter_ms",
        "cpu_local_percent",
        "cpu_remote_percent",
        "loaded_p50_ms",
        "loaded_p99_ms",
        "added_latency_ms",
        "transfer_time_ratio",
        "tcp_efficiency_percent",
        "buffer_delay_percent",
        "transactions",
        "latency_p99",
    ];

    /// `--metric NAME`: the metric, or why not, with the names there are.
    pub fn from_flag(s: &str) -> Result<Metric, String> {
        Metric::parse(s).ok_or_else(|| {
            format!(
                "--metric {s} is not known; the metrics are {}",
                Metric::NAMES.join(", ")
            )
        })
    }

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
            "transfer_time_ratio" | "ttr" => Metric::TransferTimeRatio,
            "tcp_efficiency_percent" | "tcp_efficiency" | "efficiency" => {
                Metric::TcpEfficiencyPercent
            }
            "buffer_delay_percent" | "buffer_delay" => Metric::BufferDelayPercent,
            "transactions" | "transactions_per_second" | "tps" => Metric::Transactions,
            "latency_p99" | "rr_p99" => Metric::LatencyP99,
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
            Metric::TransferTimeRatio => r.transfer_time_ratio,
            Metric::TcpEfficiencyPercent => r.tcp_efficiency_percent,
            Metric::BufferDelayPercent => r.buffer_delay_percent,
            Metric::Transactions => r.transactions_per_second,
            Metric::LatencyP99 => r.latency_p99_us,
        }
    }

    /// Words for a verdict: throughput is "faster"/"slower".
    pub fn stats_config(self, confidence: f64) -> Config {
        let (more, less) = match self {
            Metric::BitsPerSecond => ("faster", "slower"),
            Metric::Transactions => ("more", "fewer"),
            _ => ("higher", "lower"),
        };
        Config {
            confidence,
            more: more.into(),
            less: less.into(),
            scale: if self == Metric::BitsPerSecond {
                Scale::Log
            } else {
                Scale::Linear
            },
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

/// Compares the values of `by`, grouped by the other dimensions, over runs that match every
/// `filters` entry: numeric values step by step from low to high, others against the baseline
/// (`judging`'s, or the first in `values_order`). Each comparison is a contrast of the whole
/// campaign's design (every successful run of `runs`, configurations with rounds as blocks,
/// the error pooled over all of them: `decide::blocked`, as `explain` judges), on the scale
/// `explain` uses; runs of one round are paired only when the design leaves no error to pool.
pub fn compare(
    runs: &[RunRow],
    by: &str,
    values_order: &[String],
    filters: &[(String, String)],
    metric: Metric,
    judging: &Judging,
) -> Vec<Group> {
    let (values_order, pairs) = match effects::ordered_values(values_order) {
        Some(v) => (v, Pairs::Steps),
        None => {
            let mut v = values_order.to_vec();
            if let Some((_, b)) = judging.baselines.iter().find(|(d, _)| d == by)
                && let Some(i) = v.iter().position(|x| x == b)
            {
                let base = v.remove(i);
                v.insert(0, base);
            }
            (v, Pairs::AgainstFirst)
        }
    };
    let values_order = &values_order[..];
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
    let mut cfg = metric.stats_config(judging.confidence);
    cfg.detect_change = judging.change;
    cfg.pairs = pairs;
    // The whole campaign's design, on explain's data and scale.
    let obs = observations(runs, metric);
    cfg.scale = scale_of(metric, &obs);
    let (cells, fit) = blocked::fit_keyed(
        obs.iter()
            .filter_map(|o| Some((o.dims.clone(), o.round, cfg.scale.to(o.value)?))),
    );
    let cell_of = |context: &str, v: &str| {
        cells.iter().position(|dims| {
            context_of(dims, by) == context && dims.iter().any(|(k, dv)| k == by && dv == v)
        })
    };
    contexts
        .into_iter()
        .map(|context| {
            let mut blocks: Vec<Vec<u32>> = Vec::new();
            let mut set_cells: Vec<Option<usize>> = Vec::new();
            let sets: Vec<(String, Vec<f64>)> = values_order
                .iter()
                .filter_map(|v| {
                    let (vals, rounds): (Vec<f64>, Vec<u32>) = matching
                        .iter()
                        .filter(|r| {
                            context_of(&r.dims, by) == context
                                && r.dims.iter().any(|(k, dv)| k == by && dv == v)
                        })
                        .filter_map(|r| Some((metric.value(r)?, r.round)))
                        .unzip();
                    if vals.is_empty() {
                        return None;
                    }
                    blocks.push(rounds);
                    set_cells.push(cell_of(&context, v));
                    Some((format!("{by}={v}"), vals))
                })
                .collect();
            let contrast = |a: usize, b: usize| {
                let (a, b) = (set_cells.get(a).copied()??, set_cells.get(b).copied()??);
                fit.as_ref()?.difference(&[a], &[b])
            };
            let (analysis, note) =
                match analyze_in_design(&sets, Some(&blocks), Some(&contrast), &cfg) {
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

/// The comparisons `run` prints when a campaign ends: the last dimension's values, the other
/// dimensions fixed (`runs` screened as the caller judges them).
pub fn summary_groups(
    runs: &[RunRow],
    order: &[(String, Vec<String>)],
    judging: &Judging,
) -> Vec<Group> {
    order
        .last()
        .filter(|(_, values)| values.len() > 1)
        .map(|(name, values)| compare(runs, name, values, &[], Metric::BitsPerSecond, judging))
        .unwrap_or_default()
}

/// Where the profile's comparisons are settled by construction: no rounds settle noise.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Settled {
    /// The contexts (the other dimensions' values, as `compare` heads its groups) where the
    /// profile cannot matter at all: their comparisons of the profile are noise or drift.
    pub cannot_matter_at: Vec<String>,
    /// Pairs of profiles that cannot differ at a context: they differ only in keys that cannot
    /// act there (`tcp_rmem` at a fixed window, `rmem_max` where the kernel autotunes).
    pub cannot_matter_pairs: Vec<SettledPair>,
}

/// Two profiles (`profile=A`, `profile=B`, as comparisons name them) at a context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SettledPair {
    pub context: String,
    pub from: String,
    pub to: String,
}

impl Settled {
    /// Whether the profile cannot matter at all at `context`.
    pub fn context(&self, context: &str) -> bool {
        self.cannot_matter_at.iter().any(|c| c == context)
    }

    /// A comparison's verdict; where it cannot matter by construction, without the rounds that
    /// would settle it (a trial read "no rounds settle it" above "about 42 more rounds would
    /// settle it"), and a pair of profiles that cannot differ there says so after it. `run`'s
    /// summary, `compare` and the report print it alike.
    pub fn verdict(&self, c: &crate::analysis::sets::Comparison, context: &str) -> String {
        if !self.covers(context, &c.baseline, &c.other) {
            return c.verdict.clone();
        }
        let verdict = c.verdict.replace(
            &crate::analysis::decide::words::settle_text(&c.decision),
            "",
        );
        if self.context(context) {
            verdict
        } else {
            format!(
                "{verdict}; these two profiles cannot differ here by construction (the answer \
                 says why): a difference is noise or drift, and no rounds settle it"
            )
        }
    }

    /// Whether the comparison of `a` and `b` (either order) at `context` cannot matter.
    pub fn covers(&self, context: &str, a: &str, b: &str) -> bool {
        self.context(context)
            || self.cannot_matter_pairs.iter().any(|p| {
                p.context == context && ((p.from == a && p.to == b) || (p.from == b && p.to == a))
            })
    }
}

/// The groups' comparisons still open (a group too small to compare counts as one), and the
/// most rounds any of them says would settle it; groups whose context is in `settled` (where
/// the compared dimension cannot matter by construction) are left out: no rounds settle noise.
pub fn open_in(groups: &[Group], settled: &Settled) -> (usize, Option<usize>) {
    let mut open = 0;
    let mut rounds: Option<usize> = None;
    for g in groups.iter().filter(|g| !settled.context(&g.context)) {
        let Some(a) = &g.analysis else {
            open += 1;
            continue;
        };
        for c in a.comparisons.iter().filter(|c| {
            !c.decision.outcome.decided() && !settled.covers(&g.context, &c.baseline, &c.other)
        }) {
            open += 1;
            rounds = rounds.max(c.decision.rounds_needed);
        }
    }
    (open, rounds)
}

/// Whether a campaign has enough rounds for `[repeat] until` (the reason, in words), judged
/// on goodput with outliers set aside: `decided` when every comparison of the answer
/// (`explain`'s) and of the summary `run` prints (the last dimension's values compared with
/// the others fixed, `compare`) shows a difference or an equivalence within the change.
/// `settled`: the contexts of the summary where the compared dimension cannot matter by
/// construction (`explain::cannot_matter`), left out: no rounds settle noise.
pub fn until_met(
    runs: &[RunRow],
    until: crate::campaigns::plan::Until,
    (order, settled): (&[(String, Vec<String>)], &Settled),
    judging: &Judging,
) -> Option<String> {
    use crate::campaigns::plan::Until;
    let (runs, _) = screen(runs, Metric::BitsPerSecond);
    let mut labels: Vec<String> = Vec::new();
    for r in &runs {
        if !labels.contains(&r.configuration) {
            labels.push(r.configuration.clone());
        }
    }
    match until {
        Until::Precision(p) => {
            let rows = summary(&runs, &labels, Metric::BitsPerSecond);
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
        Until::Decided(_) => {
            let obs = observations(&runs, Metric::BitsPerSecond);
            if order.iter().all(|(_, v)| v.len() < 2) {
                return Some("nothing to compare: the rounds asked for at least are done".into());
            }
            let mut opts = effects::Options::new(scale_of(Metric::BitsPerSecond, &obs), "goodput");
            opts.settings.confidence = judging.confidence;
            opts.settings.change = judging.change;
            opts.baselines = judging.baselines.clone();
            let e = effects::analyze(&obs, order, &opts);
            let n: usize = e.effects.iter().map(|x| x.comparisons.len()).sum();
            // The main effects average over the other dimensions: where they interact, one
            // context's comparison can stay open under a decided average (a trial's campaign
            // stopped on "decided" above "window=256K: ... about 4 more rounds would settle
            // it"). The comparisons the run prints must be decided too.
            let printed = summary_groups(&runs, order, judging);
            let m: usize = printed
                .iter()
                .filter_map(|g| g.analysis.as_ref())
                .map(|a| a.comparisons.len())
                .sum();
            (e.decided() && open_in(&printed, settled).0 == 0).then(|| {
                let by = match order.last() {
                    Some((name, _)) if !printed.is_empty() => {
                        format!(" and of the summary by {name} ({m})")
                    }
                    _ => String::new(),
                };
                format!(
                    "every comparison of the answer ({n}){by} is decided: a difference shown, or a change of {} ruled out",
                    crate::analysis::decide::words::percent_text(judging.change)
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_one_name_and_an_unknown_one_lists_them() {
        let all: Vec<Metric> = Metric::NAMES
            .iter()
            .map(|n| Metric::parse(n).expect(n))
            .collect();
        for (i, m) in all.iter().enumerate() {
            assert!(!all[..i].contains(m), "{m:?} named twice");
            // The name is the one results and JSON use.
            assert_eq!(
                serde_json::to_value(m).unwrap(),
                serde_json::Value::from(Metric::NAMES[i])
            );
        }
        let e = Metric::from_flag("foo").unwrap_err();
        assert!(
            e.starts_with("--metric foo is not known; the metrics are bits_per_second, ")
                && e.ends_with("transactions, latency_p99"),
            "{e}"
        );
        assert_eq!(Metric::from_flag("goodput"), Ok(Metric::BitsPerSecond));
    }

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
            started_unix: None,
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
            transfer_time_ratio: None,
            tcp_efficiency_percent: None,
            buffer_delay_percent: None,
            transactions_per_second: None,
            latency_p99_us: None,
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
            &Judging::default(),
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
            &Judging::default(),
        );
        assert_eq!(filtered.len(), 1);
        let s = summary(&runs, &["window=64K cc=bbr".into()], Metric::BitsPerSecond);
        assert_eq!((s[0].ok, s[0].failed), (4, 1));
    }

    #[test]
    fn decided_means_shown_or_ruled_out_and_precision_means_narrow_cis() {
        use crate::campaigns::plan::Until;
        let values = ["cubic".to_string(), "bbr".to_string()];
        let by: &[(String, Vec<String>)] = &[("cc".to_string(), values.to_vec())];
        let j = &Judging::default();
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
        assert!(until_met(&clear, Until::Decided(0.05), (by, &Settled::default()), j).is_some());
        // No difference, measured tightly enough to rule out 5%: decided.
        let same = runs_with(&[100.0, 100.2, 99.9, 100.1], &[100.1, 99.8, 100.0, 100.2]);
        assert!(until_met(&same, Until::Decided(0.05), (by, &Settled::default()), j).is_some());
        // No difference shown and 5% not ruled out: not yet.
        let noisy = runs_with(&[80.0, 120.0, 100.0], &[90.0, 125.0, 95.0]);
        assert_eq!(
            until_met(&noisy, Until::Decided(0.05), (by, &Settled::default()), j),
            None
        );
        // Precision: within 1% for the tight runs, not for the noisy ones.
        assert!(until_met(&same, Until::Precision(0.01), (by, &Settled::default()), j).is_some());
        assert_eq!(
            until_met(&noisy, Until::Precision(0.01), (by, &Settled::default()), j),
            None
        );
        // A configuration with a single run has no CI: not met.
        let single = runs_with(&[100.0], &[100.0, 100.0]);
        assert_eq!(
            until_met(&single, Until::Precision(0.5), (by, &Settled::default()), j),
            None
        );
    }

    /// Regression (a trial's finding): the profile's main effect (+44% at one window, none at
    /// the other) was decided while the summary's comparison at the second window was not, and
    /// `until = "decided"` stopped there.
    #[test]
    fn decided_waits_for_the_comparisons_the_run_prints() {
        use crate::campaigns::plan::Until;
        let order: &[(String, Vec<String>)] = &[
            ("window".into(), vec!["auto".into(), "256K".into()]),
            ("profile".into(), vec!["default".into(), "big".into()]),
        ];
        let cells: [(&str, &str, [f64; 3]); 4] = [
            ("auto", "default", [100.0, 104.0, 96.0]),
            ("auto", "big", [144.0, 150.0, 140.0]),
            ("256K", "default", [100.0, 106.0, 95.0]),
            ("256K", "big", [101.0, 94.0, 104.0]),
        ];
        let mut runs = Vec::new();
        for (w, p, values) in cells {
            for (round, v) in values.into_iter().enumerate() {
                let mut r = row(&[("window", w), ("profile", p)], v * 1e6, true);
                r.round = round as u32 + 1;
                runs.push(r);
            }
        }
        let j = &Judging::default();
        // The answer alone is decided ...
        let obs = observations(&runs, Metric::BitsPerSecond);
        let mut opts = effects::Options::new(scale_of(Metric::BitsPerSecond, &obs), "goodput");
        opts.settings.change = j.change;
        assert!(effects::analyze(&obs, order, &opts).decided());
        // ... the summary's window=256K comparison is not: not met.
        let groups = compare(&runs, "profile", &order[1].1, &[], Metric::BitsPerSecond, j);
        let open = groups.iter().find(|g| g.context == "window=256K").unwrap();
        assert!(
            open.analysis.as_ref().unwrap().comparisons[0]
                .decision
                .outcome
                == crate::analysis::decide::Outcome::Undecided
        );
        assert_eq!(
            until_met(&runs, Until::Decided(0.05), (order, &Settled::default()), j),
            None
        );
        // The same 256K cells measured tightly: decided, and said of both.
        let tight = [100.0, 100.4, 99.8];
        for r in runs.iter_mut().filter(|r| r.dims[0].1 == "256K") {
            r.bits_per_second = Some(tight[r.round as usize - 1] * 1e6);
        }
        let why = until_met(&runs, Until::Decided(0.05), (order, &Settled::default()), j)
            .expect("decided");
        assert!(
            why.contains("every comparison of the answer (")
                && why.contains("and of the summary by profile (2) is decided"),
            "{why}"
        );
    }
}
