//! `--skip-rx-copy` (iperf3's name): receivers drop the data in the kernel with MSG_TRUNC
//! instead of copying it; netsweep's own TCP and UDP tests do so by default and `--rx-copy` copies,
//! while iperf3's command line keeps iperf3's default (the copy). The result says which
//! receive mode ran (a netsweep server says how its receivers received, in iperf3's protocol
//! too), the counts stay exact (a count test delivers exactly its count), TCP in both
//! directions and UDP, and an iperf3 client's `skip_rx_copy` parameter is honoured by a
//! netsweep server (`wire` unit tests).

mod common;

use common::netns::Netns;
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
    // UDP skips the copy too unless --rx-copy is given (request/response: the CLI's unit
    // tests).
    let udp = client(port, &["-u", "-b", "10M", "-t", "1"]);
    assert_eq!(udp["start"]["receive_mode"], "skip-rx-copy", "{udp:#}");
    let udp = client(port, &["-u", "-b", "10M", "-t", "1", "--rx-copy"]);
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
    // Bytes are whole datagrams' payloads although only their headers were read. They count
    // where they arrived: one still on its way when the last interval closed is received, its
    // bytes in no interval (with a core kept busy, 4463 of 4464 datagrams' bytes).
    let delivered = s["bytes"].as_u64().unwrap();
    assert_eq!(delivered % 1400, 0, "{s:#}");
    let received = packets - lost;
    assert!(
        delivered / 1400 <= received && received - delivered / 1400 <= 2 + received / 100,
        "{s:#}"
    );
}

/// The namespace's `Udp:` counters of /proc/net/snmp, by name.
fn udp_counters(ns: &Netns) -> std::collections::HashMap<String, u64> {
    let out = ns.cmd("cat").arg("/proc/net/snmp").output().expect("cat");
    common::snmp_counters(&String::from_utf8_lossy(&out.stdout), "Udp:")
}

/// The truth of a receiver that counts coalesced batches from their heads: on the loopback of
/// a namespace of its own, an unlimited UDP test (1400-byte datagrams, sent 46 to a segmented
/// send, which the kernel delivers or drops whole) must count what the namespace's kernel
/// counted: datagrams delivered (`InDatagrams`, one a read) and lost to a full receive buffer
/// (`RcvbufErrors`), with and without the copy, and with the client receiving (`-R`). (Before the data sockets asked for GRO ahead
/// of the data, a loaded host's receiver read thousands of early datagrams one at a time.)
#[test]
fn unlimited_udp_counts_agree_with_the_kernel_with_and_without_the_copy() {
    if !cfg!(target_os = "linux")
        || !common::root_or_skip("unlimited_udp_counts_agree_with_the_kernel")
    {
        return;
    }
    let _serial = common::loopback::serial();
    let ns = Netns::new("rxcopy");
    for (flags, mode) in [
        (&[][..], "skip-rx-copy"),
        (&["-R"][..], "skip-rx-copy"),
        (&["--rx-copy"][..], "copy"),
    ] {
        let mut server = ns
            .cmd(env!("CARGO_BIN_EXE_netsweep"))
            .args(["server", "--bind", "127.0.0.1", "--port", "5399", "-1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("server");
        let listening = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            ns.cmd("ss")
                .args(["-ltnH", "sport = :5399"])
                .output()
                .is_ok_and(|o| !o.stdout.is_empty())
        });
        assert!(listening, "the server in {} never listened", ns.0);
        let before = udp_counters(&ns);
        let out = ns
            .cmd(env!("CARGO_BIN_EXE_netsweep"))
            .args([
                "client",
                "127.0.0.1",
                "-p",
                "5399",
                "--json",
                "-u",
                "-b",
                "0",
            ])
            .args(["-l", "1400", "-t", "1"])
            .args(flags)
            .output()
            .expect("client");
        let _ = server.wait();
        let after = udp_counters(&ns);
        let delta =
            |k: &str| after.get(k).copied().unwrap_or(0) - before.get(k).copied().unwrap_or(0);
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(doc["start"]["receive_mode"], mode, "{doc:#}");
        let s = &doc["summary"];
        let (packets, lost) = (
            s["packets"].as_u64().unwrap(),
            s["lost_packets"].as_u64().unwrap(),
        );
        // Datagrams sent after the test's last interval (a sender on a busy host ends a few ms
        // late) are received, but outside the intervals: the tail.
        let tail = s["tail_bytes"].as_u64().unwrap_or(0) / 1400;
        let received = packets - lost + tail;
        // The hello, its repeats (every 200 ms while unanswered) and its echo are reads too,
        // counted here as batches: allow a few.
        let delivered = delta("InDatagrams") * 46;
        let dropped = delta("RcvbufErrors") * 46;
        assert!(received > 100_000, "{s:#}");
        // A receiver reading this fast naps between drains, at most 100 us (`udpnap`).
        let nap = &doc["directions"][0]["udp_timing"]["read_nap_us"];
        if s["bits_per_second"].as_f64().unwrap() > 10e9 {
            assert!(
                nap.as_u64().is_some_and(|us| us > 0 && us <= 100),
                "{mode}: {doc:#}"
            );
        }
        assert!(
            delivered >= received
                && delivered - received <= 8 * 46
                && lost.abs_diff(dropped) <= 2 * 46,
            "{mode}: netsweep received {received} ({tail} after the test), lost {lost}; the kernel delivered \
             {delivered} and dropped {dropped} (46 a batch): {doc:#}"
        );
    }
}
