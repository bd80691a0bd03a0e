//! The smaller places where netsweep stood in for iperf3 less well (issue 41, item 6), each
//! checked as a user meets it: netsweep's client against an iperf3 server on another port
//! than 5201 names it and the flag to add; a netsweep server tells iperf3's `-J` its
//! congestion control unasked; `--max-duration 2` takes netsweep's own `-t 2`; `-T` titles
//! every line.

mod common;

use common::{KillOnDrop, TestServer};
use netsweep::traffic::spec::{ServerLimits, TestSpec};
use serde_json::Value;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `netsweep -c HOST -p P` against `iperf3 -s -1 -p P`: the iperf3 server takes netsweep's
/// greeting as its cookie and asks for the parameters, and the test runs in iperf3's protocol
/// on that connection, saying so. (Before protocol 3 the greeting went unanswered for 3 s.) It said "looks like an iperf3 server: add --iperf3"
/// and hung up, which ended a `-1` server's one test, so the suggested command then met a
/// refused connection.
#[test]
fn an_iperf3_server_on_another_port_gets_its_test_in_iperf3s_protocol() {
    let test = "an_iperf3_server_on_another_port_gets_its_test_in_iperf3s_protocol";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    let port = common::free_port();
    let mut server = KillOnDrop(
        Command::new("iperf3")
            .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s"),
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    common::wait_listening_quietly(addr);
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
        .output()
        .expect("netsweep -c");
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
    assert!(
        doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0) > 0,
        "{doc:#}"
    );
    let said = format!("{doc} {err}");
    assert!(
        said.contains(&format!(
            "{addr} answered as an iperf3 server: the test ran with iperf3's protocol"
        )),
        "{said}"
    );
    assert!(took < Duration::from_secs(12), "{took:?}");
    // The -1 server's one test was this one: it exits.
    let t1 = Instant::now();
    while server.0.try_wait().ok().flatten().is_none() {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "iperf3 -s -1 still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// iperf3 3.12's `-J` against `netsweep server` without `-C`: the server's congestion control
/// arrives as `receiver_tcp_congestion` (with `-R`, `sender_tcp_congestion`), as from iperf3's
/// own server.
#[test]
fn iperf3s_json_names_the_netsweep_servers_congestion_control() {
    let test = "iperf3s_json_names_the_netsweep_servers_congestion_control";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let expected = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    for extra in [&[][..], &["-R"]] {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &server.addr.port().to_string()])
            .args(["-J", "-t", "1"])
            .args(extra)
            .output()
            .expect("iperf3 -c");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
        assert!(doc.get("error").is_none(), "{doc:#}");
        // The far end's is the receiver's, or with -R the sender's.
        for key in ["sender_tcp_congestion", "receiver_tcp_congestion"] {
            let cc = doc["end"][key].as_str();
            assert!(
                cc.is_some_and(|c| !c.is_empty()),
                "{extra:?} {key}: {:#}",
                doc["end"]
            );
            if !expected.is_empty() {
                assert_eq!(cc, Some(expected.as_str()), "{extra:?} {key}");
            }
        }
    }
}

/// `--max-duration 2` takes netsweep's own `-t 2`: the 0.3 s send path calibration is not
/// the user's time; `-t 3` is still refused.
#[test]
fn max_duration_takes_the_asked_time_without_the_calibration() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_duration: Duration::from_secs(2),
        ..ServerLimits::default()
    });
    let two = TestSpec::tcp(Duration::from_secs(2));
    assert!(!two.effective_calibration().is_zero());
    let r = server.run(&two).unwrap_or_else(|e| panic!("{}", e.message));
    assert!(r.directions[0].summary.bytes > 0);
    let e = server
        .run(&TestSpec::tcp(Duration::from_secs(3)))
        .unwrap_err();
    assert!(e.message.contains("--max-duration"), "{}", e.message);
}

/// `-T test1` against a netsweep server: every line of the text output starts with
/// "test1:  ", as iperf3's do.
#[test]
fn a_title_starts_every_line_of_the_output() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &server.addr.port().to_string()])
        .args(["-t", "1", "-T", "test1", "-N", "--repeating-payload", "-R"])
        .output()
        .expect("netsweep -c");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("receiver"), "{stdout}");
    for line in stdout.lines().filter(|l| !l.is_empty()) {
        assert!(line.starts_with("test1:  "), "{line:?} in\n{stdout}");
    }
}

/// `netsweep -s` where `iperf3 -s` stood: `iperf3 -c HOST` finds it on iperf3's port 5201
/// without `-p`, and netsweep's own client on 5310; where an iperf3 server already holds 5201
/// the server still starts, on 5310, and says how iperf3's clients reach it. In a namespace
/// of the test's own, whose ports nothing else uses (regression: "Connection refused" from
/// `iperf3 -c HOST` against `netsweep -s`).
#[test]
fn iperf3s_clients_find_netsweep_s_on_iperf3s_port() {
    let test = "iperf3s_clients_find_netsweep_s_on_iperf3s_port";
    if !common::tool_or_skip(test, "iperf3") || !common::root_or_skip(test) {
        return;
    }
    let _s = serial();
    let ns = common::netns::Netns::new("s5201");
    let start_server = |ns: &common::netns::Netns| {
        let mut child = ns
            .cmd(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-s", "-B", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("netsweep -s");
        let said = child.stderr.take().expect("stderr");
        let server = KillOnDrop(child);
        // The listening line and the notes after it (on standard error, as iperf3's), before
        // the first test.
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(said));
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        (server, first, lines)
    };
    let (server, first, _lines) = start_server(&ns);
    assert!(
        first.contains("127.0.0.1:5310 and 127.0.0.1:5201"),
        "{first}"
    );
    let out = ns
        .cmd("iperf3")
        .args(["-c", "127.0.0.1", "-t", "1", "-J"])
        .output()
        .expect("iperf3 -c");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success() && doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0) > 0,
        "{doc:#}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The server serves one test at a time, as iperf3's; the last is over.
    let out = ns
        .cmd(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-t", "0.5"])
        .output()
        .expect("netsweep client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(server);
    // iperf3's own server on 5201 first.
    let _iperf3 = iperf3_on_5201(&ns);
    let (_server, first, mut lines) = start_server(&ns);
    let note = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        first.contains("127.0.0.1:5310 (")
            && note.contains("not on iperf3's port 5201")
            && note.contains("iperf3 clients add -p 5310"),
        "{first}\n{note}"
    );
}

/// `iperf3 -s` on its port 5201 of the namespace's loopback, listening.
fn iperf3_on_5201(ns: &common::netns::Netns) -> KillOnDrop {
    let server = KillOnDrop(
        ns.cmd("iperf3")
            .args(["-s", "-B", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s"),
    );
    ns.wait_listening(5201);
    server
}

/// `netsweep -c HOST` without `-p` where only `iperf3 -s` runs (on 5201): it was "connection
/// refused ... add -p 5201"; it now says nothing listens on 5310 and runs the test on 5201,
/// telling the iperf3 server apart by itself. With neither there, the error names both ports.
#[test]
fn netsweep_c_without_p_finds_iperf3s_server_on_5201() {
    let test = "netsweep_c_without_p_finds_iperf3s_server_on_5201";
    if !common::tool_or_skip(test, "iperf3") || !common::root_or_skip(test) {
        return;
    }
    let _s = serial();
    let ns = common::netns::Netns::new("fb5201");
    let client = |args: &[&str]| {
        ns.cmd(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-c", "127.0.0.1", "-t", "1"])
            .args(args)
            .output()
            .expect("netsweep -c")
    };
    let out = client(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("port 5310 (netsweep's) and 5201 (iperf3's)"),
        "{err}"
    );
    let iperf3 = iperf3_on_5201(&ns);
    let out = client(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "Nothing listens on port 5310 (netsweep's); connecting to host 127.0.0.1, port 5201 \
             (iperf3's)"
        ) && text.contains("receiver"),
        "{text}"
    );
    // -J: the document is iperf3's server's test, and standard output is JSON alone.
    let out = client(&["-J"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(
        out.status.success()
            && doc["start"]["connecting_to"]["port"] == 5201
            && doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0) > 0,
        "{doc:#}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(iperf3);
}

/// iperf3's `-J --get-server-output` against `netsweep -s -1 -J`: the server's own document
/// as `server_output_json` (`start`, `intervals`, `end`), the one the server prints, as from
/// `iperf3 -s -J`; against a server without `-J`, its text (`server_output_text`).
#[test]
fn get_server_output_follows_the_servers_json_as_iperf3s() {
    let test = "get_server_output_follows_the_servers_json_as_iperf3s";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    for server_json in [true, false] {
        let port = common::free_port();
        let mut args = vec!["-s", "-1", "-B", "127.0.0.1"];
        if server_json {
            args.push("-J");
        }
        let server = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(&args)
            .args(["-p", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("netsweep -s");
        let mut server = KillOnDrop(server);
        common::wait_listening_quietly(SocketAddr::from(([127, 0, 0, 1], port)));
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port.to_string()])
            .args(["-J", "-t", "1", "--get-server-output"])
            .output()
            .expect("iperf3 -c");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
        assert!(doc.get("error").is_none(), "{doc:#}");
        if !server_json {
            // The server's text as it writes it on stdout: its receiver line has the bytes
            // the client's document says the server received.
            let t = doc["server_output_text"].as_str().unwrap_or_default();
            let received = netsweep::units::Bytes(
                doc["end"]["sum_received"]["bytes"].as_u64().expect("bytes"),
            );
            assert!(
                t.lines()
                    .any(|l| l.ends_with("receiver") && l.contains(&format!(" {received} "))),
                "{received} in {doc:#}"
            );
            assert!(t.contains("Accepted connection from 127.0.0.1"), "{t}");
            assert!(doc.get("server_output_json").is_none());
            continue;
        }
        let theirs = &doc["server_output_json"];
        for key in ["start", "intervals", "end"] {
            assert!(theirs.get(key).is_some(), "{key}: {theirs:#}");
        }
        // What the server received is what the client's document says it received.
        assert_eq!(
            theirs["end"]["sum_received"]["bytes"], doc["end"]["sum_received"]["bytes"],
            "{theirs:#}"
        );
        // -1: the server exits after its test and prints its document.
        let t0 = Instant::now();
        while server.0.try_wait().ok().flatten().is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the -1 server did not exit"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut printed = String::new();
        if let Some(mut out) = server.0.stdout.take() {
            std::io::Read::read_to_string(&mut out, &mut printed).expect("its output");
        }
        let printed: Value = serde_json::from_str(&printed).expect("the server's document");
        // The same document (iperf3's cJSON rewrites 1.0 as 1: the counts are compared).
        assert_eq!(
            printed["end"]["sum_received"]["bytes"],
            theirs["end"]["sum_received"]["bytes"]
        );
        assert_eq!(
            printed["end"]["sum_sent"]["bytes"],
            theirs["end"]["sum_sent"]["bytes"]
        );
        let bytes = |d: &Value| -> Vec<Value> {
            d["intervals"]
                .as_array()
                .map(|a| a.iter().map(|i| i["sum"]["bytes"].clone()).collect())
                .unwrap_or_default()
        };
        assert!(!bytes(&printed).is_empty(), "{printed:#}");
        assert_eq!(
            bytes(&printed),
            bytes(theirs),
            "the document the server printed"
        );
    }
}
