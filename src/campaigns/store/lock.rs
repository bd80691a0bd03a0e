//! `RunnerLock`: one runner per database, as an flock on `DB.lock` that the kernel releases
//! when the holder exits or dies, even by kill -9.

use crate::platform::filelock::FileLock;
use anyhow::bail;
use std::path::{Path, PathBuf};

/// Exclusive use of a database by one runner, held until dropped (or the process dies).
pub struct RunnerLock {
    _lock: FileLock,
    pub path: PathBuf,
}

impl RunnerLock {
    pub fn acquire(db: &Path) -> anyhow::Result<RunnerLock> {
        let path = PathBuf::from(format!("{}.lock", db.display()));
        match FileLock::try_acquire(&path) {
            Ok(lock) => Ok(RunnerLock { _lock: lock, path }),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => bail!(
                "another netsweep runner is using {} (lock {}): wait for it or use another --db",
                db.display(),
                path.display()
            ),
            Err(e) => bail!("cannot use the lock file {}: {e}", path.display()),
        }
    }
}
