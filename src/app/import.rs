//! `netsweep import`: iperf3 JSON results into a store, as runs of a configuration.

use crate::campaigns::store::{NewRun, RunnerLock, Store};
use crate::cli::{ImportArgs, pairs};
use crate::platform::clock::now_unix;
use crate::{inputs, traffic::iperf3};
use anyhow::Context;
use std::process::ExitCode;

pub fn import(a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let dims = pairs(&a.set, "--set")?;
    let _lock = RunnerLock::acquire(&a.db)?;
    let mut store = Store::open(&a.db)?;
    let campaign = match a.campaign {
        Some(id) => {
            store.campaign(id)?;
            id
        }
        None => {
            // Named by the dimensions, not their values: each value's files join the others.
            let keys: Vec<&str> = dims.iter().map(|(k, _)| k.as_str()).collect();
            let name = format!("imported: {}", keys.join(", "));
            match store.newest_import_campaign(&name)?.filter(|_| !a.new) {
                Some(id) => id,
                None => store.create_import_campaign(&name)?,
            }
        }
    };
    let config = store.configuration_for(campaign, &dims)?;
    let mut imported = 0;
    for f in &a.files {
        let text = inputs::read_file(f, iperf3::MAX_JSON_BYTES)
            .with_context(|| format!("cannot read {}", f.display()))?;
        let numbers = iperf3::parse_json_result(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        let (round, sequence) = store.next_slot(campaign, config)?;
        let now = now_unix();
        store.insert_run(
            campaign,
            &NewRun {
                configuration_id: config,
                round,
                sequence,
                started_unix: now,
                finished_unix: now,
                imported: Some(numbers),
                ..NewRun::default()
            },
        )?;
        imported += 1;
    }
    crate::outln!(
        "imported {imported} runs into campaign {campaign} as {} ({})",
        crate::campaigns::plan::label(&dims),
        a.db.display()
    );
    Ok(ExitCode::SUCCESS)
}
