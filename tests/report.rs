//! Reports: Markdown and HTML-structure snapshots, self-containment, size for 500 runs, edge
//! cases (failures, one configuration, one run), and a real headless Chromium load.

mod common;

use netsweep::campaigns::plan::Plan;
use netsweep::campaigns::store::{NewRun, Store};
use netsweep::report::{ReportModel, html, markdown};
use netsweep::traffic::measure::{IntervalReport, Role, StreamReport, TcpSample};
use netsweep::traffic::result::{CpuResult, StartInfo, StreamPair, TestResult};
use netsweep::traffic::spec::{Flow, TestSpec};
use std::path::Path;

/// A TCP result whose intervals move `per_s[i]` bytes per second.
fn result(spec: &TestSpec, per_s: &[u64], retrans: u64) -> TestResult {
    let wnd = spec.window_bytes.unwrap_or(1 << 20);
    let report = |role| StreamReport {
        stream: 0,
        flow: Flow::ClientToServer,
        role,
        intervals: per_s
            .iter()
            .enumerate()
            .map(|(i, b)| IntervalReport {
                stream: 0,
                index: i as u32,
                role,
                bytes: *b,
                packets: 0,
                tcp: (role == Role::Sender).then_some(TcpSample {
                    retransmits: retrans,
                    rtt_us: 20_000,
                    cwnd_bytes: 65536,
                    snd_wnd_bytes: wnd,
                    ..TcpSample::default()
                }),
                udp: None,
            })
            .collect(),
        tail_bytes: 0,
        tcp_total_retransmits: None,
        tcp_bytes_sent: None,
        tcp_bytes_retrans: None,
        tcp_dsack_dups: None,
        tcp_min_rtt_us: None,
        tcp_bytes_received: None,
        skipped_rx_copy: false,
        bytes_acked: None,
        drained: None,
        rtt_min_us: Some(20_000),
        rtt_max_us: Some(21_000),
        error: None,
        saw_end: false,
        highest_seq: None,
        udp_timing: None,
        send: None,
        receive: None,
    };
    let (s, r) = (report(Role::Sender), report(Role::Receiver));
    // The fixture's intervals are the measured ones: no calibration slot before them.
    let spec = TestSpec {
        duration: std::time::Duration::from_secs(per_s.len() as u64),
        calibration: std::time::Duration::ZERO,
        ..spec.clone()
    };
    let pairs = [StreamPair {
        flow: Flow::ClientToServer,
        sender: &s,
        receiver: &r,
    }];
    netsweep::traffic::result::build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult {
            local_percent: 40.0,
            remote_percent: 30.0,
            ..CpuResult::default()
        },
        None,
    )
}

/// A deterministic campaign: `plan_text`, `rounds` runs per configuration, some failing.
fn campaign(dir: &Path, plan_text: &str, intervals: usize, fail_every: usize) -> (Store, i64) {
    let plan = Plan::parse("fixture.toml", plan_text).unwrap();
    let mut store = Store::open(&dir.join("r.db")).unwrap();
    let facts = serde_json::json!({"path": {"delay_us": 10_000}, "a": {"kernel": "6.1.0"}});
    let id = store
        .create_campaign(
            &plan,
            Some("fixture.toml"),
            "lab fixture (rate 1 Gbits/sec, RTT 20ms)",
            7,
            &facts,
        )
        .unwrap();
    let configs = store.configurations(id).unwrap();
    let mut seq = 0;
    for round in 0..plan.repeat.count {
        for (pos, c) in configs.iter().enumerate() {
            let spec = plan.spec_for(&c.dims).unwrap();
            let w = spec.window_bytes.unwrap_or(1 << 20) as f64;
            let cc_bonus = if c.label.contains("bbr") { 1.1 } else { 1.0 };
            let base = (w * 8.0 / 0.02).min(1e9) / 8.0 * 0.86 * cc_bonus;
            let run_factor = 1.0 + 0.01 * ((round as usize * 7 + pos) % 5) as f64;
            let per_s: Vec<u64> = (0..intervals)
                .map(|i| (base * run_factor * (1.0 + 0.005 * (i % 3) as f64)) as u64)
                .collect();
            seq += 1;
            let failed = fail_every > 0 && seq % fail_every == 0;
            store
                .insert_run(
                    id,
                    &NewRun {
                        configuration_id: c.id,
                        round,
                        sequence: seq,
                        started_unix: 1_795_320_000.0 + seq as f64 * 5.0,
                        finished_unix: 1_795_320_004.0 + seq as f64 * 5.0,
                        error: failed.then(|| "connection refused".to_string()),
                        result: (!failed).then(|| result(&spec, &per_s, (pos % 3) as u64)),
                        counters_json: Some(
                            serde_json::json!({"client": {"protocol": {"Tcp.RetransSegs": pos % 3}, "interfaces": {}}}).to_string(),
                        ),
                        ..NewRun::default()
                    },
                )
                .unwrap();
        }
    }
    store
        .connection()
        .execute(
            "UPDATE campaign SET created_unix = 1795320000, finished_unix = 1795320600",
            [],
        )
        .unwrap();
    (store, id)
}

const PLAN: &str = "name = \"fixture\"\n[target]\nkind = \"lab\"\nrate = \"1G\"\nrtt = \"20ms\"\n[test]\nduration = \"3s\"\n[matrix]\nwindow = [\"64K\", \"256K\", \"1M\"]\ncongestion = [\"cubic\", \"bbr\"]\n[repeat]\ncount = 4\nseed = 7\n";

/// Compares with a stored snapshot; writes it when missing or when UPDATE_SNAPSHOTS is set.
fn snapshot(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() || !path.exists() {
        assert!(!common::in_ci(), "snapshot {name} missing in CI");
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text, want,
        "snapshot {name} changed; rerun with UPDATE_SNAPSHOTS=1 if intended"
    );
}

/// Headings, figures and table headers: the structure of an HTML report.
fn structure(html: &str) -> String {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        for tag in ["h1", "h2", "h3", "figcaption", "th"] {
            if rest.starts_with(&format!("{tag}>")) {
                let end = rest.find(&format!("</{tag}>")).unwrap();
                out.push(format!("{tag}: {}", &rest[tag.len() + 1..end]));
            }
        }
        if rest.starts_with("svg ") {
            out.push("svg".into());
        }
    }
    out.join("\n") + "\n"
}

#[test]
fn markdown_and_html_structure_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = campaign(dir.path(), PLAN, 3, 10);
    let model = ReportModel::build(&store, id).unwrap();
    let (md, files) = markdown::render(&model, "fixture");
    snapshot("report.md", &md);
    assert_eq!(
        files.len(),
        6,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    let page = html::render(&model);
    snapshot("report-structure.txt", &structure(&page));
}

#[test]
fn the_html_is_self_contained_and_states_its_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = campaign(dir.path(), PLAN, 3, 10);
    let model = ReportModel::build(&store, id).unwrap();
    // The fixture advertises exactly the window: ceilings are window x 8 / 20 ms.
    let ceilings: Vec<f64> = model.configs.iter().filter_map(|c| c.ceiling_bps).collect();
    assert_eq!(ceilings[0], 65536.0 * 8.0 / 0.02);
    let page = html::render(&model);
    // The only URL is the SVG namespace; nothing is fetched.
    let urls = page.matches("http://").count() + page.matches("https://").count();
    assert_eq!(urls, page.matches("http://www.w3.org/2000/svg").count());
    for bad in [" src=", "<link", "@import", "url("] {
        assert!(!page.contains(bad), "{bad} in the report");
    }
    assert!(
        page.contains("window / idle RTT"),
        "the window chart shows the window/RTT ceiling"
    );
    assert!(
        page.contains("Fastest configuration: window=1M congestion=bbr"),
        "findings name the best"
    );
    assert!(page.contains("congestion=bbr is faster than congestion=cubic"));
    assert!(page.contains("runs failed"), "failures are a finding");
    assert!(page.contains("<title>"), "tooltips");
}

#[test]
fn five_hundred_runs_with_one_second_intervals_stay_under_2_mb() {
    let dir = tempfile::tempdir().unwrap();
    let plan = "[target]\nkind = \"loopback\"\n[matrix]\nwindow = [\"64K\", \"128K\", \"256K\", \"512K\", \"1M\"]\ncongestion = [\"cubic\", \"bbr\"]\n[repeat]\ncount = 50\n";
    let (store, id) = campaign(dir.path(), plan, 10, 0);
    let page = html::render(&ReportModel::build(&store, id).unwrap());
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    assert!(page.contains("500 runs"));
}

#[test]
fn edge_cases_render_with_a_sensible_message() {
    let dir = tempfile::tempdir().unwrap();
    // Every run failed.
    let (store, id) = campaign(
        dir.path(),
        "[target]\nkind = \"loopback\"\n[matrix]\nwindow = [\"64K\"]\n[repeat]\ncount = 2\n",
        2,
        1,
    );
    let page = html::render(&ReportModel::build(&store, id).unwrap());
    assert!(page.contains("No run succeeded"), "all failed");
    drop(store);
    // A single configuration, a single run.
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = campaign(
        dir.path(),
        "[target]\nkind = \"loopback\"\n[repeat]\ncount = 1\n",
        2,
        0,
    );
    let page = html::render(&ReportModel::build(&store, id).unwrap());
    assert!(
        page.contains("A single configuration"),
        "single configuration"
    );
    assert!(page.contains("a single run"), "single run");
}

#[test]
fn chromium_loads_the_report_with_every_chart_and_no_errors_or_requests() {
    if !common::tool_or_skip(
        "chromium_loads_the_report_with_every_chart_and_no_errors_or_requests",
        "chromium",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Ten configurations: more than the palette's colours, so the time chart is drawn as
    // small multiples (one panel per configuration), each of which must draw too.
    let plan = PLAN.replace(
        "window = [\"64K\", \"256K\", \"1M\"]",
        "window = [\"64K\", \"128K\", \"256K\", \"512K\", \"1M\"]",
    );
    let (store, id) = campaign(dir.path(), &plan, 3, 10);
    let model = ReportModel::build(&store, id).unwrap();
    let charts = netsweep::report::charts(&model);
    let time = charts.iter().find(|c| c.0 == "time").unwrap();
    assert!(
        time.2.starts_with("<div class=\"multiples\">"),
        "{}",
        time.2
    );
    // A panel per configuration with a successful run (every 10th run fails: here all four
    // of the tenth configuration).
    let with_runs: std::collections::BTreeSet<usize> =
        model.series.iter().map(|s| s.configuration).collect();
    assert_eq!(with_runs.len(), 9);
    assert_eq!(time.2.matches("<svg ").count(), 9);
    let expected: usize = charts.iter().map(|c| c.2.matches("<svg ").count()).sum();
    let file = dir.path().join("report.html");
    std::fs::write(&file, html::render(&model)).unwrap();
    let (dom, png) = common::browser::load(&file, dir.path(), 1200, 2400);
    let attr = |name: &str| common::browser::attr(&dom, name);
    assert_eq!(attr("data-charts"), expected.to_string());
    assert_eq!(
        attr("data-charts-drawn"),
        expected.to_string(),
        "every chart drew"
    );
    assert_eq!(attr("data-errors"), "0", "no script errors");
    assert_eq!(attr("data-resources"), "0", "no network requests");
    // A blank 1200x2400 page compresses to a few kilobytes; charts and text do not.
    assert!(
        png.len() > 40_000,
        "screenshot of {} bytes looks blank",
        png.len()
    );
    if let Ok(keep) = std::env::var("NETSWEEP_KEEP_SCREENSHOT") {
        std::fs::write(keep, &png).unwrap();
    }
}

/// Regression: a stored goodput of about 1e308 made `report` draw grid lines until memory ran
/// out. Stored values that no link can carry now render in bounded time on a bounded axis.
#[test]
fn absurd_stored_values_render_in_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let campaign = store.create_import_campaign("hostile").unwrap();
    for (label, values) in [("a", [1e308, 2e9, 3e9]), ("b", [f64::MAX, 1e9, 5e-324])] {
        let dims = vec![("case".to_string(), label.to_string())];
        let config = store.configuration_for(campaign, &dims).unwrap();
        for v in values {
            let (round, sequence) = store.next_slot(campaign, config).unwrap();
            store
                .insert_run(
                    campaign,
                    &NewRun {
                        configuration_id: config,
                        round,
                        sequence,
                        imported: Some(netsweep::traffic::iperf3::import::Imported {
                            bits_per_second: v,
                            ..Default::default()
                        }),
                        ..NewRun::default()
                    },
                )
                .unwrap();
        }
    }
    let t0 = std::time::Instant::now();
    let page = html::render(&ReportModel::build(&store, campaign).unwrap());
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t0.elapsed()
    );
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    assert!(page.matches("class=\"grid\"").count() < 200);
    let (md, _) = markdown::render(&ReportModel::build(&store, campaign).unwrap(), "r");
    assert!(!md.is_empty());
}
