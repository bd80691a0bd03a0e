//! Named sets of per-run values against a baseline, ministat-style: each set's vitals and each
//! comparison's tests (Student's and Welch's t, Mann-Whitney, Hodges-Lehmann, runs needed,
//! Holm), with one verdict in plain words.
//!
//! `analyze` is the entry point for `netsweep stats`, `compare` and the report: it takes named
//! sets, the first being the baseline, and returns an `Analysis` (also the `--json` document).
//! Each comparison's verdict comes from the decision engine (`analysis::decide`), the one
//! `explain` uses: a difference, an equivalence within `detect_change`, or undecided with the
//! runs that would settle it. ministat's pooled Student's t is kept beside it, and the verdict
//! says when the two disagree and why. The statistics themselves are `analysis::stats`.

use crate::analysis::stats::{Description, describe, holm, rank, runs_needed_welch, ttest};
use serde::{Deserialize, Serialize};

/// Settings of an analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
    /// Relative change the runs-needed estimate is for (0.05 = 5% of the baseline mean).
    pub detect_change: f64,
    /// Power of that estimate.
    pub power: f64,
    /// Words for "more" and "less" in verdicts ("higher"/"lower", or "faster"/"slower").
    pub more: String,
    pub less: String,
    /// The scale the decision is made on (`Log` for rates: ratios, paired runs of a round as
    /// ratios too).
    pub scale: crate::analysis::decide::Scale,
    /// Which pairs are compared.
    pub pairs: Pairs,
}

/// Which pairs of sets an analysis compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairs {
    /// Every set against the first (ministat).
    AgainstFirst,
    /// Each set against the one before it (numeric values, low to high).
    Steps,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            confidence: 0.95,
            detect_change: 0.05,
            power: 0.8,
            more: "higher".into(),
            less: "lower".into(),
            scale: crate::analysis::decide::Scale::Linear,
            pairs: Pairs::AgainstFirst,
        }
    }
}

/// Why an analysis could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("set {name:?} has {n} values; at least {least} are needed")]
    TooFew {
        name: String,
        n: usize,
        least: usize,
    },
    #[error("set {name:?} holds a value that is not finite ({value})")]
    NotFinite { name: String, value: f64 },
    #[error("confidence must be between 0 and 100% (exclusive), got {}%", .0 * 100.0)]
    Confidence(f64),
}

/// One set's vitals, named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetSummary {
    pub name: String,
    #[serde(flatten)]
    pub description: Description,
}

/// One set against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline: String,
    pub other: String,
    /// mean(other) - mean(baseline).
    pub difference: f64,
    /// Percent difference relative to the baseline mean, with Fieller's interval.
    pub percent: f64,
    pub percent_ci_low: Option<f64>,
    pub percent_ci_high: Option<f64>,
    pub student: ttest::Student,
    pub welch: ttest::Welch,
    /// Welch's p after Holm's correction over all comparisons with this baseline.
    pub welch_p_holm: f64,
    pub mann_whitney: rank::MannWhitney,
    pub hodges_lehmann: rank::HodgesLehmann,
    /// Runs per set that would detect `detect_change` at `power`; `None` if undefined.
    pub runs_needed: Option<usize>,
    /// The relative change `runs_needed` is for (0.05 = 5%), so its line can name it.
    #[serde(default)]
    pub detect_change: f64,
    /// The decision engine's verdict says the difference is real (Holm-adjusted).
    pub significant: bool,
    /// The decision (`analysis::decide`): the one `explain` makes for the same pair.
    pub decision: crate::analysis::decide::Decision,
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    pub confidence: f64,
    pub sets: Vec<SetSummary>,
    pub comparisons: Vec<Comparison>,
    /// How many comparisons Holm's correction ran over: the printed ones, or for a campaign
    /// every pair of the sets (the family `explain` adjusts a dimension over).
    pub family: usize,
}

/// Fewest values per set an analysis accepts (ministat's minimum).
pub const MIN_RUNS: usize = 3;

/// Fewest values per set a campaign's comparison accepts, whose error is pooled over the
/// whole design as `explain` pools it: two, or the comparisons would refuse runs the answer
/// decides on (a VM trial read "not enough runs to compare" above "window matters most ...
/// p = 0.025", on the runs of a campaign whose guest died).
pub const MIN_RUNS_IN_DESIGN: usize = 2;

fn check(name: &str, values: &[f64], least: usize) -> Result<(), StatsError> {
    if values.len() < least {
        return Err(StatsError::TooFew {
            name: name.to_string(),
            n: values.len(),
            least,
        });
    }
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(StatsError::NotFinite {
            name: name.to_string(),
            value: *v,
        });
    }
    Ok(())
}

/// Analyses named sets; the first is the baseline.
pub fn analyze(sets: &[(String, Vec<f64>)], cfg: &Config) -> Result<Analysis, StatsError> {
    analyze_blocked(sets, None, cfg)
}

/// Analyses named sets whose values carry their block (a campaign's round): values of one
/// block are paired when at least two blocks pair up.
pub fn analyze_blocked(
    sets: &[(String, Vec<f64>)],
    blocks: Option<&[Vec<u32>]>,
    cfg: &Config,
) -> Result<Analysis, StatsError> {
    analyze_in_design(sets, blocks, None, cfg)
}

/// The estimate of set `to` against set `from` (by index) from a design the sets belong to
/// (a campaign's, `decide::blocked`), on `Config::scale`; `None` when it has none.
pub type FromDesign<'a> = &'a dyn Fn(usize, usize) -> Option<crate::analysis::decide::Estimate>;

/// Analyses named sets that are part of a larger design: each comparison's decision comes
/// from `design` when it gives an estimate (a campaign's contrast, the one `explain` makes),
/// else from the sets themselves (paired by block, or Welch). ministat's vitals and tests of
/// the sets are unchanged.
pub fn analyze_in_design(
    sets: &[(String, Vec<f64>)],
    blocks: Option<&[Vec<u32>]>,
    design: Option<FromDesign>,
    cfg: &Config,
) -> Result<Analysis, StatsError> {
    if !(cfg.confidence > 0.0 && cfg.confidence < 1.0) {
        return Err(StatsError::Confidence(cfg.confidence));
    }
    let least = match design {
        Some(_) => MIN_RUNS_IN_DESIGN,
        None => MIN_RUNS,
    };
    for (name, values) in sets {
        check(name, values, least)?;
    }
    let summaries: Vec<SetSummary> = sets
        .iter()
        .map(|(name, v)| SetSummary {
            name: name.clone(),
            description: describe(v),
        })
        .collect();
    if sets.is_empty() {
        return Ok(Analysis {
            confidence: cfg.confidence,
            sets: summaries,
            comparisons: Vec::new(),
            family: 0,
        });
    }
    let pairs: Vec<(usize, usize)> = match cfg.pairs {
        Pairs::AgainstFirst => (1..sets.len()).map(|i| (0, i)).collect(),
        Pairs::Steps => (1..sets.len()).map(|i| (i - 1, i)).collect(),
    };
    let block = |i: usize| blocks.and_then(|b| b.get(i)).map(Vec::as_slice);
    let mut comparisons: Vec<Comparison> = pairs
        .iter()
        .map(|&(a, b)| {
            compare(
                (&sets[a].0, &sets[a].1, block(a)),
                (&sets[b].0, &sets[b].1, block(b)),
                cfg,
                design.and_then(|f| f(a, b)),
            )
        })
        .collect();
    let adjusted = holm(&comparisons.iter().map(|c| c.welch.p).collect::<Vec<_>>());
    let mut decisions: Vec<_> = comparisons.iter().map(|c| c.decision.clone()).collect();
    if let Some(f) = design {
        // A campaign's family is every pair of its values, as `explain` adjusts a dimension.
        decisions.extend(other_pairs(sets, &pairs, f, cfg));
    }
    let family = decisions
        .iter()
        .filter(|d| d.outcome != crate::analysis::decide::Outcome::TooFew)
        .count();
    crate::analysis::decide::adjust(&mut decisions, &engine_settings(cfg));
    decisions.truncate(comparisons.len());
    for ((c, p), d) in comparisons.iter_mut().zip(adjusted).zip(decisions) {
        c.welch_p_holm = p;
        c.significant = matches!(
            d.outcome,
            crate::analysis::decide::Outcome::Different
                | crate::analysis::decide::Outcome::SmallDifference
        );
        c.decision = d;
    }
    let several = family > 1;
    for (c, &(a, b)) in comparisons.iter_mut().zip(&pairs) {
        let fieller = fieller_at(c, &sets[a].1, &sets[b].1);
        c.verdict = verdict(c, (&summaries[a], &summaries[b]), fieller, cfg, several);
    }
    Ok(Analysis {
        confidence: cfg.confidence,
        sets: summaries,
        comparisons,
        family,
    })
}

/// The pairs of `sets` not among `shown`, judged on the design: the rest of the family.
fn other_pairs(
    sets: &[(String, Vec<f64>)],
    shown: &[(usize, usize)],
    design: FromDesign,
    cfg: &Config,
) -> Vec<crate::analysis::decide::Decision> {
    let mut out = Vec::new();
    for a in 0..sets.len() {
        for b in a + 1..sets.len() {
            if shown.contains(&(a, b)) || shown.contains(&(b, a)) {
                continue;
            }
            let logs: Option<Vec<f64>> = sets[a].1.iter().map(|x| cfg.scale.to(*x)).collect();
            if let (Some(e), Some(l)) = (design(a, b), logs) {
                out.push(crate::analysis::decide::decide(
                    &sets[a].0,
                    &sets[b].0,
                    e,
                    describe::mean(&l),
                    &engine_settings(cfg),
                ));
            }
        }
    }
    out
}

/// The decision engine's settings for this analysis.
fn engine_settings(cfg: &Config) -> crate::analysis::decide::Settings {
    crate::analysis::decide::Settings {
        confidence: cfg.confidence,
        change: cfg.detect_change,
        scale: cfg.scale,
    }
}

/// A bound of a decision's interval as a change relative to the baseline.
fn relative(bound: f64, d: &crate::analysis::decide::Decision) -> f64 {
    match d.scale {
        crate::analysis::decide::Scale::Log => bound - 1.0,
        crate::analysis::decide::Scale::Linear => bound / d.reference_mean().abs(),
    }
}

/// A set: its name, its values and (in a campaign) each value's round.
type Set<'a> = (&'a String, &'a Vec<f64>, Option<&'a [u32]>);

fn decision(base: Set, other: Set, cfg: &Config) -> crate::analysis::decide::Decision {
    crate::analysis::decide::between(
        (base.0, base.1, base.2),
        (other.0, other.1, other.2),
        &engine_settings(cfg),
    )
}

fn compare(
    base_set: Set,
    other_set: Set,
    cfg: &Config,
    from_design: Option<crate::analysis::decide::Estimate>,
) -> Comparison {
    let (base_name, base, _) = base_set;
    let (name, other, _) = other_set;
    let welch = ttest::welch(base, other, cfg.confidence);
    let percent = ttest::percent_difference(base, other, cfg.confidence, welch.df);
    let variances = (describe::variance(base), describe::variance(other));
    let delta = cfg.detect_change * describe::mean(base).abs();
    Comparison {
        baseline: base_name.to_string(),
        other: name.to_string(),
        difference: describe::mean(other) - describe::mean(base),
        percent: percent.estimate,
        percent_ci_low: percent.ci_low,
        percent_ci_high: percent.ci_high,
        student: ttest::student(base, other, cfg.confidence),
        welch_p_holm: welch.p,
        significant: welch.significant,
        welch,
        mann_whitney: rank::mann_whitney(base, other),
        hodges_lehmann: rank::hodges_lehmann(base, other, cfg.confidence),
        runs_needed: runs_needed_welch(variances, delta, cfg.confidence, cfg.power),
        decision: match from_design {
            Some(e) => {
                let logs: Option<Vec<f64>> = base.iter().map(|x| cfg.scale.to(*x)).collect();
                let reference = logs.map_or(f64::NAN, |v| describe::mean(&v));
                crate::analysis::decide::decide(
                    base_name,
                    name,
                    e,
                    reference,
                    &engine_settings(cfg),
                )
            }
            None => decision(base_set, other_set, cfg),
        },
        detect_change: cfg.detect_change,
        verdict: String::new(),
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

fn runs_text(a: usize, b: usize) -> String {
    if a == b {
        format!("{a} runs each")
    } else {
        format!("{a} and {b} runs")
    }
}

/// One line in plain words from the decision, with warnings about noise, outliers and
/// disagreeing tests.
/// The percent interval of a Welch comparison of plain values at its decision's level, by
/// Fieller (1954): the difference's interval over the baseline's mean alone leaves the
/// baseline's own uncertainty out (a trial saw the verdict's 339.6-343.7% beside the block's
/// Fieller 334.5-348.9% for the same pair). `None` for other designs and scales, whose
/// intervals are the decision's own (ratios on the log scale are exact there).
fn fieller_at(c: &Comparison, base: &[f64], other: &[f64]) -> Option<ttest::Percent> {
    use crate::analysis::decide::{Design, Scale};
    let d = &c.decision;
    (d.scale == Scale::Linear && matches!(d.design, Design::Independent { .. }))
        .then(|| ttest::percent_difference(base, other, d.ci_level, c.welch.df))
}

fn verdict(
    c: &Comparison,
    (base, other): (&SetSummary, &SetSummary),
    fieller: Option<ttest::Percent>,
    cfg: &Config,
    holm_applied: bool,
) -> String {
    use crate::analysis::decide::{Outcome, words};
    let d = &c.decision;
    let lvl = words::interval_level(d.ci_level);
    let change = words::percent_text(cfg.detect_change);
    let name = match d.design {
        crate::analysis::decide::Design::Paired { .. } => "paired t",
        crate::analysis::decide::Design::Independent { .. } => "Welch",
        crate::analysis::decide::Design::Blocked { .. } => "t on the campaign's pooled error",
    };
    let p = if holm_applied {
        format!("Holm-adjusted {name} {}", p_text(d.p_adjusted))
    } else {
        format!("{name} {}", p_text(d.p))
    };
    // The decision's own interval, at the level its (Holm-adjusted) test was judged by; in
    // percent of plain values, Fieller's (`fieller_at`).
    let ci = if let Some(f) = &fieller {
        match (f.ci_low, f.ci_high) {
            (Some(lo), Some(hi)) => format!(" ({lvl} CI {lo:.1}% to {hi:.1}%, Fieller)"),
            _ => format!(" ({lvl} CI unbounded: the baseline's mean is not clearly away from 0)"),
        }
    } else if d.ci_low.is_finite() && d.ci_high.is_finite() {
        format!(
            " ({lvl} CI {:.1}% to {:.1}%)",
            relative(d.ci_low, d) * 100.0,
            relative(d.ci_high, d) * 100.0
        )
    } else {
        String::new()
    };
    let pct = match d.ratio {
        Some(r) => (r - 1.0) * 100.0,
        None => c.percent,
    };
    let runs = words::runs_text(d);
    // A percent of a baseline whose mean is not clearly above 0 has no meaning (and its sign
    // turns with the mean's): the difference itself then, its direction its own sign (a
    // trial's retransmits 0 -> 60 read "lower by NaN%"; -2.5 -> -11.5 "higher by 360%").
    let linear = d.scale == crate::analysis::decide::Scale::Linear;
    let unbounded = fieller.as_ref().is_some_and(|f| f.ci_low.is_none());
    let absolute = linear && (base.description.mean <= 0.0 || unbounded);
    let up = match d.ratio {
        Some(r) if !linear => r > 1.0,
        _ => c.difference > 0.0,
    };
    let mut line = match d.outcome {
        Outcome::Different | Outcome::SmallDifference => {
            let word = if up { &cfg.more } else { &cfg.less };
            let mut l = if absolute {
                format!(
                    "{} is {word} than {} by {} ({lvl} CI {} to {}; no percent: {}'s mean, {}, \
                     is not clearly above 0); {p}; {runs}",
                    c.other,
                    c.baseline,
                    words::value_text(c.difference.abs()),
                    words::value_text(d.ci_low),
                    words::value_text(d.ci_high),
                    c.baseline,
                    words::value_text(base.description.mean)
                )
            } else {
                format!(
                    "{} is {word} than {} by {:.1}%{ci}; {p}; {runs}",
                    c.other,
                    c.baseline,
                    pct.abs()
                )
            };
            if d.outcome == Outcome::SmallDifference {
                l.push_str(&format!("; real, but within the {change} that matters"));
            }
            l
        }
        Outcome::Equivalent => format!(
            "no difference larger than {change} between {} and {} (equivalence shown, {}{}; the {} CI {:.1}% to {:.1}% that the equivalence test uses lies inside ±{change}); {runs}",
            c.other,
            c.baseline,
            if holm_applied { "Holm-adjusted " } else { "" },
            p_text(if holm_applied {
                d.equivalence_p_adjusted
            } else {
                d.equivalence_p
            }),
            words::interval_level(d.equivalence_ci_level),
            relative(d.equivalence_ci_low, d) * 100.0,
            relative(d.equivalence_ci_high, d) * 100.0
        ),
        Outcome::Undecided => {
            let more = words::settle_text(d);
            format!(
                "no difference shown between {} and {} ({p}){ci}, but the data cannot rule out a change of up to {}: {}{more}",
                c.other,
                c.baseline,
                words::percent_text(d.not_ruled_out),
                words::degrees_text(d)
            )
        }
        Outcome::TooFew => format!(
            "too few runs to compare {} and {} ({runs})",
            c.other, c.baseline
        ),
    };
    // ministat's pooled t (the block above) when it says otherwise, and why.
    if cfg.scale == crate::analysis::decide::Scale::Linear
        && name == "Welch"
        && d.outcome != Outcome::TooFew
        && c.student.significant != (d.p < 1.0 - cfg.confidence)
    {
        let (vb, vo) = (
            describe::variance_of(&base.description),
            describe::variance_of(&other.description),
        );
        let ratio = if vb > 0.0 && vo > 0.0 {
            format!(", {:.1}x apart here", vb.max(vo) / vb.min(vo))
        } else {
            String::new()
        };
        line.push_str(&format!(
            "; ministat's pooled Student's t above {} a difference because it assumes equal \
             variances{ratio}; this verdict uses Welch's test, which does not",
            if c.student.significant {
                "finds"
            } else {
                "finds no"
            }
        ));
    }
    let alpha = 1.0 - cfg.confidence;
    let on_design = matches!(d.design, crate::analysis::decide::Design::Blocked { .. });
    // A campaign's comparison is the design's test alone: no second test of the pair.
    let mw_significant = if on_design {
        c.significant
    } else {
        c.mann_whitney.p < alpha
    };
    let (nb, no) = (base.description.n, other.description.n);
    let floor = rank::smallest_exact_p(no, nb);
    if !on_design
        && c.significant
        && !mw_significant
        && c.mann_whitney.method == rank::Method::Exact
        && floor >= alpha
    {
        // Not a disagreement: with so few runs the exact test cannot go below `floor`.
        let enough = (2..=64usize)
            .find(|n| rank::smallest_exact_p(*n, *n) < alpha)
            .map(|n| format!("; {n} runs each could"))
            .unwrap_or_default();
        line.push_str(&format!(
            "; Mann-Whitney cannot reach p < {} with {} (its smallest p is {floor:.3}{enough})",
            crate::analysis::decide::words::value_text(alpha),
            runs_text(nb, no)
        ));
    } else if mw_significant != c.significant {
        line.push_str(&format!(
            "; Mann-Whitney {} disagrees, look at the outliers and the shape of the data",
            p_text(c.mann_whitney.p)
        ));
    }
    // Values without any spread are almost always rounded figures (iperf3's "9.41 Gbits/sec"
    // copied by hand): the test then knows no noise, and its p and interval claim a
    // certainty the figures do not have (a trial's 9.41 x5 against 9.42 x5: p < 1e-16).
    let flat: Vec<&str> = [base, other]
        .iter()
        .filter(|s| s.description.stddev == 0.0)
        .map(|s| s.name.as_str())
        .collect();
    if !flat.is_empty() {
        line.push_str(&format!(
            "; {} {} no spread at all (rounded figures?): the p-value and interval know no \
             noise, so they overstate the certainty; give the unrounded values",
            flat.join(" and "),
            if flat.len() == 1 { "has" } else { "have" }
        ));
    }
    for s in [base, other] {
        if let Some(cv) = s.description.cv.filter(|cv| *cv > describe::HIGH_CV) {
            line.push_str(&format!("; {} is noisy (CV {:.1}%)", s.name, cv * 100.0));
        }
        if !s.description.outliers.is_empty() {
            line.push_str(&format!(
                "; {} has {} outlier(s)",
                s.name,
                s.description.outliers.len()
            ));
        }
    }
    line
}

#[cfg(test)]
mod tests;
