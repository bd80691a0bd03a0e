//! The database a read command names (`--db`) and the campaign it asks about (`--campaign`,
//! else the latest), shared by `explain` and the commands over a stored campaign
//! (`campaign::stored`), so neither has to reach into the other.

use crate::campaigns::store::Store;
use anyhow::{Context, bail};
use std::path::Path;

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
