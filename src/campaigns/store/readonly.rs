//! Opening a store only to read it (`compare`, `export`, `explain`, `report`): SQLite's
//! read-only mode, no WAL switch, no migration, nothing written. A store whose directory the
//! reader cannot write (a read-only mount, an archive, another user's store) cannot get
//! SQLite's `-shm` file for a WAL database; it is then opened as immutable, which reads the
//! database file alone (what a finished writer checkpointed into it).

use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// A path as a SQLite URI (`file:` with `?`, `#` and `%` and non-ASCII bytes escaped).
fn uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('?');
    out.push_str(query);
    out
}

fn try_open(uri: &str) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // The open is lazy: the first read tells whether the file can be read.
    conn.pragma_query_value(None, "user_version", |r| r.get::<_, u32>(0))?;
    Ok(conn)
}

/// A read-only connection to the existing database at `path`.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    try_open(&uri(path, "mode=ro"))
        .or_else(|first| try_open(&uri(path, "mode=ro&immutable=1")).map_err(|_| first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_paths_become_uris_sqlite_reads_back() {
        assert_eq!(
            uri(Path::new("/a b/c?d#e%.db"), "mode=ro"),
            "file:/a%20b/c%3Fd%23e%25.db?mode=ro"
        );
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("we?ird #1.db");
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "user_version", 7)
            .unwrap();
        let c = open(&db).unwrap();
        let v: u32 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 7);
        assert!(c.execute_batch("CREATE TABLE t (x)").is_err(), "writable");
    }
}
