//! Latency under load against physics (root; CI runs it): on lab paths with a known delay,
//! rate and queue, the probe must find the path's RTT idle and the queue's delay under load.
//! Off root, a loopback test checks the probe end to end.
//!
//! The tests take `serial()`: the arrival gaps and the probe's delays are timings, and the
//! harness ran them two at a time, so a test saturating loopback (the probe beside a loopback
//! test) could share the two cores with one measuring gaps. In a suite with one core kept busy
//! (2026-11-29) the 20 ms path's paced gaps had their median at 178-200 us where the check
//! allows 168, with that test running in the same binary; rerun alone under the same load, it
//! passed.

mod common;

use common::TestServer;
use netsweep::lab::{EmulatorChoice, Host, Lab, PathConfig};
use netsweep::traffic::client::{self, ClientConfig};
use netsweep::traffic::latency::LatencySpec;
use netsweep::traffic::latency::summary::LatencyResult;
use netsweep::traffic::result::TestResult;
use netsweep::traffic::spec::{ServerLimits, TestSpec};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

fn with_latency(spec: TestSpec, idle: Duration) -> TestSpec {
    TestSpec {
        latency: Some(LatencySpec {
            probe_rate_hz: 100,
            idle,
        }),
        ..spec
    }
}

/// The lab emulator's error: the token bucket's burst drains at the rate too (a few packets),
/// plus scheduling of the delay line on a shared machine.
const EMULATOR_ERROR_MS: f64 = 3.0;

fn lab(tag: &str, dir: &tempfile::TempDir, path: PathConfig) -> Lab {
    common::lab_up(tag, dir, path, EmulatorChoice::Auto)
}

fn run(lab: &Lab, spec: &TestSpec) -> TestResult {
    let server = lab
        .start_server(Host::B, ServerLimits::default())
        .expect("server in b");
    let cfg = ClientConfig::new(server.addr);
    lab.run_in(Host::A, || {
        client::run_test(&cfg, spec, &AtomicBool::new(false), &mut |_| {})
    })
    .expect("thread in a")
    .unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

/// UDP paced at `rate_bps` in 1400-byte datagrams: the receiver's arrival gaps centre on the
/// pacing interval (112 µs at 100 Mbit/s), and the histograms count every datagram that
/// arrived. Gaps under `BURST_US` are back-to-back arrivals of a batch (a receiver or a delay
/// line woken late reads what queued meanwhile) and are left out (regression, issue 31 item
/// 15: with one core busy the gaps peaked at 1.6-1.8 µs, with a second peak at 112-126 µs).
///
/// The middle of the other gaps is the check, not their single fullest bin: on a shared CI
/// machine (a hypervisor taking the vCPU away, not only a busy core) a third of the datagrams
/// came in pairs, so gaps of twice the interval filled one 12% bin more than any bin near 112 µs
/// did, while the median stayed at 1.3 times the interval and 40% of the gaps were within 30%
/// of it. A delay line that released by a coarse timer (every millisecond, say) would put the
/// median at its tick and leave almost no gap near the interval.
fn assert_gaps_centre_on_the_pacing_interval(r: &TestResult, rate_bps: f64, what: &str) {
    const BURST_US: f64 = 10.0;
    let t = r.directions[0].udp_timing.as_ref().expect("udp_timing");
    // At these rates the receiver waits to be woken by each arrival: it never naps.
    assert_eq!(t.read_nap_us, None, "{what}");
    let gap_us = 1400.0 * 8.0 / rate_bps * 1e6;
    let paced: Vec<(f64, f64, u64)> = t
        .inter_arrival
        .bins()
        .filter(|(l, _, _)| *l >= BURST_US)
        .collect();
    let count: u64 = paced.iter().map(|(_, _, c)| c).sum();
    let mut below = 0;
    let (lo, hi, _) = *paced
        .iter()
        .find(|(_, _, c)| {
            below += c;
            below * 2 >= count
        })
        .expect("gaps");
    assert!(
        lo <= gap_us * 1.5 && hi >= gap_us / 1.5,
        "{what}: the median gap is {lo:.1}-{hi:.1} us, not near {gap_us:.0}: {:?}",
        t.inter_arrival.bins().collect::<Vec<_>>()
    );
    let near: u64 = paced
        .iter()
        .filter(|(l, h, _)| *h > gap_us / 1.3 && *l < gap_us * 1.3)
        .map(|(_, _, c)| c)
        .sum();
    // A fifth rules out a flat spread (the ±30% band is 5 of the about 100 bins a spread from
    // 1 µs to 10 ms would fill).
    assert!(
        near * 5 > count,
        "{what}: only {near} of {count} gaps of {BURST_US} us or more near {gap_us:.0} us"
    );
    let received = r.summary.packets.unwrap() - r.summary.lost_packets.unwrap_or(0);
    // One delay sample per datagram that arrived in the measured grid.
    assert!(
        t.delay_above_min.total() >= received,
        "{what}: {received} arrived"
    );
}

fn paced_udp(rate_bps: f64) -> TestSpec {
    TestSpec {
        bitrate_bps: rate_bps,
        length_bytes: 1400,
        ..TestSpec::udp(Duration::from_secs(2))
    }
}

#[test]
fn udp_arrival_gaps_peak_at_the_pacing_interval_on_loopback() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let r = server.run(&paced_udp(100e6)).unwrap();
    assert_gaps_centre_on_the_pacing_interval(&r, 100e6, "loopback");
    let text = netsweep::traffic::output::summary(&r, Default::default());
    assert!(text.contains("arrival gaps peak at"), "{text}");
}

fn latency(r: &TestResult) -> &LatencyResult {
    r.latency.as_ref().expect("latency figures")
}

#[test]
fn the_probe_runs_beside_a_loopback_test_and_accounts_for_every_probe() {
    let _serial = common::loopback::serial();
    let server = TestServer::start(ServerLimits::default());
    let spec = with_latency(
        TestSpec {
            omit: Duration::from_secs(1),
            ..TestSpec::tcp(Duration::from_secs(2))
        },
        Duration::from_millis(500),
    );
    let r = server.run(&spec).unwrap();
    let l = latency(&r);
    // 100 probes/s: about 50 idle, 200 loaded (the warm-up's are per interval only).
    assert!((40..=55).contains(&l.idle_probes), "{l:?}");
    assert!((180..=205).contains(&l.loaded_probes), "{l:?}");
    assert!(l.probe_loss_percent.unwrap() < 5.0, "{l:?}");
    let (idle, loaded) = (l.idle_p50_ms.unwrap(), l.loaded_p50_ms.unwrap());
    assert!(idle > 0.0 && idle < 20.0, "{l:?}");
    assert!((l.added_ms.unwrap() - (loaded - idle)).abs() < 1e-9);
    assert!(l.loaded_p50_ms <= l.loaded_p90_ms && l.loaded_p90_ms <= l.loaded_p99_ms);
    assert!(l.loaded_p99_ms <= l.loaded_max_ms);
    // Every interval has its probes; the measured ones add up to the loaded count.
    let measured: u64 = r
        .intervals
        .iter()
        .filter(|i| !i.omitted)
        .map(|i| i.latency.expect("per interval").probes)
        .sum();
    assert_eq!(measured, l.loaded_probes);
    // The JSON carries the figures by the names users script against.
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "idle_p50_ms",
        "loaded_p50_ms",
        "loaded_p90_ms",
        "loaded_p99_ms",
        "added_ms",
        "probe_loss_percent",
    ] {
        assert!(json["latency"][key].is_number(), "latency.{key}: {json}");
    }
    assert!(json["intervals"][1]["rtt_p50_ms"].is_number());
    // A result read back is the same result.
    let back: TestResult = serde_json::from_value(json).unwrap();
    assert_eq!(back.latency, r.latency);
    assert_eq!(back.intervals, r.intervals);
}

#[test]
fn the_probe_finds_the_paths_rtt_idle_and_the_queues_delay_under_load() {
    let _serial = common::loopback::serial();
    if !common::root_or_skip("the_probe_finds_the_paths_rtt_idle_and_the_queues_delay_under_load") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A 20 ms RTT path, idle: the probe's median is the path's RTT.
    let rtt20 = lab(
        "lt",
        &dir,
        PathConfig {
            delay: Duration::from_millis(10),
            ..PathConfig::default()
        },
    );
    let spec = with_latency(
        TestSpec {
            bitrate_bps: 10e6,
            ..TestSpec::tcp(Duration::from_secs(2))
        },
        Duration::from_secs(2),
    );
    let r = run(&rtt20, &spec);
    let idle = latency(&r).idle_p50_ms.unwrap();
    // No probe returns before the path's delay has passed twice; a probe can come back late
    // by the delay line's scheduling on a shared machine (CI at 04acb62 saw more than 1 ms
    // with both cores loaded), the same error the queue checks below allow.
    assert!(
        (19.5..=20.0 + EMULATOR_ERROR_MS).contains(&idle),
        "idle p50 {idle} ms on a 20 ms path"
    );
    // The same path, paced UDP: the delay line keeps the datagrams' spacing. At 20 Mbit/s
    // (560 us apart), not the loopback check's 100: the delay line is one more thread to wake
    // per datagram, and on the shared CI machine (CI at 5c8e0de, with this test running
    // alone) it was woken more than 112 us late for over half of them, so at 100 Mbit/s they
    // left in pairs and the median gap sat at 1.6-1.8 times the interval (on this
    // project's 2-core VM with one core busy, 1.0-1.25 times in three runs). A millisecond
    // ticker would still put the median at 1000 us, past the 1.5 times 560 allowed.
    let r = run(&rtt20, &paced_udp(20e6));
    assert_gaps_centre_on_the_pacing_interval(&r, 20e6, "20 ms lab path");
    drop(rtt20);

    // 100 Mbit/s with a 250 KB queue, saturated by a loss-based TCP: the queue adds about
    // Q*8/R = 20 ms, never more than that plus the emulator's own error; a small queue adds
    // less.
    let mut added = Vec::new();
    for (queue, qdelay_ms) in [
        ("250K", 256_000.0 * 8.0 / 100e6 * 1e3),
        ("32K", 32_768.0 * 8.0 / 100e6 * 1e3),
    ] {
        let mut path = PathConfig {
            rate_bps: Some(100e6),
            delay: Duration::from_millis(1),
            ..PathConfig::default()
        };
        path.set_queue(queue).unwrap();
        let l = lab("lq", &dir, path);
        let spec = with_latency(
            TestSpec {
                omit: Duration::from_secs(2),
                congestion: Some("cubic".into()),
                ..TestSpec::tcp(Duration::from_secs(4))
            },
            Duration::from_secs(1),
        );
        let r = run(&l, &spec);
        let lat = latency(&r);
        let add = lat.added_ms.unwrap();
        let error_ms = EMULATOR_ERROR_MS;
        assert!(
            add <= qdelay_ms + error_ms,
            "queue {queue}: added {add:.2} ms above the queue's {qdelay_ms:.2} ms: {lat:?}"
        );
        assert!(
            lat.loaded_p90_ms.unwrap() - lat.idle_p50_ms.unwrap() <= qdelay_ms + error_ms,
            "queue {queue}: {lat:?}"
        );
        assert!(
            r.summary.bits_per_second <= 100e6 * 1.01,
            "a 100 Mbit/s path carried {}",
            r.summary.bits_per_second
        );
        added.push((queue, qdelay_ms, add));
        drop(l);
    }
    let (_, big_q, big) = added[0];
    let (_, _, small) = added[1];
    assert!(
        big >= big_q * 0.5,
        "a full 250 KB queue added only {big:.2} ms: {added:?}"
    );
    assert!(
        small < big / 2.0,
        "the small queue added {small:.2} ms, the big {big:.2}"
    );
}

fn campaign_labs() -> Vec<String> {
    let mut v: Vec<String> = netsweep::platform::netns::list()
        .into_iter()
        .filter(|n| n.starts_with("nsw-r"))
        .collect();
    v.sort();
    v
}

/// The queue as a campaign dimension: the lab is rebuilt for each value, the runs interleave,
/// and each run's stored added latency respects its queue's delay, the big queue adding more.
#[test]
fn a_queue_dimension_shows_bufferbloat_appear_and_disappear() {
    let _serial = common::loopback::serial();
    if !common::root_or_skip("a_queue_dimension_shows_bufferbloat_appear_and_disappear") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("q.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"lab\"\nrate = \"100M\"\nrtt = \"4ms\"\n\
         [test]\nduration = \"2s\"\nomit = \"1s\"\ncongestion = \"cubic\"\nlatency = true\n\
         latency_idle = \"500ms\"\n[matrix]\nqueue = [\"32K\", \"512K\"]\n[repeat]\ncount = 3\n",
    )
    .unwrap();
    let db = dir.path().join("q.db");
    let before = campaign_labs();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", plan.to_str().unwrap(), "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(String, f64, u32)> = conn
        .prepare("SELECT c.label, r.latency_added_ms, r.round FROM run r JOIN configuration c ON c.id = r.configuration_id ORDER BY r.sequence")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(rows.len(), 6, "{rows:?}");
    let of = |q: &str| -> Vec<f64> {
        rows.iter()
            .filter(|(l, _, _)| l == &format!("queue={q}"))
            .map(|(_, a, _)| *a)
            .collect()
    };
    for (q, bytes) in [("32K", 32_768.0), ("512K", 524_288.0)] {
        let bound = bytes * 8.0 / 100e6 * 1e3 + 3.0;
        for a in of(q) {
            assert!(
                a <= bound,
                "queue {q}: added {a:.2} ms above {bound:.2}: {rows:?}"
            );
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (small, big) = (median(of("32K")), median(of("512K")));
    assert!(
        big > small + 10.0,
        "32K added {small:.2} ms, 512K {big:.2}: {rows:?}"
    );
    // The campaign's lab is gone with it (labs of campaigns are named r<pid>).
    let after: Vec<String> = campaign_labs();
    assert_eq!(after, before, "a campaign lab was left behind");
    let explain = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "explain",
            "--db",
            db.to_str().unwrap(),
            "--metric",
            "added_latency_ms",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(text.contains("queue matters most"), "{text}");
}
