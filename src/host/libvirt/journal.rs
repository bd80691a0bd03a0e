//! The journal of a libvirt domain's definition before netsweep changed it: written (fsynced)
//! before the first change, read to put the definition and the domain's state back at the end,
//! after a failure, and by the next command after a crash or kill -9 (`recover_stale`). The
//! original definition is also written beside it as plain XML (`saved_definition`), and the
//! journal carries its SHA-256: a journal that does not read back whole stops the run with
//! the exact `virsh define` of that copy, never taking the changed definition for the original.
//! Who holds a domain is a lock beside the journal (`lock_path`), which dies with its holder.

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
    /// SHA-256 of `original`, hex: checked when the journal is read.
    #[serde(default)]
    pub original_sha256: String,
    /// The campaign's `shutdown_timeout`, seconds: how long a restore after a crash waits for
    /// the guest to shut down before powering it off (absent in older journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_s: Option<f64>,
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

/// The journal of a domain by its UUID (`Virsh::uuid`), so that every spelling of one domain
/// (no `uri` and `uri = "qemu:///system"` for root, its name or its UUID) shares one journal
/// and one lock; the spelling given when libvirt cannot say. UUIDs are unique across
/// connections, so the URI is not part of the name (a URI spelled two ways, or the default
/// connection, resolve alike); the journal itself keeps the URI its restore uses.
pub fn path_of(uuid: Option<&str>, domain: &str, uri: Option<&str>) -> PathBuf {
    match uuid {
        Some(uuid) => path(Some("uuid"), uuid),
        None => path(uri, domain),
    }
}

/// A saved original definition without its journal (the journal was removed, or a run died
/// between the two writes): the saved copy may be the only original left, so it is never
/// overwritten; the run stops with the recovery by hand.
pub fn orphaned_original(journal: &Path) -> Result<(), String> {
    let xml = saved_definition(journal);
    match std::fs::symlink_metadata(&xml) {
        Ok(_) => Err(format!(
            "{} holds a libvirt domain's original definition but its journal {} is gone: the \
             domain may still be changed; if it is, put the original back with `virsh define {}` \
             (add -c URI for another connection); then remove {}",
            xml.display(),
            journal.display(),
            crate::paste::quote(&xml.to_string_lossy()),
            crate::paste::quote(&xml.to_string_lossy())
        )),
        Err(_) => Ok(()),
    }
}

/// The lock a campaign holds on a domain from before its first run to after its restore.
pub fn lock_path(journal: &Path) -> PathBuf {
    journal.with_extension("lock")
}

/// The original definition as plain XML beside the journal (for `virsh define` by hand).
pub fn saved_definition(journal: &Path) -> PathBuf {
    journal.with_extension("original.xml")
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The journal at `path`: `Ok(None)` when there is none; an error, with how to recover by
/// hand, when it is there but does not read back whole (truncated, damaged, or its original
/// not the one it was written with).
pub fn load(path: &Path) -> Result<Option<Journal>, String> {
    let text = match crate::inputs::read_regular(path, super::xml::MAX_DEFINITION as u64 * 2) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(damaged(path, &e.to_string())),
    };
    let j: Journal = serde_json::from_str(&text).map_err(|e| damaged(path, &e.to_string()))?;
    if !j.original_sha256.is_empty() && sha256_hex(&j.original) != j.original_sha256 {
        return Err(damaged(
            path,
            "its original definition does not match its checksum",
        ));
    }
    Ok(Some(j))
}

/// Why a journal cannot be trusted, and the recovery by hand.
fn damaged(path: &Path, why: &str) -> String {
    let xml = saved_definition(path);
    let by_hand = if xml.is_file() {
        format!(
            "put the original definition back by hand with `virsh define {}` (saved before the \
             first change; add -c URI for another connection), then remove {}",
            crate::paste::quote(&xml.to_string_lossy()),
            crate::paste::quote(&path.to_string_lossy())
        )
    } else {
        format!(
            "no saved copy of the original definition survives: define the domain's original by \
             hand (`virsh edit`), then remove {}",
            crate::paste::quote(&path.to_string_lossy())
        )
    };
    format!(
        "the journal {} of a libvirt domain netsweep changed cannot be read ({why}): the domain \
         may still be changed, and nothing was done to it; {by_hand}",
        path.display()
    )
}

/// The journal and, first, the original definition as plain XML; each by temporary file,
/// fsync, rename, fsync of the directory.
pub fn write(path: &Path, j: &Journal) -> Result<(), String> {
    let mut j = j.clone();
    j.original_sha256 = sha256_hex(&j.original);
    let durable = |dest: &Path, bytes: &[u8]| -> std::io::Result<()> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dest.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dest)?;
        std::fs::File::open(dir)?.sync_all()
    };
    durable(&saved_definition(path), j.original.as_bytes())
        .and_then(|()| durable(path, &serde_json::to_vec_pretty(&j)?))
        .map_err(|e| format!("cannot write the journal {}: {e}", path.display()))
}

/// Removes the journal and its saved definition.
fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(saved_definition(path));
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
    remove(path);
    Ok(if did.is_empty() {
        format!("libvirt domain {d} was already as found")
    } else {
        format!("libvirt domain {d}: {}", did.join(", "))
    })
}

/// What a command does with a journal whose owner is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// Put the domain back (`run`, `doctor --libvirt`).
    Restore,
    /// Only say it is pending, and which command puts it back (`run --check`: a check stops
    /// before anything is done, and a restore may shut a guest down).
    Report,
}

/// The recovery by hand of a journal netsweep does not restore itself: the saved original's
/// `virsh define`, and the files to remove once done.
fn by_hand(path: &Path, j: &Journal) -> String {
    let xml = saved_definition(path);
    let connect = j
        .uri
        .as_deref()
        .map(|u| format!("-c {} ", crate::paste::quote(u)))
        .unwrap_or_default();
    format!(
        "to put back the definition netsweep found: `virsh {connect}define {}`; then (or to \
         leave the domain as it is) `rm {} {}`",
        crate::paste::quote(&xml.to_string_lossy()),
        crate::paste::quote(&path.to_string_lossy()),
        crate::paste::quote(&xml.to_string_lossy())
    )
}

/// One journal at `path` whose owner is gone (its lock held by the caller), as `mode` says:
/// `Ok` with what was done, `Err` with why nothing was and how to do it by hand. A domain
/// whose definition changed since beyond the NIC model netsweep set is not put back (a
/// trial's admin edit, made after a kill -9, was silently undone by the next `doctor`).
pub fn stale(
    path: &Path,
    j: &Journal,
    (grace, mode): (std::time::Duration, Stale),
    say: &dyn Fn(&str),
) -> Result<String, String> {
    let pending = format!(
        "libvirt domain {} was left changed by process {} that ended without restoring it",
        j.domain, j.owner_pid
    );
    if mode == Stale::Report {
        return Err(format!(
            "{pending}; nothing was done to it: `netsweep doctor --libvirt {}{}` (or the next \
             `netsweep run`) puts it back",
            crate::paste::quote(&j.domain),
            j.uri
                .as_deref()
                .map(|u| format!(" --connect {}", crate::paste::quote(u)))
                .unwrap_or_default()
        ));
    }
    let cannot = |e: String| {
        format!(
            "could not restore libvirt domain {} left changed by process {}: {e}; {}",
            j.domain,
            j.owner_pid,
            by_hand(path, j)
        )
    };
    let now = Virsh::new(j.uri.clone())
        .dumpxml(&j.domain, true)
        .map_err(cannot)?;
    if now != j.original && super::xml::changed_beyond_models(&now, &j.original) != Ok(false) {
        return Err(format!(
            "{pending}, and its definition has changed since beyond the NIC model netsweep set \
             (edited by someone): not put back, nothing was done to it; {}",
            by_hand(path, j)
        ));
    }
    let grace = j
        .grace_s
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(std::time::Duration::from_secs_f64)
        .unwrap_or(grace);
    say(&format!(
        "netsweep: {pending}: putting it back (a restart waits up to {} s for the guest to shut \
         down)",
        grace.as_secs()
    ));
    let line = restore(path, j, grace).map_err(cannot)?;
    Ok(format!(
        "{line} (left changed by process {} that ended without restoring it)",
        j.owner_pid
    ))
}

/// Restores every journal whose owner is gone (its lock is free: it dies with its holder, so a
/// reused PID does not keep a domain changed); one line per domain (errors too). A domain
/// whose definition changed since beyond the NIC model netsweep set (its admin's edits) is not
/// put back: the line says how, by hand. `say` tells of a restore before it waits for a
/// shutdown (up to the campaign's `shutdown_timeout`, else `grace`).
pub fn recover_stale(grace: std::time::Duration, mode: Stale, say: &dyn Fn(&str)) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(_held) = crate::platform::filelock::FileLock::try_acquire(&lock_path(&p)) else {
            continue;
        };
        let j = match load(&p) {
            Ok(Some(j)) => j,
            Ok(None) => continue,
            Err(e) => {
                out.push(e);
                continue;
            }
        };
        out.push(match stale(&p, &j, (grace, mode), say) {
            Ok(line) | Err(line) => line,
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
            original_sha256: String::new(),
            grace_s: None,
        };
        write(&p, &j).unwrap();
        let back = load(&p).unwrap().unwrap();
        assert_eq!(
            (back.original.as_str(), back.domain.as_str()),
            ("<domain/>", "vm1")
        );
        assert_eq!(
            std::fs::read_to_string(saved_definition(&p)).unwrap(),
            "<domain/>"
        );
    }

    /// Regression (outside audit of issue 42): with the journal removed and its saved original
    /// left, the next run took the changed definition for the original and wrote it over the
    /// saved copy.
    #[test]
    fn a_saved_original_without_its_journal_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("vm-0.json");
        assert_eq!(orphaned_original(&journal), Ok(()));
        std::fs::write(saved_definition(&journal), "<domain/>").unwrap();
        let e = orphaned_original(&journal).unwrap_err();
        assert!(e.contains("virsh define"), "{e}");
        assert!(e.contains("journal"), "{e}");
    }

    /// Every spelling of one domain shares a journal when libvirt names it.
    #[test]
    fn spellings_of_one_domain_share_its_journal() {
        let id = Some("0d1c-uuid");
        assert_eq!(
            path_of(id, "vm1", None),
            path_of(id, "0d1c-uuid", Some("qemu:///system"))
        );
        assert_ne!(
            path_of(None, "vm1", None),
            path_of(None, "vm1", Some("qemu:///system"))
        );
    }

    /// Regression: a truncated journal made the next run take the changed definition for the
    /// original, overwrite the journal and "restore" the change, with rc 0.
    #[test]
    fn a_damaged_journal_stops_with_the_virsh_define_of_the_saved_original() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("vm1-0000.json");
        let j = Journal {
            uri: None,
            domain: "vm1".into(),
            original: "<domain><name>vm1</name></domain>".into(),
            was_running: true,
            owner_pid: 7,
            created_unix: 1.5,
            original_sha256: String::new(),
            grace_s: None,
        };
        write(&p, &j).unwrap();
        let whole = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, &whole[..whole.len() / 2]).unwrap();
        let e = load(&p).unwrap_err();
        assert!(
            e.contains("cannot be read") && e.contains("virsh define"),
            "{e}"
        );
        assert!(
            e.contains(&saved_definition(&p).display().to_string()),
            "{e}"
        );
        // A journal whose original was changed after it was written is not trusted either.
        std::fs::write(&p, whole.replace("vm1</name>", "vm2</name>")).unwrap();
        assert!(load(&p).unwrap_err().contains("checksum"));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(load(&p), Ok(None));
    }
}
