//! `netsweep explain`: a campaign's answer. The effects of its dimensions (`analysis::effects`),
//! each configuration against its physical ceilings (the path's rate; one flow's window over
//! its RTT, from TCP_INFO), and what cannot matter by construction, read from the plan and the
//! stored results, never guessed. Pure: takes stored rows and results, returns values.

use super::campaign::{self, Judging, Metric, OutlierRun, Settled};
use super::plan::{PROFILE_DIMENSION as PROFILE, PlanFacts};
use super::store::{ConfigRow, RunRow};
use crate::analysis::decide::Decision;
use crate::analysis::effects::{self, Effects, Options};
use crate::analysis::stats::describe::{median_sorted, sorted};
use crate::traffic::result::TestResult;
use crate::units::BitRate;
use serde::Serialize;

mod advertised;
pub mod ceiling;
mod grants;
mod inert;
mod limits;
mod senders;
pub mod sessions;
mod trust;
pub use inert::{cannot_matter, profile_cannot_matter};
pub use trust::Flag;

/// One configuration against its ceilings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limit {
    pub configuration: String,
    /// Median goodput of its runs, bit/s.
    pub goodput_bps: f64,
    /// The path's rate, when known (a lab target, or `--rate`).
    pub link_bps: Option<f64>,
    /// TCP: the window the runs had over the path's idle RTT (medians of the runs), bit/s: the
    /// most a flow can carry (`ceiling`).
    pub window_bps: Option<f64>,
    /// TCP: the same window over the senders' mean RTT under load, bit/s: what a
    /// window-limited flow short of `window_bps` is stated against when a queue lengthened its
    /// round trip.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_window_bps: Option<f64>,
    /// That window in `-w`'s terms, over all streams, and where it came from: "asked" (granted
    /// in full), "granted" (cut by an end's maxima) or "advertised" (no `-w`: the largest
    /// window the receivers advertised).
    pub window_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_source: Option<String>,
    /// The idle RTT the window is judged over: the lab's, or the smallest the senders measured
    /// when longer.
    pub rtt_ms: Option<f64>,
    /// Mean share of time the sender waited for the receiver's window / its own buffer.
    pub rwnd_limited_percent: Option<f64>,
    pub sndbuf_limited_percent: Option<f64>,
    /// The rate asked for (all directions; UDP, and paced TCP), what UDP senders reached, and
    /// the loss (medians of the runs).
    pub asked_bps: Option<f64>,
    pub sent_bps: Option<f64>,
    pub loss_percent: Option<f64>,
    /// "link", "window", "receiver" (held by its window yet below what the window allows: a
    /// slow reader), "send buffer", "sender" (UDP: the sender fell short of the rate asked),
    /// "asked rate" (UDP, or paced TCP: delivered what was asked) or "other".
    pub limit: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub metric: Metric,
    #[serde(flatten)]
    pub effects: Effects,
    /// Every comparison of the answer, with its dimension.
    pub comparisons: Vec<NamedDecision>,
    /// Runs set aside as far outside their configuration's siblings (`--keep-outliers` keeps
    /// them).
    pub outliers: Vec<OutlierRun>,
    /// Whether the outliers were kept in the effects.
    pub outliers_kept: bool,
    /// Configurations none of whose runs succeeded.
    pub broken: Vec<String>,
    /// What limits trust in the figures: saturated hosts, intervals beyond a ceiling, noise.
    pub trust: Vec<Flag>,
    pub limits: Vec<Limit>,
    /// Configurations whose kernels granted a smaller window than `-w` asked: what was asked
    /// and granted, the limit that cut it, and the configurations granted in full; then those
    /// whose receivers never opened the window their buffers allow.
    pub grants: Vec<String>,
    /// Dimensions that cannot matter by construction, and why: in the whole campaign, or at
    /// some values of the other dimensions (each sentence then names them).
    pub cannot_matter: Vec<String>,
    /// Where the profile's comparisons cannot matter by construction (contexts, and pairs of
    /// profiles at a context): noise or drift, which no rounds settle.
    #[serde(flatten)]
    pub settled: Settled,
    /// The whole answer in words (effects, limits, facts).
    pub answer: String,
}

/// A comparison of the answer and the dimension it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NamedDecision {
    pub dimension: String,
    #[serde(flatten)]
    pub decision: Decision,
}

/// What an explanation is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub metric: Metric,
    /// Overrides the path's rate (bit/s).
    pub rate: Option<f64>,
    /// Keep outliers in the effects (else they are set aside and named).
    pub keep_outliers: bool,
    /// Overrides the plan's practical change.
    pub change: Option<f64>,
    pub confidence: f64,
}

impl Ask {
    pub fn new(metric: Metric) -> Ask {
        Ask {
            metric,
            rate: None,
            keep_outliers: false,
            change: None,
            confidence: 0.95,
        }
    }

    /// How comparisons are judged, with the plan's `[answer]` where the ask leaves it open.
    pub fn judging(&self, facts: &PlanFacts) -> Judging {
        Judging {
            confidence: self.confidence,
            change: self.change.unwrap_or(facts.answer.change),
            baselines: facts.answer.baselines.clone(),
        }
    }

    /// Outliers kept: asked, or the plan says so.
    pub fn keeps_outliers(&self, facts: &PlanFacts) -> bool {
        self.keep_outliers || facts.answer.keep_outliers
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    (!v.is_empty()).then(|| median_sorted(&sorted(&v)))
}

fn metric_words(metric: Metric) -> &'static str {
    match metric {
        Metric::BitsPerSecond => "goodput",
        Metric::Retransmits => "retransmits",
        Metric::LostPercent => "loss",
        Metric::JitterMs => "jitter",
        Metric::CpuLocalPercent => "local CPU",
        Metric::CpuRemotePercent => "remote CPU",
        Metric::LoadedP50Ms => "loaded latency p50 (ms)",
        Metric::LoadedP99Ms => "loaded latency p99 (ms)",
        Metric::AddedLatencyMs => "latency added by the load (ms)",
        Metric::TransferTimeRatio => "RFC 6349 transfer time ratio",
        Metric::TcpEfficiencyPercent => "RFC 6349 TCP efficiency (%)",
        Metric::BufferDelayPercent => "RFC 6349 buffer delay (%)",
        Metric::Transactions => "transactions per second",
        Metric::LatencyP99 => "transaction latency p99 (µs)",
    }
}

/// The answer for a campaign's runs. `results` are the stored results of successful runs by run
/// id, `counters` their stored counters (host CPU); `facts` what the campaign's plan said (its
/// target's rate, its profiles' keys and its `[answer]`).
pub fn explain(
    runs: &[RunRow],
    configs: &[ConfigRow],
    results: &[(i64, TestResult)],
    counters: &[(i64, serde_json::Value)],
    facts: &PlanFacts,
    ask: &Ask,
) -> Explanation {
    let metric = ask.metric;
    let judging = ask.judging(facts);
    let keep = ask.keeps_outliers(facts);
    let (screened, outliers) = campaign::screen(runs, metric);
    let used: &[RunRow] = if keep { runs } else { &screened };
    let obs = campaign::observations(used, metric);
    let order = campaign::dimension_order(configs);
    let what = metric_words(metric);
    let mut opts = Options::new(campaign::scale_of(metric, &obs), what);
    opts.settings.confidence = judging.confidence;
    opts.settings.change = judging.change;
    opts.baselines = judging.baselines.clone();
    if metric == Metric::BitsPerSecond {
        opts.unit = |x| BitRate(x).to_string();
    }
    let effects = effects::analyze(&obs, &order, &opts);
    // Each configuration's link: `--rate`, else its lab path's rate (a swept `rate` included),
    // else the target's.
    let link =
        |c: &ConfigRow| -> Option<f64> { ask.rate.or_else(|| facts.link_of(c.resolved.as_ref())) };
    let mut limits = if metric == Metric::BitsPerSecond {
        limits::limits(used, configs, results, &link, facts)
    } else {
        Vec::new()
    };
    // Host b a QEMU guest: what limits a run below its ceilings is, first, the emulation.
    if facts.guest {
        for l in limits.iter_mut().filter(|l| l.limit == "other") {
            l.text = in_a_guest(&l.text);
        }
    }
    let broken = broken(runs, configs);
    // Said after the headline with the broken: the runs left out of the answer.
    let warned: Vec<String> = broken
        .iter()
        .cloned()
        .chain(failed_runs(runs, configs))
        .collect();
    let window_limited: Vec<&str> = limits
        .iter()
        .filter(|l| l.limit == "window")
        .map(|l| l.configuration.as_str())
        .collect();
    let mut trust = trust::flags(
        used,
        configs,
        results,
        counters,
        &link,
        &window_limited,
        metric,
        judging.confidence,
    );
    let ok: Vec<&RunRow> = used.iter().filter(|r| r.status == "ok").collect();
    trust.splice(0..0, sessions::flag(&ok));
    let (cannot_matter, settled) = cannot_matter(facts, configs, used, results);
    let runs_of = grants::RunsOf::new(used, results);
    trust.splice(0..0, senders::flag(configs, &runs_of));
    trust.splice(0..0, advertised::flag(configs, &runs_of));
    let mut grants = grants::words(configs, &runs_of);
    grants.extend(grants::unopened(configs, &runs_of));
    let comparisons = effects
        .effects
        .iter()
        .flat_map(|e| {
            e.comparisons
                .iter()
                .chain(e.span.iter())
                .map(|d| NamedDecision {
                    dimension: e.dimension.clone(),
                    decision: d.clone(),
                })
        })
        .collect();
    let answer = words(
        &effects,
        &outliers,
        keep,
        &warned,
        &trust,
        &limits,
        (&grants, &cannot_matter),
    );
    let headline = effects
        .effects
        .iter()
        .find(|x| x.dimension == PROFILE)
        .and_then(crate::analysis::effects::headline)
        .map(|d| (d.from.as_str(), d.to.as_str()));
    let answer = inert::where_an_effect_cannot_matter(&answer, &settled, headline);
    Explanation {
        metric,
        effects,
        comparisons,
        outliers,
        outliers_kept: keep,
        broken,
        trust,
        limits,
        grants,
        cannot_matter,
        settled,
        answer,
    }
}

/// The answer: trust first when it is in doubt, then the effects, the outliers, the broken
/// configurations, the ceilings and the facts.
fn words(
    effects: &Effects,
    outliers: &[OutlierRun],
    kept: bool,
    broken: &[String],
    trust: &[Flag],
    limits: &[Limit],
    (grants, cannot_matter): (&[String], &[String]),
) -> String {
    let mut lines: Vec<String> = Vec::new();
    let serious: Vec<&Flag> = trust.iter().filter(|f| f.serious).collect();
    if effects.runs == 0 && broken.is_empty() {
        // No result and no failure: the campaign stopped before its first run ended (a trial
        // saw "every run failed" for a campaign interrupted at 8 s, where none had).
        return "no run has a result yet, so nothing can be said about what makes a difference: \
                the campaign stopped before its first run ended (no run failed); the line that \
                resumes it is the one its `netsweep run` printed as it stopped"
            .to_string();
    }
    lines.extend(effects.answer.lines().map(str::to_string));
    // After the headline: what the reader must know before believing it.
    let at = 1.min(lines.len());
    let mut warn: Vec<String> = serious.iter().map(|f| f.text.clone()).collect();
    for b in broken {
        warn.push(b.clone());
    }
    for (k, w) in warn.into_iter().enumerate() {
        lines.insert(at + k, w);
    }
    for o in outliers {
        if kept {
            lines.push(o.text.replace(
                "excluded from the effects",
                "kept in the effects (--keep-outliers)",
            ));
        } else {
            lines.push(o.text.clone());
        }
    }
    if !outliers.is_empty() && !kept {
        lines.push("(the answer with them included: add --keep-outliers)".into());
    }
    for f in trust.iter().filter(|f| !f.serious) {
        lines.push(f.text.clone());
    }
    lines.extend(limit_summary(limits));
    lines.extend(grants.iter().cloned());
    lines.extend(cannot_matter.iter().cloned());
    lines.join("\n")
}

/// Failed runs of configurations that also have good ones, left out of the answer: a VM
/// trial's guest died in the last round and the answer said nothing of its 4 failed runs.
fn failed_runs(runs: &[RunRow], configs: &[ConfigRow]) -> Option<String> {
    let mut parts = Vec::new();
    let (mut failed, mut last) = (0, None);
    for c in configs {
        let mine: Vec<&RunRow> = runs.iter().filter(|r| r.configuration == c.label).collect();
        let bad: Vec<&&RunRow> = mine.iter().filter(|r| r.status != "ok").collect();
        if bad.is_empty() || bad.len() == mine.len() {
            continue;
        }
        failed += bad.len();
        parts.push(format!("{} ({} of {})", c.label, bad.len(), mine.len()));
        if let Some(e) = bad.iter().rev().find_map(|r| r.error.clone()) {
            last = Some(e);
        }
    }
    (failed > 0).then(|| {
        format!(
            "{failed} run{} failed and {} left out of the answer, which rests on the rest: {}{}",
            if failed == 1 { "" } else { "s" },
            if failed == 1 { "is" } else { "are" },
            parts.join(", "),
            last.map(|e| format!(" (the last: {})", first_line(&e)))
                .unwrap_or_default()
        )
    })
}

/// Configurations with runs, none of which succeeded: broken, not slow.
fn broken(runs: &[RunRow], configs: &[ConfigRow]) -> Vec<String> {
    configs
        .iter()
        .filter_map(|c| {
            let mine: Vec<&RunRow> = runs.iter().filter(|r| r.configuration == c.label).collect();
            if mine.is_empty() || mine.iter().any(|r| r.status == "ok") {
                return None;
            }
            let last = mine
                .iter()
                .rev()
                .find_map(|r| r.error.clone())
                .unwrap_or_else(|| "no error recorded".into());
            Some(format!(
                "{} is broken, not slow: all {} of its runs failed (last: {}); it is left out of \
                 the effects",
                c.label,
                mine.len(),
                first_line(&last)
            ))
        })
        .collect()
}

/// A stored error's first line, for a line of the answer: what follows it (a guest's console)
/// stays with the run (`export`, the report), and would print here as escaped line breaks.
fn first_line(error: &str) -> String {
    crate::inputs::peer_text(error.lines().next().unwrap_or_default())
}

/// The "something else limits it" of a configuration whose server is a QEMU guest: its
/// emulated NIC and virtual CPU come first.
fn in_a_guest(text: &str) -> String {
    let guest = "the guest limits it (its NIC model's emulation and its virtual CPU; under TCG \
                 the emulated CPU first)";
    text.replace(ceiling::SOMETHING_ELSE, guest)
        .replace(ceiling::SOMETHING_ELSE_OR_THE_PATH, guest)
}

/// "window=64K, window=1M: window-limited at 95-99% of window/RTT; window=1536K: link-limited
/// at 88% of 1.00 Gbits/sec": neighbours at one ceiling are said together, with the range of
/// their shares.
fn limit_summary(limits: &[Limit]) -> Vec<String> {
    // Whether a window-limited share is stated over the loaded RTT (`ceiling`).
    let over_loaded = |l: &Limit| {
        let c = ceiling::Ceilings {
            window_bps: l.window_bps,
            loaded_window_bps: l.loaded_window_bps,
            ..Default::default()
        };
        ceiling::window_ceiling_used(l.goodput_bps, &c) != l.window_bps
    };
    let mut groups: Vec<Vec<&Limit>> = Vec::new();
    for l in limits {
        match groups.last_mut() {
            // Link-limited configurations share a line only when they share the link, and
            // window-limited ones when their shares are over the same RTT (a VM trial read one
            // line "at 93% of window/RTT (the RTT under load ...)" for one share over the idle
            // RTT and one over the loaded).
            Some(v)
                if v[0].limit == l.limit
                    && ((l.limit == "window" && over_loaded(v[0]) == over_loaded(l))
                        || (l.limit == "link" && v[0].link_bps == l.link_bps)) =>
            {
                v.push(l)
            }
            _ => groups.push(vec![l]),
        }
    }
    groups
        .into_iter()
        .map(|v| {
            let names: Vec<&str> = v.iter().map(|l| l.configuration.as_str()).collect();
            if v.len() == 1 {
                return format!("{}: {}", names[0], v[0].text);
            }
            // Each share against the ceiling its own sentence states (`ceiling`).
            let against = |l: &Limit| {
                if l.limit == "link" {
                    return l.link_bps;
                }
                let c = ceiling::Ceilings {
                    window_bps: l.window_bps,
                    loaded_window_bps: l.loaded_window_bps,
                    ..Default::default()
                };
                ceiling::window_ceiling_used(l.goodput_bps, &c)
            };
            let loaded = v
                .iter()
                .any(|l| l.limit == "window" && against(l) != l.window_bps);
            let shares: Vec<f64> = v
                .iter()
                .filter_map(|l| Some(l.goodput_bps / against(l)? * 100.0))
                .collect();
            let lo = shares.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = shares.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let range = if (hi - lo).abs() < 0.5 {
                format!("{lo:.0}%")
            } else {
                format!("{lo:.0}-{hi:.0}%")
            };
            let of = match (v[0].limit.as_str(), v[0].link_bps) {
                ("link", Some(l)) => format!("link-limited at {range} of {}", BitRate(l)),
                _ if loaded => format!(
                    "window-limited at {range} of window/RTT (the RTT under load where a queue \
                     lengthened it)"
                ),
                _ => format!("window-limited at {range} of window/RTT"),
            };
            format!("{}: {of}", names.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod unit_tests {
    use super::limits::classify_udp;
    use super::*;

    fn classify(
        goodput: f64,
        link: Option<f64>,
        window: Option<f64>,
        rwnd: Option<f64>,
        sndbuf: Option<f64>,
    ) -> (&'static str, String) {
        ceiling::classify(
            goodput,
            &ceiling::Ceilings {
                link_bps: link,
                window_bps: window,
                loaded_window_bps: None,
                asked_bps: None,
                rwnd_percent: rwnd,
                sndbuf_percent: sndbuf,
            },
        )
    }

    #[test]
    fn each_ceiling_is_named_with_its_share() {
        let (k, t) = classify(880e6, Some(1e9), Some(2e9), Some(0.0), Some(0.0));
        assert_eq!(k, "link");
        assert_eq!(t, "link-limited at 88% of 1.00 Gbits/sec");
        let (k, t) = classify(25e6, Some(1e9), Some(26e6), Some(97.0), Some(0.0));
        assert_eq!(k, "window");
        assert!(t.starts_with("window-limited at 96% of window/RTT"), "{t}");
        assert!(t.contains("97% of the time"), "{t}");
        let (k, _) = classify(5e6, Some(1e9), Some(100e6), Some(0.0), Some(80.0));
        assert_eq!(k, "send buffer");
        let (k, t) = classify(300e6, Some(1e9), Some(1e9), Some(0.0), Some(0.0));
        assert_eq!(k, "other");
        assert!(t.contains("30% of the link") && t.contains("CPU"), "{t}");
        let (_, t) = classify(300e6, None, None, None, None);
        assert!(t.contains("no ceiling known"), "{t}");
    }

    /// Regression (a VM trial): an autotuned guest at 421 Mbit/s on a 500 Mbit/s path, its
    /// senders waiting for the receiver's window 57% of the time, its advertised 719552 bytes
    /// over the 11.5 ms loaded RTT 502 Mbit/s (over the 8.3 ms idle RTT 693), was called
    /// "link-limited at 84%", where raising tcp_rmem lifted it 16%. Below 90% of the link with
    /// the senders held by the window most of the time, the link is not what holds it.
    #[test]
    fn a_flow_waiting_for_the_window_most_of_the_time_below_the_link_is_not_link_limited() {
        let c = ceiling::Ceilings {
            link_bps: Some(500e6),
            window_bps: Some(693e6),
            loaded_window_bps: Some(502e6),
            asked_bps: None,
            rwnd_percent: Some(57.3),
            sndbuf_percent: Some(0.0),
        };
        let (k, t) = ceiling::classify(421e6, &c);
        assert_eq!(k, "window", "{t}");
        assert!(
            t.starts_with("window-limited at 84% of window/loaded RTT"),
            "{t}"
        );
        // Waiting as long at 95% of the link: the link holds it.
        let (k, _) = ceiling::classify(475e6, &c);
        assert_eq!(k, "link");
        // Waiting little: the link at 84%.
        let quiet = ceiling::Ceilings {
            rwnd_percent: Some(5.0),
            ..c
        };
        assert_eq!(ceiling::classify(421e6, &quiet).0, "link");
    }

    #[test]
    fn a_udp_configuration_is_judged_against_what_was_asked_and_what_was_sent() {
        // The new user: -b 600M on a 500 Mbit/s path, the sender reaching 483.
        let (k, t) = classify_udp(480e6, Some(500e6), Some(600e6), Some(483e6), Some(0.99));
        assert_eq!(k, "sender");
        assert!(
            t.contains("reached 483 Mbits/sec of the 600 Mbits/sec asked")
                && t.contains("0.99% lost")
                && t.contains("is for 483 Mbits/sec"),
            "{t}"
        );
        let (k, t) = classify_udp(495e6, Some(500e6), Some(600e6), Some(600e6), Some(17.5));
        assert_eq!(k, "link");
        assert_eq!(
            t,
            "link-limited at 99% of 500 Mbits/sec (asked 600 Mbits/sec), 17.50% lost"
        );
        let (k, t) = classify_udp(99.9e6, Some(1e9), Some(100e6), Some(100e6), Some(0.1));
        assert_eq!(k, "asked rate");
        assert!(
            t.starts_with("delivered the asked rate: 100% of 100 Mbits/sec"),
            "{t}"
        );
        let (k, t) = classify_udp(50e6, None, Some(100e6), Some(100e6), Some(50.0));
        assert_eq!(k, "other");
        assert!(t.contains("50% of 100 Mbits/sec delivered"), "{t}");
        let (_, t) = classify_udp(3e9, None, None, Some(5e9), Some(40.0));
        assert!(t.starts_with("unlimited UDP"), "{t}");
    }

    #[test]
    fn below_the_ceilings_in_a_guest_names_the_guest() {
        let (_, t) = classify(300e6, Some(1e9), Some(1e9), Some(0.0), Some(0.0));
        let t = in_a_guest(&t);
        assert!(
            t.contains("the guest limits it (its NIC model's emulation"),
            "{t}"
        );
        assert!(!t.contains("something else"), "{t}");
    }

    #[test]
    fn neighbouring_configurations_with_one_limit_are_said_together() {
        let l = |c: &str, kind: &str, pct: f64, text: &str| Limit {
            configuration: c.into(),
            goodput_bps: pct,
            link_bps: Some(100.0),
            window_bps: Some(100.0),
            loaded_window_bps: None,
            window_bytes: None,
            window_source: None,
            rtt_ms: None,
            rwnd_limited_percent: None,
            sndbuf_limited_percent: None,
            asked_bps: None,
            sent_bps: None,
            loss_percent: None,
            limit: kind.into(),
            text: text.into(),
        };
        let lines = limit_summary(&[
            l(
                "window=64K",
                "window",
                97.0,
                "window-limited at 97% of window/RTT",
            ),
            l(
                "window=1M",
                "window",
                95.0,
                "window-limited at 95% of window/RTT",
            ),
            l(
                "window=1536K",
                "link",
                88.0,
                "link-limited at 88% of 1 Gbit/s",
            ),
            l("window=2M", "other", 50.0, "below its ceilings"),
            l("window=4M", "other", 40.0, "below its ceilings too"),
        ]);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(
            lines[0],
            "window=64K, window=1M: window-limited at 95-97% of window/RTT"
        );
        assert_eq!(lines[1], "window=1536K: link-limited at 88% of 1 Gbit/s");
        assert_eq!(lines[3], "window=4M: below its ceilings too");
        // One share over the idle RTT, one over the loaded: a line each (a VM trial's).
        let loaded = Limit {
            goodput_bps: 80.0,
            loaded_window_bps: Some(85.0),
            ..l(
                "window=64K direction=reverse",
                "window",
                80.0,
                "window-limited at 94% of window/loaded RTT",
            )
        };
        let lines = limit_summary(&[
            l(
                "window=64K direction=forward",
                "window",
                93.0,
                "window-limited at 93% of window/RTT",
            ),
            loaded,
        ]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(
            lines[0],
            "window=64K direction=forward: window-limited at 93% of window/RTT"
        );
    }
}
