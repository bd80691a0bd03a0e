//! `--skip-rx-copy` (iperf3's name): receivers drop the data in the kernel with MSG_TRUNC
//! instead of copying it; netsweep's own TCP tests do so by default and `--rx-copy` copies,
//! while iperf3's command line keeps iperf3's default (the copy). The result says which
//! receive mode ran (a netsweep server says how its receivers received, in iperf3's protocol
//! too), the counts stay exact (a count test delivers exactly its count), TCP in both
//! directions and UDP, and an iperf3 client's `skip_rx_copy` parameter is honoured by a
//! netsweep server (`wire` unit tests).

mod common;

use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;
use std::process::Command;

fn client(port: u16, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", &port.to_string(), "--json"])
        .args(args)
        .output()
        .expect("netsweep client");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out.status.success(), "{args:?}: {doc:#}");
    doc
}

#[test]
fn tcp_receivers_skip_the_copy_in_both_directions_and_counts_stay_exact() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: MSG_TRUNC discards TCP data on Linux only");
        return;
    }
    let _serial = common::loopback::serial();
    let server = common::TestServer::start(ServerLimits::default());
    let port = server.addr.port();
    for dir in [&[][..], &["-R"][..]] {
        let mut args = vec!["-t", "1", "--skip-rx-copy"];
        args.extend_from_slice(dir);
        let doc = client(port, &args);
        assert_eq!(
            doc["start"]["receive_mode"], "skip-rx-copy",
            "{dir:?}: {doc:#}"
        );
        assert!(doc["summary"]["bytes"].as_u64().unwrap() > 0);
        assert!(doc.get("inconsistencies").is_none(), "{doc:#}");
        // Without the flag netsweep's own TCP test skips the copy too; --rx-copy copies. Each
        // says which ran.
        // iperf3's command line copies unless asked, as iperf3; its JSON is iperf3's, with
        // the mode under `extensions`. A count (-n) runs iperf3's protocol, whose netsweep
        // server says how it received.
        for (flags, mode) in [
            (&["-t", "1"][..], "skip-rx-copy"),
            (&["-t", "1", "--rx-copy"][..], "copy"),
            (&["-n", "20M"][..], "skip-rx-copy"),
            (&["-n", "20M", "--rx-copy"][..], "copy"),
            (&["-t", "1", "--iperf3-cli"][..], "copy"),
            (
                &["-t", "1", "--iperf3-cli", "--skip-rx-copy"][..],
                "skip-rx-copy",
            ),
        ] {
            let mut plain = flags.to_vec();
            plain.extend_from_slice(dir);
            let doc = client(port, &plain);
            let got = if flags.contains(&"--iperf3-cli") {
                &doc["extensions"]["receive_mode"]
            } else {
                &doc["start"]["receive_mode"]
            };
            assert_eq!(got, mode, "{dir:?} {flags:?}: {doc:#}");
        }
    }
    // UDP keeps the copy unless asked (request/response: the CLI's unit tests).
    let udp = client(port, &["-u", "-b", "10M", "-t", "1"]);
    assert_eq!(udp["start"]["receive_mode"], "copy", "{udp:#}");
    // A count: exactly 20 MiB reach the receiver, though none of it was copied.
    let doc = client(port, &["-n", "20M", "--skip-rx-copy", "-R"]);
    let got = doc["directions"][0]["summary"]["bytes"].as_u64().unwrap()
        + doc["directions"][0]["summary"]["tail_bytes"]
            .as_u64()
            .unwrap_or(0);
    assert!(got >= 20 << 20, "{got} of 20 MiB: {doc:#}");
}

#[test]
fn udp_receivers_read_only_the_header_and_count_every_datagram() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: Linux only");
        return;
    }
    let _serial = common::loopback::serial();
    let server = common::TestServer::start(ServerLimits::default());
    let doc = client(
        server.addr.port(),
        &["-u", "-b", "50M", "-l", "1400", "-t", "1", "--skip-rx-copy"],
    );
    assert_eq!(doc["start"]["receive_mode"], "skip-rx-copy", "{doc:#}");
    let s = &doc["summary"];
    let packets = s["packets"].as_u64().unwrap();
    let lost = s["lost_packets"].as_u64().unwrap();
    assert!(packets > 3000, "{s:#}");
    // Bytes are whole datagrams' payloads although only their headers were read.
    let delivered = s["bytes"].as_u64().unwrap();
    assert_eq!(delivered % 1400, 0, "{s:#}");
    assert_eq!(delivered / 1400, packets - lost, "{s:#}");
}
