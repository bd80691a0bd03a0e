//! `-J` and `--json-stream` in iperf3 mode, read as iperf3's consumers read them: the same test
//! run by Debian's iperf3 client (3.12 in CI) and by `netsweep -c ... --iperf3` against the same
//! `iperf3 -s`, both documents read by one reader of the fields scripts use (and by the `iperf3`
//! Python package's `TestResult` where it is installed), compared key by key and value by value.

mod common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A process killed on drop (an iperf3 server).
use common::KillOnDrop as Proc;

fn iperf3_server() -> (Proc, SocketAddr) {
    let port = common::free_port();
    let child = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    common::wait_listening_quietly(addr);
    (Proc(child), addr)
}

/// Runs `program -c 127.0.0.1 -p PORT args` and returns its standard output. iperf3's server
/// (3.12) serves one test at a time and, on a busy machine, can still be ending the last one
/// when the next client comes ("busy"): the client asks again, at most 20 times 250 ms apart,
/// as a user would.
fn run(program: &str, addr: SocketAddr, args: &[&str]) -> String {
    let mut tries = 0;
    let out = loop {
        let out = Command::new(program)
            .args(["-c", "127.0.0.1", "-p", &addr.port().to_string()])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        // The error of a -J document (iperf3 3.12 exits 0 with one), else the text.
        let said = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|d| d["error"].as_str().map(str::to_string))
            .unwrap_or_else(|| {
                if out.status.success() {
                    String::new()
                } else {
                    String::from_utf8_lossy(&out.stdout).into_owned()
                }
            });
        tries += 1;
        if !said.contains("busy") || tries == 20 {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{program} {args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

const NETSWEEP: &str = env!("CARGO_BIN_EXE_netsweep");

/// The figures iperf3's consumers read, as they read them (a missing key or a wrong type is an
/// error, as it is for them).
#[derive(Debug)]
struct Read {
    protocol: String,
    num_streams: u64,
    duration: u64,
    reverse: u64,
    sent_bps: Option<f64>,
    received_bps: Option<f64>,
    sender_streams: usize,
    interval_bps: Vec<f64>,
    host_total: f64,
    remote_total: f64,
    udp_jitter_ms: Option<f64>,
    udp_lost_percent: Option<f64>,
}

fn num(v: &Value, path: &str) -> f64 {
    let mut x = v;
    for k in path.split('.') {
        x = &x[k];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {x}"))
}

fn read(doc: &Value) -> Read {
    assert!(doc.get("error").is_none(), "{doc:#}");
    let ts = &doc["start"]["test_start"];
    let udp = ts["protocol"] == "UDP";
    let end = &doc["end"];
    Read {
        protocol: ts["protocol"].as_str().expect("protocol").to_string(),
        num_streams: ts["num_streams"].as_u64().expect("num_streams"),
        duration: ts["duration"].as_u64().expect("duration"),
        reverse: ts["reverse"].as_u64().expect("reverse"),
        sent_bps: (!udp).then(|| num(end, "sum_sent.bits_per_second")),
        received_bps: (!udp).then(|| num(end, "sum_received.bits_per_second")),
        sender_streams: end["streams"]
            .as_array()
            .expect("end.streams")
            .iter()
            .filter(|s| s["sender"].is_object() || s["udp"].is_object())
            .count(),
        interval_bps: doc["intervals"]
            .as_array()
            .expect("intervals")
            .iter()
            .map(|i| num(i, "sum.bits_per_second"))
            .collect(),
        host_total: num(end, "cpu_utilization_percent.host_total"),
        remote_total: num(end, "cpu_utilization_percent.remote_total"),
        udp_jitter_ms: udp.then(|| num(end, "sum.jitter_ms")),
        udp_lost_percent: udp.then(|| num(end, "sum.lost_percent")),
    }
}

fn shape(v: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(path.to_string(), kind);
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| shape(x, &format!("{path}.{k}"), out)),
        Value::Array(a) => a.iter().for_each(|x| shape(x, &format!("{path}[]"), out)),
        _ => {}
    }
}

/// Keys iperf3 writes that netsweep does not measure.
const NOT_MEASURED: &[&str] = &["$.intervals[].streams[].pmtu"];

fn within(what: &str, ours: f64, theirs: f64, tolerance: f64) {
    let off = (ours - theirs).abs() / theirs.abs().max(1e-9);
    assert!(
        off <= tolerance,
        "{what}: netsweep {ours}, iperf3 {theirs} ({:.1}% apart, {:.0}% allowed)",
        off * 100.0,
        tolerance * 100.0
    );
}

/// The iperf3 `TestResult` of Python's `iperf3` package reads the document, or why not.
fn python_reader(doc: &str) -> Result<String, String> {
    let script = "import sys, iperf3\n\
                  r = iperf3.TestResult(sys.stdin.read())\n\
                  assert r.error is None, r.error\n\
                  if r.protocol == 'TCP': print(r.sent_bps, r.received_bps, r.retransmits)\n\
                  else: print(r.bps, r.jitter_ms, r.lost_percent, r.packets)\n\
                  print(r.local_cpu_total, r.remote_cpu_total, r.local_host, r.num_streams)\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin.write_all(doc.as_bytes()).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(err)
    }
}

#[test]
fn iperf3_mode_json_reads_like_iperf3s_own_for_the_same_test() {
    if !common::tool_or_skip(
        "iperf3_mode_json_reads_like_iperf3s_own_for_the_same_test",
        "iperf3",
    ) {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_server, addr) = iperf3_server();
    // Paced where the figures are compared (-P 1: iperf3's -b is per stream, netsweep's the
    // total), unpaced with two streams for the document's shape.
    let cases: [(&[&str], bool); 4] = [
        (&["-t", "3", "-b", "300M"], true),
        (&["-t", "3", "-b", "300M", "-R"], true),
        (&["-t", "3", "-u", "-b", "20M", "-l", "1400"], true),
        (&["-t", "2", "-P", "2"], false),
    ];
    let mut python_checked = false;
    for (args, compare) in cases {
        let theirs: Value =
            serde_json::from_str(&run("iperf3", addr, &[&["-J"], args].concat())).expect("iperf3");
        let text = run(NETSWEEP, addr, &[&["--iperf3", "-J"], args].concat());
        let ours: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        // Every key iperf3 wrote is there, with the same type.
        let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
        shape(&ours, "$", &mut a);
        shape(&theirs, "$", &mut b);
        for (path, kind) in &b {
            if !NOT_MEASURED.contains(&path.as_str()) {
                assert_eq!(a.get(path), Some(kind), "{args:?}: {path}");
            }
        }
        let (r_ours, r_theirs) = (read(&ours), read(&theirs));
        assert_eq!(r_ours.protocol, r_theirs.protocol);
        assert_eq!(r_ours.num_streams, r_theirs.num_streams);
        assert_eq!(r_ours.duration, r_theirs.duration);
        assert_eq!(r_ours.reverse, r_theirs.reverse);
        assert_eq!(r_ours.sender_streams, r_theirs.sender_streams, "{args:?}");
        assert_eq!(r_ours.interval_bps.len(), r_theirs.interval_bps.len());
        assert!(
            r_ours.host_total > 0.0 && r_ours.remote_total > 0.0,
            "{r_ours:?}"
        );
        if compare {
            // Paced senders on loopback: both within 5% of each other, figure by figure.
            if let (Some(o), Some(t)) = (r_ours.sent_bps, r_theirs.sent_bps) {
                within("sum_sent", o, t, 0.05);
            }
            if let (Some(o), Some(t)) = (r_ours.received_bps, r_theirs.received_bps) {
                within("sum_received", o, t, 0.05);
            }
            let last = |r: &Read| r.interval_bps.last().copied().unwrap_or(0.0);
            within("last interval", last(&r_ours), last(&r_theirs), 0.10);
            if let (Some(o), Some(t)) = (r_ours.udp_lost_percent, r_theirs.udp_lost_percent) {
                assert!(o <= 1.0 && t <= 1.0, "loss on loopback: {o}% / {t}%");
            }
            if let (Some(o), Some(t)) = (r_ours.udp_jitter_ms, r_theirs.udp_jitter_ms) {
                assert!(
                    (0.0..5.0).contains(&o) && (0.0..5.0).contains(&t),
                    "{o} / {t}"
                );
            }
        }
        match python_reader(&text) {
            Ok(line) => {
                python_checked = true;
                assert!(!line.trim().is_empty());
            }
            Err(e) if e.contains("No module named 'iperf3'") => {}
            Err(e) => panic!("python's iperf3.TestResult: {e}"),
        }
    }
    if !python_checked {
        eprintln!(
            "iperf3_mode_json_reads_like_iperf3s_own_for_the_same_test: python3's iperf3 package \
             is not installed (pip install iperf3): its TestResult was not tried"
        );
    }
}

#[test]
fn json_stream_writes_start_intervals_and_end_one_line_each() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = common::TestServer::start(netsweep::traffic::spec::ServerLimits::default());
    let text = run(
        NETSWEEP,
        server.addr,
        &["-t", "2", "-b", "100M", "--json-stream"],
    );
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(names, ["start", "interval", "interval", "end"], "{text}");
    assert_eq!(events[0]["data"]["test_start"]["protocol"], "TCP");
    assert!(events[1]["data"]["sum"]["bits_per_second"].as_f64() > Some(0.0));
    assert!(events[3]["data"]["sum_sent"]["bits_per_second"].as_f64() > Some(0.0));
}

#[test]
fn drop_in_json_is_iperf3s_and_netsweeps_stays_available() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = common::TestServer::start(netsweep::traffic::spec::ServerLimits::default());
    let doc = |args: &[&str]| -> Value {
        serde_json::from_str(&run(NETSWEEP, server.addr, args)).expect("json")
    };
    // `netsweep -c HOST -J`, iperf3's command line: iperf3's document, against a netsweep server.
    let d = doc(&["-t", "1", "-J"]);
    assert!(
        d["end"]["sum_sent"]["bits_per_second"].as_f64() > Some(0.0),
        "{d:#}"
    );
    assert!(d["extensions"]["summary"]["bits_per_second"].is_number());
    // --json=netsweep: netsweep's own.
    let d = doc(&["-t", "1", "--json=netsweep"]);
    assert!(
        d["summary"]["bits_per_second"].as_f64() > Some(0.0),
        "{d:#}"
    );
    assert!(d.get("end").is_none());
    // `netsweep client HOST --json` keeps netsweep's document.
    let out = Command::new(NETSWEEP)
        .args(["client", "127.0.0.1", "-p", &server.addr.port().to_string()])
        .args(["-t", "1", "--json"])
        .output()
        .expect("netsweep client");
    let d: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        d["summary"]["bits_per_second"].as_f64() > Some(0.0),
        "{d:#}"
    );
}

#[test]
fn a_failed_test_still_gives_iperf3s_readers_an_error_key() {
    let port = common::free_port();
    let out = Command::new(NETSWEEP)
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
        .output()
        .expect("netsweep");
    assert!(!out.status.success());
    let d: Value = serde_json::from_slice(&out.stdout).expect("a JSON document");
    assert!(
        d["error"].as_str().is_some_and(|e| e.contains("connect")),
        "{d:#}"
    );
    assert!(d["start"]["test_start"].is_object());
}

/// A trial's findings: where iperf3 writes a document with its `error` (an address of the
/// other family, a listener that cannot start), pScheduler's iperf3 tool read an empty
/// standard output from netsweep. Option errors stay refusals on standard error, as iperf3's.
#[test]
fn failures_iperf3_writes_as_json_are_json() {
    let port = common::free_port().to_string();
    let netsweep = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(args)
            .output()
            .expect("netsweep")
    };
    for args in [
        vec!["-c", "::1", "-4", "-p", &port, "-t", "1", "-J"],
        vec!["-c", "127.0.0.1", "-6", "-p", &port, "-t", "1", "-J"],
        vec!["-c", "127.0.0.1", "-B", "::1", "-p", &port, "-t", "1", "-J"],
    ] {
        let out = netsweep(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {:?}", out.stdout));
        let error = doc["error"].as_str().unwrap_or_default();
        assert!(error.contains("address"), "{args:?}: {doc}");
        assert_eq!(doc["intervals"], serde_json::json!([]), "{args:?}");
    }
    // The listener: the port held by a socket of this test.
    let held = std::net::TcpListener::bind("[::]:0").expect("a port");
    let taken = held.local_addr().expect("its address").port().to_string();
    let out = netsweep(&["-s", "-1", "-p", &taken, "-J"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a document");
    assert!(
        doc["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("unable to start listener for connections")),
        "{doc}"
    );
    // An option error is refused before any document, as iperf3 does.
    let out = netsweep(&["-c", "127.0.0.1", "-p", &port, "-R", "--bidir", "-J"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
}
