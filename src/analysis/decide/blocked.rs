//! A campaign as one design: its configurations as treatments and its rounds as blocks (a
//! randomized complete block design; Montgomery, *Design and Analysis of Experiments*, 9th ed.,
//! ch. 4), fitted once by least squares so that every comparison of the campaign draws on the
//! same error, pooled over all its configurations, with its degrees of freedom.
//!
//! The model is `y = cell + round + e` on the analysis scale. With C configurations run once in
//! each of R rounds the residual mean square has (C - 1)(R - 1) degrees of freedom (Montgomery
//! 4.1); with missing runs (failures, outliers set aside) least squares still estimates each
//! configuration adjusted for the rounds it was run in (Montgomery 4.1.4, the general
//! regression significance test), and the residual degrees of freedom are n minus the rank.
//! A comparison is a contrast of configuration effects: its value `w'b`, its standard error
//! `sqrt(MSE w'(X'X)^-1 w)` and the residual degrees of freedom (Montgomery 3.5.4). With one
//! round, or rounds that do not connect the configurations, the configurations alone are the
//! model (a one-way analysis, error within configurations). `fit` returns `None` when no error
//! is left to estimate (one run per configuration), or when the configurations are shown not to
//! be equally noisy (`unequal_noise`): the pooled error assumes they are, and one noisy
//! configuration would decide the comparisons of quiet ones. (A trial's 256K pair, 3-5% apart
//! run to run, was undecided on an error pooled with a 13% configuration; there the test finds
//! no difference in noise, p = 0.29, the 13% resting on one run of seven, and the pooled
//! verdict stands.) Callers fall back to per-pair tests.
//! Pure: takes runs on the analysis scale, returns estimates for `decide`.

use super::{Design, Estimate};
use std::collections::BTreeMap;

/// One run: its configuration (an index below the fit's number of cells), its round and its
/// value on the analysis scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    pub cell: usize,
    pub round: u32,
    pub y: f64,
}

/// The fitted design.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Each configuration's least-squares mean, adjusted for the rounds (`NaN` when the
    /// configuration has no run).
    effects: Vec<f64>,
    /// The configurations' block of (X'X)^-1 (row-major, cells x cells).
    inverse: Vec<f64>,
    /// The residual mean square and its degrees of freedom.
    pub ms_err: f64,
    pub df_err: f64,
    /// Configurations with runs, and distinct rounds (1 when the rounds were not used as blocks).
    pub configurations: usize,
    pub rounds: usize,
    /// The rounds are blocks of the model.
    pub blocked: bool,
}

/// Fits runs given as (configuration key, round, value on the analysis scale): the keys in
/// first-seen order (a run's cell is its key's index) and the fit.
pub fn fit_keyed<K: PartialEq>(
    runs: impl IntoIterator<Item = (K, u32, f64)>,
) -> (Vec<K>, Option<Fit>) {
    let mut keys: Vec<K> = Vec::new();
    let mut out = Vec::new();
    for (k, round, y) in runs {
        let cell = match keys.iter().position(|x| *x == k) {
            Some(i) => i,
            None => {
                keys.push(k);
                keys.len() - 1
            }
        };
        out.push(Run { cell, round, y });
    }
    let f = fit(&out, keys.len());
    (keys, f)
}

/// Fits `runs` of `cells` configurations: rounds as blocks when there are at least two and they
/// leave error degrees of freedom, else the configurations alone. `None` without any error
/// degree of freedom or finite value.
pub fn fit(runs: &[Run], cells: usize) -> Option<Fit> {
    let runs: Vec<Run> = runs
        .iter()
        .filter(|r| r.y.is_finite() && r.cell < cells)
        .copied()
        .collect();
    if unequal_noise(runs.iter().map(|r| (r.cell, r.y)), cells).is_some() {
        return None;
    }
    let mut rounds: BTreeMap<u32, usize> = BTreeMap::new();
    for r in &runs {
        let next = rounds.len();
        rounds.entry(r.round).or_insert(next);
    }
    let blocked = (rounds.len() >= 2)
        .then(|| solve(&runs, cells, &rounds))
        .flatten()
        .filter(|f| f.df_err > 0.0);
    blocked
        .or_else(|| solve(&runs, cells, &BTreeMap::new()).filter(|f| f.df_err > 0.0))
        .map(|f| Fit {
            rounds: rounds.len().max(1),
            ..f
        })
}

/// Below this p of Brown and Forsythe's test the configurations are not equally noisy and no
/// error is pooled. 5%: a missed difference in noise judges the noisy configurations'
/// comparisons on too small an error (too sure), a false alarm only costs the pooled design's
/// power; the test is conservative at a few runs a configuration (seeded simulations in the
/// tests: 0-2.6% of equally noisy campaigns fall back).
pub const UNEQUAL_NOISE_P: f64 = 0.05;

/// Brown and Forsythe's p over the configurations' runs (cell, value on the analysis scale),
/// when it is below `UNEQUAL_NOISE_P`.
pub fn unequal_noise(runs: impl IntoIterator<Item = (usize, f64)>, cells: usize) -> Option<f64> {
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); cells];
    for (cell, y) in runs {
        if let Some(g) = groups.get_mut(cell)
            && y.is_finite()
        {
            g.push(y);
        }
    }
    let refs: Vec<&[f64]> = groups.iter().map(Vec::as_slice).collect();
    let (_, _, _, p) = crate::analysis::stats::variances::brown_forsythe(&refs)?;
    (p < UNEQUAL_NOISE_P).then_some(p)
}

/// Least squares of `runs` on the configurations and (when `rounds` has two or more) the
/// rounds after the first; `None` when the columns are not of full rank.
fn solve(runs: &[Run], cells: usize, rounds: &BTreeMap<u32, usize>) -> Option<Fit> {
    let present: Vec<bool> = (0..cells)
        .map(|c| runs.iter().any(|r| r.cell == c))
        .collect();
    // Columns: present configurations, then the rounds after the first.
    let col_of: Vec<Option<usize>> = {
        let mut k = 0;
        present
            .iter()
            .map(|p| {
                p.then(|| {
                    k += 1;
                    k - 1
                })
            })
            .collect()
    };
    let used = present.iter().filter(|p| **p).count();
    let extra = rounds.len().saturating_sub(1);
    let p = used + extra;
    let mut xtx = vec![0.0; p * p];
    let mut xty = vec![0.0; p];
    let row = |r: &Run| -> Vec<usize> {
        let mut cols = Vec::with_capacity(2);
        if let Some(c) = col_of[r.cell] {
            cols.push(c);
        }
        if let Some(&b) = rounds.get(&r.round)
            && b > 0
        {
            cols.push(used + b - 1);
        }
        cols
    };
    for r in runs {
        let cols = row(r);
        for &i in &cols {
            xty[i] += r.y;
            for &j in &cols {
                xtx[i * p + j] += 1.0;
            }
        }
    }
    let inv = invert(&xtx, p)?;
    let beta: Vec<f64> = (0..p)
        .map(|i| (0..p).map(|j| inv[i * p + j] * xty[j]).sum())
        .collect();
    let rss: f64 = runs
        .iter()
        .map(|r| {
            let fitted: f64 = row(r).iter().map(|&c| beta[c]).sum();
            (r.y - fitted).powi(2)
        })
        .sum();
    let df_err = runs.len() as f64 - p as f64;
    // The configurations' effects are their means in the first round; the average round effect
    // is added so that a balanced design's effects are the configurations' plain means.
    let round_mean = if extra > 0 {
        beta[used..].iter().sum::<f64>() / rounds.len() as f64
    } else {
        0.0
    };
    let effects = col_of
        .iter()
        .map(|c| c.map_or(f64::NAN, |c| beta[c] + round_mean))
        .collect();
    let mut inverse = vec![f64::NAN; cells * cells];
    for a in 0..cells {
        for b in 0..cells {
            if let (Some(i), Some(j)) = (col_of[a], col_of[b]) {
                inverse[a * cells + b] = inv[i * p + j];
            }
        }
    }
    Some(Fit {
        effects,
        inverse,
        ms_err: if df_err > 0.0 {
            rss.max(0.0) / df_err
        } else {
            f64::NAN
        },
        df_err: df_err.max(0.0),
        configurations: used,
        rounds: rounds.len().max(1),
        blocked: extra > 0,
    })
}

/// The inverse of a symmetric positive semi-definite `p` x `p` matrix by Gauss-Jordan
/// elimination with partial pivoting; `None` when it is singular (a pivot below 1e-9 of the
/// largest diagonal element).
fn invert(m: &[f64], p: usize) -> Option<Vec<f64>> {
    let scale = (0..p).map(|i| m[i * p + i].abs()).fold(0.0, f64::max);
    if p == 0 || scale == 0.0 {
        return None;
    }
    let w = 2 * p;
    let mut a = vec![0.0; p * w];
    for i in 0..p {
        a[i * w..i * w + p].copy_from_slice(&m[i * p..i * p + p]);
        a[i * w + p + i] = 1.0;
    }
    for col in 0..p {
        let pivot =
            (col..p).max_by(|&x, &y| a[x * w + col].abs().total_cmp(&a[y * w + col].abs()))?;
        if a[pivot * w + col].abs() < 1e-9 * scale {
            return None;
        }
        if pivot != col {
            for k in 0..w {
                a.swap(pivot * w + k, col * w + k);
            }
        }
        let d = a[col * w + col];
        for k in 0..w {
            a[col * w + k] /= d;
        }
        for r in 0..p {
            let f = a[r * w + col];
            if r != col && f != 0.0 {
                for k in 0..w {
                    a[r * w + k] -= f * a[col * w + k];
                }
            }
        }
    }
    Some(
        (0..p)
            .flat_map(|i| a[i * w + p..i * w + w].to_vec())
            .collect(),
    )
}

impl Fit {
    /// A configuration's least-squares mean on the analysis scale (`None` without runs).
    pub fn effect(&self, cell: usize) -> Option<f64> {
        self.effects.get(cell).copied().filter(|x| x.is_finite())
    }

    /// The contrast `sum w_i cell_i` (weights by configuration; they should sum to zero), with
    /// its standard error from the pooled error. `None` when a weighted configuration has no
    /// run or the weights are out of range.
    pub fn contrast(&self, weights: &[(usize, f64)]) -> Option<Estimate> {
        let c = self.effects.len();
        let mut value = 0.0;
        let mut quad = 0.0;
        for &(i, wi) in weights {
            value += wi * self.effect(i)?;
            for &(j, wj) in weights {
                quad += wi * wj * self.inverse.get(i * c + j)?;
            }
        }
        let se = (self.ms_err * quad.max(0.0)).sqrt();
        (value.is_finite() && se.is_finite()).then_some(Estimate {
            value,
            se,
            df: self.df_err,
            design: Design::Blocked {
                configurations: self.configurations,
                rounds: self.rounds,
                df: self.df_err,
                sd: self.ms_err.sqrt(),
            },
        })
    }

    /// `to` minus `from`, each the average of its configurations (the other dimensions'
    /// values matched, so they cancel; Searle, Speed and Milliken 1980).
    pub fn difference(&self, from: &[usize], to: &[usize]) -> Option<Estimate> {
        if from.is_empty() || to.is_empty() {
            return None;
        }
        let (kf, kt) = (from.len() as f64, to.len() as f64);
        let mut w: Vec<(usize, f64)> = Vec::new();
        for (cells, k) in [(from, -kf), (to, kt)] {
            for &c in cells {
                match w.iter_mut().find(|(i, _)| *i == c) {
                    Some(e) => e.1 += 1.0 / k,
                    None => w.push((c, 1.0 / k)),
                }
            }
        }
        self.contrast(&w)
    }
}

#[cfg(test)]
mod tests;
