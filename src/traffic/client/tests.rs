use super::netsweep::{UDP_HELLO_REPEAT, confirm_udp};
use super::*;
use std::os::unix::net::UnixStream;

/// A "server" socket and a client socket connected to it, on loopback.
fn udp_pair() -> (UdpSocket, UdpSocket) {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.local_addr().unwrap()).unwrap();
    (server, client)
}

fn hello(stream: u16) -> [u8; protocol::UDP_HELLO_LEN] {
    protocol::udp_hello(&Token([3; 16]), stream)
}

/// A hello lost on the way is repeated until one arrives and is echoed.
#[test]
fn a_lost_hello_is_repeated_until_echoed() {
    let (server, client) = udp_pair();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        // The first hello is "lost": only the second is answered.
        let (_, _) = server.recv_from(&mut buf).unwrap();
        let (n, from) = server.recv_from(&mut buf).unwrap();
        server.send_to(&buf[..n], from).unwrap();
    });
    let (ctrl, _peer) = UnixStream::pair().unwrap();
    let t0 = Instant::now();
    confirm_udp(&[client], &[hello(0)], &ctrl, t0 + Duration::from_secs(3)).unwrap();
    assert!(
        t0.elapsed() >= UDP_HELLO_REPEAT,
        "answered before any repeat"
    );
    echo.join().unwrap();
}

/// Regression: on a 1% loss lab path the server's single echo was lost and the client gave
/// up with "is UDP blocked on the path?" although the server had its hello and sent `Ready`.
#[test]
fn word_from_the_server_on_control_ends_the_wait_without_an_echo() {
    let (_server, client) = udp_pair();
    let (ctrl, mut peer) = UnixStream::pair().unwrap();
    let ready = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        peer.write_all(b"R").unwrap();
        peer
    });
    let t0 = Instant::now();
    confirm_udp(&[client], &[hello(0)], &ctrl, t0 + Duration::from_secs(3)).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    drop(ready.join().unwrap());
}

#[test]
fn silence_times_out_naming_the_port() {
    let (server, client) = udp_pair();
    let port = server.local_addr().unwrap().port();
    let (ctrl, _peer) = UnixStream::pair().unwrap();
    let deadline = Instant::now() + Duration::from_millis(500);
    let e = confirm_udp(&[client], &[hello(0)], &ctrl, deadline).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    assert!(e.to_string().contains(&format!("port {port}")), "{e}");
    assert!(Instant::now() < deadline + Duration::from_millis(300));
}

#[test]
fn every_stream_is_greeted_while_an_earlier_one_waits() {
    let (_silent, first) = udp_pair();
    let (second_server, second) = udp_pair();
    let (ctrl, mut peer) = UnixStream::pair().unwrap();
    let watcher = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        second_server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let got = second_server.recv(&mut buf).map(|n| buf[..n] == hello(1));
        peer.write_all(b"R").unwrap();
        got.unwrap_or(false)
    });
    let t0 = Instant::now();
    confirm_udp(
        &[first, second],
        &[hello(0), hello(1)],
        &ctrl,
        t0 + Duration::from_secs(3),
    )
    .unwrap();
    assert!(watcher.join().unwrap(), "stream 1 was not greeted");
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
}

/// Regression: a VM lab test failed with "netsweep: peer closed the connection", naming
/// neither the end that closed it nor when.
#[test]
fn a_closed_control_connection_names_the_server_and_the_stage() {
    let server: std::net::SocketAddr = "198.18.0.2:5310".parse().unwrap();
    let e = super::socket::control_failed(
        server,
        "before answering the test request",
        crate::traffic::protocol::ProtocolError::Closed,
    );
    assert!(
        e.message.starts_with(
            "the server 198.18.0.2:5310 closed the control connection before answering the test \
             request (this end did not)"
        ),
        "{}",
        e.message
    );
    assert!(e.message.contains("server's log"), "{}", e.message);
}

/// A one-second TCP test against `addr`, which fails.
fn a_test_that_fails(addr: SocketAddr) -> TestError {
    run_test(
        &ClientConfig::new(addr),
        &TestSpec::tcp(Duration::from_secs(1)),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_err()
}

/// A server that waits for iperf3's 37-byte cookie and then refuses it as busy (state -1,
/// ACCESS_DENIED), as iperf3's does while another test runs: the greeting is a whole cookie
/// from the first write (no wait for an answer to part of it), and the server is named as a
/// busy iperf3 server. (One that asks for the parameters, state 9, gets them:
/// `tests/iperf3_gaps.rs`.)
#[test]
fn a_server_that_refuses_the_greeting_as_a_busy_iperf3_is_named_so_at_once() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // Version 2 clients sent 8 bytes and the rest only after 3 s without an answer.
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut cookie = [0u8; 37];
        s.read_exact(&mut cookie)
            .expect("a whole cookie within 2 s");
        s.write_all(&[0xff]).unwrap();
        // Hold the connection until the client hangs up.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = s.read(&mut [0u8; 1]);
        cookie
    });
    let e = a_test_that_fails(addr);
    assert!(
        e.message.contains(&format!(
            "{addr} is an iperf3 server running another test (it answered with ACCESS_DENIED): \
             the server is busy running a test. try again later"
        )),
        "{}",
        e.message
    );
    let cookie = fake.join().unwrap();
    assert!(
        crate::traffic::iperf3::wire::Cookie::parse(&cookie).is_none(),
        "netsweep's greeting starts with capitals, never taken for an iperf3 client's cookie"
    );
    assert_eq!(&cookie[..8], &protocol::control_preamble());
    assert_eq!(cookie[36], 0);
}

/// Something that is neither server answers the greeting: named by its first byte.
#[test]
fn a_server_that_is_neither_says_what_it_answered() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut got = [0u8; 37];
        s.read_exact(&mut got).unwrap();
        s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
    });
    let e = a_test_that_fails(addr);
    assert!(
        e.message.contains(&format!(
            "{addr} did not answer as a netsweep server or an iperf3 server (its first byte \
             was 0x48)"
        )),
        "{}",
        e.message
    );
    fake.join().unwrap();
}

/// Nothing on netsweep's default port: the refusal names iperf3's port and flag too.
#[test]
fn connection_refused_on_the_default_port_names_iperf3s() {
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let default = SocketAddr::from(([127, 0, 0, 1], protocol::DEFAULT_PORT));
    let text = connect_advice(default, &refused);
    assert!(
        text.contains(
            "nothing listens on 127.0.0.1:5310 (netsweep's default port; iperf3's is 5201: add \
             -p 5201 --iperf3 to test an iperf3 server)"
        ),
        "{text}"
    );
    let other = connect_advice(SocketAddr::from(([127, 0, 0, 1], 6000)), &refused);
    assert!(!other.contains("5201"), "{other}");
    // The server command it suggests listens where the client connects, as printed.
    assert!(other.contains("`netsweep server -p 6000`"), "{other}");
}
