//! `duration = "auto"`: a test that ends once its interval rates are steady.
//!
//! The rule is the sequential procedure with a relative precision of Law and Kelton
//! (*Simulation Modeling and Analysis*, 3rd ed., 2000, §9.4.1), applied to the test's own
//! reporting intervals as batches (the method of batch means: Jain, *The Art of Computer
//! Systems Performance Analysis*, 1991, §25.5.2), after deleting the initial transient with the
//! MSER rule (White, "An effective truncation heuristic for bias reduction in simulation
//! output", *Simulation* 69(6), 1997; at most half the intervals, Jain §25.3):
//!
//! with the `m` intervals MSER keeps of the `n` measured so far (at least `MIN_INTERVALS`),
//! their mean `x̄` and standard deviation `s`, the rates are steady once
//! `t(0.975, m - 1) · s / √m ≤ γ / (1 + γ) · x̄` (a 95% confidence interval of the mean within a
//! relative error γ, the `precision`, default 5%), and at least `floor` has been measured. A test
//! whose rates never settle runs to its ceiling, the spec's `duration`.
//!
//! Pure calculation: the client feeds it the merged interval rates as they are released.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::time::Duration;

/// Fewest measured intervals the rule looks at: with fewer, `t(0.975, m - 1)` is so large that
/// only identical intervals would pass, and one lucky agreement would end the test.
pub const MIN_INTERVALS: usize = 4;
/// Default relative precision of the mean (γ): 5%. A run's own mean needs to be known only a
/// little better than the spread between repeated runs, which on shared hosts and real paths
/// is rarely below 5% (tighten it, `auto:2%`, on quiet ones): longer runs then add time, not
/// knowledge.
pub const DEFAULT_PRECISION: f64 = 0.05;
/// Default least measured time.
pub const DEFAULT_FLOOR: Duration = Duration::from_secs(2);
/// Default ceiling (`duration = "auto"` without one): the documents' `iperf -t 30`.
pub const DEFAULT_CEILING: Duration = Duration::from_secs(30);

/// The stopping rule of a `duration = "auto"` test; the spec's `duration` is its ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    /// γ: the relative error allowed of the mean rate at 95% confidence (0.02 = 2%).
    pub precision: f64,
    /// Least measured time before the test may end.
    #[serde(with = "crate::traffic::spec::micros", rename = "floor_us")]
    pub floor: Duration,
}

impl Default for Steady {
    fn default() -> Steady {
        Steady {
            precision: DEFAULT_PRECISION,
            floor: DEFAULT_FLOOR,
        }
    }
}

/// How steady the rates looked after some intervals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// Measured intervals so far, and how many of the latest the rule used.
    pub intervals: usize,
    pub used: usize,
    /// Mean rate of the used intervals, bit/s.
    pub mean_bps: f64,
    /// Half-width of the mean's 95% confidence interval, relative to the mean (0.013 = ±1.3%);
    /// infinite when the mean is zero and the rates are not all zero.
    pub half_width: f64,
    /// The rule is met.
    pub steady: bool,
}

/// How a `duration = "auto"` test ended; kept in its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    pub rule: Steady,
    /// Measured seconds in the summary when the test ended, and its ceiling.
    pub measured_s: f64,
    /// Seconds at the start left out as the initial transient (MSER), like `omit`.
    #[serde(default)]
    pub transient_s: f64,
    pub ceiling_s: f64,
    /// The last reading of the rule (absent when too few intervals were measured).
    pub reading: Option<Reading>,
}

impl Ending {
    /// One sentence for the text output.
    pub fn sentence(&self) -> String {
        let pct = |x: f64| {
            if x.is_finite() {
                format!("±{:.1}%", x * 100.0)
            } else {
                "unbounded".to_string()
            }
        };
        match self.reading {
            Some(r) if r.steady => {
                let transient = if self.transient_s > 0.0 {
                    format!(
                        "; its first {:.2} s were the initial transient (MSER), left out like -O",
                        self.transient_s
                    )
                } else {
                    String::new()
                };
                format!(
                    "ended after {:.2} s of its {:.0} s ceiling: the rates were steady (mean of the \
                     last {} intervals known to {} at 95%, asked {}){transient}",
                    self.measured_s + self.transient_s,
                    self.ceiling_s,
                    r.used,
                    pct(r.half_width),
                    pct(self.rule.precision)
                )
            }
            Some(r) => format!(
                "ran to its {:.0} s ceiling: the rates never became steady (mean of the last {} \
                 intervals known to {} at 95%, asked {})",
                self.ceiling_s,
                r.used,
                pct(r.half_width),
                pct(self.rule.precision)
            ),
            None => format!(
                "ran {:.1} s: too few intervals to judge steadiness",
                self.measured_s
            ),
        }
    }
}

/// Reads the measured interval rates so far (bit/s, in time order, warm-up left out).
/// `interval` is the spec's reporting interval. `None` with fewer than `MIN_INTERVALS`.
pub fn read(rule: &Steady, interval: Duration, rates: &[f64]) -> Option<Reading> {
    let n = rates.len();
    if n < MIN_INTERVALS {
        return None;
    }
    let used = n - truncation(rates);
    let tail = &rates[n - used..];
    let m = used as f64;
    let mean = tail.iter().sum::<f64>() / m;
    let var = tail.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (m - 1.0);
    let half = t_975(m - 1.0) * var.sqrt() / m.sqrt();
    let half_width = if mean > 0.0 {
        half / mean
    } else if half == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    let measured = interval.as_secs_f64() * n as f64;
    let target = rule.precision / (1.0 + rule.precision);
    Some(Reading {
        intervals: n,
        used,
        mean_bps: mean,
        half_width,
        steady: measured + 1e-9 >= rule.floor.as_secs_f64() && half_width <= target,
    })
}

/// How many leading intervals to delete as the initial transient: MSER (White 1997), the `d`
/// in `0..=n/2` that minimises `Σ_{i>d} (x_i - x̄_d)² / (n - d)²`, the squared standard error of
/// the mean of what is kept; never so many that fewer than `MIN_INTERVALS` remain. A minimum
/// found at the limit means the rates are still moving: the rule then judges only the later
/// half, whose spread says so.
pub fn truncation(rates: &[f64]) -> usize {
    let n = rates.len();
    let limit = (n / 2).min(n.saturating_sub(MIN_INTERVALS));
    let mut best = (f64::INFINITY, 0);
    for d in 0..=limit {
        let kept = &rates[d..];
        let k = kept.len() as f64;
        let mean = kept.iter().sum::<f64>() / k;
        let score = kept.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k * k);
        // Ties go to the smaller deletion: keep data unless deleting it helps.
        if score < best.0 {
            best = (score, d);
        }
    }
    best.1
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom.
fn t_975(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(0.975))
        .unwrap_or(f64::INFINITY)
}

/// Reads a duration value: a fixed time (`10s`), or `auto` with optional parts after colons,
/// in any order: a ceiling (`auto:60s`) and a precision (`auto:2%`), as in `auto:60s:2%`.
/// Returns the duration (the ceiling for auto) and the rule.
pub fn parse_duration(text: &str) -> Result<(Duration, Option<Steady>), String> {
    let t = text.trim();
    let mut parts = t.split(':');
    let head = parts.next().unwrap_or_default();
    if !head.eq_ignore_ascii_case("auto") {
        if head.to_ascii_lowercase().starts_with("auto") || t.contains(':') {
            return Err(format!(
                "{t:?} is not a duration: write a time such as 10s, or auto, auto:60s (a \
                 ceiling), auto:2% (a precision), auto:60s:2%"
            ));
        }
        return crate::units::parse_duration(t)
            .map(|d| (d, None))
            .map_err(|e| e.to_string());
    }
    let (mut ceiling, mut rule) = (DEFAULT_CEILING, Steady::default());
    for part in parts {
        if part.trim_end().ends_with('%') {
            let pct = crate::units::parse_percent(part).map_err(|e| format!("{t:?}: {e}"))?;
            if !(pct > 0.0 && pct < 100.0) {
                return Err(format!(
                    "{t:?}: the precision is a percentage above 0 and below 100"
                ));
            }
            rule.precision = pct / 100.0;
        } else {
            ceiling = crate::units::parse_duration(part).map_err(|e| format!("{t:?}: {e}"))?;
        }
    }
    if ceiling < rule.floor {
        return Err(format!(
            "the ceiling of {t:?} is shorter than the {} s the rule measures at least",
            rule.floor.as_secs()
        ));
    }
    Ok((ceiling, Some(rule)))
}

#[cfg(test)]
mod tests;
