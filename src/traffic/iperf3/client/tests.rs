use super::*;

/// A server end on loopback and a client socket connected to it.
fn pair() -> (UdpSocket, UdpSocket) {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.connect(server.local_addr().unwrap()).unwrap();
    server.connect(client.local_addr().unwrap()).unwrap();
    (server, client)
}

/// A control connection: the server's end, and the client's.
fn control() -> (TcpStream, TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    (server, client)
}

#[test]
fn senders_that_would_calibrate_choose_their_path_live_instead() {
    let tcp = TestSpec::tcp(Duration::from_secs(2));
    let a = adapt(&tcp);
    assert!(a.calibration.is_zero() && a.live_path_choice && a.chooses_send_path());
    // A given path (`-l`, `--no-zerocopy`: no calibration), a pace or UDP: none.
    let given = TestSpec {
        calibration: Duration::ZERO,
        ..tcp.clone()
    };
    let paced = TestSpec {
        bitrate_bps: 1e9,
        ..tcp.clone()
    };
    let udp = TestSpec::udp(Duration::from_secs(2));
    for spec in [given, paced, udp] {
        let a = adapt(&spec);
        assert!(!a.live_path_choice && !a.chooses_send_path(), "{spec:?}");
    }
}

#[test]
fn the_connect_answer_is_taken_and_consumed() {
    let (server, client) = pair();
    server.send(&wire::UDP_CONNECT_REPLY).unwrap();
    let (_ctrl_server, ctrl) = control();
    udp_connect(&client, false, Duration::from_secs(2), &ctrl).unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(server.recv(&mut buf).unwrap(), 4, "the connect datagram");
    client.set_nonblocking(true).unwrap();
    assert!(client.recv(&mut buf).is_err(), "the answer was consumed");
}

#[test]
fn data_stands_for_a_lost_answer_when_the_server_sends_and_stays_queued() {
    let (server, client) = pair();
    server.send(&[7u8; 1400]).unwrap();
    let (_ctrl_server, ctrl) = control();
    udp_connect(&client, true, Duration::from_secs(2), &ctrl).unwrap();
    let mut buf = [0u8; 2048];
    assert_eq!(
        client.recv(&mut buf).unwrap(),
        1400,
        "the data is left for the receiver"
    );
}

#[test]
fn data_is_no_answer_on_a_stream_the_server_does_not_send_on() {
    let (server, client) = pair();
    server.send(&[7u8; 1400]).unwrap();
    let (_ctrl_server, ctrl) = control();
    let err = udp_connect(&client, false, Duration::from_millis(100), &ctrl).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    // Each try sent a connect datagram again.
    let mut buf = [0u8; 16];
    server.set_nonblocking(true).unwrap();
    let mut tries = 0;
    while server.recv(&mut buf).is_ok() {
        tries += 1;
    }
    assert_eq!(tries, UDP_CONNECT_TRIES);
}

/// An iperf3 server answers the first connect datagram only: when that answer is lost, its
/// word on the control connection (TEST_START once it has every stream) shows it has the
/// stream, and the word is left for the caller to read.
#[test]
fn a_word_on_the_control_connection_stands_for_a_lost_answer() {
    let (server, client) = pair();
    let (mut ctrl_server, mut ctrl) = control();
    let t0 = Instant::now();
    let later = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        ctrl_server.write_all(&[1]).unwrap();
        ctrl_server
    });
    udp_connect(&client, false, Duration::from_secs(10), &ctrl).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let _ctrl_server = later.join().unwrap();
    let mut word = [0u8; 1];
    std::io::Read::read_exact(&mut ctrl, &mut word).unwrap();
    assert_eq!(word, [1]);
    let mut buf = [0u8; 16];
    assert_eq!(server.recv(&mut buf).unwrap(), 4, "the connect datagram");
}
