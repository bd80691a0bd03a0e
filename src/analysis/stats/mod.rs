//! Statistics over groups of per-run values, pure functions over slices: ministat's vitals and
//! pooled Student's t, plus Welch's t-test, Mann-Whitney U, Hodges-Lehmann, Fieller's percent
//! interval, outliers, runs needed for a given power, Holm's correction, and a plain-words verdict.
//!
//! `analyze` is the entry point for `netsweep stats`, `compare` and the report: it takes named
//! sets, the first being the baseline, and returns an `Analysis` (also the `--json` document).

pub mod describe;
pub mod rank;
pub mod ttest;

pub use describe::{Description, describe};

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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            confidence: 0.95,
            detect_change: 0.05,
            power: 0.8,
            more: "higher".into(),
            less: "lower".into(),
        }
    }
}

/// Why an analysis could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("set {name:?} has {n} values; at least 3 are needed")]
    TooFew { name: String, n: usize },
    #[error("set {name:?} holds a value that is not finite ({value})")]
    NotFinite { name: String, value: f64 },
    #[error("confidence must be between 0 and 100% (exclusive), got {0}")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Welch (Holm-adjusted) says the difference is real.
    pub significant: bool,
    pub verdict: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub confidence: f64,
    pub sets: Vec<SetSummary>,
    pub comparisons: Vec<Comparison>,
}

/// Runs per set needed to detect a difference `delta` with standard deviation `sigma`
/// (two-sided, equal group sizes), by the t-based iteration of the normal formula.
pub fn runs_needed(sigma: f64, delta: f64, confidence: f64, power: f64) -> Option<usize> {
    if !delta.is_finite() || delta == 0.0 || !sigma.is_finite() {
        return None;
    }
    if !(confidence > 0.0 && confidence < 1.0 && power > 0.0 && power < 1.0) {
        return None;
    }
    if sigma == 0.0 {
        return Some(3);
    }
    let za = ttest::normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let zb = ttest::normal_quantile(power);
    let ratio = (sigma / delta).powi(2);
    let mut n = 2.0 * (za + zb).powi(2) * ratio;
    // Beyond this the answer is "far too many" whatever its digits: stop before iterating.
    const MAX_RUNS: f64 = 1e9;
    if !n.is_finite() || n > MAX_RUNS {
        return None;
    }
    for _ in 0..50 {
        let df = (2.0 * n - 2.0).max(1.0);
        let ta = ttest::t_critical(confidence, df);
        let tb = ttest::t_critical(2.0 * power - 1.0, df);
        let next = 2.0 * (ta + tb).powi(2) * ratio;
        if !next.is_finite() || (next - n).abs() < 1e-6 {
            break;
        }
        n = next;
    }
    if !n.is_finite() || n > MAX_RUNS {
        return None;
    }
    Some((n.ceil() as usize).max(3))
}

/// Holm's step-down adjustment of p-values (order preserved).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let k = p.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; k];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((k - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Fewest values per set an analysis accepts.
pub const MIN_RUNS: usize = 3;

fn check(name: &str, values: &[f64]) -> Result<(), StatsError> {
    if values.len() < MIN_RUNS {
        return Err(StatsError::TooFew {
            name: name.to_string(),
            n: values.len(),
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
    if !(cfg.confidence > 0.0 && cfg.confidence < 1.0) {
        return Err(StatsError::Confidence(cfg.confidence));
    }
    for (name, values) in sets {
        check(name, values)?;
    }
    let summaries: Vec<SetSummary> = sets
        .iter()
        .map(|(name, v)| SetSummary {
            name: name.clone(),
            description: describe(v),
        })
        .collect();
    let Some((base_name, base)) = sets.first() else {
        return Ok(Analysis {
            confidence: cfg.confidence,
            sets: summaries,
            comparisons: Vec::new(),
        });
    };
    let mut comparisons: Vec<Comparison> = sets[1..]
        .iter()
        .map(|(name, v)| compare(base_name, base, name, v, cfg))
        .collect();
    let adjusted = holm(&comparisons.iter().map(|c| c.welch.p).collect::<Vec<_>>());
    for (c, p) in comparisons.iter_mut().zip(adjusted) {
        c.welch_p_holm = p;
        c.significant = p < 1.0 - cfg.confidence;
    }
    let several = comparisons.len() > 1;
    for (i, c) in comparisons.iter_mut().enumerate() {
        c.verdict = verdict(c, &summaries[0], &summaries[i + 1], cfg, several);
    }
    Ok(Analysis {
        confidence: cfg.confidence,
        sets: summaries,
        comparisons,
    })
}

fn compare(base_name: &str, base: &[f64], name: &str, other: &[f64], cfg: &Config) -> Comparison {
    let welch = ttest::welch(base, other, cfg.confidence);
    let percent = ttest::percent_difference(base, other, cfg.confidence, welch.df);
    let (nb, no) = (base.len() as f64, other.len() as f64);
    let pooled_sd = (((nb - 1.0) * describe::variance(base)
        + (no - 1.0) * describe::variance(other))
        / (nb + no - 2.0))
        .sqrt();
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
        runs_needed: runs_needed(pooled_sd, delta, cfg.confidence, cfg.power),
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

/// One line in plain words, with warnings about noise, outliers and disagreeing tests.
fn verdict(
    c: &Comparison,
    base: &SetSummary,
    other: &SetSummary,
    cfg: &Config,
    holm_applied: bool,
) -> String {
    let conf = cfg.confidence * 100.0;
    let p = if holm_applied {
        format!("Holm-adjusted Welch {}", p_text(c.welch_p_holm))
    } else {
        format!("Welch {}", p_text(c.welch.p))
    };
    let ci = match (c.percent_ci_low, c.percent_ci_high) {
        (Some(lo), Some(hi)) => format!(" ({conf:.0}% CI {lo:.1}% to {hi:.1}%)"),
        _ => String::new(),
    };
    let mut line = if c.significant {
        let word = if c.difference > 0.0 {
            &cfg.more
        } else {
            &cfg.less
        };
        format!(
            "{} is {word} than {} by {:.1}%{ci}; {p}; {}",
            c.other,
            c.baseline,
            c.percent.abs(),
            runs_text(base.description.n, other.description.n)
        )
    } else {
        let n = base.description.n.min(other.description.n);
        let change = cfg.detect_change * 100.0;
        match c.runs_needed {
            Some(need) if need > n => format!(
                "no difference shown between {} and {} ({p}): need about {need} runs per set to detect a {change:.0}% change at this noise",
                c.other, c.baseline
            ),
            // Enough runs by the power calculation; the interval says whether it really
            // excludes a change of that size (Welch's df can be far below the pooled one).
            Some(_) => match (c.percent_ci_low, c.percent_ci_high) {
                (Some(lo), Some(hi)) if lo > -change && hi < change => format!(
                    "no difference shown between {} and {} ({p}); the {conf:.0}% CI {lo:.1}% to {hi:.1}% rules out a {change:.0}% change",
                    c.other, c.baseline
                ),
                _ => format!(
                    "no difference shown between {} and {} ({p}){ci}: a {change:.0}% change is not ruled out yet; a few more runs per set would settle it",
                    c.other, c.baseline
                ),
            },
            None => format!(
                "no difference shown between {} and {} ({p})",
                c.other, c.baseline
            ),
        }
    };
    let alpha = 1.0 - cfg.confidence;
    let mw_significant = c.mann_whitney.p < alpha;
    let (nb, no) = (base.description.n, other.description.n);
    let floor = rank::smallest_exact_p(no, nb);
    if c.significant
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
            "; Mann-Whitney cannot reach p < {alpha:.2} with {} (its smallest p is {floor:.3}{enough})",
            runs_text(nb, no)
        ));
    } else if mw_significant != c.significant {
        line.push_str(&format!(
            "; Mann-Whitney {} disagrees, look at the outliers and the shape of the data",
            p_text(c.mann_whitney.p)
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
