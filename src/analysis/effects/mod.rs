//! What matters in a campaign, by how much: the effects of its dimensions ranked (pure).
//!
//! Method: a factorial analysis of variance (Montgomery, *Design and Analysis of Experiments*,
//! ch. 5) over every successful run that is not an outlier (`decide::robust`), with the
//! configurations (cells) as the full model. Each dimension's F test is against the
//! within-configuration mean square (pure error), and its share of the variation ranks it.
//! Pairs of dimensions get an interaction term. The round of each run is a block beside the
//! configurations: its effect is drift over the campaign's time. Throughput is analysed on a
//! log scale (effects on rates are multiplicative: "22x", not "+840 Mbit/s"), other metrics on
//! their own scale. The sums of squares come from least-squares fits (type II: each dimension
//! given the others, each interaction given the main effects; Langsrud 2003), and a value's
//! mean is the average of its configurations' means (Searle, Speed and Milliken 1980).
//!
//! How much each dimension matters is said by comparisons judged by `decide`: numeric
//! dimensions (window, streams, rate, ...) step from low to high; others (profile, congestion,
//! nic, words) are compared with a baseline (the plan's, or the first value). Each comparison
//! is a contrast of the whole design (`decide::blocked`): configurations with rounds as blocks,
//! the error pooled over every configuration (Montgomery ch. 4). Each dimension's comparisons form one family for Holm's correction.
//! Each value's confidence interval comes from its own configurations' spread (Satterthwaite's
//! degrees of freedom), so a noisy value does not widen a quiet one's. `words` says it all.

mod anova;
mod levels;
pub use levels::ordered_values;
mod words;
pub use words::headline;

use super::decide::{Decision, Outcome, Settings};
use crate::analysis::stats::describe::mean;
use anova::{dummies, f_sf, group, least_squares, products};
use serde::Serialize;

pub use super::decide::Scale;

/// One successful run: its configuration's dimension values, its round, and the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub dims: Vec<(String, String)>,
    pub round: u32,
    pub value: f64,
}

/// A value of a dimension: its mean and confidence interval (on the metric's own scale; a
/// geometric mean on the log scale), from its own configurations' spread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelMean {
    pub value: String,
    pub n: usize,
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    pub dimension: String,
    /// Share of the metric's total variation this dimension explains (eta squared).
    pub share: f64,
    /// F test against the within-configuration noise; `None` without repeated runs.
    pub p: Option<f64>,
    pub means: Vec<LevelMean>,
    /// Numeric values, compared step by step from low to high; else each against `baseline`.
    pub ordered: bool,
    pub baseline: Option<String>,
    /// The steps (ordered) or the comparisons with the baseline; Holm-adjusted over this
    /// dimension's comparisons and its span.
    pub comparisons: Vec<Decision>,
    /// From the value with the lowest mean to the one with the highest (in the values' order):
    /// the size of the effect.
    pub span: Option<Decision>,
    /// Every pair of values within the practical change (intersection-union: the largest of
    /// the pairs' equivalence p-values; Berger 1982).
    pub equivalence_p: Option<f64>,
    /// The values not shown below the best one (the best first), none of them with every run
    /// below every run of another member.
    pub best: Vec<String>,
    /// Every pair of values, for the bound on a dimension with no difference shown.
    #[serde(skip)]
    pub pairs: Vec<Decision>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interaction {
    pub a: String,
    pub b: String,
    pub share: f64,
    pub p: Option<f64>,
    /// How `a`'s effect differs across `b`'s values.
    pub text: String,
    /// Of `a` and `b`, those whose highest value changes with the other's value: a main
    /// effect of such a dimension is an average of effects that go opposite ways.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub crossing: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effects {
    pub scale: Scale,
    pub runs: usize,
    pub configurations: usize,
    /// Ranked, largest share first.
    pub effects: Vec<Effect>,
    pub interactions: Vec<Interaction>,
    /// The rounds as a block (drift over time), when there is more than one.
    pub drift: Option<Effect>,
    /// True when cells hold unequal numbers of runs (failed runs).
    pub unbalanced: bool,
    /// The practical change the answer is judged by (0.05 = 5%) and the confidence level.
    pub change: f64,
    pub confidence: f64,
    /// About how many more rounds would settle every undecided comparison (`None`: all
    /// decided, or no practical number would).
    pub rounds_needed: Option<usize>,
    /// Degrees of freedom of the error pooled over the whole design (configurations with rounds
    /// as blocks) that every comparison uses; `None` when one run per configuration leaves
    /// none, and comparisons fall back to each pair's own runs.
    pub pooled_df: Option<f64>,
    /// Brown and Forsythe's p when it shows the configurations are not equally noisy (below
    /// `blocked::UNEQUAL_NOISE_P`): no error is pooled, each pair is judged on its own runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unequal_noise_p: Option<f64>,
    pub method: String,
    /// The effects in words (`campaigns::explain` adds limits and facts to make the answer).
    #[serde(skip)]
    pub answer: String,
}

impl Effects {
    /// Every dimension of the answer decided: each of its comparisons shows a difference or
    /// an equivalence, or the dimension as a whole is shown to make no difference larger than
    /// the practical change (every pair of its values, intersection-union).
    pub fn decided(&self) -> bool {
        self.effects
            .iter()
            .all(|e| e.comparisons.iter().all(|d| d.outcome.decided()) || e.equivalent(self))
    }
}

impl Effect {
    /// Every pair of this dimension's values shown within the practical change (Berger 1982:
    /// an intersection-union test needs no correction for multiplicity).
    pub fn equivalent(&self, of: &Effects) -> bool {
        self.equivalence_p.is_some_and(|p| p < 1.0 - of.confidence)
    }
}

/// Significance level of the F tests.
pub const ALPHA: f64 = 0.05;

/// How the answer is judged and said.
#[derive(Debug, Clone)]
pub struct Options {
    pub settings: Settings,
    /// The value each unordered dimension is compared with (default: its first value).
    pub baselines: Vec<(String, String)>,
    /// The metric in words ("goodput").
    pub what: String,
    /// Formats a difference on the linear scale (units).
    pub unit: fn(f64) -> String,
}

impl Options {
    pub fn new(scale: Scale, what: &str) -> Options {
        Options {
            settings: Settings {
                scale,
                ..Settings::default()
            },
            baselines: Vec::new(),
            what: what.to_string(),
            unit: |x| words::fmt_num(x),
        }
    }
}

/// One configuration (cell): its values on the analysis scale.
pub(crate) struct Cell {
    dims: Vec<(String, String)>,
    ys: Vec<f64>,
    mean: f64,
}

impl Cell {
    fn value(&self, dim: &str) -> &str {
        self.dims
            .iter()
            .find(|(k, _)| k == dim)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// The estimated marginal mean of the cells `pick` selects: the plain average of their means,
/// so every configuration weighs the same however many of its runs failed.
fn marginal(cells: &[Cell], pick: impl Fn(&Cell) -> bool) -> Option<f64> {
    let chosen: Vec<&Cell> = cells.iter().filter(|c| pick(c)).collect();
    let k = chosen.len() as f64;
    (k > 0.0).then(|| chosen.iter().map(|c| c.mean).sum::<f64>() / k)
}

/// The pure error of the cells: its mean square and degrees of freedom, with drift taken out
/// when there is any to take out, and the drift's own sums.
struct Noise {
    ms_err: f64,
    df_err: f64,
    ss_round: f64,
    df_round: f64,
    distinct_rounds: usize,
    blocked: Option<(f64, f64)>,
}

fn noise(obs: &[Observation], ys: &[f64], cells: &[Cell], groups: &[Vec<f64>]) -> Noise {
    let n = ys.len();
    let ss_within: f64 = groups
        .iter()
        .map(|v| {
            let m = mean(v);
            v.iter().map(|y| (y - m).powi(2)).sum::<f64>()
        })
        .sum();
    let df_within = n.saturating_sub(cells.len()) as f64;
    let cell_labels: Vec<String> = obs.iter().map(|o| format!("{:?}", o.dims)).collect();
    let rounds: Vec<String> = obs.iter().map(|o| o.round.to_string()).collect();
    let round_cols = dummies(&rounds);
    let distinct_rounds = round_cols.len() + 1;
    let mut cols: Vec<Vec<f64>> = vec![vec![1.0; n]];
    cols.extend(dummies(&cell_labels));
    cols.extend(round_cols);
    let (ss_blocked, rank_blocked) = least_squares(&cols, ys);
    let df_round = (rank_blocked as f64 - cells.len() as f64).max(0.0);
    let ss_round = (ss_within - ss_blocked).max(0.0);
    let blocked = (df_round > 0.0 && df_within - df_round > 0.0)
        .then_some((ss_blocked, df_within - df_round));
    let (ss_err, df_err) = blocked.unwrap_or((ss_within, df_within));
    Noise {
        ms_err: if df_err > 0.0 {
            ss_err / df_err
        } else {
            f64::NAN
        },
        df_err,
        ss_round,
        df_round,
        distinct_rounds,
        blocked,
    }
}

/// A dimension, its values in the plan's order, and its indicator columns.
type Factor<'a> = (&'a String, &'a Vec<String>, Vec<Vec<f64>>);

/// Analyses `obs` (outliers already set aside by the caller). `order` lists each dimension's
/// values in the plan's order.
pub fn analyze(obs: &[Observation], order: &[(String, Vec<String>)], opts: &Options) -> Effects {
    let s = &opts.settings;
    let ys: Vec<f64> = obs
        .iter()
        .map(|o| match s.scale {
            Scale::Log => o.value.max(f64::MIN_POSITIVE).ln(),
            Scale::Linear => o.value,
        })
        .collect();
    let n = ys.len();
    let grand = mean(&ys);
    let ss_total: f64 = ys.iter().map(|y| (y - grand).powi(2)).sum();
    let cell_keys: Vec<Vec<(String, String)>> = obs.iter().map(|o| o.dims.clone()).collect();
    let grouped = group(&cell_keys, &ys);
    let cells: Vec<Cell> = grouped
        .iter()
        .map(|(k, v)| Cell {
            dims: k.clone(),
            ys: v.clone(),
            mean: mean(v),
        })
        .collect();
    let groups: Vec<Vec<f64>> = grouped.into_iter().map(|(_, v)| v).collect();
    let unbalanced = cells.iter().any(|c| c.ys.len() != cells[0].ys.len());
    let noise = noise(obs, &ys, &cells, &groups);
    let f_p = |ss: f64, df: f64| -> Option<f64> {
        if df <= 0.0 || noise.ms_err.is_nan() || noise.ms_err <= 0.0 {
            return None;
        }
        f_sf((ss / df) / noise.ms_err, df, noise.df_err)
    };
    let share = |ss: f64| if ss_total > 0.0 { ss / ss_total } else { 0.0 };
    let ones = vec![1.0; n];
    let factor = |dim: &str| -> Vec<String> {
        obs.iter()
            .map(|o| {
                o.dims
                    .iter()
                    .find(|(k, _)| k == dim)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
            .collect()
    };
    let factors: Vec<Factor> = order
        .iter()
        .map(|(d, values)| (d, values, dummies(&factor(d))))
        .filter(|(_, _, cols)| !cols.is_empty())
        .collect();
    let mains = |skip: Option<&str>| -> Vec<Vec<f64>> {
        let mut cols = vec![ones.clone()];
        for (d, _, c) in &factors {
            if Some(d.as_str()) != skip {
                cols.extend(c.iter().cloned());
            }
        }
        cols
    };
    let all_mains = mains(None);
    let (rss_mains, rank_mains) = least_squares(&all_mains, &ys);
    let data = levels::Data::new(obs, &ys);
    let mut effects = Vec::new();
    for (dim, values, _) in &factors {
        let (rss_without, rank_without) = least_squares(&mains(Some(dim)), &ys);
        let ss = (rss_without - rss_mains).max(0.0);
        let df = rank_mains.saturating_sub(rank_without) as f64;
        effects.push(dimension_effect(
            dim,
            values,
            &cells,
            &noise,
            &data,
            opts,
            (share(ss), f_p(ss, df)),
        ));
    }
    adjust_family(&mut effects, &data, s);
    effects.sort_by(|a, b| b.share.total_cmp(&a.share));
    let interactions = interactions(
        &factors, &cells, &all_mains, rss_mains, rank_mains, &ys, opts, grand, &f_p, &share,
    );
    let drift = drift(&noise, &share);
    let rounds_needed = effects
        .iter()
        .flat_map(|e| e.comparisons.iter())
        .filter(|d| d.outcome == Outcome::Undecided)
        .map(|d| d.rounds_needed)
        .try_fold(0usize, |m, r| r.map(|r| m.max(r)))
        .filter(|m| *m > 0);
    let method = words::method(
        opts,
        n,
        cells.len(),
        unbalanced,
        (data.pooled_df(), data.unequal_noise()),
    );
    let mut e = Effects {
        scale: s.scale,
        runs: n,
        configurations: cells.len(),
        effects,
        interactions,
        drift,
        unbalanced,
        change: s.change,
        confidence: s.confidence,
        rounds_needed,
        pooled_df: data.pooled_df(),
        unequal_noise_p: data.unequal_noise(),
        method,
        answer: String::new(),
    };
    e.answer = words::answer(&e, opts);
    e
}

/// One dimension's effect before the family's adjustment: its values in order, their means,
/// the comparisons the answer states (steps of an ordered dimension, differences from the
/// baseline of an unordered one), its span and every pair; `share` and `p` from the ANOVA.
fn dimension_effect(
    dim: &str,
    values: &[String],
    cells: &[Cell],
    noise: &Noise,
    data: &levels::Data,
    opts: &Options,
    (share, p): (f64, Option<f64>),
) -> Effect {
    let s = &opts.settings;
    let present: Vec<String> = values
        .iter()
        .filter(|v| cells.iter().any(|c| c.value(dim) == v.as_str()))
        .cloned()
        .collect();
    let ordered = levels::ordered_values(&present);
    let baseline = ordered.is_none().then(|| {
        opts.baselines
            .iter()
            .find(|(d, v)| d == dim && present.contains(v))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| present[0].clone())
    });
    let shown: Vec<String> = ordered.clone().unwrap_or_else(|| present.clone());
    let means: Vec<LevelMean> = shown
        .iter()
        .filter_map(|v| levels::level_mean(cells, dim, v, noise, s))
        .collect();
    let comparisons = match (&ordered, &baseline) {
        (Some(vals), _) => vals
            .windows(2)
            .map(|w| data.decide(dim, &w[0], &w[1], s))
            .collect(),
        (None, Some(b)) => present
            .iter()
            .filter(|v| *v != b)
            .map(|v| data.decide(dim, b, v, s))
            .collect(),
        (None, None) => Vec::new(),
    };
    Effect {
        dimension: dim.to_string(),
        share,
        p,
        ordered: ordered.is_some(),
        baseline,
        span: levels::span(data, dim, &shown, &means, s),
        best: Vec::new(),
        equivalence_p: None,
        pairs: levels::all_pairs(data, dim, &shown, s),
        means,
        comparisons,
    }
}

/// One family per dimension: every pair of its values (those the answer states in their stated
/// orientation), Holm-adjusted together (Holm 1979), so that the steps or the comparisons with
/// the baseline, the span and the best group all read from the same adjusted decisions, and
/// `compare`, which adjusts over the same pairs, says the same. Each dimension is its own
/// question against the one pooled error, as each factor's F test is in a factorial analysis
/// (Montgomery ch. 5).
fn adjust_family(effects: &mut [Effect], data: &levels::Data, s: &Settings) {
    let same =
        |d: &Decision, a: &str, b: &str| (d.from == a && d.to == b) || (d.from == b && d.to == a);
    for e in effects.iter_mut() {
        let mut family: Vec<Decision> = Vec::new();
        for d in e
            .comparisons
            .iter()
            .chain(e.span.iter())
            .chain(e.pairs.iter())
        {
            if !family.iter().any(|f| same(f, &d.from, &d.to)) {
                family.push(d.clone());
            }
        }
        super::decide::adjust(&mut family, s);
        for c in e.comparisons.iter_mut().chain(e.span.iter_mut()) {
            if let Some(f) = family.iter().find(|f| same(f, &c.from, &c.to)) {
                *c = f.clone();
            }
        }
        e.equivalence_p = levels::all_equivalent_p(&e.pairs);
        // The best value and those no adjusted pair shows below a member.
        let Some(top) = e.means.iter().max_by(|a, b| a.mean.total_cmp(&b.mean)) else {
            continue;
        };
        let top = vec![top.value.clone()];
        let mut best = top.clone();
        best.extend(
            e.means
                .iter()
                .map(|m| m.value.clone())
                .filter(|v| *v != top[0])
                .filter(|v| !family.iter().any(|d| levels::shown_below(d, v, &top))),
        );
        // Nor a value whose every run is below every run of a member.
        let snapshot = best.clone();
        best.retain(|v| {
            !family.iter().any(|d| levels::shown_below(d, v, &snapshot))
                && !snapshot
                    .iter()
                    .any(|m| data.below_every_run(&e.dimension, v, m))
        });
        e.best = best;
    }
}

/// The rounds as a block: how much of the variation they explain, and whether that is drift.
fn drift(noise: &Noise, share: &dyn Fn(f64) -> f64) -> Option<Effect> {
    (noise.distinct_rounds > 1).then(|| Effect {
        dimension: "round".into(),
        share: share(noise.ss_round),
        p: match noise.blocked {
            Some((ss_blocked, df)) if ss_blocked > 0.0 && noise.df_round > 0.0 => f_sf(
                (noise.ss_round / noise.df_round) / (ss_blocked / df),
                noise.df_round,
                df,
            ),
            _ => None,
        },
        means: Vec::new(),
        ordered: false,
        baseline: None,
        comparisons: Vec::new(),
        span: None,
        equivalence_p: None,
        best: Vec::new(),
        pairs: Vec::new(),
    })
}

/// Whether a dimension's highest value changes with the other's value, each way by at least
/// `margin` (on the design's scale): in some context value `x` beats `y` by the margin, and in
/// another `y` beats `x` by it. `joint` holds the pair's means by (a's value, b's value); `of_a`
/// asks it of `a` across `b`'s values, else of `b` across `a`'s.
fn flips(joint: &[((String, String), f64)], of_a: bool, margin: f64) -> bool {
    fn split(k: &(String, String), of_a: bool) -> (&String, &String) {
        if of_a { (&k.0, &k.1) } else { (&k.1, &k.0) }
    }
    let mean = |value: &String, context: &String| {
        joint
            .iter()
            .find(|(k, _)| split(k, of_a) == (value, context))
            .map(|(_, m)| *m)
    };
    let best = |context: &String| {
        joint
            .iter()
            .filter(|(k, _)| split(k, of_a).1 == context)
            .max_by(|x, y| x.1.total_cmp(&y.1))
            .map(|(k, _)| split(k, of_a).0)
    };
    let contexts: Vec<&String> = joint.iter().map(|(k, _)| split(k, of_a).1).collect();
    contexts.iter().any(|c1| {
        contexts.iter().any(|c2| {
            let (Some(x), Some(y)) = (best(c1), best(c2)) else {
                return false;
            };
            let ahead = |winner: &String, loser: &String, at: &String| {
                matches!((mean(winner, at), mean(loser, at)), (Some(w), Some(l)) if w - l >= margin)
            };
            x != y && ahead(x, y, c1) && ahead(y, x, c2)
        })
    })
}

/// Interactions of every pair of dimensions that are significant and large enough to matter.
#[allow(clippy::too_many_arguments)]
fn interactions(
    factors: &[Factor],
    cells: &[Cell],
    all_mains: &[Vec<f64>],
    rss_mains: f64,
    rank_mains: usize,
    ys: &[f64],
    opts: &Options,
    grand: f64,
    f_p: &dyn Fn(f64, f64) -> Option<f64>,
    share: &dyn Fn(f64) -> f64,
) -> Vec<Interaction> {
    let mut out = Vec::new();
    for (i, (a, _, ca)) in factors.iter().enumerate() {
        for (b, b_values, cb) in factors.iter().skip(i + 1) {
            let mut cols = all_mains.to_vec();
            cols.extend(products(ca, cb));
            let (rss_ab, rank_ab) = least_squares(&cols, ys);
            let ss = (rss_mains - rss_ab).max(0.0);
            let df = rank_ab.saturating_sub(rank_mains) as f64;
            let p = f_p(ss, df);
            // The pair's marginal means, every configuration weighing the same.
            let mut joint: Vec<((String, String), f64)> = Vec::new();
            for c in cells {
                let key = (c.value(a).to_string(), c.value(b).to_string());
                if joint.iter().all(|(k, _)| *k != key)
                    && let Some(m) = marginal(cells, |x| x.value(a) == key.0 && x.value(b) == key.1)
                {
                    joint.push((key, m));
                }
            }
            let scale = opts.settings.scale;
            if p.is_some_and(|p| p < ALPHA)
                && words::interaction_size(b_values, &joint, scale, grand) >= opts.settings.change
            {
                // A practical change each way, on the design's scale.
                let margin = match scale {
                    Scale::Log => (1.0 + opts.settings.change).ln(),
                    Scale::Linear => opts.settings.change * grand.abs(),
                };
                let flipped = |first: bool| flips(&joint, first, margin);
                let crossing = [(a, flipped(true)), (b, flipped(false))]
                    .into_iter()
                    .filter(|(_, f)| *f)
                    .map(|(d, _)| d.to_string())
                    .collect();
                out.push(Interaction {
                    a: a.to_string(),
                    b: b.to_string(),
                    share: share(ss),
                    p,
                    text: words::interaction_text(a, b, b_values, &joint, scale, &opts.what),
                    crossing,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod simulation;
#[cfg(test)]
mod tests;
