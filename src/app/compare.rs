//! `netsweep compare`: a stored campaign's runs compared along one dimension.

use crate::analysis::ministat;
use crate::app::db::{campaign_id, open_existing};
use crate::campaigns::campaign::{self, Metric};
use crate::cli::{CompareArgs, pairs};
use anyhow::{Context, bail};
use std::process::ExitCode;

pub fn compare(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&a.db)?;
    let campaign = campaign_id(&store, a.campaign, &a.db)?;
    let metric = Metric::from_flag(&a.metric).map_err(anyhow::Error::msg)?;
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
    // A filter that matches nothing is a typo, not an empty answer.
    for (k, v) in &filters {
        if !dims.contains(k) {
            bail!(
                "--where {k}={v}: campaign {campaign} has no dimension {k:?}; its dimensions are {}",
                dims.join(", ")
            );
        }
        if !configs
            .iter()
            .any(|c| c.dims.iter().any(|(ck, cv)| ck == k && cv == v))
        {
            let mut known: Vec<&str> = Vec::new();
            for c in &configs {
                if let Some((_, cv)) = c.dims.iter().find(|(ck, _)| ck == k)
                    && !known.contains(&cv.as_str())
                {
                    known.push(cv);
                }
            }
            bail!(
                "--where {k}={v}: dimension {k} has no value {v:?}; its values are {}",
                known.join(", ")
            );
        }
    }
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
    let mut ask = crate::campaigns::explain::Ask::new(metric);
    (ask.change, ask.confidence) =
        crate::app::explain::judging_args(a.change.as_deref(), a.confidence)?;
    ask.keep_outliers = a.keep_outliers;
    let judging = ask.judging(&row.facts);
    let (screened, outliers) = campaign::screen(&all_runs, metric);
    let keep = ask.keeps_outliers(&row.facts);
    let runs = if keep { all_runs } else { screened };
    let groups = campaign::compare(&runs, &by, &values, &filters, metric, &judging);
    // Where the profile cannot matter by construction, the same statement as `run`, `explain`
    // and the report (a VM trial found compare alone without it).
    let settled = if by == crate::campaigns::plan::PROFILE_DIMENSION {
        super::explain::explanation(&store, campaign, &ask)?.settled
    } else {
        campaign::Settled::default()
    };
    // Sessions apart (explain's flag too): no comparison can tell them from the change.
    let ok: Vec<&crate::campaigns::store::RunRow> =
        runs.iter().filter(|r| r.status == "ok").collect();
    let sessions = crate::campaigns::explain::sessions::flag(&ok);
    if a.json {
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "groups": groups,
                "outliers": outliers,
                "outliers_kept": keep,
                "sessions": sessions,
                "settled": settled,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(f) = &sessions {
        crate::outln!("{}", f.text);
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
        if settled.context(&g.context) {
            crate::outln!(
                "profile cannot matter here by construction (`netsweep explain` says why): a \
                 difference below is noise or drift, and no rounds settle it"
            );
        }
        match &g.analysis {
            Some(an) => {
                // Rates in a unit (as the report shows them), not raw bit/s like 9.41e+08.
                let mut text = if metric == Metric::BitsPerSecond {
                    crate::report::comparison_text(an, &g.values)
                } else {
                    ministat::render(an, &g.values, None)
                };
                // A verdict that cannot matter here, as `run` prints it (no rounds settle it).
                for c in &an.comparisons {
                    if settled.covers(&g.context, &c.baseline, &c.other) {
                        text = text.replace(&c.verdict, &settled.verdict(c, &g.context));
                    }
                }
                crate::out!("{text}");
                if an.family > 1 {
                    crate::outln!(
                        "(p-values Holm-adjusted over {} comparisons{}, Holm 1979; each interval is \
                         at the level that correction gives its test)",
                        an.family,
                        if an.family > an.comparisons.len() {
                            ", every pair of values, as explain adjusts a dimension"
                        } else {
                            ""
                        }
                    );
                }
            }
            None => crate::outln!("  {}", g.note.clone().unwrap_or_default()),
        }
    }
    Ok(ExitCode::SUCCESS)
}
