//! iperf3 on the wire, both ways, against Debian's iperf3 (3.12 in CI): netsweep's client
//! against `iperf3 -s`, iperf3's client against `netsweep server`, busy and refusing servers,
//! clients that die or stall, foreign cookies and stray datagrams, hostile control traffic, and
//! the three pairings agreeing on a lab path (root).

mod common;

use common::TestServer;
use netsweep::traffic::client::{self, ClientConfig, PeerProtocol, TestError};
use netsweep::traffic::engine::sendpath::SendCall;
use netsweep::traffic::iperf3::wire::{self, State};
use netsweep::traffic::result::TestResult;
use netsweep::traffic::spec::{Direction, Flow, ServerLimits, TestSpec};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A process killed on drop (an iperf3 server or client).
use common::KillOnDrop as Proc;

/// `iperf3 -s` on a free loopback port, with `extra` flags.
fn iperf3_server(extra: &[&str]) -> (Proc, SocketAddr) {
    let port = common::free_port();
    let child = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    common::wait_listening_quietly(addr);
    (Proc(child), addr)
}

fn against_iperf3(addr: SocketAddr, spec: &TestSpec) -> Result<TestResult, TestError> {
    let cfg = ClientConfig {
        peer: PeerProtocol::Iperf3,
        ..ClientConfig::new(addr)
    };
    client::run_test(&cfg, spec, &AtomicBool::new(false), &mut |_| {})
}

fn tcp(secs: u64) -> TestSpec {
    TestSpec::tcp(Duration::from_secs(secs))
}

fn udp(secs: u64, rate: f64) -> TestSpec {
    TestSpec {
        bitrate_bps: rate,
        length_bytes: 1400,
        ..TestSpec::udp(Duration::from_secs(secs))
    }
}

fn with(mut spec: TestSpec, direction: Direction, streams: u16) -> TestSpec {
    spec.direction = direction;
    spec.streams = streams;
    spec
}

/// The server of a test in iperf3's protocol.
#[derive(Clone, Copy)]
enum Far {
    Iperf3,
    Netsweep,
}

/// What every result in iperf3's protocol must show, whatever the mode: the far end named as
/// what it is.
fn check_common(r: &TestResult, spec: &TestSpec, far: Far) {
    let peer = r.peer.as_deref().unwrap_or_default();
    match far {
        Far::Iperf3 => assert!(peer.starts_with("iperf3"), "{peer:?}"),
        Far::Netsweep => assert_eq!(
            peer,
            format!(
                "netsweep {}, in iperf3's protocol",
                env!("CARGO_PKG_VERSION")
            )
        ),
    }
    let p = r.provenance.as_ref().expect("provenance");
    assert!(!p.measured_here.is_empty() && !p.from_peer.is_empty() && !p.unavailable.is_empty());
    assert_eq!(
        r.directions.len(),
        if spec.direction == Direction::Bidir {
            2
        } else {
            1
        }
    );
    for d in &r.directions {
        assert_eq!(d.streams.len(), usize::from(spec.streams));
        assert!(d.summary.bytes > 0, "{:?}: nothing delivered", d.flow);
        assert!(
            d.summary.bytes <= d.summary.sent_bytes + d.summary.sent_bytes / 50 + 1_000_000,
            "{:?}: delivered {} of {} sent",
            d.flow,
            d.summary.bytes,
            d.summary.sent_bytes
        );
    }
    assert!(r.inconsistencies.is_empty(), "{:?}", r.inconsistencies);
}

/// A paced UDP direction delivered its rate with (almost) no loss.
fn check_paced(r: &TestResult, rate: f64) {
    if let Err(e) = paced(r, rate) {
        panic!("{e}");
    }
}

/// A paced UDP test against an iperf3 server held its rate on loopback. Every sender must keep
/// the pace and every receiver's figures must add up: what arrived is what was sent less what
/// was counted lost. netsweep's receiver (server to client) must lose (almost) nothing; iperf3's
/// one-threaded receiver (client to server) drops what arrives while it is descheduled (CI at
/// 04acb62 saw about 10% lost in each of 3 runs with the sender on pace), which is its own
/// account, so there only the accounting is judged.
fn paced(r: &TestResult, rate: f64) -> Result<(), String> {
    for d in &r.directions {
        let s = &d.summary;
        let sent = s.sent_bits_per_second / rate;
        if !(0.93..=1.03).contains(&sent) {
            return Err(format!("{:?}: sent {sent:.3} of {rate}", d.flow));
        }
        let loss = s.lost_percent.ok_or("no loss figure")?;
        let expected = s.sent_bits_per_second * (1.0 - loss / 100.0);
        let got = s.bits_per_second / expected;
        if !(0.97..=1.03).contains(&got) {
            return Err(format!(
                "{:?}: received {:.0} bit/s, {got:.3} of the {expected:.0} sent less {loss}% lost",
                d.flow, s.bits_per_second
            ));
        }
        let netsweep_receives = d.flow == Flow::ServerToClient;
        if netsweep_receives && loss >= 2.0 {
            return Err(format!("{:?}: {loss}% lost at {rate} on loopback", d.flow));
        }
        if s.jitter_ms.is_none() {
            return Err(format!("{:?}: no jitter", d.flow));
        }
    }
    Ok(())
}

#[test]
fn netsweep_client_runs_every_mode_against_an_iperf3_server() {
    if !common::tool_or_skip(
        "netsweep_client_runs_every_mode_against_an_iperf3_server",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let (_server, addr) = iperf3_server(&[]);
    let cases = [
        with(tcp(2), Direction::Forward, 2),
        with(
            TestSpec {
                window_bytes: Some(256 << 10),
                congestion: Some("reno".into()),
                omit: Duration::from_secs(1),
                ..tcp(2)
            },
            Direction::Reverse,
            1,
        ),
        with(tcp(2), Direction::Bidir, 1),
        TestSpec {
            mss_bytes: Some(1200),
            length_bytes: 64 << 10,
            ..tcp(2)
        },
        with(udp(2, 200e6), Direction::Forward, 1),
        with(udp(2, 100e6), Direction::Reverse, 2),
        with(udp(2, 50e6), Direction::Bidir, 1),
    ];
    for spec in &cases {
        let udp = spec.protocol == netsweep::traffic::spec::Protocol::Udp;
        // A paced UDP run on a shared machine can fall short while descheduled (issue 31,
        // 15): the pace must hold in one of up to 3 runs; every run is still checked for what
        // no load can excuse.
        let mut misses = Vec::new();
        let r = loop {
            let r = against_iperf3(addr, spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
            check_common(&r, spec, Far::Iperf3);
            match (udp, udp.then(|| paced(&r, spec.bitrate_bps))) {
                (true, Some(Err(e))) if misses.len() < 2 => misses.push(e),
                (true, Some(Err(e))) => panic!("{spec:?}: in 3 runs: {misses:?}, {e}"),
                _ => break r,
            }
        };
        if spec.congestion.is_some() {
            assert_eq!(
                r.start.client_sockets[0].congestion.as_deref(),
                Some("reno")
            );
        }
        if let Some(w) = spec.window_bytes {
            assert!(
                r.start.client_sockets[0].rcvbuf_bytes >= w,
                "-w not applied"
            );
        }
        if spec.direction == Direction::Reverse
            && spec.protocol == netsweep::traffic::spec::Protocol::Tcp
        {
            // The iperf3 server sent: its retransmit count is its own, and said to be.
            assert!(r.summary.retransmits.is_some());
        }
        // The JSON names the peer.
        let doc: Value = serde_json::to_value(&r).unwrap();
        assert!(doc["peer"].as_str().unwrap().starts_with("iperf3"));
    }
}

/// Against an iperf3 server there is no calibration (its count runs from the start), yet the
/// senders choose their path: they start on the path as given (no record in this process) and
/// re-check every candidate on the warm connection, in the results; a path the user gives
/// (`-l`) is kept as given.
#[test]
fn against_an_iperf3_server_the_senders_choose_their_path_while_the_test_runs() {
    if !common::tool_or_skip(
        "against_an_iperf3_server_the_senders_choose_their_path_while_the_test_runs",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let (_server, addr) = iperf3_server(&[]);
    let spec = with(tcp(2), Direction::Forward, 2);
    let r = against_iperf3(addr, &spec).unwrap_or_else(|e| panic!("{e}"));
    check_common(&r, &spec, Far::Iperf3);
    assert!(
        r.spec.live_path_choice && r.spec.calibration.is_zero(),
        "{:?}",
        r.spec
    );
    assert!(r.start.calibration.is_empty(), "{:?}", r.start.calibration);
    // The grid starts at once: two whole seconds of intervals, none left out.
    assert_eq!(r.intervals.len(), 2, "{:?}", r.intervals);
    let first = r.start.rechecks.first().expect("a re-check in a 2 s test");
    // Every candidate against iperf3's receivers, iperf3's 128 KiB block among them, the path
    // as given (sendfile of the 1 MiB default) first.
    let tried: Vec<_> = first.trials.iter().map(|t| t.path).collect();
    let candidates = netsweep::traffic::engine::sendpath::IPERF3_CANDIDATES;
    assert_eq!(tried.len(), candidates.len(), "{tried:?}");
    assert!(candidates.iter().all(|c| tried.contains(c)), "{tried:?}");
    assert_eq!(tried[0].chunk_bytes, 1 << 20, "{tried:?}");
    assert!(
        tried
            .iter()
            .any(|p| p.call == SendCall::Write && p.chunk_bytes == 128 << 10),
        "{tried:?}"
    );
    // (A large write on a starved CI host can outlast its turns and leave its rate unknown.)
    assert!(
        first.trials.iter().any(|t| t.bits_per_second.is_some()),
        "{first:?}"
    );
    let kept = r.start.send_path.as_deref().expect("send path");
    assert_eq!(kept, first.kept.call.name(), "{first:?}");
    let text = netsweep::traffic::output::summary(&r, Default::default());
    assert!(
        text.contains("first fixed at the start (no calibration in iperf3's protocol)"),
        "{text}"
    );

    // `-l` fixes the path: no re-check.
    let given = TestSpec {
        length_bytes: 256 << 10,
        calibration: Duration::ZERO,
        ..tcp(2)
    };
    let r = against_iperf3(addr, &given).unwrap_or_else(|e| panic!("{e}"));
    check_common(&r, &given, Far::Iperf3);
    assert!(!r.spec.live_path_choice);
    assert!(r.start.rechecks.is_empty(), "{:?}", r.start.rechecks);
    assert_eq!(r.start.chunk_bytes, Some(256 << 10));
    let text = netsweep::traffic::output::summary(&r, Default::default());
    assert!(text.contains("per call, fixed, not calibrated"), "{text}");
}

/// Runs Debian's iperf3 client with `args` against `addr` and returns its JSON document.
fn iperf3_client(addr: SocketAddr, args: &[&str]) -> Result<Value, String> {
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &addr.port().to_string(), "-J"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    if let Some(e) = doc.get("error") {
        return Err(e.to_string());
    }
    Ok(doc)
}

/// Serving an iperf3 client that receives (`-R`) on more streams than this process has CPUs,
/// netsweep's senders keep a thread each, as iperf3's do: iperf3's receivers read as each
/// segment arrives, and against them senders sharing threads got half the rate
/// (docs/performance.md). Every stream still carries its share.
#[test]
fn senders_to_an_iperf3_client_keep_a_thread_each() {
    if !common::tool_or_skip("senders_to_an_iperf3_client_keep_a_thread_each", "iperf3") {
        return;
    }
    let _s = serial();
    let cpus = netsweep::platform::sched::allowed_cpus().map_or(1, |c| c.len());
    let streams = (2 * cpus + 1).min(64).to_string();
    let server = TestServer::start(ServerLimits::default());
    let stop = AtomicBool::new(false);
    let (doc, names) = std::thread::scope(|s| {
        let names = s.spawn(|| common::thread_names_while(&stop));
        let doc = iperf3_client(server.addr, &["-t", "2", "-R", "-P", &streams]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (doc, names.join().unwrap())
    });
    let doc = doc.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !names.iter().any(|n| n.starts_with("senders-")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("stream-")), "{names:?}");
    let per_stream = doc["end"]["streams"].as_array().expect("streams");
    assert_eq!(per_stream.len().to_string(), streams);
    for st in per_stream {
        assert!(
            st["receiver"]["bytes"].as_u64().unwrap_or(0) > 0,
            "a stream carried nothing: {st}"
        );
    }
}

#[test]
fn iperf3_client_runs_every_mode_against_netsweep_server() {
    if !common::tool_or_skip(
        "iperf3_client_runs_every_mode_against_netsweep_server",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let cases: [&[&str]; 7] = [
        &["-t", "2", "-P", "2"],
        &["-t", "2", "-R", "-w", "256K", "-C", "reno", "-O", "1"],
        &["-t", "2", "--bidir"],
        &["-t", "2", "-M", "1200", "-l", "64K"],
        &["-t", "2", "-u", "-b", "200M", "-l", "1400"],
        &[
            "-t",
            "2",
            "-u",
            "-b",
            "100M",
            "-R",
            "-P",
            "2",
            "--udp-counters-64bit",
        ],
        &["-t", "2", "-u", "-b", "50M", "--bidir"],
    ];
    for args in cases {
        let doc = iperf3_client(server.addr, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let end = &doc["end"];
        if args.contains(&"-u") {
            // iperf3's -b is per stream: 200M, 2 x 100M, and 50M (each way with --bidir).
            let rate: f64 = if args.contains(&"50M") { 50e6 } else { 200e6 };
            let sum = &end["sum"];
            let bps = sum["bits_per_second"].as_f64().unwrap();
            let lost = sum["lost_percent"].as_f64().unwrap();
            assert!(
                (0.9..=1.05).contains(&(bps / rate)),
                "{args:?}: {bps} of {rate}"
            );
            assert!(lost < 2.0, "{args:?}: {lost}% lost");
        } else {
            let got = end["sum_received"]["bytes"].as_f64().unwrap();
            let sent = end["sum_sent"]["bytes"].as_f64().unwrap();
            assert!(
                got > 0.0 && got <= sent * 1.001,
                "{args:?}: received {got} of {sent}"
            );
            assert!(got >= sent * 0.95, "{args:?}: received {got} of {sent}");
        }
    }
    // The server logs a test as done when it reads the client's IPERF_DONE, which can come
    // after the client has exited: wait for it (bounded), on a busy machine too.
    let t0 = std::time::Instant::now();
    let mut log = server.log_text();
    while log.matches("iperf3 test done").count() < cases.len()
        && t0.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
        log = server.log_text();
    }
    assert_eq!(
        log.matches("iperf3 test done").count(),
        cases.len(),
        "{log}"
    );
}

#[test]
fn a_busy_iperf3_server_is_named_as_such() {
    if !common::tool_or_skip("a_busy_iperf3_server_is_named_as_such", "iperf3") {
        return;
    }
    let _s = serial();
    let (_server, addr) = iperf3_server(&[]);
    let other = Proc(
        Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &addr.port().to_string(), "-t", "4"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(700));
    let e = against_iperf3(addr, &tcp(1)).unwrap_err();
    assert!(
        e.message
            .contains("iperf3 server busy (it serves one test at a time)"),
        "{}",
        e.message
    );
    drop(other);
}

#[test]
fn an_iperf3_server_over_its_limit_is_explained() {
    if !common::tool_or_skip("an_iperf3_server_over_its_limit_is_explained", "iperf3") {
        return;
    }
    let _s = serial();
    let (_server, addr) = iperf3_server(&["--server-bitrate-limit", "100M"]);
    let e = against_iperf3(addr, &udp(1, 500e6)).unwrap_err();
    // 3.12 closes the connection without a code; 3.13 and later send IETOTALRATE.
    assert!(
        e.message.contains("--server-bitrate-limit") || e.message.contains("bitrate"),
        "{}",
        e.message
    );
    // The server is not stuck: a test within its limit runs.
    let r = against_iperf3(addr, &udp(1, 50e6)).expect("a test under the limit");
    check_paced(&r, 50e6);
}

/// A fake iperf3 server that reads the cookie and answers `reply`, then closes.
fn fake_iperf3_server(reply: Vec<u8>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut cookie = [0u8; wire::COOKIE_LEN];
            let _ = s.read_exact(&mut cookie);
            let _ = s.write_all(&reply);
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    addr
}

/// A fake iperf3 server that asks for the parameters, hands them back, and closes.
fn params_of_client(args: &[&str]) -> Value {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let server = std::thread::spawn(move || {
        // Bounded: a client that never connects fails the test instead of hanging it.
        l.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut s = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("the client did not connect: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut cookie = [0u8; wire::COOKIE_LEN];
        s.read_exact(&mut cookie).expect("cookie");
        netsweep::traffic::iperf3::control::write_state(&mut s, State::ParamExchange).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let params =
            netsweep::traffic::iperf3::control::read_json(&mut s, wire::MAX_PARAMS_BYTES, deadline)
                .expect("parameters");
        Value::Object(params)
    });
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", &port, "--iperf3", "-t", "1"])
        .args(args)
        .output()
        .expect("netsweep runs");
    assert!(
        !out.status.success(),
        "the fake server closes after the parameters"
    );
    server.join().expect("the fake server read the parameters")
}

#[test]
fn the_client_asks_an_iperf3_server_for_sendfile_with_z_as_iperf3_does() {
    let z = params_of_client(&["-R", "-Z"]);
    assert_eq!(z["zerocopy"], serde_json::json!(1), "{z}");
    assert_eq!(z["reverse"], serde_json::json!(true), "{z}");
    // netsweep sends with sendfile where fastest by default; only -Z asks it of the server.
    let plain = params_of_client(&["-R"]);
    assert!(plain.get("zerocopy").is_none(), "{plain}");
}

#[test]
fn server_errors_and_hostile_servers_end_the_client_with_words() {
    let busy = fake_iperf3_server(vec![State::AccessDenied.byte()]);
    let e = against_iperf3(busy, &tcp(1)).unwrap_err();
    assert!(e.message.contains("iperf3 server busy"), "{}", e.message);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (wire::server_error(37, 0).to_vec(), "--server-max-duration"),
        (wire::server_error(27, 0).to_vec(), "--server-bitrate-limit"),
        (wire::server_error(6, 0).to_vec(), "parallel streams"),
        (wire::server_error(7, 0).to_vec(), "block size"),
        (wire::server_error(8, 0).to_vec(), "buffer"),
        (wire::server_error(142, 0).to_vec(), "authentication"),
        (vec![0x55], "unknown state byte"),
        (vec![], "closed the control connection"),
        // Parameters are asked for, then the streams, then an oversized result.
        (
            [
                vec![State::ParamExchange.byte()],
                vec![State::ExchangeResults.byte()],
            ]
            .concat(),
            "said EXCHANGE_RESULTS (send the results) where CREATE_STREAMS was due",
        ),
    ];
    for (reply, words) in cases {
        let addr = fake_iperf3_server(reply);
        let t0 = Instant::now();
        let e = against_iperf3(addr, &tcp(1)).unwrap_err();
        assert!(e.message.contains(words), "{words}: {}", e.message);
        assert!(
            t0.elapsed() < Duration::from_secs(12),
            "{words}: took {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn a_silent_iperf3_server_times_out() {
    // A listener that never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = l.local_addr().unwrap();
    let t0 = Instant::now();
    let e = against_iperf3(silent, &tcp(1)).unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert!(e.message.contains("nothing"), "{}", e.message);
    drop(l);
}

/// Speaks iperf3 to `addr` by hand: the cookie, then whatever `then` sends.
fn raw_iperf3(addr: SocketAddr) -> (TcpStream, wire::Cookie) {
    let mut s = TcpStream::connect(addr).unwrap();
    let cookie = wire::Cookie::random();
    s.write_all(&cookie.0).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(12))).unwrap();
    (s, cookie)
}

fn read_byte(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).ok().map(|_| b[0])
}

/// Runs netsweep tests until one gets the server's only slot; fails after `limit`.
fn wait_for_a_free_slot(server: &TestServer, limit: Duration, what: &str) {
    let t0 = Instant::now();
    while let Err(e) = server.run(&tcp(1)) {
        assert!(e.message.contains("busy"), "{what}: {}", e.message);
        assert!(t0.elapsed() < limit, "{what}: slot held {:?}", t0.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn hostile_iperf3_control_traffic_gets_an_error_code_and_frees_the_server() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    // Each hostile opening: the server answers PARAM_EXCHANGE, then SERVER_ERROR with a code.
    let openings: Vec<Vec<u8>> = vec![
        u32::MAX.to_be_bytes().to_vec(), // a 4 GiB document
        [9u32.to_be_bytes().to_vec(), b"{not json".to_vec()].concat(),
        [2u32.to_be_bytes().to_vec(), b"[]".to_vec()].concat(),
        vec![State::TestEnd.byte(); 4], // a state where the length belongs
        wire::encode_json(&serde_json::json!({"tcp": true, "time": 1, "parallel": 900})),
    ];
    for (k, bytes) in openings.iter().enumerate() {
        let (mut s, _) = raw_iperf3(server.addr);
        assert_eq!(
            read_byte(&mut s),
            Some(State::ParamExchange.byte()),
            "case {k}"
        );
        s.write_all(bytes).unwrap();
        let t0 = Instant::now();
        assert_eq!(
            read_byte(&mut s),
            Some(State::ServerError.byte()),
            "case {k}"
        );
        let mut code = [0u8; 8];
        s.read_exact(&mut code).unwrap();
        let code = i32::from_be_bytes([code[0], code[1], code[2], code[3]]);
        assert!(code == 114 || code == 6, "case {k}: code {code}");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
    // A client that sends its cookie and nothing more holds the slot only for IO_DEADLINE;
    // one that half-opens its streams, only for the streams' grace.
    let (mut stalled, _) = raw_iperf3(server.addr);
    assert_eq!(read_byte(&mut stalled), Some(State::ParamExchange.byte()));
    stalled
        .write_all(&wire::encode_json(
            &serde_json::json!({"tcp": true, "time": 5, "parallel": 2}),
        ))
        .unwrap();
    assert_eq!(read_byte(&mut stalled), Some(State::CreateStreams.byte()));
    wait_for_a_free_slot(&server, Duration::from_secs(9), "a stalled client");
    drop(stalled);
    assert!(!server.log_text().contains("panicked"));
}

#[test]
fn an_iperf3_client_killed_mid_test_frees_its_slot_within_seconds() {
    if !common::tool_or_skip(
        "an_iperf3_client_killed_mid_test_frees_its_slot_within_seconds",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    for udp in [false, true] {
        let mut args = vec![
            "-c".to_string(),
            "127.0.0.1".into(),
            "-p".into(),
            server.addr.port().to_string(),
            "-t".into(),
            "30".into(),
        ];
        if udp {
            args.extend(["-u".into(), "-b".into(), "50M".into()]);
        }
        let mut child = Proc(
            Command::new("iperf3")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(1500));
        // Busy while it runs...
        let e = server.run(&tcp(1)).unwrap_err();
        assert!(e.message.contains("busy"), "{}", e.message);
        // ...and free within seconds of its death.
        let _ = child.0.kill();
        let _ = child.0.wait();
        wait_for_a_free_slot(
            &server,
            Duration::from_secs(5),
            &format!("killed, udp={udp}"),
        );
    }
    let log = server.log_text();
    assert!(
        log.contains("went away") || log.contains("terminated"),
        "{log}"
    );
}

#[test]
fn foreign_cookies_and_stray_datagrams_do_not_join_a_test() {
    if !common::tool_or_skip(
        "foreign_cookies_and_stray_datagrams_do_not_join_a_test",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port();
    let addr = server.addr;
    let intruder = std::thread::spawn(move || {
        // Strays from another address: in iperf3's protocol a UDP connect carries no cookie,
        // so one from the client's own address during stream setup cannot be told from the
        // client's (the server then refuses the race, STREAM_ACCEPT, rather than count it;
        // on a host kept busy that race is often won).
        let stray = UdpSocket::bind("127.0.0.2:0").unwrap();
        let t0 = Instant::now();
        let mut foreign = Vec::new();
        while t0.elapsed() < Duration::from_millis(2500) {
            // A data connection with a cookie of no test, and datagrams of no stream.
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = s.write_all(&wire::Cookie::random().0);
                foreign.push(s);
            }
            let _ = stray.send_to(&wire::UDP_CONNECT_MSG, ("127.0.0.1", port));
            let _ = stray.send_to(&[0xab; 1400], ("127.0.0.1", port));
            std::thread::sleep(Duration::from_millis(100));
        }
        foreign.len()
    });
    let doc = iperf3_client(
        server.addr,
        &["-t", "2", "-u", "-b", "100M", "-l", "1400", "-P", "2"],
    )
    .expect("UDP test");
    let sum = &doc["end"]["sum"];
    assert_eq!(doc["end"]["streams"].as_array().unwrap().len(), 2);
    let sent = doc["end"]["streams"][0]["udp"]["packets"].as_f64().unwrap();
    assert!(sum["lost_percent"].as_f64().unwrap() < 2.0, "{sum}");
    // No stray datagram was counted: the receiver never saw more than was sent.
    assert!(
        sum["bits_per_second"].as_f64().unwrap() <= 200e6 * 1.03,
        "{sum}"
    );
    assert!(sent > 0.0);
    assert!(intruder.join().unwrap() > 5);
}

#[test]
fn a_campaign_runs_against_an_iperf3_server_and_says_so() {
    if !common::tool_or_skip(
        "a_campaign_runs_against_an_iperf3_server_and_says_so",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let (_server, addr) = iperf3_server(&[]);
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let write_plan = |duration: &str| {
        std::fs::write(
            &plan,
            format!(
                "name = \"against iperf3\"\n[target]\nkind = \"iperf3\"\nhost = \"{addr}\"\n\
                 [test]\nduration = \"{duration}\"\n[matrix]\ndirection = [\"forward\", \"reverse\"]\n\
                 [repeat]\ncount = 3\n"
            ),
        )
        .unwrap();
    };
    let netsweep = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    // --check names what iperf3 cannot do, before any traffic.
    write_plan("1500ms");
    let out = netsweep(&["run", "plan.toml", "--check"]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("an iperf3 target cannot run 2 configurations"),
        "{text}"
    );
    assert!(text.contains("whole seconds"), "{text}");
    // Regression: --check passed duration = "auto", and every run then failed.
    write_plan("auto");
    let out = netsweep(&["run", "plan.toml", "--check"]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("an iperf3 target cannot run 2 configurations")
            && text.contains("needs a netsweep server"),
        "{text}"
    );
    write_plan("1s");
    let out = netsweep(&["run", "plan.toml", "--db", "c.db"]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let store = netsweep::campaigns::store::Store::open(&dir.path().join("c.db")).unwrap();
    let runs = store.runs(1).unwrap();
    assert_eq!(
        runs.iter().filter(|r| r.error.is_none()).count(),
        6,
        "{text}"
    );
    assert!(
        store
            .campaign(1)
            .unwrap()
            .target
            .starts_with("iperf3 server")
    );
    let out = netsweep(&["compare", "--db", "c.db", "--by", "direction"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Far end: iperf3 server"));
    let html = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("a report");
    assert!(
        html.contains("iperf3 server"),
        "the report does not name the far end"
    );
}

#[test]
fn iperf3_clients_over_netsweep_server_limits_are_refused_in_their_words() {
    if !common::tool_or_skip(
        "iperf3_clients_over_netsweep_server_limits_are_refused_in_their_words",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        max_duration: Duration::from_secs(5),
        max_streams: 2,
        max_rate_bps: 100e6,
        ..ServerLimits::default()
    });
    let cases: [(&[&str], &str); 4] = [
        (&["-t", "10", "-u", "-b", "10M"], "duration too long"),
        (
            &["-t", "2", "-P", "4", "-u", "-b", "10M"],
            "parallel streams",
        ),
        (
            &["-t", "2", "-u", "-b", "500M"],
            "bandwidth is larger than server limit",
        ),
        (&["-t", "2"], "bandwidth is larger than server limit"),
    ];
    for (args, words) in cases {
        let e = iperf3_client(server.addr, args).unwrap_err();
        assert!(e.contains(words), "{args:?}: {e}");
    }
    // Within the limits it runs; a second client meanwhile is told busy at once.
    let addr = server.addr;
    let first = std::thread::spawn(move || iperf3_client(addr, &["-t", "3", "-u", "-b", "10M"]));
    std::thread::sleep(Duration::from_millis(800));
    let t0 = Instant::now();
    let e = iperf3_client(server.addr, &["-t", "1", "-u", "-b", "10M"]).unwrap_err();
    assert!(e.contains("busy"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
    first.join().unwrap().expect("the test within the limits");
    let log = server.log_text();
    assert!(
        log.contains("--max-duration") && log.contains("--max-streams"),
        "{log}"
    );
    // netsweep's own client in iperf3's protocol is told the server's limit, not iperf3's
    // 86400 s (error 37, which it knows, rather than the 5 old iperf3 clients get).
    let e = against_iperf3(server.addr, &tcp(10))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("longer than the server allows") && e.contains("error 37"),
        "{e}"
    );
}

/// Regression: netsweep's client in iperf3 mode shuts down its sending side at the end, before
/// TEST_END; a netsweep server dropped the stream reports that ended that way, so every figure
/// it sent back was zero.
#[test]
fn netsweep_speaks_iperf3_to_itself_in_every_direction() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    // A race (the end of data against TEST_END): each case runs a few times.
    let cases = [
        with(tcp(1), Direction::Forward, 2),
        with(tcp(1), Direction::Bidir, 1),
        with(udp(1, 100e6), Direction::Bidir, 1),
    ];
    for spec in cases.iter().cycle().take(9) {
        let r = against_iperf3(server.addr, spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
        check_common(&r, spec, Far::Netsweep);
        for d in &r.directions {
            assert!(
                d.summary.bytes > 0 && d.summary.sent_bytes > 0,
                "{spec:?}: {:?}",
                d.summary
            );
            for s in &d.streams {
                assert!(
                    s.summary.bytes > 0,
                    "{spec:?} stream {}: {:?}",
                    s.stream,
                    s.summary
                );
            }
        }
    }
}
