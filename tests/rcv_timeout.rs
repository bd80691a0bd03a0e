//! iperf3's `--rcv-timeout` (issue 41, item 2): a test whose data stops ends with iperf3's words
//! ("idle timeout for receiving data") within the timeout, in both roles and both protocols,
//! instead of printing empty intervals until its ceiling (a day for `-n`) while its memory grows.
//! The stalled peers are stand-ins on loopback that set a test up and then send nothing.

mod common;

use common::TestServer;
use netsweep::traffic::iperf3::control;
use netsweep::traffic::iperf3::wire::{self, Params, State};
use netsweep::traffic::protocol::{self, ClientMsg, ServerMsg, read_frame, write_frame};
use netsweep::traffic::spec::{Direction, ServerLimits, TestSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// An iperf3 server that sets one TCP test up (every data connection accepted, TEST_START and
/// TEST_RUNNING said) and then sends nothing, holding its sockets until the client leaves or
/// 60 s pass. Returns its address.
fn stalled_iperf3_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let Ok((mut ctrl, _)) = listener.accept() else {
            return;
        };
        let _ = ctrl.set_read_timeout(Some(Duration::from_secs(10)));
        let mut cookie = [0u8; wire::COOKIE_LEN];
        if ctrl.read_exact(&mut cookie).is_err()
            || control::write_state(&mut ctrl, State::ParamExchange).is_err()
        {
            return;
        }
        let Ok(doc) = control::read_json(&mut ctrl, wire::MAX_PARAMS_BYTES, deadline) else {
            return;
        };
        let Ok(p) = Params::from_json(&doc) else {
            return;
        };
        let _ = control::write_state(&mut ctrl, State::CreateStreams);
        let streams = u32::from(p.parallel.max(1)) * if p.bidirectional { 2 } else { 1 };
        let mut held = Vec::new();
        for _ in 0..streams {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            let _ = s.read_exact(&mut cookie);
            held.push(s);
        }
        let _ = control::write_state(&mut ctrl, State::TestStart);
        let _ = control::write_state(&mut ctrl, State::TestRunning);
        // Nothing more: wait for the client to go (its control connection reads EOF).
        let mut rest = [0u8; 256];
        while Instant::now() < deadline {
            match ctrl.read(&mut rest) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        drop(held);
    });
    addr
}

/// VmRSS of process `pid`, KiB (0 when it is gone).
fn rss_kib(pid: u32) -> u64 {
    common::vm_rss_kib(&format!("/proc/{pid}/status"))
}

/// Regression: `netsweep -c HOST --iperf3 -R -n 50M` against a server that accepted and then
/// sent nothing printed 0.00 bits/sec intervals until the count's ceiling (86,400 s), its RSS
/// growing (34 kB/s at -P 128). With `--rcv-timeout 5000` it ends after 5 s with iperf3's
/// words, its memory flat meanwhile.
#[test]
fn a_stalled_reverse_count_ends_at_the_receive_timeout_with_flat_memory() {
    let _s = serial();
    let addr = stalled_iperf3_server();
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", &addr.port().to_string()])
        .args(["--iperf3", "-R", "-n", "50M", "-P", "128"])
        .args(["--rcv-timeout", "5000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netsweep client");
    // Its output (128 streams' lines outgrow a pipe's buffer) is read as it comes.
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = from.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("its stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("its stderr")));
    // Memory from 1.5 s (streams up) until it ends, bounded at 20 s.
    let mut samples = Vec::new();
    while Instant::now() < t0 + Duration::from_secs(20) {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if t0.elapsed() > Duration::from_millis(1500) {
            let kib = rss_kib(child.id());
            if kib > 0 {
                samples.push(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let took = t0.elapsed();
    // Still running after 20 s: killed, and its output tells what it did meanwhile.
    let _ = child.kill();
    let status = child.wait().expect("its exit");
    let text = format!(
        "{}{}",
        stdout.join().unwrap_or_default(),
        stderr.join().unwrap_or_default()
    );
    eprintln!("stalled -R -n at -P 128: ended after {took:?}, RSS KiB {samples:?}");
    assert!(!status.success(), "{text}");
    assert!(
        text.contains("idle timeout for receiving data"),
        "iperf3's words: {text}"
    );
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(9),
        "ended after {took:?}, the timeout is 5 s"
    );
    let (first, last) = (samples.first().copied(), samples.last().copied());
    if let (Some(first), Some(last)) = (first, last) {
        assert!(
            last <= first + 1024,
            "RSS grew from {first} to {last} KiB while nothing arrived: {samples:?}"
        );
    }
}

/// An iperf3 client's first steps against a server, by hand: the test set up with `p`, its
/// data connections opened, then nothing sent. Returns the control connection after
/// TEST_RUNNING, and the data connections.
fn silent_iperf3_client(addr: SocketAddr, p: &Params) -> (TcpStream, Vec<TcpStream>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ctrl = TcpStream::connect(addr).expect("control connection");
    let cookie = wire::Cookie::random().0;
    ctrl.write_all(&cookie).expect("cookie");
    assert_eq!(
        control::read_state(&mut ctrl, deadline).expect("a state"),
        State::ParamExchange
    );
    control::write_json(&mut ctrl, &p.to_json()).expect("parameters");
    assert_eq!(
        control::read_state(&mut ctrl, deadline).expect("a state"),
        State::CreateStreams
    );
    let data: Vec<TcpStream> = (0..p.parallel.max(1))
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("data connection");
            s.write_all(&cookie).expect("its cookie");
            s
        })
        .collect();
    for want in [State::TestStart, State::TestRunning] {
        assert_eq!(
            control::read_state(&mut ctrl, deadline).expect("a state"),
            want
        );
    }
    (ctrl, data)
}

/// A netsweep server with `--rcv-timeout 2000`, an iperf3 client that starts a forward test of
/// 30 s and sends nothing: the server ends the test after 2 s with iperf3's error code for it
/// (IENOMSG, which an iperf3 client prints as "idle timeout for receiving data"), not after 30.
#[test]
fn a_netsweep_server_ends_a_silent_iperf3_clients_test_at_its_receive_timeout() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        rcv_timeout: Duration::from_secs(2),
        ..ServerLimits::default()
    });
    let p = Params {
        time_s: 30,
        parallel: 2,
        len: Some(128 << 10),
        ..Params::default()
    };
    let (mut ctrl, _data) = silent_iperf3_client(server.addr, &p);
    let t0 = Instant::now();
    let mut word = [0u8; 9];
    ctrl.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("a read timeout");
    ctrl.read_exact(&mut word)
        .expect("SERVER_ERROR and its code");
    let took = t0.elapsed();
    assert_eq!(
        State::from_byte(word[0]),
        Some(State::ServerError),
        "{word:?}"
    );
    let code = i32::from_be_bytes([word[1], word[2], word[3], word[4]]);
    assert_eq!(code, wire::code::NO_MSG, "{word:?}");
    assert!(
        took < Duration::from_secs(6),
        "ended {took:?} after TEST_RUNNING, the timeout is 2 s"
    );
    assert!(
        wire::code::error_text(code).contains("idle timeout for receiving data"),
        "{}",
        wire::code::error_text(code)
    );
    common::wait_bounded_until(Duration::from_secs(5), "the server's log line", || {
        server
            .log_text()
            .contains("idle timeout for receiving data")
    });
}

/// netsweep's own protocol, server side: a client that asks for a 30 s test, opens its data
/// connection, says start and sends nothing is told why within the server's timeout.
#[test]
fn a_netsweep_server_ends_a_silent_netsweep_clients_test_at_its_receive_timeout() {
    let _s = serial();
    let server = TestServer::start(ServerLimits {
        rcv_timeout: Duration::from_secs(2),
        ..ServerLimits::default()
    });
    let mut spec = TestSpec::tcp(Duration::from_secs(30));
    spec.calibration = Duration::ZERO;
    spec.direction = Direction::Forward;
    let mut ctrl = TcpStream::connect(server.addr).expect("control connection");
    ctrl.write_all(&protocol::client_greeting())
        .expect("preamble");
    let mut pre = [0u8; 8];
    ctrl.read_exact(&mut pre).expect("the server's preamble");
    write_frame(&mut ctrl, &ClientMsg::Request { spec, ticket: None }).expect("request");
    let soon = || Some(Instant::now() + Duration::from_secs(5));
    let token = match read_frame::<ServerMsg>(&mut ctrl, soon()).expect("an answer") {
        ServerMsg::Accepted { token, .. } => token,
        other => panic!("{other:?}"),
    };
    let mut data = TcpStream::connect(server.addr).expect("data connection");
    data.write_all(&protocol::data_preamble(&token, 0))
        .expect("its preamble");
    assert!(matches!(
        read_frame::<ServerMsg>(&mut ctrl, soon()).expect("ready"),
        ServerMsg::Ready { .. }
    ));
    write_frame(&mut ctrl, &ClientMsg::Start).expect("start");
    let t0 = Instant::now();
    let until = Some(Instant::now() + Duration::from_secs(15));
    let message = loop {
        match read_frame::<ServerMsg>(&mut ctrl, until).expect("a message before 15 s") {
            ServerMsg::Error { message } => break message,
            ServerMsg::Interval { .. } => {}
            other => panic!("{other:?}"),
        }
    };
    let took = t0.elapsed();
    assert!(
        message.contains("idle timeout for receiving data"),
        "{message}"
    );
    assert!(took < Duration::from_secs(6), "told after {took:?}");
    drop(data);
}

/// netsweep's own protocol, client side: a netsweep client of a reverse test whose server
/// stops sending (stopped with SIGSTOP) ends at its `--rcv-timeout`, not at the test's end.
#[test]
fn a_netsweep_client_ends_when_its_netsweep_server_goes_quiet() {
    let _s = serial();
    let port = common::free_port();
    let server = common::KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["server", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("netsweep server"),
    );
    let pid = server.0.id().to_string();
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("an address"));
    let mut client = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", &port.to_string()])
        .args(["-R", "-t", "60", "-b", "10M", "--rcv-timeout", "2000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netsweep client");
    std::thread::sleep(Duration::from_millis(1500));
    let stopped = Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .is_ok_and(|s| s.success());
    assert!(stopped, "SIGSTOP to the server");
    let t0 = Instant::now();
    common::wait_bounded(&mut client, Duration::from_secs(15), "netsweep client");
    let took = t0.elapsed();
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
    let out = client.wait_with_output().expect("its output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("idle timeout for receiving data"), "{text}");
    assert!(
        took < Duration::from_secs(8),
        "ended {took:?} after the stop"
    );
    drop(server);
}
