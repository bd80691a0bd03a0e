//! One exporter per output format of `netsweep export` (hyperfine's `Exporter` shape): each
//! turns a campaign's runs into the bytes of its format; `exporter` picks one from the
//! format named on the command line, the only place the formats are told apart.

mod csv;
mod json;

use crate::campaigns::store::RunRow;
use crate::cli::ExportFormat;

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
