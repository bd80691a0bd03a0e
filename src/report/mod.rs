//! `netsweep report`: one self-contained HTML file (inline SVG charts with tooltips, no network
//! requests) or Markdown with the charts as SVG files beside it. `model` computes everything
//! from the database; `svg`, `html` and `markdown` only render. `plot` draws one test over time
//! (`netsweep plot`, and each run's picture the HTML report links).

pub mod html;
pub mod markdown;
pub mod model;
pub mod plot;
pub mod svg;

pub use model::ReportModel;

/// One chart of a report: (file stem, caption, SVG).
pub type Chart = (String, String, String);

/// The charts of a report, in the order they are shown.
pub fn charts(m: &ReportModel) -> Vec<Chart> {
    let mut out = sweep_bars(m);
    // Axis labels use the values only ("64K cubic"); tooltips and legends keep full labels.
    let short: Vec<String> = m
        .configs
        .iter()
        .map(|c| {
            c.dims
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    out.extend(distribution_charts(m, &short));
    out.push(time_chart(m));
    out.extend(latency_charts(m));
    let per_config =
        |stem: &str, caption: &str, title: &str, unit: &str, values: Vec<Option<f64>>| {
            let svg = svg::grouped_bars(
                title,
                "configuration",
                stem,
                unit,
                &short,
                &[(stem.to_string(), values)],
                svg::Marks::default(),
            );
            (stem.to_string(), caption.to_string(), svg)
        };
    if m.udp {
        out.push(per_config(
            "loss",
            "Mean UDP loss per configuration",
            "UDP loss",
            "%",
            m.configs.iter().map(|c| c.loss_mean).collect(),
        ));
        out.push(per_config(
            "jitter",
            "Mean UDP jitter per configuration",
            "UDP jitter",
            "ms",
            m.configs.iter().map(|c| c.jitter_mean).collect(),
        ));
    } else {
        let retransmits: Vec<Option<f64>> = m.configs.iter().map(|c| c.retransmits_mean).collect();
        let caption = if retransmits.iter().flatten().all(|r| *r == 0.0) {
            "Mean TCP retransmissions per run: none in any run"
        } else {
            "Mean TCP retransmissions per run"
        };
        out.push(per_config(
            "retransmits",
            caption,
            "TCP retransmissions per run",
            "segments",
            retransmits,
        ));
    }
    out
}

/// The latency probe's charts (CDF of loaded round trips, round trips over time, goodput
/// against latency) and the UDP arrival-gap histogram, for the configurations that have them.
fn latency_charts(m: &ReportModel) -> Vec<Chart> {
    let l = &m.latency;
    let lines_of = |v: &[(usize, Vec<(f64, f64)>)]| -> (Vec<svg::Line>, Vec<String>) {
        let lines = v
            .iter()
            .enumerate()
            .map(|(k, (ci, pts))| (m.configs[*ci].label.clone(), k, pts.clone()))
            .collect();
        let names = v
            .iter()
            .map(|(ci, _)| m.configs[*ci].label.clone())
            .collect();
        (lines, names)
    };
    let mut out = Vec::new();
    if !l.cdf.is_empty() {
        let (lines, names) = lines_of(&l.cdf);
        out.push((
            "latency-cdf".to_string(),
            "Round trips of the latency probe under load, as a CDF per configuration (each quantile averaged over the runs)".to_string(),
            lines_chart(
                "Loaded round-trip time (CDF)",
                ("probes at or below", "%"),
                svg::XAxis { label: "round-trip time (ms)", log: false, from_data: false },
                lines,
                &names,
                true,
            ),
        ));
    }
    if l.over_time.iter().any(|(_, p)| !p.is_empty()) {
        let (lines, names) = lines_of(&l.over_time);
        out.push((
            "latency-time".to_string(),
            "Median probe round trip of each interval under load (median over the runs)"
                .to_string(),
            lines_chart(
                "Round-trip time under load over time",
                ("round trip", "ms"),
                TIME_AXIS,
                lines,
                &names,
                true,
            ),
        ));
    }
    if l.scatter.iter().any(|(_, p)| !p.is_empty()) {
        let (lines, names) = lines_of(&l.scatter);
        out.push((
            "latency-goodput".to_string(),
            "Goodput against loaded median round trip, one point per run: up and to the left is better".to_string(),
            lines_chart(
                "Goodput against latency under load",
                ("goodput", "bit/s"),
                svg::XAxis { label: "loaded median round trip (ms)", log: false, from_data: false },
                lines,
                &names,
                false,
            ),
        ));
    }
    if !l.gaps.is_empty() {
        let (lines, names) = lines_of(&l.gaps);
        out.push((
            "udp-gaps".to_string(),
            "Gaps between arriving UDP datagrams, share per bin (bins 12% wide; gaps under 1 us, datagrams read in one batch, are not drawn)".to_string(),
            lines_chart(
                "UDP arrival gaps",
                ("share of gaps", "%"),
                svg::XAxis { label: "gap (us, log scale)", log: true, from_data: false },
                lines,
                &names,
                true,
            ),
        ));
    }
    out
}

/// Grouped bars of average, median, minimum and maximum per value of the first (swept)
/// dimension, one chart per combination of the other dimensions.
fn sweep_bars(m: &ReportModel) -> Vec<Chart> {
    let Some((first, values)) = m.dims.first() else {
        return Vec::new();
    };
    let mut others: Vec<String> = Vec::new();
    for c in &m.configs {
        let o = crate::campaigns::campaign::context_of(&c.dims, first);
        if !others.contains(&o) {
            others.push(o);
        }
    }
    let mut out = Vec::new();
    for other in &others {
        let find = |val: &str| {
            m.configs.iter().find(|c| {
                c.dims.iter().any(|(k, v)| k == first && v == val)
                    && crate::campaigns::campaign::context_of(&c.dims, first) == *other
            })
        };
        let stat = |f: fn(&crate::analysis::stats::Description) -> f64| -> Vec<Option<f64>> {
            values
                .iter()
                .map(|v| find(v).and_then(|c| c.summary.description.as_ref()).map(f))
                .collect()
        };
        let series = vec![
            ("average".to_string(), stat(|d| d.mean)),
            ("median".to_string(), stat(|d| d.median)),
            ("minimum".to_string(), stat(|d| d.min)),
            ("maximum".to_string(), stat(|d| d.max)),
        ];
        // The TCP_INFO ceiling of each bar group, where the sweep is over the window.
        let limits: Option<Vec<f64>> = (first == "window").then(|| {
            values
                .iter()
                .map(|v| find(v).and_then(|c| c.ceiling_bps).unwrap_or(f64::NAN))
                .collect()
        });
        let limits = limits.filter(|l| l.iter().any(|x| x.is_finite()));
        let title = if other.is_empty() {
            format!("Goodput by {first}")
        } else {
            format!("Goodput by {first}, {other}")
        };
        let svg = svg::grouped_bars(
            &title,
            first,
            "goodput",
            "bit/s",
            values,
            &series,
            svg::Marks {
                limits: limits.as_deref(),
                rate: m.link_bps,
            },
        );
        out.push((format!("bars-{}", out.len() + 1), title, svg));
    }
    out
}

/// Every run's value over a box plot, and the means with their confidence intervals.
fn distribution_charts(m: &ReportModel, short: &[String]) -> [Chart; 2] {
    let cats: Vec<(String, Vec<f64>)> = m
        .configs
        .iter()
        .zip(short)
        .map(|(c, s)| (s.clone(), c.values.clone()))
        .collect();
    let means: Vec<svg::MeanCi> = m
        .configs
        .iter()
        .zip(short)
        .filter_map(|(c, s)| {
            c.summary
                .description
                .as_ref()
                .map(|d| (s.clone(), d.mean, c.mean_ci))
        })
        .collect();
    [
        (
            "runs".into(),
            "Every run's goodput over a box plot per configuration".into(),
            svg::box_points(
                "Goodput of every run",
                "goodput",
                "bit/s",
                &cats,
                m.link_bps,
            ),
        ),
        (
            "means".into(),
            "Mean goodput with 95% confidence intervals".into(),
            svg::means_ci(
                "Mean goodput and 95% CI",
                "goodput",
                "bit/s",
                &means,
                m.link_bps,
            ),
        ),
    ]
}

/// The per-interval goodput of every run over time.
fn time_chart(m: &ReportModel) -> Chart {
    let labels: Vec<String> = m.configs.iter().map(|c| c.label.clone()).collect();
    let series: Vec<svg::Line> = m
        .series
        .iter()
        .map(|s| {
            (
                format!(
                    "{} round {}",
                    labels.get(s.configuration).cloned().unwrap_or_default(),
                    s.round + 1
                ),
                s.configuration,
                s.points.clone(),
            )
        })
        .collect();
    (
        "time".into(),
        "Per-interval goodput of every run".into(),
        lines_chart(
            "Goodput over time, every run",
            ("goodput", "bit/s"),
            TIME_AXIS,
            series,
            &labels,
            true,
        ),
    )
}

const TIME_AXIS: svg::XAxis = svg::XAxis {
    label: "time in run (s)",
    log: false,
    from_data: true,
};

/// One chart of `lines` (each coloured by its index into `names`) while the colours stay
/// distinct; beyond the palette, small multiples: a panel per name on shared axes, its lines
/// told apart by the rest of their names (the rounds of a configuration).
fn lines_chart(
    title: &str,
    y: (&str, &str),
    x: svg::XAxis,
    lines: Vec<svg::Line>,
    names: &[String],
    connect: bool,
) -> String {
    if names.len() <= svg::PALETTE.len() {
        return svg::xy(title, y, x, &lines, names, connect);
    }
    let mut panels: Vec<svg::Panel> = names
        .iter()
        .map(|n| svg::Panel {
            title: n.clone(),
            ..Default::default()
        })
        .collect();
    for (name, group, points) in lines {
        let Some(p) = panels.get_mut(group) else {
            continue;
        };
        let rest = name.strip_prefix(p.title.as_str()).unwrap_or(&name).trim();
        if !rest.is_empty() {
            p.legend.push(rest.to_string());
        }
        let colour = p.lines.len();
        p.lines.push((name, colour, points));
    }
    panels.retain(|p| !p.lines.is_empty());
    svg::small_multiples(y, x, &panels, connect)
}

/// A Unix time as `YYYY-MM-DD HH:MM UTC` (civil-from-days, Howard Hinnant's algorithm).
pub fn utc(ts: f64) -> String {
    let secs = ts.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = crate::units::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60
    )
}

/// The counters that moved, as rows of cells (header first).
pub fn counter_rows(m: &ReportModel) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "configuration".to_string(),
        "counter".into(),
        "total".into(),
        "runs".into(),
    ]];
    rows.extend(m.counters.iter().map(|c| {
        vec![
            c.configuration.clone(),
            c.counter.clone(),
            c.total.to_string(),
            c.runs.to_string(),
        ]
    }));
    rows
}

/// The doctor's findings recorded with the campaign, as rows of cells (header first).
pub fn doctor_rows(m: &ReportModel) -> Vec<Vec<String>> {
    let mut rows = vec![vec!["severity".to_string(), "finding".into(), "fix".into()]];
    rows.extend(m.doctor.iter().map(|f| {
        vec![
            format!("{:?}", f.severity).to_lowercase(),
            f.title.clone(),
            f.fix.clone().unwrap_or_default(),
        ]
    }));
    rows
}

/// The failed runs, as rows of cells (header first).
pub fn failure_rows(m: &ReportModel) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "configuration".to_string(),
        "round".into(),
        "error".into(),
    ]];
    rows.extend(
        m.failed
            .iter()
            .map(|(l, r, e)| vec![l.clone(), (r + 1).to_string(), e.clone()]),
    );
    rows
}

/// The table per configuration as rows of cells (header first).
pub fn table_rows(m: &ReportModel) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "configuration",
            "N",
            "failed",
            "mean",
            "median",
            "min",
            "max",
            "stddev",
            "CV",
            if m.udp { "loss %" } else { "retransmits" },
            "CPU client/server",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let r = |v: f64| crate::units::BitRate(v).to_string();
    for c in &m.configs {
        let extra = if m.udp {
            c.loss_mean.map(|v| format!("{v:.3}"))
        } else {
            c.retransmits_mean.map(|v| format!("{v:.1}"))
        };
        let cpu = match (c.cpu_local_mean, c.cpu_remote_mean) {
            (Some(a), Some(b)) => format!("{a:.0}% / {b:.0}%"),
            _ => "-".into(),
        };
        match &c.summary.description {
            Some(d) => rows.push(vec![
                c.label.clone(),
                d.n.to_string(),
                c.summary.failed.to_string(),
                r(d.mean),
                r(d.median),
                r(d.min),
                r(d.max),
                r(d.stddev),
                format!("{:.1}%", d.cv.unwrap_or(0.0) * 100.0),
                extra.unwrap_or_else(|| "-".into()),
                cpu,
            ]),
            None => {
                let mut row = vec![c.label.clone(), "0".into(), c.summary.failed.to_string()];
                row.extend(std::iter::repeat_n("-".to_string(), 8));
                rows.push(row);
            }
        }
    }
    rows
}

/// A comparison in ministat's layout with the goodput in a readable unit (Mbit/s or Gbit/s,
/// said on the first line) instead of raw bit/s such as 5.8222522e+08. The block's figures are
/// computed again on the scaled values, so every one is in that unit; the verdicts are the
/// campaign's own (paired by round, the decision engine's), so the report never gives a pair
/// two verdicts.
pub fn comparison_text(a: &crate::analysis::sets::Analysis, values: &[Vec<f64>]) -> String {
    let top = values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (scale, unit) = if top >= 1e9 {
        (1e9, "Gbit/s")
    } else {
        (1e6, "Mbit/s")
    };
    let sets: Vec<(String, Vec<f64>)> = a
        .sets
        .iter()
        .zip(values)
        .map(|(s, v)| (s.name.clone(), v.iter().map(|x| x / scale).collect()))
        .collect();
    let mut cfg = crate::campaigns::campaign::Metric::BitsPerSecond.stats_config(a.confidence);
    let steps = a
        .comparisons
        .iter()
        .enumerate()
        .all(|(k, c)| a.sets.get(k).is_some_and(|s| s.name == c.baseline));
    if steps && a.comparisons.len() > 1 {
        cfg.pairs = crate::analysis::sets::Pairs::Steps;
    }
    if let Some(c) = a.comparisons.first() {
        cfg.detect_change = c.decision.change;
    }
    match crate::analysis::sets::analyze(&sets, &cfg) {
        Ok(mut scaled) => {
            for (s, c) in scaled.comparisons.iter_mut().zip(&a.comparisons) {
                s.verdict = c.verdict.clone();
                s.decision = c.decision.clone();
                s.significant = c.significant;
            }
            let scaled_values: Vec<Vec<f64>> = sets.into_iter().map(|(_, v)| v).collect();
            format!(
                "goodput in {unit}\n{}",
                crate::analysis::ministat::render(&scaled, &scaled_values, None)
            )
        }
        Err(_) => crate::analysis::ministat::render(a, values, None),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0.0), "1970-01-01 00:00 UTC");
        assert_eq!(super::utc(1_795_320_000.0), "2026-11-22 04:00 UTC");
        assert_eq!(super::utc(951_782_400.0), "2000-02-29 00:00 UTC");
    }
}
