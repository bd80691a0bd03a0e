//! The database a read command names (`--db`) and the campaign it asks about (`--campaign`,
//! else the latest), shared by `explain` and the commands over a stored campaign (`report`,
//! `compare`, `export`), so none has to reach into another; and `migrate`, which upgrades it.

use crate::campaigns::store::{RunnerLock, Store};
use anyhow::{Context, bail};
use std::path::Path;
use std::process::ExitCode;

/// The campaign `id`, or the latest in the store when none is given.
pub(crate) fn campaign_id(store: &Store, id: Option<i64>, db: &Path) -> anyhow::Result<i64> {
    match id {
        Some(id) => Ok(id),
        None => store
            .latest_campaign()?
            .with_context(|| format!("{} holds no campaign yet", db.display())),
    }
}

/// Opens an existing store read-only; a missing file is an error that says how to make one.
pub(crate) fn open_existing(db: &Path) -> anyhow::Result<Store> {
    if !db.exists() {
        bail!(
            "no database {}: run a plan first (netsweep run PLAN) or pass --db",
            db.display()
        );
    }
    Store::open_read_only(db)
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
