//! `netsweep plot`: a real netsweep test and a real iperf3 3.12 test on 127.0.0.1 (and
//! netsweep's `--json-stream` lines against `iperf3 -s`), each drawn and opened in headless
//! Chromium: every chart draws, the series are in the DOM, nothing is fetched, the screenshot
//! is not blank. Then the campaign report's links to each stored run's picture.

mod common;

use common::browser;
use netsweep::campaigns::store::{NewRun, Store};
use netsweep::traffic::iperf3::parse_json_result;
use netsweep::traffic::result::TestResult;
use netsweep::traffic::spec::ServerLimits;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs `netsweep plot INPUT -o OUT` in `dir` and returns OUT's text.
fn plot(dir: &Path, input: &Path, out: &str) -> String {
    common::netsweep_ok(dir, &["plot", &input.display().to_string(), "-o", out]);
    std::fs::read_to_string(dir.join(out)).expect("the picture was written")
}

/// A blank page's screenshot at the same size: what a page that drew nothing looks like.
fn blank_png(dir: &Path, width: u32, height: u32) -> usize {
    let blank = dir.join("blank.html");
    std::fs::write(&blank, "<!doctype html><html><body></body></html>").unwrap();
    browser::load(&blank, dir, width, height).1.len()
}

/// Opens `page` in Chromium: the `ids` charts all drew, `series` are named in the DOM, no
/// script error, no request, and the screenshot is far from blank.
fn check_in_chromium(dir: &Path, page: &Path, ids: &[&str], series: &[&str]) {
    let (dom, png) = browser::load(page, dir, 1000, 2600);
    for id in ids {
        assert!(
            dom.contains(&format!("<figure id=\"{id}\">")),
            "no chart {id}"
        );
    }
    assert_eq!(browser::attr(&dom, "data-charts"), ids.len().to_string());
    assert_eq!(
        browser::attr(&dom, "data-charts-drawn"),
        ids.len().to_string(),
        "every chart drew"
    );
    assert_eq!(browser::attr(&dom, "data-errors"), "0", "no script errors");
    assert_eq!(
        browser::attr(&dom, "data-resources"),
        "0",
        "no network requests"
    );
    for s in series {
        assert!(dom.contains(s), "no {s} in the DOM");
    }
    let blank = blank_png(dir, 1000, 2600);
    assert!(
        png.len() > 40_000 && png.len() > 5 * blank,
        "screenshot of {} bytes looks blank (a blank page: {blank})",
        png.len()
    );
}

/// `netsweep client 127.0.0.1 -p PORT ARGS` (which must succeed), its standard output written
/// to `dir/name`; the file's path.
fn client_result(dir: &Path, port: &str, args: &[&str], name: &str) -> PathBuf {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", port])
        .args(args)
        .output()
        .expect("netsweep client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join(name);
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

#[test]
fn a_real_netsweep_test_is_drawn_and_chromium_shows_every_chart() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let server = common::TestServer::start(ServerLimits::default());
    let port = server.addr.port().to_string();
    let args = ["-t", "2", "-P", "2", "--latency", "--json"];
    let file = client_result(dir.path(), &port, &args, "netsweep.json");
    let page = plot(dir.path(), &file, "netsweep.html");
    assert!(page.contains("netsweep --json file written by netsweep"));
    assert!(page.contains(&format!("TCP forward to 127.0.0.1:{port}, 2 s, 2 streams")));
    let svg = plot(dir.path(), &file, "netsweep.svg");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    if !common::tool_or_skip(
        "a_real_netsweep_test_is_drawn_and_chromium_shows_every_chart",
        "chromium",
    ) {
        return;
    }
    check_in_chromium(
        dir.path(),
        &dir.path().join("netsweep.html"),
        &["rate", "retransmits", "rtt", "cwnd", "probe", "latency-cdf"],
        &[
            "stream 0",
            "stream 1",
            "total",
            "under load",
            "rate (Gbit/s)",
        ],
    );
    // The bare SVG draws on its own too: six charts inside one picture.
    let (dom, png) = browser::load(&dir.path().join("netsweep.svg"), dir.path(), 900, 2100);
    assert_eq!(dom.matches("class=\"chart\"").count(), 6, "{dom}");
    let blank = blank_png(dir.path(), 900, 2100);
    assert!(png.len() > 5 * blank, "{} vs blank {blank}", png.len());
}

/// An `iperf3 -s -1` on a free loopback port; returns it and the port.
fn iperf3_server() -> (std::process::Child, String) {
    let port = common::free_port();
    let server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().unwrap());
    (server, port.to_string())
}

#[test]
fn a_real_iperf3_test_and_a_json_stream_are_drawn_and_chromium_shows_them() {
    const NAME: &str = "a_real_iperf3_test_and_a_json_stream_are_drawn_and_chromium_shows_them";
    if !common::tool_or_skip(NAME, "iperf3") {
        return;
    }
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = iperf3_server();
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "2", "-P", "2", "-J"])
        .output()
        .expect("iperf3 -c");
    common::wait_bounded(&mut server, Duration::from_secs(20), "iperf3 -s -1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let file = dir.path().join("iperf3.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let page = plot(dir.path(), &file, "iperf3.html");
    assert!(
        page.contains("iperf3 -J file written by iperf 3."),
        "{page}"
    );

    // iperf3 3.12 has no --json-stream; netsweep's client writes iperf3's event lines.
    let (mut server, port) = iperf3_server();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "--iperf3", "-p", &port, "-t", "2"])
        .arg("--json-stream")
        .output()
        .expect("netsweep client --json-stream");
    common::wait_bounded(&mut server, Duration::from_secs(20), "iperf3 -s -1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stream = dir.path().join("stream.jsonl");
    std::fs::write(&stream, &out.stdout).unwrap();
    let page = plot(dir.path(), &stream, "stream.html");
    assert!(page.contains("iperf3 --json-stream file"), "{page}");
    assert!(page.contains("<figure id=\"rate\">"), "{page}");

    if !common::tool_or_skip(NAME, "chromium") {
        return;
    }
    check_in_chromium(
        dir.path(),
        &dir.path().join("iperf3.html"),
        &["rate", "retransmits", "rtt", "cwnd"],
        // The axes' units follow the magnitudes (a starved sender's cwnd is in KB).
        &["stream 5", "total", "cwnd (", "RTT ("],
    );
}

#[test]
fn the_report_links_each_stored_run_to_its_picture() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plot");
    {
        let mut store = Store::open(&db).unwrap();
        let campaign = store.create_import_campaign("plot test").unwrap();
        let config = store
            .configuration_for(campaign, &[("tool".into(), "both".into())])
            .unwrap();
        let ours: TestResult = serde_json::from_str(
            &std::fs::read_to_string(fixtures.join("netsweep-tcp-2-streams-latency.json")).unwrap(),
        )
        .unwrap();
        let theirs = parse_json_result(
            &std::fs::read_to_string(fixtures.join("iperf3.12-tcp-2-streams.json")).unwrap(),
        )
        .unwrap();
        for (round, (result, imported)) in [(Some(ours), None), (None, Some(theirs))]
            .into_iter()
            .enumerate()
        {
            store
                .insert_run(
                    campaign,
                    &NewRun {
                        configuration_id: config,
                        round: round as u32,
                        sequence: round,
                        result,
                        imported,
                        ..NewRun::default()
                    },
                )
                .unwrap();
        }
    }
    let db_arg = db.display().to_string();
    common::netsweep_ok(
        dir.path(),
        &[
            "report",
            "--db",
            &db_arg,
            "--run-pictures",
            "-o",
            "wan.html",
        ],
    );
    let report = std::fs::read_to_string(dir.path().join("wan.html")).unwrap();
    for run in [1, 2] {
        assert!(
            report.contains(&format!("<a href=\"wan-runs/run-{run}.html\">run {run}: ")),
            "{report}"
        );
        let page =
            std::fs::read_to_string(dir.path().join(format!("wan-runs/run-{run}.html"))).unwrap();
        assert!(page.contains("<figure id=\"rate\">"), "run {run}: {page}");
    }
    // One stored run by itself, as SVG; an unknown run and a file of another kind are named.
    common::netsweep_ok(
        dir.path(),
        &["plot", "--db", &db_arg, "--run", "2", "-o", "two.svg"],
    );
    let svg = std::fs::read_to_string(dir.path().join("two.svg")).unwrap();
    assert!(
        svg.contains("run 2 of ") && svg.contains("stream 5"),
        "{svg}"
    );
    let fail = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // The pictures' directory is an output too: never written through a symlink.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("sym-runs")).unwrap();
    let e = fail(&[
        "report",
        "--db",
        &db_arg,
        "--run-pictures",
        "-o",
        "sym.html",
    ]);
    assert!(e.contains("sym-runs is a symlink"), "{e}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    let e = fail(&["plot", "--db", &db_arg, "--run", "9"]);
    assert!(e.contains("has no run 9"), "{e}");
    std::fs::write(dir.path().join("plan.toml"), "[test]\nduration = 1\n").unwrap();
    let e = fail(&["plot", "plan.toml"]);
    assert!(
        e.contains("plan.toml is not a test result netsweep can plot") && e.contains("iperf3"),
        "{e}"
    );
}

/// A trial's finding: `plot` refused a request/response result ("not a test result netsweep
/// can plot"). A real `--test rr` result is drawn: the title says the test and its rate, the
/// histogram and the CDF draw in Chromium, the CDF ends at 100% and the p50 mark is the
/// result's own p50.
#[test]
fn a_real_request_response_test_is_drawn() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let server = common::TestServer::start(ServerLimits::default());
    let port = server.addr.port().to_string();
    let args = ["--test", "rr", "-t", "1", "-r", "64,128", "--json"];
    let file = client_result(dir.path(), &port, &args, "rr.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let count = doc["rr"]["transactions"].as_u64().unwrap();
    assert!(count > 100, "{doc}");
    let page = plot(dir.path(), &file, "rr.html");
    assert!(
        page.contains(&format!(
            "rr.json: TCP rr, 64-byte requests, 128-byte responses, 1 connection, {count} transactions in"
        )),
        "{page}"
    );
    let svg = plot(dir.path(), &file, "rr.svg");
    let p50 = doc["rr"]["latency_us"]["p50"].as_f64().unwrap();
    assert!(svg.contains(&format!("p50 {p50:.1} µs")), "{svg}");
    // The last point of the CDF is every transaction.
    let cdf = &svg[svg.find("Transaction latency (CDF)").unwrap()..];
    let last = cdf
        .split("<title>at or below: ")
        .last()
        .and_then(|t| t.split("</title>").next())
        .unwrap();
    assert!(last.ends_with(", 100 %"), "{last}");
    if !common::tool_or_skip("a_real_request_response_test_is_drawn", "chromium") {
        return;
    }
    check_in_chromium(
        dir.path(),
        &dir.path().join("rr.html"),
        &["rr-histogram", "rr-cdf"],
        &["transactions", "p99 ", "p99.9 ", "max "],
    );
}
