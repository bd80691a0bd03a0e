//! How far a journal's profile is applied on its target now (pure): each key's current value
//! against the value the journal meant to apply and the original. `tune apply` writes the
//! journal before its first write, so an apply killed half way leaves a journal whose keys are
//! partly applied; `tune status` says so instead of "applied".

use super::{Entry, Journal};

/// One key of a journal, with the value it has now.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyState {
    /// Holds the value the profile applies.
    Applied,
    /// Still holds its original value: never written (or put back).
    Original,
    /// Holds something else: changed since, or a write the kernel adjusted.
    Other(String),
    /// Could not be read.
    Unreadable(String),
}

/// The profile of a journal as a whole.
#[derive(Debug, Clone, PartialEq)]
pub enum ProfileState {
    /// Every key holds its applied value.
    Applied,
    /// Some keys hold their applied values, others not (`applied` keys out of `total`).
    Partial { applied: Vec<String>, total: usize },
    /// No key holds its applied value (an apply interrupted before its first write).
    NotApplied,
}

/// Each entry's state, given its current value (`read`).
pub fn key_states(
    j: &Journal,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Vec<(Entry, KeyState)> {
    j.entries
        .iter()
        .map(|e| {
            let s = match read(&e.key) {
                Err(err) => KeyState::Unreadable(err),
                Ok(now) if now == e.applied => KeyState::Applied,
                Ok(now) if now == e.original => KeyState::Original,
                Ok(now) => KeyState::Other(now),
            };
            (e.clone(), s)
        })
        .collect()
}

/// The whole profile's state from its keys'.
pub fn profile_state(keys: &[(Entry, KeyState)]) -> ProfileState {
    let applied: Vec<String> = keys
        .iter()
        .filter(|(_, s)| *s == KeyState::Applied)
        .map(|(e, _)| e.key.clone())
        .collect();
    if applied.len() == keys.len() {
        ProfileState::Applied
    } else if applied.is_empty() {
        ProfileState::NotApplied
    } else {
        ProfileState::Partial {
            applied,
            total: keys.len(),
        }
    }
}

/// The status line of a journal's profile on `target`; `restore` is the command that puts
/// its originals back there.
pub fn headline(
    target: &str,
    j: &Journal,
    state: &ProfileState,
    owner: &str,
    restore: &str,
) -> String {
    match state {
        ProfileState::Applied => format!("{target}: profile {} applied ({owner})", j.profile),
        ProfileState::Partial { applied, total } => format!(
            "{target}: profile {} PARTIALLY applied: {} of {total} keys ({}); an apply was \
             interrupted or the others changed since ({owner}); `{restore}` puts the originals \
             back",
            j.profile,
            applied.len(),
            applied.join(", "),
        ),
        ProfileState::NotApplied => format!(
            "{target}: profile {} NOT applied: no key holds its value (an apply interrupted \
             before its first write, or changed since) ({owner}); `{restore}` clears the journal",
            j.profile,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal() -> Journal {
        let e = |k: &str, o: &str, a: &str| Entry {
            key: k.into(),
            original: o.into(),
            applied: a.into(),
        };
        Journal {
            target: "local".into(),
            profile: "atkp".into(),
            owner_pid: None,
            created_unix: 0.0,
            entries: vec![
                e("net.core.rmem_max", "212992", "67108864"),
                e("net.core.wmem_max", "212992", "67108864"),
                e(
                    "net.ipv4.tcp_rmem",
                    "4096 131072 6291456",
                    "4096 131072 67108864",
                ),
                e(
                    "net.ipv4.tcp_wmem",
                    "4096 16384 4194304",
                    "4096 16384 67108864",
                ),
                e("net.core.default_qdisc", "pfifo_fast", "fq"),
            ],
        }
    }

    /// The journal state of an apply killed after `written` keys.
    fn killed_after(written: usize) -> Vec<(Entry, KeyState)> {
        let j = journal();
        let now: Vec<(String, String)> = j
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let v = if i < written { &e.applied } else { &e.original };
                (e.key.clone(), v.clone())
            })
            .collect();
        key_states(&j, &|k| {
            now.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| "no such key".to_string())
        })
    }

    #[test]
    fn an_interrupted_tune_apply_is_reported_partially_applied() {
        let keys = killed_after(3);
        let state = profile_state(&keys);
        assert_eq!(
            state,
            ProfileState::Partial {
                applied: vec![
                    "net.core.rmem_max".into(),
                    "net.core.wmem_max".into(),
                    "net.ipv4.tcp_rmem".into()
                ],
                total: 5
            }
        );
        let line = headline(
            "local",
            &journal(),
            &state,
            "kept until `tune restore`",
            "netsweep tune restore --target ssh:root@h --ssh-option Port=2222",
        );
        assert!(line.contains("PARTIALLY applied: 3 of 5 keys"), "{line}");
        assert!(
            line.contains("`netsweep tune restore --target ssh:root@h --ssh-option Port=2222`"),
            "{line}"
        );
        assert!(!line.contains("profile atkp applied"), "{line}");
        assert_eq!(keys[4].1, KeyState::Original);
    }

    #[test]
    fn complete_and_unstarted_applies_are_told_apart() {
        assert_eq!(profile_state(&killed_after(5)), ProfileState::Applied);
        assert_eq!(profile_state(&killed_after(0)), ProfileState::NotApplied);
        let line = headline(
            "local",
            &journal(),
            &ProfileState::Applied,
            "held by process 7",
            "netsweep tune restore",
        );
        assert_eq!(line, "local: profile atkp applied (held by process 7)");
    }
}
