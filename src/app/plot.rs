//! `netsweep plot`: one test over time from a result file (netsweep's `--json`, iperf3's `-J`
//! or `--json-stream`) or from a run stored in a campaign database, written as a
//! self-contained HTML page or one SVG picture. Reading is `traffic::over_time`'s, drawing
//! `report::plot`'s; `report --run-pictures` writes each run's page through `write_run`.

use crate::app::db::open_existing;
use crate::campaigns::store::Store;
use crate::cli::PlotArgs;
use crate::traffic::iperf3::MAX_JSON_BYTES;
use crate::traffic::over_time::{self, TestTimeline};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn plot(a: &PlotArgs) -> anyhow::Result<ExitCode> {
    let (timeline, default_out) = match (&a.file, a.run, &a.db) {
        (Some(file), _, _) => {
            let text = crate::inputs::read_file(file, MAX_JSON_BYTES)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let t = over_time::read(&file.display().to_string(), &text)?;
            (t, file.with_extension("html"))
        }
        (None, Some(run), Some(db)) => {
            let store = open_existing(db)?;
            (
                stored_run(&store, run, db)?,
                PathBuf::from(format!("run-{run}.html")),
            )
        }
        // clap's argument group asks for one of them.
        _ => bail!("give a result FILE, or --db DB --run ID"),
    };
    let out = a.output.clone().unwrap_or(default_out);
    write(&timeline, &out)?;
    crate::outln!("plot: {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Run `run` of `store` (named `db` in messages) as a timeline.
pub(crate) fn stored_run(store: &Store, run: i64, db: &Path) -> anyhow::Result<TestTimeline> {
    let source = format!("run {run} of {}", db.display());
    match store.run_result(run)? {
        None => bail!(
            "{} has no run {run}: `netsweep export --db {}` lists the runs and their ids",
            db.display(),
            db.display()
        ),
        Some((status, None)) => bail!(
            "{source} ({status}) has no stored result to draw: a failed run keeps only its error"
        ),
        Some((_, Some(json))) => Ok(over_time::read(&source, &json)?),
    }
}

/// Writes `t` as HTML or SVG, chosen by `path`'s extension.
pub(crate) fn write(t: &TestTimeline, path: &Path) -> anyhow::Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let text = match ext.as_deref() {
        Some("html" | "htm") => crate::report::plot::page(t),
        Some("svg") => crate::report::plot::svg_document(t),
        _ => bail!(
            "-o {}: expected a name ending in .html (a page) or .svg (one picture)",
            path.display()
        ),
    };
    crate::platform::outfile::write(path, text)
        .with_context(|| format!("cannot write {}", path.display()))
}
