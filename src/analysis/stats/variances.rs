//! Whether groups of runs are equally noisy: Brown and Forsythe's test (Brown and Forsythe
//! 1974, *J. Amer. Statist. Assoc.* 69:364; Montgomery, *Design and Analysis of Experiments*,
//! 3.4.3, "the modified Levene test"), the analysis of variance of each run's absolute
//! deviation from its group's median. And the F distribution's upper tail, which it and the
//! campaign's analysis of variance read.

use super::describe::{mean, median_sorted, sorted};

/// Upper tail of the F distribution (bounded: statrs' regularised beta has a fixed number of
/// continued-fraction steps).
pub fn f_sf(f: f64, d1: f64, d2: f64) -> Option<f64> {
    if !(f.is_finite() && f >= 0.0 && d1 > 0.0 && d2 > 0.0) {
        return None;
    }
    // The regularised beta's continued fraction stops converging beyond about 1e5 degrees of
    // freedom (see `ttest`); there the F distribution has long since reached its limit.
    let (d1, d2) = (d1.min(1e5), d2.min(1e5));
    let x = d2 / (d2 + d1 * f);
    let p = statrs::function::beta::beta_reg(d2 / 2.0, d1 / 2.0, x);
    p.is_finite().then_some(p.clamp(0.0, 1.0))
}

/// Brown and Forsythe's test of equal variances over `groups` (each of at least 3 values;
/// smaller ones are left out: two values lie equally far from their median whatever their
/// spread, so their deviations vary by rounding alone): (F, its degrees of freedom, p).
/// `None` with fewer than two such groups, or deviations that do not vary within them.
pub fn brown_forsythe(groups: &[&[f64]]) -> Option<(f64, f64, f64, f64)> {
    let deviations: Vec<Vec<f64>> = groups
        .iter()
        .filter(|g| g.len() >= 3 && g.iter().all(|x| x.is_finite()))
        .map(|g| {
            let m = median_sorted(&sorted(g));
            g.iter().map(|x| (x - m).abs()).collect()
        })
        .collect();
    let k = deviations.len();
    let n: usize = deviations.iter().map(Vec::len).sum();
    if k < 2 || n <= k {
        return None;
    }
    let all: Vec<f64> = deviations.iter().flatten().copied().collect();
    let grand = mean(&all);
    let (mut between, mut within) = (0.0, 0.0);
    for z in &deviations {
        let m = mean(z);
        between += z.len() as f64 * (m - grand).powi(2);
        within += z.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    }
    let (d1, d2) = ((k - 1) as f64, (n - k) as f64);
    // NaN (a non-finite deviation) and no spread within alike: no test.
    if within.is_nan() || within <= 1e-12 * (between + within) {
        return None;
    }
    let f = (between / d1) / (within / d2);
    Some((f, d1, d2, f_sf(f, d1, d2)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const F_ABC: f64 = 6.884207240262666;
    const P_ABC: f64 = 0.0075651055015964475;
    const F_AB: f64 = 0.009776631135854398;
    const P_AB: f64 = 0.9234033195277981;

    /// Reference: scipy.stats.levene(*groups, center="median") (scipy 1.17, in a throwaway
    /// venv), which is Brown and Forsythe's test.
    #[test]
    fn brown_forsythe_matches_scipy() {
        let a = [10.0, 11.0, 12.0, 11.5, 10.5, 11.2];
        let b = [12.0, 13.5, 12.8, 14.1, 13.0];
        let c = [5.0, 15.0, 9.0, 20.0, 1.0, 12.0, 7.0];
        let (f, d1, d2, p) = brown_forsythe(&[&a, &b, &c]).unwrap();
        assert_eq!((d1, d2), (2.0, 15.0));
        assert!((f - F_ABC).abs() < 1e-9 * F_ABC, "{f}");
        assert!((p - P_ABC).abs() < 1e-9, "{p}");
        let (f, _, _, p) = brown_forsythe(&[&a, &b]).unwrap();
        assert!((f - F_AB).abs() < 1e-9 * F_AB.max(1.0), "{f}");
        assert!((p - P_AB).abs() < 1e-9, "{p}");
        // Too few groups or values, or no spread: no test.
        assert_eq!(brown_forsythe(&[&a]), None);
        assert_eq!(brown_forsythe(&[&a, &[1.0, 2.0]]), None);
        assert_eq!(brown_forsythe(&[&[1.0, 1.0, 1.0], &[2.0, 2.0, 2.0]]), None);
    }
}
