//! Small SVG charts for the report: grouped bars, box plots with every run as a point, lines
//! over time, and means with confidence intervals. Every mark carries an SVG `<title>`, which
//! browsers show as a tooltip. Written here rather than with plotters because plotters cannot
//! attach a title to a mark, and a report without tooltips hides its numbers.

use std::fmt::Write;

mod axis;
use axis::nice_step;
pub use axis::{Axis, LOG_SPAN};

const W: f64 = 860.0;
const H: f64 = 340.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 80.0;
/// Colours that stay distinct in print and for common colour blindness (Okabe-Ito).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// A category with its mean and optional confidence interval.
pub type MeanCi = (String, f64, Option<(f64, f64)>);
/// A line: name, colour index, points (x seconds, y).
pub type Line = (String, usize, Vec<(f64, f64)>);

/// Largest value an axis reaches; stored values beyond it are not physical figures.
const AXIS_LIMIT: f64 = 1e300;
/// Most grid lines on a value axis ("nice" steps give 4 to 10).
const MAX_TICKS: usize = 20;

/// Largest finite value of `values`, or 0.
fn finite_max(values: impl Iterator<Item = f64>) -> f64 {
    values.filter(|v| v.is_finite()).fold(0.0, f64::max)
}

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn frame(title: &str, y_label: &str, axis: &Axis, x_label: &str) -> String {
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{t}\" class=\"chart\">\
         <title>{t}</title><text x=\"{}\" y=\"20\" class=\"ct\">{t}</text>",
        W / 2.0,
        t = esc(title)
    );
    let ticks: Vec<f64> = match axis.log {
        Some((lo, hi)) => (lo..=hi).map(|e| 10f64.powi(e)).collect(),
        None => (0..=axis.ticks()).map(|k| k as f64 * axis.step).collect(),
    };
    for v in ticks {
        let y = axis.y(v * axis.scale);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{}\" y=\"{:.1}\" class=\"yt\">{}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            trim_num(v)
        );
    }
    let _ = write!(
        s,
        "<text transform=\"translate(16 {:.1}) rotate(-90)\" class=\"al\">{}</text><text x=\"{:.1}\" y=\"{}\" class=\"al\">{}</text>",
        (TOP + H - BOTTOM) / 2.0,
        esc(&format!(
            "{y_label} ({}{})",
            axis.unit,
            if axis.log.is_some() {
                ", log scale"
            } else {
                ""
            }
        )),
        (LEFT + W - RIGHT) / 2.0,
        H - BOTTOM + 28.0,
        esc(x_label)
    );
    s
}

/// The classes the charts use, for an SVG file that stands alone (the HTML pages carry the
/// same rules in their own style sheet).
pub const CHART_CSS: &str = "text{font-family:system-ui,-apple-system,'Segoe UI',sans-serif}\
.ct{font-size:15px;font-weight:600;text-anchor:middle}.yt{font-size:11px;text-anchor:end;fill:#444}.xt{font-size:11px;text-anchor:middle;fill:#444}\
.al{font-size:12px;text-anchor:middle;fill:#333}.lg{font-size:11px;fill:#333}.grid{stroke:#e3e3e3}.run{stroke-width:1.2;opacity:.8}";

/// Charts one above the other in one SVG document under `title`, with their style sheet:
/// a picture that stands alone (`plot -o FILE.svg`).
pub fn stack(title: &str, charts: &[String]) -> String {
    let top = 40.0;
    let height = top + H * charts.len() as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{height}\" viewBox=\"0 0 {W} {height}\" role=\"img\" aria-label=\"{t}\">\
         <title>{t}</title><style>{CHART_CSS}</style><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/><text x=\"{}\" y=\"24\" class=\"ct\">{t}</text>",
        W / 2.0,
        t = esc(title)
    );
    for (i, chart) in charts.iter().enumerate() {
        let place = format!(
            "<svg x=\"0\" y=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=",
            top + H * i as f64
        );
        s.push_str(&chart.replacen(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=",
            &place,
            1,
        ));
    }
    s.push_str("</svg>");
    s
}

/// A dashed line across the plot at `v` (the path's rate), labelled.
fn reference_line(s: &mut String, axis: &Axis, v: Option<f64>, label: &str) {
    let Some(v) = v.filter(|v| v.is_finite() && *v > 0.0) else {
        return;
    };
    let y = axis.y(v);
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"rate\"><title>{}</title></line><text x=\"{}\" y=\"{:.1}\" class=\"lg\" text-anchor=\"end\">{}</text>",
        W - RIGHT,
        esc(&format!("{label}: {}", axis.fmt(v))),
        W - RIGHT - 4.0,
        y - 4.0,
        esc(&format!("{label} {}", axis.fmt(v)))
    );
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The legend: `names[i]` beside colour `i`; an empty name (a colour not drawn) is left out.
fn legend(s: &mut String, names: &[String]) {
    let (mut x, mut y) = (LEFT, H - 38.0);
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            continue;
        }
        let width = 24.0 + 6.5 * n.chars().count() as f64;
        if x + width > W - RIGHT && x > LEFT {
            // Wrap onto the next row.
            x = LEFT;
            y += 13.0;
        }
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"lg\">{}</text>",
            PALETTE[i % PALETTE.len()],
            x + 14.0,
            y + 9.0,
            esc(n)
        );
        x += width;
    }
}

fn slot_x(i: usize, n: usize) -> (f64, f64) {
    let w = (W - LEFT - RIGHT) / n.max(1) as f64;
    (LEFT + w * i as f64, w)
}

fn x_tick(s: &mut String, x: f64, label: &str) {
    let _ = write!(
        s,
        "<text x=\"{x:.1}\" y=\"{}\" class=\"xt\">{}</text>",
        H - BOTTOM + 16.0,
        esc(label)
    );
}

/// Reference marks on a chart: a dashed marker per category (the window/RTT ceiling) and a
/// line across it (the path's rate).
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks<'a> {
    pub limits: Option<&'a [f64]>,
    pub rate: Option<f64>,
}

/// Grouped bars: one group per category, one bar per series. `None` leaves a gap.
/// `limits` draws a dashed marker per category (e.g. the window/RTT ceiling).
pub fn grouped_bars(
    title: &str,
    x_label: &str,
    y_label: &str,
    unit: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    marks: Marks<'_>,
) -> String {
    let Marks { limits, rate } = marks;
    let max = finite_max(series.iter().flat_map(|(_, v)| v.iter().flatten()).copied());
    let lim_max = limits.map_or(0.0, |l| finite_max(l.iter().copied()));
    let axis = Axis::for_values(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten())
            .copied()
            .chain(std::iter::once(lim_max.min(max * 1.5))),
        rate,
        unit,
    );
    let mut s = frame(title, y_label, &axis, x_label);
    reference_line(&mut s, &axis, rate, "path rate");
    let n = series.len().max(1);
    for (ci, cat) in categories.iter().enumerate() {
        let (x0, w) = slot_x(ci, categories.len());
        let bw = w * 0.8 / n as f64;
        for (si, (name, vals)) in series.iter().enumerate() {
            let Some(v) = vals.get(ci).copied().flatten() else {
                continue;
            };
            let x = x0 + w * 0.1 + bw * si as f64;
            let y = axis.y(v);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {} = {}</title></rect>",
                (bw - 1.0).max(1.0),
                (axis.y(0.0) - y).max(0.0),
                PALETTE[si % PALETTE.len()],
                esc(cat),
                esc(name),
                esc(&axis.fmt(v))
            );
        }
        if let Some(l) = limits
            .and_then(|l| l.get(ci))
            .filter(|l| axis.log.is_some() || **l <= axis.max * axis.scale)
        {
            let y = axis.y(*l);
            let _ = write!(
                s,
                "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"limit\"><title>{}: window / idle RTT = {}</title></line>",
                x0 + 2.0,
                x0 + w - 2.0,
                esc(cat),
                esc(&axis.fmt(*l))
            );
        }
        x_tick(&mut s, x0 + w / 2.0, cat);
    }
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    legend(&mut s, &names);
    if limits.is_some() {
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"limit\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"lg\">window / idle RTT</text>",
            W - RIGHT - 150.0,
            W - RIGHT - 126.0,
            H - 37.0,
            H - 37.0,
            W - RIGHT - 120.0,
            H - 33.0
        );
    }
    s.push_str("</svg>");
    s
}

/// Box plot per category with every value drawn as a point.
pub fn box_points(
    title: &str,
    y_label: &str,
    unit: &str,
    cats: &[(String, Vec<f64>)],
    rate: Option<f64>,
) -> String {
    let axis = Axis::for_values(cats.iter().flat_map(|(_, v)| v.iter()).copied(), rate, unit);
    let mut s = frame(title, y_label, &axis, "configuration");
    reference_line(&mut s, &axis, rate, "path rate");
    for (i, (name, vals)) in cats.iter().enumerate() {
        let (x0, w) = slot_x(i, cats.len());
        let cx = x0 + w / 2.0;
        let v = crate::analysis::stats::describe::sorted(vals);
        if !v.is_empty() {
            let q = |p| crate::analysis::stats::describe::quantile_sorted(&v, p);
            let (q1, med, q3) = (q(0.25), q(0.5), q(0.75));
            let bw = (w * 0.5).min(60.0);
            let _ = write!(
                s,
                "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"whisker\"/>\
                 <rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" class=\"box\"><title>{}: quartiles {} / {} / {}</title></rect>\
                 <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"median\"/>",
                axis.y(v[0]),
                axis.y(v[v.len() - 1]),
                cx - bw / 2.0,
                axis.y(q3),
                (axis.y(q1) - axis.y(q3)).max(1.0),
                esc(name),
                esc(&axis.fmt(q1)),
                esc(&axis.fmt(med)),
                esc(&axis.fmt(q3)),
                cx - bw / 2.0,
                cx + bw / 2.0,
                axis.y(med),
                axis.y(med)
            );
        }
        for (k, val) in vals.iter().enumerate() {
            // Spread the points a little so equal values stay visible.
            let dx = ((k * 7) % 11) as f64 - 5.0;
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"><title>{}: run {} = {}</title></circle>",
                cx + dx * 2.0,
                axis.y(*val),
                PALETTE[i % PALETTE.len()],
                esc(name),
                k + 1,
                esc(&axis.fmt(*val))
            );
        }
        x_tick(&mut s, cx, &short(name, w));
    }
    s.push_str("</svg>");
    s
}

fn short(label: &str, width: f64) -> String {
    let max = (width / 6.5) as usize;
    if label.len() <= max || max < 4 {
        label.to_string()
    } else {
        format!(
            "{}…",
            &label[..label
                .char_indices()
                .nth(max - 1)
                .map_or(label.len(), |(i, _)| i)]
        )
    }
}

/// Means with confidence-interval error bars per category.
pub fn means_ci(
    title: &str,
    y_label: &str,
    unit: &str,
    cats: &[MeanCi],
    rate: Option<f64>,
) -> String {
    let axis = Axis::for_values(
        cats.iter().map(|(_, m, ci)| ci.map_or(*m, |c| c.1.max(*m))),
        rate,
        unit,
    );
    let mut s = frame(title, y_label, &axis, "configuration");
    reference_line(&mut s, &axis, rate, "path rate");
    for (i, (name, mean, ci)) in cats.iter().enumerate() {
        let (x0, w) = slot_x(i, cats.len());
        let cx = x0 + w / 2.0;
        if let Some((lo, hi)) = ci {
            let _ = write!(
                s,
                "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"err\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"err\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" class=\"err\"/>",
                axis.y(*lo),
                axis.y(*hi),
                cx - 6.0,
                cx + 6.0,
                axis.y(*lo),
                axis.y(*lo),
                cx - 6.0,
                cx + 6.0,
                axis.y(*hi),
                axis.y(*hi)
            );
        }
        let ci_text = ci
            .map(|(lo, hi)| format!(" (95% CI {} to {})", axis.fmt(lo), axis.fmt(hi)))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{}\"><title>{}: mean {}{}</title></circle>",
            axis.y(*mean),
            PALETTE[i % PALETTE.len()],
            esc(name),
            esc(&axis.fmt(*mean)),
            esc(&ci_text)
        );
        x_tick(&mut s, cx, &short(name, w));
    }
    s.push_str("</svg>");
    s
}

/// The horizontal axis of `xy`: its label (with the unit) and whether it is logarithmic.
#[derive(Debug, Clone, Copy)]
pub struct XAxis<'a> {
    pub label: &'a str,
    pub log: bool,
    /// A linear axis starts at the smallest x of the data instead of 0 (time in a run, whose
    /// first measured interval ends after the calibration and warm-up).
    pub from_data: bool,
}

/// Points of several series against a value axis: joined by lines (`connect`) or as a
/// scatter. `y` is (label, unit) of the value axis; a logarithmic x axis spans whole decades.
pub fn xy(
    title: &str,
    y: (&str, &str),
    x: XAxis,
    series: &[Line],
    legend_names: &[String],
    connect: bool,
) -> String {
    xy_scaled(title, y, x, series, series, legend_names, connect, None)
}

/// `xy` over time with the warm-up shaded: from the axis's start to `warm_up_end` (the end of
/// the last omitted interval), a grey band named "warm-up", whose points are in no summary.
pub fn xy_with_warm_up(
    title: &str,
    y: (&str, &str),
    x: XAxis,
    (series, legend_names): (&[Line], &[String]),
    connect: bool,
    warm_up_end: Option<f64>,
) -> String {
    xy_scaled(
        title,
        y,
        x,
        series,
        series,
        legend_names,
        connect,
        warm_up_end,
    )
}

/// Small multiples: one small `xy` chart per panel (a title and its lines), all on the axes
/// of all panels' points so they compare at a glance, in a grid. For more series than
/// `PALETTE` has colours, where one chart would repeat colours.
pub fn small_multiples(y: (&str, &str), x: XAxis, panels: &[Panel], connect: bool) -> String {
    let all: Vec<Line> = panels
        .iter()
        .flat_map(|p| p.lines.iter().cloned())
        .collect();
    let mut s = String::from("<div class=\"multiples\">");
    for p in panels {
        s.push_str(&xy_scaled(
            &p.title, y, x, &p.lines, &all, &p.legend, connect, None,
        ));
    }
    s.push_str("</div>");
    s
}

/// One chart of `small_multiples`: its title, its lines and their legend (by colour index).
#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub lines: Vec<Line>,
    pub legend: Vec<String>,
}

/// `xy` with the axes fitted to the points of `scale_from` (a superset of `series`), and the
/// warm-up shaded up to `warm_up_end` when given.
#[allow(clippy::too_many_arguments)] // one private body behind `xy`, `xy_with_warm_up` and `small_multiples`
fn xy_scaled(
    title: &str,
    y: (&str, &str),
    x: XAxis,
    series: &[Line],
    scale_from: &[Line],
    legend_names: &[String],
    connect: bool,
    warm_up_end: Option<f64>,
) -> String {
    let (y_label, unit) = y;
    let finite = |p: &&(f64, f64)| {
        p.0.is_finite() && p.1.is_finite() && (!x.log || p.0 > 0.0) && p.0.abs() <= AXIS_LIMIT
    };
    let all = || {
        scale_from
            .iter()
            .flat_map(|(_, _, p)| p.iter().filter(finite))
    };
    let max = finite_max(all().map(|p| p.1));
    let xmax = finite_max(all().map(|p| p.0)).clamp(1e-9, AXIS_LIMIT);
    let (lo, hi) = if x.log {
        let xmin = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let lo = if xmin.is_finite() {
            xmin.log10().floor() as i32
        } else {
            0
        };
        let hi = (xmax.log10().ceil() as i32).max(lo + 1);
        (lo.max(hi - MAX_TICKS as i32), hi)
    } else {
        (0, 0)
    };
    let xmin = if x.from_data && !x.log {
        let m = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
        if m.is_finite() && m > 0.0 && m < xmax {
            m
        } else {
            0.0
        }
    } else {
        0.0
    };
    let axis = Axis::new(max, unit);
    let mut s = frame(title, y_label, &axis, x.label);
    let px = |t: f64| {
        let share = if x.log {
            (t.log10() - f64::from(lo)) / f64::from(hi - lo)
        } else {
            (t - xmin) / (xmax - xmin)
        };
        LEFT + (W - LEFT - RIGHT) * share.clamp(0.0, 1.0)
    };
    if x.log {
        for e in lo..=hi {
            x_tick(&mut s, px(10f64.powi(e)), &trim_num(10f64.powi(e)));
        }
    } else if xmin > 0.0 {
        for k in 0..=4 {
            let t = xmin + (xmax - xmin) * k as f64 / 4.0;
            x_tick(&mut s, px(t), &trim_num((t * 10.0).round() / 10.0));
        }
    } else {
        // From 0: ticks at whole steps (0, 1, 2, 3, 4 s for a test of 4.3 s, where quarters
        // of the span read 1.1, 2.2, 3.2).
        let step = nice_step(xmax / 5.0);
        let ticks = ((xmax / step + 1e-9).floor() as usize).min(MAX_TICKS);
        for k in 0..=ticks {
            let t = step * k as f64;
            x_tick(&mut s, px(t), &trim_num(t));
        }
    }
    if let Some(end) = warm_up_end.filter(|e| e.is_finite() && *e > xmin && !x.log) {
        let (from, to) = (px(xmin), px(end));
        let _ = write!(
            s,
            "<rect x=\"{from:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{}\" fill=\"#eee\"><title>warm-up to {} s: drawn, in no summary</title></rect><text x=\"{:.1}\" y=\"{}\" class=\"lg\">warm-up</text>",
            to - from,
            H - BOTTOM - TOP,
            trim_num(end),
            from + 4.0,
            TOP + 12.0
        );
    }
    for (name, colour, pts) in series {
        // A point with no finite place on the chart is left out.
        let pts: Vec<(f64, f64)> = pts.iter().filter(finite).copied().collect();
        if pts.is_empty() {
            continue;
        }
        let colour = PALETTE[colour % PALETTE.len()];
        if connect {
            let path: Vec<String> = pts
                .iter()
                .map(|(t, v)| format!("{:.1},{:.1}", px(*t), axis.y(*v)))
                .collect();
            let _ = write!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" class=\"run\"><title>{}</title></polyline>",
                path.join(" "),
                esc(name)
            );
        }
        for (t, v) in &pts {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{}\" fill=\"{colour}\"><title>{}: {} {}, {}</title></circle>",
                px(*t),
                axis.y(*v),
                if connect { 2 } else { 4 },
                esc(name),
                trim_num(*t),
                esc(x.label),
                esc(&axis.fmt(*v))
            );
        }
    }
    legend(&mut s, legend_names);
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a stored value of about 1e308 made the grid loop run until memory ran out.
    #[test]
    fn absurd_values_give_a_short_axis() {
        for v in [
            1e308,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            -1e308,
            0.0,
            5e-324,
        ] {
            let t0 = std::time::Instant::now();
            let svg = box_points(
                "t",
                "goodput",
                "bit/s",
                &[("a".into(), vec![1e9, v, 2e9])],
                None,
            );
            assert!(t0.elapsed() < std::time::Duration::from_secs(1), "{v}");
            assert!(
                svg.matches("class=\"grid\"").count() <= MAX_TICKS + 1,
                "{v}"
            );
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{v}: {svg}");
            let time = XAxis {
                from_data: false,
                label: "time in run (s)",
                log: false,
            };
            let l = xy(
                "t",
                ("g", "bit/s"),
                time,
                &[("a".into(), 0, vec![(0.0, v), (v, 1.0)])],
                &[],
                true,
            );
            assert!(!l.contains("NaN") && !l.contains("inf"), "{v}");
        }
    }

    /// Regression: the goodput-over-time chart began at 0 s though a run's first measured
    /// interval ends after its calibration and warm-up, leaving an empty band on the left.
    #[test]
    fn a_time_axis_from_the_data_starts_at_the_first_point() {
        let time = XAxis {
            label: "time in run (s)",
            log: false,
            from_data: true,
        };
        let svg = xy(
            "t",
            ("goodput", "bit/s"),
            time,
            &[("a".into(), 0, vec![(1.3, 9e8), (2.3, 9.5e8), (3.3, 9.4e8)])],
            &[],
            true,
        );
        let first = svg.find("<circle cx=\"").map(|i| &svg[i + 12..]).unwrap();
        let cx: f64 = first[..first.find('"').unwrap()].parse().unwrap();
        assert!(
            (cx - LEFT).abs() < 0.2,
            "first point at {cx}, axis starts at {LEFT}"
        );
        assert!(svg.contains(">1.3<"), "first tick at the data: {svg}");
        let from_zero = xy(
            "t",
            ("goodput", "bit/s"),
            XAxis {
                from_data: false,
                ..time
            },
            &[("a".into(), 0, vec![(1.3, 9e8), (3.3, 9.4e8)])],
            &[],
            true,
        );
        assert!(!from_zero.contains("<circle cx=\"70.0\""), "{from_zero}");
    }

    /// A trial's picture of a 4.3 s test read 0, 1.1, 2.2, 3.2, 4.3 under its time axis: an axis
    /// from 0 has ticks at whole steps now.
    #[test]
    fn a_time_axis_from_zero_ticks_at_whole_steps() {
        let time = XAxis {
            label: "time in test (s)",
            log: false,
            from_data: false,
        };
        let pts = vec![(1.3, 9e8), (2.3, 9.5e8), (4.3, 9.4e8)];
        let svg = xy(
            "t",
            ("rate", "bit/s"),
            time,
            &[("a".into(), 0, pts)],
            &[],
            true,
        );
        let ticks: Vec<&str> = svg
            .split("class=\"xt\">")
            .skip(1)
            .filter_map(|t| t.split('<').next())
            .collect();
        assert_eq!(ticks, ["0", "1", "2", "3", "4"], "{svg}");
    }

    #[test]
    fn small_multiples_share_their_axes() {
        let time = XAxis {
            label: "time in run (s)",
            log: false,
            from_data: false,
        };
        let panel = |title: &str, top: f64| Panel {
            title: title.into(),
            lines: vec![(title.into(), 0, vec![(0.0, 1e8), (10.0, top)])],
            legend: vec![],
        };
        let svg = small_multiples(
            ("goodput", "bit/s"),
            time,
            &[panel("slow", 2e8), panel("fast", 9e8)],
            true,
        );
        assert!(svg.starts_with("<div class=\"multiples\">") && svg.ends_with("</div>"));
        assert_eq!(svg.matches("<svg ").count(), 2);
        // Both panels end at the larger panel's top (1 Gbit/s) and the longest time (10 s).
        for chart in svg.split("<svg ").skip(1) {
            assert!(chart.contains(">1000</text>"), "{chart}");
            assert!(chart.contains(">10</text>"), "{chart}");
        }
    }

    #[test]
    fn axes_get_nice_ticks_and_units() {
        let a = Axis::new(965e6, "bit/s");
        assert_eq!((a.unit.as_str(), a.step, a.max), ("Mbit/s", 200.0, 1000.0));
        let a = Axis::new(3.2e10, "bit/s");
        assert_eq!((a.unit.as_str(), a.max), ("Gbit/s", 40.0));
        assert_eq!(Axis::new(7.0, "%").max, 8.0);
    }

    #[test]
    fn every_mark_has_a_tooltip_and_text_is_escaped() {
        let svg = grouped_bars(
            "t<1>",
            "x",
            "y",
            "bit/s",
            &["a&b".into()],
            &[("s".into(), vec![Some(5e6)])],
            Marks {
                limits: Some(&[4e6]),
                rate: None,
            },
        );
        assert!(
            svg.contains("<title>a&amp;b: s = 5.000 Mbit/s</title>")
                || svg.contains("<title>a&amp;b: s = 5 Mbit/s</title>"),
            "{svg}"
        );
        assert!(svg.contains("window / idle RTT"));
        assert!(svg.contains("t&lt;1&gt;"));
        assert!(!svg.contains("t<1>"));
    }

    #[test]
    fn values_spanning_more_than_20x_get_a_log_axis_with_the_rate_line() {
        let svg = grouped_bars(
            "Goodput by window",
            "window",
            "goodput",
            "bit/s",
            &["64K".into(), "4M".into()],
            &[("cubic".into(), vec![Some(31e6), Some(965e6)])],
            Marks {
                limits: None,
                rate: Some(1e9),
            },
        );
        assert!(svg.contains("log scale"), "{svg}");
        assert!(svg.contains("path rate 1 Gbit/s"), "{svg}");
        // 31 Mbit/s is drawn well above the baseline, not flattened onto it.
        let axis = Axis::for_values([31e6, 965e6].into_iter(), Some(1e9), "bit/s");
        assert!(axis.log.is_some());
        assert!(axis.y(0.0) - axis.y(31e6) > 50.0, "{}", axis.y(31e6));
        // A narrow span stays linear from zero.
        let axis = Axis::for_values([900e6, 965e6].into_iter(), Some(1e9), "bit/s");
        assert!(axis.log.is_none());
        // Absurd values never make an unbounded number of decades.
        let axis = Axis::for_values([1e-300, 1e300].into_iter(), None, "bit/s");
        let (lo, hi) = axis.log.unwrap();
        assert!(hi - lo <= MAX_TICKS as i32);
    }
}
