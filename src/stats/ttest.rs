//! Student's t-test with pooled variance (what ministat prints), Welch's unequal-variance t-test
//! (Welch 1947, Satterthwaite degrees of freedom), and Fieller's confidence interval for the
//! ratio of two means (the percent difference with the baseline's own uncertainty included).
//! Quantiles are exact for any degrees of freedom (ministat's table stops at 100).

use super::describe::{mean, variance};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided critical value t such that P(|T_df| <= t) = confidence.
pub fn t_critical(confidence: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df.max(1e-9)) {
        Ok(t) => t.inverse_cdf(1.0 - (1.0 - confidence) / 2.0),
        Err(_) => f64::NAN,
    }
}

/// Two-sided p-value of a t statistic.
pub fn t_p_value(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df.max(1e-9)) {
        Ok(dist) => (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
        Err(_) => f64::NAN,
    }
}

/// ministat's comparison: pooled-variance Student's t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Student {
    pub t: f64,
    pub df: f64,
    pub p: f64,
    /// Half-width of the confidence interval of the difference (ministat's "+/-").
    pub ci_half_width: f64,
    pub pooled_s: f64,
    pub significant: bool,
}

/// Welch's t-test of `other - baseline`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    pub t: f64,
    pub df: f64,
    pub p: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub significant: bool,
}

pub fn student(baseline: &[f64], other: &[f64], confidence: f64) -> Student {
    let (nb, no) = (baseline.len() as f64, other.len() as f64);
    let df = nb + no - 2.0;
    let pooled_var = ((no - 1.0) * variance(other) + (nb - 1.0) * variance(baseline)) / df;
    let pooled_s = pooled_var.sqrt();
    let s = pooled_s * (1.0 / no + 1.0 / nb).sqrt();
    let d = mean(other) - mean(baseline);
    let ci_half_width = t_critical(confidence, df) * s;
    let t = if s > 0.0 {
        d / s
    } else if d == 0.0 {
        f64::NAN
    } else {
        d.signum() * f64::INFINITY
    };
    Student {
        t,
        df,
        p: t_p_value(t, df),
        ci_half_width,
        pooled_s,
        significant: d.abs() > ci_half_width,
    }
}

pub fn welch(baseline: &[f64], other: &[f64], confidence: f64) -> Welch {
    let (nb, no) = (baseline.len() as f64, other.len() as f64);
    let (vb, vo) = (variance(baseline) / nb, variance(other) / no);
    let se = (vb + vo).sqrt();
    let d = mean(other) - mean(baseline);
    let denom = vb * vb / (nb - 1.0) + vo * vo / (no - 1.0);
    // With no variance at all the Satterthwaite formula is 0/0; fall back to the pooled df.
    let df = if denom > 0.0 {
        (vb + vo).powi(2) / denom
    } else {
        nb + no - 2.0
    };
    let t = if se > 0.0 {
        d / se
    } else if d == 0.0 {
        f64::NAN
    } else {
        d.signum() * f64::INFINITY
    };
    let half = t_critical(confidence, df) * se;
    let p = t_p_value(t, df);
    Welch {
        t,
        df,
        p,
        ci_low: d - half,
        ci_high: d + half,
        significant: p < 1.0 - confidence,
    }
}

/// Percent difference of the means, relative to the baseline mean, with Fieller's interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percent {
    pub estimate: f64,
    /// `None` when the baseline mean is not clearly away from zero (the interval is unbounded).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// Fieller (1954): the set of ratios rho with (mo - rho mb)^2 <= t^2 (vo + rho^2 vb).
pub fn percent_difference(baseline: &[f64], other: &[f64], confidence: f64, df: f64) -> Percent {
    let (mb, mo) = (mean(baseline), mean(other));
    let vb = variance(baseline) / baseline.len() as f64;
    let vo = variance(other) / other.len() as f64;
    let estimate = if mb != 0.0 {
        (mo / mb - 1.0) * 100.0
    } else {
        f64::NAN
    };
    let t = t_critical(confidence, df);
    let a = mb * mb - t * t * vb;
    let b = -2.0 * mo * mb;
    let c = mo * mo - t * t * vo;
    let disc = b * b - 4.0 * a * c;
    if a <= 0.0 || disc < 0.0 || !disc.is_finite() {
        return Percent {
            estimate,
            ci_low: None,
            ci_high: None,
        };
    }
    let r1 = (-b - disc.sqrt()) / (2.0 * a);
    let r2 = (-b + disc.sqrt()) / (2.0 * a);
    Percent {
        estimate,
        ci_low: Some((r1.min(r2) - 1.0) * 100.0),
        ci_high: Some((r1.max(r2) - 1.0) * 100.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values: scipy 1.17.1 (scipy.stats.ttest_ind with equal_var True/False, and
    // scipy.stats.t.ppf), computed for these data in a throwaway venv.
    const A: [f64; 6] = [10.0, 11.0, 12.0, 11.5, 10.5, 11.2];
    const B: [f64; 5] = [12.0, 13.5, 12.8, 14.1, 13.0];

    #[test]
    fn critical_values_match_tables() {
        assert!((t_critical(0.95, 8.0) - 2.306004135204166).abs() < 1e-8);
        assert!((t_critical(0.95, 1000.0) - 1.9623390808264083).abs() < 1e-8);
        assert!((t_critical(0.999, 10.0) - 4.586893858702708).abs() < 1e-7);
    }

    #[test]
    fn welch_matches_scipy() {
        let w = welch(&A, &B, 0.95);
        // scipy: ttest_ind(B, A, equal_var=False)
        assert!((w.t - 4.489292534543482).abs() < 1e-9, "{w:?}");
        assert!((w.df - 8.255072490300218).abs() < 1e-9, "{w:?}");
        assert!((w.p - 0.0018771975032406813).abs() < 1e-9, "{w:?}");
        assert!(w.significant);
    }

    #[test]
    fn pooled_matches_scipy() {
        let s = student(&A, &B, 0.95);
        // scipy: ttest_ind(B, A, equal_var=True)
        assert!((s.t - 4.534086023173146).abs() < 1e-9, "{s:?}");
        assert!((s.p - 0.0014178716434001216).abs() < 1e-9, "{s:?}");
        assert_eq!(s.df, 9.0);
    }

    #[test]
    fn identical_constant_sets_show_no_difference() {
        let w = welch(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0], 0.95);
        assert_eq!(w.p, 1.0);
        assert!(!w.significant);
        let w = welch(&[5.0, 5.0, 5.0], &[6.0, 6.0, 6.0], 0.95);
        assert_eq!(w.p, 0.0);
        assert!(w.significant);
    }

    #[test]
    fn fieller_interval_contains_the_estimate_and_widens_with_baseline_noise() {
        let p = percent_difference(&A, &B, 0.95, 8.255);
        let (lo, hi) = (p.ci_low.unwrap(), p.ci_high.unwrap());
        assert!(lo < p.estimate && p.estimate < hi, "{p:?}");
        let noisy: Vec<f64> = A
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 2 == 0 { x * 1.2 } else { x * 0.8 })
            .collect();
        let q = percent_difference(&noisy, &B, 0.95, 8.255);
        assert!(q.ci_high.unwrap() - q.ci_low.unwrap() > hi - lo);
        let zero = percent_difference(&[-1.0, 0.0, 1.0], &B, 0.95, 5.0);
        assert_eq!(zero.ci_low, None);
    }
}
