//! The commands and differences a campaign's run prints, as the user pastes or reads them.

use crate::cli::RunArgs;

/// `run` of this campaign, as the user would paste it, with `tail` after it: the running
/// binary, the plan as given, and `--db` when the user named one (without it the database
/// beside the plan is meant).
fn run_command(a: &RunArgs, tail: &[&str]) -> String {
    let mut args: Vec<std::ffi::OsString> = vec!["run".into(), a.plan.clone().into()];
    if let Some(db) = &a.db {
        args.push("--db".into());
        args.push(db.clone().into());
    }
    args.extend(tail.iter().map(|t| t.into()));
    crate::paste::netsweep(&args)
}

/// The command that adds rounds to this campaign (`--more` with `n`: a count or "auto").
pub fn more_command(a: &RunArgs, n: &str) -> String {
    run_command(a, &["--more", n])
}

/// The command that continues this campaign.
pub fn resume_command(a: &RunArgs) -> String {
    run_command(a, &["--resume"])
}

/// Writes the stored plan of campaign `id` beside `plan` (`NAME.campaignID.toml`), or finds it
/// there already; `None` when that name holds something else or cannot be written.
pub fn saved_plan(plan: &std::path::Path, id: i64, text: &str) -> Option<std::path::PathBuf> {
    let stem = plan.file_stem()?.to_string_lossy().to_string();
    let saved = plan.with_file_name(format!("{stem}.campaign{id}.toml"));
    match std::fs::read_to_string(&saved) {
        Ok(there) if there == text => Some(saved),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::platform::outfile::write(&saved, text).ok()?;
            Some(saved)
        }
        Err(_) => None,
    }
}

/// The first line where two plan texts differ: "line 12: `memory = 4608` became `memory =
/// 7000`", or a line one of them lacks.
pub fn first_difference(was: &str, now: &str) -> String {
    let (w, n): (Vec<&str>, Vec<&str>) = (was.lines().collect(), now.lines().collect());
    let at = w
        .iter()
        .zip(&n)
        .position(|(x, y)| x.trim_end() != y.trim_end())
        .unwrap_or(w.len().min(n.len()));
    match (w.get(at), n.get(at)) {
        (Some(x), Some(y)) => format!("line {}: `{}` became `{}`", at + 1, x.trim(), y.trim()),
        (Some(x), None) => format!("line {}: `{}` is gone", at + 1, x.trim()),
        (None, Some(y)) => format!("line {}: `{}` is new", at + 1, y.trim()),
        (None, None) => "only in white space".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_plan_is_told_by_its_first_differing_line() {
        let was = "name = \"nic\"\n[target]\nmemory = 4608\n";
        assert_eq!(
            first_difference(was, "name = \"nic\"\n[target]\nmemory = 7000\n"),
            "line 3: `memory = 4608` became `memory = 7000`"
        );
        assert_eq!(
            first_difference(was, "name = \"nic\"\n[target]\nmemory = 4608\nvm = \"b\"\n"),
            "line 4: `vm = \"b\"` is new"
        );
        assert_eq!(
            first_difference(was, "name = \"nic\"\n[target]\n"),
            "line 3: `memory = 4608` is gone"
        );
        assert_eq!(
            first_difference(was, "name = \"nic\"  \n[target]\nmemory = 4608"),
            "only in white space"
        );
    }
}
