//! Every command netsweep suggests runs as printed: each hint is taken from the real output and
//! run by a shell whose PATH has no netsweep (so the hint must name the binary), from the
//! directory the user was in. Also a real campaign with one broken configuration: skipped after
//! two rounds, the others finished, and the printed resume command retries it after the fix.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A PATH with the system's tools and no netsweep.
const BARE_PATH: &str = "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin";

/// The text after `marker` on the first line of `out` that has it.
fn hint_after<'a>(out: &'a str, marker: &str) -> &'a str {
    let line = out
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} in:\n{out}"));
    let at = line.find(marker).unwrap() + marker.len();
    line[at..].trim()
}

/// Runs `line` with `sh -c` in `dir` without netsweep on the PATH.
fn shell(dir: &Path, line: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", BARE_PATH)
        .env("NETSWEEP_RUNTIME_DIR", dir.join("rt"))
        .output()
        .expect("sh runs")
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Regression: after Ctrl-C the hint was `netsweep run int.toml --resume`, which dropped the
/// `--db` given and said "nothing to resume" when pasted.
#[test]
fn the_resume_hint_after_ctrl_c_keeps_the_db_and_runs_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("int.toml"),
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[matrix]\nparallel = [1, 2]\n\
         [repeat]\ncount = 3\nseed = 5\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("my results")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "int.toml", "--db", "my results/int.db"])
        .current_dir(dir.path())
        .env("NETSWEEP_RUNTIME_DIR", dir.path().join("rt"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the first run is stored.
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut seen = String::new();
    let t0 = Instant::now();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        seen.push_str(&line);
        if line.contains("[1/6]") || line.starts_with("  1/6") || line.contains(" 1/6 ") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{seen}");
    }
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    let status = child.wait().unwrap();
    let out = seen + &rest;
    assert_eq!(status.code(), Some(130), "{out}");
    let hint = hint_after(&out, "continue with:");
    assert!(hint.contains("--db 'my results/int.db'"), "{hint}");
    let resumed = shell(dir.path(), hint);
    let t = text(&resumed);
    assert!(resumed.status.success(), "{hint}: {t}");
    assert!(t.contains("resuming campaign"), "{t}");
    let conn = rusqlite::Connection::open(dir.path().join("my results/int.db")).unwrap();
    let runs: i64 = conn
        .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 6);
}

/// Runs a loopback campaign of `count` rounds over `matrix` (TOML lines) and a dimension `disk`
/// whose value `broken` fails its setup until the file `fixed` exists (the user's fix).
fn broken_campaign(dir: &Path, matrix: &str, count: u32) -> std::process::Output {
    std::fs::write(
        dir.join("plan.toml"),
        format!(
            "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n{matrix}\
             [dimensions.disk]\ngood = {{ setup = \"true\" }}\n\
             broken = {{ setup = \"test -e fixed || {{ echo 'mount /dev/sdz1 failed' >&2; exit 3; }}\" }}\n\
             [repeat]\ncount = {count}\nseed = 9\n"
        ),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "plan.toml", "--db", "b.db"])
        .current_dir(dir)
        .env("NETSWEEP_RUNTIME_DIR", dir.join("rt"))
        .output()
        .unwrap()
}

#[test]
fn a_broken_configuration_is_skipped_after_two_rounds_and_retried_by_the_printed_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = broken_campaign(dir.path(), "[matrix]\nparallel = [1, 2]\n", 3);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    // The reason once per broken configuration, not for every skipped run.
    let skips: Vec<&str> = t.lines().filter(|l| l.contains("skipping ")).collect();
    assert_eq!(skips.len(), 2, "{t}");
    assert!(
        skips
            .iter()
            .all(|l| l.contains("disk=broken") && l.contains("rounds 1 and 2")),
        "{skips:?}"
    );
    let conn = rusqlite::Connection::open(dir.path().join("b.db")).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM run WHERE status = 'ok'"), 6);
    assert_eq!(count("SELECT count(*) FROM run WHERE status = 'failed'"), 4);
    assert_eq!(count("SELECT count(*) FROM skipped"), 2);
    // The fix, then the printed command.
    std::fs::write(dir.path().join("fixed"), "").unwrap();
    let hint = hint_after(&t, "retry them with:").to_string();
    let resumed = shell(dir.path(), &hint);
    let r = text(&resumed);
    assert!(resumed.status.success(), "{hint}: {r}");
    assert!(r.contains("retrying 2 configuration(s)"), "{r}");
    assert_eq!(count("SELECT count(*) FROM run WHERE status = 'ok'"), 8);
    assert_eq!(count("SELECT count(*) FROM skipped"), 0);
    assert_eq!(
        count("SELECT count(*) FROM campaign WHERE finished_unix IS NOT NULL"),
        1
    );
}

/// A configuration that fails to the campaign's last round has no runs left for `--resume`
/// (a trial's resume said "retrying" and ran nothing): the campaign is finished, and the
/// printed `--more auto` adds the rounds it needs once fixed.
#[test]
fn a_configuration_failing_to_the_last_round_is_given_rounds_by_the_printed_more() {
    let dir = tempfile::tempdir().unwrap();
    let out = broken_campaign(dir.path(), "", 2);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("none of their runs is left to retry"), "{t}");
    assert!(!t.contains("--resume"), "{t}");
    let conn = rusqlite::Connection::open(dir.path().join("b.db")).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT count(*) FROM campaign WHERE finished_unix IS NOT NULL"),
        1
    );
    std::fs::write(dir.path().join("fixed"), "").unwrap();
    let hint = hint_after(&t, "add the rounds they need with:").to_string();
    assert!(hint.ends_with("--more auto"), "{hint}");
    let more = shell(dir.path(), &hint);
    let m = text(&more);
    assert!(more.status.success(), "{hint}: {m}");
    // The fewest successful runs were 0: three rounds bring the broken one to a comparison's 3.
    assert_eq!(
        count(
            "SELECT count(*) FROM run r JOIN configuration c ON r.configuration_id = c.id \
               WHERE r.status = 'ok' AND c.label = 'disk=broken'"
        ),
        3,
        "{m}"
    );
}

#[test]
fn a_campaign_where_every_configuration_fails_stops_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n\
         [dimensions.disk]\na = { setup = \"exit 4\" }\nb = { setup = \"exit 4\" }\n\
         [repeat]\ncount = 5\nseed = 9\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "plan.toml", "--db", "b.db"])
        .current_dir(dir.path())
        .env("NETSWEEP_RUNTIME_DIR", dir.path().join("rt"))
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("every configuration is failing"), "{t}");
    let conn = rusqlite::Connection::open(dir.path().join("b.db")).unwrap();
    let runs: i64 = conn
        .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 4, "two rounds of two, then the stop: {t}");
}

/// `lab up`'s hints (the server and client lines, and `lab down`) run as printed.
#[test]
fn the_lab_up_hints_run_as_printed() {
    if !common::root_or_skip("the_lab_up_hints_run_as_printed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = format!("hint{}", std::process::id() % 100_000);
    let up = common::netsweep_ok(dir.path(), &["lab", "up", &name]);
    // Removes the lab even when an assertion fails.
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(env!("CARGO_BIN_EXE_netsweep"))
                .args(["lab", "down", &self.0])
                .output();
        }
    }
    let _down = Down(name.clone());
    let tryline = hint_after(&up, "try:");
    let (server, client) = tryline
        .split_once(" &")
        .unwrap_or_else(|| panic!("{tryline}"));
    let mut srv = Command::new("sh")
        .arg("-c")
        .arg(format!("exec {server}"))
        .current_dir(dir.path())
        .env("PATH", BARE_PATH)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut ran = None;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(15) {
        let o = shell(dir.path(), &format!("{} -t 1", client.trim()));
        if o.status.success() {
            ran = Some(text(&o));
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = srv.kill();
    let _ = srv.wait();
    let ran = ran.unwrap_or_else(|| panic!("the client hint never ran: {client}"));
    assert!(ran.contains("receiver"), "{ran}");
    let down = shell(dir.path(), hint_after(&up, "remove it with:"));
    assert!(down.status.success(), "{}", text(&down));
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&ns.stdout).contains(&name),
        "lab {name} left"
    );
}

/// Regression (a trial's finding): `lab up NAME --vm b` hinted `lab exec NAME a -- netsweep
/// client ...`, which failed pasted ("exec of \"netsweep\" failed": namespace a has no netsweep on
/// its PATH, only the guest has). The hint names this binary, and runs as printed.
#[test]
fn the_vm_lab_up_client_hint_runs_as_printed() {
    let test = "the_vm_lab_up_client_hint_runs_as_printed";
    if !common::root_or_skip(test) || !common::tool_or_skip(test, "qemu-system-x86_64") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = format!("hv{}", std::process::id() % 100_000);
    let _down = common::LabDown(name.clone());
    let up = common::netsweep_ok(dir.path(), &["lab", "up", &name, "--vm", "b"]);
    let tryline = hint_after(&up, "try:");
    let client = tryline
        .split_once("     (")
        .map_or(tryline, |(c, _)| c)
        .trim();
    let ran = shell(dir.path(), &format!("{client} -t 1"));
    assert!(ran.status.success(), "{client}: {}", text(&ran));
    assert!(text(&ran).contains("receiver"), "{}", text(&ran));
    let down = shell(dir.path(), hint_after(&up, "remove it with:"));
    assert!(down.status.success(), "{}", text(&down));
}
