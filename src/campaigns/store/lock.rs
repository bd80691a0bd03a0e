//! `RunnerLock`: one runner per database, as an flock on `DB.lock` that the kernel releases
//! when the holder exits or dies, even by kill -9.

use anyhow::{Context, bail};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Exclusive use of a database by one runner, held until dropped (or the process dies).
pub struct RunnerLock {
    _file: std::fs::File,
    pub path: PathBuf,
}

impl RunnerLock {
    pub fn acquire(db: &Path) -> anyhow::Result<RunnerLock> {
        let path = PathBuf::from(format!("{}.lock", db.display()));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        // SAFETY: flock on a descriptor we own; released when it is closed or we die.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            bail!(
                "another netsweep runner is using {} (lock {}): wait for it or use another --db",
                db.display(),
                path.display()
            );
        }
        Ok(RunnerLock { _file: file, path })
    }
}
