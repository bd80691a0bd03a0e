//! Statistics over per-run values, pure functions over slices: ministat's vitals (`describe`),
//! Student's and Welch's t and Fieller's percent interval (`ttest`), Mann-Whitney U and
//! Hodges-Lehmann (`rank`), runs needed for a given power and Holm's correction.
//!
//! This is the ground floor of `analysis`: the decision engine (`analysis::decide`) and the
//! comparison of named sets (`analysis::sets`) are built on it, and it knows neither.

pub mod describe;
pub mod rank;
pub mod ttest;

pub use describe::{Description, describe};

/// Runs per set needed to detect a difference `delta` with standard deviation `sigma`
/// (two-sided, equal group sizes), by the t-based iteration of the normal formula.
pub fn runs_needed(sigma: f64, delta: f64, confidence: f64, power: f64) -> Option<usize> {
    if !delta.is_finite() || delta == 0.0 || !sigma.is_finite() {
        return None;
    }
    if !(confidence > 0.0 && confidence < 1.0 && power > 0.0 && power < 1.0) {
        return None;
    }
    if sigma == 0.0 {
        return Some(3);
    }
    let za = ttest::normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    let zb = ttest::normal_quantile(power);
    let ratio = (sigma / delta).powi(2);
    let mut n = 2.0 * (za + zb).powi(2) * ratio;
    // Beyond this the answer is "far too many" whatever its digits: stop before iterating.
    const MAX_RUNS: f64 = 1e9;
    if !n.is_finite() || n > MAX_RUNS {
        return None;
    }
    for _ in 0..50 {
        let df = (2.0 * n - 2.0).max(1.0);
        let ta = ttest::t_critical(confidence, df);
        let tb = ttest::t_critical(2.0 * power - 1.0, df);
        let next = 2.0 * (ta + tb).powi(2) * ratio;
        if !next.is_finite() || (next - n).abs() < 1e-6 {
            break;
        }
        n = next;
    }
    if !n.is_finite() || n > MAX_RUNS {
        return None;
    }
    Some((n.ceil() as usize).max(3))
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
