//! Hostile clients against `netsweep server` (issue 31, server side): what one may hold and for
//! how long. Each test drives a small hostile peer by hand on loopback: iperf3 clients that
//! stall at every stage, send huge results, open hundreds of streams or race for a UDP
//! stream; netsweep clients that stall or race; a server killed mid-test.

mod common;

use common::TestServer;
use netsweep::traffic::iperf3::wire::{self, State};
use netsweep::traffic::protocol::{self, ClientMsg, ServerMsg, read_frame, write_frame};
use netsweep::traffic::spec::{Direction, ServerLimits, TestSpec};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Traffic tests share two cores, and the memory test reads this process's size: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn tcp(secs: f64) -> TestSpec {
    TestSpec::tcp(Duration::from_secs_f64(secs))
}

/// A hand-driven iperf3 client: the control connection and its cookie.
struct RawIperf3 {
    ctrl: TcpStream,
    cookie: wire::Cookie,
    addr: SocketAddr,
}

impl RawIperf3 {
    fn connect(addr: SocketAddr) -> RawIperf3 {
        let mut ctrl = TcpStream::connect(addr).expect("connect");
        let cookie = wire::Cookie::random();
        ctrl.write_all(&cookie.0).expect("cookie");
        ctrl.set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        RawIperf3 { ctrl, cookie, addr }
    }

    fn state(&mut self) -> Option<u8> {
        let mut b = [0u8; 1];
        self.ctrl.read_exact(&mut b).ok().map(|_| b[0])
    }

    /// Reads one state and, after SERVER_ERROR, its code.
    fn state_or_code(&mut self) -> Result<u8, i32> {
        let s = self.state().ok_or(-1)?;
        if s == State::ServerError.byte() {
            let mut code = [0u8; 8];
            self.ctrl.read_exact(&mut code).map_err(|_| -1)?;
            return Err(i32::from_be_bytes([code[0], code[1], code[2], code[3]]));
        }
        Ok(s)
    }

    /// Cookie, PARAM_EXCHANGE, the parameters, CREATE_STREAMS: false if refused or denied.
    fn ask(&mut self, params: serde_json::Value) -> bool {
        if self.state() != Some(State::ParamExchange.byte()) {
            return false;
        }
        if self.ctrl.write_all(&wire::encode_json(&params)).is_err() {
            return false;
        }
        self.state_or_code() == Ok(State::CreateStreams.byte())
    }

    fn data_connection(&self) -> TcpStream {
        let mut s = TcpStream::connect(self.addr).expect("data connection");
        s.write_all(&self.cookie.0).expect("data cookie");
        s
    }
}

/// Runs 1-second netsweep tests until one is served; returns how long that took. Fails past
/// `limit` or on anything but "busy".
fn served_within(server: &TestServer, limit: Duration, what: &str) -> Duration {
    let t0 = Instant::now();
    loop {
        match server.run(&tcp(0.5)) {
            Ok(_) => return t0.elapsed(),
            Err(e) => {
                assert!(e.message.contains("busy"), "{what}: {}", e.message);
                assert!(
                    t0.elapsed() < limit,
                    "{what}: a legitimate client was refused for {:?}",
                    t0.elapsed()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn vm_rss_kib() -> u64 {
    common::vm_rss_kib("/proc/self/status")
}

/// One hostile iperf3 client of the results attack: it waits for the slot (up to 5 s), ends
/// its test at once, then sends a 16 MiB results document one byte short and holds it open.
/// Returns whether it got as far as the results.
fn results_attack(addr: SocketAddr) -> bool {
    let t0 = Instant::now();
    let mut c = loop {
        let mut c = RawIperf3::connect(addr);
        if c.ask(json!({"tcp": true, "time": 1, "parallel": 1, "len": 131072})) {
            break c;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _data = c.data_connection();
    if c.state() != Some(State::TestStart.byte()) || c.state() != Some(State::TestRunning.byte()) {
        return false;
    }
    let _ = c.ctrl.write_all(&[State::TestEnd.byte()]);
    if c.state() != Some(State::ExchangeResults.byte()) {
        return false;
    }
    let len: u32 = 16 << 20;
    let _ = c.ctrl.write_all(&len.to_be_bytes());
    let chunk = vec![b' '; 64 << 10];
    let mut left = len as usize - 1;
    let _ = c.ctrl.set_write_timeout(Some(Duration::from_secs(3)));
    while left > 0 {
        let n = left.min(chunk.len());
        if c.ctrl.write_all(&chunk[..n]).is_err() {
            break;
        }
        left -= n;
    }
    std::thread::sleep(Duration::from_secs(3));
    true
}

/// Regression (issue 31, 1): the slot was freed before an iperf3 client's results were read,
/// so 50 clients ending at once with 16 MiB results one byte short took the server from 7 MB
/// to 833 MB. Now the results are read under the slot, a cap that follows the stream count and
/// a deadline: the server's memory stays put and a legitimate client is served.
#[test]
fn huge_iperf3_results_from_many_clients_do_not_grow_the_server() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let before = vm_rss_kib();
    let peak = AtomicU64::new(before);
    let done = AtomicBool::new(false);
    let reached = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(vm_rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let attackers: Vec<_> = (0..20)
            .map(|_| scope.spawn(|| results_attack(server.addr)))
            .collect();
        let reached = attackers
            .into_iter()
            .map(|a| a.join().unwrap_or(false))
            .filter(|reached| *reached)
            .count();
        done.store(true, Ordering::Relaxed);
        reached
    });
    let grew_mib = peak.load(Ordering::Relaxed).saturating_sub(before) / 1024;
    eprintln!("results attack: {reached} of 20 reached the results, VmRSS grew {grew_mib} MiB");
    assert!(
        reached >= 2,
        "the attack did not run: {reached} clients got a test"
    );
    assert!(grew_mib < 64, "the server grew {grew_mib} MiB");
    served_within(&server, Duration::from_secs(8), "after the results attack");
    assert!(
        server.log_text().contains("the client's results"),
        "{}",
        server.log_text()
    );
}

/// Regression (issue 31, 1): four iperf3 tests of 128 bidirectional streams reached EMFILE and
/// a legitimate client was told busy after 6.3 s. Tests now reserve their descriptors under a
/// budget: the one over it is refused with a code, accept never fails, and a small legitimate
/// test is served at once.
#[test]
fn many_stream_iperf3_tests_stay_within_the_descriptor_budget() {
    let _s = serial();
    // A budget of 1400 - 64 - 64 - 16 = 1256: two tests of 256 streams (516 each) fit.
    let server = TestServer::start(ServerLimits {
        max_tests: 4,
        max_open_files: 1400,
        ..ServerLimits::default()
    });
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..3 {
        let mut c = RawIperf3::connect(server.addr);
        if !c.ask(json!({"tcp": true, "time": 20, "parallel": 128, "bidirectional": true})) {
            refused += 1;
            continue;
        }
        let streams: Vec<TcpStream> = (0..256).map(|_| c.data_connection()).collect();
        assert_eq!(c.state(), Some(State::TestStart.byte()));
        held.push((c, streams));
    }
    assert_eq!((held.len(), refused), (2, 1));
    let took = served_within(&server, Duration::from_secs(3), "beside two big tests");
    eprintln!("a one-stream test beside two tests of 256 streams was served in {took:?}");
    let log = server.log_text();
    assert!(!log.contains("Too many open files"), "{log}");
    assert!(log.contains("ulimit -n"), "{log}");
}

/// Regression (issue 31, 2): with `--max-tests 1` legitimate clients were refused for 10 s after
/// a bare cookie, 56 s after parameters for 128 bidirectional streams with no data connections,
/// 57.6 s when that client had already closed its control connection. Each stage now has a
/// stated deadline (5 s for a document, 3 s between data connections) and a closed control
/// connection frees the slot at once.
#[test]
fn iperf3_clients_that_stall_or_vanish_free_the_slot_within_seconds() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let big = json!({"tcp": true, "time": 10, "parallel": 128, "bidirectional": true});
    // A bare cookie and silence: STAGE_DEADLINE (5 s).
    let mut bare = RawIperf3::connect(server.addr);
    assert_eq!(bare.state(), Some(State::ParamExchange.byte()));
    let took = served_within(&server, Duration::from_secs(8), "a bare cookie");
    eprintln!("bare cookie: served after {took:?}");
    // 256 streams asked for, none opened: STREAM_IDLE (3 s).
    let mut stalled = RawIperf3::connect(server.addr);
    assert!(stalled.ask(big.clone()));
    let took = served_within(&server, Duration::from_secs(6), "no data connections");
    eprintln!("no data connections: served after {took:?}");
    // The same, with a few streams opened and the control connection closed: at once.
    let mut vanished = RawIperf3::connect(server.addr);
    assert!(vanished.ask(big));
    let _some: Vec<TcpStream> = (0..3).map(|_| vanished.data_connection()).collect();
    drop(vanished.ctrl);
    let took = served_within(
        &server,
        // At once, plus the legitimate 0.5 s test itself and retries every 0.1 s, on a
        // machine that may be shared (was 57.6 s before the fix; 4.1 s seen with one core
        // busy and a build on the other). The log below says the closed connection freed it.
        Duration::from_secs(6),
        "a closed control connection",
    );
    eprintln!("closed control connection: served after {took:?}");
    drop(bare);
    let log = server.log_text();
    assert!(log.contains("closed its control connection"), "{log}");
}

/// Sends a netsweep request and returns the control connection and what the server answered.
fn netsweep_request(addr: SocketAddr, spec: TestSpec) -> (TcpStream, ServerMsg) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&protocol::client_greeting()).unwrap();
    let mut pre = [0u8; 8];
    s.read_exact(&mut pre).unwrap();
    write_frame(&mut s, &ClientMsg::Request { spec, ticket: None }).unwrap();
    let got: ServerMsg = read_frame(&mut s, Some(Instant::now() + Duration::from_secs(5))).unwrap();
    (s, got)
}

/// Regression (issue 31, 2), netsweep's own protocol: a request for 128 bidirectional streams
/// that opens none, or closes its control connection, frees the slot within the stream
/// deadline (3 s) or at once.
#[test]
fn netsweep_clients_that_stall_or_vanish_free_the_slot_within_seconds() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let mut big = tcp(10.0);
    big.streams = 128;
    big.direction = Direction::Bidir;
    let (_stalled, got) = netsweep_request(server.addr, big.clone());
    assert!(matches!(got, ServerMsg::Accepted { .. }), "{got:?}");
    let took = served_within(&server, Duration::from_secs(6), "no data connections");
    eprintln!("netsweep, no data connections: served after {took:?}");
    let (vanished, got) = netsweep_request(server.addr, big);
    assert!(matches!(got, ServerMsg::Accepted { .. }), "{got:?}");
    drop(vanished);
    let took = served_within(
        &server,
        // At once, plus the legitimate 0.5 s test itself and retries every 0.1 s, on a
        // machine that may be shared (was 57.6 s before the fix).
        Duration::from_secs(4),
        "a closed control connection",
    );
    eprintln!("netsweep, closed control connection: served after {took:?}");
}

/// Regression (issue 31, 4): the first connect datagram from the client's address took an
/// iperf3 UDP stream: a second process got the data and the real client hung. Now a stream is
/// connected to its first sender, and when the real client's hello arrives after a stranger
/// took its stream, the test ends with an error at once instead of feeding the stranger.
#[test]
fn a_stranger_racing_for_an_iperf3_udp_stream_ends_the_test() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let mut c = RawIperf3::connect(server.addr);
    assert!(c.ask(
        json!({"udp": true, "time": 10, "parallel": 1, "reverse": true,
        "bandwidth": 10_000_000, "len": 1400})
    ));
    let thief = UdpSocket::bind("127.0.0.1:0").unwrap();
    thief.connect(server.addr).unwrap();
    thief.send(&wire::UDP_CONNECT_MSG).unwrap();
    thief
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 2048];
    assert_eq!(
        thief.recv(&mut buf).ok(),
        Some(4),
        "the thief's hello is answered"
    );
    // The real client says hello after the thief.
    let real = UdpSocket::bind("127.0.0.1:0").unwrap();
    real.connect(server.addr).unwrap();
    real.send(&wire::UDP_CONNECT_MSG).unwrap();
    let t0 = Instant::now();
    let mut states = Vec::new();
    let code = loop {
        match c.state_or_code() {
            Ok(s) => states.push(s),
            Err(code) => break code,
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{states:?}");
    };
    assert_eq!(code, wire::code::STREAM_ACCEPT, "{states:?}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    let mut stolen = 0;
    thief
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while thief.recv(&mut buf).is_ok() && stolen < 100_000 {
        stolen += 1;
    }
    eprintln!("the thief received {stolen} datagrams before the test ended");
    assert!(stolen < 500, "{stolen}");
    assert!(
        server.log_text().contains("raced the client"),
        "{}",
        server.log_text()
    );
    // A sender heard before any test (a sprayer) never takes a stream, and nor does a second
    // hello once the stream is connected: the next test runs with its own client only.
    let sprayer = UdpSocket::bind("127.0.0.1:0").unwrap();
    sprayer
        .send_to(&wire::UDP_CONNECT_MSG, server.addr)
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut c = RawIperf3::connect(server.addr);
    assert!(c.ask(
        json!({"udp": true, "time": 10, "parallel": 1, "reverse": true,
        "bandwidth": 10_000_000, "len": 1400})
    ));
    sprayer
        .send_to(&wire::UDP_CONNECT_MSG, server.addr)
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let real = UdpSocket::bind("127.0.0.1:0").unwrap();
    real.connect(server.addr).unwrap();
    real.send(&wire::UDP_CONNECT_MSG).unwrap();
    real.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(
        real.recv(&mut buf).ok(),
        Some(4),
        "the real client's hello is answered"
    );
    assert_eq!(c.state(), Some(State::TestStart.byte()));
    assert_eq!(c.state(), Some(State::TestRunning.byte()));
    assert!(real.recv(&mut buf).is_ok(), "the real client gets the data");
    sprayer
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(
        sprayer.recv(&mut buf).is_err(),
        "the sprayer got a datagram"
    );
    let _ = c.ctrl.write_all(&[State::ClientTerminate.byte()]);
}

/// Issue 31, 4, netsweep's own protocol: a UDP hello without the test's token, even from the
/// client's address and the right port, takes no stream; the real client's does.
#[test]
fn a_netsweep_udp_stream_answers_only_its_token() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let mut spec = TestSpec::udp(Duration::from_secs(5));
    spec.bitrate_bps = 10e6;
    spec.length_bytes = 1400;
    let (_ctrl, got) = netsweep_request(server.addr, spec);
    let ServerMsg::Accepted {
        token, udp_ports, ..
    } = got
    else {
        panic!("{got:?}");
    };
    let port = udp_ports[0];
    let thief = UdpSocket::bind("127.0.0.1:0").unwrap();
    thief
        .send_to(
            &protocol::udp_hello(&protocol::Token::random(), 0),
            ("127.0.0.1", port),
        )
        .unwrap();
    thief
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(thief.recv(&mut buf).is_err(), "a wrong token was answered");
    let real = UdpSocket::bind("127.0.0.1:0").unwrap();
    real.send_to(&protocol::udp_hello(&token, 0), ("127.0.0.1", port))
        .unwrap();
    real.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let (n, _) = real
        .recv_from(&mut buf)
        .expect("the real hello is answered");
    assert_eq!(protocol::parse_udp_hello(&buf[..n]), Some((token, 0)));
}

/// Regression (issue 31, 12): a 256-stream client's fast data connections were dropped by
/// `--max-pending 64` ("only 120 of 256 data connections arrived"). An admitted test's data
/// connections no longer count as pending: 256 streams pass a cap of 8.
#[test]
fn a_256_stream_client_passes_a_small_pending_cap() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        max_pending: 8,
        max_streams: 256,
        ..ServerLimits::default()
    });
    let mut spec = tcp(1.0);
    spec.streams = 256;
    let r = server.run(&spec).expect("a 256-stream test");
    assert_eq!(r.directions[0].streams.len(), 256);
    let log = server.log_text();
    assert!(!log.contains("already wait for admission"), "{log}");
    // And iperf3's 128 bidirectional streams (256 connections) against the same cap.
    if common::tool_or_skip("a_256_stream_client_passes_a_small_pending_cap", "iperf3") {
        let out = std::process::Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &server.addr.port().to_string()])
            .args(["-t", "1", "-P", "128", "--bidir", "-J"])
            .output()
            .expect("iperf3 runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(!server.log_text().contains("already wait for admission"));
    }
}

/// Regression (issue 31, 14): a netsweep server killed mid-test left no trace of the test. On
/// SIGTERM its test ends: the client is told why (it was left with "peer closed the
/// connection"), and the log keeps what the server counted, then the server exits.
#[test]
fn a_server_stopped_mid_test_logs_the_aborted_test() {
    let _s = serial();
    let port = common::free_port();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["server", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("netsweep server");
    let mut child = common::KillOnDrop(child);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    common::wait_listening_quietly(addr);
    let client = std::thread::spawn(move || {
        let cfg = netsweep::traffic::client::ClientConfig::new(addr);
        let stop = AtomicBool::new(false);
        netsweep::traffic::client::run_test(&cfg, &tcp(20.0), &stop, &mut |_| {})
    });
    std::thread::sleep(Duration::from_millis(2000));
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(child.0.id() as libc::pid_t, libc::SIGTERM);
    }
    let t0 = Instant::now();
    while child.0.try_wait().ok().flatten().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "server did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut err = String::new();
    if let Some(mut e) = child.0.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(
        err.contains("TCP forward test, 1 stream,")
            && err.contains("the server has terminated (it was stopped ")
            && err.contains("this end counted client to server "),
        "{err}"
    );
    let told = match client.join().expect("the client thread") {
        Ok(r) => format!("{:?}", r.error),
        Err(e) => format!("{e:#}"),
    };
    assert!(told.contains("the server has terminated"), "{told}");
}

/// A request this server cannot read (here: a window mode from a newer client) is refused with
/// the reason and what to do, not met with a closed connection ("peer closed the connection"
/// was all a client with `--window-mode clamp` heard from an older server).
#[test]
fn a_request_with_an_option_this_server_does_not_know_is_refused_by_name() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let mut request = serde_json::to_value(ClientMsg::Request {
        spec: tcp(1.0),
        ticket: None,
    })
    .unwrap();
    request["spec"]["window_mode"] = json!("from_the_future");
    let body = serde_json::to_vec(&request).unwrap();
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(&protocol::client_greeting()).unwrap();
    let mut pre = [0u8; 8];
    s.read_exact(&mut pre).unwrap();
    s.write_all(&u32::try_from(body.len()).unwrap().to_be_bytes())
        .unwrap();
    s.write_all(&body).unwrap();
    let got: ServerMsg = read_frame(&mut s, Some(Instant::now() + Duration::from_secs(5))).unwrap();
    let ServerMsg::Refused { refusal } = got else {
        panic!("expected a refusal, got {got:?}");
    };
    let text = refusal.to_string();
    assert!(text.contains("from_the_future"), "{text}");
    assert!(text.contains("upgrade the server"), "{text}");
    // The slot is free again: an ordinary test is accepted.
    let (_ok, got) = netsweep_request(server.addr, tcp(0.5));
    assert!(matches!(got, ServerMsg::Accepted { .. }), "{got:?}");
}
