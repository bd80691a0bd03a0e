//! The journal of what a target had before tuning: written before the first change, read to
//! put everything back (at the end, after a failure, or by the next command after a crash).

use super::*;

/// One changed setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub original: String,
    pub applied: String,
}

/// The record of what a target had before tuning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub target: String,
    pub profile: String,
    /// The process that restores it when it ends; `None` for `tune apply` without `--hold`,
    /// which stays until `tune restore`.
    pub owner_pid: Option<u32>,
    pub created_unix: f64,
    pub entries: Vec<Entry>,
}

/// Directory of journals: `/run/netsweep/tuning`, or the user's runtime directory.
pub fn journal_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("NETSWEEP_RUNTIME_DIR") {
        return PathBuf::from(d).join("tuning");
    }
    if crate::platform::process::is_root() {
        return PathBuf::from("/run/netsweep/tuning");
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("netsweep/tuning")
}

pub(super) fn journal_path(t: &Target) -> PathBuf {
    journal_dir().join(format!("{}.json", t.id()))
}

pub fn read_journal(t: &Target) -> Option<Journal> {
    serde_json::from_str(&std::fs::read_to_string(journal_path(t)).ok()?).ok()
}

/// Writes the journal durably: temporary file, fsync, rename, fsync of the directory.
pub(super) fn write_journal(t: &Target, j: &Journal) -> anyhow::Result<()> {
    let dir = journal_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = journal_path(t);
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(j)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(&dir)?.sync_all()?;
    Ok(())
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub profile: String,
    pub entries: Vec<Entry>,
    /// The owner that died without restoring, when this was crash recovery.
    pub crashed_owner: Option<u32>,
    /// The target no longer exists (its settings went with it): nothing was written.
    pub target_gone: bool,
}

impl Restored {
    /// One line on what crash recovery did on `t`.
    pub fn recovery_line(&self, t: &Target) -> String {
        let owner = self.crashed_owner.unwrap_or(0);
        if self.target_gone {
            format!(
                "dropped the tuning journal of profile {} on {} left by process {owner}: {} no longer exists, and its settings went with it",
                self.profile,
                t.id(),
                t.id()
            )
        } else {
            format!(
                "restored {} setting(s) of profile {} on {} left by process {owner} that ended without restoring them",
                self.entries.len(),
                self.profile,
                t.id()
            )
        }
    }
}

/// Restores a journal left by a process that died; `None` if there is none to recover.
pub fn recover(t: &Target) -> anyhow::Result<Option<Restored>> {
    match read_journal(t) {
        Some(j)
            if j.owner_pid
                .is_some_and(|p| !crate::platform::process::alive(p)) =>
        {
            let owner = j.owner_pid;
            let mut r = restore(t)?.context("journal vanished")?;
            r.crashed_owner = owner;
            Ok(Some(r))
        }
        _ => Ok(None),
    }
}

/// Whether the target itself is gone with its kernel (`SysctlPlace::gone`).
pub(super) fn gone(t: &Target) -> bool {
    match t {
        Target::Place(p) => p.gone(),
        _ => false,
    }
}

/// Writes the originals of `entries` back (last change first); keys already at their
/// original value are left alone. Returns the errors.
pub(super) fn put_back(t: &Target, entries: &[Entry]) -> Vec<String> {
    let mut errors = Vec::new();
    for e in entries.iter().rev() {
        if t.read(&e.key).is_ok_and(|v| v == normalize(&e.original)) {
            continue;
        }
        if let Err(err) = t.write(&e.key, &e.original) {
            errors.push(format!("{err:#}"));
            continue;
        }
        match t.read(&e.key) {
            Ok(v) if v == normalize(&e.original) => {}
            Ok(v) => errors.push(format!(
                "{} reads {v:?} after restoring {:?}",
                e.key, e.original
            )),
            Err(err) => errors.push(format!("{err:#}")),
        }
    }
    errors
}

/// Puts every journaled key back and removes the journal. `None`: nothing to restore.
pub fn restore(t: &Target) -> anyhow::Result<Option<Restored>> {
    let Some(j) = read_journal(t) else {
        return Ok(None);
    };
    let target_gone = gone(t);
    let errors = if target_gone {
        Vec::new()
    } else {
        put_back(t, &j.entries)
    };
    if !errors.is_empty() {
        bail!(
            "restoring {} left the journal {} in place: {}",
            t.id(),
            journal_path(t).display(),
            errors.join("; ")
        );
    }
    std::fs::remove_file(journal_path(t)).ok();
    Ok(Some(Restored {
        profile: j.profile,
        entries: j.entries,
        crashed_owner: None,
        target_gone,
    }))
}
