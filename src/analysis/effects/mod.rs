//! What matters in a campaign, by how much: the effects of its dimensions ranked (pure).
//!
//! Method: a factorial analysis of variance (Montgomery, *Design and Analysis of Experiments*,
//! ch. 5) over every successful run, with the configurations (cells) as the full model. Each
//! dimension's F test is against the
//! within-configuration mean square (pure error), so an effect "matters" only beyond the noise
//! of repeated runs of one configuration. Pairs of dimensions get an interaction term (the
//! variation of their joint means beyond the two main effects). The round of each run is a
//! block beside the configurations: its effect is drift over the campaign's time. Throughput is analysed
//! on a log scale (effects on rates are multiplicative: "22x", not "+840 Mbit/s"), other
//! metrics on their own scale. The sums of squares come from least-squares fits (type II:
//! each dimension given the others, each interaction given the main effects; Langsrud 2003), and
//! a value's mean is the average of its configurations' means: equal to the classical marginal
//! sums and means when every configuration has the same number of runs, and still exact when
//! failed runs leave them unequal.

mod anova;

use super::stats::ttest::{t_cdf, t_quantile};
use anova::{dummies, f_sf, group, least_squares, mean, products};
use serde::Serialize;

/// One successful run: its configuration's dimension values, its round, and the metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub dims: Vec<(String, String)>,
    pub round: u32,
    pub value: f64,
}

/// The scale of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// ln(value): effects are ratios.
    Log,
    /// The value itself: effects are differences.
    Linear,
}

/// A value of a dimension: its mean and 95% confidence interval (on the metric's own scale;
/// a geometric mean on the log scale).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelMean {
    pub value: String,
    pub n: usize,
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// One step between consecutive values (in the plan's order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub from: String,
    pub to: String,
    /// `to` over `from` (log scale) or `to` minus `from` (linear).
    pub change: f64,
    pub p: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    pub dimension: String,
    /// Share of the metric's total variation this dimension explains (eta squared).
    pub share: f64,
    /// F test against the within-configuration noise; `None` without repeated runs.
    pub p: Option<f64>,
    pub means: Vec<LevelMean>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interaction {
    pub a: String,
    pub b: String,
    pub share: f64,
    pub p: Option<f64>,
    /// How `a`'s effect differs across `b`'s values.
    pub text: String,
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
    pub method: String,
    /// The effects in words (`campaigns::explain` adds limits and facts to make the answer).
    #[serde(skip)]
    pub answer: String,
}

/// Significance level of "matters".
pub const ALPHA: f64 = 0.05;
/// The smallest effect that matters in practice: the largest mean of a dimension's values over
/// the smallest, less one (log scale), or their difference over the overall mean (linear). With
/// very quiet runs a 0.2% difference is significant; it is real, and still too small to matter.
pub const PRACTICAL: f64 = 0.02;

/// How large an effect is: the spread of its means (see `PRACTICAL`).
fn magnitude(means: &[LevelMean], scale: Scale, grand: f64) -> f64 {
    let hi = means
        .iter()
        .map(|m| m.mean)
        .fold(f64::NEG_INFINITY, f64::max);
    let lo = means.iter().map(|m| m.mean).fold(f64::INFINITY, f64::min);
    match scale {
        Scale::Log if lo > 0.0 => hi / lo - 1.0,
        _ if grand.abs() > 0.0 => (hi - lo) / grand.abs(),
        _ => f64::INFINITY,
    }
}

/// A dimension, its values in the plan's order, and its indicator columns.
type Factor<'a> = (&'a String, &'a Vec<String>, Vec<Vec<f64>>);

/// One configuration (cell): its mean and number of runs.
struct Cell {
    dims: Vec<(String, String)>,
    mean: f64,
    n: usize,
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
/// so every configuration weighs the same however many of its runs failed (Searle, Speed and
/// Milliken 1980). Its variance, in units of the error mean square: sum(1/n) / k^2.
fn marginal(cells: &[Cell], pick: impl Fn(&Cell) -> bool) -> Option<(f64, f64)> {
    let chosen: Vec<&Cell> = cells.iter().filter(|c| pick(c)).collect();
    let k = chosen.len() as f64;
    (k > 0.0).then(|| {
        (
            chosen.iter().map(|c| c.mean).sum::<f64>() / k,
            chosen.iter().map(|c| 1.0 / c.n as f64).sum::<f64>() / (k * k),
        )
    })
}

/// Analyses `obs` (the scale is chosen by the caller: `Log` for rates). `order` lists each
/// dimension's values in the plan's order.
pub fn analyze(
    obs: &[Observation],
    order: &[(String, Vec<String>)],
    scale: Scale,
    what: &str,
) -> Effects {
    let ys: Vec<f64> = obs
        .iter()
        .map(|o| match scale {
            Scale::Log => o.value.max(f64::MIN_POSITIVE).ln(),
            Scale::Linear => o.value,
        })
        .collect();
    let n = ys.len();
    let grand = mean(&ys);
    let ss_total: f64 = ys.iter().map(|y| (y - grand).powi(2)).sum();
    let cell_keys: Vec<Vec<(String, String)>> = obs.iter().map(|o| o.dims.clone()).collect();
    let groups = group(&cell_keys, &ys);
    let cells: Vec<Cell> = groups
        .iter()
        .map(|(k, v)| Cell {
            dims: k.clone(),
            mean: mean(v),
            n: v.len(),
        })
        .collect();
    let ss_within: f64 = groups
        .iter()
        .map(|(_, v)| {
            let m = mean(v);
            v.iter().map(|y| (y - m).powi(2)).sum::<f64>()
        })
        .sum();
    let df_within = n.saturating_sub(cells.len()) as f64;
    let unbalanced = cells.iter().any(|c| c.n != cells[0].n);
    let ones = vec![1.0; n];
    // Drift: the rounds as blocks beside the configurations (exact whatever failed).
    let cell_labels: Vec<String> = cell_keys.iter().map(|k| format!("{k:?}")).collect();
    let rounds: Vec<String> = obs.iter().map(|o| o.round.to_string()).collect();
    let round_cols = dummies(&rounds);
    let distinct_rounds = round_cols.len() + 1;
    let mut cols: Vec<Vec<f64>> = vec![ones.clone()];
    cols.extend(dummies(&cell_labels));
    cols.extend(round_cols);
    let (ss_blocked, rank_blocked) = least_squares(&cols, &ys);
    let df_round = (rank_blocked as f64 - cells.len() as f64).max(0.0);
    let ss_round = (ss_within - ss_blocked).max(0.0);
    // Pure error with the drift taken out when there is any to take out.
    let (ss_err, df_err) = if df_round > 0.0 && df_within - df_round > 0.0 {
        (ss_blocked, df_within - df_round)
    } else {
        (ss_within, df_within)
    };
    let ms_err = if df_err > 0.0 {
        ss_err / df_err
    } else {
        f64::NAN
    };
    let f_p = |ss: f64, df: f64| -> Option<f64> {
        if df <= 0.0 || ms_err.is_nan() || ms_err <= 0.0 {
            return None;
        }
        f_sf((ss / df) / ms_err, df, df_err)
    };
    let share = |ss: f64| if ss_total > 0.0 { ss / ss_total } else { 0.0 };
    let t = t_quantile(0.975, df_err.max(1.0));
    let back = |x: f64| match scale {
        Scale::Log => x.exp(),
        Scale::Linear => x,
    };
    let level_mean = |dim: &str, value: &str| -> Option<LevelMean> {
        let (m, var) = marginal(&cells, |c| c.value(dim) == value)?;
        // The CI uses the pooled error (few runs per level would make their own spread a
        // poor estimate).
        let se = if ms_err.is_finite() && df_err > 0.0 {
            (ms_err * var).sqrt()
        } else {
            f64::NAN
        };
        let half = if se.is_finite() { t * se } else { f64::NAN };
        Some(LevelMean {
            value: value.to_string(),
            n: obs
                .iter()
                .filter(|o| o.dims.iter().any(|(k, v)| k == dim && v == value))
                .count(),
            mean: back(m),
            ci_low: back(m - half),
            ci_high: back(m + half),
        })
    };
    // Each dimension's indicator columns; those with one value have none and are left out.
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
    // Type II sums of squares (Langsrud 2003): each dimension given all the others, each pair's
    // interaction given every main effect; equal to the classical sums when the design is
    // balanced, and exact when failed runs make it unbalanced.
    let all_mains = mains(None);
    let (rss_mains, rank_mains) = least_squares(&all_mains, &ys);
    let mut effects = Vec::new();
    for (dim, values, _) in &factors {
        let (rss_without, rank_without) = least_squares(&mains(Some(dim)), &ys);
        let ss = (rss_without - rss_mains).max(0.0);
        let df = rank_mains.saturating_sub(rank_without) as f64;
        let means: Vec<LevelMean> = values.iter().filter_map(|v| level_mean(dim, v)).collect();
        let steps = means
            .windows(2)
            .map(|w| {
                let (a, b) = (&w[0].value, &w[1].value);
                let pick = |v: &str| marginal(&cells, |c| c.value(dim) == v);
                let (Some((ma, va)), Some((mb, vb))) = (pick(a), pick(b)) else {
                    unreachable!("both values have means")
                };
                let d = mb - ma;
                let se = (ms_err * (va + vb)).sqrt();
                let p = (se > 0.0 && se.is_finite() && df_err > 0.0)
                    .then(|| 2.0 * (1.0 - t_cdf((d / se).abs(), df_err)));
                Step {
                    from: a.clone(),
                    to: b.clone(),
                    change: match scale {
                        Scale::Log => d.exp(),
                        Scale::Linear => d,
                    },
                    p,
                }
            })
            .collect();
        effects.push(Effect {
            dimension: dim.to_string(),
            share: share(ss),
            p: f_p(ss, df),
            means,
            steps,
        });
    }
    effects.sort_by(|a, b| b.share.total_cmp(&a.share));
    let mut interactions = Vec::new();
    for (i, (a, _, ca)) in factors.iter().enumerate() {
        for (b, b_values, cb) in factors.iter().skip(i + 1) {
            let mut cols = all_mains.clone();
            cols.extend(products(ca, cb));
            let (rss_ab, rank_ab) = least_squares(&cols, &ys);
            let ss = (rss_mains - rss_ab).max(0.0);
            let df = rank_ab.saturating_sub(rank_mains) as f64;
            let p = f_p(ss, df);
            // The pair's marginal means, every configuration weighing the same.
            let mut joint: Vec<((String, String), f64)> = Vec::new();
            for c in &cells {
                let key = (c.value(a).to_string(), c.value(b).to_string());
                if joint.iter().all(|(k, _)| *k != key)
                    && let Some((m, _)) =
                        marginal(&cells, |x| x.value(a) == key.0 && x.value(b) == key.1)
                {
                    joint.push((key, m));
                }
            }
            if p.is_some_and(|p| p < ALPHA)
                && interaction_size(b_values, &joint, scale, grand) >= PRACTICAL
            {
                interactions.push(Interaction {
                    a: a.to_string(),
                    b: b.to_string(),
                    share: share(ss),
                    p,
                    text: interaction_text(a, b, b_values, &joint, scale, what),
                });
            }
        }
    }
    let drift = (distinct_rounds > 1).then(|| Effect {
        dimension: "round".into(),
        share: share(ss_round),
        p: if df_round > 0.0 && df_within - df_round > 0.0 && ss_blocked > 0.0 {
            f_sf(
                (ss_round / df_round) / (ss_blocked / (df_within - df_round)),
                df_round,
                df_within - df_round,
            )
        } else {
            None
        },
        means: Vec::new(),
        steps: Vec::new(),
    });
    let method = format!(
        "factorial analysis of variance (Montgomery, Design and Analysis of Experiments, ch. 5) \
         of {what}{} over {n} runs in {} configurations; F tests against the variation between \
         repeated runs of one configuration, and effects under {:.0}% called too small to matter; \
         rounds as blocks for drift{}",
        if scale == Scale::Log {
            " on a log scale"
        } else {
            ""
        },
        cells.len(),
        PRACTICAL * 100.0,
        if unbalanced {
            "; unequal runs per configuration (failed runs): type II sums of squares by least \
             squares (Langsrud 2003) and marginal means that weigh every configuration equally, \
             both exact"
        } else {
            ""
        }
    );
    let mut e = Effects {
        scale,
        runs: n,
        configurations: cells.len(),
        effects,
        interactions,
        drift,
        unbalanced,
        method,
        answer: String::new(),
    };
    e.answer = answer(&e, what, grand);
    e
}

/// How much a dimension's effect (its largest over its smallest mean, or their difference)
/// differs between the values of another: the practical size of an interaction.
fn interaction_size(
    b_values: &[String],
    joint: &[((String, String), f64)],
    scale: Scale,
    grand: f64,
) -> f64 {
    let effects: Vec<f64> = b_values
        .iter()
        .filter_map(|bv| {
            let here: Vec<f64> = joint
                .iter()
                .filter(|((_, jb), _)| jb == bv)
                .map(|(_, m)| *m)
                .collect();
            let hi = here.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lo = here.iter().copied().fold(f64::INFINITY, f64::min);
            (here.len() > 1).then_some(hi - lo)
        })
        .collect();
    let hi = effects.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = effects.iter().copied().fold(f64::INFINITY, f64::min);
    match scale {
        // Differences of logs: their spread is the ratio of the ratios.
        Scale::Log => (hi - lo).exp() - 1.0,
        Scale::Linear if grand.abs() > 0.0 => (hi - lo) / grand.abs(),
        Scale::Linear => f64::INFINITY,
    }
}

/// "congestion's effect depends on window: bbr over cubic 1.01x at 64K, 1.35x at 4M".
fn interaction_text(
    a: &str,
    b: &str,
    b_values: &[String],
    joint: &[((String, String), f64)],
    scale: Scale,
    what: &str,
) -> String {
    let mut parts = Vec::new();
    for bv in b_values {
        let here: Vec<(&String, f64)> = joint
            .iter()
            .filter(|((_, jb), _)| jb == bv)
            .map(|((ja, _), m)| (ja, *m))
            .collect();
        let (Some(hi), Some(lo)) = (
            here.iter().max_by(|x, y| x.1.total_cmp(&y.1)),
            here.iter().min_by(|x, y| x.1.total_cmp(&y.1)),
        ) else {
            continue;
        };
        parts.push(match scale {
            Scale::Log => format!("{}/{} {:.2}x at {b}={bv}", hi.0, lo.0, (hi.1 - lo.1).exp()),
            Scale::Linear => format!(
                "{} over {} by {} at {b}={bv}",
                hi.0,
                lo.0,
                fmt_num(hi.1 - lo.1)
            ),
        });
    }
    format!(
        "{a}'s effect on {what} depends on {b}: {}",
        parts.join(", ")
    )
}

fn fmt_num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

fn change_text(scale: Scale, from: f64, to: f64, what: &str) -> String {
    match scale {
        Scale::Log if from > 0.0 => {
            let r = to / from;
            if r >= 1.0 {
                format!("raises {what} {r:.2}x")
            } else {
                format!("lowers {what} to {r:.2}x")
            }
        }
        _ => format!("changes {what} by {}", fmt_num(to - from)),
    }
}

/// "78%", or "under 1%" for a share that rounds to nothing but is not (a real effect beside a
/// 16x one explains little of the variation).
fn share_text(share: f64) -> String {
    if share > 0.0 && share < 0.005 {
        "under 1%".into()
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

fn p_text(p: Option<f64>) -> String {
    p.map_or("no test: no repeated runs".into(), |p| {
        if p < 0.001 {
            "p < 0.001".into()
        } else {
            format!("p = {p:.3}")
        }
    })
}

/// The answer, first line first: what matters most and by how much, what does not, drift.
fn answer(e: &Effects, what: &str, grand: f64) -> String {
    let mut lines = Vec::new();
    let significant = |x: &Effect| x.p.is_some_and(|p| p < ALPHA);
    let size = |x: &Effect| magnitude(&x.means, e.scale, grand);
    let matter: Vec<&Effect> = e
        .effects
        .iter()
        .filter(|x| significant(x) && size(x) >= PRACTICAL)
        .collect();
    let small: Vec<&Effect> = e
        .effects
        .iter()
        .filter(|x| significant(x) && size(x) < PRACTICAL)
        .collect();
    let not: Vec<&Effect> = e.effects.iter().filter(|x| !significant(x)).collect();
    for (i, x) in matter.iter().enumerate() {
        let (Some(first), Some(last)) = (x.means.first(), x.means.last()) else {
            continue;
        };
        let best = x.means.iter().max_by(|a, b| a.mean.total_cmp(&b.mean));
        let steps_ok = x
            .steps
            .iter()
            .filter(|s| s.p.is_some_and(|p| p < ALPHA))
            .count();
        let steps = if x.steps.len() > 1 {
            if steps_ok == x.steps.len() {
                "; every step significant".to_string()
            } else {
                let flat: Vec<String> = x
                    .steps
                    .iter()
                    .filter(|s| !s.p.is_some_and(|p| p < ALPHA))
                    .map(|s| format!("{}→{}", s.from, s.to))
                    .collect();
                format!("; no difference shown for {}", flat.join(", "))
            }
        } else {
            String::new()
        };
        lines.push(format!(
            "{} {}: {}→{} {} ({} of the variation, {}{steps}){}",
            x.dimension,
            if i == 0 {
                "matters most"
            } else {
                "matters too"
            },
            first.value,
            last.value,
            change_text(e.scale, first.mean, last.mean, what),
            share_text(x.share),
            p_text(x.p),
            best.map(|b| format!("; highest at {}={}", x.dimension, b.value))
                .unwrap_or_default()
        ));
    }
    if matter.is_empty() {
        lines.push(format!(
            "no dimension makes a difference to {what} that matters beyond the noise of repeated runs"
        ));
    }
    for x in &small {
        lines.push(format!(
            "{} makes no practical difference: its values' means are within {:.1}% of each other \
             ({}: real, but below the {:.0}% that counts)",
            x.dimension,
            size(x) * 100.0,
            p_text(x.p),
            PRACTICAL * 100.0
        ));
    }
    for x in &not {
        let lo = x
            .means
            .iter()
            .map(|m| m.ci_low)
            .fold(f64::INFINITY, f64::min);
        let hi = x
            .means
            .iter()
            .map(|m| m.ci_high)
            .fold(f64::NEG_INFINITY, f64::max);
        let bound = match e.scale {
            Scale::Log if lo > 0.0 && hi.is_finite() => {
                format!(
                    "its values' 95% CIs all within {:.1}% of each other",
                    (hi / lo - 1.0) * 100.0
                )
            }
            _ if lo.is_finite() && hi.is_finite() => {
                format!("its values' 95% CIs all within {}", fmt_num(hi - lo))
            }
            _ => "too few runs to bound it".into(),
        };
        lines.push(format!(
            "{} makes no difference shown ({}; {bound})",
            x.dimension,
            p_text(x.p)
        ));
    }
    for i in &e.interactions {
        lines.push(format!("{} ({})", i.text, p_text(i.p)));
    }
    match &e.drift {
        Some(d) if d.p.is_some_and(|p| p < ALPHA) => lines.push(format!(
            "drift over the rounds: the round explains {} of the variation ({}); the machine or path changed during the campaign",
            share_text(d.share),
            p_text(d.p)
        )),
        Some(d) => lines.push(format!(
            "no drift over the rounds ({})",
            p_text(d.p)
        )),
        None => {}
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests;
