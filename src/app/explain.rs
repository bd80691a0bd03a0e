//! `netsweep explain`: the campaign's answer (`campaigns::explain`), printed or as JSON.

use super::db::{campaign_id, open_existing};
use crate::campaigns::campaign::Metric;
use crate::campaigns::explain::{self, Ask, Explanation};
use crate::campaigns::store::Store;
use crate::cli::ExplainArgs;
use crate::traffic::result::TestResult;
use crate::units::BitRate;
use anyhow::Context;
use std::process::ExitCode;

pub fn run(a: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&a.db)?;
    let campaign = campaign_id(&store, a.campaign, &a.db)?;
    let metric = Metric::from_flag(&a.metric).map_err(anyhow::Error::msg)?;
    let rate = a
        .rate
        .as_deref()
        .map(|r| r.parse::<BitRate>().map(|b| b.bits_per_second()))
        .transpose()
        .context("--rate")?;
    let mut ask = Ask::new(metric);
    ask.rate = rate;
    ask.keep_outliers = a.keep_outliers;
    (ask.change, ask.confidence) = judging_args(a.change.as_deref(), a.confidence)?;
    let e = explanation(&store, campaign, &ask)?;
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        crate::out!("{}", render(&e));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--change` and `-c` of `explain` and `compare`: the practical change and the confidence,
/// both as fractions.
pub fn judging_args(change: Option<&str>, confidence: f64) -> anyhow::Result<(Option<f64>, f64)> {
    let change = change
        .map(|c| crate::units::parse_percent(c).map(|x| x / 100.0))
        .transpose()
        .context("--change")?;
    if !(confidence > 0.0 && confidence < 100.0) {
        anyhow::bail!(
            "-c: the confidence level is a percentage between 0 and 100, got {confidence}"
        );
    }
    Ok((change, confidence / 100.0))
}

/// The explanation of a stored campaign (also the report's first section and the end of `run`).
pub fn explanation(store: &Store, campaign: i64, ask: &Ask) -> anyhow::Result<Explanation> {
    let row = store.campaign(campaign)?;
    let runs = store.runs(campaign)?;
    let configs = store.configurations(campaign)?;
    let results: Vec<(i64, TestResult)> = store
        .run_results(campaign)?
        .into_iter()
        .filter_map(|(id, json)| Some((id, serde_json::from_str(json.as_deref()?).ok()?)))
        .collect();
    let counters = stored_counters(store, campaign)?;
    Ok(explain::explain(
        &runs, &configs, &results, &counters, &row.facts, ask,
    ))
}

/// Each run's stored counters (kernel counters, host CPU), parsed.
pub fn stored_counters(
    store: &Store,
    campaign: i64,
) -> anyhow::Result<Vec<(i64, serde_json::Value)>> {
    Ok(store
        .run_counters(campaign)?
        .into_iter()
        .filter_map(|(id, json)| Some((id, serde_json::from_str(json.as_deref()?).ok()?)))
        .collect())
}

/// The answer first, then the effects table, the limits and the method.
pub fn render(e: &Explanation) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for line in e.answer.lines() {
        let _ = writeln!(out, "{line}");
    }
    let fmt = |v: f64| match e.metric {
        Metric::BitsPerSecond => BitRate(v).to_string(),
        _ => format!("{v:.3}"),
    };
    // What each value's figure is: a trial read "19.7 Mbits/sec (CI 19.7 to 19.7)" for runs
    // from 6.2 to 48.3 as a plain mean with a wrong interval.
    let mean = match e.effects.scale {
        crate::analysis::decide::Scale::Log => "geometric mean",
        crate::analysis::decide::Scale::Linear => "mean",
    };
    let _ = writeln!(
        out,
        "\nEffects ({} runs in {} configurations; each value's {mean} over the other \
         dimensions' values, its interval the design's):",
        e.effects.runs, e.effects.configurations
    );
    for x in &e.effects.effects {
        // "p < 0.001" where "p 0.000" read as no chance at all (a trial's finding).
        let p =
            x.p.map_or("p -".to_string(), crate::analysis::decide::words::p_text);
        let _ = writeln!(
            out,
            "  {:<14} share {:>5.1}%  {p}",
            x.dimension,
            x.share * 100.0
        );
        for m in &x.means {
            let runs = format!("{} run{}", m.n, if m.n == 1 { "" } else { "s" });
            // One run, or runs without spread, have no interval: said, not "NaN to NaN".
            let ci = if m.ci_low.is_finite() && m.ci_high.is_finite() {
                format!(
                    "{} CI {} to {}, {runs}",
                    crate::analysis::decide::words::level(e.effects.confidence),
                    fmt(m.ci_low),
                    fmt(m.ci_high)
                )
            } else {
                format!("{runs}, no interval")
            };
            let _ = writeln!(out, "    {:<12} {:>16}  ({ci})", m.value, fmt(m.mean));
        }
    }
    if let Some(d) = &e.effects.drift {
        let p = d.p.map_or("-".to_string(), |p| format!("{p:.3}"));
        let _ = writeln!(
            out,
            "  {:<14} share {:>5.1}%  p {p}",
            "(round)",
            d.share * 100.0
        );
    }
    if !e.limits.is_empty() {
        let _ = writeln!(out, "\nCeilings:");
        for l in &e.limits {
            let _ = writeln!(
                out,
                "  {:<28} {:>16}  {}",
                l.configuration,
                fmt(l.goodput_bps),
                l.text
            );
        }
    }
    let _ = writeln!(out, "\nMethod: {}.", e.effects.method);
    out
}
