//! Commands netsweep suggests, written so they run as printed when pasted into a shell: the
//! binary that is running (`std::env::current_exe`, so a netsweep that is not on the `PATH`
//! still works), every word quoted for a POSIX shell where it needs it. Called by `app` for
//! its hints (`lab up`, the resume hint after Ctrl-C, skipped configurations).

use std::ffi::OsStr;

/// `word` as a POSIX shell reads it back: unchanged when it holds only characters no shell
/// treats specially, else in single quotes (a quote inside becomes `'\''`).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The running netsweep binary, quoted; `netsweep` when the system cannot say (then the
/// hint needs netsweep on the PATH, as before).
pub fn program() -> String {
    std::env::current_exe()
        .ok()
        .map(|p| quote(&installed(&p.to_string_lossy())))
        .unwrap_or_else(|| "netsweep".into())
}

/// Linux names a binary replaced while it runs (an upgrade during a campaign) "PATH
/// (deleted)": the path, where the new one stands and pastes.
fn installed(path: &str) -> String {
    match path.strip_suffix(" (deleted)") {
        Some(p) if std::path::Path::new(p).exists() => p.to_string(),
        _ => path.to_string(),
    }
}

/// `ARGS` as a command line of the running netsweep: `/path/to/netsweep ARG ...`.
pub fn netsweep<S: AsRef<OsStr>>(args: &[S]) -> String {
    let mut line = program();
    for a in args {
        line.push(' ');
        line.push_str(&quote(&a.as_ref().to_string_lossy()));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary replaced while it ran reads "PATH (deleted)"; the hint names PATH, where the
    /// new one stands (a campaign's hints after a rebuild read `'.../netsweep (deleted)'`).
    #[test]
    fn a_binary_replaced_while_it_runs_is_named_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("netsweep");
        std::fs::write(&bin, b"").unwrap();
        let shown = format!("{} (deleted)", bin.display());
        assert_eq!(installed(&shown), bin.display().to_string());
        // Gone for good: as the system says it.
        std::fs::remove_file(&bin).unwrap();
        assert_eq!(installed(&shown), shown);
    }

    #[test]
    fn words_a_shell_would_change_are_quoted() {
        assert_eq!(quote("run"), "run");
        assert_eq!(quote("/tmp/a b/plan.toml"), "'/tmp/a b/plan.toml'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }

    /// The hint is parsed back by a real shell into the words it was made of.
    #[test]
    fn a_shell_reads_the_command_back_word_for_word() {
        let args = [
            "run",
            "/tmp/my plans/it's.toml",
            "--db",
            "a;b.db",
            "--resume",
        ];
        let line = netsweep(&args);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {}", line))
            .output()
            .expect("sh runs");
        let words: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(words[0], std::env::current_exe().unwrap().to_string_lossy());
        assert_eq!(&words[1..], &args);
    }
}
