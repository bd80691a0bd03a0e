//! The journal of a libvirt domain's definition before netsweep changed it: written (fsynced)
//! before the first change, read to put the definition and the domain's state back at the end,
//! after a failure, and by the next command after a crash or kill -9 (`recover_stale`).

use super::virsh::{State, Virsh};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub uri: Option<String>,
    pub domain: String,
    /// The definition the next start would have used (`virsh dumpxml --inactive`).
    pub original: String,
    /// Whether the domain ran when netsweep found it: it runs again (with the original
    /// definition) or is shut off at the end.
    pub was_running: bool,
    /// The process that restores it when it ends.
    pub owner_pid: u32,
    pub created_unix: f64,
}

pub use super::dir;

/// FNV-1a, 64 bits: a stable file name for a connection and domain of any spelling.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub fn path(uri: Option<&str>, domain: &str) -> PathBuf {
    let readable: String = domain
        .chars()
        .take(40)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let key = format!("{}\0{domain}", uri.unwrap_or(""));
    dir().join(format!("{readable}-{:016x}.json", fnv(key.as_bytes())))
}

pub fn read(path: &Path) -> Option<Journal> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Temporary file, fsync, rename, fsync of the directory.
pub fn write(path: &Path, j: &Journal) -> Result<(), String> {
    let run = || -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(j)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    run().map_err(|e| format!("cannot write the journal {}: {e}", path.display()))
}

/// The models of a definition's interfaces, in order: what a running domain must match for
/// it to be running the original definition.
fn models(xml: &str) -> Result<Vec<Option<String>>, String> {
    Ok(super::xml::interfaces(xml)?
        .into_iter()
        .map(|i| i.model)
        .collect())
}

/// Puts the original definition back, and the domain in its original state: running with
/// the original definition (restarted when the running one differs), or shut off. Removes the
/// journal once done. Returns what it did, in words.
pub fn restore(path: &Path, j: &Journal, grace: std::time::Duration) -> Result<String, String> {
    let virsh = Virsh::new(j.uri.clone());
    let d = j.domain.as_str();
    let mut did = Vec::new();
    if virsh.dumpxml(d, true)? != j.original {
        virsh.define(&j.original)?;
        did.push("definition put back");
    }
    let state = virsh.state(d)?;
    let live_differs =
        state == State::Running && models(&virsh.dumpxml(d, false)?)? != models(&j.original)?;
    match (j.was_running, state == State::Running) {
        (true, true) if live_differs => {
            virsh.stop(d, grace)?;
            virsh.start(d)?;
            did.push("restarted with it");
        }
        (true, false) => {
            virsh.start(d)?;
            did.push("started again");
        }
        (false, true) => {
            virsh.stop(d, grace)?;
            did.push("shut off again");
        }
        _ => {}
    }
    let _ = std::fs::remove_file(path);
    Ok(if did.is_empty() {
        format!("libvirt domain {d} was already as found")
    } else {
        format!("libvirt domain {d}: {}", did.join(", "))
    })
}

/// Restores every journal whose owner process is gone; one line per domain (errors too).
pub fn recover_stale(grace: std::time::Duration) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(j) = read(&p) else { continue };
        if crate::platform::process::alive(j.owner_pid) {
            continue;
        }
        out.push(match restore(&p, &j, grace) {
            Ok(line) => format!(
                "{line} (left changed by process {} that ended without restoring it)",
                j.owner_pid
            ),
            Err(e) => format!(
                "could not restore libvirt domain {} left changed by process {}: {e}; its \
                 original definition is in {}",
                j.domain,
                j.owner_pid,
                p.display()
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_names_are_stable_and_distinct_per_connection() {
        let a = path(Some("qemu:///system"), "vm/1");
        assert_eq!(a, path(Some("qemu:///system"), "vm/1"));
        assert_ne!(a, path(Some("qemu:///session"), "vm/1"));
        assert_ne!(a, path(None, "vm/1"));
        let name = a.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("vm_1-") && name.ends_with(".json"),
            "{name}"
        );
    }

    #[test]
    fn a_journal_reads_back_as_written() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        let j = Journal {
            uri: None,
            domain: "vm1".into(),
            original: "<domain/>".into(),
            was_running: true,
            owner_pid: 7,
            created_unix: 1.5,
        };
        write(&p, &j).unwrap();
        assert_eq!(read(&p), Some(j));
    }
}
