//! Runs far outside their siblings (the other runs of their configuration), found on the log
//! scale with a robust rule so one stalled run cannot hide itself by inflating the spread:
//! each run against the median and the median absolute deviation (MAD) of its siblings, the
//! modified z-score of Iglewicz and Hoaglin (1993), |y - median| / (1.4826 MAD) > 3.5, when a
//! run has at least `MIN_SIBLINGS_FOR_MAD` siblings (the MAD of two values is half their
//! distance, which says little). Guards keep ordinary noise in: a run must also be at least
//! `MIN_FACTOR` away from its siblings' median (tight configurations would otherwise lose runs
//! 3% off; loopback runs swing 1.5x), and outliers are only ever a minority (with half the runs
//! "outside", there is no consensus to be outside of). With fewer siblings only a run
//! `EXTREME_FACTOR` away from siblings that agree within 2x is outside (a stall). A run at zero
//! (or below) among positive siblings is always outside.

use crate::analysis::stats::describe::{median_sorted, sorted};

/// Iglewicz and Hoaglin's cut-off for the modified z-score.
pub const Z_CUT: f64 = 3.5;
/// The MAD's scale to a normal standard deviation.
const MAD_TO_SD: f64 = 1.4826;
/// Smallest factor between a run and its siblings' median that counts as outside.
pub const MIN_FACTOR: f64 = 1.5;
/// Siblings needed for the MAD rule.
pub const MIN_SIBLINGS_FOR_MAD: usize = 3;
/// With fewer siblings, the factor that makes a run outside.
pub const EXTREME_FACTOR: f64 = 10.0;
/// Fewest runs in which outliers are looked for.
pub const MIN_RUNS: usize = 3;

/// A run outside its siblings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outside {
    /// Its index in the values given.
    pub index: usize,
    /// Its siblings' median (on the metric's own scale).
    pub siblings_median: f64,
    /// How far: the median over the value when below, the value over the median when above.
    pub factor: f64,
    pub below: bool,
}

/// The runs of one configuration (positive rates) that lie far outside the others.
pub fn outside(values: &[f64]) -> Vec<Outside> {
    let n = values.len();
    if n < MIN_RUNS {
        return Vec::new();
    }
    let logs: Vec<f64> = values
        .iter()
        .map(|v| if *v > 0.0 { v.ln() } else { f64::NEG_INFINITY })
        .collect();
    let mut found = Vec::new();
    for i in 0..n {
        let siblings: Vec<f64> = (0..n)
            .filter(|&j| j != i && logs[j].is_finite())
            .map(|j| logs[j])
            .collect();
        if siblings.len() < 2 {
            continue;
        }
        let s = sorted(&siblings);
        let med = median_sorted(&s);
        let dev: Vec<f64> = siblings.iter().map(|y| (y - med).abs()).collect();
        let mad = median_sorted(&sorted(&dev));
        let distance = (logs[i] - med).abs();
        let z = if mad > 0.0 {
            distance / (MAD_TO_SD * mad)
        } else {
            f64::INFINITY
        };
        let by_mad =
            siblings.len() >= MIN_SIBLINGS_FOR_MAD && z > Z_CUT && distance >= MIN_FACTOR.ln();
        let spread = s[s.len() - 1] - s[0];
        let extreme = distance >= EXTREME_FACTOR.ln() && spread <= 2f64.ln();
        if by_mad || extreme {
            let below = logs[i] < med;
            found.push(Outside {
                index: i,
                siblings_median: med.exp(),
                factor: if logs[i].is_finite() {
                    distance.exp()
                } else {
                    f64::INFINITY
                },
                below,
            });
        }
    }
    // A minority only.
    if found.len() * 2 >= n {
        return Vec::new();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stalled_run_among_tight_siblings_is_outside() {
        // The window=1536K: four runs near 462 Mbit/s and one at 2.3.
        let v = [461.0, 465.0, 2.3, 459.0, 463.0];
        let o = outside(&v);
        assert_eq!(o.len(), 1, "{o:?}");
        assert_eq!(o[0].index, 2);
        assert!(o[0].below);
        assert!((o[0].factor - 462.0 / 2.3).abs() < 2.0, "{}", o[0].factor);
    }

    #[test]
    fn ordinary_noise_is_kept() {
        // 5% CV: nothing outside.
        assert!(outside(&[100.0, 95.0, 106.0, 99.0, 104.0]).is_empty());
        // Very tight runs and one 8% (or 30%) off: real noise on a real path, not a stall.
        assert!(outside(&[100.0, 100.1, 99.9, 100.0, 92.0]).is_empty());
        assert!(outside(&[100.0, 100.1, 99.9, 100.0, 130.0]).is_empty());
        // Loopback's swings with three runs (regression: "1.3x above its 2 siblings").
        assert!(outside(&[7.75, 24.0, 24.6]).is_empty());
        assert!(outside(&[17.1, 13.0, 13.2]).is_empty());
        // Noisy runs (CV 30%) with one at 0.5x: inside their spread.
        assert!(outside(&[100.0, 70.0, 130.0, 85.0, 50.0]).is_empty());
    }

    #[test]
    fn three_runs_suffice_and_a_zero_is_outside() {
        let o = outside(&[940.0, 0.0, 938.0]);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].index, 1);
        assert!(o[0].factor.is_infinite());
        assert!(outside(&[940.0, 938.0]).is_empty(), "two runs: which one?");
    }

    #[test]
    fn outliers_are_a_minority() {
        // Two groups of equal size: no consensus.
        assert!(outside(&[100.0, 101.0, 10.0, 10.1]).is_empty());
        // Two stalls among five: both outside.
        assert!(outside(&[100.0, 101.0, 10.0, 10.1]).is_empty());
        let o = outside(&[100.0, 101.0, 1.0, 99.0, 2.0]);
        assert_eq!(o.iter().map(|x| x.index).collect::<Vec<_>>(), vec![2, 4]);
    }

    #[test]
    fn a_run_far_above_is_outside_too() {
        let o = outside(&[10.0, 10.2, 9.9, 10.1, 95.0]);
        assert_eq!(o.len(), 1);
        assert!(!o[0].below);
    }
}
