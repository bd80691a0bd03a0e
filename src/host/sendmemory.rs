//! Where this host keeps its record of send paths between processes
//! (`traffic::engine::sendpath::memory`): one small JSON file in netsweep's state directory
//! (`super::state_dir`), read when a client or server starts and saved after each test.
//! `NETSWEEP_SEND_MEMORY=off` makes a process choose from each test alone, as before.
//!
//! The file is a cache of measurements: one that cannot be read (damaged, too large, not a
//! regular file) is started afresh and replaced at the next save, with a word on standard error.
//! A save adds what the process learned since its last save to what the file holds, under a
//! lock, so two processes saving at once lose none of each other's tests.

use crate::traffic::engine::sendpath::memory::{self, Memory};
use std::path::PathBuf;

/// The largest file read: 64 keys of 48 observations of four paths are about 0.8 MB.
const CAP: u64 = 4 << 20;

/// The record's file, or `None` when the user turned remembering off.
pub fn path() -> Option<PathBuf> {
    let off = std::env::var("NETSWEEP_SEND_MEMORY").is_ok_and(|v| v == "off" || v == "0");
    (!off).then(|| super::state_dir().join("send-paths.json"))
}

/// What the file holds; an empty memory when there is none or it cannot be read.
pub fn load(path: &std::path::Path) -> Memory {
    match crate::inputs::read_regular(path, CAP) {
        Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
            crate::errln!(
                "netsweep: {} is not a send-path record ({e}); starting a new one",
                path.display()
            );
            Memory::default()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Memory::default(),
        Err(e) => {
            crate::errln!(
                "netsweep: cannot read {} ({e}); starting a new send-path record",
                path.display()
            );
            Memory::default()
        }
    }
}

/// Makes this process remember, from the file (`path`), unless remembering is off.
pub fn enable() {
    if let Some(p) = path() {
        memory::enable(load(&p));
    }
}

/// Adds what this process learned since its last save to the file, under a lock, so that two
/// processes saving at once lose none of each other's tests (`memory::save_with`). Quiet when
/// the process does not remember or learned nothing; an error names the file.
pub fn save() -> std::io::Result<()> {
    let Some(p) = path() else {
        return Ok(());
    };
    memory::save_with(|fresh| {
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let _lock = crate::platform::filelock::FileLock::acquire(&p.with_extension("lock"))?;
        let mut disk = load(&p);
        for (k, o, t) in fresh {
            disk.learn(k, o.clone(), *t);
        }
        let text = serde_json::to_string(&disk).map_err(std::io::Error::other)?;
        crate::platform::outfile::write(&p, text)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        Ok(disk)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_or_missing_record_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("send-paths.json");
        assert_eq!(load(&p), Memory::default());
        std::fs::write(&p, "{not json").unwrap();
        assert_eq!(load(&p), Memory::default());
        let mut m = Memory::default();
        let o = memory::Observation { paths: vec![] };
        m.learn("k", o, 7);
        std::fs::write(&p, serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(load(&p), m);
    }
}
