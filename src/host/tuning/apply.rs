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
            errors.push(format!(
                "{k} cannot be changed by this user on {}: changing sysctls needs root",
                t.id()
            ));
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
            crate::paste::netsweep(&["tune", "restore", "--target", &target_arg(t)])
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
