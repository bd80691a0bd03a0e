//! Student's t-test with pooled variance (what ministat prints), Welch's unequal-variance t-test
//! (Welch 1947, Satterthwaite degrees of freedom), and Fieller's confidence interval for the
//! ratio of two means (the percent difference with the baseline's own uncertainty included).
//! Quantiles are exact for any degrees of freedom (ministat's table stops at 100).

use super::describe::{mean, variance};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Degrees of freedom from which the t distribution is computed by its expansion around the
/// normal (error below 1e-15 there). Below it, statrs's incomplete beta function is accurate;
/// above it, that function's 140-term continued fraction no longer converges.
const LARGE_DF: f64 = 1e5;

/// Cumulative probability P(T_df <= t). Bounded work for any input: NaN in, NaN out.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    if df >= LARGE_DF {
        // Fisher's normalising transform (Abramowitz and Stegun 26.7.8), error O(df^-2).
        let z = t * (1.0 - 1.0 / (4.0 * df)) / 1f64.hypot(t / (2.0 * df).sqrt());
        return normal_cdf(z);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => dist.cdf(t),
        Err(_) => f64::NAN,
    }
}

/// The quantile t with P(T_df <= t) = p. Never iterates without bound (statrs's own inverse
/// loops for ever at about 10^8 degrees of freedom): a Cornish-Fisher expansion for large df
/// (Abramowitz and Stegun 26.7.5), else a bisection on the bit patterns of non-negative
/// doubles, which reaches adjacent doubles in at most 64 steps.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    if df >= LARGE_DF {
        let z = normal_quantile(p);
        let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
        let g1 = (z3 + z) / 4.0;
        let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
        let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
        let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
        return z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3) + g4 / df.powi(4);
    }
    if let Some(t) = newton_quantile(p, df) {
        return t;
    }
    let (mut lo, mut hi) = (0.0f64.to_bits(), f64::INFINITY.to_bits());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if t_cdf(f64::from_bits(mid), df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    f64::from_bits(hi)
}

/// The quantile by Newton's method from the normal quantile, kept inside a bracket that
/// shrinks at every step (a step that leaves it bisects instead): a few cdf evaluations
/// instead of the bit bisection's 64. `None` when it has not converged in 60 steps (the
/// caller then bisects).
fn newton_quantile(p: f64, df: f64) -> Option<f64> {
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    let mut t = normal_quantile(p).max(f64::MIN_POSITIVE);
    for _ in 0..60 {
        let f = t_cdf(t, df) - p;
        if f == 0.0 {
            return Some(t);
        }
        if f < 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let density = statrs::distribution::Continuous::pdf(&dist, t);
        let step = f / density;
        let mut next = t - step;
        if !(next.is_finite() && next > lo && next < hi) {
            next = if hi.is_finite() {
                lo + (hi - lo) / 2.0
            } else {
                t * 2.0
            };
        }
        if (next - t).abs() <= 4.0 * f64::EPSILON * t.abs() {
            return Some(next);
        }
        t = next;
    }
    None
}

/// Standard normal CDF.
pub fn normal_cdf(z: f64) -> f64 {
    statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2) / 2.0
}

/// Standard normal quantile; NaN outside (0, 1). statrs's version asserts (panics) there.
pub fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    -std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p)
}

/// Two-sided critical value t such that P(|T_df| <= t) = confidence.
pub fn t_critical(confidence: f64, df: f64) -> f64 {
    t_quantile(1.0 - (1.0 - confidence) / 2.0, df.max(1e-9))
}

/// Two-sided p-value of a t statistic.
pub fn t_p_value(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    // The upper tail directly: 1 - cdf would lose every digit below 1e-16.
    (2.0 * t_cdf(-t.abs(), df.max(1e-9))).clamp(0.0, 1.0)
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

    /// Reference quantiles and two-sided p-values at t = 3 from mpmath (40 digits), for df from
    /// 1 to 10^12: the regime where statrs's inverse never returned.
    #[test]
    fn quantiles_and_p_values_match_mpmath_for_any_df() {
        let cases = [
            (
                1.0,
                12.706204736174692,
                127.32133646887486,
                0.20483276469913345,
            ),
            (
                2.5,
                3.5746548420036817,
                9.528078202993232,
                0.07257609554903184,
            ),
            (
                8.0,
                2.3060041352041662,
                3.8325186853443576,
                0.01707168123378265,
            ),
            (
                100.0,
                1.9839715185235518,
                2.870651523836545,
                0.0034079153433294496,
            ),
            (
                1e4,
                1.960201239890626,
                2.8076570189714043,
                0.0027064481899976662,
            ),
            (
                1e6,
                1.9599663568141068,
                2.807039999577644,
                0.002699862541421797,
            ),
            (
                1e8,
                1.9599640082627665,
                2.8070338306560223,
                0.0026997967280374944,
            ),
            (
                1e12,
                1.9599639845424262,
                2.8070337683500424,
                0.002699796063326667,
            ),
        ];
        for (df, q975, q9975, p3) in cases {
            let t0 = std::time::Instant::now();
            assert!(
                (t_quantile(0.975, df) - q975).abs() < 1e-9 * q975,
                "df {df}"
            );
            assert!(
                (t_quantile(0.9975, df) - q9975).abs() < 1e-9 * q9975,
                "df {df}"
            );
            assert!(
                (t_quantile(0.025, df) + q975).abs() < 1e-9 * q975,
                "df {df}"
            );
            assert!(
                (t_p_value(3.0, df) - p3).abs() < 1e-8 * p3,
                "df {df}: {}",
                t_p_value(3.0, df)
            );
            assert!(t0.elapsed() < std::time::Duration::from_secs(1), "df {df}");
        }
    }

    #[test]
    fn extreme_arguments_give_answers_not_hangs_or_panics() {
        for df in [1e-300, 1e-9, 0.5, 1e5 - 1.0, 1e5, 1e300, f64::INFINITY] {
            for p in [1e-10, 0.3, 0.5, 0.9, 1.0 - 1e-10] {
                // NaN is allowed (not computable); a wrong sign or a hang is not.
                let q = t_quantile(p, df);
                assert!(q.is_nan() || (q - 0.0).signum() == (p - 0.5).signum() || p == 0.5);
            }
        }
        for bad in [f64::NAN, 0.0, 1.0, -1.0, 2.0] {
            assert!(t_quantile(bad, 5.0).is_nan());
            assert!(normal_quantile(bad).is_nan());
        }
        assert!(t_quantile(0.9, f64::NAN).is_nan());
        assert!(t_quantile(0.9, -3.0).is_nan());
        assert_eq!(t_p_value(1e300, 1e300), 0.0);
        assert_eq!(t_p_value(0.0, 1e-300), 1.0);
        // Tiny p-values keep their digits (1 - cdf would round to 0).
        let p = t_p_value(40.0, 30.0);
        assert!(p > 0.0 && p < 1e-25, "{p}");
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
