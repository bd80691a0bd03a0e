//! `netsweep stats`: reads number files, analyses them, prints ministat's text or JSON.

use crate::analysis::ministat::{self, PlotOptions};
use crate::analysis::sets::{Config, analyze};
use crate::cli::StatsArgs;
use crate::inputs;
use crate::units::parse_percent;
use anyhow::{Context, bail};
use std::process::ExitCode;

pub fn run(a: &StatsArgs) -> anyhow::Result<ExitCode> {
    if a.column == 0 {
        bail!("-C: columns start at 1");
    }
    if !(ministat::MIN_WIDTH..=ministat::MAX_WIDTH).contains(&a.width) {
        bail!(
            "-w: the plot is {} to {} characters wide, got {}",
            ministat::MIN_WIDTH,
            ministat::MAX_WIDTH,
            a.width
        );
    }
    if a.delimiters.is_empty() {
        bail!("-d: the delimiter string must not be empty");
    }
    let files = if a.files.is_empty() {
        vec!["-".to_string()]
    } else {
        a.files.clone()
    };
    let mut sets = Vec::new();
    for f in &files {
        let (name, text) = if f == "-" {
            (
                "<stdin>".to_string(),
                inputs::read_stdin(inputs::MAX_NUMBERS_BYTES)?,
            )
        } else {
            (
                f.clone(),
                inputs::read_file(f.as_ref(), inputs::MAX_NUMBERS_BYTES)
                    .with_context(|| format!("cannot read {f}"))?,
            )
        };
        let values = ministat::parse_values(&name, &text, a.column, &a.delimiters)?;
        sets.push((name, values));
    }
    let cfg = Config {
        confidence: a.confidence / 100.0,
        detect_change: parse_percent(&a.change).context("--change")? / 100.0,
        ..Config::default()
    };
    let analysis = analyze(&sets, &cfg)?;
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&analysis)?);
        return Ok(ExitCode::SUCCESS);
    }
    if a.no_plot {
        for (i, s) in analysis.sets.iter().enumerate() {
            crate::outln!("{} {}", ministat::symbol(i), s.name);
        }
        crate::out!("{}", ministat::table(&analysis));
        return Ok(ExitCode::SUCCESS);
    }
    let values: Vec<Vec<f64>> = sets.into_iter().map(|(_, v)| v).collect();
    let plot = (!a.no_graph).then_some(PlotOptions {
        width: a.width,
        separate_bars: a.separate,
    });
    crate::out!("{}", ministat::render(&analysis, &values, plot));
    Ok(ExitCode::SUCCESS)
}
