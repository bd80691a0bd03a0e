//! `duration = "auto"` end to end on loopback: a steady flow ends at the first slot boundary
//! after the rule is met, in both directions, with both ends' figures agreeing and the rate
//! what the pacer was asked for (physics); a flow the rule never accepts runs to its ceiling;
//! iperf3 peers are refused; a campaign with `duration = "auto"` stores short runs with their
//! endings.
//!
//! The traffic tests run one at a time: paced flows of this file running at once on two cores
//! made the kernel reorder loopback segments as their threads moved between the cores (an
//! Intel Xeon VM, 2026-11-28: three 100 Mbit/s flows at once retransmitted 675-1128 segments
//! each in 5 s, with `TcpExtTCPOFOQueue` up 2668 and no softnet drops; one alone, 87 and 109),
//! and the rule then rightly saw no steady rate; one such flow alone ended after 2.25 s every
//! time.

mod common;

use common::TestServer;
use netsweep::traffic::client::{self, ClientConfig, PeerProtocol};
use netsweep::traffic::result::Interval;
use netsweep::traffic::spec::{Direction, ServerLimits, TestSpec};
use netsweep::traffic::steady::Steady;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

fn auto_spec(ceiling_s: u64, rate_bps: f64) -> TestSpec {
    let mut spec = TestSpec::tcp(Duration::from_secs(ceiling_s));
    spec.interval = Duration::from_millis(250);
    spec.bitrate_bps = rate_bps;
    spec.calibration = Duration::ZERO;
    spec.steady = Some(Steady::default());
    spec
}

#[test]
fn a_steady_paced_flow_ends_long_before_its_ceiling_in_both_directions() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    for direction in [Direction::Forward, Direction::Reverse] {
        let mut spec = auto_spec(20, 200e6);
        spec.direction = direction;
        let t0 = Instant::now();
        let r = server
            .run(&spec)
            .unwrap_or_else(|e| panic!("{direction:?}: {e}"));
        let wall = t0.elapsed();
        let ending = r.ending.clone().expect("an auto test records its ending");
        let reading = ending.reading.expect("enough intervals were judged");
        assert!(reading.steady, "{direction:?}: {ending:?}");
        // The run lasts at least the floor (2 s) and at most a few slots of 0.25 s after it;
        // a busy host may need more intervals to agree, but nowhere near the 20 s ceiling. The
        // figure covers what MSER kept of it (at least half).
        let ran = ending.measured_s + ending.transient_s;
        assert!((2.0..12.0).contains(&ran), "{direction:?}: {ending:?}");
        assert!(
            ending.measured_s >= ran / 2.0 - 1e-9,
            "{direction:?}: {ending:?}"
        );
        assert!(wall < Duration::from_secs(16), "{direction:?}: {wall:?}");
        // The result's spec says the time it ran, its summary covers that less the initial
        // transient, which its intervals show as omitted.
        assert!(
            (r.spec.duration.as_secs_f64() - ran).abs() < 1e-6,
            "{direction:?}: {:?} vs {ending:?}",
            r.spec.duration
        );
        assert!((r.summary.seconds - ending.measured_s).abs() < 1e-6);
        assert_eq!(
            r.intervals.len() as f64,
            (ran / 0.25).round(),
            "{direction:?}"
        );
        let omitted = r.intervals.iter().filter(|i| i.omitted).count();
        assert_eq!(omitted as u32, r.spec.transient, "{direction:?}");
        assert!(omitted <= r.intervals.len() / 2, "{direction:?}: {omitted}");
        // Both ends cut at the same slot: what the sender counted reached the receiver.
        let (sent, got) = (r.summary.sent_bytes as f64, r.summary.bytes as f64);
        assert!(
            (got / sent - 1.0).abs() < 0.03,
            "{direction:?}: sent {sent} received {got}"
        );
        // Physics: the pacer's 200 Mbit/s, within what a busy host allows.
        let rate = r.summary.bits_per_second;
        assert!((150e6..=206e6).contains(&rate), "{direction:?}: {rate}");
        assert!(r.error.is_none() && r.inconsistencies.is_empty(), "{r:?}");
        assert!((reading.mean_bps / 200e6 - 1.0).abs() < 0.25, "{reading:?}");
    }
}

#[test]
fn a_flow_the_rule_never_accepts_runs_to_its_ceiling() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let mut spec = auto_spec(3, 100e6);
    // No real flow is known to one part in a billion.
    spec.steady = Some(Steady {
        precision: 1e-9,
        ..Steady::default()
    });
    let r = server.run(&spec).expect("test runs");
    let ending = r.ending.clone().expect("ending recorded");
    assert!(!ending.reading.unwrap().steady, "{ending:?}");
    assert_eq!(r.spec.duration, Duration::from_secs(3));
    assert!((ending.measured_s - 3.0).abs() < 1e-6, "{ending:?}");
    assert!(ending.sentence().starts_with("ran to its 3 s ceiling"));
}

#[test]
fn an_iperf3_peer_is_refused_with_the_reason() {
    let server = TestServer::start(ServerLimits::default());
    let mut cfg = ClientConfig::new(server.addr);
    cfg.peer = PeerProtocol::Iperf3;
    let stop = AtomicBool::new(false);
    let err = client::run_test(&cfg, &auto_spec(5, 0.0), &stop, &mut |_: &Interval| {})
        .expect_err("refused");
    assert!(
        err.message.contains("needs a netsweep server"),
        "{}",
        err.message
    );
}

#[test]
fn the_command_line_takes_auto_and_prints_how_the_test_ended() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let dir = tempfile::tempdir().unwrap();
    let port = server.addr.port().to_string();
    let text = common::netsweep_ok(
        dir.path(),
        &[
            "client",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "auto:15s",
            "-i",
            "0.25",
            "-b",
            "100M",
        ],
    );
    assert!(
        text.contains("Duration auto: ended after") && text.contains("of its 15 s ceiling"),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", "127.0.0.1", "-p", &port, "-t", "automatic"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("auto:60s"));
}

#[test]
fn a_campaign_with_auto_durations_stores_short_runs_with_their_endings() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.toml"),
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"auto:20s\"\ninterval = \"250ms\"\n\
         bitrate = \"100M\"\n[matrix]\nwindow = [\"2M\", \"4M\"]\n[repeat]\ncount = 2\n",
    )
    .unwrap();
    // One flow per run (a window per configuration, not -P 2): two paced flows at once reorder
    // on loopback (above).
    let t0 = Instant::now();
    common::netsweep_ok(dir.path(), &["run", "plan.toml", "--db", "a.db"]);
    // Four runs, each far shorter than its 20 s ceiling.
    assert!(t0.elapsed() < Duration::from_secs(50), "{:?}", t0.elapsed());
    let db = rusqlite::Connection::open(dir.path().join("a.db")).unwrap();
    let mut q = db
        .prepare("SELECT result_json FROM run WHERE status = 'ok'")
        .unwrap();
    let rows: Vec<String> = q
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 4);
    for json in rows {
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let measured = doc["ending"]["measured_s"].as_f64().unwrap();
        assert!(measured < 12.0, "{}", doc["ending"]);
        assert_eq!(
            doc["ending"]["reading"]["steady"], true,
            "{}",
            doc["ending"]
        );
        let transient = doc["ending"]["transient_s"].as_f64().unwrap();
        let us = doc["spec"]["duration_us"].as_f64().unwrap();
        assert!(
            (us / 1e6 - measured - transient).abs() < 1e-6,
            "{}",
            doc["ending"]
        );
    }
}
