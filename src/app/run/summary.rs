//! What `run` prints when a campaign ends: the configurations' table, the comparisons with
//! the others fixed, and the answer last.

use crate::campaigns::campaign::{self, Metric};
use crate::campaigns::plan::Plan;
use crate::campaigns::store::Store;
use std::fmt::Write as _;
use std::path::Path;

/// The summary table per configuration, then the comparison by the last dimension.
/// Prints the summary and the answer; returns the rounds that would settle the undecided
/// comparisons, if any.
pub(super) fn print_summary(
    store: &Store,
    campaign: i64,
    plan: &Plan,
    db: &Path,
) -> anyhow::Result<Option<usize>> {
    let runs = store.runs(campaign)?;
    let labels: Vec<String> = store
        .configurations(campaign)?
        .into_iter()
        .map(|c| c.label)
        .collect();
    crate::out!(
        "{}",
        summary_table(&campaign::summary(&runs, &labels, Metric::BitsPerSecond))
    );
    let ask = crate::campaigns::explain::Ask::new(Metric::BitsPerSecond);
    let facts = plan.facts();
    let used = if ask.keeps_outliers(&facts) {
        runs.clone()
    } else {
        campaign::screen(&runs, Metric::BitsPerSecond).0
    };
    let groups = campaign::summary_groups(&used, &plan.order(), &ask.judging(&facts));
    let e = crate::app::explain::explanation(store, campaign, &ask)?;
    if !groups.is_empty() {
        crate::out!("{}", groups_text(&groups, &e));
    }
    // The answer last, where the eye lands when the campaign ends.
    let details = crate::paste::netsweep(&[
        std::ffi::OsStr::new("explain"),
        "--db".as_ref(),
        db.as_os_str(),
    ]);
    crate::outln!("\nThe answer ({details} for the details):");
    for line in e.answer.lines() {
        crate::outln!("  {line}");
    }
    // The rounds that settle what was printed: the answer's comparisons and the summary's
    // (a trial was told `--more 2` under per-window comparisons that needed 4-11).
    let (_, printed) = campaign::open_in(&groups, &e.settled);
    Ok(e.effects.rounds_needed.max(printed))
}

fn summary_table(rows: &[campaign::ConfigSummary]) -> String {
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(13)
        .max(13);
    let mut out = format!(
        "\n{:<width$}  {:>3} {:>4}  {:>10} {:>10} {:>10} {:>10} {:>10} {:>6}   (Mbit/s)\n",
        "configuration", "N", "fail", "mean", "median", "min", "max", "stddev", "CV"
    );
    for r in rows {
        match &r.description {
            Some(d) => {
                let _ = writeln!(
                    out,
                    "{:<width$}  {:>3} {:>4}  {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.2} {:>5.1}%",
                    r.label,
                    d.n,
                    r.failed,
                    d.mean / 1e6,
                    d.median / 1e6,
                    d.min / 1e6,
                    d.max / 1e6,
                    d.stddev / 1e6,
                    d.cv.unwrap_or(0.0) * 100.0
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<width$}  {:>3} {:>4}  (no successful runs)",
                    r.label, 0, r.failed
                );
            }
        }
    }
    out
}

/// The summary's groups; under a group where the compared dimension cannot matter by
/// construction, that first (its comparisons are noise or drift).
fn groups_text(groups: &[campaign::Group], e: &crate::campaigns::explain::Explanation) -> String {
    let mut out = String::new();
    for g in groups {
        let ctx = g.title();
        let _ = writeln!(out, "\n== {ctx}");
        if e.settled.context(&g.context) {
            let _ = writeln!(
                out,
                "  profile cannot matter here by construction (the answer says why): a \
                 difference below is noise or drift, and no rounds settle it"
            );
        }
        match &g.analysis {
            Some(a) => {
                for c in &a.comparisons {
                    let _ = writeln!(out, "  {}", e.settled.verdict(c, &g.context));
                }
            }
            None => {
                let _ = writeln!(out, "  {}", g.note.clone().unwrap_or_default());
            }
        }
    }
    out
}
