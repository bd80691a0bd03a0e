//! `-u` without `-l` sends datagrams of the control connection's MSS, as iperf3's client picks
//! them: on a path of 9000-byte jumbo frames iperf3 sends 8948-byte datagrams where netsweep
//! sent 1400 (6.4x the packets per second for the same rate: another test). Checked on a lab
//! path with jumbo frames (root; CI runs it), against iperf3's own client on the same path, at
//! an iperf3 server and at a netsweep server; `-l` still sets the size.

mod common;

use netsweep::lab::{EmulatorChoice, Host, PathConfig};
use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;

/// The datagram size and count of one `-u -t 1 -J` client run from host a (`program`: iperf3
/// or netsweep's `-c`) against `port` of host b.
fn blksize(lab: &netsweep::lab::Lab, program: &str, port: u16, extra: &[&str]) -> (u64, u64) {
    let out = lab
        .command(Host::A, program)
        .args([
            "-c",
            &Host::B.address().to_string(),
            "-p",
            &port.to_string(),
        ])
        .args(["-u", "-t", "1", "-J"])
        .args(extra)
        .output()
        .expect("a client in a");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{program}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(doc.get("error").is_none(), "{program}: {}", doc["error"]);
    let size = doc["start"]["test_start"]["blksize"].as_u64();
    let packets = doc["end"]["sum"]["packets"].as_u64();
    (size.expect("blksize"), packets.expect("packets"))
}

#[test]
fn udp_datagrams_follow_the_control_connections_mss_as_iperf3s() {
    let test = "udp_datagrams_follow_the_control_connections_mss_as_iperf3s";
    if !common::root_or_skip(test) || !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let lab = common::lab_up(
        "umss",
        &dir,
        PathConfig {
            mtu_a: 9000,
            mtu_b: 9000,
            ..PathConfig::default()
        },
        EmulatorChoice::Userspace,
    );
    let server = lab
        .start_server(Host::B, ServerLimits::default())
        .expect("netsweep server in b");
    let iperf3_port = common::free_port();
    let mut iperf3 = lab.command(Host::B, "iperf3");
    iperf3
        .args(["-s", "-p", &iperf3_port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _iperf3 = common::KillOnDrop(iperf3.spawn().expect("iperf3 -s in b"));
    // Listening in b (asked of b's own socket table: a connection would be iperf3's client).
    let listening = || {
        lab.command(Host::B, "ss")
            .args(["-Hltn", &format!("sport = :{iperf3_port}")])
            .output()
            .is_ok_and(|o| !o.stdout.is_empty())
    };
    assert!(
        common::wait_bounded_check(std::time::Duration::from_secs(10), listening),
        "iperf3 -s did not listen in b"
    );
    let ns = env!("CARGO_BIN_EXE_netsweep");
    let (theirs, _) = blksize(&lab, "iperf3", iperf3_port, &[]);
    // A 9000-byte MTU less the IPv4 and TCP headers and TCP's timestamps.
    assert_eq!(theirs, 8948, "iperf3's own choice on this path");
    for port in [iperf3_port, server.addr.port()] {
        let (ours, packets) = blksize(&lab, ns, port, &[]);
        assert_eq!(ours, theirs, "netsweep -c against port {port}");
        // iperf3's 1 Mbit/s over a second in datagrams of that size: about 14, not 89.
        assert!((10..=20).contains(&packets), "{packets} datagrams");
        let (asked, _) = blksize(&lab, ns, port, &["-l", "1000"]);
        assert_eq!(asked, 1000, "-l against port {port}");
    }
}
