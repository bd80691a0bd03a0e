//! Files netsweep writes and stores it reads (issue 31, items 8 and 9): output files never
//! follow a symlink at their path (`report -o`, the Markdown report's SVGs), a store path that
//! is a symlink to a non-database is refused, and read commands work on a store they cannot
//! write (read-only file and directory, another user), saying when a store needs migrating.
//! No traffic: the store is filled with `import`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn netsweep(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// A store with one imported campaign of two values, four runs each, in `dir/c.db`.
fn store_in(dir: &Path) {
    let doc = |bps: f64| {
        let bytes = bps / 8.0;
        format!(
            r#"{{"start": {{}}, "end": {{"sum_sent": {{"bits_per_second": {bps}, "retransmits": 3}}, "sum_received": {{"bits_per_second": {bps}, "bytes": {bytes}, "seconds": 1}}, "cpu_utilization_percent": {{"host_total": 50.0, "remote_total": 40.0}}}}}}"#
        )
    };
    for (nic, scale) in [("e1000", 1.0), ("virtio", 4.0)] {
        let mut args = vec![
            "import".to_string(),
            "--db".into(),
            "c.db".into(),
            "--set".into(),
            format!("nic={nic}"),
        ];
        for (i, bps) in [100e6, 101e6, 99e6, 100.5e6].iter().enumerate() {
            let name = format!("{nic}-{i}.json");
            std::fs::write(dir.join(&name), doc(bps * scale)).unwrap();
            args.push(name);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out) = netsweep(dir, &args);
        assert!(ok, "{out}");
    }
}

#[test]
fn report_outputs_through_a_symlink_leave_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_in(d);
    let precious = d.join("precious.txt");
    std::fs::write(&precious, "keep me").unwrap();
    std::os::unix::fs::symlink(&precious, d.join("link.html")).unwrap();
    let (ok, out) = netsweep(d, &["report", "--db", "c.db", "-o", "link.html"]);
    assert!(ok, "{out}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    assert!(
        std::fs::read_to_string(d.join("link.html"))
            .unwrap()
            .contains("<html")
    );
    // The Markdown report and each of its SVGs.
    let (ok, out) = netsweep(
        d,
        &["report", "--db", "c.db", "--format", "md", "-o", "r.md"],
    );
    assert!(ok, "{out}");
    let svgs: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    assert!(!svgs.is_empty(), "the Markdown report wrote no SVG");
    for svg in &svgs {
        std::fs::remove_file(svg).unwrap();
        std::os::unix::fs::symlink(&precious, svg).unwrap();
    }
    std::fs::remove_file(d.join("r.md")).unwrap();
    std::os::unix::fs::symlink(&precious, d.join("r.md")).unwrap();
    let (ok, out) = netsweep(
        d,
        &["report", "--db", "c.db", "--format", "md", "-o", "r.md"],
    );
    assert!(ok, "{out}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
    for svg in &svgs {
        assert!(std::fs::read_to_string(svg).unwrap().contains("<svg"));
    }
    // Regression (a trial's finding): `-o NAME.md` without --format wrote HTML into it. The
    // name says the format; --format still wins.
    let (ok, out) = netsweep(d, &["report", "--db", "c.db", "-o", "plain.md"]);
    assert!(ok, "{out}");
    let md = std::fs::read_to_string(d.join("plain.md")).unwrap();
    assert!(
        md.starts_with("# netsweep report"),
        "{}",
        &md[..md.len().min(200)]
    );
    let (ok, out) = netsweep(
        d,
        &[
            "report",
            "--db",
            "c.db",
            "--format",
            "html",
            "-o",
            "forced.md",
        ],
    );
    assert!(ok, "{out}");
    assert!(
        std::fs::read_to_string(d.join("forced.md"))
            .unwrap()
            .contains("<html")
    );
}

#[test]
fn a_store_path_symlinked_to_a_non_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let empty = d.join("empty");
    std::fs::write(&empty, "").unwrap();
    std::os::unix::fs::symlink(&empty, d.join("link.db")).unwrap();
    for args in [
        vec!["compare", "--db", "link.db"],
        vec!["export", "--db", "link.db"],
        vec!["report", "--db", "link.db"],
    ] {
        let (ok, out) = netsweep(d, &args);
        assert!(!ok, "{args:?}: {out}");
        assert!(out.contains("no netsweep store"), "{args:?}: {out}");
    }
    // A valid document: import checks its files before it opens the store.
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/iperf3-json/iperf3.12-tcp-P2.json"
        ),
        d.join("x.json"),
    )
    .unwrap();
    let (ok, out) = netsweep(d, &["import", "--db", "link.db", "--set", "a=b", "x.json"]);
    assert!(!ok && out.contains("not a SQLite database"), "{out}");
    assert_eq!(
        std::fs::read(&empty).unwrap(),
        b"",
        "the link's target was written"
    );
}

/// The read commands on `dir/c.db`, as `prefix` (a command that runs as another user) says.
fn read_commands_work(dir: &Path, out_dir: &Path, prefix: &[&str]) {
    let bin = env!("CARGO_BIN_EXE_netsweep");
    let report = out_dir.join("r.html");
    let report = report.to_str().unwrap();
    for args in [
        vec!["compare", "--db", "c.db", "--by", "nic"],
        vec!["export", "--db", "c.db"],
        vec!["explain", "--db", "c.db"],
        vec!["report", "--db", "c.db", "-o", report],
    ] {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let out = cmd.args(&args).current_dir(dir).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{prefix:?} {args:?}: {text}");
    }
    assert!(Path::new(report).exists());
}

#[test]
fn read_commands_work_on_a_read_only_store_and_as_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    store_in(d);
    let out_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(out_dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = d.join("c.db");
    let before = std::fs::read(&db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Put the modes back even when an assertion fails, so the directory can be removed.
    struct Restore<'a>(&'a Path);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = std::fs::set_permissions(self.0, std::fs::Permissions::from_mode(0o755));
        }
    }
    let _restore = Restore(d);
    read_commands_work(d, out_dir.path(), &[]);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && Path::new("/usr/bin/setpriv").exists() {
        // Root ignores file modes: the read-only case proper is another user's.
        read_commands_work(
            d,
            out_dir.path(),
            &[
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ],
        );
    } else {
        eprintln!(
            "read_commands_work_on_a_read_only_store_and_as_another_user: the other-user case \
             needs root and setpriv; skipped"
        );
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a read command wrote the store"
    );
    // Where the directory lets it (root here), SQLite's read-only mode may leave its empty
    // shared-memory and log files beside a WAL store; nothing is logged into them.
    let wal = d.join("c.db-wal");
    assert!(
        !wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0,
        "a read command wrote into the store's log"
    );
}

#[test]
fn a_store_that_needs_migrating_says_so_and_migrate_upgrades_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.db"),
        d.join("old.db"),
    )
    .unwrap();
    let before = std::fs::read(d.join("old.db")).unwrap();
    let (ok, out) = netsweep(d, &["compare", "--db", "old.db"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("is schema v1") && out.contains("netsweep migrate --db old.db"),
        "{out}"
    );
    assert_eq!(std::fs::read(d.join("old.db")).unwrap(), before);
    let (ok, out) = netsweep(d, &["migrate", "--db", "old.db"]);
    assert!(ok && out.contains("upgraded from schema v1"), "{out}");
    let (ok, out) = netsweep(d, &["compare", "--db", "old.db"]);
    assert!(ok, "{out}");
}

/// Regression: `compare` printed goodput as raw bit/s (9.41e+08) where the report shows
/// Mbit/s; other metrics keep their own units (counts, percent, ms).
#[test]
fn compare_prints_rates_in_units() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.db"),
        d.join("old.db"),
    )
    .unwrap();
    let (ok, out) = netsweep(d, &["migrate", "--db", "old.db"]);
    assert!(ok, "{out}");
    let (ok, out) = netsweep(d, &["compare", "--db", "old.db"]);
    assert!(ok, "{out}");
    assert!(out.contains("goodput in Mbit/s"), "{out}");
    // The fixture's window=64K runs: 940, 941 and 942 Mbit/s.
    let row = out
        .lines()
        .find(|l| l.starts_with("x   3"))
        .unwrap_or_else(|| panic!("no vitals row: {out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[2..5], ["940", "942", "941"], "{row}");
    assert!(!out.contains("e+08"), "{out}");
    let (ok, out) = netsweep(d, &["compare", "--db", "old.db", "--metric", "retransmits"]);
    assert!(ok, "{out}");
    assert!(!out.contains("Mbit/s"), "{out}");
}
