//! Checking a profile against a target (everything at once, nothing written on a problem)
//! and applying it, journaled and read back.

use super::*;

/// Options of `apply`.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// Allow host-wide keys on a namespace target.
    pub allow_host_wide: bool,
    /// Owner process (restores at its end); `None` keeps the settings until `tune restore`.
    pub owner_pid: Option<u32>,
}

/// The profile as it is written on `t`, one of a lab's hosts `all`: where another host is a
/// guest (a kernel of its own, `Target::Place`) and `t` a network namespace of this machine,
/// the keys that cannot act in a namespace (host-wide ones such as `net.core.rmem_max`,
/// read-only there) are the guest's alone, and the keys left out of `t`'s. A VM trial could
/// not sweep the seeds' `rmem_max` with host b a guest: host a's namespace refused it, though
/// a already read the machine's value and only b's kernel had its own.
pub fn as_on(t: &Target, p: &Profile, all: &[Target]) -> (Profile, Vec<String>) {
    let beside_a_kernel = all.iter().any(|o| matches!(o, Target::Place(_)));
    if !beside_a_kernel || !matches!(t, Target::Netns(_)) {
        return (p.clone(), Vec::new());
    }
    let mut mine = p.clone();
    let mut left = Vec::new();
    mine.linux.retain(|k, _| {
        let acts = trial::in_namespace(k).is_none();
        if !acts {
            left.push(k.clone());
        }
        acts
    });
    // A namespace is Linux's: a FreeBSD table beside keys all left out is not "a profile
    // without settings for this system".
    if mine.linux.is_empty() {
        mine.freebsd.clear();
    }
    (mine, left)
}

/// Checks everything a profile would write on a target; every problem at once.
pub fn validate(t: &Target, p: &Profile, opts: &ApplyOptions) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let os = t.os();
    if let Some(e) = profile::missing_table(p, os) {
        return Err(vec![e]);
    }
    for (k, v) in &p.table(os) {
        if let Err(e) = profile::check_for(os, k, v) {
            errors.push(e);
            continue;
        }
        // Tried first: the true reason a key cannot act in a namespace, whatever is allowed.
        if matches!(t, Target::Netns(_))
            && let Some(why) = trial::in_namespace(k)
        {
            errors.push(format!(
                "{k} cannot act on {}: {why}; {}",
                t.id(),
                trial::ELSEWHERE
            ));
            continue;
        }
        if matches!(t, Target::Netns(_))
            && profile::scope(k) == Some(Scope::HostWide)
            && !opts.allow_host_wide
        {
            errors.push(format!("{k} is host-wide, not per namespace: changing it on {} changes the whole host (leave it out, e.g. with the built-in high-bdp-ns instead of high-bdp; or allow it: --allow-host-wide, or allow_host_wide = true in a plan's [target])", t.id()));
            continue;
        }
        if let Err(e) = t.read(k) {
            errors.push(format!("{e:#}"));
        } else if !t.writable(k) {
            // Root is refused where the file is read-only: a host-wide key inside a network
            // namespace (a remote netsweep tuning the namespace it runs in said "needs root").
            let why = if crate::platform::process::is_root() {
                "it is read-only here, even for root (inside a network namespace, host-wide keys \
                 such as net.core.* are)"
            } else {
                "changing sysctls needs root"
            };
            errors.push(format!("{k} cannot be changed on {}: {why}", t.id()));
        } else if matches!(t, Target::Place(_))
            && let Some(why) = trial::read_back(t, k)
        {
            errors.push(why);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Applies a profile: validate, journal, write, verify. On any failure what was written is
/// restored.
pub fn apply(t: &Target, p: &Profile, opts: &ApplyOptions) -> anyhow::Result<Vec<Entry>> {
    if let Some(j) = read_journal(t) {
        bail!(
            "{} is already tuned with profile {} ({} settings): run `{}` first",
            t.id(),
            j.profile,
            j.entries.len(),
            restore_command(t)
        );
    }
    validate(t, p, opts).map_err(|e| {
        anyhow::anyhow!(
            "profile {} was not applied, nothing was written:\n  {}",
            p.name,
            e.join("\n  ")
        )
    })?;
    let mut entries = Vec::new();
    for (k, v) in p.table(t.os()) {
        let original = t.read(&k)?;
        let applied = if p.raise_only {
            profile::raised(&original, &v)
        } else {
            normalize(&v)
        };
        entries.push(Entry {
            key: k,
            original,
            applied,
        });
    }
    let journal = Journal {
        target: t.id(),
        profile: p.name.clone(),
        owner_pid: opts.owner_pid,
        created_unix: crate::platform::clock::now_unix(),
        entries: entries.clone(),
    };
    write_journal(t, &journal)?;
    for (i, e) in entries.iter().enumerate() {
        let verified = t
            .write(&e.key, &e.applied)
            .and_then(|_| t.read(&e.key))
            .and_then(|now| {
                if now == e.applied {
                    Ok(())
                } else {
                    bail!(
                        "{} reads {now:?} after writing {:?} (the kernel adjusted or refused it)",
                        e.key,
                        e.applied
                    )
                }
            });
        if let Err(err) = verified {
            // Undo what was written, including a partial write of this key.
            let errors = put_back(t, &entries[..=i]);
            if errors.is_empty() {
                std::fs::remove_file(journal_path(t)).ok();
                bail!("{err:#}; the original values were restored");
            }
            bail!(
                "{err:#}; restoring failed too ({}), the journal {} stays for `tune restore`",
                errors.join("; "),
                journal_path(t).display()
            );
        }
    }
    Ok(entries)
}
