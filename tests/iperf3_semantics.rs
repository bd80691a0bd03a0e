//! iperf3's flags mean what they mean in iperf3 (issue 41, item 3): `-b` is the rate of each
//! stream, `-u` without `-b` sends 1 Mbit/s per stream, `-k` counts blocks of iperf3's 128 KiB
//! unless `-l` says otherwise. netsweep's own total is `--total-bitrate`. Each figure is the
//! document of `netsweep -c` (iperf3's schema), against a netsweep server and, where Debian's
//! iperf3 is installed, against iperf3's own server, whose account is checked too.

mod common;

use common::TestServer;
use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;

use common::loopback::{netsweep_json, serial};

/// One test in iperf3's protocol against `iperf3 -s -1 -J`.
fn against_iperf3(args: &[&str]) -> (Value, Value) {
    let mut with = vec!["--iperf3"];
    with.extend_from_slice(args);
    common::loopback::against_iperf3(&with)
}

fn sum(doc: &Value, which: &str, key: &str) -> f64 {
    doc["end"][which][key].as_f64().unwrap_or(0.0)
}

/// `rate` within -15% / +5% of `want`: a paced sender on a shared 2-core host may fall short,
/// never far over.
fn near(rate: f64, want: f64, what: &str) {
    assert!(
        (0.85..=1.05).contains(&(rate / want)),
        "{what}: {rate} bit/s, {want} asked"
    );
}

/// Regression: with `-P 4 -b 100M` iperf3 sends 100 Mbit/s per stream and netsweep sent 100 in
/// all, so the same flags loaded a path 4x less. Now `-b` is per stream, and
/// `--total-bitrate` is netsweep's total of a direction.
#[test]
fn b_is_the_rate_of_each_stream() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port();
    let doc = netsweep_json(port, &["-t", "2", "-P", "4", "-b", "20M"]);
    near(
        sum(&doc, "sum_sent", "bits_per_second"),
        80e6,
        "-P 4 -b 20M",
    );
    for s in doc["end"]["streams"].as_array().into_iter().flatten() {
        near(
            s["sender"]["bits_per_second"].as_f64().unwrap_or(0.0),
            20e6,
            "one stream of -P 4 -b 20M",
        );
    }
    let doc = netsweep_json(port, &["-t", "2", "-P", "4", "--total-bitrate", "20M"]);
    near(
        sum(&doc, "sum_sent", "bits_per_second"),
        20e6,
        "-P 4 --total-bitrate 20M",
    );
    if !common::tool_or_skip("b_is_the_rate_of_each_stream (against iperf3 -s)", "iperf3") {
        return;
    }
    let (ours, theirs) = against_iperf3(&["-t", "2", "-P", "2", "-b", "30M"]);
    near(
        sum(&ours, "sum_sent", "bits_per_second"),
        60e6,
        "-P 2 -b 30M to iperf3",
    );
    near(
        sum(&theirs, "sum_received", "bits_per_second"),
        60e6,
        "what iperf3 -s received of -P 2 -b 30M",
    );
}

/// Regression (outside audit of issue 41): with `--iperf3 -P 4 -b 10M -t 2` against `iperf3 -s`
/// each stream paced whole 1 MiB writes, two in 2 s, 8.39 Mbit/s where iperf3 sends 10; and
/// `-b 1M -t 3` was refused as shorter than one write. A paced stream without `-l` now writes
/// iperf3's 128 KiB blocks.
#[test]
fn paced_streams_write_iperf3s_blocks_and_keep_the_rate_to_iperf3() {
    let test = "paced_streams_write_iperf3s_blocks_and_keep_the_rate_to_iperf3";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    let (ours, theirs) = against_iperf3(&["-t", "2", "-P", "4", "-b", "10M"]);
    assert_eq!(
        ours["start"]["test_start"]["blksize"].as_u64(),
        Some(128 << 10),
        "{ours:#}"
    );
    for (doc, which) in [(&ours, "sum_sent"), (&theirs, "sum_received")] {
        let rate = sum(doc, which, "bits_per_second");
        // 2.5 MB per stream is 19.07 blocks of 128 KiB: the blocks round it by at most 5%.
        assert!(
            (0.93..=1.07).contains(&(rate / 40e6)),
            "{which}: {rate} bit/s of 4 x 10 Mbit/s"
        );
    }
    let (ours, _) = against_iperf3(&["-t", "3", "-b", "1M"]);
    assert!(sum(&ours, "sum_sent", "bytes") > 0.0, "{ours:#}");
}

/// Regression: `-u` without `-b` sent 1 Gbit/s to loopback where iperf3 sends 1 Mbit/s per
/// stream.
#[test]
fn udp_without_b_sends_1_mbit_per_stream() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let doc = netsweep_json(server.addr.port(), &["-u", "-t", "2", "-P", "2"]);
    near(sum(&doc, "sum", "bits_per_second"), 2e6, "-u -P 2");
    if !common::tool_or_skip(
        "udp_without_b_sends_1_mbit_per_stream (against iperf3 -s)",
        "iperf3",
    ) {
        return;
    }
    let (_, theirs) = against_iperf3(&["-u", "-t", "2"]);
    near(
        sum(&theirs, "sum_received", "bits_per_second"),
        1e6,
        "what iperf3 -s received of -u",
    );
}

/// A trial's finding (F14): receiving from iperf3's server at 4 Gbit/s, the datagrams in flight
/// when this end's grid ended were in `sum_received.packets` but not in its bytes. Now the
/// received bytes are `packets - lost_packets` datagrams, and `sum_sent.packets` is every
/// datagram the server sent, as in iperf3's own client's document.
#[test]
fn udp_from_an_iperf3_server_counts_the_same_datagrams_in_bytes_and_packets() {
    let _s = serial();
    if !common::tool_or_skip(
        "udp_from_an_iperf3_server_counts_the_same_datagrams_in_bytes_and_packets",
        "iperf3",
    ) {
        return;
    }
    let (ours, theirs) = against_iperf3(&["-u", "-b", "2G", "-l", "1400", "-t", "2", "-R"]);
    let count = |doc: &Value, which: &str, key: &str| doc["end"][which][key].as_u64().unwrap_or(0);
    let received = count(&ours, "sum_received", "bytes");
    assert!(received > 0, "{ours}");
    assert_eq!(received % 1400, 0, "{ours}");
    assert_eq!(
        received / 1400,
        count(&ours, "sum_received", "packets") - count(&ours, "sum_received", "lost_packets"),
        "{}",
        ours["end"]
    );
    let sent = count(&ours, "sum_sent", "bytes");
    assert_eq!(
        sent,
        count(&theirs, "sum_sent", "bytes"),
        "{}",
        theirs["end"]
    );
    assert_eq!(
        count(&ours, "sum_sent", "packets"),
        sent / 1400,
        "{}",
        ours["end"]
    );
}

/// Regression: `-k 1K` sent 1,073,741,824 bytes (netsweep's 1 MiB writes) where iperf3 sends
/// 134,217,728 (its 128 KiB blocks). `-k 100` is 100 blocks of 128 KiB; with `-l`, of `-l`.
#[test]
fn k_counts_blocks_of_iperf3s_length() {
    let _s = serial();
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port();
    let sent = |doc: &Value| doc["end"]["sum_sent"]["bytes"].as_u64().unwrap_or(0);
    let doc = netsweep_json(port, &["-k", "100"]);
    assert_eq!(sent(&doc), 100 * 131_072, "{doc:#}");
    assert_eq!(doc["start"]["test_start"]["blksize"], 131_072, "{doc:#}");
    let doc = netsweep_json(port, &["-k", "100", "-l", "64K"]);
    assert_eq!(sent(&doc), 100 * 65_536, "{doc:#}");
    if !common::tool_or_skip(
        "k_counts_blocks_of_iperf3s_length (against iperf3 -s)",
        "iperf3",
    ) {
        return;
    }
    let (ours, theirs) = against_iperf3(&["-k", "1K"]);
    assert_eq!(sent(&ours), 134_217_728, "{ours:#}");
    let got = theirs["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(
        (134_217_728 / 2..=134_217_728).contains(&got),
        "iperf3 -s received {got}: {theirs:#}"
    );
}

/// A trial's finding: `-R` without `-l` asked an iperf3 server for netsweep's 1 MiB blocks,
/// so the same command had iperf3's server write other blocks (at another rate) than iperf3's
/// client has it write. It asks for iperf3's 128 KiB, as iperf3's client does; `-l` as given.
#[test]
fn reverse_asks_an_iperf3_server_for_iperf3s_blocks() {
    if !common::tool_or_skip("reverse_asks_an_iperf3_server_for_iperf3s_blocks", "iperf3") {
        return;
    }
    let _s = serial();
    for (extra, block) in [(&[][..], 128u64 << 10), (&["-l", "1M"], 1 << 20)] {
        let mut args = vec!["-t", "1", "-R"];
        args.extend_from_slice(extra);
        let (ours, theirs) = against_iperf3(&args);
        for doc in [&ours, &theirs] {
            assert_eq!(
                doc["start"]["test_start"]["blksize"].as_u64(),
                Some(block),
                "{extra:?}: {:#}",
                doc["start"]["test_start"]
            );
        }
        assert!(sum(&ours, "sum_received", "bytes") > 0.0, "{ours:#}");
    }
}

/// iperf3's command line keeps standard output as iperf3's: a script's `grep receiver | tail -1
/// | awk '{print $7}'` reads the rate (a trial's read "1.00" from a line of netsweep's own),
/// netsweep's lines go to standard error, and `-V` brings them back to standard output.
#[test]
fn iperf3s_command_line_keeps_its_rows_alone_on_standard_output() {
    let server = TestServer::start(ServerLimits::default());
    let port = server.addr.port().to_string();
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (stdout, stderr) = run(&[]);
    let receivers: Vec<&str> = stdout.lines().filter(|l| l.contains("receiver")).collect();
    assert_eq!(receivers.len(), 1, "{stdout}");
    let senders = stdout.lines().filter(|l| l.contains("sender")).count();
    assert_eq!(senders, 1, "{stdout}");
    let rate: f64 = receivers[0]
        .split_whitespace()
        .nth(6)
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(rate > 0.0, "{stdout}");
    assert!(stdout.trim_end().ends_with("iperf Done."), "{stdout}");
    // Without -O the send path's calibration is no row, as it is no interval of -J's.
    assert!(!stdout.contains("(omitted)"), "{stdout}");
    assert!(!stdout.contains("CPU: local"), "{stdout}");
    assert!(stderr.contains("CPU: local"), "{stderr}");
    let (verbose, _) = run(&["-V"]);
    assert!(verbose.contains("CPU: local"), "{verbose}");
    // iperf3's own -V lines, which scripts read, in iperf3's format.
    for line in [
        "Time: ",
        "Test Complete. Summary Results:",
        "snd_tcp_congestion ",
        "rcv_tcp_congestion ",
    ] {
        assert!(
            verbose.lines().any(|l| l.starts_with(line)),
            "{line}: {verbose}"
        );
    }
    let cpu = verbose
        .lines()
        .find_map(|l| l.strip_prefix("CPU Utilization: local/sender "))
        .unwrap_or_else(|| panic!("{verbose}"));
    assert!(
        cpu.contains("%u/") && cpu.contains(", remote/receiver "),
        "{cpu}"
    );
}

/// A test whose server is killed mid-way, under iperf3's command line, is told as iperf3 tells
/// one: no summary rows (a trial read a dead server's "receiver" row as the test's rate), `-J`'s
/// `"end": {}` beside `error` and the intervals measured, nothing on standard error (`iperf3
/// -J ... 2>&1 | jq` reads one document), exit status 1.
#[test]
fn a_test_whose_server_died_has_no_summary_under_iperf3s_command_line() {
    let run = |extra: &[&str]| {
        let port = common::free_port();
        let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["server", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        common::wait_listening(([127, 0, 0, 1], port).into(), "the server");
        let client = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "5"])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2000));
        common::kill9(&mut server);
        let out = client.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains(" sec "), "the intervals measured: {stdout}");
    assert!(
        !stdout.contains("receiver")
            && !stdout.contains("sender")
            && !stdout.contains("iperf Done."),
        "{stdout}"
    );
    assert!(stderr.contains("error - server gone mid-test"), "{stderr}");
    let (code, stdout, stderr) = run(&["-J"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(doc["end"], serde_json::json!({}), "{doc:#}");
    assert!(
        doc["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{doc:#}"
    );
    assert!(
        doc["intervals"].as_array().is_some_and(|i| !i.is_empty()),
        "{doc:#}"
    );
}
