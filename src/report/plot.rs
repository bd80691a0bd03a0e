//! `netsweep plot`: one test over time, drawn from the `TestTimeline` that
//! `traffic::over_time` read: rate of every stream and the total, retransmits per interval,
//! RTT and congestion window per stream, UDP loss, the latency probe per interval, and latency
//! under load as a CDF, each chart only when the file has its figures. As a self-contained HTML
//! page (inline CSS and SVG, the report's small inline script that records for a browser test
//! how many charts drew; nothing fetched) or as one SVG document. Renders values it is given;
//! computes none. Called by `app::plot` and by `app::report` for each run's picture.

use super::svg::{self, Line, XAxis, esc};
use super::{Chart, utc};
use crate::traffic::over_time::rr::Transactions;
use crate::traffic::over_time::{Point, StreamLine, TestTimeline};
use std::fmt::Write;

const TIME: XAxis = XAxis {
    label: "time in test (s)",
    log: false,
    from_data: false,
};

/// The test in one line: what, to where, how long, how many streams, from which file format.
pub fn title(t: &TestTimeline) -> String {
    let f = &t.test;
    if let Some(x) = &t.transactions {
        let n = x.concurrency;
        return format!(
            "{}: {}, {}-byte requests, {}-byte responses, {n} connection{}, {} transactions in {} s ({:.0}/s)",
            t.source,
            x.test,
            x.request_bytes,
            x.response_bytes,
            if n == 1 { "" } else { "s" },
            x.transactions,
            (f.duration_s * 100.0).round() / 100.0,
            x.per_second
        );
    }
    let mut s = format!("{}: {} {}", t.source, f.protocol, f.direction);
    if let Some(h) = &f.host {
        let _ = write!(s, " to {h}");
    }
    if f.duration_s > 0.0 {
        let _ = write!(s, ", {} s", f.duration_s);
    }
    let _ = write!(
        s,
        ", {} stream{}",
        f.streams,
        if f.streams == 1 { "" } else { "s" }
    );
    s
}

/// Where the file came from and when the test ran.
fn provenance(t: &TestTimeline) -> String {
    let mut s = format!("{} file", t.format);
    if let Some(tool) = &t.test.tool {
        let _ = write!(s, " written by {tool}");
    }
    if let Some(ts) = t.test.started_unix {
        let _ = write!(s, ", test started {}", utc(ts));
    }
    s
}

/// The lines of `lines` that have `value` in some interval, each point at its interval's end;
/// with the legend's names by colour (empty for a colour not drawn). Each line's colour is its
/// place among all the test's lines (`lines` numbered so), so a stream has one colour on every
/// chart (a trial saw stream 0 orange on the rate chart and blue on the RTT chart, where the
/// total was left out), and its legend entry that colour (another trial's RTT legend still
/// counted from the total's blue: stream 0 read as stream 1).
fn series<'a>(
    lines: impl Iterator<Item = (usize, &'a StreamLine)>,
    value: impl Fn(&Point) -> Option<f64>,
) -> (Vec<Line>, Vec<String>) {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for (colour, l) in lines {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .filter_map(|p| value(p).map(|v| (p.end_s, v)))
            .collect();
        if !pts.is_empty() {
            out.push((l.name.clone(), colour, pts));
            if names.len() <= colour {
                names.resize(colour + 1, String::new());
            }
            names[colour] = l.name.clone();
        }
    }
    (out, names)
}

/// The end of the test's last omitted interval (calibration or `-O`), when it had one.
fn warm_up_end(t: &TestTimeline) -> Option<f64> {
    t.totals
        .iter()
        .chain(&t.streams)
        .flat_map(|l| l.points.iter())
        .filter(|p| p.omitted)
        .map(|p| p.end_s)
        .reduce(f64::max)
}

/// An over-time chart of `lines` with the warm-up shaded, or none when no line has the figure.
fn time_chart(
    (stem, caption, title): (&str, &str, &str),
    y: (&str, &str),
    (lines, names): (Vec<Line>, Vec<String>),
    warm_up: Option<f64>,
) -> Option<Chart> {
    (!lines.is_empty()).then(|| {
        (
            stem.to_string(),
            caption.to_string(),
            svg::xy_with_warm_up(title, y, TIME, (&lines, &names), true, warm_up),
        )
    })
}

/// The charts of one test, in the order shown.
pub fn charts(t: &TestTimeline) -> Vec<Chart> {
    let all = || t.totals.iter().chain(&t.streams).enumerate();
    let warm_up = warm_up_end(t);
    let streams = || all().skip(t.totals.len());
    // RTT and window are a sender's per stream; the totals' only when no stream has them.
    let per_stream = |value: fn(&Point) -> Option<f64>| {
        let s = series(streams(), value);
        if s.0.is_empty() {
            series(all().take(t.totals.len()), value)
        } else {
            s
        }
    };
    let mut out: Vec<Chart> = [
        time_chart(
            (
                "rate",
                "Rate of every stream and the total per interval, each point at its interval's end",
                "Rate over time",
            ),
            ("rate", "bit/s"),
            series(all(), |p| Some(p.bits_per_second)),
            warm_up,
        ),
        time_chart(
            (
                "retransmits",
                "TCP segments the senders retransmitted in each interval",
                "Retransmits per interval",
            ),
            ("retransmits", "segments"),
            series(all(), |p| p.retransmits.map(|r| r as f64)),
            warm_up,
        ),
        time_chart(
            (
                "rtt",
                "Smoothed RTT the sender's kernel reported (TCP_INFO) at each interval's end",
                "RTT over time",
            ),
            ("RTT", "ms"),
            per_stream(|p| p.rtt_ms),
            warm_up,
        ),
        time_chart(
            (
                "cwnd",
                "Sender's congestion window (TCP_INFO) at each interval's end",
                "Congestion window over time",
            ),
            ("cwnd", "B"),
            per_stream(|p| p.cwnd_bytes.map(|b| b as f64)),
            warm_up,
        ),
        time_chart(
            (
                "loss",
                "UDP datagrams lost in each interval",
                "UDP loss per interval",
            ),
            ("loss", "%"),
            series(all(), |p| p.lost_percent),
            warm_up,
        ),
        probe_chart(t),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(x) = &t.transactions {
        out.extend(transaction_charts(x));
    }
    if let Some(cdf) = t.latency.as_ref() {
        let mut lines: Vec<Line> = Vec::new();
        let mut names = Vec::new();
        for (name, pts) in [("under load", &cdf.loaded), ("idle", &cdf.idle)] {
            if !pts.is_empty() {
                lines.push((name.to_string(), lines.len(), pts.clone()));
                names.push(name.to_string());
            }
        }
        out.push((
            "latency-cdf".into(),
            "Round trips of the latency probes: the share of probes at or below each time, idle \
             (before the load) and under load"
                .into(),
            svg::xy(
                "Latency under load (CDF)",
                ("probes at or below", "%"),
                XAxis {
                    label: "round trip (ms)",
                    log: false,
                    from_data: false,
                },
                &lines,
                &names,
                true,
            ),
        ));
    }
    out
}

/// A request/response test's latency distribution: transactions per histogram bin (each at its
/// bin's geometric middle) and the share at or below each latency with the reported
/// percentiles marked, on a logarithmic latency axis.
fn transaction_charts(x: &Transactions) -> Vec<Chart> {
    let latency = XAxis {
        label: "transaction latency (µs, log scale)",
        log: true,
        from_data: false,
    };
    let mut out = Vec::new();
    let bins: Vec<(f64, f64)> = x
        .bins_us
        .iter()
        .map(|(lo, hi, n)| ((lo * hi).sqrt(), *n as f64))
        .collect();
    if !bins.is_empty() {
        let name = vec!["transactions".to_string()];
        out.push((
            "rr-histogram".to_string(),
            "Transactions in each latency bin (20 a decade), each point at its bin's middle"
                .to_string(),
            svg::xy(
                "Transactions per latency bin",
                ("transactions", "per bin"),
                latency,
                &[(name[0].clone(), 0, bins)],
                &name,
                true,
            ),
        ));
    }
    let cdf = x.cdf();
    if !cdf.is_empty() {
        let mut lines: Vec<Line> = vec![("at or below".into(), 0, cdf)];
        let mut names = vec!["at or below".to_string()];
        for (k, (label, us)) in x.percentiles_us.iter().enumerate() {
            if *us > 0.0 {
                let share = match *label {
                    "p50" => 50.0,
                    "p90" => 90.0,
                    "p99" => 99.0,
                    "p99.9" => 99.9,
                    _ => 100.0,
                };
                let name = format!("{label} {}", latency_text(*us));
                lines.push((name.clone(), k + 1, vec![(*us, share)]));
                names.push(name);
            }
        }
        out.push((
            "rr-cdf".to_string(),
            "The share of transactions at or below each latency (each bin's upper edge), with the \
             result's percentiles"
                .to_string(),
            svg::xy(
                "Transaction latency (CDF)",
                ("transactions at or below", "%"),
                latency,
                &lines,
                &names,
                true,
            ),
        ));
    }
    out
}

/// A latency in µs as a legend reads it: "53.5 µs", "1.20 ms".
fn latency_text(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// The probe's median and 99th percentile per interval, when the test had `--latency`.
fn probe_chart(t: &TestTimeline) -> Option<Chart> {
    let total = t.totals.first()?;
    let warm_up = warm_up_end(t);
    let one = |name: &str, v: fn(&Point) -> Option<f64>| {
        let s = series(std::iter::once((0, total)), v);
        s.0.into_iter()
            .next()
            .map(|(_, _, pts)| (name.to_string(), pts))
    };
    let found: Vec<(String, Vec<(f64, f64)>)> = [
        one("probe p50", |p| p.probe_p50_ms),
        one("probe p99", |p| p.probe_p99_ms),
    ]
    .into_iter()
    .flatten()
    .collect();
    let names: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
    let lines: Vec<Line> = found
        .into_iter()
        .enumerate()
        .map(|(i, (n, pts))| (n, i, pts))
        .collect();
    time_chart(
        (
            "probe",
            "Round trips of the latency probes sent in each interval (median and 99th percentile)",
            "Latency probe per interval",
        ),
        ("round trip", "ms"),
        (lines, names),
        warm_up,
    )
}

/// The whole picture as a self-contained HTML page.
pub fn page(t: &TestTimeline) -> String {
    let charts = charts(t);
    let title = title(t);
    let mut s = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>netsweep plot: {t}</title><style>{style}</style></head><body data-charts=\"{n}\">\
         <header><h1>netsweep plot</h1><p><strong>{t}</strong></p><p class=\"meta\">{p}</p></header>",
        t = esc(&title),
        style = super::html::STYLE,
        n = charts.len(),
        p = esc(&provenance(t))
    );
    if let Some(e) = &t.error {
        let _ = write!(
            s,
            "<p><strong>The test ended with an error:</strong> {}. The charts show what was measured before it.</p>",
            esc(e)
        );
    }
    if t.totals.iter().any(|l| l.points.iter().any(|p| p.omitted)) {
        s.push_str("<p class=\"meta\">The first intervals are the warm-up (calibration or <code>-O</code>), shaded grey: drawn, but in no summary.</p>");
    }
    for (stem, caption, svg) in &charts {
        let _ = write!(
            s,
            "<figure id=\"{}\">{svg}<figcaption>{}. Hover a mark for its value.</figcaption></figure>",
            esc(stem),
            esc(caption)
        );
    }
    let _ = writeln!(
        s,
        "<footer class=\"meta\"><p>Drawn by netsweep {}.</p></footer><script>{}</script></body></html>",
        env!("CARGO_PKG_VERSION"),
        super::html::SCRIPT
    );
    s
}

/// The whole picture as one SVG document.
pub fn svg_document(t: &TestTimeline) -> String {
    let charts: Vec<String> = charts(t).into_iter().map(|(_, _, svg)| svg).collect();
    svg::stack(&title(t), &charts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::over_time::{Format, LatencyCdf, TestFacts};

    fn p(end_s: f64, bps: f64) -> Point {
        Point {
            start_s: end_s - 1.0,
            end_s,
            bits_per_second: bps,
            ..Point::default()
        }
    }

    fn timeline() -> TestTimeline {
        TestTimeline {
            source: "a<b>.json".into(),
            format: Format::Iperf3Json,
            test: TestFacts {
                host: Some("127.0.0.1".into()),
                protocol: "TCP".into(),
                direction: "forward".into(),
                duration_s: 2.0,
                streams: 1,
                tool: Some("iperf 3.12".into()),
                started_unix: Some(0.0),
            },
            totals: vec![StreamLine {
                name: "total".into(),
                points: vec![p(1.0, 5e9), p(2.0, 1e10)],
            }],
            streams: vec![],
            latency: None,
            error: None,
            transactions: None,
        }
    }

    /// Where a value lands: 5 Gbit/s at 1 s on an axis of 0 to 10 Gbit/s and 0 to 2 s is the
    /// middle of both, at (70 + 770 / 2, 36 + 224 / 2) in the chart's 860 x 340 view box.
    #[test]
    fn a_known_interval_rate_lands_at_the_expected_pixel() {
        let charts = charts(&timeline());
        let rate = &charts.iter().find(|c| c.0 == "rate").unwrap().2;
        assert!(rate.contains("<circle cx=\"455.0\" cy=\"148.0\""), "{rate}");
        // 10 Gbit/s at 2 s: the top right corner of the plot.
        assert!(rate.contains("<circle cx=\"840.0\" cy=\"36.0\""), "{rate}");
        assert!(rate.contains("rate (Gbit/s)") && rate.contains("time in test (s)"));
        assert!(rate.contains(">total</text>"), "legend: {rate}");
    }

    /// A trial's finding: the SVG marked no warm-up, so its first points read as measured. The
    /// omitted intervals are a grey band on every time chart, from 0 to the last one's end
    /// (1 s of 2: the left half of the plot, 70 to 455 in the view box), in the SVG too.
    #[test]
    fn the_warm_up_is_shaded_on_the_time_charts() {
        let mut t = timeline();
        assert!(!svg_document(&t).contains("warm-up"));
        t.totals[0].points[0].omitted = true;
        let rate = &charts(&t)[0].2;
        assert!(
            rate.contains("<rect x=\"70.0\" y=\"36\" width=\"385.0\" height=\"224\" fill=\"#eee\"><title>warm-up to 1 s"),
            "{rate}"
        );
        // The band is drawn under the lines, so the points stay visible.
        assert!(rate.find("<rect").unwrap() < rate.find("<circle").unwrap());
        assert!(svg_document(&t).contains(">warm-up</text>"));
    }

    #[test]
    fn charts_appear_only_for_figures_the_file_has() {
        let mut t = timeline();
        let stems =
            |t: &TestTimeline| -> Vec<String> { charts(t).into_iter().map(|c| c.0).collect() };
        assert_eq!(stems(&t), ["rate"]);
        t.streams.push(StreamLine {
            name: "stream 5".into(),
            points: vec![Point {
                rtt_ms: Some(0.2),
                cwnd_bytes: Some(2_000_000),
                retransmits: Some(3),
                ..p(1.0, 5e9)
            }],
        });
        t.latency = Some(LatencyCdf {
            loaded: vec![(1.0, 0.0), (4.0, 100.0)],
            idle: vec![],
        });
        assert_eq!(
            stems(&t),
            ["rate", "retransmits", "rtt", "cwnd", "latency-cdf"]
        );
        let c = charts(&t);
        assert!(c[3].2.contains("cwnd (MB)"), "{}", c[3].2);
        // Stream 5 has one colour on every chart, whether the total is drawn beside it or not.
        let colour_of_stream = |svg: &str| {
            let at = svg.find("\"><title>stream 5:").expect("stream 5's point");
            svg[..at]
                .rsplit("fill=\"")
                .next()
                .unwrap_or_default()
                .to_string()
        };
        // Its legend entry has that colour too (the RTT and cwnd charts, drawn without the
        // total, gave stream 5 the total's colour in the legend).
        let legend_colour = |svg: &str| {
            let at = svg
                .find("class=\"lg\">stream 5</text>")
                .expect("its legend");
            svg[..at]
                .rsplit("fill=\"")
                .next()
                .and_then(|f| f.split('"').next())
                .unwrap_or_default()
                .to_string()
        };
        let rate = colour_of_stream(&c[0].2);
        for chart in &c[..4] {
            assert_eq!(colour_of_stream(&chart.2), rate, "{}", chart.0);
            assert!(rate.starts_with(&legend_colour(&chart.2)), "{}", chart.2);
        }
        assert!(!c[2].2.contains(">total</text>"), "{}", c[2].2);
        assert!(c[4].2.contains("round trip (ms)") && c[4].2.contains("under load"));
    }

    #[test]
    fn the_page_and_the_svg_name_the_file_and_the_test_and_fetch_nothing() {
        let t = timeline();
        let html = page(&t);
        assert!(html.contains("a&lt;b&gt;.json: TCP forward to 127.0.0.1, 2 s, 1 stream"));
        assert!(html.contains("iperf3 -J file written by iperf 3.12"));
        assert!(html.contains("data-charts=\"1\""));
        for external in ["http://", "https://", "src=", "@import", "url("] {
            let outside = html.replace("http://www.w3.org/2000/svg", "");
            assert!(!outside.contains(external), "{external}");
        }
        let doc = svg_document(&t);
        assert!(
            doc.starts_with(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"380\""
            )
        );
        assert!(doc.contains("<svg x=\"0\" y=\"40\" width=\"860\" height=\"340\" viewBox="));
        assert_eq!(doc.matches("<svg").count(), 2);
        assert!(doc.contains("<style>") && !doc.contains("<script"));
    }
}
