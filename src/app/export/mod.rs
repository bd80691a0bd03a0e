//! One exporter per output format of `netsweep export` (hyperfine's `Exporter` shape): each
//! turns a campaign's runs into the bytes of its format; `exporter` picks one from the
//! format named on the command line, the only place the formats are told apart.

mod csv;
mod json;

use crate::app::db::{campaign_id, open_existing};
use crate::campaigns::store::RunRow;
use crate::cli::{ExportArgs, ExportFormat};
use std::process::ExitCode;

/// Renders a campaign's runs in one format.
pub trait Exporter {
    /// The runs as this format's bytes, one column per name of `dims` (the plan's dimensions,
    /// in order) where the format has columns.
    fn serialize(&self, runs: &[RunRow], dims: &[String]) -> anyhow::Result<Vec<u8>>;
}

/// The exporter of `format`.
pub fn exporter(format: ExportFormat) -> Box<dyn Exporter> {
    match format {
        ExportFormat::Csv => Box::new(csv::CsvExporter),
        ExportFormat::Json => Box::new(json::JsonExporter),
    }
}

/// Runs as exports number them: the first round and the first run of the campaign are 1 in
/// CSV and JSON alike (the store counts from 0).
pub(super) fn counted_from_one(
    runs: Vec<crate::campaigns::store::RunRow>,
) -> Vec<crate::campaigns::store::RunRow> {
    runs.into_iter()
        .map(|r| crate::campaigns::store::RunRow {
            round: r.round + 1,
            sequence: r.sequence + 1,
            ..r
        })
        .collect()
}

/// `netsweep export`: a stored campaign's runs in CSV or JSON.
pub fn export(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&a.db)?;
    let campaign = campaign_id(&store, a.campaign, &a.db)?;
    let runs = counted_from_one(store.runs(campaign)?);
    let dims: Vec<String> = store
        .configurations(campaign)?
        .first()
        .map(|c| c.dims.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let bytes = crate::app::export::exporter(a.format).serialize(&runs, &dims)?;
    crate::out!("{}", String::from_utf8_lossy(&bytes));
    Ok(ExitCode::SUCCESS)
}
