//! The decision engine: one verdict for one pair of samples, shared by `sets` (`stats`, `compare`),
//! `explain`, the end of `run` and the report, so a campaign's pair never gets two verdicts.
//!
//! A comparison is an estimate of `to` against `from` on the analysis scale (`Scale::Log` for
//! rates: ratios; `Scale::Linear` otherwise: differences) with its standard error and degrees
//! of freedom, from one of two designs:
//! - `paired`: runs of one round are paired (rounds as blocks): the differences' mean and their
//!   own spread, Student's t with n - 1 degrees of freedom;
//! - `independent`: Welch's unequal-variance t (Welch 1947, Satterthwaite 1946 degrees of
//!   freedom), or its generalisation to several contexts averaged (`combined`).
//!
//! Each estimate gets two tests: a difference (two-sided t, `p`) and an equivalence within the
//! practical change (`Settings::change`, default 5%): Schuirmann's two one-sided tests (TOST,
//! Schuirmann 1987), `equivalence_p` the larger of the two one-sided p-values. A family of
//! comparisons is corrected with Holm's step-down method (Holm 1979) for both tests (`adjust`).
//! Outcomes: `Different`, `SmallDifference` (real but inside the practical change),
//! `Equivalent`, `Undecided` (with the largest change the data cannot rule out and the rounds
//! that would likely settle it), or `TooFew`. `words` turns a decision into one sentence;
//! `robust` screens runs far outside their siblings (median and MAD, Iglewicz and Hoaglin 1993).

pub mod blocked;
pub mod robust;
pub mod words;

use crate::analysis::stats::describe::{mean, variance};
use crate::analysis::stats::{holm, ttest};
use serde::Serialize;

/// The scale of an analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// ln(value): effects are ratios.
    Log,
    /// The value itself: effects are differences.
    Linear,
}

impl Scale {
    /// The value on this scale (`None` for a non-positive value on the log scale).
    pub fn to(self, v: f64) -> Option<f64> {
        match self {
            Scale::Log if v > 0.0 && v.is_finite() => Some(v.ln()),
            Scale::Log => None,
            Scale::Linear => v.is_finite().then_some(v),
        }
    }

    /// Back from this scale.
    pub fn back(self, y: f64) -> f64 {
        match self {
            Scale::Log => y.exp(),
            Scale::Linear => y,
        }
    }
}

/// What every decision is judged by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Confidence level of intervals and tests, e.g. 0.95 (alpha = 1 - confidence).
    pub confidence: f64,
    /// The smallest change that matters, relative (0.05 = 5%): the equivalence margin.
    pub change: f64,
    pub scale: Scale,
}

impl Settings {
    pub fn alpha(&self) -> f64 {
        1.0 - self.confidence
    }

    /// The equivalence margin on the analysis scale; `reference` is the `from` mean on that
    /// scale (linear margins are relative to it).
    pub fn margin(&self, reference: f64) -> f64 {
        match self.scale {
            Scale::Log => (1.0 + self.change).ln(),
            Scale::Linear => self.change * reference.abs(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            confidence: 0.95,
            change: DEFAULT_CHANGE,
            scale: Scale::Log,
        }
    }
}

/// The practical change when nobody says otherwise: 5%.
pub const DEFAULT_CHANGE: f64 = 0.05;

/// How an estimate was made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Design {
    /// `pairs` rounds in which both were run; `sd` the differences' standard deviation.
    Paired { pairs: usize, sd: f64 },
    /// Independent samples (Welch): runs of each side (per context, averaged), and the
    /// estimate's variance per run: the sum of the sides' per-run variances over the squared
    /// number of contexts (so n runs per side in every context give an error of
    /// sqrt(var_sum / n)).
    Independent {
        n_from: usize,
        n_to: usize,
        var_sum: f64,
        /// Satterthwaite's degrees of freedom at n runs per side are this times n - 1: the
        /// squared sum of the sides' per-run variances over the sum of their squares (2 for
        /// two equally noisy sides, 1 when one side's noise is all of it).
        #[serde(skip)]
        df_per_run: f64,
    },
    /// A contrast of the campaign's design (`blocked`): `configurations` run in `rounds` (the
    /// rounds as blocks), the error pooled over all of them with `df` degrees of freedom and
    /// `sd` its per-run standard deviation.
    Blocked {
        configurations: usize,
        rounds: usize,
        df: f64,
        sd: f64,
    },
}

/// `to` against `from` on the analysis scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub se: f64,
    pub df: f64,
    pub design: Design,
}

/// Paired differences (`to` minus `from`, one per round): their mean and own spread.
pub fn paired(diffs: &[f64]) -> Option<Estimate> {
    let n = diffs.len();
    if n < 2 {
        return None;
    }
    let sd = variance(diffs).sqrt();
    Some(Estimate {
        value: mean(diffs),
        se: sd / (n as f64).sqrt(),
        df: (n - 1) as f64,
        design: Design::Paired { pairs: n, sd },
    })
}

/// Welch's estimate of mean(`to`) - mean(`from`).
pub fn independent(from: &[f64], to: &[f64]) -> Option<Estimate> {
    combined(&[(from, to)])
}

/// Several contexts' differences of means, averaged with equal weights: the variance is the
/// sum of each side's variance of the mean over the squared number of contexts, with
/// Satterthwaite's degrees of freedom (Welch's test when there is one context). A side with a
/// single run borrows nothing: the context is left out.
pub fn combined(contexts: &[(&[f64], &[f64])]) -> Option<Estimate> {
    let usable: Vec<&(&[f64], &[f64])> = contexts
        .iter()
        .filter(|(a, b)| a.len() >= 2 && b.len() >= 2)
        .collect();
    let k = usable.len() as f64;
    if usable.is_empty() {
        return None;
    }
    let value = usable.iter().map(|(a, b)| mean(b) - mean(a)).sum::<f64>() / k;
    let mut var = 0.0;
    let mut df_den = 0.0;
    let (mut n_from, mut n_to, mut var_sum, mut var_squares) = (0, 0, 0.0, 0.0);
    for (a, b) in &usable {
        for s in [*a, *b] {
            let v = variance(s) / s.len() as f64;
            var += v;
            df_den += v * v / (s.len() - 1) as f64;
            var_squares += variance(s) * variance(s);
        }
        n_from += a.len();
        n_to += b.len();
        var_sum += variance(a) + variance(b);
    }
    let se = var.sqrt() / k;
    let df = if df_den > 0.0 {
        var * var / df_den
    } else {
        (n_from + n_to).saturating_sub(2).max(1) as f64
    };
    Some(Estimate {
        value,
        se,
        df,
        design: Design::Independent {
            n_from: n_from / usable.len(),
            n_to: n_to / usable.len(),
            var_sum: var_sum / (k * k),
            df_per_run: if var_squares > 0.0 {
                var_sum * var_sum / var_squares
            } else {
                2.0 * k
            },
        },
    })
}

/// `to` against `from`, each a name, its values and (in a campaign) each value's round: paired
/// by round when two rounds pair up (a round with several values gives their mean), else
/// Welch's test, on the settings' scale.
pub fn between(
    from: (&str, &[f64], Option<&[u32]>),
    to: (&str, &[f64], Option<&[u32]>),
    s: &Settings,
) -> Decision {
    let on_scale = |v: &[f64]| -> Option<Vec<f64>> { v.iter().map(|x| s.scale.to(*x)).collect() };
    let (Some(ya), Some(yb)) = (on_scale(from.1), on_scale(to.1)) else {
        return too_few(from.0, to.0, from.1.len(), to.1.len(), s);
    };
    let reference = mean(&ya);
    if let (Some(ba), Some(bb)) = (from.2, to.2) {
        let by_block = |ys: &[f64], bs: &[u32]| {
            let mut m: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
            for (y, b) in ys.iter().zip(bs) {
                m.entry(*b).or_default().push(*y);
            }
            m
        };
        let (ma, mb) = (by_block(&ya, ba), by_block(&yb, bb));
        let diffs: Vec<f64> = ma
            .iter()
            .filter_map(|(k, a)| Some(mean(mb.get(k)?) - mean(a)))
            .collect();
        if let Some(e) = paired(&diffs) {
            return decide(from.0, to.0, e, reference, s);
        }
    }
    match independent(&ya, &yb) {
        Some(e) => decide(from.0, to.0, e, reference, s),
        None => too_few(from.0, to.0, ya.len(), yb.len(), s),
    }
}

/// The outcome of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A difference shown, at least the practical change (or not shown to be smaller).
    Different,
    /// A difference shown, but shown to be inside the practical change: too small to matter.
    SmallDifference,
    /// No difference larger than the practical change (equivalence shown).
    Equivalent,
    /// Neither shown: more rounds would settle it.
    Undecided,
    /// Too few runs for any test.
    TooFew,
}

impl Outcome {
    /// Decided: a difference, or an equivalence, shown.
    pub fn decided(self) -> bool {
        matches!(
            self,
            Outcome::Different | Outcome::SmallDifference | Outcome::Equivalent
        )
    }
}

/// One comparison, judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub from: String,
    pub to: String,
    /// `to` over `from` (log scale), with its confidence interval.
    pub ratio: Option<f64>,
    /// `to` minus `from` (linear scale), with its confidence interval.
    pub difference: Option<f64>,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The level of `ci_low`/`ci_high`: `confidence` for a comparison on its own; after Holm's
    /// correction, 1 - alpha p / p_adjusted, so that the interval excludes no difference
    /// exactly when `p_adjusted` < alpha: the interval and the verdict are one test.
    pub ci_level: f64,
    /// Two-sided test of no difference, and after Holm's correction over its family.
    pub p: f64,
    pub p_adjusted: f64,
    /// Two one-sided tests of a difference inside the practical change, and corrected.
    pub equivalence_p: f64,
    pub equivalence_p_adjusted: f64,
    pub equivalent: bool,
    /// The 1 - 2 alpha interval the equivalence test uses (90% at 95%), on the same scale as
    /// `ci_low`/`ci_high`: equivalence is shown when it lies inside the practical change.
    pub equivalence_ci_low: f64,
    pub equivalence_ci_high: f64,
    /// The level of the equivalence interval: 1 - 2 alpha, or after Holm's correction
    /// 1 - 2 alpha p / p_adjusted (of the equivalence p-values), so that it lies inside the
    /// practical change exactly when equivalence is shown.
    pub equivalence_ci_level: f64,
    pub outcome: Outcome,
    /// The largest relative change the data cannot rule out (from the 1 - 2 alpha interval
    /// that the equivalence test uses), e.g. 0.18.
    pub not_ruled_out: f64,
    /// Undecided: about how many more rounds (paired) or runs per side (independent) would
    /// settle it if the noise stays as it is; `None` when decided, or when no practical number
    /// would (a change right at the threshold).
    pub rounds_needed: Option<usize>,
    /// The degrees of freedom of the test (of the pooled error for a blocked contrast).
    pub df: f64,
    pub design: Design,
    /// The practical change it was judged by, relative.
    pub change: f64,
    pub confidence: f64,
    #[serde(skip)]
    pub scale: Scale,
    #[serde(skip)]
    estimate: Estimate,
    #[serde(skip)]
    margin: f64,
    /// The `from` mean on the analysis scale.
    #[serde(skip)]
    reference: f64,
}

impl Decision {
    /// The `from` mean on the analysis scale (linear differences are relative to it).
    pub fn reference_mean(&self) -> f64 {
        self.reference
    }
}

/// Largest number of rounds `rounds_needed` looks at.
const MAX_ROUNDS: usize = 1000;

/// Judges `estimate` (of `to` against `from`); `reference` is the `from` mean on the analysis
/// scale. The adjusted p-values equal the raw ones until `adjust` runs over a family.
pub fn decide(from: &str, to: &str, estimate: Estimate, reference: f64, s: &Settings) -> Decision {
    let margin = s.margin(reference);
    let Estimate { value, se, df, .. } = estimate;
    let (p, equivalence_p) = tests(value, se, df, margin);
    let mut d = Decision {
        from: from.to_string(),
        to: to.to_string(),
        ratio: (s.scale == Scale::Log).then(|| value.exp()),
        difference: (s.scale == Scale::Linear).then_some(value),
        ci_low: f64::NAN,
        ci_high: f64::NAN,
        ci_level: s.confidence,
        p,
        p_adjusted: p,
        equivalence_p,
        equivalence_p_adjusted: equivalence_p,
        equivalent: false,
        equivalence_ci_low: f64::NAN,
        equivalence_ci_high: f64::NAN,
        equivalence_ci_level: 1.0 - 2.0 * s.alpha(),
        outcome: Outcome::Undecided,
        not_ruled_out: f64::INFINITY,
        rounds_needed: None,
        df,
        design: estimate.design,
        change: s.change,
        confidence: s.confidence,
        scale: s.scale,
        estimate,
        margin,
        reference,
    };
    judge(&mut d, s);
    d
}

/// A comparison that could not be estimated (fewer than two runs or rounds on a side).
pub fn too_few(from: &str, to: &str, n_from: usize, n_to: usize, s: &Settings) -> Decision {
    Decision {
        from: from.to_string(),
        to: to.to_string(),
        ratio: None,
        difference: None,
        ci_low: f64::NAN,
        ci_high: f64::NAN,
        ci_level: s.confidence,
        p: 1.0,
        p_adjusted: 1.0,
        equivalence_p: 1.0,
        equivalence_p_adjusted: 1.0,
        equivalent: false,
        equivalence_ci_low: f64::NAN,
        equivalence_ci_high: f64::NAN,
        equivalence_ci_level: 1.0 - 2.0 * s.alpha(),
        outcome: Outcome::TooFew,
        not_ruled_out: f64::INFINITY,
        rounds_needed: None,
        df: f64::NAN,
        design: Design::Independent {
            n_from,
            n_to,
            var_sum: f64::NAN,
            df_per_run: f64::NAN,
        },
        change: s.change,
        confidence: s.confidence,
        scale: s.scale,
        estimate: Estimate {
            value: f64::NAN,
            se: f64::NAN,
            df: f64::NAN,
            design: Design::Independent {
                n_from,
                n_to,
                var_sum: f64::NAN,
                df_per_run: f64::NAN,
            },
        },
        margin: f64::NAN,
        reference: f64::NAN,
    }
}

/// The two-sided p of no difference and the TOST p of a difference inside `margin`.
fn tests(value: f64, se: f64, df: f64, margin: f64) -> (f64, f64) {
    if !(se.is_finite() && df > 0.0) {
        return (1.0, 1.0);
    }
    if se == 0.0 {
        // Identical runs: exact answers.
        let p = if value == 0.0 { 1.0 } else { 0.0 };
        let eq = if value.abs() < margin { 0.0 } else { 1.0 };
        return (p, eq);
    }
    let p = ttest::t_p_value(value / se, df);
    // H0: value <= -margin (rejected when t_low is large) and H0: value >= margin.
    let p_low = ttest::t_cdf(-(value + margin) / se, df);
    let p_high = ttest::t_cdf((value - margin) / se, df);
    (p, p_low.max(p_high).clamp(0.0, 1.0))
}

/// The interval of `e` at `level` on the analysis scale (the estimate itself when exact).
fn interval(e: &Estimate, level: f64) -> (f64, f64) {
    if e.se > 0.0 && e.df > 0.0 {
        let t = ttest::t_critical(level, e.df);
        (e.value - t * e.se, e.value + t * e.se)
    } else {
        (e.value, e.value)
    }
}

/// The level at which an interval agrees with a Holm-adjusted test: alpha p / p_adjusted is
/// the largest significance level the raw test must reach for the adjusted one to reach alpha
/// (Holm 1979), so the interval at 1 - that level excludes no difference exactly when
/// `p_adjusted` < alpha.
fn holm_alpha(alpha: f64, p: f64, p_adjusted: f64) -> f64 {
    if p > 0.0 && p_adjusted > p {
        alpha * p / p_adjusted
    } else {
        alpha
    }
}

/// The largest relative change inside the interval `(lo, hi)` (the equivalence test's).
fn not_ruled_out((lo, hi): (f64, f64), s: &Settings, reference: f64) -> f64 {
    if !(lo.is_finite() && hi.is_finite()) {
        return f64::INFINITY;
    }
    match s.scale {
        Scale::Log => (hi.exp() - 1.0).max(1.0 - lo.exp()).max(0.0),
        Scale::Linear if reference != 0.0 => lo.abs().max(hi.abs()) / reference.abs(),
        Scale::Linear => f64::INFINITY,
    }
}

/// Sets the outcome from the adjusted p-values, and the rounds needed when undecided.
fn judge(d: &mut Decision, s: &Settings) {
    if d.outcome == Outcome::TooFew {
        return;
    }
    let alpha = s.alpha();
    let e = d.estimate;
    d.ci_level = 1.0 - holm_alpha(alpha, d.p, d.p_adjusted);
    let (lo, hi) = interval(&e, d.ci_level);
    (d.ci_low, d.ci_high) = (s.scale.back(lo), s.scale.back(hi));
    d.equivalence_ci_level =
        1.0 - 2.0 * holm_alpha(alpha, d.equivalence_p, d.equivalence_p_adjusted);
    let eq = interval(&e, d.equivalence_ci_level);
    (d.equivalence_ci_low, d.equivalence_ci_high) = (s.scale.back(eq.0), s.scale.back(eq.1));
    d.not_ruled_out = if e.se.is_finite() && e.df > 0.0 {
        not_ruled_out(eq, s, d.reference)
    } else {
        f64::INFINITY
    };
    let different = d.p_adjusted < alpha;
    d.equivalent = d.equivalence_p_adjusted < alpha;
    d.outcome = match (different, d.equivalent) {
        (true, true) => Outcome::SmallDifference,
        (true, false) => Outcome::Different,
        (false, true) => Outcome::Equivalent,
        (false, false) => Outcome::Undecided,
    };
    d.rounds_needed = (d.outcome == Outcome::Undecided)
        .then(|| rounds_needed(&d.estimate, d.margin, (d.ci_level, d.equivalence_ci_level)))
        .flatten();
}

/// About how many more rounds (paired, blocked) or runs per side (independent) until the
/// interval excludes no difference or fits inside the margin, if the estimate and the noise
/// stay as they are (the usual planning assumption), at the levels of the two intervals
/// (`levels`: the difference's and the equivalence's, Holm's correction counted). A blocked
/// contrast's variance falls as 1/rounds and its error gains configurations - 1 degrees of
/// freedom per round (Montgomery 4.1).
fn rounds_needed(e: &Estimate, margin: f64, levels: (f64, f64)) -> Option<usize> {
    let (n_now, per_run_sd): (usize, f64) = match e.design {
        Design::Paired { pairs, sd } => (pairs, sd),
        Design::Independent {
            n_from,
            n_to,
            var_sum,
            ..
        } => (n_from.min(n_to), var_sum.sqrt()),
        Design::Blocked { rounds, .. } => (rounds, e.se * (rounds as f64).sqrt()),
    };
    let df_of = |n: usize| -> f64 {
        match e.design {
            Design::Paired { .. } => (n - 1) as f64,
            // Welch's test: Satterthwaite's degrees of freedom at n runs per side.
            Design::Independent { df_per_run, .. } => df_per_run * (n - 1) as f64,
            Design::Blocked {
                configurations,
                rounds,
                df,
                ..
            } => df + (configurations.saturating_sub(1) * n.saturating_sub(rounds)) as f64,
        }
    };
    if !(per_run_sd.is_finite() && per_run_sd > 0.0 && e.value.is_finite()) {
        return None;
    }
    let d = e.value.abs();
    let settles = |n: usize| {
        let se = per_run_sd / (n as f64).sqrt();
        let df = df_of(n);
        let shows_difference = ttest::t_critical(levels.0, df) * se < d;
        let shows_equivalence = d < margin && ttest::t_critical(levels.1, df) * se < margin - d;
        shows_difference || shows_equivalence
    };
    // More rounds only narrow the interval (smaller error, more degrees of freedom), so the
    // first number that settles it is found by bisection.
    let (mut lo, mut hi) = (n_now.max(2) + 1, MAX_ROUNDS);
    if lo > hi || !settles(hi) {
        return None;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if settles(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo - n_now)
}

/// Holm's correction over a family of comparisons, for the difference and the equivalence
/// tests each; outcomes are judged again from the adjusted values.
pub fn adjust(family: &mut [Decision], s: &Settings) {
    let live: Vec<usize> = (0..family.len())
        .filter(|&i| family[i].outcome != Outcome::TooFew)
        .collect();
    let p: Vec<f64> = live.iter().map(|&i| family[i].p).collect();
    let eq: Vec<f64> = live.iter().map(|&i| family[i].equivalence_p).collect();
    for ((&i, pa), ea) in live.iter().zip(holm(&p)).zip(holm(&eq)) {
        family[i].p_adjusted = pa;
        family[i].equivalence_p_adjusted = ea;
        judge(&mut family[i], s);
    }
}

#[cfg(test)]
mod tests;
