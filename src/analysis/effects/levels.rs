//! The values of one dimension: their order (numeric values low to high), their means with
//! intervals from their own spread, and the comparisons between them built for `decide`: a
//! contrast of the campaign's whole design (`decide::blocked`: configurations and rounds as
//! blocks, the error pooled over every configuration) between the averages of the two values'
//! configurations, the other dimensions matched. Only when the design leaves no error to pool
//! (one run per configuration) are the runs of one round paired (the difference of each
//! context's runs in that round, averaged over the contexts), or each context's difference of
//! means averaged (Welch-Satterthwaite).

use super::{Cell, LevelMean, Noise, Observation, marginal};
use crate::analysis::decide::{self, Decision, Outcome, Settings, blocked};
use crate::analysis::stats::describe::mean;
use crate::analysis::stats::ttest;
use std::collections::BTreeMap;

/// A run's other dimensions than the one compared.
type Context = Vec<(String, String)>;
/// Runs on the analysis scale by (context, round).
type ByContextRound = BTreeMap<(Context, u32), Vec<f64>>;

/// The runs of a campaign on the analysis scale, by configuration and round.
pub(super) struct Data<'a> {
    obs: &'a [Observation],
    ys: &'a [f64],
    /// The configurations' dimension values, by the fit's cell index.
    cells: Vec<Vec<(String, String)>>,
    /// The whole design, when it leaves error to pool.
    fit: Option<blocked::Fit>,
    /// Brown and Forsythe's p when the configurations are shown not to be equally noisy.
    unequal: Option<f64>,
}

/// The other dimensions of a run than `dim`: its context.
fn context(o: &Observation, dim: &str) -> Vec<(String, String)> {
    o.dims.iter().filter(|(k, _)| k != dim).cloned().collect()
}

fn value_of<'o>(o: &'o Observation, dim: &str) -> Option<&'o str> {
    o.dims
        .iter()
        .find(|(k, _)| k == dim)
        .map(|(_, v)| v.as_str())
}

impl<'a> Data<'a> {
    pub(super) fn new(obs: &'a [Observation], ys: &'a [f64]) -> Data<'a> {
        let (cells, fit) = blocked::fit_keyed(
            obs.iter()
                .zip(ys)
                .map(|(o, y)| (o.dims.clone(), o.round, *y)),
        );
        let unequal = blocked::unequal_noise(
            obs.iter()
                .zip(ys)
                .filter_map(|(o, y)| Some((cells.iter().position(|c| *c == o.dims)?, *y))),
            cells.len(),
        );
        Data {
            obs,
            ys,
            cells,
            fit,
            unequal,
        }
    }

    /// Brown and Forsythe's p when the configurations are shown not to be equally noisy (no
    /// error pooled then).
    pub(super) fn unequal_noise(&self) -> Option<f64> {
        self.unequal
    }

    /// Every run of `dim` = `v` on the analysis scale.
    pub(super) fn values_of(&self, dim: &str, v: &str) -> Vec<f64> {
        self.runs_of(dim, v).into_values().flatten().collect()
    }

    /// Every run (at least two) of `low` below every run (at least two) of `high`.
    pub(super) fn below_every_run(&self, dim: &str, low: &str, high: &str) -> bool {
        let (a, b) = (self.values_of(dim, low), self.values_of(dim, high));
        let max = a.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = b.iter().copied().fold(f64::INFINITY, f64::min);
        a.len() >= 2 && b.len() >= 2 && max < min
    }

    /// The pooled error's degrees of freedom (`None`: no error to pool).
    pub(super) fn pooled_df(&self) -> Option<f64> {
        self.fit.as_ref().map(|f| f.df_err)
    }

    /// `to` against `from` as a contrast of the whole design: each the average of its
    /// configurations whose context (the other dimensions) the other value shares.
    fn contrast(&self, dim: &str, from: &str, to: &str) -> Option<decide::Estimate> {
        let fit = self.fit.as_ref()?;
        let of = |v: &str| -> Vec<(Context, usize)> {
            self.cells
                .iter()
                .enumerate()
                .filter(|(_, c)| c.iter().any(|(k, x)| k == dim && x == v))
                .map(|(i, c)| (c.iter().filter(|(k, _)| k != dim).cloned().collect(), i))
                .collect()
        };
        let (a, b) = (of(from), of(to));
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for (ctx, i) in &a {
            if let Some((_, j)) = b.iter().find(|(c, _)| c == ctx) {
                xs.push(*i);
                ys.push(*j);
            }
        }
        fit.difference(&xs, &ys)
    }

    /// Values of `dim` = `v`, by (context, round).
    fn runs_of(&self, dim: &str, v: &str) -> ByContextRound {
        let mut out = ByContextRound::new();
        for (o, y) in self.obs.iter().zip(self.ys) {
            if value_of(o, dim) == Some(v) {
                out.entry((context(o, dim), o.round)).or_default().push(*y);
            }
        }
        out
    }

    /// `to` against `from` for dimension `dim`, judged (not yet corrected for its family).
    pub(super) fn decide(&self, dim: &str, from: &str, to: &str, s: &Settings) -> Decision {
        let a = self.runs_of(dim, from);
        let b = self.runs_of(dim, to);
        let reference = {
            let all: Vec<f64> = a.values().flatten().copied().collect();
            all.iter().sum::<f64>() / all.len().max(1) as f64
        };
        if let Some(e) = self.contrast(dim, from, to) {
            return decide::decide(from, to, e, reference, s);
        }
        // Paired: per round, the mean over contexts of (to - from).
        let mut by_round: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        for (key, ya) in &a {
            if let Some(yb) = b.get(key) {
                by_round.entry(key.1).or_default().push(mean(yb) - mean(ya));
            }
        }
        let diffs: Vec<f64> = by_round.values().map(|v| mean(v)).collect();
        if let Some(e) = decide::paired(&diffs) {
            return decide::decide(from, to, e, reference, s);
        }
        // Unpaired: each context's runs of both, whatever their rounds.
        let mut contexts: BTreeMap<&Context, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        for ((ctx, _), ys) in &a {
            contexts.entry(ctx).or_default().0.extend(ys);
        }
        for ((ctx, _), ys) in &b {
            contexts.entry(ctx).or_default().1.extend(ys);
        }
        let pairs: Vec<(&[f64], &[f64])> = contexts
            .values()
            .map(|(x, y)| (x.as_slice(), y.as_slice()))
            .collect();
        match decide::combined(&pairs) {
            Some(e) => decide::decide(from, to, e, reference, s),
            None => decide::too_few(
                from,
                to,
                a.values().map(Vec::len).sum(),
                b.values().map(Vec::len).sum(),
                s,
            ),
        }
    }
}

/// A dimension's values as numbers ("64K", "1.5M", "20ms", "8"), for their order.
fn numeric(v: &str) -> Option<f64> {
    let t = v.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let x: f64 = num.parse().ok()?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .trim_end_matches("bit/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit")
        .trim_end_matches("ib")
        .trim_end_matches('b');
    let scale = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "%" => 1.0,
        _ => return None,
    };
    x.is_finite().then_some(x * scale)
}

/// The values in numeric order when every one is a number (with a unit); `None` otherwise.
pub fn ordered_values(values: &[String]) -> Option<Vec<String>> {
    let mut keyed: Vec<(f64, String)> = values
        .iter()
        .map(|v| numeric(v).map(|x| (x, v.clone())))
        .collect::<Option<_>>()?;
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(keyed.into_iter().map(|(_, v)| v).collect())
}

/// A value's marginal mean and its interval from its own configurations' spread: the
/// variance of the average of cell means is the sum of each cell's s²/n over k², with
/// Satterthwaite's degrees of freedom (1946); a cell with one run borrows the pooled error.
pub(super) fn level_mean(
    cells: &[Cell],
    dim: &str,
    value: &str,
    noise: &Noise,
    s: &Settings,
) -> Option<LevelMean> {
    let mine: Vec<&Cell> = cells.iter().filter(|c| c.value(dim) == value).collect();
    let m = marginal(cells, |c| c.value(dim) == value)?;
    let k = mine.len() as f64;
    let (mut var, mut df_den) = (0.0, 0.0);
    for c in &mine {
        let n = c.ys.len();
        let (v, df) = if n >= 2 {
            (
                crate::analysis::stats::describe::variance(&c.ys),
                (n - 1) as f64,
            )
        } else {
            (noise.ms_err, noise.df_err)
        };
        let term = v / n as f64;
        var += term;
        if df > 0.0 {
            df_den += term * term / df;
        }
    }
    let se = var.sqrt() / k;
    let df = if df_den > 0.0 {
        var * var / df_den
    } else {
        0.0
    };
    let half = if se.is_finite() && df > 0.0 {
        ttest::t_critical(s.confidence, df) * se
    } else if se == 0.0 {
        0.0
    } else {
        f64::NAN
    };
    Some(LevelMean {
        value: value.to_string(),
        n: mine.iter().map(|c| c.ys.len()).sum(),
        mean: s.scale.back(m),
        ci_low: s.scale.back(m - half),
        ci_high: s.scale.back(m + half),
    })
}

/// From the lowest mean to the highest, in the values' order.
pub(super) fn span(
    data: &Data,
    dim: &str,
    values: &[String],
    means: &[LevelMean],
    s: &Settings,
) -> Option<Decision> {
    if values.len() < 3 {
        // Two values: the span is the one comparison.
        return None;
    }
    let lo = means.iter().min_by(|a, b| a.mean.total_cmp(&b.mean))?;
    let hi = means.iter().max_by(|a, b| a.mean.total_cmp(&b.mean))?;
    let pos = |v: &str| values.iter().position(|x| x == v);
    let (from, to) = if pos(&lo.value) <= pos(&hi.value) {
        (&lo.value, &hi.value)
    } else {
        (&hi.value, &lo.value)
    };
    (from != to).then(|| data.decide(dim, from, to, s))
}

/// Every pair of values (for a dimension's bound when nothing is shown).
pub(super) fn all_pairs(data: &Data, dim: &str, values: &[String], s: &Settings) -> Vec<Decision> {
    let mut out = Vec::new();
    for (i, a) in values.iter().enumerate() {
        for b in &values[i + 1..] {
            out.push(data.decide(dim, a, b, s));
        }
    }
    out
}

/// Every pair equivalent: the intersection-union test's p, the largest of theirs (Berger 1982;
/// no correction is needed for a claim that needs every pair).
pub(super) fn all_equivalent_p(pairs: &[Decision]) -> Option<f64> {
    if pairs.is_empty() || pairs.iter().any(|d| d.outcome == Outcome::TooFew) {
        return None;
    }
    pairs.iter().map(|d| d.equivalence_p).reduce(f64::max)
}

/// `d` shows `v` below a value of `group` (a difference, Holm-adjusted).
pub(super) fn shown_below(d: &Decision, v: &str, group: &[String]) -> bool {
    if d.outcome != Outcome::Different {
        return false;
    }
    let up = d
        .ratio
        .map_or(d.difference.is_some_and(|x| x > 0.0), |r| r > 1.0);
    (d.from == v && up && group.contains(&d.to)) || (d.to == v && !up && group.contains(&d.from))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_values_are_ordered_and_words_are_not() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            ordered_values(&v(&["1M", "64K", "1536K", "128K"])).unwrap(),
            v(&["64K", "128K", "1M", "1536K"])
        );
        assert_eq!(
            ordered_values(&v(&["100ms", "1s", "20ms"])).unwrap(),
            v(&["20ms", "100ms", "1s"])
        );
        assert_eq!(
            ordered_values(&v(&["8", "1", "2"])).unwrap(),
            v(&["1", "2", "8"])
        );
        assert!(ordered_values(&v(&["default", "tcpsmall"])).is_none());
        assert!(ordered_values(&v(&["64K", "auto"])).is_none());
        assert!(ordered_values(&v(&["cubic", "bbr"])).is_none());
    }
}
