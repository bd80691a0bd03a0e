//! Advisory whole-file locks (`flock(2)`), which the kernel releases when the holder closes the
//! file or dies, even by kill -9: one runner per campaign database, one builder of the guest
//! image at a time.

use std::os::fd::AsRawFd;
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

    fn lock(file: std::fs::File, flags: libc::c_int) -> std::io::Result<FileLock> {
        loop {
            // SAFETY: flock on a descriptor we own; released when it is closed or we die.
            if unsafe { libc::flock(file.as_raw_fd(), flags) } == 0 {
                return Ok(FileLock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// The lock if nobody holds it; `WouldBlock` if somebody does.
    pub fn try_acquire(path: &Path) -> std::io::Result<FileLock> {
        Self::lock(Self::open(path)?, libc::LOCK_EX | libc::LOCK_NB)
    }

    /// The lock, waiting for its holder to release it.
    pub fn acquire(path: &Path) -> std::io::Result<FileLock> {
        Self::lock(Self::open(path)?, libc::LOCK_EX)
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
}
