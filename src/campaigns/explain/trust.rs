//! What limits trust in a campaign's figures, read from what was measured: runs during which
//! the host's CPUs or an end's test threads were saturated (the figures then measure the host,
//! not the path), configurations whose interval reaches past the path's physical rate, and
//! configurations too noisy for their interval to mean anything. Each flag names its runs.

use super::Metric;
use crate::campaigns::store::{ConfigRow, RunRow};
use crate::traffic::result::TestResult;
use crate::units::BitRate;
use serde::Serialize;
use std::collections::HashMap;

/// The host's CPUs at or above this share busy (all cores) during a run: CPU-bound.
pub const HOST_BUSY_PERCENT: f64 = 90.0;
/// An end's test threads at or above this share of a core per stream: CPU-bound.
pub const END_BUSY_PERCENT: f64 = 95.0;
/// CPU-bound runs at or above this share of all make the flag serious (said first).
const SERIOUS_SHARE: f64 = 0.25;
/// A run at or above this share of its path's rate was limited by the path, whatever the CPUs
/// did: not CPU-bound (a trial saw 7 of 18 link-limited runs, 19.3 Mbit/s of a 20 Mbit/s path,
/// called "CPU-bound: these figures measure the host").
const LINK_LIMITED_SHARE: f64 = 0.9;
/// TCP bytes resent, as a share of those sent, at or above which a configuration's runs lost
/// packets worth naming (D-SACK's spurious ones left out).
const LOSSY_SHARE: f64 = 0.01;
/// A configuration's interval wider than this factor (high over low) is too noisy to mean much.
const NOISY_FACTOR: f64 = 2.0;

/// One reason for doubt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// "cpu", "loss", "ceiling" or "noise".
    pub kind: String,
    pub runs: Vec<i64>,
    pub configurations: Vec<String>,
    /// Said right after the headline: the answer cannot be taken as it stands.
    pub serious: bool,
    pub text: String,
}

/// The host's CPU during a run, from its stored counters (`host_cpu.busy_percent`).
fn host_busy(counters: &[(i64, serde_json::Value)], run: i64) -> Option<f64> {
    counters
        .iter()
        .find(|(id, _)| *id == run)
        .and_then(|(_, v)| v.pointer("/host_cpu/busy_percent")?.as_f64())
        .filter(|x| x.is_finite())
}

/// `window_limited`: the configurations whose runs the answer finds at their window's ceiling
/// (`explain::limits`): a busy host did not set their rate, their window did.
#[allow(clippy::too_many_arguments)]
pub fn flags(
    runs: &[RunRow],
    configs: &[ConfigRow],
    results: &[(i64, TestResult)],
    counters: &[(i64, serde_json::Value)],
    link_of: &dyn Fn(&ConfigRow) -> Option<f64>,
    window_limited: &[&str],
    metric: Metric,
    confidence: f64,
) -> Vec<Flag> {
    let ok: Vec<&RunRow> = runs.iter().filter(|r| r.status == "ok").collect();
    // Each run's result by id, once: a search per run would be quadratic in a campaign's size.
    let result_of: HashMap<i64, &TestResult> = results.iter().map(|(id, t)| (*id, t)).collect();
    let mut out = Vec::new();
    let link_limited = |r: &RunRow| {
        let link = configs
            .iter()
            .find(|c| c.label == r.configuration)
            .and_then(link_of);
        // Past the path's rate (with room for its framing) is no path's limit: an impossible
        // figure stays in the CPU's count.
        matches!((r.bits_per_second, link),
            (Some(b), Some(l)) if b >= LINK_LIMITED_SHARE * l && b <= 1.05 * l)
    };
    // A trial's 64K runs at 93% of window/RTT on a host another program kept busy were
    // "CPU-bound: these figures measure the host", beside the answer's own "window-limited".
    let paths: Vec<&RunRow> = ok
        .iter()
        .copied()
        .filter(|r| !link_limited(r) && !window_limited.contains(&r.configuration.as_str()))
        .collect();
    if let Some(f) = cpu_flag(&paths, ok.len(), &result_of, counters) {
        out.push(f);
    }
    out.extend(loss_flags(&ok, configs, &result_of));
    if metric == Metric::BitsPerSecond {
        out.extend(interval_flags(&ok, configs, link_of, confidence));
    }
    out
}

/// `ok`: the runs the path did not limit, of `all` that succeeded.
fn cpu_flag(
    ok: &[&RunRow],
    all: usize,
    result_of: &HashMap<i64, &TestResult>,
    counters: &[(i64, serde_json::Value)],
) -> Option<Flag> {
    let (mut by_host, mut by_end) = (0usize, 0usize);
    let mut flagged = Vec::new();
    let mut configurations: Vec<String> = Vec::new();
    let mut peak_host: f64 = 0.0;
    for r in ok {
        let streams = result_of
            .get(&r.id)
            .map_or(1.0, |t| f64::from(t.spec.streams.max(1)));
        let host = host_busy(counters, r.id).filter(|b| *b >= HOST_BUSY_PERCENT);
        let end = [r.cpu_local_percent, r.cpu_remote_percent]
            .into_iter()
            .flatten()
            .any(|c| c.is_finite() && c >= END_BUSY_PERCENT * streams);
        if host.is_some() {
            by_host += 1;
            peak_host = peak_host.max(host.unwrap_or(0.0));
        } else if end {
            by_end += 1;
        }
        if host.is_some() || end {
            flagged.push(r.id);
            if !configurations.contains(&r.configuration) {
                configurations.push(r.configuration.clone());
            }
        }
    }
    if flagged.is_empty() {
        return None;
    }
    let serious = flagged.len() as f64 >= SERIOUS_SHARE * all as f64;
    let mut why = Vec::new();
    if by_host > 0 {
        why.push(format!(
            "the host's CPUs at least {HOST_BUSY_PERCENT:.0}% busy in {by_host} (up to {peak_host:.0}%, \
             every program on it counted)"
        ));
    }
    if by_end > 0 {
        why.push(format!("an end's test threads at a full core in {by_end}"));
    }
    Some(Flag {
        kind: "cpu".into(),
        serious,
        text: format!(
            "{}{} of {} runs were CPU-bound ({}{}): {}",
            if serious { "CAUTION: " } else { "note: " },
            flagged.len(),
            all,
            why.join("; "),
            if all > ok.len() {
                format!(
                    "; {} runs at the path's rate or their window's left out: those limited them",
                    all - ok.len()
                )
            } else {
                String::new()
            },
            if serious {
                "these figures measure the host, not the path; rerun with the host otherwise \
                 idle (or a lower rate, fewer streams) before trusting the ranking"
            } else {
                "those runs may measure the host rather than the path"
            }
        ),
        runs: flagged,
        configurations,
    })
}

/// Configurations whose runs resent at least `LOSSY_SHARE` of their TCP bytes (not counting
/// D-SACK's spurious resends): packets were lost on the path or dropped by a receiver, and
/// the rate is the losses' as much as the NIC's or the CPU's (a trial's rtl8139 guest resent
/// 23% while the answer blamed the emulated CPU alone).
fn loss_flags(
    ok: &[&RunRow],
    configs: &[ConfigRow],
    result_of: &HashMap<i64, &TestResult>,
) -> Vec<Flag> {
    let mut out = Vec::new();
    for c in configs {
        let mut shares = Vec::new();
        let mut runs = Vec::new();
        for r in ok.iter().filter(|r| r.configuration == c.label) {
            let Some(t) = result_of.get(&r.id) else {
                continue;
            };
            let s = &t.summary;
            let (Some(sent), Some(resent)) = (s.tcp_bytes_sent, s.tcp_bytes_retrans) else {
                continue;
            };
            let mss = t
                .start
                .client_sockets
                .first()
                .and_then(|k| k.mss_bytes)
                .unwrap_or(1448);
            let spurious = s.tcp_dsack_dups.unwrap_or(0) * u64::from(mss);
            let share = resent.saturating_sub(spurious) as f64 / sent.max(1) as f64;
            shares.push(share);
            runs.push(r.id);
        }
        if shares.is_empty() {
            continue;
        }
        use crate::analysis::stats::describe;
        let median = describe::median_sorted(&describe::sorted(&shares));
        if median < LOSSY_SHARE {
            continue;
        }
        out.push(Flag {
            kind: "loss".into(),
            runs,
            configurations: vec![c.label.clone()],
            serious: false,
            text: format!(
                "note: {}: its runs resent {:.1}% of their TCP bytes (median of {}; D-SACK's \
                 spurious resends left out): packets were lost on the path or dropped at a \
                 receiver, and its rate is the losses' as much as the hosts': `netsweep doctor` \
                 on the receiver names drops (rx_dropped, its NIC)",
                c.label,
                median * 100.0,
                shares.len()
            ),
        });
    }
    out
}

/// Configurations whose mean's interval reaches past the path's rate, or spans more than
/// `NOISY_FACTOR`: the data cannot support the interval.
fn interval_flags(
    ok: &[&RunRow],
    configs: &[ConfigRow],
    link_of: &dyn Fn(&ConfigRow) -> Option<f64>,
    confidence: f64,
) -> Vec<Flag> {
    use crate::analysis::stats::{describe, ttest};
    let mut out = Vec::new();
    for c in configs {
        let mine: Vec<&&RunRow> = ok.iter().filter(|r| r.configuration == c.label).collect();
        let v: Vec<f64> = mine.iter().filter_map(|r| r.bits_per_second).collect();
        if v.len() < 2 {
            continue;
        }
        let m = describe::mean(&v);
        let half = ttest::t_critical(confidence, (v.len() - 1) as f64) * describe::stddev(&v)
            / (v.len() as f64).sqrt();
        let (lo, hi) = (m - half, m + half);
        let lvl = crate::analysis::decide::words::level(confidence);
        let runs: Vec<i64> = mine.iter().map(|r| r.id).collect();
        let fix = "more rounds, longer runs (duration), or an idle host would narrow it";
        if let Some(l) = link_of(c).filter(|l| hi > l * 1.02) {
            out.push(Flag {
                kind: "ceiling".into(),
                runs,
                configurations: vec![c.label.clone()],
                serious: true,
                text: format!(
                    "CAUTION: {}: its {lvl} CI ({} to {}) reaches past the path's {}: the runs \
                     are too noisy for the interval to mean anything; {fix}",
                    c.label,
                    BitRate(lo.max(0.0)),
                    BitRate(hi),
                    BitRate(l)
                ),
            });
        } else if lo <= 0.0 || hi / lo > NOISY_FACTOR {
            out.push(Flag {
                kind: "noise".into(),
                runs,
                configurations: vec![c.label.clone()],
                serious: true,
                text: format!(
                    "CAUTION: {}: its {lvl} CI ({} to {}) spans more than {NOISY_FACTOR:.0}x: too \
                     noisy to say how fast it is; {fix}",
                    c.label,
                    BitRate(lo.max(0.0)),
                    BitRate(hi)
                ),
            });
        }
    }
    out
}
