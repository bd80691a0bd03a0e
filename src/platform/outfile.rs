//! Output files written without following a final symbolic link: the bytes go to a new
//! temporary file in the target's directory (created with `O_EXCL | O_NOFOLLOW`), which is
//! then renamed over the target. A symlink at the target path is replaced by the file, and
//! whatever it pointed to is left untouched; a reader never sees a half-written file. Every
//! file netsweep writes for the user (reports, their SVGs) goes through `write`; stores check
//! their path with `refuse_symlink_to_non_database`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary names differ between the threads of one process too.
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = format!(".{name}.tmp{}-{n}", std::process::id());
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(tmp),
        _ => PathBuf::from(tmp),
    }
}

/// Writes `bytes` to `path` through a temporary file in its directory and a rename: a
/// symlink at `path` is replaced, never followed. The file gets mode 0644 (less the umask).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    if path.file_name().is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        ));
    }
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes.as_ref())?;
        f.flush()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Refuses a store path that is a symbolic link to anything but an existing SQLite database:
/// opening it would write a schema into (or create) whatever the link points to.
pub fn refuse_symlink_to_non_database(path: &Path) -> Result<(), String> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_symlink() {
        return Ok(());
    }
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    let mut head = [0u8; 16];
    let is_db = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == SQLITE_MAGIC;
    if is_db {
        Ok(())
    } else {
        Err(format!(
            "store {} is a symbolic link to {target}, which is not a SQLite database: refusing to \
             write a store through it; pass the real path of a database, or a new file name",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_at_the_output_path_leaves_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.path().join("report.html");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write(&link, "<html>").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "<html>");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn a_dangling_symlink_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("would-be-created");
        let link = dir.path().join("out.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write(&link, "x").unwrap();
        assert!(!target.exists());
    }

    #[test]
    fn a_store_link_to_a_non_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("empty");
        std::fs::write(&target, "").unwrap();
        let link = dir.path().join("c.db");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = refuse_symlink_to_non_database(&link).unwrap_err();
        assert!(e.contains("not a SQLite database"), "{e}");
        std::fs::write(&target, [SQLITE_MAGIC.as_slice(), &[0u8; 84]].concat()).unwrap();
        assert!(refuse_symlink_to_non_database(&link).is_ok());
        assert!(refuse_symlink_to_non_database(&dir.path().join("new.db")).is_ok());
    }
}
