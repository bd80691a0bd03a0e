//! Advisory whole-file locks (`std::fs::File::lock`, flock(2) on Linux and FreeBSD), which the kernel releases when the holder closes the
//! file or dies, even by kill -9: one runner per campaign database, one builder of the guest
//! image at a time.

use std::path::Path;

/// An exclusive lock on a file, held until dropped.
pub struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    /// Opens (creating) the lock file without blocking and without following a link: a FIFO
    /// at its path would block a plain open for writing until a reader came, and a link would
    /// have netsweep create or lock its target. Anything but a regular file is refused by name.
    fn open(path: &Path) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Ok(m) = std::fs::symlink_metadata(path)
            && !m.is_file()
        {
            return Err(crate::inputs::not_regular(
                path,
                "lock file",
                &m.file_type(),
            ));
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        // Checked again on what was opened: the path may have changed since.
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            return Err(crate::inputs::not_regular(path, "lock file", &kind));
        }
        Ok(file)
    }

    /// The lock if nobody holds it; `WouldBlock` if somebody does.
    pub fn try_acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = Self::open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(FileLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(std::io::ErrorKind::WouldBlock.into()),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// The lock, waiting for its holder to release it (a wait a signal interrupts is resumed).
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        let file = Self::open(path)?;
        loop {
            match file.lock() {
                Ok(()) => return Ok(FileLock { _file: file }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_refused_until_it_is_dropped() {
        let dir = std::env::temp_dir().join(format!("nsw-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.lock");
        let held = FileLock::try_acquire(&path).unwrap();
        let again = FileLock::try_acquire(&path).err().unwrap();
        assert_eq!(again.kind(), std::io::ErrorKind::WouldBlock);
        drop(held);
        assert!(FileLock::try_acquire(&path).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Regression (issue 42, audit): a FIFO at `DB.lock` blocked the open for writing for ever.
    #[test]
    fn a_lock_path_that_is_a_fifo_or_a_link_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("w.db.lock");
        crate::platform::mkfifo(&fifo).unwrap();
        let t0 = std::time::Instant::now();
        let e = FileLock::try_acquire(&fifo).err().unwrap();
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        assert!(e.to_string().contains("is a FIFO"), "{e}");
        let victim = dir.path().join("victim.txt");
        let link = dir.path().join("v.db.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = FileLock::try_acquire(&link).err().unwrap();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert!(!victim.exists(), "the link's target was created");
    }

    #[test]
    fn acquire_waits_for_the_holder_and_then_holds_the_lock() {
        let dir = std::env::temp_dir().join(format!("nsw-lock-wait-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.lock");
        let held = FileLock::try_acquire(&path).unwrap();
        let p = path.clone();
        let waiter = std::thread::spawn(move || FileLock::acquire(&p).map(|_| ()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !waiter.is_finished(),
            "acquire returned while the lock was held"
        );
        drop(held);
        waiter.join().unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
