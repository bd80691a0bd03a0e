//! The value axis of the report's charts: unit scaling (bit/s in k/M/G, bytes in kB/MB/GB),
//! "nice" ticks, and a logarithmic axis when the values span more than `LOG_SPAN`.

use super::{AXIS_LIMIT, BOTTOM, H, MAX_TICKS, TOP};

/// A value axis: unit scaling and "nice" ticks.
#[derive(Debug, Clone)]
pub struct Axis {
    pub max: f64,
    pub step: f64,
    pub scale: f64,
    pub unit: String,
    /// A logarithmic axis from 10^lo to 10^hi (in the axis unit), when the values span more
    /// than `LOG_SPAN`.
    pub log: Option<(i32, i32)>,
}

/// Values spanning more than this ratio get a logarithmic axis (a linear one would flatten the
/// small ones to the baseline).
pub const LOG_SPAN: f64 = 20.0;

impl Axis {
    /// An axis from 0 to at least `max` for values in `base_unit` (`bit/s` gets k/M/G). A
    /// `max` that is not finite or not positive gives a unit axis; one beyond `AXIS_LIMIT` is
    /// cut there (marks above it sit at the top), so the tick loop is always short.
    pub fn new(max: f64, base_unit: &str) -> Axis {
        let max = if max.is_finite() && max > 0.0 {
            max.min(AXIS_LIMIT)
        } else {
            1.0
        };
        let (scale, unit) = if base_unit == "bit/s" {
            match max {
                m if m >= 1e9 => (1e9, "Gbit/s".to_string()),
                m if m >= 1e6 => (1e6, "Mbit/s".to_string()),
                m if m >= 1e3 => (1e3, "kbit/s".to_string()),
                _ => (1.0, "bit/s".to_string()),
            }
        } else if base_unit == "B" {
            // Bytes (a congestion window) in decimal multiples, as the rates are.
            match max {
                m if m >= 1e9 => (1e9, "GB".to_string()),
                m if m >= 1e6 => (1e6, "MB".to_string()),
                m if m >= 1e3 => (1e3, "kB".to_string()),
                _ => (1.0, "B".to_string()),
            }
        } else {
            (1.0, base_unit.to_string())
        };
        let m = (max / scale).max(1e-9);
        let step = nice_step(m / 5.0);
        let top = (m / step).ceil().max(1.0) * step;
        Axis {
            max: top,
            step,
            scale,
            unit,
            log: None,
        }
    }

    /// An axis for `values` (and `reference`, a line such as the path's rate): logarithmic when
    /// the positive finite values span more than `LOG_SPAN`, else from 0 like `new`.
    pub fn for_values(
        values: impl Iterator<Item = f64>,
        reference: Option<f64>,
        unit: &str,
    ) -> Axis {
        let v: Vec<f64> = values
            .chain(reference)
            .filter(|x| x.is_finite() && *x > 0.0 && *x <= AXIS_LIMIT)
            .collect();
        let max = v.iter().copied().fold(0.0, f64::max);
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let mut axis = Axis::new(max, unit);
        if max / min > LOG_SPAN {
            let lo = (min / axis.scale).log10().floor() as i32;
            let hi = ((max / axis.scale).log10().ceil() as i32).max(lo + 1);
            // At most MAX_TICKS decades: beyond that the low end is cut.
            axis.log = Some((lo.max(hi - MAX_TICKS as i32), hi));
        }
        axis
    }

    pub(super) fn y(&self, v: f64) -> f64 {
        if let Some((lo, hi)) = self.log {
            let x = v / self.scale;
            let share = if x > 0.0 && x.is_finite() {
                ((x.log10() - f64::from(lo)) / f64::from(hi - lo)).clamp(0.0, 1.05)
            } else if x.is_infinite() && x > 0.0 {
                1.05
            } else {
                0.0
            };
            return TOP + (H - TOP - BOTTOM) * (1.0 - share);
        }
        let share = v / self.scale / self.max;
        // NaN sits on the baseline; infinities are clamped like any value off the axis.
        let share = if share.is_nan() {
            0.0
        } else {
            share.clamp(0.0, 1.05)
        };
        TOP + (H - TOP - BOTTOM) * (1.0 - share)
    }

    /// Number of tick steps from 0 to the top (at most `MAX_TICKS`).
    pub(super) fn ticks(&self) -> usize {
        ((self.max / self.step).round() as usize).min(MAX_TICKS)
    }

    /// A value in the axis unit, for labels and tooltips.
    pub fn fmt(&self, v: f64) -> String {
        let x = v / self.scale;
        if !x.is_finite() {
            return "not a finite value".into();
        }
        if x.abs() >= 100.0 {
            format!("{x:.0} {}", self.unit)
        } else {
            format!("{x:.3} {}", self.unit).replace(".000 ", " ")
        }
    }
}

/// The smallest "nice" step (1, 2, 2.5 or 5 times a power of ten) of at least `raw` (> 0).
pub(super) fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|f| f * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}
