//! `netsweep report`: a stored campaign as HTML or Markdown (also written at the end of `run`).

use crate::app::db::{campaign_id, open_existing};
use crate::campaigns::store::Store;
use crate::cli::ReportFormat;
use crate::report::html::RunLink;
use anyhow::{Context, bail};
use std::path::Path;
use std::process::ExitCode;

/// Writes the report of `campaign` as HTML or Markdown.
pub fn write_report(
    store: &Store,
    campaign: i64,
    path: &Path,
    format: ReportFormat,
) -> anyhow::Result<()> {
    let model = crate::report::ReportModel::build(store, campaign)?;
    match format {
        ReportFormat::Md => crate::report::markdown::write(&model, path),
        ReportFormat::Html => {
            crate::platform::outfile::write(path, crate::report::html::render(&model))
                .with_context(|| format!("cannot write {}", path.display()))
        }
    }
}

pub fn report(a: &crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&a.db)?;
    let campaign = campaign_id(&store, a.campaign, &a.db)?;
    // The output's name says the format when --format does not (a trial's `-o vt.md` got
    // HTML without a word).
    let format = a.format.unwrap_or_else(|| {
        let ext = a.output.as_ref().and_then(|p| p.extension());
        match ext.and_then(|e| e.to_str()).map(str::to_ascii_lowercase) {
            Some(e) if e == "md" || e == "markdown" => ReportFormat::Md,
            _ => ReportFormat::Html,
        }
    });
    let path = a.output.clone().unwrap_or_else(|| match format {
        ReportFormat::Md => "report.md".into(),
        ReportFormat::Html => "report.html".into(),
    });
    if a.run_pictures {
        if !matches!(format, ReportFormat::Html) {
            bail!("--run-pictures links each run's page from the HTML report: drop --format md");
        }
        let links = run_pictures(&store, campaign, &path, &a.db)?;
        let model = crate::report::ReportModel::build(&store, campaign)?;
        crate::platform::outfile::write(&path, crate::report::html::render_linked(&model, &links))
            .with_context(|| format!("cannot write {}", path.display()))?;
        crate::outln!("report: {} ({} run pictures)", path.display(), links.len());
    } else {
        write_report(&store, campaign, &path, format)?;
        crate::outln!("report: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Draws every successful run of `campaign` into `STEM-runs/run-ID.html` beside `report`, and
/// returns the links to them. A run whose stored result cannot be drawn is named and skipped.
fn run_pictures(
    store: &Store,
    campaign: i64,
    report: &Path,
    db: &Path,
) -> anyhow::Result<Vec<RunLink>> {
    let stem = report
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    let dir_name = format!("{stem}-runs");
    let dir = report.with_file_name(&dir_name);
    // As every output file: never through a symlink (here one to another directory).
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        bail!(
            "{} is a symlink: netsweep writes no output through one; remove it or choose another -o",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let runs = store.runs(campaign)?;
    let mut links = Vec::new();
    for (id, json) in store.run_results(campaign)? {
        if json.is_none() {
            continue;
        }
        let timeline = match crate::app::plot::stored_run(store, id, db) {
            Ok(t) => t,
            Err(e) => {
                crate::errln!("netsweep: no picture of run {id}: {e:#}");
                continue;
            }
        };
        let file = format!("run-{id}.html");
        crate::app::plot::write(&timeline, &dir.join(&file))?;
        let text = match runs.iter().find(|r| r.id == id) {
            Some(r) => format!("run {id}: {}, round {}", r.configuration, r.round + 1),
            None => format!("run {id}"),
        };
        links.push(RunLink {
            text,
            href: format!("{dir_name}/{file}"),
        });
    }
    Ok(links)
}
