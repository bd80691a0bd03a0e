//! `netsweep explain`: a campaign's answer. The effects of its dimensions (`analysis::effects`),
//! each configuration against its physical ceilings (the path's rate; one flow's window over
//! its RTT, from TCP_INFO), and what cannot matter by construction, read from the plan and the
//! stored results, never guessed. Pure: takes stored rows and results, returns values.

use super::campaign::{self, Judging, Metric, OutlierRun};
use super::plan::PlanFacts;
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
mod limits;
mod senders;
pub mod sessions;
mod trust;
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
    /// That window in `-w`'s terms, over all streams, and where it came from: "asked" (granted
    /// in full), "granted" (cut by an end's maxima) or "advertised" (no `-w`: the largest
    /// window the receivers advertised).
    pub window_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_source: Option<String>,
    /// The idle RTT the window is judged over: the lab's, else the smallest the senders
    /// measured.
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
    /// Dimensions that cannot matter by construction, and why.
    pub cannot_matter: Vec<String>,
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
    let cannot_matter = cannot_matter(facts, configs, results);
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
        &broken,
        &trust,
        &limits,
        (&grants, &cannot_matter),
    );
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
                crate::inputs::peer_text(&last)
            ))
        })
        .collect()
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
    let mut groups: Vec<Vec<&Limit>> = Vec::new();
    for l in limits {
        match groups.last_mut() {
            // Link-limited configurations share a line only when they share the link.
            Some(v)
                if v[0].limit == l.limit
                    && (l.limit == "window"
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
            let shares: Vec<f64> = v
                .iter()
                .filter_map(|l| {
                    let ceiling = if l.limit == "link" {
                        l.link_bps
                    } else {
                        l.window_bps
                    }?;
                    Some(l.goodput_bps / ceiling * 100.0)
                })
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
                _ => format!("window-limited at {range} of window/RTT"),
            };
            format!("{}: {of}", names.join(", "))
        })
        .collect()
}

/// Sysctls `-w` makes irrelevant: with fixed socket buffers Linux does not autotune, which is
/// all `tcp_rmem`/`tcp_wmem` steer. `rmem_max`/`wmem_max` cap what SO_RCVBUF/SO_SNDBUF may ask
/// (not autotuning); in force mode root passes them with SO_*BUFFORCE.
const OVERRIDDEN_BY_WINDOW: [&str; 2] = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];
const CAPS_OF_WINDOW: [&str; 2] = ["net.core.rmem_max", "net.core.wmem_max"];

/// Why each of a profile's keys cannot matter when every run fixes its buffers.
fn inert_words(names: &[&str]) -> String {
    let tuning: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| OVERRIDDEN_BY_WINDOW.contains(n))
        .collect();
    let caps: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| CAPS_OF_WINDOW.contains(n))
        .collect();
    let mut out = String::new();
    if !tuning.is_empty() {
        out.push_str(&format!(
            ", which turns off Linux's buffer autotuning, the only thing {} steer",
            tuning.join(" and ")
        ));
    }
    if !caps.is_empty() {
        out.push_str(&format!(
            "{}{} cap only what SO_RCVBUF/SO_SNDBUF may ask",
            if tuning.is_empty() { ": " } else { "; " },
            caps.join(" and ")
        ));
    }
    out
}

/// Dimensions that cannot change the result by construction, read from the plan's profiles, the
/// tests as resolved and what the runs were granted.
fn cannot_matter(
    facts: &PlanFacts,
    configs: &[ConfigRow],
    results: &[(i64, TestResult)],
) -> Vec<String> {
    let mut out = Vec::new();
    if facts.profile_keys.is_empty() {
        return out;
    }
    let specs: Vec<_> = configs
        .iter()
        .filter_map(|c| c.resolved.as_ref().map(|r| &r.spec))
        .collect();
    let all_fixed = !specs.is_empty()
        && specs.len() == configs.len()
        && specs.iter().all(|s| s.window_bytes.is_some());
    if !all_fixed {
        return out;
    }
    let all_forced = specs.iter().all(|s| s.window_mode.forced());
    // Were the buffers granted as asked (root, or caps high enough)? Then the caps did not bind.
    let granted = !results.is_empty()
        && results.iter().all(|(_, t)| {
            t.spec.window_bytes.is_none_or(|w| {
                t.start
                    .client_sockets
                    .iter()
                    .chain(&t.start.server_sockets)
                    .all(|s| {
                        // The end's own account, else the reported sizes (older records).
                        s.window_bytes
                            .map_or(s.rcvbuf_bytes >= w && s.sndbuf_bytes >= w, |g| g >= w)
                    })
            })
        });
    out.extend(profile_cannot_matter(
        &facts.profile_keys,
        all_forced,
        granted,
    ));
    out
}

/// The sentence for a swept profile whose every key is inert when every run fixes its buffers
/// with `-w`: `all_forced` (force mode everywhere), `granted` (every run was granted its window
/// in full, so the caps did not bind). `run --check` says it before any run (forced windows).
pub fn profile_cannot_matter(keys: &[String], all_forced: bool, granted: bool) -> Option<String> {
    // Forced windows pass the caps by construction; asked ones only when granted in full.
    let inert = |k: &str| {
        OVERRIDDEN_BY_WINDOW.contains(&k)
            || ((granted || all_forced) && CAPS_OF_WINDOW.contains(&k))
    };
    if keys.is_empty() || !keys.iter().all(|k| inert(k)) {
        return None;
    }
    // Sorted and each once (`Plan::facts`).
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    Some(format!(
        "profile cannot matter here by construction: every run fixes its socket buffers with \
         -w (window) in --window-mode {}{}{}",
        if all_forced { "force" } else { "ask" },
        inert_words(&names),
        match (all_forced, names.iter().any(|n| CAPS_OF_WINDOW.contains(n))) {
            (true, true) =>
                "; forced windows pass net.core.rmem_max/wmem_max, so the caps cannot bind \
                 (window_mode = \"ask\" lets them)",
            (false, true) => "; the buffers were granted in full, so the caps did not bind",
            _ => "",
        }
    ))
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
    }
}
