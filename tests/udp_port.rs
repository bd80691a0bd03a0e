//! netsweep's own UDP streams meet the server on its port (`-p`), as iperf3's do: one port
//! to open in a firewall; so do the latency probes' echo (`--latency`) and UDP rr. A server
//! whose UDP port another program holds gives each stream (and the echo) a port of its own
//! instead, and says so in its log.

mod common;

use common::TestServer;
use netsweep::traffic::client::ClientConfig;
use netsweep::traffic::result::TestResult;
use netsweep::traffic::rr::{RrMode, RrSpec};
use netsweep::traffic::spec::{Direction, Protocol, ServerLimits, TestSpec};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Two streams each way at a rate loopback carries under load.
fn bidir_udp() -> TestSpec {
    TestSpec {
        direction: Direction::Bidir,
        streams: 2,
        bitrate_bps: 200e6,
        ..TestSpec::udp(Duration::from_secs(1))
    }
}

/// The server's port of each of the test's streams, as both ends saw their sockets.
fn stream_ports(r: &TestResult) -> (Vec<u16>, Vec<u16>) {
    let port = |a: &str| a.parse::<SocketAddr>().map(|a| a.port()).unwrap_or(0);
    (
        r.start
            .client_sockets
            .iter()
            .map(|s| port(&s.remote))
            .collect(),
        r.start
            .server_sockets
            .iter()
            .map(|s| port(&s.local))
            .collect(),
    )
}

/// Connected UDP sockets on local port `port`, as the kernel lists them (/proc/net/udp: the
/// local address and port in hex, state 01 = established, i.e. connected).
fn connected_on(port: u16) -> usize {
    let want = format!(":{port:04X}");
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>())
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "01"
        })
        .count()
}

/// The most connected UDP sockets seen on `port` while `run` runs on another thread.
fn most_connected_while<T: Send>(port: u16, run: impl FnOnce() -> T + Send) -> (T, usize) {
    let mut most = 0;
    let out = std::thread::scope(|s| {
        let h = s.spawn(run);
        while !h.is_finished() {
            most = most.max(connected_on(port));
            std::thread::sleep(Duration::from_millis(20));
        }
        h.join().unwrap()
    });
    (out, most)
}

fn every_stream_carried(r: &TestResult) {
    assert_eq!(r.directions.len(), 2, "{:?}", r.directions);
    for d in &r.directions {
        assert_eq!(d.streams.len(), 2);
        assert!(d.streams.iter().all(|s| s.summary.bytes > 0), "{d:?}");
    }
}

#[test]
fn udp_streams_use_the_servers_port() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let p = server.addr.port();
    let (r, most) = most_connected_while(p, || server.run(&bidir_udp()));
    let r = r.expect("udp test");
    every_stream_carried(&r);
    // The kernel's own account: four sockets on the port, each connected to its sender.
    assert_eq!(most, 4, "connected UDP sockets on port {p}");
    let (client_saw, server_saw) = stream_ports(&r);
    assert_eq!(client_saw, vec![p; 4], "{:?}", r.start.client_sockets);
    assert_eq!(server_saw, vec![p; 4], "{:?}", r.start.server_sockets);
    // Two tests in a row on the port: the first test's sockets are gone, the second's work.
    let again = server.run(&bidir_udp()).expect("second udp test");
    every_stream_carried(&again);
}

/// A TCP test with latency probes (a short idle baseline).
fn tcp_with_latency() -> TestSpec {
    TestSpec {
        latency: Some(netsweep::traffic::latency::LatencySpec {
            probe_rate_hz: 100,
            idle: Duration::from_millis(500),
        }),
        ..TestSpec::tcp(Duration::from_secs(1))
    }
}

/// Every probe of the test answered: the echo was found, wherever it was.
fn every_probe_answered(r: &TestResult) {
    let l = r.latency.as_ref().expect("latency figures");
    assert!(
        l.idle_p50_ms.is_some() && l.loaded_p50_ms.is_some(),
        "{l:?}"
    );
    assert_eq!(l.probes_lost, 0, "{l:?}");
}

/// The latency probes' echo is a socket on the server's port, connected to the prober (it
/// was on an ephemeral port of its own, which a firewall in front of the server closes).
#[test]
fn latency_probes_are_echoed_on_the_servers_port() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let p = server.addr.port();
    let (r, most) = most_connected_while(p, || server.run(&tcp_with_latency()));
    let r = r.expect("tcp test with latency");
    every_probe_answered(&r);
    assert_eq!(most, 1, "connected UDP sockets on port {p}");
    // The echo's socket goes with its test (the server's session ends a moment after the
    // client's).
    let t0 = Instant::now();
    while connected_on(p) > 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the echo's socket stays"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // With UDP streams too: the streams' sockets and the echo's, each connected to its own.
    let spec = TestSpec {
        latency: tcp_with_latency().latency,
        ..bidir_udp()
    };
    let (r, most) = most_connected_while(p, || server.run(&spec));
    let r = r.expect("udp test with latency");
    every_stream_carried(&r);
    every_probe_answered(&r);
    assert_eq!(most, 5, "connected UDP sockets on port {p}");
}

#[test]
fn a_udp_port_held_elsewhere_gives_streams_ports_of_their_own() {
    let _serial = common::loopback::serial();
    // Another program's socket on the port, without SO_REUSEPORT: the server cannot share it.
    let (holder, port) = (0..20)
        .find_map(|_| {
            let port = common::free_port();
            UdpSocket::bind(("127.0.0.1", port)).ok().map(|s| (s, port))
        })
        .expect("a free UDP port");
    let server = TestServer::start_on(&format!("127.0.0.1:{port}"), ServerLimits::default());
    let r = server.run(&bidir_udp()).expect("udp test");
    every_stream_carried(&r);
    let (client_saw, server_saw) = stream_ports(&r);
    assert!(
        client_saw.iter().all(|&p| p != port && p != 0),
        "{client_saw:?}"
    );
    assert_eq!(client_saw, server_saw);
    assert!(
        server
            .log_text()
            .contains(&format!("UDP port {port} unavailable")),
        "{}",
        server.log_text()
    );
    // The latency echo too, on a port of its own.
    let r = server
        .run(&tcp_with_latency())
        .expect("tcp test with latency");
    every_probe_answered(&r);
    drop(holder);
}

#[test]
fn udp_request_response_uses_the_servers_port() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let p = server.addr.port();
    let spec = RrSpec {
        protocol: Protocol::Udp,
        concurrency: 3,
        ..RrSpec::tcp(RrMode::Rr, Duration::from_secs(1))
    };
    let t0 = Instant::now();
    let (r, most) = most_connected_while(p, || {
        let stop = AtomicBool::new(false);
        netsweep::traffic::rr::client::run(&ClientConfig::new(server.addr), &spec, &stop)
    });
    let r = r.map_err(|e| e.message).expect("udp rr");
    assert!(r.transactions > 100, "{r:?}");
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(most, 3, "connected UDP sockets on port {p}");
}

/// An iperf3 client's UDP test and a netsweep client's, at once on one port: iperf3's connect
/// datagrams and netsweep's hellos each reach their own test, and both carry their traffic.
#[test]
fn iperf3_and_netsweep_udp_tests_share_the_port_at_once() {
    if !common::tool_or_skip(
        "iperf3_and_netsweep_udp_tests_share_the_port_at_once",
        "iperf3",
    ) {
        return;
    }
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let p = server.addr.port();
    let (ours, theirs) = std::thread::scope(|s| {
        let theirs = s.spawn(|| {
            std::process::Command::new("iperf3")
                .args(["-c", "127.0.0.1", "-p", &p.to_string()])
                .args(["-u", "-b", "100M", "-t", "2", "-P", "2", "-J"])
                .output()
                .expect("iperf3 -c")
        });
        std::thread::sleep(Duration::from_millis(300));
        let ours = server.run(&TestSpec {
            duration: Duration::from_secs(1),
            ..bidir_udp()
        });
        (ours, theirs.join().unwrap())
    });
    every_stream_carried(&ours.expect("netsweep's udp test"));
    let doc: serde_json::Value = serde_json::from_slice(&theirs.stdout).unwrap_or_else(|e| {
        panic!(
            "iperf3 -J: {e}: {}",
            String::from_utf8_lossy(&theirs.stdout)
        )
    });
    assert!(doc.get("error").is_none(), "{}", doc["error"]);
    // What the server received: two streams at 100 Mbit/s for 2 s are 50 MB, less what
    // loopback under load lost.
    let got = doc["end"]["sum_received"]["bytes"].as_f64().unwrap_or(0.0);
    assert!(got > 40e6, "the server counted {got} bytes: {}", doc["end"]);
}
