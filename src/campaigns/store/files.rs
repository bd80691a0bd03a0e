//! The files a store is made of (the database and SQLite's `-wal`, `-shm` and `-journal`
//! beside it), checked for their type before SQLite opens them: SQLite opens without
//! `O_NONBLOCK`, so a FIFO at one of these paths would hold any command for ever, and a device
//! would be written to. Each must be a regular file (a link to one is followed) or absent.
//! Called by `Store::open`, `Store::open_read_only` and `Store::stored_version`; the lock file
//! beside them is checked by `platform::filelock`.

use std::path::{Path, PathBuf};

/// The paths SQLite opens for the database at `db`.
fn paths(db: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    ["", "-wal", "-shm", "-journal"]
        .into_iter()
        .map(move |suffix| {
            let mut p = db.as_os_str().to_os_string();
            p.push(suffix);
            PathBuf::from(p)
        })
}

/// Refuses a store whose database or journal files are there but are not regular files.
pub fn check(db: &Path) -> anyhow::Result<()> {
    for p in paths(db) {
        crate::inputs::refuse_special(&p, "store file")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_at_a_store_path_or_beside_it_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        assert!(check(&db).is_ok());
        std::fs::write(&db, "").unwrap();
        assert!(check(&db).is_ok());
        let wal = dir.path().join("s.db-wal");
        crate::platform::mkfifo(&wal).unwrap();
        let e = check(&db).unwrap_err().to_string();
        assert!(e.contains("s.db-wal is a FIFO"), "{e}");
    }
}
