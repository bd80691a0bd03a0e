//! Statistics over per-run values, pure functions over slices: ministat's vitals (`describe`),
//! Student's and Welch's t and Fieller's percent interval (`ttest`), Mann-Whitney U and
//! Hodges-Lehmann (`rank`), Brown and Forsythe's test of equal variances and the F
//! distribution (`variances`), runs needed for a given power and Holm's correction.
//!
//! This is the ground floor of `analysis`: the decision engine (`analysis::decide`) and the
//! comparison of named sets (`analysis::sets`) are built on it, and it knows neither.

pub mod describe;
pub mod rank;
pub mod ttest;
pub mod variances;

pub use describe::{Description, describe};

/// Runs per set needed to detect a difference `delta` with standard deviation `sigma` in
/// both sets (two-sided, equal group sizes): `runs_needed_welch` with equal variances.
pub fn runs_needed(sigma: f64, delta: f64, confidence: f64, power: f64) -> Option<usize> {
    runs_needed_welch((sigma * sigma, sigma * sigma), delta, confidence, power)
}

/// Runs per set needed for Welch's test to detect a difference `delta` between sets of per-run
/// variances `variances` (two-sided, equal group sizes): the t-based iteration of the normal
/// formula n = (t_a + t_b)^2 (s1^2 + s2^2) / delta^2, its degrees of freedom Welch and
/// Satterthwaite's at n runs each, (n - 1)(s1^2 + s2^2)^2 / (s1^4 + s2^4): 2n - 2 at equal
/// variances (Student's), n - 1 when one set's noise is all of it (Chow, Shao & Wang, "Sample
/// Size Calculations in Clinical Research", 3.2; checked by simulation of Welch's test in the
/// tests).
pub fn runs_needed_welch(
    variances: (f64, f64),
    delta: f64,
    confidence: f64,
    power: f64,
) -> Option<usize> {
    let (a, b) = variances;
    if !delta.is_finite() || delta == 0.0 || !(a.is_finite() && b.is_finite()) {
        return None;
    }
    if !(confidence > 0.0 && confidence < 1.0 && power > 0.0 && power < 1.0) || a < 0.0 || b < 0.0 {
        return None;
    }
    if a + b == 0.0 {
        return Some(3);
    }
    let za = ttest::normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let zb = ttest::normal_quantile(power);
    let ratio = (a + b) / (delta * delta);
    // Welch's degrees of freedom per run beyond the first, (a + b)^2 / (a^2 + b^2) in [1, 2],
    // from the shares of the variance (so variances near f64's limits are never squared).
    let (pa, pb) = (a / (a + b), b / (a + b));
    let share = 1.0 / (pa * pa + pb * pb);
    // Beyond this the answer is "far too many" whatever its digits.
    const MAX_RUNS: usize = 1_000_000_000;
    let normal = (za + zb).powi(2) * ratio;
    if !normal.is_finite() || normal > MAX_RUNS as f64 {
        return None;
    }
    // The smallest n with n >= (t_a + t_b)^2 ratio at n's degrees of freedom: the right side
    // only falls as n grows, so doubling then bisection finds it (a fixed-point iteration
    // oscillates where few degrees of freedom make the t quantiles steep).
    let enough = |n: usize| {
        let df = (share * (n as f64 - 1.0)).max(1.0);
        let ta = ttest::t_critical(confidence, df);
        let tb = ttest::t_critical(2.0 * power - 1.0, df);
        n as f64 >= (ta + tb).powi(2) * ratio
    };
    let mut hi = 2;
    while !enough(hi) {
        if hi >= MAX_RUNS {
            return None;
        }
        hi = (hi * 2).min(MAX_RUNS);
    }
    let mut lo = 2;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo.max(3))
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

#[cfg(test)]
mod tests;
