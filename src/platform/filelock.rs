//! Advisory whole-file locks (`std::fs::File::lock`, flock(2) on Linux and FreeBSD), which the kernel releases when the holder closes the
//! file or dies, even by kill -9: one runner per campaign database, one builder of the guest
//! image at a time.

use std::path::Path;

/// An exclusive lock on a file, held until dropped.
pub struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    fn open(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
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
