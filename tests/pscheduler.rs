//! netsweep as a pScheduler tool, driven with the JSON pScheduler sends: real two-participant
//! runs on 127.0.0.1 (the server participant in a thread or a child process, the client, then
//! merged-results), the failure paths, and every method through the binary and the plugin's
//! scripts in contrib/pscheduler/netsweep. Every output is checked against the throughput
//! result schema (netsweep's checks, and Python's jsonschema when it is installed).

use netsweep::pscheduler::config::ToolConfig;
use netsweep::pscheduler::{iso8601, result, run, schema};
use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

/// A rate no loopback of this decade carries (memory copies top out far below it).
const LOOPBACK_CEILING_BPS: f64 = 400e9;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_netsweep")
}

/// The run's ticket in the server participant's data (`participant-data` makes a fresh one).
const TICKET: &str = "00112233445566778899aabbccddeeff";

fn run_input(participant: u64, server_port: u16, spec: &Value, start: SystemTime) -> Value {
    json!({
        "schema": 1,
        "task-uuid": "0d5a4a5e-9b4b-4f0e-8f3c-5b1f0e7f3c11",
        "schedule": {"start": iso8601::format_timestamp(start), "duration": "PT20S"},
        "test": {"type": "throughput", "spec": spec},
        "participant": participant,
        "participant-data": [
            {"schema": 1, "netsweep-version": "0.1.0"},
            {"schema": 2, "netsweep-version": "0.1.0", "server_port": server_port,
             "_auth": {"ticket": TICKET}}
        ]
    })
}

/// Every problem the schema checks find, and Python's jsonschema's when it is installed.
fn assert_valid(docs: &[&Value]) {
    for d in docs {
        assert_eq!(schema::problems(d), Vec::<String>::new(), "{d}");
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pscheduler/validate.py");
    let child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("skipping the jsonschema cross-check: python3 is not available");
        return;
    };
    if let Some(mut stdin) = child.stdin.take() {
        for d in docs {
            writeln!(stdin, "{d}").expect("write to validate.py");
        }
    }
    let out = child.wait_with_output().expect("validate.py");
    match out.status.code() {
        Some(0) => {}
        Some(3) => eprintln!("skipping the jsonschema cross-check: python3 has no jsonschema"),
        _ => panic!(
            "jsonschema refuses netsweep's output:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The merged figures against physics and against each other.
fn check_physics(m: &Value, spec: &Value) {
    let sum = &m["summary"]["summary"];
    let secs = f(&sum["end"]) - f(&sum["start"]);
    let duration = iso8601::parse_duration(spec["duration"].as_str().unwrap_or("PT10S"))
        .expect("duration")
        .as_secs_f64();
    assert!(
        (secs - duration).abs() < 0.01,
        "measured {secs} s of {duration} s"
    );
    let sent_bytes = f(&sum["throughput-bytes"]);
    let sent_bps = f(&sum["throughput-bits"]);
    assert!(
        (sent_bps - sent_bytes * 8.0 / secs).abs() <= 1e-6 * sent_bps,
        "{sum}"
    );
    let recv_bps = f(&sum["receiver-throughput-bits"]);
    for bps in [sent_bps, recv_bps] {
        assert!(
            bps > 1e6 && bps < LOOPBACK_CEILING_BPS,
            "{bps} bit/s on loopback"
        );
    }
    let streams = m["summary"]["streams"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let parallel = spec["parallel"].as_u64().unwrap_or(1);
    assert_eq!(streams.len() as u64, parallel);
    let stream_bytes: f64 = streams.iter().map(|s| f(&s["throughput-bytes"])).sum();
    assert_eq!(stream_bytes, sent_bytes);
    let measured: f64 = m["intervals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["summary"]["omitted"] != json!(true))
        .map(|i| f(&i["summary"]["throughput-bytes"]))
        .sum();
    assert_eq!(measured, sent_bytes, "intervals add up to the summary");
    let recv_bytes = recv_bps * secs / 8.0;
    if spec["udp"] == json!(true) {
        let asked = f(&spec["bandwidth"]);
        assert!(
            (sent_bps - asked).abs() < 0.1 * asked,
            "{sent_bps} of {asked}"
        );
        let (sent, lost) = (f(&sum["sent"]), f(&sum["lost"]));
        assert!(lost <= sent && sent > 0.0, "{sum}");
        assert!(
            recv_bytes <= sent_bytes * 1.001,
            "received more than sent: {sum}"
        );
        assert!(sum["jitter"].is_number());
    } else {
        // What was written but not yet read at the end sits in the socket buffers: at most a
        // few tens of MiB per stream on any Linux default.
        let in_flight = parallel as f64 * 32.0 * 1024.0 * 1024.0;
        assert!(
            (sent_bytes - recv_bytes).abs() <= in_flight + 0.01 * sent_bytes,
            "sender {sent_bytes} B, receiver {recv_bytes} B"
        );
        assert!(sum["retransmits"].is_u64(), "{sum}");
    }
}

/// Runs the server participant in a thread on `127.0.0.1:0` and the client here, then merges.
fn two_participants(spec: Value) -> (Value, Value, Value) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let start = SystemTime::now();
    let config = ToolConfig::default();
    let stop = AtomicBool::new(false);
    let (client, server) = std::thread::scope(|s| {
        let server_input = run_input(1, port, &spec, start);
        let (config, stop) = (&config, &stop);
        let server = s.spawn(move || run::run_with(&server_input, config, stop, Some(listener)));
        let client = run::run(&run_input(0, port, &spec, start), config, stop);
        (client, server.join().expect("server thread"))
    });
    let (client, server) = (client.expect("client input"), server.expect("server input"));
    let merged = result::merge(&json!({
        "test": {"type": "throughput", "spec": spec},
        "results": [client, server]
    }));
    assert_valid(&[&client, &server, &merged]);
    (client, server, merged)
}

#[test]
fn a_tcp_test_between_two_participants_on_loopback() {
    let spec = json!({"schema": 1, "source": "127.0.0.1", "dest": "127.0.0.1",
                      "duration": "PT2S", "interval": "PT0.5S", "parallel": 2, "omit": "PT1S"});
    let (client, server, merged) = two_participants(spec.clone());
    assert_eq!(client["succeeded"], json!(true), "{client}");
    assert_eq!(server["succeeded"], json!(true), "{server}");
    assert_eq!(merged["succeeded"], json!(true), "{merged}");
    check_physics(&merged, &spec);
    let diags = merged["diags"].as_str().unwrap_or("");
    assert!(
        diags.contains("Participant 0:") && diags.contains("Participant 1:"),
        "{diags}"
    );
    let omitted = merged["intervals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["summary"]["omitted"] == json!(true))
        .count();
    assert_eq!(
        omitted, 3,
        "1 s omitted in 0.5 s intervals, after 0.3 s of calibration"
    );
}

#[test]
fn a_reverse_tcp_test_has_the_sender_on_participant_1() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT2S", "reverse": true,
                      "window-size": 1_048_576, "mss": 1400, "buffer-length": 131_072});
    let (_, _, merged) = two_participants(spec.clone());
    assert_eq!(merged["succeeded"], json!(true), "{merged}");
    check_physics(&merged, &spec);
    assert_eq!(merged["requested-tcp-window-size"], json!(1_048_576));
    let mss = merged["mss"].as_u64().unwrap_or(0);
    assert!(mss > 0 && mss <= 1400, "the sender's MSS {mss}");
}

#[test]
fn a_udp_test_reports_sent_lost_and_jitter() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT2S", "udp": true,
                      "bandwidth": 20_000_000, "parallel": 2});
    let (_, _, merged) = two_participants(spec.clone());
    assert_eq!(merged["succeeded"], json!(true), "{merged}");
    check_physics(&merged, &spec);
}

#[test]
fn loopback_runs_both_ends_in_participant_0() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "loopback": true});
    let mut input = run_input(0, 0, &spec, SystemTime::now());
    input["participant-data"] = json!([{"schema": 1}]);
    let client = run::run(&input, &ToolConfig::default(), &AtomicBool::new(false)).expect("input");
    let merged = result::merge(&json!({"test": {"spec": spec}, "results": [client]}));
    assert_valid(&[&merged]);
    assert_eq!(merged["succeeded"], json!(true), "{merged}");
    check_physics(&merged, &spec);
}

#[test]
fn a_server_participant_gives_up_when_no_client_comes() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "link-rtt": "PT0.01S"});
    // The slot is 1 + 3 + 0.3 + 1 + 2 = 7.3 s: starting 6 s ago leaves about a second.
    let start = SystemTime::now() - Duration::from_secs(6);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let t0 = Instant::now();
    let input = run_input(1, 0, &spec, start);
    let v = run::run_with(
        &input,
        &ToolConfig::default(),
        &AtomicBool::new(false),
        Some(listener),
    )
    .expect("input");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "waited {:?}",
        t0.elapsed()
    );
    assert_eq!(v["succeeded"], json!(false));
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("no test arrived")),
        "{v}"
    );
    assert_valid(&[&v]);
}

#[test]
fn a_client_participant_says_when_its_server_never_answers() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "link-rtt": "PT0.01S"});
    // A port nobody listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    // It waits for the server until start + 1 s of setup + 3 s: starting 3 s ago leaves ~1 s.
    let start = SystemTime::now() - Duration::from_secs(3);
    let t0 = Instant::now();
    let v = run::run(
        &run_input(0, port, &spec, start),
        &ToolConfig::default(),
        &AtomicBool::new(false),
    )
    .expect("input");
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "waited {:?}",
        t0.elapsed()
    );
    assert_eq!(v["succeeded"], json!(false));
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("did not answer")),
        "{v}"
    );
    assert_valid(&[&v]);
}

#[test]
fn run_inputs_that_are_not_runs_of_this_tool_are_refused() {
    let cfg = ToolConfig::default();
    let stop = AtomicBool::new(false);
    let spec = json!({"dest": "127.0.0.1"});
    let mut three = run_input(0, 1, &spec, SystemTime::now());
    three["participant-data"] = json!([{}, {}, {}]);
    let mut late = run_input(0, 1, &spec, SystemTime::now());
    late["schedule"]["start"] = json!("tomorrow");
    for (input, needle) in [
        (json!({}), "participant"),
        (three, "2 participants"),
        (late, "schedule.start"),
        (
            run_input(2, 1, &spec, SystemTime::now()),
            "participant number 2",
        ),
        (
            run_input(
                0,
                1,
                &json!({"dest": "h", "burst-size": 5}),
                SystemTime::now(),
            ),
            "burst-size",
        ),
    ] {
        match run::run(&input, &cfg, &stop) {
            Err(e) => assert!(e.0.contains(needle), "{needle}: {e}"),
            Ok(v) => panic!("{input} ran: {v}"),
        }
    }
    // A flow label towards an IPv4 address is refused with the reason, before any traffic
    // (as can-run refuses it, so that pScheduler picks another tool).
    let labelled = run_input(
        0,
        1,
        &json!({"dest": "127.0.0.1", "flow-label": 5}),
        SystemTime::now(),
    );
    match run::run(&labelled, &cfg, &stop) {
        Err(e) => assert!(e.0.contains("flow labels are IPv6's"), "{e}"),
        Ok(v) => panic!("ran: {v}"),
    }
}

// Through the binary and the plugin's scripts.

fn method(name: &str, input: &str, conf: Option<&Path>) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(["pscheduler", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(c) = conf {
        cmd.env("NETSWEEP_PSCHEDULER_CONF", c);
    }
    let mut child = cmd.spawn().expect("netsweep");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write input");
    child.wait_with_output().expect("netsweep output")
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

#[test]
fn every_method_through_the_binary() {
    let e = json_of(&method("enumerate", "", None));
    assert_eq!(
        (e["name"].as_str(), e["tests"].clone()),
        (Some("netsweep"), json!(["throughput"]))
    );
    for key in ["description", "version", "preference", "maintainer"] {
        assert!(e.get(key).is_some(), "enumerate lacks {key}: {e}");
    }
    let test =
        json!({"type": "throughput", "spec": {"schema": 1, "dest": "h", "duration": "PT10S"}});
    assert_eq!(
        json_of(&method("can-run", &test.to_string(), None)),
        json!({"can-run": true})
    );
    assert_eq!(
        json_of(&method("duration", &test.to_string(), None)),
        json!({"duration": "PT20S"})
    );
    let p1 = json!({"participant": 1, "test": test});
    let d1 = json_of(&method("participant-data", &p1.to_string(), None));
    assert_eq!(d1["server_port"], json!(5310));
    // A fresh secret per run, as the iperf3 tool's fresh key and password.
    let d2 = json_of(&method("participant-data", &p1.to_string(), None));
    let ticket = |d: &Value| d["_auth"]["ticket"].as_str().map(str::to_string);
    assert_eq!(ticket(&d1).map(|t| t.len()), Some(32), "{d1}");
    assert_ne!(ticket(&d1), ticket(&d2));
    let bad = method("participant-data", r#"{"participant": 7}"#, None);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("participant number 7"));
    let merged = json_of(&method(
        "merged-results",
        r#"{"test": {"spec": {}}, "results": []}"#,
        None,
    ));
    assert_eq!(merged["succeeded"], json!(false));
    let not_json = method("can-run", "{", None);
    assert_eq!(not_json.status.code(), Some(1));
    // A run input that is not one still answers with a result pScheduler can store.
    let run = method("run", r#"{"participant": 0}"#, None);
    assert_eq!(run.status.code(), Some(1));
    assert_valid(&[&json_of(&run)]);
}

#[test]
fn the_tool_configuration_file_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("netsweep.conf");
    std::fs::write(&conf, "[netsweep]\nserver_port = 5999\nmax_streams = 2\n").expect("write");
    let p1 = method("participant-data", r#"{"participant": 1}"#, Some(&conf));
    assert_eq!(json_of(&p1)["server_port"], json!(5999));
    let test = json!({"type": "throughput", "spec": {"dest": "h", "parallel": 4}});
    let v = json_of(&method("can-run", &test.to_string(), Some(&conf)));
    assert_eq!(v["can-run"], json!(false));
    assert!(
        v["reasons"][0]
            .as_str()
            .is_some_and(|r| r.contains("netsweep.conf")),
        "{v}"
    );
    std::fs::write(&conf, "[netsweep]\nserver_port = x\n").expect("write");
    let broken = method("can-run", &test.to_string(), Some(&conf));
    assert_eq!(
        broken.status.code(),
        Some(1),
        "a broken configuration is said out loud"
    );
}

fn contrib() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/pscheduler/netsweep")
}

#[test]
fn the_plugin_scripts_exec_the_binary() {
    for m in [
        "enumerate",
        "can-run",
        "duration",
        "participant-data",
        "run",
        "merged-results",
    ] {
        let path = contrib().join(m);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert!(text.contains(&format!("pscheduler {m}")), "{m}: {text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .map(|m| m.permissions().mode())
                .unwrap_or(0);
            assert!(mode & 0o111 != 0, "{m} is not executable");
        }
    }
    let out = Command::new(contrib().join("enumerate"))
        .env("NETSWEEP", bin())
        .output()
        .expect("enumerate script");
    assert_eq!(json_of(&out)["name"], json!("netsweep"));
}

/// Kills a child on drop, so a failing test leaves no process behind.
struct Reaped(Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn two_participants_as_pscheduler_runs_them_in_child_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let conf = dir.path().join("netsweep.conf");
    std::fs::write(&conf, format!("[netsweep]\nserver_port = {port}\n")).expect("write");
    let spec = json!({"schema": 7, "source": "127.0.0.1", "dest": "127.0.0.1", "duration": "PT1S",
                      "ip-version": 4, "link-rtt": "PT0.01S"});
    let start = SystemTime::now() + Duration::from_millis(500);
    let server_input = run_input(1, port, &spec, start).to_string();
    let mut server = Command::new(contrib().join("run"))
        .env("NETSWEEP", bin())
        .env("NETSWEEP_PSCHEDULER_CONF", &conf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server participant");
    server
        .stdin
        .take()
        .expect("stdin")
        .write_all(server_input.as_bytes())
        .expect("server input");
    let mut server = Reaped(Some(server));
    let client = method(
        "run",
        &run_input(0, port, &spec, start).to_string(),
        Some(&conf),
    );
    let server = server
        .0
        .take()
        .expect("child")
        .wait_with_output()
        .expect("server output");
    let (client, server) = (json_of(&client), json_of(&server));
    let merged = json_of(&method(
        "merged-results",
        &json!({"test": {"type": "throughput", "spec": spec}, "results": [client, server]})
            .to_string(),
        None,
    ));
    assert_valid(&[&client, &server, &merged]);
    assert_eq!(merged["succeeded"], json!(true), "{merged}");
    check_physics(&merged, &spec);
}

/// The server participant stops after its one test: `Served` counts admitted tests that
/// ended, not admission questions nor refusals.
#[test]
fn the_server_counts_only_admitted_tests_that_end() {
    use netsweep::traffic::client::{self, Admission, ClientConfig};
    use netsweep::traffic::server::{self, Served};
    use netsweep::traffic::spec::{ServerLimits, TestSpec};
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let cfg = ClientConfig::new(listener.local_addr().expect("addr"));
    let served = Arc::new(Served::default());
    let shutdown = AtomicBool::new(false);
    let limits = ServerLimits {
        max_streams: 2,
        ..ServerLimits::default()
    };
    std::thread::scope(|s| {
        let (observer, shutdown) = (served.clone(), &shutdown);
        let log: server::Log = Arc::new(|_: &str| {});
        let handle =
            s.spawn(move || server::run_observed(vec![listener], limits, shutdown, log, observer));
        let mut spec = TestSpec::tcp(Duration::from_millis(500));
        spec.calibration = Duration::ZERO;
        assert_eq!(client::check(&cfg, &spec), Admission::Admissible);
        let mut too_many = spec.clone();
        too_many.streams = 3;
        let stop = AtomicBool::new(false);
        assert!(client::run_test(&cfg, &too_many, &stop, &mut |_| {}).is_err());
        assert_eq!(served.ended(), 0, "a question and a refusal are not tests");
        let r = client::run_test(&cfg, &spec, &stop, &mut |_| {});
        assert!(r.is_ok(), "{:?}", r.err());
        let t0 = Instant::now();
        while served.ended() == 0 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        shutdown.store(true, Ordering::SeqCst);
        let _ = handle.join();
    });
    assert_eq!(served.ok.load(Ordering::SeqCst), 1);
    assert_eq!(served.failed.load(Ordering::SeqCst), 0);
}

/// The destination's limits hold even when the source's `can-run` allowed the test (the
/// hosts' configurations differ): the client fails at once with the server's reason.
#[test]
fn the_server_participant_enforces_its_own_limits() {
    let spec = json!({"schema": 1, "dest": "127.0.0.1", "duration": "PT1S", "parallel": 2,
                      "link-rtt": "PT0.01S"});
    let strict = ToolConfig {
        max_streams: 1,
        ..ToolConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let start = SystemTime::now();
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    let (client, server) = std::thread::scope(|s| {
        let server_input = run_input(1, port, &spec, start);
        let (strict, stop) = (&strict, &stop);
        let server = s.spawn(move || run::run_with(&server_input, strict, stop, Some(listener)));
        let client = run::run(
            &run_input(0, port, &spec, start),
            &ToolConfig::default(),
            stop,
        );
        (
            client.expect("client input"),
            server.join().expect("server thread"),
        )
    });
    let server = server.expect("server input");
    let e = client["error"].as_str().unwrap_or("");
    assert!(
        e.contains("refused") && e.contains("max-streams"),
        "{client}"
    );
    // Regression: the server participant waited out its slot (1 + 3 + 0.3 + 1 + 2 s) and
    // said "no test arrived"; it ends when it refuses the scheduled test, and says so.
    assert_eq!(server["succeeded"], json!(false), "{server}");
    let e = server["error"].as_str().unwrap_or("");
    assert!(
        e.contains("refused the scheduled test") && e.contains("max-streams"),
        "{server}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    let merged = result::merge(&json!({"test": {"spec": spec}, "results": [client, server]}));
    assert_eq!(merged["succeeded"], json!(false));
    assert_valid(&[&client, &server, &merged]);
}

/// netsweep as the `iperf3_cmd` of pScheduler's own iperf3 tool: the server participant's
/// `iperf3 -s -1 -p PORT` serves one test and exits by itself, and the client participant's
/// command line (`-p PORT -c DEST -t N --json` and the spec's options, as the tool's `run`
/// builds it) gives the iperf3 document the tool's parser reads.
#[test]
fn netsweep_serves_as_the_iperf3_tools_iperf3_cmd() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
        .to_string();
    let mut server = Command::new(bin())
        .args(["-s", "-1", "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("netsweep -s -1");
    std::thread::sleep(Duration::from_millis(500));
    let out = Command::new(bin())
        .args([
            "-p",
            &port,
            "-c",
            "127.0.0.1",
            "-t",
            "2",
            "--json",
            "-i",
            "1",
            "-P",
            "2",
            "-w",
            "1048576",
            "-M",
            "1400",
            "-O",
            "1",
            "-S",
            "32",
            "-4",
            "-Z",
        ])
        .output()
        .expect("netsweep -c");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert!(out.status.success(), "{doc:#}");
    assert!(doc.get("error").is_none(), "{doc:#}");
    assert_eq!(doc["start"]["test_start"]["tos"], json!(32));
    assert_eq!(doc["start"]["test_start"]["num_streams"], json!(2));
    for key in ["sum_sent", "sum_received"] {
        assert!(
            f(&doc["end"][key]["bits_per_second"]) > 0.0,
            "{key}: {doc:#}"
        );
    }
    assert_eq!(doc["end"]["streams"].as_array().map(Vec::len), Some(2));
    // -1: the server leaves by itself once its one test is over, successfully.
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = server.kill();
            panic!("netsweep -s -1 still running 10 s after its test");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}

/// Regression: while participant 1 waited, a stray client from 127.0.0.5 ran a test,
/// participant 1 reported success and the scheduled client was refused. The server
/// participant now admits only the client with the run's ticket, from the spec's source.
#[test]
fn a_stranger_cannot_take_the_scheduled_slot() {
    use netsweep::traffic::client::{self, Bind, ClientConfig};
    use netsweep::traffic::spec::TestSpec;

    let spec = json!({"schema": 7, "source": "127.0.0.1", "dest": "127.0.0.1",
                      "duration": "PT1S", "ip-version": 4, "link-rtt": "PT0.01S"});
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let start = SystemTime::now() + Duration::from_millis(1500);
    let config = ToolConfig::default();
    let stop = AtomicBool::new(false);
    let (client, server) = std::thread::scope(|s| {
        let server_input = run_input(1, addr.port(), &spec, start);
        let (config, stop) = (&config, &stop);
        let server = s.spawn(move || run::run_with(&server_input, config, stop, Some(listener)));
        std::thread::sleep(Duration::from_millis(300));
        let mut test = TestSpec::tcp(Duration::from_millis(300));
        test.calibration = Duration::ZERO;
        let halt = AtomicBool::new(false);
        let stranger = |bind: &str, ticket: Option<&str>| {
            let mut cfg = ClientConfig::new(addr);
            cfg.bind = Some(Bind::Address(bind.parse().expect("ip")));
            cfg.ticket = ticket.map(str::to_string);
            match client::run_test(&cfg, &test, &halt, &mut |_| {}) {
                Ok(_) => panic!("a stranger from {bind} ran a test"),
                Err(e) => e.message,
            }
        };
        let from_elsewhere = stranger("127.0.0.5", Some(TICKET));
        assert!(
            from_elsewhere.contains("not the scheduled client"),
            "{from_elsewhere}"
        );
        let no_ticket = stranger("127.0.0.1", None);
        assert!(no_ticket.contains("no ticket"), "{no_ticket}");
        let wrong = stranger("127.0.0.1", Some("0000"));
        assert!(wrong.contains("wrong ticket"), "{wrong}");
        let client = run::run(&run_input(0, addr.port(), &spec, start), config, stop);
        (client, server.join().expect("server thread"))
    });
    let (client, server) = (client.expect("client input"), server.expect("server input"));
    assert_eq!(client["succeeded"], json!(true), "{client}");
    assert_eq!(server["succeeded"], json!(true), "{server}");
    let diags = server["diags"].as_str().unwrap_or("");
    assert!(diags.contains("the scheduled test was served"), "{diags}");
    assert!(
        diags.contains("127.0.0.5"),
        "the log names the stranger: {diags}"
    );
    assert_valid(&[&client, &server]);
}
