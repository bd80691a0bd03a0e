//! Commands over a stored campaign: `report`, `migrate`, `compare`, `export` and `import` (moved out of `app::campaign`, which runs campaigns).

use super::*;
use crate::app::db::{campaign_id, open_existing};
use crate::cli::ReportFormat;

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

/// `migrate`: upgrades a store to this netsweep's schema (what read commands ask for).
pub fn migrate(a: &crate::cli::MigrateArgs) -> anyhow::Result<ExitCode> {
    if !a.db.exists() {
        bail!("no database {}", a.db.display());
    }
    let _lock = RunnerLock::acquire(&a.db)?;
    let before = Store::stored_version(&a.db)?;
    let store = Store::open(&a.db)?;
    let now = store.schema_version()?;
    if before == now {
        crate::outln!("{}: schema v{now}, nothing to do", a.db.display());
    } else {
        crate::outln!(
            "{}: upgraded from schema v{before} to v{now}",
            a.db.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn compare(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&a.db)?;
    let campaign = campaign_id(&store, a.campaign, &a.db)?;
    let metric =
        Metric::parse(&a.metric).with_context(|| format!("--metric {} is not known", a.metric))?;
    let filters = pairs(&a.filters, "--where")?;
    let configs = store.configurations(campaign)?;
    let dims: Vec<String> = configs
        .first()
        .map(|c| c.dims.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let by = match &a.by {
        Some(b) if dims.contains(b) => b.clone(),
        Some(b) => bail!(
            "campaign {campaign} has no dimension {b:?}; its dimensions are {}",
            dims.join(", ")
        ),
        None => dims
            .last()
            .cloned()
            .with_context(|| format!("campaign {campaign} has no dimensions to compare"))?,
    };
    let mut values: Vec<String> = Vec::new();
    for c in &configs {
        if let Some((_, v)) = c.dims.iter().find(|(k, _)| k == &by)
            && !values.contains(v)
        {
            values.push(v.clone());
        }
    }
    let all_runs = store.runs(campaign)?;
    let row = store.campaign(campaign)?;
    let plan = Plan::parse(row.plan_path.as_deref().unwrap_or("plan"), &row.plan_toml).ok();
    let mut ask = crate::campaigns::explain::Ask::new(metric);
    (ask.change, ask.confidence) =
        crate::app::explain::judging_args(a.change.as_deref(), a.confidence)?;
    ask.keep_outliers = a.keep_outliers;
    let judging = ask.judging(plan.as_ref());
    let (screened, outliers) = campaign::screen(&all_runs, metric);
    let keep = ask.keeps_outliers(plan.as_ref());
    let runs = if keep { all_runs } else { screened };
    let groups = campaign::compare(&runs, &by, &values, &filters, metric, &judging);
    if a.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "groups": groups,
                "outliers": outliers,
                "outliers_kept": keep,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let target = row.target;
    if target.starts_with("iperf3 server") {
        crate::outln!("Far end: {target}");
    }
    for o in &outliers {
        if keep {
            crate::outln!("outlier kept (--keep-outliers): {}", o.text);
        } else {
            crate::outln!("outlier: {}", o.text);
        }
    }
    if !outliers.is_empty() && !keep {
        crate::outln!("(to compare with them included: add --keep-outliers)");
    }
    for g in &groups {
        let ctx = g.title();
        crate::outln!("== {ctx}");
        match &g.analysis {
            Some(an) => {
                // Rates in a unit (as the report shows them), not raw bit/s like 9.41e+08.
                let text = if metric == Metric::BitsPerSecond {
                    crate::report::comparison_text(an, &g.values)
                } else {
                    ministat::render(an, &g.values, None)
                };
                crate::out!("{text}");
                if an.comparisons.len() > 1 {
                    crate::outln!(
                        "(the {} comparisons' p-values are Holm-adjusted as one family, Holm 1979)",
                        an.comparisons.len()
                    );
                }
            }
            None => crate::outln!("  {}", g.note.clone().unwrap_or_default()),
        }
    }
    Ok(ExitCode::SUCCESS)
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
