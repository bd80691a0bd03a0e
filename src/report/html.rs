//! The self-contained HTML report: inline CSS, inline SVG, one small inline script that records
//! (in `body` data attributes) how many charts drew, script errors and network requests, so a
//! headless browser test can check them. No external resource of any kind.

use super::svg::esc;
use super::{ReportModel, charts, table_rows, utc};
use crate::campaigns::store::CampaignRow;
use std::fmt::Write;

pub(crate) const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:0 auto;padding:1em 1.5em;color:#222;line-height:1.45}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}\
.meta{color:#555}table{border-collapse:collapse;font-size:.9em;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f2f2f2}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.85em}\
figure{margin:1em 0;page-break-inside:avoid}figcaption{color:#555;font-size:.9em}svg.chart{width:100%;height:auto;max-width:860px;display:block}\
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.4em;max-width:1300px}.multiples svg.chart{max-width:none}\
.ct{font-size:15px;font-weight:600;text-anchor:middle}.yt{font-size:11px;text-anchor:end;fill:#444}.xt{font-size:11px;text-anchor:middle;fill:#444}\
.al{font-size:12px;text-anchor:middle;fill:#333}.lg{font-size:11px;fill:#333}.grid{stroke:#e3e3e3}.limit{stroke:#000;stroke-dasharray:5 3;stroke-width:2}.rate{stroke:#D55E00;stroke-dasharray:8 4;stroke-width:1.5}\
.box{fill:#eef3f8;stroke:#555}.median{stroke:#000;stroke-width:2}.whisker{stroke:#777}.err{stroke:#333;stroke-width:1.5}.run{stroke-width:1.2;opacity:.8}\
li{margin:.2em 0}@media print{body{max-width:none}details{display:block}}";

pub(crate) const SCRIPT: &str = "(function(){var errors=0;window.addEventListener('error',function(){errors++;});\
function done(){var drawn=0;document.querySelectorAll('svg.chart').forEach(function(s){var b=s.getBBox();if(b.width>0&&b.height>0)drawn++;});\
var b=document.body;b.setAttribute('data-charts-drawn',drawn);b.setAttribute('data-errors',errors);\
b.setAttribute('data-resources',performance.getEntriesByType('resource').length);}\
if(document.readyState==='complete')done();else window.addEventListener('load',done);})();";

fn table(rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table>");
    for (i, r) in rows.iter().enumerate() {
        let cell = if i == 0 { "th" } else { "td" };
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<{cell}>{}</{cell}>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// Renders the whole report.
pub fn render(m: &ReportModel) -> String {
    render_linked(m, &[])
}

/// A link from the report to one run's picture (`report --run-pictures`): its text and its
/// address relative to the report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLink {
    pub text: String,
    pub href: String,
}

/// Renders the whole report with a section linking each run to its picture.
pub fn render_linked(m: &ReportModel, runs: &[RunLink]) -> String {
    let c = &m.campaign;
    let charts = charts(m);
    let mut s = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>netsweep report: {name}</title><style>{STYLE}</style></head><body data-charts=\"{n}\">",
        name = esc(&c.name),
        // Every drawing, small multiples counted one by one (the browser test counts them).
        n = charts
            .iter()
            .map(|(_, _, svg)| svg.matches("class=\"chart\"").count())
            .sum::<usize>()
    );
    let _ = write!(
        s,
        "<header><h1>netsweep report: {}</h1><p class=\"meta\">Campaign {} &middot; started {}{} &middot; target {} &middot; {} runs ({} failed) &middot; {} order, seed {}</p></header>",
        esc(&c.name),
        c.id,
        utc(c.created_unix),
        c.finished_unix
            .map(|f| format!(", finished {}", utc(f)))
            .unwrap_or_else(|| ", not finished".into()),
        esc(&c.target),
        m.total_runs,
        m.failed.len(),
        esc(&c.run_order),
        c.seed
    );
    if !m.answer.is_empty() {
        s.push_str("<section id=\"answer\"><h2>The answer</h2><ul>");
        for line in &m.answer {
            let _ = write!(s, "<li>{}</li>", esc(line));
        }
        s.push_str("</ul></section>");
    }
    s.push_str("<section id=\"findings\"><h2>Findings</h2><ul>");
    for f in &m.findings {
        let _ = write!(s, "<li>{}</li>", esc(f));
    }
    s.push_str("</ul></section><section id=\"charts\"><h2>Charts</h2>");
    if m.configs.iter().all(|c| c.values.is_empty()) {
        s.push_str("<p>No successful run: the charts are empty.</p>");
    }
    for (_, caption, svg) in &charts {
        let _ = write!(
            s,
            "<figure>{svg}<figcaption>{}. Hover a mark for its value.</figcaption></figure>",
            esc(caption)
        );
    }
    let _ = write!(
        s,
        "</section><section id=\"table\"><h2>Per configuration</h2>{}</section>",
        table(&table_rows(m))
    );
    s.push_str(&comparisons_section(m));
    s.push_str(&kernel_sections(m));
    s.push_str(&plan_section(c));
    if !runs.is_empty() {
        s.push_str("<section id=\"runs\"><h2>Each run over time</h2><p>Rate, retransmits, RTT and window per interval of every stored run, one page each.</p><ul>");
        for r in runs {
            let _ = write!(
                s,
                "<li><a href=\"{}\">{}</a></li>",
                esc(&r.href),
                esc(&r.text)
            );
        }
        s.push_str("</ul></section>");
    }
    let _ = writeln!(
        s,
        "<footer class=\"meta\"><p>Written by netsweep {}.</p></footer><script>{SCRIPT}</script></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    s
}

/// The ministat-style comparison of every group, when a dimension has several values.
fn comparisons_section(m: &ReportModel) -> String {
    let mut s = String::new();
    if let Some(by) = &m.compared_by {
        let _ = write!(
            s,
            "<section id=\"comparisons\"><h2>Comparisons by {}</h2>",
            esc(by)
        );
        for g in &m.groups {
            let ctx = g.title();
            let _ = write!(s, "<h3>{}</h3>", esc(ctx));
            match &g.analysis {
                Some(a) => {
                    let _ = write!(
                        s,
                        "<pre>{}</pre>",
                        esc(&super::comparison_text(a, &g.values))
                    );
                }
                None => {
                    let _ = write!(s, "<p>{}</p>", esc(g.note.as_deref().unwrap_or("")));
                }
            }
        }
        s.push_str("</section>");
    }
    s
}

/// What the kernel counted during the runs, the doctor's warnings and the failed runs.
fn kernel_sections(m: &ReportModel) -> String {
    let mut s = String::new();
    s.push_str("<section id=\"counters\"><h2>Counters that moved</h2>");
    if m.counters.is_empty() {
        s.push_str("<p>No retransmissions, drops, errors or overflows were counted by the kernel during the runs.</p>");
    } else {
        let rows = super::counter_rows(m);
        s.push_str(&table(&rows));
    }
    s.push_str("</section>");
    if !m.doctor.is_empty() {
        let rows = super::doctor_rows(m);
        let _ = write!(
            s,
            "<section id=\"doctor\"><h2>Host diagnostics (netsweep doctor)</h2>{}</section>",
            table(&rows)
        );
    }
    if !m.failed.is_empty() {
        let rows = super::failure_rows(m);
        let _ = write!(
            s,
            "<section id=\"failures\"><h2>Failed runs</h2>{}</section>",
            table(&rows)
        );
    }
    s
}

/// The plan as written and the facts recorded about the hosts.
fn plan_section(c: &CampaignRow) -> String {
    let mut s = String::new();
    let facts = c
        .host_facts_json
        .as_deref()
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| "(none recorded)".into());
    let _ = write!(
        s,
        "<section id=\"plan\"><h2>Plan and hosts</h2><pre>{}</pre><details><summary>Host facts</summary><pre>{}</pre></details></section>",
        esc(&c.plan_toml),
        esc(&facts)
    );
    s
}
