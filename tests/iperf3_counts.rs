//! Tests that end at a byte or block count (`-n`/`-k`), netsweep's client against Debian's
//! iperf3 server (3.12 in CI) and against a netsweep server. Each figure is checked against the
//! far end's own account (iperf3's `-J` document, the netsweep server's log) and against the
//! count: a sender sends exactly the count (UDP: whole datagrams), a receiver ends once it has
//! it, and the grid ends where the count was reached, so every rate is bytes over the seconds
//! they took.

mod common;

use common::TestServer;
use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;
use std::process::Command;

use common::loopback::{against_iperf3, netsweep_json, serial};

fn bytes(doc: &Value, sum: &str) -> u64 {
    doc["end"][sum]["bytes"].as_u64().unwrap_or(0)
}

fn seconds(doc: &Value, sum: &str) -> f64 {
    doc["end"][sum]["seconds"].as_f64().unwrap_or(0.0)
}

/// The grid as it ran: the last interval ends where the summary's seconds do, and the
/// intervals hold every byte of the summary of this end's direction.
fn grid_matches(doc: &Value, sum: &str) {
    let intervals = doc["intervals"].as_array().expect("intervals");
    let last = intervals.last().expect("an interval")["sum"]["end"]
        .as_f64()
        .unwrap_or(0.0);
    let secs = seconds(doc, sum);
    assert!(
        (last - secs).abs() < 0.002,
        "the last interval ends at {last} s, the summary says {secs} s: {doc:#}"
    );
    let counted: u64 = intervals
        .iter()
        .map(|i| i["sum"]["bytes"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(counted, bytes(doc, sum), "{doc:#}");
}

/// The two ends' seconds agree as netsweep's own INCONSISTENT check demands (0.25 s + 5%).
fn same_time_base(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 0.25 + 0.05 * a.max(b),
        "{what}: {a} s here, {b} s at the far end"
    );
}

#[test]
fn a_sender_sends_exactly_the_count_and_the_grid_ends_there() {
    if !common::tool_or_skip(
        "a_sender_sends_exactly_the_count_and_the_grid_ends_there",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    // (arguments, bytes the senders must send in all)
    let cases: [(&[&str], u64); 4] = [
        (&["-n", "300M"], 300 << 20),
        // Not a multiple of the write size, over four streams.
        (&["-n", "100000007", "-P", "4"], 100_000_007),
        (&["-k", "500", "-l", "100K"], 500 * 102_400),
        // UDP in whole datagrams: 5 MiB is 3744.9 datagrams of 1400 bytes, so 3745 go.
        (&["-u", "-b", "200M", "-l", "1400", "-n", "5M"], 3745 * 1400),
    ];
    for (args, want) in cases {
        let (ours, theirs) = against_iperf3(args);
        assert_eq!(bytes(&ours, "sum_sent"), want, "{args:?}: {ours:#}");
        let start = &ours["start"]["test_start"];
        assert_eq!(start["duration"], 0, "{args:?}");
        let asked = if args[0] == "-k" { "blocks" } else { "bytes" };
        assert!(start[asked].as_u64().unwrap_or(0) > 0, "{args:?}: {start}");
        // The iperf3 server received what was sent, less what was still on its way when the
        // client said TEST_END (as with iperf3's own client): at most its buffers' worth.
        let got = bytes(&theirs, "sum_received");
        assert!(
            got <= want && got + 64 * (1 << 20) >= want && got >= want / 2,
            "{args:?}: iperf3 received {got} of {want}: {theirs:#}"
        );
        same_time_base(
            seconds(&ours, "sum_sent"),
            seconds(&theirs, "sum_received"),
            &format!("{args:?}"),
        );
        grid_matches(&ours, "sum_sent");
        // Physics: loopback moves the count in a plausible time, not in none.
        let rate = want as f64 * 8.0 / seconds(&ours, "sum_sent");
        assert!(rate > 1e6 && rate < 1e12, "{args:?}: {rate} bit/s");
    }
}

#[test]
fn a_receiver_ends_the_test_once_it_has_the_count() {
    if !common::tool_or_skip("a_receiver_ends_the_test_once_it_has_the_count", "iperf3") {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    for (args, want, streams) in [
        (&["-n", "400M", "-R"][..], 400u64 << 20, 1u64),
        (&["-n", "200M", "-R", "-P", "3"], 200 << 20, 3),
        (&["-u", "-b", "300M", "-n", "8M", "-R"], 8 << 20, 1),
    ] {
        for far in ["iperf3", "netsweep"] {
            let (ours, sent) = if far == "iperf3" {
                let (ours, theirs) = against_iperf3(args);
                (ours, bytes(&theirs, "sum_sent"))
            } else {
                let ours = netsweep_json(server.addr.port(), args);
                let sent = bytes(&ours, "sum_sent");
                (ours, sent)
            };
            // Counts go in iperf3's protocol; the far end is still named as what it is.
            let peer = ours["extensions"]["peer"].as_str().unwrap_or_default();
            let named = if far == "iperf3" {
                peer.starts_with("iperf3")
            } else {
                peer == format!(
                    "netsweep {}, in iperf3's protocol",
                    env!("CARGO_PKG_VERSION")
                )
            };
            assert!(named, "{far} {args:?}: the far end is {peer:?}");
            let got = bytes(&ours, "sum_received");
            // At least the count, and no more than one read per stream past it.
            assert!(
                got >= want && got <= want + streams * (4 << 20),
                "{far} {args:?}: received {got} of {want}: {ours:#}"
            );
            assert!(
                sent >= got,
                "{far} {args:?}: the far end sent {sent}, fewer than the {got} received"
            );
            grid_matches(&ours, "sum_received");
            same_time_base(
                seconds(&ours, "sum_received"),
                seconds(&ours, "sum_sent"),
                &format!("{far} {args:?}"),
            );
        }
    }
    // The netsweep server logged the count it served, not a time of 0 s.
    assert!(
        server.log_text().contains("until 419430400 bytes"),
        "{}",
        server.log_text()
    );
}

#[test]
fn both_directions_end_when_either_has_the_count() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let ours = netsweep_json(server.addr.port(), &["-n", "300M", "--bidir"]);
    let forward = bytes(&ours, "sum_sent");
    let reverse = bytes(&ours, "sum_received_bidir_reverse");
    assert!(
        forward == 300 << 20 || reverse >= 300 << 20,
        "neither direction reached the count: {ours:#}"
    );
    assert!(forward <= 300 << 20, "{ours:#}");
}

#[test]
fn the_text_shows_the_last_partial_interval_on_the_grid_as_it_ran() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &server.addr.port().to_string()])
        .args(["-n", "2G", "-i", "0.2"])
        .output()
        .expect("netsweep -c");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // "[  0]   0.60-0.73   sec ...": the interval lines, then the summary's "0.00-0.73".
    let ends: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" sec "))
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter_map(|span| span.split('-').nth(1))
        .collect();
    let sender = text
        .lines()
        .find(|l| l.ends_with("sender"))
        .unwrap_or_else(|| panic!("no sender line: {text}"));
    let summary_end = sender
        .split_whitespace()
        .nth(2)
        .and_then(|s| s.split('-').nth(1))
        .unwrap_or_default();
    assert!(ends.len() >= 2, "{text}");
    assert_eq!(ends[ends.len() - 3], summary_end, "{text}");
    assert!(sender.contains("2.00 GBytes"), "{text}");
}

/// Regression: a count's grid on a netsweep server was the longest test it accepts, whose
/// interval reports for 64 streams exceeded --max-intervals: iperf3's `-P 64 -n` was refused
/// with error 37.
#[test]
fn an_iperf3_client_counts_with_many_streams_against_a_netsweep_server() {
    if !common::tool_or_skip(
        "an_iperf3_client_counts_with_many_streams_against_a_netsweep_server",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    for extra in [&[][..], &["-R"]] {
        let out = Command::new("iperf3")
            .args([
                "-c",
                "127.0.0.1",
                "-p",
                &server.addr.port().to_string(),
                "-J",
            ])
            .args(["-P", "64", "-n", "300M", "-i", "0"])
            .args(extra)
            .output()
            .expect("iperf3 -c");
        let doc: Value = serde_json::from_slice(&out.stdout).expect("iperf3's document");
        assert!(doc.get("error").is_none(), "{extra:?}: {doc:#}");
        // iperf3's client ends when it has sent (forward) or received (-R) the count.
        let counted = if extra.is_empty() {
            "sum_sent"
        } else {
            "sum_received"
        };
        assert!(bytes(&doc, counted) >= 300 << 20, "{extra:?}: {doc:#}");
        assert!(
            bytes(&doc, "sum_received") >= 150 << 20,
            "{extra:?}: {doc:#}"
        );
    }
}

/// `iperf3 -c 127.0.0.1 -p PORT -J ARGS`: its document (an error document included).
fn iperf3_client_json(port: u16, args: &[&str]) -> Value {
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-J", "-i", "0"])
        .args(args)
        .output()
        .expect("iperf3 -c");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Regression (issue 41, 1): a netsweep server kept its senders going until TEST_END, so
/// `iperf3 -c -R -n 5M` got 2,894,856,192 bytes from it (a 3.21 client; 6,160,384 with
/// Debian's 3.12) and `-n 100M -R` got 1.05x the count at -P 1, 1.58x at -P 16, 3.47x at -P 64.
/// Now it sends the count and no more (UDP: at most one datagram past it). What it sent is
/// its own report in the client's document, checked against what the client received.
#[test]
fn a_netsweep_server_sends_an_iperf3_client_the_count_and_no_more() {
    if !common::tool_or_skip(
        "a_netsweep_server_sends_an_iperf3_client_the_count_and_no_more",
        "iperf3",
    ) {
        return;
    }
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port();
    // (arguments, the count in bytes, streams)
    let cases: [(&[&str], u64, u64); 6] = [
        (&["-R", "-n", "100M"], 100 << 20, 1),
        (&["-R", "-n", "100M", "-P", "16"], 100 << 20, 16),
        (&["-R", "-n", "100M", "-P", "64"], 100 << 20, 64),
        (&["-R", "-n", "5M"], 5 << 20, 1),
        // -k: blocks of iperf3's 128 KiB.
        (&["-R", "-k", "400", "-P", "16"], 400 * (128 << 10), 16),
        // A lost datagram would leave iperf3 waiting for the count: its own timeout ends it.
        (
            &[
                "-R",
                "-u",
                "-b",
                "50M",
                "-l",
                "1400",
                "-n",
                "2M",
                "--rcv-timeout",
                "10000",
            ],
            2 << 20,
            1,
        ),
    ];
    for (args, count, streams) in cases {
        let doc = iperf3_client_json(port, args);
        assert!(doc.get("error").is_none(), "{args:?}: {doc:#}");
        let sent = bytes(&doc, "sum_sent");
        let received = bytes(&doc, "sum_received");
        let block = doc["start"]["test_start"]["blksize"].as_u64().unwrap_or(0);
        eprintln!(
            "iperf3 {args:?} against netsweep: sent {sent} ({:.4}x the count {count}), received \
             {received}",
            sent as f64 / count as f64
        );
        assert!(block > 0, "{args:?}: {doc:#}");
        if args.contains(&"-u") {
            // Whole datagrams: the count rounded up to one.
            assert!(
                sent >= count && sent < count + block,
                "{args:?}: the server sent {sent} for a count of {count}: {doc:#}"
            );
        } else {
            assert_eq!(sent, count, "{args:?}: {doc:#}");
            assert!(sent <= count + streams * block);
        }
        // The client's own count: what came, all of which the server says it sent. With -n
        // the client ends once it has the count (so all of it came); with -k iperf3 counts
        // its reads as blocks and may end earlier.
        assert!(
            received <= sent,
            "{args:?}: received {received}, sent {sent}"
        );
        if args.contains(&"-n") {
            assert!(
                received >= count,
                "{args:?}: received {received} of {count}: {doc:#}"
            );
        }
    }
    // The same with netsweep's client, both ways at once too: the server's sender stops at
    // the count, and the client's sender line is what was sent.
    let ours = netsweep_json(port, &["-R", "-n", "100M", "-P", "16"]);
    assert_eq!(bytes(&ours, "sum_sent"), 100 << 20, "{ours:#}");
    assert_eq!(bytes(&ours, "sum_received"), 100 << 20, "{ours:#}");
    let ours = netsweep_json(port, &["--bidir", "-n", "100M", "-P", "4"]);
    let reverse_sent = bytes(&ours, "sum_sent_bidir_reverse");
    assert!(
        reverse_sent > 0 && reverse_sent <= 100 << 20,
        "the server sent {reverse_sent} of a 100 MiB count: {ours:#}"
    );
}
