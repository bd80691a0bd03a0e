//! The report as Markdown, for an issue or a mailing-list post: findings, the table and the
//! ministat-style comparisons, with each chart written as an SVG file beside it.

use super::{ReportModel, charts, table_rows, utc};
use anyhow::Context;
use std::fmt::Write;
use std::path::Path;

fn md_table(rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} |",
            r.iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        if i == 0 {
            let _ = writeln!(s, "|{}", "---|".repeat(r.len()));
        }
    }
    s
}

/// Renders the Markdown; charts are referenced as `{stem}-{chart}.svg`. Returns the text and
/// the (file name, SVG) pairs to write beside it.
pub fn render(m: &ReportModel, stem: &str) -> (String, Vec<(String, String)>) {
    let c = &m.campaign;
    let mut s = format!(
        "# netsweep report: {}\n\nCampaign {}, started {}, target {}, {} runs ({} failed), {} order, seed {}.\n\n",
        c.name,
        c.id,
        utc(c.created_unix),
        c.target,
        m.total_runs,
        m.failed.len(),
        c.run_order,
        c.seed
    );
    if !m.answer.is_empty() {
        s.push_str("## The answer\n\n");
        for line in &m.answer {
            let _ = writeln!(s, "- {line}");
        }
        s.push('\n');
    }
    s.push_str("## Findings\n\n");
    for f in &m.findings {
        let _ = writeln!(s, "- {f}");
    }
    s.push_str("\n## Charts\n\n");
    let mut files = Vec::new();
    for (name, caption, svg) in charts(m) {
        let file = format!("{stem}-{name}.svg");
        let _ = writeln!(s, "![{caption}]({file})\n");
        files.push((file, svg));
    }
    let _ = write!(s, "## Per configuration\n\n{}\n", md_table(&table_rows(m)));
    if let Some(by) = &m.compared_by {
        let _ = writeln!(s, "## Comparisons by {by}\n");
        for g in &m.groups {
            let ctx = g.title();
            let _ = writeln!(s, "### {ctx}\n");
            match &g.analysis {
                Some(a) => {
                    let _ = writeln!(s, "```\n{}```\n", super::comparison_text(a, &g.values));
                }
                None => {
                    let _ = writeln!(s, "{}\n", g.note.as_deref().unwrap_or(""));
                }
            }
        }
    }
    s.push_str("## Counters that moved\n\n");
    if m.counters.is_empty() {
        s.push_str("None: no retransmissions, drops, errors or overflows during the runs.\n\n");
    } else {
        let rows = super::counter_rows(m);
        let _ = writeln!(s, "{}", md_table(&rows));
    }
    // The same sections as the HTML's (a trial's Markdown report had no doctor's findings).
    if !m.doctor.is_empty() {
        let _ = writeln!(
            s,
            "## Host diagnostics (netsweep doctor)\n\n{}",
            md_table(&super::doctor_rows(m))
        );
    }
    if !m.failed.is_empty() {
        let rows = super::failure_rows(m);
        let _ = writeln!(s, "## Failed runs\n\n{}", md_table(&rows));
    }
    let _ = writeln!(s, "## Plan\n\n```toml\n{}```", c.plan_toml);
    (s, files)
}

/// Writes the Markdown file and its charts.
pub fn write(m: &ReportModel, path: &Path) -> anyhow::Result<()> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "report".into());
    let (text, files) = render(m, &stem);
    let dir = path.parent().unwrap_or(Path::new("."));
    // Never through a symlink at the output path (see `platform::outfile`).
    for (name, svg) in files {
        let file = dir.join(&name);
        crate::platform::outfile::write(&file, svg)
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    crate::platform::outfile::write(path, text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
