//! Reports of huge plans (issue 31, item 10): a plan of 100,000 configurations with a few
//! stored runs once took 325 s and wrote 29 MB; the report's cost must follow the stored runs.
//! No traffic: the campaign and its runs are written straight into a store.

use netsweep::campaigns::plan::Plan;
use netsweep::campaigns::store::{NewRun, Store};
use netsweep::report::{ReportModel, html};
use netsweep::traffic::iperf3::import::Imported;
use std::fmt::Write;
use std::time::Instant;

/// A plan of `a` x `b` x `c` configurations of user dimensions.
fn plan_text(a: usize, b: usize, c: usize) -> String {
    let mut t = String::from(
        "name = \"huge\"\n[target]\nkind = \"loopback\"\n[test]\nduration = \"1s\"\n[repeat]\ncount = 3\n",
    );
    for (name, n) in [("a", a), ("b", b), ("c", c)] {
        let _ = writeln!(t, "[dimensions.{name}]");
        for i in 0..n {
            let _ = writeln!(t, "v{i} = {{ setup = \"true\" }}");
        }
    }
    t
}

/// A store holding the plan and three runs of each of its first `with_runs` configurations.
fn store(dir: &std::path::Path, text: &str, with_runs: usize) -> (Store, i64) {
    let plan = Plan::parse("huge.toml", text).expect("the plan parses");
    let mut store = Store::open(&dir.join("h.db")).unwrap();
    let campaign = store
        .create_campaign(&plan, None, "loopback", 1, &serde_json::json!({}))
        .unwrap();
    let configs = store.configurations(campaign).unwrap();
    let mut sequence = 0;
    for c in configs.iter().take(with_runs) {
        for round in 0..3u32 {
            store
                .insert_run(
                    campaign,
                    &NewRun {
                        configuration_id: c.id,
                        round,
                        sequence,
                        imported: Some(Imported {
                            bits_per_second: 1e9 + f64::from(round) * 1e7 + c.position as f64,
                            raw_json: "{}".into(),
                            ..Imported::default()
                        }),
                        ..NewRun::default()
                    },
                )
                .unwrap();
            sequence += 1;
        }
    }
    (store, campaign)
}

#[test]
fn a_report_of_a_100000_configuration_plan_follows_its_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, campaign) = store(dir.path(), &plan_text(100, 100, 10), 6);
    let t0 = Instant::now();
    let model = ReportModel::build(&store, campaign).unwrap();
    let page = html::render(&model);
    let took = t0.elapsed();
    eprintln!(
        "100,000 configurations, 18 runs: report in {took:?}, {} bytes",
        page.len()
    );
    // Work done: the report lists the configurations that ran, not the plan's 100,000.
    assert_eq!(model.configs.len(), 6, "configurations in the report");
    assert!(page.len() < 2 << 20, "{} bytes", page.len());
    // A generous bound: the 325 s this took is what broke.
    assert!(took.as_secs() < 30, "{took:?}");
}

#[test]
fn a_plan_of_100000_configurations_is_questioned_at_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("huge.toml"), plan_text(100, 100, 10)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "huge.toml", "--check"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("the plan has 100000 configurations (more than 10000)"),
        "{text}"
    );
    // 100,000 configurations x 3 rounds x (1 s and the plan's warm-up): over 83 hours.
    let hours: f64 = text
        .split("would take at least ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|h| h.parse().ok())
        .expect("the time it would take");
    assert!(text.contains("300000 runs") && hours >= 83.0, "{text}");
    // A plan of a sane size is not questioned.
    std::fs::write(dir.path().join("small.toml"), plan_text(10, 10, 10)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "small.toml", "--check"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("configurations (more than"), "{text}");
}
