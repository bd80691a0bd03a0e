//! The control protocol under abuse and faults: the busy cap, idle and half-frame clients,
//! oversized and malformed frames, wrong versions and tokens, caps, a client killed mid-test,
//! a server killed mid-test, and an interrupted client.

mod common;

use common::TestServer;
use netsweep::traffic::client::{self, ClientConfig};
use netsweep::traffic::protocol::{self, Token};
use netsweep::traffic::spec::{ServerLimits, TestSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn short_tcp(secs: f64) -> TestSpec {
    TestSpec {
        interval: Duration::from_millis(250),
        ..TestSpec::tcp(Duration::from_secs_f64(secs))
    }
}

/// Reads until the server closes; returns how long that took.
fn time_until_closed(mut s: TcpStream, limit: Duration) -> Duration {
    let t0 = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return t0.elapsed(),
            Ok(_) => {}
        }
    }
}

fn control_conn(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&protocol::client_greeting()).unwrap();
    let mut pre = [0u8; 8];
    s.read_exact(&mut pre).unwrap();
    s
}

#[test]
fn a_client_over_the_cap_is_told_busy_at_once() {
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let addr = server.addr;
    let first = std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        client::run_test(
            &ClientConfig::new(addr),
            &short_tcp(2.0),
            &stop,
            &mut |_| {},
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    let err = server.run(&short_tcp(1.0)).unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "busy answer took {:?}",
        t0.elapsed()
    );
    assert!(
        err.message
            .contains("the server is busy running a test. try again later (1 tests running"),
        "{}",
        err.message
    );
    first.join().unwrap().expect("the first test is unaffected");
    // The slot is free again.
    server
        .run(&short_tcp(0.3))
        .expect("after the first test ended");
}

#[test]
fn idle_and_half_frame_clients_are_dropped_without_blocking_others() {
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let idle = TcpStream::connect(server.addr).unwrap();
    let mut half = control_conn(server.addr);
    half.write_all(&[0, 0]).unwrap();
    // Meanwhile a real test runs normally.
    server
        .run(&short_tcp(0.5))
        .expect("other tests are not blocked");
    let idle_t = std::thread::spawn(move || time_until_closed(idle, Duration::from_secs(15)));
    let half_t = time_until_closed(half, Duration::from_secs(15));
    let idle_t = idle_t.join().unwrap();
    assert!(
        idle_t < Duration::from_secs(12),
        "idle client held {idle_t:?}"
    );
    assert!(
        half_t < Duration::from_secs(12),
        "half-frame client held {half_t:?}"
    );
}

#[test]
fn oversized_and_malformed_frames_are_refused_promptly() {
    let server = TestServer::start(ServerLimits::default());
    let mut big = control_conn(server.addr);
    big.write_all(&u32::MAX.to_be_bytes()).unwrap();
    assert!(time_until_closed(big, Duration::from_secs(5)) < Duration::from_secs(2));
    let mut bad = control_conn(server.addr);
    bad.write_all(&7u32.to_be_bytes()).unwrap();
    bad.write_all(b"{\"type\"").unwrap();
    assert!(time_until_closed(bad, Duration::from_secs(5)) < Duration::from_secs(2));
    // The server logs after the connection is closed: wait for the lines.
    for needle in ["cap", "malformed"] {
        let t0 = Instant::now();
        while !server.log_text().contains(needle) {
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "no {needle:?} in {}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    server.run(&short_tcp(0.3)).expect("server still serves");
}

#[test]
fn a_server_of_another_version_gets_a_clear_message() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut greeting = [0u8; protocol::GREETING_LEN];
        s.read_exact(&mut greeting).unwrap();
        let mut reply = protocol::control_preamble();
        reply[6..].copy_from_slice(&(protocol::VERSION + 1).to_be_bytes());
        s.write_all(&reply).unwrap();
    });
    let stop = AtomicBool::new(false);
    let err = client::run_test(
        &ClientConfig::new(addr),
        &short_tcp(0.3),
        &stop,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        err.message.contains("upgrade this client"),
        "{}",
        err.message
    );
    fake.join().unwrap();
    // And a server facing a client of another version says so in its log.
    let server = TestServer::start(ServerLimits::default());
    let mut s = TcpStream::connect(server.addr).unwrap();
    let mut pre = protocol::control_preamble();
    pre[6..].copy_from_slice(&99u16.to_be_bytes());
    s.write_all(&pre).unwrap();
    time_until_closed(s, Duration::from_secs(5));
    assert!(
        server.log_text().contains("speaks netsweep protocol 99"),
        "{}",
        server.log_text()
    );
}

#[test]
fn data_connections_with_unknown_tokens_are_dropped() {
    let server = TestServer::start(ServerLimits::default());
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(&protocol::data_preamble(&Token::random(), 0))
        .unwrap();
    assert!(time_until_closed(s, Duration::from_secs(5)) < Duration::from_secs(2));
    assert!(server.log_text().contains("unknown token"));
}

#[test]
fn caps_are_refused_before_any_data() {
    let server = TestServer::start(ServerLimits {
        max_streams: 2,
        max_duration: Duration::from_secs(5),
        max_rate_bps: 1e9,
        ..ServerLimits::default()
    });
    let err = server
        .run(&TestSpec {
            streams: 3,
            ..short_tcp(1.0)
        })
        .unwrap_err();
    assert!(err.message.contains("--max-streams"), "{}", err.message);
    let err = server.run(&short_tcp(6.0)).unwrap_err();
    assert!(err.message.contains("--max-duration"), "{}", err.message);
    let err = server.run(&short_tcp(1.0)).unwrap_err();
    assert!(
        err.message.contains("--max-rate"),
        "unlimited TCP against a rate cap: {}",
        err.message
    );
    let ok = TestSpec {
        bitrate_bps: 100e6,
        ..short_tcp(0.5)
    };
    server.run(&ok).expect("within every cap");
}

#[test]
fn connection_refused_says_what_to_do() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let err = client::run_test(
        &ClientConfig::new(port),
        &short_tcp(0.3),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_err();
    // The command it suggests listens where the client connected, as printed.
    assert!(
        err.message.contains(&format!(
            "(`netsweep server -p {0}`, or `iperf3 -s -p {0}`) running",
            port.port()
        )),
        "{}",
        err.message
    );
}

#[test]
fn a_client_killed_mid_test_frees_its_slot() {
    let server = TestServer::start(ServerLimits {
        max_tests: 1,
        ..ServerLimits::default()
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "client",
            "127.0.0.1",
            "-p",
            &server.addr.port().to_string(),
            "-t",
            "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let t0 = Instant::now();
    loop {
        match server.run(&short_tcp(0.3)) {
            Ok(_) => break,
            Err(e) if e.message.contains("busy") && t0.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(e) => panic!("slot not freed after {:?}: {}", t0.elapsed(), e.message),
        }
    }
}

#[test]
fn a_server_killed_mid_test_ends_the_client_with_partial_results() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["server", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    common::wait_listening(addr, "netsweep server");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1600));
        server.kill().unwrap();
        server.wait().unwrap();
        Instant::now()
    });
    let err = client::run_test(
        &ClientConfig::new(addr),
        &short_tcp(20.0),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_err();
    let killed_at = killer.join().unwrap();
    let took = killed_at.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "client noticed after {took:?}"
    );
    let partial = err.partial.expect("partial results");
    assert!(
        !partial.intervals.is_empty(),
        "intervals measured before the kill are kept"
    );
    assert!(partial.error.is_some());
}

#[test]
fn an_interrupted_client_keeps_what_it_measured() {
    let server = TestServer::start(ServerLimits::default());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1200));
        flag.store(true, Ordering::Relaxed);
    });
    let t0 = Instant::now();
    let err = client::run_test(
        &ClientConfig::new(server.addr),
        &short_tcp(20.0),
        &stop,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert!(err.message.contains("interrupted"));
    let partial = err.partial.expect("partial results");
    assert!(
        partial.intervals.len() >= 3,
        "{} intervals",
        partial.intervals.len()
    );
    assert!(partial.summary.bytes > 0);
    // The server noticed and is ready for the next test.
    server.run(&short_tcp(0.3)).expect("next test");
}

/// The server's log ends each test with what it counted, as iperf3's server prints its own
/// figures: forward, the bytes its receivers read (the client's receiver line), reverse, the
/// bytes its senders wrote (the client's sender line), over the measured seconds.
#[test]
fn the_server_logs_what_it_counted_when_a_test_is_done() {
    let server = TestServer::start(ServerLimits::default());
    let mut spec = short_tcp(0.5);
    let forward = server.run(&spec).expect("forward");
    spec.direction = netsweep::traffic::spec::Direction::Reverse;
    let reverse = server.run(&spec).expect("reverse");
    let words = |bytes: u64, secs: f64| {
        format!(
            "{} {{}} at {} ({bytes} bytes) over 0.5 s",
            netsweep::units::Bytes(bytes),
            netsweep::units::BitRate(bytes as f64 * 8.0 / secs)
        )
    };
    let (f, r) = (&forward.summary, &reverse.summary);
    for needle in [
        format!(
            "test done: client to server {}",
            words(f.bytes, f.seconds).replace("{}", "received")
        ),
        format!(
            "test done: server to client {}",
            words(r.sent_bytes, r.seconds).replace("{}", "sent")
        ),
    ] {
        let t0 = Instant::now();
        while !server.log_text().contains(&needle) {
            assert!(
                t0.elapsed() < Duration::from_secs(3),
                "no {needle:?} in {}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
