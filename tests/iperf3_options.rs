//! iperf3's options against a netsweep server, with Debian's iperf3 client (3.12 in CI): each
//! is honoured (`-n`, `--get-server-output`) or refused out loud, with iperf3's "not
//! implemented" error to the client and a server log line naming the option.

mod common;

use common::TestServer;
use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Debian's iperf3 client against `server` with `-J`: its document and exit status.
fn iperf3_json(server: &TestServer, args: &[&str]) -> (Value, bool) {
    let out = Command::new("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &server.addr.port().to_string(),
            "-J",
        ])
        .args(args)
        .output()
        .expect("iperf3 -c");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, out.status.success())
}

/// Waits (bounded) until the server's log has a line containing `needle`.
fn log_line(server: &TestServer, needle: &str) -> Option<String> {
    let t0 = Instant::now();
    loop {
        let log = server.log_text();
        if let Some(l) = log.lines().find(|l| l.contains(needle)) {
            return Some(l.to_string());
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn options_a_netsweep_server_cannot_honour_are_refused_out_loud() {
    if !common::tool_or_skip(
        "options_a_netsweep_server_cannot_honour_are_refused_out_loud",
        "iperf3",
    ) {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cases: [(&[&str], &str); 5] = [
        (&["--fq-rate", "100M", "-R"], "--fq-rate"),
        (&["-S", "16"], "-S/--tos/--dscp"),
        (&["--dscp", "46", "-R"], "-S/--tos/--dscp"),
        (&["-L", "5", "-6"], "-L/--flowlabel"),
        (&["--dont-fragment", "-u", "-b", "1M"], "--dont-fragment"),
    ];
    for (args, name) in cases {
        let server = if args.contains(&"-6") {
            // The flow label needs IPv6: a server of its own on ::1.
            TestServer::start_on("[::1]:0", ServerLimits::default())
        } else {
            TestServer::start(ServerLimits::default())
        };
        let host = if args.contains(&"-6") {
            "::1"
        } else {
            "127.0.0.1"
        };
        let out = Command::new("iperf3")
            .args(["-c", host, "-p", &server.addr.port().to_string(), "-J"])
            .args(["-t", "1"])
            .args(args)
            .output()
            .expect("iperf3 -c");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
        // (iperf3 3.12 exits 0 after a server's error with -J; the document says it.)
        let error = doc["error"].as_str().unwrap_or_default();
        assert!(error.contains("not implemented"), "{args:?}: {error}");
        let line = log_line(&server, "does not implement")
            .unwrap_or_else(|| panic!("{args:?}: no log line: {}", server.log_text()));
        assert!(line.contains(name), "{args:?}: {line}");
        assert!(
            doc["intervals"].as_array().is_some_and(Vec::is_empty),
            "{doc:#}"
        );
    }
}

#[test]
fn get_server_output_returns_the_servers_account() {
    if !common::tool_or_skip("get_server_output_returns_the_servers_account", "iperf3") {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::start(ServerLimits::default());
    let (doc, ok) = iperf3_json(&server, &["-t", "1", "--get-server-output"]);
    assert!(ok, "{doc:#}");
    let text = doc["server_output_text"].as_str().unwrap_or_default();
    assert!(
        text.contains("netsweep") && text.contains("client to server"),
        "{doc:#}"
    );
}

/// Regression: the server's deadline was built from `time`, which is 0 with `-n`: a byte-count
/// test was cut off 10 s after its start (`iperf3: error - int_errno=160`).
#[test]
fn a_byte_count_test_is_not_cut_off_after_ten_seconds() {
    if !common::tool_or_skip(
        "a_byte_count_test_is_not_cut_off_after_ten_seconds",
        "iperf3",
    ) {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = TestServer::start(ServerLimits::default());
    // 3.2 MB at 2 Mbit/s: about 12.8 s, past the old 10 s cut-off.
    let (doc, ok) = iperf3_json(&server, &["-n", "3200000", "-b", "2M", "-i", "0"]);
    assert!(ok, "{doc:#}");
    let got = doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(got >= 3_200_000, "{got} bytes received: {doc:#}");
    let secs = doc["end"]["sum_sent"]["seconds"].as_f64().unwrap_or(0.0);
    assert!(secs > 10.5, "the test took {secs} s: {doc:#}");
}
