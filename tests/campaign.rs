//! Campaigns end to end with the real binary on loopback: the issue's plan as written, kill -9
//! at random moments with --resume, located plan errors, the runner lock, compare/export/import,
//! and a database of an older schema version.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The plan from the issue, which must be accepted as written.
const ISSUE_PLAN: &str = include_str!("fixtures/issue-plan.toml");

fn netsweep(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// (configuration label, round) -> (run id, bits_per_second, sequence) of every stored run.
fn stored(db: &Path) -> BTreeMap<(String, u32), (i64, Option<f64>, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare("SELECT c.label, r.round, r.id, r.bits_per_second, r.sequence FROM run r JOIN configuration c ON c.id = r.configuration_id")
        .unwrap();
    st.query_map([], |r| {
        Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?, r.get(4)?)))
    })
    .unwrap()
    .map(|x| x.unwrap())
    .collect()
}

#[test]
fn the_issue_plan_runs_unchanged_on_loopback_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, ISSUE_PLAN).unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap()]);
    assert!(ok, "{out}");
    let db = dir.path().join("netsweep.db");
    assert!(db.exists(), "default database beside the plan");
    let runs = stored(&db);
    assert_eq!(runs.len(), 12);
    assert!(
        runs.values().all(|(_, bps, _)| bps.unwrap_or(0.0) > 1e8),
        "{runs:?}"
    );
    // The summary table has every configuration with N = 3.
    for label in [
        "window=64K parallel=1",
        "window=64K parallel=2",
        "window=256K parallel=1",
        "window=256K parallel=2",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label} missing:\n{out}"));
        assert_eq!(line.split_whitespace().nth(2), Some("3"), "{line}");
    }
    assert!(
        out.contains("== window=64K") && out.contains("parallel=2"),
        "{out}"
    );
    // Every run keeps the engine's full result and the kernel counters.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (json, counters): (String, String) = conn
        .query_row(
            "SELECT result_json, counters_json FROM run LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The send path calibration's slot, then the plan's two intervals.
    assert_eq!(v["intervals"].as_array().unwrap().len(), 3);
    assert!(counters.contains("Tcp."), "{counters}");
    let intervals: i64 = conn
        .query_row("SELECT count(*) FROM interval", [], |r| r.get(0))
        .unwrap();
    assert!(intervals >= 12 * 2 * 2, "{intervals}");
    let facts: String = conn
        .query_row("SELECT host_facts_json FROM campaign", [], |r| r.get(0))
        .unwrap();
    assert!(
        facts.contains("kernel") && facts.contains("net.ipv4.tcp_rmem"),
        "{facts}"
    );

    let dbs = db.to_str().unwrap();
    let (ok, out) = netsweep(&[
        "compare",
        "--db",
        dbs,
        "--by",
        "window",
        "--where",
        "parallel=1",
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("x window=64K") && out.contains("+ window=256K") && out.contains("Verdict:"),
        "{out}"
    );
    // Regression: a typo in --where printed nothing and exited 0.
    for (filter, says) in [
        (
            "parallell=1",
            "has no dimension \"parallell\"; its dimensions are window, parallel",
        ),
        (
            "parallel=7",
            "dimension parallel has no value \"7\"; its values are 1, 2",
        ),
    ] {
        let (ok, out) = netsweep(&["compare", "--db", dbs, "--by", "window", "--where", filter]);
        assert!(!ok && out.contains(says), "{filter}: {out}");
    }
    let (ok, csv) = netsweep(&["export", "--db", dbs, "--format", "csv"]);
    assert!(ok);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "run,sequence,round,window,parallel,status,bits_per_second,retransmits,lost_percent,jitter_ms,error"
    );
    assert_eq!(lines.len(), 13);
    let (ok, json) = netsweep(&["export", "--db", dbs, "--format", "json"]);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        12
    );
    // Running the finished plan again starts a new campaign; a bad dimension name is explained.
    let (ok, out) = netsweep(&["compare", "--db", dbs, "--by", "colour"]);
    assert!(!ok && out.contains("no dimension \"colour\""), "{out}");
}

#[test]
fn kill_9_at_random_moments_never_loses_or_duplicates_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"150ms\"\ninterval = \"50ms\"\n[matrix]\nwindow = [\"64K\", \"1M\"]\nparallel = [1, 2, 3]\n[repeat]\ncount = 20\nseed = 11\n",
    )
    .unwrap();
    let db = dir.path().join("k.db");
    let args = |resume: bool| {
        let mut v = vec![
            "run".to_string(),
            plan.to_str().unwrap().to_string(),
            "--db".into(),
            db.to_str().unwrap().into(),
        ];
        if resume {
            v.push("--resume".into());
        }
        v
    };
    let mut seen: BTreeMap<(String, u32), (i64, Option<f64>, i64)> = BTreeMap::new();
    let mut kills = 0;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let t0 = Instant::now();
    while kills < 20 && t0.elapsed() < Duration::from_secs(240) {
        let started = db.exists()
            && rusqlite::Connection::open(&db)
                .and_then(|c| {
                    c.query_row("SELECT count(*) FROM campaign", [], |r| r.get::<_, i64>(0))
                })
                .unwrap_or(0)
                > 0;
        let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(args(started))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(150 + rng % 900));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        kills += 1;
        let now = stored(&db);
        for (k, v) in &seen {
            assert_eq!(
                now.get(k),
                Some(v),
                "run {k:?} lost or rewritten after kill {kills}"
            );
        }
        seen = now;
    }
    assert!(kills >= 20, "only {kills} kills in the time budget");
    let (ok, out) = netsweep(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{out}");
    let fin = stored(&db);
    assert_eq!(fin.len(), 120, "every (configuration, round) exactly once");
    for (k, v) in &seen {
        assert_eq!(fin.get(k), Some(v));
    }
    let seqs: HashSet<i64> = fin.values().map(|v| v.2).collect();
    assert_eq!(
        seqs,
        (0..120).collect::<HashSet<i64>>(),
        "sequence numbers follow the one schedule"
    );
}

#[test]
fn malformed_plans_are_reported_with_lines_before_any_traffic() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("bad.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"moon\"\n[test]\nwindow = \"0\"\n[matrix]\nparallel = [1, \"two\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", plan.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:2:") && err.contains("moon"), "{err}");
    assert!(err.contains("bad.toml:6:") && err.contains("two"), "{err}");
    assert!(
        !dir.path().join("netsweep.db").exists()
            || std::fs::metadata(dir.path().join("netsweep.db"))
                .unwrap()
                .len()
                > 0
    );
}

#[test]
fn an_unfinished_campaign_needs_resume_or_new_and_a_second_runner_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(&plan, "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[matrix]\nwindow = [\"64K\", \"1M\"]\n[repeat]\ncount = 20\n").unwrap();
    let p = plan.to_str().unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", p])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (ok, out) = netsweep(&["run", p]);
    assert!(!ok && out.contains("another netsweep runner"), "{out}");
    first.kill().unwrap();
    first.wait().unwrap();
    let (ok, out) = netsweep(&["run", p, "--check"]);
    assert!(!ok && out.contains("--resume"), "{out}");
    let (ok, out) = netsweep(&["run", p, "--new", "--check"]);
    assert!(ok && out.contains("is valid"), "{out}");
}

#[test]
fn a_schema_v1_database_opens_migrates_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.db"),
        &db,
    )
    .unwrap();
    let store = netsweep::campaigns::store::Store::open(&db).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        netsweep::campaigns::store::SCHEMA_VERSION
    );
    let runs = store.runs(1).unwrap();
    assert_eq!(runs.len(), 6);
    assert_eq!(runs[0].bits_per_second, Some(941e6));
    drop(store);
    let (ok, out) = netsweep(&["compare", "--db", db.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert!(out.contains("window=1M is faster than window=64K"), "{out}");
}

/// Regression: a renamed key in the stored plan facts made explain judge by the default 5%
/// in silence, and a store whose stored plan no longer parsed was migrated with the defaults
/// written in for good.
#[test]
fn stored_facts_that_cannot_be_read_stop_the_read_and_are_never_replaced_by_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.db");
    let damaged = dir.path().join("damaged.db");
    std::fs::copy(fixture, &damaged).unwrap();
    drop(netsweep::campaigns::store::Store::open(&damaged).unwrap());
    let conn = rusqlite::Connection::open(&damaged).unwrap();
    conn.execute(
        "UPDATE campaign SET plan_facts_json = replace(plan_facts_json, '\"change\"', '\"chnge\"')",
        [],
    )
    .unwrap();
    drop(conn);
    let (ok, out) = netsweep(&["explain", "--db", damaged.to_str().unwrap()]);
    assert!(
        !ok && out.contains("stored plan facts") && out.contains("do not parse"),
        "{out}"
    );
    // A key this version does not know (a renamed one) is refused too, not read as the
    // default (issue 42, audit: "guest" as "guset" read as false in silence).
    let renamed = dir.path().join("renamed.db");
    std::fs::copy(fixture, &renamed).unwrap();
    drop(netsweep::campaigns::store::Store::open(&renamed).unwrap());
    let conn = rusqlite::Connection::open(&renamed).unwrap();
    let changed = conn
        .execute(
            "UPDATE campaign SET plan_facts_json = replace(plan_facts_json, '\"guest\"', '\"guset\"')
             WHERE plan_facts_json LIKE '%\"guest\"%'",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let (ok, out) = netsweep(&["explain", "--db", renamed.to_str().unwrap()]);
    assert!(
        !ok && out.contains("do not parse") && out.contains("unknown field `guset`"),
        "{out}"
    );

    let unparsable = dir.path().join("unparsable.db");
    std::fs::copy(fixture, &unparsable).unwrap();
    let conn = rusqlite::Connection::open(&unparsable).unwrap();
    conn.execute("UPDATE campaign SET plan_toml = '[target\nkind = '", [])
        .unwrap();
    drop(conn);
    let db = unparsable.to_str().unwrap();
    let (_, migrated) = netsweep(&["migrate", "--db", db]);
    let (ok, out) = netsweep(&["explain", "--db", db]);
    assert!(!ok && out.contains("cannot be known"), "{migrated}\n{out}");
    let conn = rusqlite::Connection::open(&unparsable).unwrap();
    let facts: Option<String> = conn
        .query_row("SELECT plan_facts_json FROM campaign", [], |r| r.get(0))
        .unwrap();
    assert_eq!(facts, None, "defaults were written in");
}

#[test]
fn iperf3_results_import_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |bps: f64| {
        let bytes = bps / 8.0;
        format!(
            r#"{{"start": {{}}, "end": {{"sum_sent": {{"bits_per_second": {bps}, "retransmits": 3}}, "sum_received": {{"bits_per_second": {bps}, "bytes": {bytes}, "seconds": 1}}, "cpu_utilization_percent": {{"host_total": 50.0, "remote_total": 40.0}}}}}}"#
        )
    };
    let mut a = Vec::new();
    let mut b = Vec::new();
    for (i, bps) in [100e6, 101e6, 99e6, 100.5e6].iter().enumerate() {
        let pa = dir.path().join(format!("e1000-{i}.json"));
        std::fs::write(&pa, doc(*bps)).unwrap();
        a.push(pa.to_str().unwrap().to_string());
        let pb = dir.path().join(format!("virtio-{i}.json"));
        std::fs::write(&pb, doc(bps * 4.0)).unwrap();
        b.push(pb.to_str().unwrap().to_string());
    }
    let db = dir.path().join("i.db");
    let dbs = db.to_str().unwrap();
    let mut args = vec!["import", "--db", dbs, "--set", "nic=e1000"];
    args.extend(a.iter().map(String::as_str));
    let (ok, out) = netsweep(&args);
    assert!(ok && out.contains("campaign 1"), "{out}");
    let mut args = vec![
        "import",
        "--db",
        dbs,
        "--campaign",
        "1",
        "--set",
        "nic=virtio",
    ];
    args.extend(b.iter().map(String::as_str));
    assert!(netsweep(&args).0);
    let (ok, out) = netsweep(&["compare", "--db", dbs, "--by", "nic"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("nic=virtio is faster than nic=e1000 by 300.0%"),
        "{out}"
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"error\": \"unable to connect to server\"}").unwrap();
    let (ok, out) = netsweep(&[
        "import",
        "--db",
        dbs,
        "--set",
        "nic=x",
        bad.to_str().unwrap(),
    ]);
    assert!(!ok && out.contains("unable to connect"), "{out}");
    // Regression: the README's command a second time (another value, no --campaign) made a new
    // campaign instead of adding to the first; now the dimension's values share one.
    let db2 = dir.path().join("j.db");
    let dbs2 = db2.to_str().unwrap();
    for (nic, files) in [("e1000", &a), ("virtio", &b)] {
        let set = format!("nic={nic}");
        let mut args = vec!["import", "--db", dbs2, "--set", &set];
        args.extend(files.iter().map(String::as_str));
        let (ok, out) = netsweep(&args);
        assert!(ok && out.contains("campaign 1"), "{out}");
    }
    let (ok, out) = netsweep(&["compare", "--db", dbs2, "--by", "nic"]);
    assert!(ok && out.contains("nic=virtio is faster"), "{out}");
    let mut args = vec!["import", "--db", dbs2, "--new", "--set", "nic=x"];
    args.extend(a.iter().map(String::as_str));
    let (ok, out) = netsweep(&args);
    assert!(ok && out.contains("campaign 2"), "{out}");
}

/// Regression (issue 42, audit): `import a.json bad.json` stopped with rc 1 at the bad file but
/// kept a.json's run, without a word; and a file whose receiver claimed ten times what was sent
/// (bytes and rate both x10) was stored. Now every file is checked first and an import stores
/// all its files or none, saying so.
#[test]
fn an_import_with_one_bad_file_stores_none_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/iperf3-json/iperf3.12-tcp-P2.json"
    );
    let good = dir.path().join("a.json");
    std::fs::copy(fixture, &good).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    for key in ["bytes", "bits_per_second"] {
        let x = v["end"]["sum_received"][key].as_f64().unwrap();
        v["end"]["sum_received"][key] = serde_json::json!(x * 10.0);
    }
    let bad = dir.path().join("recv_x10.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let db = dir.path().join("i.db");
    let (dbs, goods, bads) = (
        db.to_str().unwrap(),
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
    );
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "x=1", goods]);
    assert!(ok, "{out}");
    assert_eq!(stored(&db).len(), 1);
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "x=1", goods, bads]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("recv_x10.json")
            && out.contains("end.sum_received.bytes")
            && out.contains("nothing was imported"),
        "{out}"
    );
    assert_eq!(stored(&db).len(), 1, "part of a refused import was stored");
}

/// Regression (issue 42, audit): a plan whose every run failed was answered "no dimension makes
/// a difference to goodput that matters beyond the noise of repeated runs", by `run` and
/// `explain` alike.
#[test]
fn a_campaign_whose_every_run_failed_says_so_not_that_nothing_matters() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("allfail.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[dimensions.disk]\n\
         a = { setup = \"exit 4\" }\nb = { setup = \"exit 4\" }\n[repeat]\ncount = 2\nseed = 9\n",
    )
    .unwrap();
    let db = dir.path().join("f.db");
    let dbs = db.to_str().unwrap();
    let (_, ran) = netsweep(&["run", plan.to_str().unwrap(), "--db", dbs]);
    let (_, explained) = netsweep(&["explain", "--db", dbs]);
    for out in [&ran, &explained] {
        assert!(
            out.contains("no run succeeded") && !out.contains("no dimension makes a difference"),
            "{out}"
        );
    }
}

/// Regression (a VM trial): a guest that died in the last round failed its runs there, and
/// neither `run` nor the answer said so, nor how to make up for them. A setup that fails from
/// its second run on: one failed run of `b`, said by both, with `--more 1` printed.
#[test]
fn runs_that_failed_short_of_a_skip_are_said_with_the_way_to_make_them_up() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("ran-once");
    let plan = dir.path().join("late.toml");
    std::fs::write(
        &plan,
        format!(
            "[target]\nkind = \"loopback\"\n[test]\nduration = \"300ms\"\ninterval = \"100ms\"\n\
             bitrate = \"50M\"\n[dimensions.disk]\na = {{ setup = \"true\" }}\n\
             b = {{ setup = \"test ! -e {m} && touch {m}\" }}\n[repeat]\ncount = 2\nseed = 9\n",
            m = mark.display()
        ),
    )
    .unwrap();
    let db = dir.path().join("l.db");
    let dbs = db.to_str().unwrap();
    let (_, ran) = netsweep(&["run", plan.to_str().unwrap(), "--db", dbs]);
    assert!(
        ran.contains("1 run(s) failed (the lines above say why) and are left out of the answer")
            && ran.contains("--more 1"),
        "{ran}"
    );
    let (_, explained) = netsweep(&["explain", "--db", dbs]);
    assert!(
        explained.contains(
            "1 run failed and is left out of the answer, which rests on the rest: disk=b (1 of 2)"
        ),
        "{explained}"
    );
}

/// Regression (a VM trial): `--resume` after an edit of the plan said "nothing to resume" and
/// to resume "with its plan as it was", with no way to get it. The stored plan is written
/// beside the edited one and the command printed resumes the campaign with it. (The
/// interruption: a setup that sends the runner SIGINT, once.)
#[test]
fn an_edited_plan_points_to_its_campaigns_own_plan_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("interrupted-once");
    let plan = dir.path().join("edit.toml");
    let text = format!(
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"300ms\"\ninterval = \"100ms\"\n\
         bitrate = \"50M\"\n[dimensions.disk]\na = {{ setup = \"true\" }}\n\
         b = {{ setup = \"test -e {m} || {{ touch {m}; kill -INT $PPID; }}\" }}\n[repeat]\n\
         count = 2\nseed = 9\n",
        m = mark.display()
    );
    std::fs::write(&plan, &text).unwrap();
    let db = dir.path().join("e.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(!ok && out.contains("interrupted"), "{out}");
    std::fs::write(&plan, format!("{text}# edited after the interrupt\n")).unwrap();
    let (ok, out) = netsweep(&["run", p, "--db", d, "--resume"]);
    assert!(!ok, "{out}");
    let saved = dir.path().join("edit.campaign1.toml");
    assert!(
        out.contains("`# edited after the interrupt` is new")
            && out.contains(&format!(
                "that plan as it was is now in {}",
                saved.display()
            )),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), text);
    // The command as printed finishes the campaign with its own plan.
    let cmd = out
        .split("resume it with: ")
        .nth(1)
        .and_then(|r| r.split("; or start").next())
        .unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let (ok, out) = netsweep(&words[1..]);
    assert!(ok, "{cmd}: {out}");
    assert_eq!(stored(&db).len(), 4, "{out}");
}

/// Regression: `*.db` in .gitignore once hid `tests/fixtures/schema-v1.db`, so the schema test
/// passed here and failed on a clean clone. No file the tests read may be git-ignored.
#[test]
fn test_fixtures_are_not_hidden_by_gitignore() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("git")
        .args([
            "-C",
            root,
            "ls-files",
            "--others",
            "--ignored",
            "--exclude-standard",
        ])
        .args(["--", "tests"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        eprintln!("SKIPPED test_fixtures_are_not_hidden_by_gitignore: not a git work tree");
        return;
    };
    let hidden = String::from_utf8_lossy(&out.stdout);
    assert!(
        hidden.trim().is_empty(),
        "test files ignored by .gitignore (a clean clone will miss them):\n{hidden}"
    );
}

/// Regression: `congestion = ["cubic", "bbrr"]` passed `--check` and every bbrr run failed;
/// `count = 2` passed without a word and every comparison was refused after the campaign.
#[test]
fn check_refuses_unknown_congestion_controls_and_warns_of_too_few_runs() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    let db = dir.path().join("p.db");
    // A dimension lists each value once (a repeated value is refused at parse).
    let write = |cc: &str, count: u32| {
        let list = if cc == "reno" {
            "\"reno\"".to_string()
        } else {
            format!("\"reno\", \"{cc}\"")
        };
        std::fs::write(
            &plan,
            format!(
                "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[matrix]\n\
                 congestion = [{list}]\n[repeat]\ncount = {count}\n"
            ),
        )
        .unwrap();
    };
    let check = || {
        netsweep(&[
            "run",
            plan.to_str().unwrap(),
            "--check",
            "--db",
            db.to_str().unwrap(),
        ])
    };
    write("bbrr", 3);
    let (ok, out) = check();
    assert!(!ok, "{out}");
    assert!(
        out.contains("congestion control \"bbrr\" cannot be set here"),
        "{out}"
    );
    assert!(out.contains("available:"), "{out}");
    write("reno", 2);
    let (ok, out) = check();
    assert!(ok, "{out}");
    assert!(
        out.contains("count = 2: `compare` and `explain` decide on the error pooled"),
        "{out}"
    );
    write("reno", 3);
    let (ok, out) = check();
    assert!(ok && !out.contains("warning"), "{out}");
}

/// Regression: raising `count` in a finished plan and running `--resume` said "nothing to
/// resume". `--more N` adds N interleaved rounds to the finished campaign, keeping its seed.
#[test]
fn more_rounds_extend_a_finished_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        // Paced: parallel streams share the rate, so the answer settles in a few rounds.
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"200ms\"\ninterval = \"100ms\"\n\
         bitrate = \"200M\"\n[matrix]\nparallel = [1, 2]\n[repeat]\ncount = 3\nseed = 5\n",
    )
    .unwrap();
    let db = dir.path().join("m.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(ok, "{out}");
    assert_eq!(stored(&db).len(), 6);
    // --more before a campaign exists elsewhere, and with 0, are refused with words.
    let (ok, out) = netsweep(&["run", p, "--db", d, "--more", "0"]);
    assert!(!ok && out.contains("adds nothing"), "{out}");
    let (ok, out) = netsweep(&["run", p, "--db", d, "--resume"]);
    assert!(!ok && out.contains("--more N"), "{out}");
    let (ok, out) = netsweep(&["run", p, "--db", d, "--more", "2"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("adding 2 rounds to campaign 1 (5 rounds in all)"),
        "{out}"
    );
    let runs = stored(&db);
    assert_eq!(runs.len(), 10, "{runs:?}");
    let rounds: std::collections::BTreeSet<u32> = runs.keys().map(|(_, r)| *r).collect();
    assert_eq!(rounds.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    let store = netsweep::campaigns::store::Store::open(&db).unwrap();
    let c = store.campaign(1).unwrap();
    assert_eq!(c.repetitions, 5);
    assert!(c.finished_unix.is_some());
    assert_eq!(
        store.latest_campaign().unwrap(),
        Some(1),
        "a new campaign was made"
    );
    drop(store);
    // --more auto adds what the answer says it needs, or says that it needs nothing.
    let explain = |db: &std::path::Path| -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["explain", "--db", db.to_str().unwrap(), "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let needed = explain(&db)["rounds_needed"].as_u64();
    let (ok, out) = netsweep(&["run", p, "--db", d, "--more", "auto"]);
    assert!(ok, "{out}");
    match needed {
        Some(n) => {
            assert!(
                out.contains(&format!("needs about {n} more rounds")),
                "{out}"
            );
            assert_eq!(stored(&db).len() as u64, 10 + 2 * n, "{out}");
        }
        None => {
            assert!(out.contains("no rounds to add"), "{out}");
            assert_eq!(stored(&db).len(), 10);
        }
    }
    let (ok, out) = netsweep(&["run", p, "--db", d, "--more", "some"]);
    assert!(
        !ok && out.contains("not a number of rounds or auto"),
        "{out}"
    );
}

/// `[repeat] until`: a campaign stops once the answer is clear (after `min` rounds), else at
/// `max`; the rounds stay interleaved.
#[test]
fn repeat_until_stops_when_the_answer_is_clear_and_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, repeat: &str| {
        let plan = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &plan,
            format!(
                "[target]\nkind = \"loopback\"\n[test]\nduration = \"200ms\"\ninterval = \"100ms\"\n\
                 [matrix]\nparallel = [1, 2]\n[repeat]\n{repeat}\n"
            ),
        )
        .unwrap();
        let db = dir.path().join(format!("{name}.db"));
        let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--db", db.to_str().unwrap()]);
        assert!(ok, "{out}");
        (out, stored(&db))
    };
    // Loose enough to hold after the minimum of 3 rounds on any machine (loopback runs swing by
    // 2x on a shared 2-core VM).
    let (out, runs) = run("loose", "until = \"1000%\"\nmin = 3\nmax = 8");
    assert!(
        out.contains("stopping after 3 of at most 8 rounds"),
        "{out}"
    );
    assert!(out.contains("known within ±1000.0%"), "{out}");
    assert_eq!(runs.len(), 6);
    // Regression (a trial's finding): `--more 2` on a campaign `until` stopped after 3 of at
    // most 8 rounds said "8 + 2 = 10 rounds in all" and ran one, `until` stopping it again.
    // It runs the two rounds asked, on from those that ran.
    let (plan, db) = (dir.path().join("loose.toml"), dir.path().join("loose.db"));
    let (ok, out) = netsweep(&[
        "run",
        plan.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--more",
        "2",
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("adding 2 rounds to campaign 1 (5 rounds in all)"),
        "{out}"
    );
    assert_eq!(stored(&db).len(), 10, "{out}");
    // Never met: all rounds up to max run.
    let (out, runs) = run("tight", "until = \"0.0001%\"\nmin = 2\nmax = 4");
    assert!(!out.contains("stopping after"), "{out}");
    assert_eq!(runs.len(), 8);
    // And the plan checks the keys that go with it.
    let plan = dir.path().join("bad.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[repeat]\nuntil = \"2\"\ncount = 5\nmin = 9\nmax = 4\n",
    )
    .unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--check"]);
    assert!(!ok);
    for words in [
        "is not a precision",
        "give min and max instead of count",
        "min 9 is above max 4",
    ] {
        assert!(out.contains(words), "{words}: {out}");
    }
}

/// Latency probes in a plan: every run stores its idle, loaded and added latency, and the
/// statistics and the explanation take them as metrics.
#[test]
fn latency_in_a_plan_is_stored_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"500ms\"\ninterval = \"250ms\"\n\
         latency = true\nlatency_idle = \"200ms\"\nprobe_rate = 200\n\
         [matrix]\nprotocol = [\"tcp\", \"udp\"]\n[repeat]\ncount = 3\nseed = 5\n",
    )
    .unwrap();
    let db = dir.path().join("l.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(ok, "{out}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    type Row = (Option<f64>, Option<f64>, Option<f64>, String);
    let rows: Vec<Row> = conn
        .prepare("SELECT latency_idle_p50_ms, latency_loaded_p50_ms, latency_added_ms, result_json FROM run")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(rows.len(), 6);
    for (idle, loaded, added, json) in &rows {
        let (idle, loaded, added) = (idle.unwrap(), loaded.unwrap(), added.unwrap());
        assert!(idle > 0.0 && loaded > 0.0, "{json}");
        assert!((added - (loaded - idle)).abs() < 1e-9);
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["spec"]["latency"]["probe_rate_hz"], 200);
        let in_json = v["latency"]["loaded_p50_ms"].as_f64().unwrap();
        assert!((in_json - loaded).abs() < 1e-9, "{in_json} {loaded}");
    }
    for metric in ["loaded_p50_ms", "added_latency_ms"] {
        let (ok, out) = netsweep(&["compare", "--db", d, "--metric", metric]);
        assert!(ok, "{metric}: {out}");
        assert!(out.contains("protocol=udp"), "{metric}: {out}");
    }
    let (ok, out) = netsweep(&["explain", "--db", d, "--metric", "added_latency_ms"]);
    assert!(ok && out.contains("latency added by the load"), "{out}");
    // UDP configurations are judged against the rate asked (loopback's default 1 Gbit/s) and
    // what the sender reached, not against a TCP window.
    let (ok, out) = netsweep(&["explain", "--db", d, "--json"]);
    assert!(ok, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let limits = v["limits"].as_array().unwrap();
    let udp = limits
        .iter()
        .find(|l| l["configuration"] == "protocol=udp")
        .unwrap();
    assert_eq!(udp["asked_bps"].as_f64(), Some(1e9), "{udp}");
    assert!(udp["sent_bps"].as_f64().is_some_and(|s| s > 0.0), "{udp}");
    assert!(
        ["asked rate", "sender", "other"].contains(&udp["limit"].as_str().unwrap()),
        "{udp}"
    );
    assert!(udp["text"].as_str().unwrap().contains("asked"), "{udp}");
    let tcp = limits
        .iter()
        .find(|l| l["configuration"] == "protocol=tcp")
        .unwrap();
    assert!(tcp["asked_bps"].is_null(), "{tcp}");
    // The report draws the probe's CDF, its course over time, goodput against latency, and
    // the UDP runs' arrival gaps.
    let html = dir.path().join("l.html");
    let (ok, out) = netsweep(&["report", "--db", d, "-o", html.to_str().unwrap()]);
    assert!(ok, "{out}");
    let html = std::fs::read_to_string(html).unwrap();
    for title in [
        "Loaded round-trip time (CDF)",
        "Round-trip time under load over time",
        "Goodput against latency under load",
        "UDP arrival gaps",
    ] {
        assert!(html.contains(&format!("aria-label=\"{title}\"")), "{title}");
    }
}

/// A campaign against a netsweep server puts its tests to the server before any traffic: a
/// test over the server's caps stops `--check` and the run, naming the configuration.
#[test]
fn a_far_server_refusing_a_test_stops_the_plan_before_any_traffic() {
    let limits = netsweep::traffic::spec::ServerLimits {
        max_duration: Duration::from_secs(2),
        ..Default::default()
    };
    let server = common::TestServer::start(limits);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    let db = dir.path().join("p.db");
    let write = |duration: &str| {
        std::fs::write(
            &plan,
            format!(
                "[target]\nkind = \"address\"\nhost = \"{}\"\n[test]\nduration = \"{duration}\"\n\
                 [matrix]\nwindow = [\"64K\", \"128K\"]\n[repeat]\ncount = 3\n",
                server.addr
            ),
        )
        .unwrap();
    };
    let args = |check: bool| {
        let mut a = vec!["run", plan.to_str().unwrap(), "--db", db.to_str().unwrap()];
        if check {
            a.push("--check");
        }
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    write("3s");
    for check in [true, false] {
        let argv = args(check);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (ok, out) = netsweep(&argv);
        assert!(!ok, "{out}");
        assert!(out.contains("window=64K: server refused the test"), "{out}");
        assert!(out.contains("nothing was run"), "{out}");
        assert!(
            !out.contains("window=128K: server refused"),
            "one line per refusal: {out}"
        );
    }
    write("1s");
    let argv = args(true);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (ok, out) = netsweep(&argv);
    assert!(ok && out.contains("is valid"), "{out}");
}

/// Regression: a TCP plan paced with `bitrate` ran at its targets and every configuration was
/// explained as "below its ceilings (0% of window/RTT): something else limits it"; paced TCP
/// is judged by the rate it asked for, and no window-limited share exceeds 100%.
#[test]
fn a_paced_tcp_campaign_is_explained_by_its_asked_rates() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("paced.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nprotocol = \"tcp\"\nduration = \"2s\"\n\
         [matrix]\nbitrate = [\"200M\", \"400M\"]\n[repeat]\ncount = 2\nseed = 3\n",
    )
    .unwrap();
    let db = dir.path().join("paced.db");
    let dbs = db.to_str().unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--db", dbs]);
    assert!(ok, "{out}");
    let (ok, json) = netsweep(&["explain", "--db", dbs, "--json"]);
    assert!(ok, "{json}");
    let doc: serde_json::Value = serde_json::Deserializer::from_str(&json)
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    for l in doc["limits"].as_array().unwrap() {
        let config = l["configuration"].as_str().unwrap();
        let asked = if config.contains("200M") {
            200e6
        } else {
            400e6
        };
        assert_eq!(l["limit"], "asked rate", "{config}: {}", l["text"]);
        assert_eq!(l["asked_bps"].as_f64(), Some(asked), "{l}");
        assert!(
            l["text"].as_str().unwrap().starts_with("at its asked rate"),
            "{}",
            l["text"]
        );
    }
}

/// RFC 6349's metrics are stored per TCP run (schema 7) and answered for like goodput: the
/// stored figures are the run's own JSON's, and `compare`/`explain` take them as metrics.
#[test]
fn rfc6349_metrics_are_stored_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"500ms\"\ninterval = \"250ms\"\n\
         [matrix]\nwindow = [\"64K\", \"1M\"]\n[repeat]\ncount = 3\nseed = 5\n",
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(ok, "{out}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    type Row = (Option<f64>, Option<f64>, Option<f64>, String);
    let rows: Vec<Row> = conn
        .prepare(
            "SELECT rfc6349_transfer_time_ratio, rfc6349_tcp_efficiency_percent, \
             rfc6349_buffer_delay_percent, result_json FROM run",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(rows.len(), 6);
    for (ttr, eff, delay, json) in &rows {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let m = &v["rfc6349"];
        // Loopback has no rate: no ratio; efficiency and buffer delay are measured.
        assert!(ttr.is_none(), "{m:#}");
        // The stored figures are the JSON's (serde_json reads floats to within an ulp).
        let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            (a, b) => a == b,
        };
        assert!(
            same(*eff, m["tcp_efficiency_percent"].as_f64()),
            "{eff:?} {m:#}"
        );
        assert!(
            same(*delay, m["buffer_delay_percent"].as_f64()),
            "{delay:?} {m:#}"
        );
        assert!(eff.is_some_and(|e| e > 0.0 && e <= 100.0), "{m:#}");
    }
    for metric in ["tcp_efficiency_percent", "buffer_delay"] {
        let (ok, out) = netsweep(&["compare", "--db", d, "--by", "window", "--metric", metric]);
        assert!(ok && out.contains("window=1M"), "{metric}: {out}");
    }
    let (ok, out) = netsweep(&["explain", "--db", d, "--metric", "buffer_delay_percent"]);
    assert!(ok && out.contains("RFC 6349 buffer delay"), "{out}");
}

/// Request/response tests run in campaigns (`test = "rr"`/`"crr"`, schema 8): each run's
/// transactions per second and p99 latency are stored as its JSON's `rr` says, and
/// `compare`/`explain` take them as metrics.
#[test]
fn rr_campaigns_store_transactions_and_latency() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"500ms\"\n\
         request_response = \"64,128\"\n[matrix]\ntest = [\"rr\", \"crr\"]\n\
         [repeat]\ncount = 3\nseed = 5\n",
    )
    .unwrap();
    let db = dir.path().join("r.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(ok, "{out}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    type Row = (Option<f64>, Option<f64>, String, String);
    let rows: Vec<Row> = conn
        .prepare(
            "SELECT r.rr_transactions_per_second, r.rr_latency_p99_us, r.result_json, c.label \
             FROM run r JOIN configuration c ON c.id = r.configuration_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(rows.len(), 6);
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1.0),
        (a, b) => a == b,
    };
    for (tps, p99, json, label) in &rows {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let rr = &v["rr"];
        assert_eq!(rr["test"].as_str(), label.strip_prefix("test="), "{rr:#}");
        assert_eq!(
            (rr["request_bytes"].as_u64(), rr["response_bytes"].as_u64()),
            (Some(64), Some(128))
        );
        assert!(
            same(*tps, rr["transactions_per_second"].as_f64()),
            "{tps:?} {rr:#}"
        );
        assert!(
            same(*p99, rr["latency_us"]["p99"].as_f64()),
            "{p99:?} {rr:#}"
        );
        assert!(tps.is_some_and(|t| t > 10.0), "{label}: {rr:#}");
        assert!(p99.is_some_and(|l| l > 0.0), "{label}: {rr:#}");
    }
    let (ok, out) = netsweep(&[
        "compare",
        "--db",
        d,
        "--by",
        "test",
        "--metric",
        "transactions",
    ]);
    assert!(
        ok && out.contains("test=rr") && out.contains("test=crr"),
        "{out}"
    );
    let (ok, out) = netsweep(&["explain", "--db", d, "--metric", "latency_p99"]);
    assert!(ok && out.contains("transaction latency p99"), "{out}");
    // Its effects name the dimension and both of its values.
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("test "))
            && out.lines().any(|l| l.trim_start().starts_with("rr "))
            && out.lines().any(|l| l.trim_start().starts_with("crr ")),
        "{out}"
    );
}

/// A bad request/response value in a plan is refused by `run --check` with its line.
#[test]
fn rr_plan_values_are_checked_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\ntest = \"rrr\"\n",
    )
    .unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--check"]);
    assert!(
        !ok && out.contains("plan.toml:5:") && out.contains("rrr"),
        "{out}"
    );
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nprotocol = \"udp\"\n[matrix]\ntest = [\"rr\", \"crr\"]\n",
    )
    .unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--check"]);
    assert!(
        !ok && out.contains("test=crr") && out.contains("no UDP form"),
        "{out}"
    );
}

/// A trial's finding: `run --check` of a new plan left `netsweep.db` and its lock beside it.
#[test]
fn checking_a_plan_creates_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[matrix]\nwindow = [\"64K\", \"1M\"]\n",
    )
    .unwrap();
    let (ok, out) = netsweep(&["run", plan.to_str().unwrap(), "--check"]);
    assert!(ok && out.contains("is valid"), "{out}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("p.toml")]);
}

/// A trial's finding: after a campaign of two runs per configuration, `--more auto` said every
/// comparison was decided, where none could be made (three runs are the least).
#[test]
fn more_auto_first_brings_every_configuration_to_the_runs_a_comparison_needs() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("two.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"200ms\"\ninterval = \"100ms\"\n\
         bitrate = \"100M\"\n[matrix]\nparallel = [1, 2]\n[repeat]\ncount = 2\nseed = 3\n",
    )
    .unwrap();
    let db = dir.path().join("two.db");
    let (p, d) = (plan.to_str().unwrap(), db.to_str().unwrap());
    let (ok, out) = netsweep(&["run", p, "--db", d]);
    assert!(ok, "{out}");
    let (ok, out) = netsweep(&["run", p, "--db", d, "--more", "auto"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("fewer than the 3 a comparison needs: adding 1 round(s) first"),
        "{out}"
    );
    assert_eq!(stored(&db).len(), 6, "{out}");
}

/// Regression (a trial's finding): imported files became "rounds" by their place on the
/// command line, and `compare` paired before-k with after-k: the same eight files gave
/// p = 5.6e-07 or p = 0.72 by the order of the after files. Imported runs are of no round now,
/// so the order changes nothing. And one test imported twice (in one batch, or again) is
/// refused: it counted twice and narrowed the intervals.
#[test]
fn imported_runs_are_unpaired_and_each_test_is_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let doc = |cookie: &str, bps: f64| {
        let bytes = bps / 8.0;
        format!(
            r#"{{"start": {{"cookie": "{cookie}"}}, "end": {{"sum_sent": {{"bits_per_second": {bps}, "retransmits": 0}}, "sum_received": {{"bits_per_second": {bps}, "bytes": {bytes}, "seconds": 1}}}}}}"#
        )
    };
    let file = |name: &str, bps: f64| {
        let p = dir.path().join(format!("{name}.json"));
        std::fs::write(&p, doc(name, bps)).unwrap();
        p.to_str().unwrap().to_string()
    };
    let before: Vec<String> = (0..4)
        .map(|i| file(&format!("before-{i}"), 1000e6 + 10e6 * f64::from(i)))
        .collect();
    let after: Vec<String> = (0..4)
        .map(|i| file(&format!("after-{i}"), 1005e6 + 10e6 * f64::from(i)))
        .collect();
    let mut reversed = after.clone();
    reversed.reverse();
    let mut answers = Vec::new();
    for (name, afters) in [("a.db", &after), ("b.db", &reversed)] {
        let db = dir.path().join(name);
        let dbs = db.to_str().unwrap();
        for (set, files) in [("sysctl=before", &before), ("sysctl=after", afters)] {
            let mut args = vec!["import", "--db", dbs, "--set", set];
            args.extend(files.iter().map(String::as_str));
            let (ok, out) = netsweep(&args);
            assert!(ok, "{out}");
        }
        let (ok, out) = netsweep(&["compare", "--db", dbs]);
        assert!(ok, "{out}");
        assert!(out.contains("runs unpaired: no rounds"), "{out}");
        let verdict = out
            .lines()
            .find(|l| l.starts_with("Verdict:"))
            .unwrap_or_else(|| panic!("no verdict in {out}"))
            .to_string();
        // 0.5% between sets whose runs spread by 3%: no difference that matters.
        assert!(!verdict.contains("faster"), "{verdict}");
        answers.push(verdict);
    }
    assert_eq!(
        answers[0], answers[1],
        "the files' order changed the answer"
    );
    // One test twice in a batch, and a test imported again: refused, nothing stored.
    let db = dir.path().join("a.db");
    let dbs = db.to_str().unwrap();
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "sysctl=after", &after[0]]);
    assert!(
        !ok && out.contains("already imported into campaign 1"),
        "{out}"
    );
    let fresh = file("after-9", 1040e6);
    let (ok, out) = netsweep(&[
        "import",
        "--db",
        dbs,
        "--set",
        "sysctl=after",
        &fresh,
        &fresh,
    ]);
    assert!(!ok && out.contains("the same test as"), "{out}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let runs: i64 = conn
        .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 8);
}

/// Regression (a trial's finding): a set of TCP, UDP, -P and -R tests was imported and compared
/// as one kind without a word. The import says which kinds it holds.
#[test]
fn an_import_of_different_kinds_of_test_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = |name: &str| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/iperf3-json/").to_string() + name
    };
    let db = dir.path().join("k.db");
    let (ok, out) = netsweep(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--set",
        "s=x",
        &fixture("iperf3.12-tcp-P2.json"),
        &fixture("iperf3.12-udp.json"),
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("warning: the files are of different tests: 1 x TCP, 2 streams, forward")
            && out.contains("1 x UDP, 1 stream, forward"),
        "{out}"
    );
    let (ok, out) = netsweep(&[
        "import",
        "--db",
        db.to_str().unwrap(),
        "--set",
        "s=y",
        &fixture("iperf3.12-server-tcp.json"),
    ]);
    assert!(ok && !out.contains("warning"), "{out}");
}

/// Regression (a trial's finding): before/after sessions run one after the other got confident
/// verdicts without a word (33 of 100 no-change simulations called "different"). `compare`
/// and `explain` say when no run of one set ran among the other's.
#[test]
fn sessions_apart_are_named_by_compare_and_explain() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, at: u64, bps: f64| {
        let bytes = bps / 8.0;
        let p = dir.path().join(format!("{name}.json"));
        std::fs::write(
            &p,
            format!(
                r#"{{"start": {{"cookie": "{name}", "timestamp": {{"timesecs": {at}}}}}, "end": {{"sum_sent": {{"bits_per_second": {bps}, "retransmits": 0}}, "sum_received": {{"bits_per_second": {bps}, "bytes": {bytes}, "seconds": 1}}}}}}"#
            ),
        )
        .unwrap();
        p.to_str().unwrap().to_string()
    };
    let t0 = 1_800_000_000u64;
    for (db, after_at) in [("apart.db", 1000u64), ("mixed.db", 5)] {
        let db = dir.path().join(db);
        let dbs = db.to_str().unwrap();
        let before: Vec<String> = (0..3)
            .map(|i| file(&format!("{dbs}-b{i}"), t0 + 10 * i, 1e9 + 1e7 * i as f64))
            .collect();
        let after: Vec<String> = (0..3)
            .map(|i| {
                file(
                    &format!("{dbs}-a{i}"),
                    t0 + after_at + 10 * i,
                    1e9 + 1e7 * i as f64,
                )
            })
            .collect();
        for (set, files) in [("s=before", &before), ("s=after", &after)] {
            let mut args = vec!["import", "--db", dbs, "--set", set];
            args.extend(files.iter().map(String::as_str));
            assert!(netsweep(&args).0);
        }
        let apart = after_at > 100;
        for cmd in ["compare", "explain"] {
            let (ok, out) = netsweep(&[cmd, "--db", dbs]);
            assert!(ok, "{out}");
            assert_eq!(
                out.contains("CAUTION: the runs were not interleaved: every run of s=before started before the first of s=after"),
                apart,
                "{cmd} {dbs}: {out}"
            );
        }
    }
}

/// netsweep's own `--json` documents import as iperf3's do: the rate the client printed, once
/// per test, a `--bidir` test's forward direction, and a test that failed refused.
#[test]
fn netsweep_json_results_import() {
    let server = common::TestServer::start(netsweep::traffic::spec::ServerLimits::default());
    let port = server.addr.port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let test = |name: &str, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["client", "127.0.0.1", "-p", &port, "-t", "0.5", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let path = dir.path().join(name);
        std::fs::write(&path, &out.stdout).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (path.to_str().unwrap().to_string(), doc)
    };
    let (one, one_doc) = test("one.json", &[]);
    let (two, _) = test("two.json", &[]);
    let (three, _) = test("three.json", &[]);
    let (bidir, bidir_doc) = test("bidir.json", &["--bidir"]);
    let db = dir.path().join("own.db");
    let dbs = db.to_str().unwrap();
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "run=a", &one, &two, &three]);
    assert!(ok && out.contains("imported 3 runs"), "{out}");
    // The stored rate is the document's own, and its intervals are stored with it.
    let rates: Vec<f64> = stored(&db).values().filter_map(|(_, b, _)| *b).collect();
    let printed = one_doc["summary"]["bits_per_second"].as_f64().unwrap();
    assert!(
        rates.iter().any(|r| (r - printed).abs() < 1e-6 * printed),
        "{rates:?} {printed}"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let intervals: i64 = conn
        .query_row("SELECT count(*) FROM interval", [], |r| r.get(0))
        .unwrap();
    assert!(intervals > 0);
    // Once per test.
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "run=a", &one]);
    assert!(!ok && out.contains("already imported"), "{out}");
    // --bidir: the forward direction's rate.
    let (ok, out) = netsweep(&["import", "--db", dbs, "--set", "run=b", &bidir]);
    assert!(ok && out.contains("only the forward direction"), "{out}");
    let forward = bidir_doc["directions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["flow"] == "client_to_server")
        .unwrap()["summary"]["bits_per_second"]
        .as_f64()
        .unwrap();
    let b: Vec<f64> = stored(&db)
        .iter()
        .filter(|((label, _), _)| label == "run=b")
        .filter_map(|(_, (_, r, _))| *r)
        .collect();
    assert_eq!(b.len(), 1);
    assert!((b[0] - forward).abs() < 1e-6 * forward, "{b:?} {forward}");
    // A test that ended early is no run.
    let mut failed = one_doc.clone();
    failed["error"] = "the server stopped".into();
    failed["start"]["cookie"] = "another".into();
    let bad = dir.path().join("failed.json");
    std::fs::write(&bad, failed.to_string()).unwrap();
    let (ok, out) = netsweep(&[
        "import",
        "--db",
        dbs,
        "--set",
        "run=c",
        bad.to_str().unwrap(),
    ]);
    assert!(
        !ok && out.contains("the test ended early: the server stopped"),
        "{out}"
    );
}
