//! The results database (SQLite): campaigns, their configurations, and every run with its full
//! engine result, interval rows and kernel counters. Schema changes are ordered migrations
//! tracked in `PRAGMA user_version`; a finished run is never rewritten. Every run is written in
//! its own transaction with `synchronous=FULL`, so a kill or power cut loses no finished run.
//!
//! `schema` holds the migrations; `runs` writes a finished run and reads a campaign's runs; `lock::RunnerLock` keeps a second runner off the same
//! database (an flock the kernel releases when the holder dies, even by kill -9). Read
//! commands use `Store::open_read_only` (`readonly`), which writes nothing and migrates
//! nothing; `Store::open` refuses a path that is a symlink to anything but a database, and
//! every open first refuses a store file that is not a regular one (`files`: a FIFO there
//! would block SQLite's open for ever).

use crate::platform::clock::now_unix;
use crate::traffic::iperf3::import::Imported;
use anyhow::{Context, bail};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::Path;

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The oldest schema read commands take as it is: versions 5 and 6 only added
/// `configuration.resolved_json` and `campaign.plan_facts_json`, which `legacy` derives from
/// the stored plan when they are missing.
pub const READABLE_FROM: u32 = 4;

mod files;
mod legacy;
mod lock;
mod readonly;
mod runs;
mod schema;
mod skips;

pub use lock::RunnerLock;
use schema::MIGRATIONS;

/// An open results database.
pub struct Store {
    conn: Connection,
    /// What a store opened read-only at an older schema lacks, derived at open (`legacy`).
    legacy: legacy::Derived,
}

/// A campaign as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignRow {
    pub id: i64,
    pub name: String,
    pub plan_path: Option<String>,
    pub plan_toml: String,
    pub target: String,
    pub run_order: String,
    pub seed: u64,
    pub repetitions: u32,
    pub created_unix: f64,
    pub finished_unix: Option<f64>,
    pub host_facts_json: Option<String>,
    /// What the read commands need of the plan, kept when the campaign was made.
    #[serde(default)]
    pub facts: crate::campaigns::plan::PlanFacts,
}

/// A configuration of a campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigRow {
    pub id: i64,
    pub position: usize,
    pub label: String,
    pub dims: Vec<(String, String)>,
    /// The configuration as the plan resolved it when the campaign was made (derived from the
    /// stored plan for a store from before schema version 5; `None` for imported runs).
    pub resolved: Option<crate::campaigns::plan::Configuration>,
}

/// One finished run, ready to store.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewRun {
    pub configuration_id: i64,
    pub round: u32,
    pub sequence: usize,
    pub started_unix: f64,
    pub finished_unix: f64,
    pub error: Option<String>,
    pub result: Option<crate::traffic::result::TestResult>,
    pub counters_json: Option<String>,
    pub tuning_json: Option<String>,
    /// For runs imported from other tools: their numbers and original document.
    pub imported: Option<Imported>,
}

/// A stored run, flattened for comparison and export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub id: i64,
    pub configuration: String,
    /// Position of the configuration in the plan.
    pub config_position: u32,
    pub dims: Vec<(String, String)>,
    pub round: u32,
    /// When the run started (Unix seconds; an imported run's test's own start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix: Option<f64>,
    pub sequence: u64,
    pub status: String,
    pub error: Option<String>,
    pub bits_per_second: Option<f64>,
    pub retransmits: Option<i64>,
    pub lost_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
    pub cpu_local_percent: Option<f64>,
    pub cpu_remote_percent: Option<f64>,
    /// Latency probe figures, when the run had them.
    pub loaded_p50_ms: Option<f64>,
    pub loaded_p99_ms: Option<f64>,
    pub added_latency_ms: Option<f64>,
    /// RFC 6349's metrics, when the run had them.
    pub transfer_time_ratio: Option<f64>,
    pub tcp_efficiency_percent: Option<f64>,
    pub buffer_delay_percent: Option<f64>,
    /// A request/response run's transactions per second and 99th-percentile latency (µs).
    pub transactions_per_second: Option<f64>,
    pub latency_p99_us: Option<f64>,
}

fn hash(text: &str) -> String {
    // FNV-1a: stable across builds, enough to recognise the same plan text.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl Store {
    /// Opens (creating if needed) and migrates to `SCHEMA_VERSION`.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        files::check(path)?;
        crate::platform::outfile::refuse_symlink_to_non_database(path)
            .map_err(anyhow::Error::msg)?;
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open database {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let mut store = Store {
            conn,
            legacy: legacy::Derived::default(),
        };
        store
            .migrate()
            .with_context(|| format!("migrating {}", path.display()))?;
        Ok(store)
    }

    /// An empty store in memory, at `SCHEMA_VERSION`: what `run --check` reads where no
    /// database is yet, so that checking a plan creates no file.
    pub fn in_memory() -> anyhow::Result<Store> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store {
            conn,
            legacy: legacy::Derived::default(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store to read it only: SQLite's read-only mode, no WAL switch, no
    /// migration. A store older than `READABLE_FROM` is refused with the command that
    /// upgrades it.
    pub fn open_read_only(path: &Path) -> anyhow::Result<Store> {
        files::check(path)?;
        let conn = readonly::open(path)
            .with_context(|| format!("cannot open database {} to read it", path.display()))?;
        let mut store = Store {
            conn,
            legacy: legacy::Derived::default(),
        };
        let v = store.schema_version()?;
        if v > SCHEMA_VERSION {
            bail!(
                "database {} has schema version {v}, newer than this netsweep's {SCHEMA_VERSION}: upgrade netsweep",
                path.display()
            );
        }
        if v == 0 {
            bail!(
                "{} holds no netsweep store (an empty or foreign SQLite file): pass the --db of a \
                 store `netsweep run` or `import` wrote",
                path.display()
            );
        }
        if v < READABLE_FROM {
            bail!(
                "store {} is schema v{v}, this netsweep reads v{READABLE_FROM} and later: run `netsweep \
                 migrate --db {}` (or any write command on it, such as `run` or `import`) to \
                 upgrade it; read commands never write, so a store you cannot write must be \
                 copied first",
                path.display(),
                path.display()
            );
        }
        store.legacy = legacy::derive(&store.conn, v)?;
        Ok(store)
    }

    /// The schema version of the store at `path`, read without writing anything.
    pub fn stored_version(path: &Path) -> anyhow::Result<u32> {
        files::check(path)?;
        let conn = readonly::open(path)
            .with_context(|| format!("cannot open database {} to read it", path.display()))?;
        Ok(conn.pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    pub fn schema_version(&self) -> anyhow::Result<u32> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?)
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let current = self.schema_version()?;
        if current > SCHEMA_VERSION {
            bail!(
                "database schema version {current} is newer than this netsweep's {SCHEMA_VERSION}: upgrade netsweep"
            );
        }
        let derived = legacy::derive(&self.conn, current)?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as u32)?;
            if i + 1 == MIGRATIONS.len() {
                legacy::write(&tx, &derived)?;
            }
            tx.commit()?;
        }
        Ok(())
    }

    /// Records a new campaign and its configurations; returns the campaign id.
    pub fn create_campaign(
        &mut self,
        plan: &crate::campaigns::plan::Plan,
        plan_path: Option<&str>,
        target: &str,
        seed: u64,
        host_facts: &serde_json::Value,
    ) -> anyhow::Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO campaign (name, plan_path, plan_toml, plan_hash, target, run_order, seed, repetitions, created_unix, host_facts_json, plan_facts_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                plan.name,
                plan_path,
                plan.source,
                hash(&plan.source),
                target,
                plan.repeat.order.name(),
                seed as i64,
                plan.repeat.count,
                now_unix(),
                host_facts.to_string(),
                serde_json::to_string(&plan.facts())?
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (pos, c) in plan
            .resolve_all()
            .map_err(anyhow::Error::msg)?
            .iter()
            .enumerate()
        {
            tx.execute(
                "INSERT INTO configuration (campaign_id, position, label, dims_json, spec_json, resolved_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, pos as i64, c.label, serde_json::to_string(&c.dims)?, serde_json::to_string(&c.spec)?, serde_json::to_string(c)?],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The newest finished campaign of this exact plan text.
    pub fn finished_campaign(&self, plan_text: &str) -> anyhow::Result<Option<CampaignRow>> {
        self.campaign_of_plan(plan_text, true)
    }

    /// Reopens a finished campaign for `rounds` rounds in all (`run --more`).
    pub fn extend_campaign(&mut self, campaign: i64, rounds: u32) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE campaign SET repetitions = ?1, finished_unix = NULL WHERE id = ?2",
            params![rounds, campaign],
        )?;
        Ok(())
    }

    /// The newest unfinished campaign of this exact plan text.
    pub fn unfinished_campaign(&self, plan_text: &str) -> anyhow::Result<Option<CampaignRow>> {
        self.campaign_of_plan(plan_text, false)
    }

    /// The newest unfinished campaign of any plan.
    pub fn newest_unfinished(&self) -> anyhow::Result<Option<CampaignRow>> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM campaign WHERE finished_unix IS NULL ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?;
        id.map(|id| self.campaign(id)).transpose()
    }

    fn campaign_of_plan(
        &self,
        plan_text: &str,
        finished: bool,
    ) -> anyhow::Result<Option<CampaignRow>> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM campaign WHERE plan_hash = ?1 AND plan_toml = ?2 \
                 AND (finished_unix IS NOT NULL) = ?3 ORDER BY id DESC LIMIT 1",
                params![hash(plan_text), plan_text, finished],
                |r| r.get(0),
            )
            .optional()?;
        id.map(|id| self.campaign(id)).transpose()
    }

    pub fn campaign(&self, id: i64) -> anyhow::Result<CampaignRow> {
        // A store opened read-only keeps its schema version: before 6, no plan_facts_json.
        let facts = if self.schema_version()? >= 6 {
            "plan_facts_json"
        } else {
            "NULL"
        };
        let (mut row, facts) = self
            .conn
            .query_row(
                &format!(
                    "SELECT id, name, plan_path, plan_toml, target, run_order, seed, repetitions, created_unix, finished_unix, host_facts_json, {facts}
                     FROM campaign WHERE id = ?1"
                ),
                params![id],
                |r| {
                    Ok((
                        CampaignRow {
                            id: r.get(0)?,
                            name: r.get(1)?,
                            plan_path: r.get(2)?,
                            plan_toml: r.get(3)?,
                            target: r.get(4)?,
                            run_order: r.get(5)?,
                            seed: r.get::<_, i64>(6)? as u64,
                            repetitions: r.get(7)?,
                            created_unix: r.get(8)?,
                            finished_unix: r.get(9)?,
                            host_facts_json: r.get(10)?,
                            facts: Default::default(),
                        },
                        r.get::<_, Option<String>>(11)?,
                    ))
                },
            )
            .with_context(|| format!("no campaign {id} in this database"))?;
        // The stored facts; an older store's, derived at open. What cannot be read stops the
        // read: judging by the defaults instead would give another answer without a word.
        row.facts = match facts {
            Some(j) => serde_json::from_str(&j).with_context(|| {
                format!(
                    "campaign {id}'s stored plan facts (campaign.plan_facts_json) do not parse: \
                     the store was damaged or written by another netsweep; nothing is read in \
                     their place"
                )
            })?,
            None => match (self.legacy.facts.get(&id), self.legacy.unreadable.get(&id)) {
                (Some(f), _) => f.clone(),
                (None, Some(why)) => bail!(
                    "campaign {id}'s stored plan no longer parses ({why}): how its answer is \
                     judged cannot be known, and no default is read in its place"
                ),
                (None, None) if row.target == legacy::IMPORTED => Default::default(),
                (None, None) => bail!(
                    "campaign {id} has no stored plan facts (its plan did not parse when the \
                     store was migrated): how its answer is judged cannot be known"
                ),
            },
        };
        Ok(row)
    }

    /// The newest campaign's id.
    pub fn latest_campaign(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT max(id) FROM campaign", [], |r| r.get(0))?)
    }

    pub fn configurations(&self, campaign: i64) -> anyhow::Result<Vec<ConfigRow>> {
        // A store opened read-only keeps its schema version: before 5, no resolved_json.
        let resolved = if self.schema_version()? >= 5 {
            "resolved_json"
        } else {
            "NULL"
        };
        let mut st = self.conn.prepare(&format!("SELECT id, position, label, dims_json, {resolved} FROM configuration WHERE campaign_id = ?1 ORDER BY position"))?;
        let rows = st.query_map(params![campaign], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, pos, label, dims, resolved) = row?;
            out.push(ConfigRow {
                id,
                position: pos as usize,
                label,
                dims: serde_json::from_str(&dims)?,
                // An older store's, derived at open; none for imported runs.
                resolved: resolved
                    .and_then(|j| serde_json::from_str(&j).ok())
                    .or_else(|| self.legacy.resolved.get(&id).cloned()),
            });
        }
        Ok(out)
    }

    /// (configuration position, round) of every stored run of a campaign.
    pub fn finished_slots(&self, campaign: i64) -> anyhow::Result<HashSet<(usize, u32)>> {
        let mut st = self.conn.prepare(
            "SELECT c.position, r.round FROM run r JOIN configuration c ON c.id = r.configuration_id WHERE r.campaign_id = ?1",
        )?;
        let rows = st.query_map(params![campaign], |r| {
            Ok((r.get::<_, i64>(0)? as usize, r.get::<_, u32>(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn finish_campaign(&mut self, campaign: i64) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE campaign SET finished_unix = ?1 WHERE id = ?2 AND finished_unix IS NULL",
            params![now_unix(), campaign],
        )?;
        Ok(())
    }

    /// A campaign for runs imported from other tools.
    pub fn create_import_campaign(&mut self, name: &str) -> anyhow::Result<i64> {
        let text = format!("# runs imported from iperf3 -J files: {name}\n");
        self.conn.execute(
            "INSERT INTO campaign (name, plan_toml, plan_hash, target, run_order, seed, repetitions, created_unix, finished_unix, plan_facts_json)
             VALUES (?1, ?2, ?3, ?6, 'imported', 0, 0, ?4, ?4, ?5)",
            params![
                name,
                text,
                hash(&text),
                now_unix(),
                serde_json::to_string(&crate::campaigns::plan::PlanFacts::default())?,
                legacy::IMPORTED
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest campaign of imported runs called `name`, if any.
    pub fn newest_import_campaign(&self, name: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row(
                "SELECT max(id) FROM campaign WHERE target = 'import' AND name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()?
            .flatten())
    }

    /// The id of the configuration with these dimension values, created if missing.
    pub fn configuration_for(
        &mut self,
        campaign: i64,
        dims: &[(String, String)],
    ) -> anyhow::Result<i64> {
        let label = crate::campaigns::plan::label(dims);
        let found: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM configuration WHERE campaign_id = ?1 AND label = ?2",
                params![campaign, label],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found {
            return Ok(id);
        }
        let pos: i64 = self.conn.query_row(
            "SELECT coalesce(max(position) + 1, 0) FROM configuration WHERE campaign_id = ?1",
            params![campaign],
            |r| r.get(0),
        )?;
        self.conn.execute(
            "INSERT INTO configuration (campaign_id, position, label, dims_json, spec_json) VALUES (?1, ?2, ?3, ?4, 'null')",
            params![campaign, pos, label, serde_json::to_string(dims)?],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Next free round of a configuration and next sequence number of a campaign.
    pub fn next_slot(&self, campaign: i64, configuration: i64) -> anyhow::Result<(u32, usize)> {
        let round: u32 = self.conn.query_row(
            "SELECT coalesce(max(round) + 1, 0) FROM run WHERE configuration_id = ?1",
            params![configuration],
            |r| r.get(0),
        )?;
        let seq: i64 = self.conn.query_row(
            "SELECT coalesce(max(sequence) + 1, 0) FROM run WHERE campaign_id = ?1",
            params![campaign],
            |r| r.get(0),
        )?;
        Ok((round, seq as usize))
    }

    /// Per-run totals of every interval: (run id, interval end in s, bit/s, omitted).
    pub fn interval_totals(&self, campaign: i64) -> anyhow::Result<Vec<(i64, f64, f64, bool)>> {
        let mut st = self.conn.prepare(
            "SELECT i.run_id, i.end_s, i.bits_per_second, i.omitted FROM interval i JOIN run r ON r.id = i.run_id
             WHERE r.campaign_id = ?1 AND i.stream = -1 ORDER BY i.run_id, i.idx",
        )?;
        let rows = st.query_map(params![campaign], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// TCP retransmissions the campaign's finished runs counted in their omitted intervals
    /// (`-O`: the warm-up, slow start's losses among them), which no run's figures include.
    pub fn omitted_retransmits(&self, campaign: i64) -> anyhow::Result<i64> {
        Ok(self.conn.query_row(
            "SELECT coalesce(sum(i.retransmits), 0) FROM interval i JOIN run r ON r.id = i.run_id
             WHERE r.campaign_id = ?1 AND r.status = 'ok' AND i.stream = -1 AND i.omitted",
            params![campaign],
            |r| r.get(0),
        )?)
    }

    /// The engine result stored with each run (JSON), by run id.
    pub fn run_results(&self, campaign: i64) -> anyhow::Result<Vec<(i64, Option<String>)>> {
        let mut st = self.conn.prepare("SELECT id, result_json FROM run WHERE campaign_id = ?1 AND status = 'ok' ORDER BY sequence")?;
        let rows = st.query_map(params![campaign], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One run's status and the result stored with it (netsweep's JSON, or an imported
    /// iperf3 -J document); `None` when no run has that id.
    pub fn run_result(&self, run: i64) -> anyhow::Result<Option<(String, Option<String>)>> {
        let mut st = self
            .conn
            .prepare("SELECT status, result_json FROM run WHERE id = ?1")?;
        let mut rows = st.query_map(params![run], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.next().transpose()?)
    }

    /// The kernel counter deltas stored with each run (JSON), by run id.
    pub fn run_counters(&self, campaign: i64) -> anyhow::Result<Vec<(i64, Option<String>)>> {
        let mut st = self.conn.prepare(
            "SELECT id, counters_json FROM run WHERE campaign_id = ?1 ORDER BY sequence",
        )?;
        let rows = st.query_map(params![campaign], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Adds `value` under `key` to a campaign's host facts (facts gathered while it ran).
    pub fn add_host_fact(
        &mut self,
        campaign: i64,
        key: &str,
        value: &serde_json::Value,
    ) -> anyhow::Result<()> {
        let current: Option<String> = self.conn.query_row(
            "SELECT host_facts_json FROM campaign WHERE id = ?1",
            params![campaign],
            |r| r.get(0),
        )?;
        let mut facts: serde_json::Value = current
            .and_then(|j| serde_json::from_str(&j).ok())
            .filter(serde_json::Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        facts[key] = value.clone();
        self.conn.execute(
            "UPDATE campaign SET host_facts_json = ?1 WHERE id = ?2",
            params![facts.to_string(), campaign],
        )?;
        Ok(())
    }

    /// Stores the doctor's findings for a campaign (JSON).
    pub fn set_doctor(&mut self, campaign: i64, json: &str) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE campaign SET doctor_json = ?1 WHERE id = ?2",
            params![json, campaign],
        )?;
        Ok(())
    }

    /// The doctor's findings stored with a campaign.
    pub fn doctor(&self, campaign: i64) -> anyhow::Result<Option<String>> {
        Ok(self.conn.query_row(
            "SELECT doctor_json FROM campaign WHERE id = ?1",
            params![campaign],
            |r| r.get(0),
        )?)
    }

    /// Direct access for importers and tests.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_an_empty_database_to_the_current_version() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("x.db")).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        // Opening again is a no-op.
        drop(s);
        assert_eq!(
            Store::open(&dir.path().join("x.db"))
                .unwrap()
                .schema_version()
                .unwrap(),
            SCHEMA_VERSION
        );
    }

    #[test]
    fn a_second_runner_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let lock = RunnerLock::acquire(&db).unwrap();
        let err = RunnerLock::acquire(&db).err().unwrap().to_string();
        assert!(err.contains("another netsweep runner"), "{err}");
        drop(lock);
        RunnerLock::acquire(&db).unwrap();
    }

    #[test]
    fn a_read_only_open_writes_nothing_and_names_the_migration() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let v1 = Connection::open(&db).unwrap();
        v1.execute_batch(MIGRATIONS[0]).unwrap();
        v1.pragma_update(None, "user_version", 1).unwrap();
        drop(v1);
        let before = std::fs::read(&db).unwrap();
        let err = format!("{:#}", Store::open_read_only(&db).err().unwrap());
        assert!(
            err.contains("is schema v1") && err.contains("netsweep migrate --db"),
            "{err}"
        );
        assert_eq!(std::fs::read(&db).unwrap(), before, "the store was written");
        drop(Store::open(&db).unwrap());
        let s = Store::open_read_only(&db).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(s.latest_campaign().unwrap(), None);
        let missing = Store::open_read_only(&dir.path().join("none.db"))
            .err()
            .unwrap();
        assert!(format!("{missing:#}").contains("to read it"), "{missing:#}");
        assert!(!dir.path().join("none.db").exists());
    }

    #[test]
    fn a_store_symlinked_to_a_non_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("notes.txt");
        std::fs::write(&target, "").unwrap();
        let link = dir.path().join("c.db");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = format!("{:#}", Store::open(&link).err().unwrap());
        assert!(err.contains("not a SQLite database"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"");
    }

    #[test]
    fn a_newer_schema_is_refused_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let err = Store::open(&db).err().unwrap();
        assert!(format!("{err:#}").contains("upgrade netsweep"), "{err:#}");
    }
}
