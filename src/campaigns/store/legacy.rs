//! Stores written before the typed plan values were kept: a campaign from before schema
//! version 6 has no `plan_facts_json`, and its configurations from before version 5 no
//! `resolved_json`. They are derived once, when such a store is opened, from the stored plan
//! text: `Store::open` writes them in as it migrates, `Store::open_read_only` keeps them beside
//! the connection. This is the one place that parses a stored plan again; every reader gets
//! typed values whatever the store's age. A campaign whose text is not a plan (imported runs)
//! gets the default facts and no resolved configurations.

use crate::campaigns::plan::{Configuration, Plan, PlanFacts};
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// The `target` of a campaign of imported runs (`Store::create_import_campaign`).
pub(super) const IMPORTED: &str = "import";

/// What an older store lacks, by campaign id and by configuration id.
#[derive(Debug, Default)]
pub(super) struct Derived {
    pub facts: HashMap<i64, PlanFacts>,
    pub resolved: HashMap<i64, Configuration>,
    /// Campaigns whose stored plan no longer parses, and why: nothing is derived (or written)
    /// in their place, and reading them says so.
    pub unreadable: HashMap<i64, String>,
}

/// Derives what a store at schema `version` lacks (nothing from version 6 on).
pub(super) fn derive(conn: &Connection, version: u32) -> anyhow::Result<Derived> {
    let mut out = Derived::default();
    if version >= 6 || version == 0 {
        return Ok(out);
    }
    let mut st = conn.prepare("SELECT id, plan_path, plan_toml, target FROM campaign")?;
    let campaigns = st
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut configs =
        conn.prepare("SELECT id, dims_json FROM configuration WHERE campaign_id = ?1")?;
    for (id, path, toml, target) in campaigns {
        // Imported runs have no plan: the default judging is theirs by construction.
        if target == IMPORTED {
            out.facts.insert(id, PlanFacts::default());
            continue;
        }
        let plan = match Plan::parse(path.as_deref().unwrap_or("plan"), &toml) {
            Ok(p) => p,
            Err(e) => {
                out.unreadable.insert(id, e.to_string());
                continue;
            }
        };
        out.facts.insert(id, plan.facts());
        if version >= 5 {
            continue;
        }
        let rows = configs
            .query_map(params![id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for (config, dims) in rows {
            let Ok(dims) = serde_json::from_str::<Vec<(String, String)>>(&dims) else {
                continue;
            };
            if let Ok(c) = plan.resolve(&dims) {
                out.resolved.insert(config, c);
            }
        }
    }
    Ok(out)
}

/// Writes what was derived into a store migrated to version 6.
pub(super) fn write(conn: &Connection, derived: &Derived) -> anyhow::Result<()> {
    for (id, facts) in &derived.facts {
        conn.execute(
            "UPDATE campaign SET plan_facts_json = ?1 WHERE id = ?2 AND plan_facts_json IS NULL",
            params![serde_json::to_string(facts)?, id],
        )?;
    }
    for (id, c) in &derived.resolved {
        conn.execute(
            "UPDATE configuration SET resolved_json = ?1 WHERE id = ?2 AND resolved_json IS NULL",
            params![serde_json::to_string(c)?, id],
        )?;
    }
    Ok(())
}
