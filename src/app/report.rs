//! `netsweep report`: a stored campaign as HTML or Markdown (also written at the end of `run`).

use crate::app::db::{campaign_id, open_existing};
use crate::campaigns::store::Store;
use crate::cli::ReportFormat;
use anyhow::Context;
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
    let path = a.output.clone().unwrap_or_else(|| match a.format {
        ReportFormat::Md => "report.md".into(),
        ReportFormat::Html => "report.html".into(),
    });
    write_report(&store, campaign, &path, a.format)?;
    crate::outln!("report: {}", path.display());
    Ok(ExitCode::SUCCESS)
}
