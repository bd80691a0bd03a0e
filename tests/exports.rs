//! `export` numbers runs the same way in CSV and JSON: rounds and the run sequence count from 1.

use std::process::Command;

fn netsweep(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .current_dir(dir)
        .env("NETSWEEP_RUNTIME_DIR", dir.join("rt"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Regression: CSV counted rounds from 1 and sequences from 0, JSON both from 0.
#[test]
fn run_numbers_count_from_1_in_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[matrix]\nparallel = [1]\n\
         [repeat]\ncount = 2\nseed = 1\n",
    )
    .unwrap();
    netsweep(dir.path(), &["run", "plan.toml", "--db", "x.db"]);
    let csv = netsweep(dir.path(), &["export", "--db", "x.db", "--format", "csv"]);
    let mut csv_pairs: Vec<(u64, u64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    csv_pairs.sort();
    assert_eq!(csv_pairs, [(1, 1), (2, 2)], "{csv}");
    let json: serde_json::Value = serde_json::from_str(&netsweep(
        dir.path(),
        &["export", "--db", "x.db", "--format", "json"],
    ))
    .unwrap();
    let mut json_pairs: Vec<(u64, u64)> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["sequence"].as_u64().unwrap(),
                r["round"].as_u64().unwrap(),
            )
        })
        .collect();
    json_pairs.sort();
    assert_eq!(json_pairs, csv_pairs);
}
