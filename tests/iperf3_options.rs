//! iperf3's options both ways, with Debian's iperf3 (3.12 in CI). Against a netsweep server
//! each is honoured (`-n` with and without `-R`, `--get-server-output`, `-S`/`--dscp`,
//! `--fq-rate`) or refused out loud (`-L`, `-A`, `-m`), with iperf3's "not implemented" error
//! to the client and a server log line naming the option. netsweep's client honours `--cport`,
//! `--get-server-output`, `--connect-timeout`, `--dscp` and `--fq-rate` against an iperf3
//! server. What reaches the wire is checked against the kernel: packets counted by their DSCP
//! in a namespace's own queueing discipline, and rates against physics.

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
    // (-A N,M is honoured: tests/affinity.rs.)
    let cases: [(&[&str], &str); 2] = [
        (&["-L", "5", "-6"], "-L/--flowlabel"),
        (&["-b", "10M/100"], "-b RATE/BURST"),
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
    // -n with -R: the netsweep server sends until the client has its count and ends the test.
    let (doc, ok) = iperf3_json(&server, &["-n", "20M", "-R", "-i", "0"]);
    assert!(ok && doc.get("error").is_none(), "{doc:#}");
    let got = doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(got >= 20 << 20, "{got} bytes received: {doc:#}");
}

/// A network namespace of this test's own with `lo` up; removed on drop with what runs in it.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("nsw{tag}{}", std::process::id() % 100_000);
        if std::path::Path::new("/run/netns").join(&name).exists() {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
        }
        run(&["ip", "netns", "add", &name]);
        run(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        Netns(name)
    }

    fn cmd(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(argv);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.0]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn run(argv: &[&str]) {
    let st = Command::new(argv[0])
        .args(&argv[1..])
        .status()
        .expect(argv[0]);
    assert!(st.success(), "{argv:?}");
}

/// Sends everything leaving `lo` in namespace `ns` through htb class 1:10 when its TOS byte
/// (ECN bits masked off) is `tos`, else through 1:20, so `class_bytes` counts it.
fn count_tos(ns: &str, tos: &str) {
    run(&[
        "tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "20",
    ]);
    for class in ["1:10", "1:20"] {
        run(&[
            "tc", "-n", ns, "class", "add", "dev", "lo", "parent", "1:", "classid", class, "htb",
            "rate", "40gbit",
        ]);
    }
    run(&[
        "tc", "-n", ns, "filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "u32",
        "match", "ip", "dsfield", tos, "0xfc", "flowid", "1:10",
    ]);
}

/// Debian's iperf3 server on 127.0.0.1 at a free port, started and given time to listen.
fn iperf3_server() -> (std::process::Child, String) {
    let port = common::free_port().to_string();
    let server = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    std::thread::sleep(Duration::from_millis(500));
    (server, port)
}

/// Bytes that left `lo` in namespace `ns` through htb class `class`.
fn class_bytes(ns: &str, class: &str) -> u64 {
    let out = Command::new("tc")
        .args(["-n", ns, "-s", "class", "show", "dev", "lo"])
        .output()
        .expect("tc");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.contains(&format!("class htb {class} ")) {
            let sent = lines.next().unwrap_or_default();
            return sent
                .split_whitespace()
                .nth(1)
                .and_then(|b| b.parse().ok())
                .unwrap_or(0);
        }
    }
    panic!("no class {class} in {text}");
}

/// `-S`/`--dscp` and `--fq-rate` with `-R`: the netsweep server's data packets carry the DSCP
/// (counted by the kernel in an htb class that matches it) and its senders are paced to the
/// asked rate (the iperf3 client's received rate); `--get-server-output` says so too.
#[test]
fn a_netsweep_server_sends_with_the_clients_dscp_and_pacing() {
    let test = "a_netsweep_server_sends_with_the_clients_dscp_and_pacing";
    if !common::root_or_skip(test) || !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = Netns::new("dscp");
    let n = ns.0.as_str();
    // EF is DSCP 46: TOS byte 0xb8, the ECN bits masked off.
    count_tos(n, "0xb8");
    let port = common::free_port().to_string();
    let mut server = ns
        .cmd(&[env!("CARGO_BIN_EXE_netsweep"), "server", "-p", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("netsweep server");
    std::thread::sleep(Duration::from_millis(500));
    let before = class_bytes(n, "1:10");
    let out = ns
        .cmd(&[
            "iperf3",
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-J",
            "-t",
            "3",
            "-R",
            "--dscp",
            "ef",
            "--fq-rate",
            "200M",
        ])
        .output()
        .expect("iperf3 -c");
    let _ = server.kill();
    let _ = server.wait();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
    assert!(doc.get("error").is_none(), "{doc:#}");
    let received = doc["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    let secs = doc["end"]["sum_received"]["seconds"]
        .as_f64()
        .unwrap_or(0.0);
    let tagged = class_bytes(n, "1:10") - before;
    // Every data byte the server sent went out tagged EF (plus headers and the client's ACKs).
    assert!(received > 10_000_000, "{doc:#}");
    assert!(
        tagged >= received,
        "{tagged} bytes tagged EF < {received} received"
    );
    // Paced at 200 Mbit/s per stream: the received rate cannot exceed it (physics: the kernel
    // releases no more), and a paced sender on an idle loopback reaches most of it.
    let rate = received as f64 * 8.0 / secs;
    assert!(
        (150e6..=206e6).contains(&rate),
        "{rate} bit/s for --fq-rate 200M"
    );
}

/// netsweep's client against an iperf3 server: `--cport` numbers the data streams' ports as
/// iperf3 does, `--get-server-output` prints the server's own account (where those ports
/// show), and `--dscp` and `--fq-rate` reach the wire.
#[test]
fn netsweeps_client_honours_iperf3s_options_against_iperf3() {
    let test = "netsweeps_client_honours_iperf3s_options_against_iperf3";
    if !common::root_or_skip(test) || !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = Netns::new("cport");
    let n = ns.0.as_str();
    // AF41 is DSCP 34: TOS byte 0x88.
    count_tos(n, "0x88");
    let mut server = ns
        .cmd(&["iperf3", "-s", "-p", "5301"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    std::thread::sleep(Duration::from_millis(500));
    let before = class_bytes(n, "1:10");
    let out = ns
        .cmd(&[
            env!("CARGO_BIN_EXE_netsweep"),
            "-c",
            "127.0.0.1",
            "-p",
            "5301",
            "--iperf3",
            "-t",
            "3",
            "-P",
            "2",
            "--cport",
            "41100",
            "--dscp",
            "af41",
            "--fq-rate",
            "100M",
            "--get-server-output",
            "--connect-timeout",
            "2000",
        ])
        .output()
        .expect("netsweep -c");
    let _ = server.kill();
    let _ = server.wait();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let server_part = text
        .split("Server output:")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    for port in ["41100", "41101"] {
        assert!(
            server_part.contains(&format!("port {port}")),
            "{port}: {text}"
        );
    }
    let tagged = class_bytes(n, "1:10") - before;
    // The iperf3 server's own receiver line: its total over its seconds.
    let sum = server_part
        .lines()
        .rfind(|l| l.starts_with("[SUM]") && l.contains("receiver"))
        .unwrap_or_else(|| panic!("{text}"));
    let words: Vec<&str> = sum.split_whitespace().collect();
    let mbit: f64 = words
        .iter()
        .position(|w| *w == "Mbits/sec")
        .and_then(|i| words[i - 1].parse().ok())
        .unwrap_or_else(|| panic!("{sum}"));
    assert!(
        (150.0..=206.0).contains(&mbit),
        "{mbit} Mbit/s for 2 x --fq-rate 100M: {sum}"
    );
    assert!(
        tagged as f64 >= mbit * 1e6 / 8.0 * 2.5,
        "{tagged} bytes tagged AF41: {text}"
    );
}

/// `--connect-timeout`: a connection that is never answered (a namespace's dummy interface
/// swallows the SYN) fails after the milliseconds given, naming the time out.
#[test]
fn the_connect_timeout_is_the_users() {
    let test = "the_connect_timeout_is_the_users";
    if !common::root_or_skip(test) {
        return;
    }
    let ns = Netns::new("ctmo");
    let far = Netns::new("ctmb");
    let n = ns.0.as_str();
    // A link whose far end has no address: the SYN arrives there and is dropped unanswered.
    run(&[
        "ip", "-n", n, "link", "add", "v0", "type", "veth", "peer", "name", "v1", "netns", &far.0,
    ]);
    run(&["ip", "-n", n, "addr", "add", "198.18.77.1/24", "dev", "v0"]);
    run(&["ip", "-n", n, "link", "set", "v0", "up"]);
    run(&["ip", "-n", &far.0, "link", "set", "v1", "up"]);
    run(&[
        "ip",
        "-n",
        n,
        "neigh",
        "add",
        "198.18.77.2",
        "lladdr",
        "02:00:00:00:00:02",
        "dev",
        "v0",
    ]);
    let t0 = Instant::now();
    let out = ns
        .cmd(&[
            env!("CARGO_BIN_EXE_netsweep"),
            "-c",
            "198.18.77.2",
            "--iperf3",
            "-t",
            "1",
            "--connect-timeout",
            "400",
        ])
        .output()
        .expect("netsweep -c");
    let took = t0.elapsed();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("timed out"), "{text}");
    // 400 ms, then the process exits; far below the 5 s default.
    assert!(took < Duration::from_secs(3), "{took:?}: {text}");
}

/// A rate in iperf3's text units, bit/s.
fn text_rate(value: &str, unit: &str) -> f64 {
    let v: f64 = value.parse().unwrap_or(f64::NAN);
    v * match unit {
        "Gbits/sec" => 1e9,
        "Mbits/sec" => 1e6,
        "Kbits/sec" => 1e3,
        _ => 1.0,
    }
}

fn text_bytes(value: &str, unit: &str) -> f64 {
    let v: f64 = value.parse().unwrap_or(f64::NAN);
    v * match unit {
        "GBytes" => f64::from(1u32 << 30),
        "MBytes" => f64::from(1u32 << 20),
        "KBytes" => 1024.0,
        _ => 1.0,
    }
}

/// Every summary line's rate is its bytes over its own interval (the sender's by this end's
/// clock, the receiver's by the iperf3 server's), within the text's 3-digit rounding, with
/// many streams against an iperf3 server; and the two ends' seconds agree (no INCONSISTENT).
#[test]
fn each_summary_line_divides_its_bytes_by_its_own_interval() {
    let test = "each_summary_line_divides_its_bytes_by_its_own_interval";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (mut server, port) = iperf3_server();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "--iperf3",
            "-t",
            "2",
            "-P",
            "32",
        ])
        .output()
        .expect("netsweep -c");
    let _ = server.kill();
    let _ = server.wait();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("INCONSISTENT"), "{text}");
    let mut seen = 0;
    for l in text
        .lines()
        .filter(|l| l.starts_with("[SUM]") && (l.ends_with("sender") || l.ends_with("receiver")))
    {
        let w: Vec<&str> = l.split_whitespace().collect();
        // [SUM] 0.00-2.00 sec 6.78 GBytes 19.4 Gbits/sec ...
        let (from, to) = w[1].split_once('-').expect("an interval");
        let secs = to.parse::<f64>().unwrap() - from.parse::<f64>().unwrap();
        let bytes = text_bytes(w[3], w[4]);
        let rate = text_rate(w[5], w[6]);
        let implied = bytes * 8.0 / secs;
        assert!(
            (rate - implied).abs() / implied < 0.012,
            "{l}: {rate} bit/s shown, {implied} from its bytes and interval"
        );
        seen += 1;
    }
    assert_eq!(seen, 2, "{text}");
}

/// Regression: paced TCP from netsweep to an iperf3 server with many streams arrived at a
/// fraction of the rate (0.17 of 2 Gbit/s at -P 128, 0.74 at -P 32) while netsweep's writes
/// kept it: the pacer split -l blocks, and iperf3's receiver waits for whole blocks. Whole
/// blocks now: what arrives is what was sent, at the asked rate.
#[test]
fn paced_tcp_to_an_iperf3_server_arrives_at_the_asked_rate() {
    let test = "paced_tcp_to_an_iperf3_server_arrives_at_the_asked_rate";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (mut server, port) = iperf3_server();
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "--iperf3",
            "-t",
            "3",
            "-P",
            "32",
            // -b is per stream, as iperf3's: 125M x 32 = 4 Gbit/s.
            "-b",
            "125M",
            "-J",
        ])
        .output()
        .expect("netsweep -c");
    let _ = server.kill();
    let _ = server.wait();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
    assert!(out.status.success(), "{doc:#}");
    let sent = doc["end"]["sum_sent"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    let received = doc["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(
        received >= 0.85 * 4e9,
        "{received} bit/s arrived of 4 Gbit/s asked"
    );
    assert!(received >= 0.95 * sent, "{received} arrived, {sent} sent");
}
