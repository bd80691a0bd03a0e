//! Runs as one pretty-printed JSON array of run objects, as stored (dimensions as pairs).

use super::Exporter;
use crate::campaigns::store::RunRow;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn serialize(&self, runs: &[RunRow], _dims: &[String]) -> anyhow::Result<Vec<u8>> {
        let mut out = serde_json::to_vec_pretty(runs)?;
        out.push(b'\n');
        Ok(out)
    }
}
