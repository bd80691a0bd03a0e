//! Request/response tests (`--test rr`, `--test crr`, `-u --test rr`) between netsweep's own
//! client and a server on 127.0.0.1:0: rates, exact counts, ordered percentiles, the server's
//! counts, sizes, the duration, refusals, and (as root) the kernel's count of the bytes.

mod common;

use common::TestServer;
use netsweep::traffic::client::ClientConfig;
use netsweep::traffic::rr::result::RrResult;
use netsweep::traffic::rr::{RrMode, RrSpec, client};
use netsweep::traffic::spec::{Protocol, ServerLimits};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn run(server: &TestServer, spec: &RrSpec) -> Result<RrResult, String> {
    let stop = AtomicBool::new(false);
    client::run(&ClientConfig::new(server.addr), spec, &stop).map_err(|e| e.message)
}

fn spec(mode: RrMode, protocol: Protocol, concurrency: u16, transactions: Option<u64>) -> RrSpec {
    RrSpec {
        protocol,
        concurrency,
        transactions,
        ..RrSpec::tcp(mode, Duration::from_secs(1))
    }
}

fn assert_ordered(r: &RrResult) {
    let l = r.latency_us;
    assert!(l.min > 0.0, "{l:?}");
    assert!(
        l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p99_9 && l.p99_9 <= l.max,
        "percentiles out of order: {l:?}"
    );
    assert!(l.min <= l.mean && l.mean <= l.max, "{l:?}");
    assert_eq!(
        r.histogram.total(),
        r.transactions,
        "every transaction is in the histogram"
    );
}

#[test]
fn tcp_rr_gives_a_positive_rate_ordered_percentiles_and_the_servers_count() {
    let server = TestServer::start(ServerLimits::default());
    let r = run(&server, &spec(RrMode::Rr, Protocol::Tcp, 2, None)).unwrap();
    assert!(
        r.transactions > 0 && r.transactions_per_second > 0.0,
        "{r:?}"
    );
    assert!((0.9..5.0).contains(&r.duration_s), "{}", r.duration_s);
    assert_ordered(&r);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(r.server.transactions, r.transactions);
    assert_eq!(r.server.accepted_connections, 2);
    assert_eq!(r.connections_per_second, None);
}

#[test]
fn the_count_mode_does_exactly_the_count_over_all_connections() {
    let server = TestServer::start(ServerLimits::default());
    let r = run(&server, &spec(RrMode::Rr, Protocol::Tcp, 3, Some(1234))).unwrap();
    assert_eq!((r.transactions, r.server.transactions), (1234, 1234));
    assert_eq!((r.bytes_sent, r.bytes_received), (1234, 1234));
    assert_ordered(&r);
}

#[test]
fn crr_reports_connections_per_second_and_the_server_accepted_one_per_transaction() {
    let server = TestServer::start(ServerLimits::default());
    let r = run(&server, &spec(RrMode::Crr, Protocol::Tcp, 2, Some(300))).unwrap();
    assert_eq!(r.transactions, 300);
    assert!(r.connections_per_second.is_some_and(|c| c > 0.0), "{r:?}");
    assert_eq!(r.server.accepted_connections, 300);
    assert_eq!(r.server.transactions, 300);
    assert_ordered(&r);
}

#[test]
fn udp_rr_answers_every_request() {
    let server = TestServer::start(ServerLimits::default());
    let mut s = spec(RrMode::Rr, Protocol::Udp, 2, Some(2000));
    s.request_bytes = 200;
    s.response_bytes = 1200;
    let r = run(&server, &s).unwrap();
    assert_eq!(r.transactions, 2000);
    // A lost datagram (none expected on loopback) is sent again, so the server may answer more.
    assert!(r.server.transactions >= 2000, "{:?}", r.server);
    assert_eq!((r.bytes_sent, r.bytes_received), (400_000, 2_400_000));
    assert_ordered(&r);
}

#[test]
fn the_server_caps_concurrency_and_duration() {
    let limits = ServerLimits {
        max_streams: 2,
        max_duration: Duration::from_secs(5),
        ..ServerLimits::default()
    };
    let server = TestServer::start(limits);
    let e = run(&server, &spec(RrMode::Rr, Protocol::Tcp, 3, None)).unwrap_err();
    assert!(e.contains("--max-streams of 2"), "{e}");
    let mut long = spec(RrMode::Crr, Protocol::Tcp, 1, None);
    long.duration = Duration::from_secs(60);
    let e = run(&server, &long).unwrap_err();
    assert!(e.contains("--max-duration"), "{e}");
    // Still serving after the refusals.
    assert!(run(&server, &spec(RrMode::Rr, Protocol::Tcp, 2, Some(10))).is_ok());
}

fn netsweep(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .output()
        .expect("netsweep runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `netsweep client --test rr` against `server`, with `more` arguments.
fn rr_client(server: &TestServer, more: &[&str]) -> (bool, String, String) {
    let port = server.addr.port().to_string();
    let mut args = vec!["client", "127.0.0.1", "-p", &port, "--test", "rr"];
    args.extend_from_slice(more);
    netsweep(&args)
}

#[test]
fn sizes_are_honoured_in_the_json_of_both_ends() {
    let server = TestServer::start(ServerLimits::default());
    let (ok, out, err) = rr_client(
        &server,
        &["-r", "100,10000", "--transactions", "500", "--json"],
    );
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rr = &doc["rr"];
    assert_eq!(rr["transactions"], 500);
    assert_eq!(
        (rr["request_bytes"].as_u64(), rr["response_bytes"].as_u64()),
        (Some(100), Some(10000))
    );
    assert_eq!(rr["bytes_sent"], 50_000);
    assert_eq!(rr["bytes_received"], 5_000_000);
    assert_eq!(rr["server"]["bytes_received"], 50_000);
    assert_eq!(rr["server"]["bytes_sent"], 5_000_000);
    for k in ["min", "mean", "p50", "p90", "p99", "p99_9", "max"] {
        assert!(
            rr["latency_us"][k].as_f64().is_some_and(|v| v > 0.0),
            "{k}: {rr}"
        );
    }
    assert!(
        rr["histogram"]["bins"]
            .as_array()
            .is_some_and(|b| !b.is_empty())
    );
}

#[test]
fn a_two_second_rr_ends_in_about_two_seconds_and_prints_its_text() {
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port().to_string();
    let t0 = Instant::now();
    let (ok, out, err) = netsweep(&[
        "client",
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "rr",
        "-t",
        "2",
    ]);
    let wall = t0.elapsed();
    assert!(ok, "{err}");
    // Generous: a busy 2-core machine; the test itself must not run on.
    assert!(
        wall >= Duration::from_millis(1900) && wall < Duration::from_secs(8),
        "{wall:?}"
    );
    assert!(out.contains("transactions/s"), "{out}");
    assert!(out.contains("p99.9"), "{out}");
    let secs: f64 = out
        .split(" in ")
        .nth(1)
        .and_then(|s| s.split(" s").next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0.0);
    assert!((1.9..3.0).contains(&secs), "measured {secs} s: {out}");
}

#[test]
fn iperf3_mode_and_throughput_only_options_are_refused_by_name() {
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--test", "rr", "--iperf3"]);
    assert!(!ok && err.contains("iperf3"), "{err}");
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--test", "rr", "-R"]);
    assert!(!ok && err.contains("-R"), "{err}");
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "-u", "--test", "crr"]);
    assert!(!ok && err.contains("no UDP form"), "{err}");
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--test", "ping"]);
    assert!(!ok && err.contains("expected rr"), "{err}");
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--test", "crr", "--spin", "1ms"]);
    assert!(
        !ok && err.contains("--spin") && err.contains("--test rr"),
        "{err}"
    );
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--test", "rr", "--spin", "1s"]);
    assert!(!ok && err.contains("at most 100 ms"), "{err}");
    let (ok, _, err) = netsweep(&["client", "127.0.0.1", "--spin", "1ms"]);
    assert!(!ok && err.contains("--test"), "--spin needs --test: {err}");
}

/// `--spin`: both ends poll before they block, TCP and UDP; the counts stay exact, the server
/// polls too (it was told), and the result says so in text and JSON.
#[test]
fn polling_ends_do_the_exact_count_and_say_they_polled() {
    let server = TestServer::start(ServerLimits::default());
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        // A count, not a rate: polling threads that outnumber the free CPUs (a busy host)
        // lose the scheduler's preference for woken threads and can run 50x slower.
        let s = RrSpec {
            spin_us: Some(2000),
            duration: Duration::from_secs(60),
            ..spec(RrMode::Rr, protocol, 2, Some(500))
        };
        let r = run(&server, &s).unwrap();
        assert_eq!(r.transactions, 500, "{protocol:?}: {r:?}");
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.server.transactions, 500 + r.lost, "{protocol:?}");
        assert_eq!(r.spin_us, Some(2000));
        assert_ordered(&r);
    }
    let polling = |more: &[&str]| rr_client(&server, &[&["--spin", "500us"], more].concat());
    let (ok, out, err) = polling(&["--transactions", "300"]);
    assert!(ok, "{err}");
    assert!(out.contains("polling up to 500 us per wait"), "{out}");
    assert!(out.contains("transactions   300 in"), "{out}");
    let (ok, out, err) = polling(&["-t", "1", "--json"]);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(doc["rr"]["spin_us"], 500, "{doc:#}");
}

/// As root, in a network namespace of its own (`unshare -n`, gone when its processes end):
/// the kernel's count of the octets received on loopback covers the bytes the JSON says moved.
#[test]
fn the_kernel_counts_at_least_the_bytes_the_json_reports() {
    if !common::root_or_skip("the_kernel_counts_at_least_the_bytes_the_json_reports")
        || !common::tool_or_skip(
            "the_kernel_counts_at_least_the_bytes_the_json_reports",
            "unshare",
        )
    {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_netsweep");
    // The server is this shell's child and is killed whatever the client did.
    let script = format!(
        "ip link set lo up || exit 1; \
         grep '^IpExt:' /proc/net/netstat > before; \
         {bin} server -1 -p 5399 >/dev/null 2>&1 & spid=$!; sleep 0.5; \
         {bin} client 127.0.0.1 -p 5399 --test rr -r 100,10000 --transactions 2000 --json > doc; \
         rc=$?; grep '^IpExt:' /proc/net/netstat > after; kill $spid 2>/dev/null; wait; \
         cat doc before after; exit $rc"
    );
    let dir = std::env::temp_dir().join(format!("netsweep-rr-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("unshare")
        .args(["-n", "sh", "-c", &script])
        .current_dir(&dir)
        .output()
        .expect("unshare runs");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (doc, counters) = text.split_at(text.find("IpExt:").unwrap());
    let doc: serde_json::Value = serde_json::from_str(doc).unwrap();
    let lines: Vec<&str> = counters.lines().collect();
    let in_octets = |names: &str, values: &str| -> u64 {
        let i = names
            .split_whitespace()
            .position(|n| n == "InOctets")
            .unwrap();
        values.split_whitespace().nth(i).unwrap().parse().unwrap()
    };
    let moved = in_octets(lines[2], lines[3]) - in_octets(lines[0], lines[1]);
    let payload =
        doc["rr"]["bytes_sent"].as_u64().unwrap() + doc["rr"]["bytes_received"].as_u64().unwrap();
    assert_eq!(payload, 2000 * 10_100);
    // IP octets carry the payload plus headers, the handshake and the control frames.
    assert!(
        moved >= payload,
        "kernel saw {moved} octets, the JSON {payload}"
    );
    assert!(
        moved < payload * 2,
        "kernel saw {moved} octets, the JSON {payload}"
    );
}

/// A trial's finding: `--test rr -t 1 -n 10` got clap's "'--time' cannot be used with
/// '--bytes'", which says nothing of the count a request/response test takes; it now says what
/// `-n` alone says, and a throughput test keeps clap's message.
#[test]
fn a_throughput_count_beside_t_names_transactions() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["client", "127.0.0.1", "-p", "9"])
            .args(args)
            .output()
            .expect("netsweep");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (args, flag) in [
        (&["--test", "rr", "-t", "1", "-n", "10"][..], "-n"),
        (&["--test=crr", "-k", "3", "-t", "1"], "-k"),
        (&["--test", "rr", "-n", "10"], "-n"),
    ] {
        let (code, err) = run(args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        let mode = if args[0] == "--test=crr" { "crr" } else { "rr" };
        assert!(
            err.contains(&format!(
                "--test {mode}: {flag} (use --transactions) does not apply to a request/response test"
            )),
            "{args:?}: {err}"
        );
    }
    let (code, err) = run(&["-t", "1", "-n", "10"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}
