use super::*;
use crate::traffic::spec::Protocol;
use serde_json::json;

fn can_run_spec(spec: Value) -> Value {
    can_run(
        &json!({"type": "throughput", "spec": spec}),
        &ToolConfig::default(),
    )
}

fn reasons(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_supported_field_is_accepted_and_mapped() {
    let spec = json!({
        "schema": 7, "source": "198.18.0.1", "source-node": "ps1:443", "dest": "198.18.0.2",
        "dest-node": "ps2:443", "duration": "PT20S", "interval": "PT2S", "link-rtt": "PT0.1S",
        "parallel": 4, "udp": false, "bandwidth": 500_000_000u64, "window-size": 4_194_304,
        "mss": 1400, "buffer-length": 131_072, "ip-version": 4, "local-address": "198.18.0.1",
        "omit": "PT3S", "congestion": "cubic", "zero-copy": true, "reverse": true,
        "single-ended": false, "single-ended-port": 5201, "loopback": false, "ip-tos": 0
    });
    assert_eq!(can_run_spec(spec.clone()), json!({"can-run": true}));
    let t = Throughput::from_json(&spec).map_err(|r| r.join("; "));
    let test = t
        .as_ref()
        .map_err(Clone::clone)
        .and_then(Throughput::test_spec);
    let Ok(test) = test else {
        panic!("{test:?}");
    };
    assert_eq!(test.protocol, Protocol::Tcp);
    assert_eq!(test.direction, Direction::Reverse);
    assert_eq!(test.duration, Duration::from_secs(20));
    assert_eq!(test.interval, Duration::from_secs(2));
    assert_eq!(test.omit, Duration::from_secs(3));
    assert_eq!(test.streams, 4);
    assert_eq!(test.bitrate_bps, 5e8);
    assert_eq!(test.window_bytes, Some(4_194_304));
    assert_eq!(test.mss_bytes, Some(1400));
    assert_eq!(test.length_bytes, 131_072);
    assert_eq!(
        test.calibration,
        Duration::ZERO,
        "a named buffer-length skips calibration"
    );
    assert_eq!(test.congestion.as_deref(), Some("cubic"));
}

#[test]
fn unsupported_fields_are_refused_by_name_all_at_once() {
    let v = can_run_spec(json!({
        "schema": 7, "dest": "h", "flow-label": 7, "client-cpu-affinity": 1,
        "server-cpu-affinity": 2, "burst-size": 10, "bandwidth-strict": true,
        "reverse-connections": true, "no-delay": true, "sctp": true
    }));
    assert_eq!(v["can-run"], json!(false));
    let r = reasons(&v);
    for name in [
        "burst-size",
        "bandwidth-strict",
        "reverse-connections",
        "no-delay",
        "sctp",
    ] {
        let refused = if name == "no-delay" {
            "as pScheduler's iperf3 tool refuses it"
        } else {
            "netsweep does not support"
        };
        assert!(
            r.iter().any(|l| l.contains(name) && l.contains(refused)),
            "{name}: {r:?}"
        );
    }
    // The CPU affinities and the flow label in the spec above are honoured
    // (`cpu_affinities_pin_both_ends`, `a_flow_label_is_read_and_checked`).
    assert_eq!(r.len(), 5, "{r:?}");
}

/// `ip-tos` and `fq-rate` are honoured: both become the test's socket options.
#[test]
fn ip_tos_and_fq_rate_become_the_tests() {
    let spec = json!({"dest": "h", "ip-tos": 184, "fq-rate": 250_000_000});
    let t = Throughput::from_json(&spec).unwrap().test_spec().unwrap();
    assert_eq!((t.tos, t.fq_rate_bps), (Some(184), Some(250_000_000)));
    let e = Throughput::from_json(&json!({"dest": "h", "ip-tos": 256})).unwrap_err();
    assert!(e.iter().any(|p| p.contains("ip-tos 256")), "{e:?}");
}

#[test]
fn malformed_values_and_other_tests_are_refused_with_reasons() {
    let cases = [
        (
            json!({"type": "latency", "spec": {"dest": "h"}}),
            "Unsupported test type",
        ),
        (json!({"spec": {"dest": "h"}}), "Missing test type"),
        (json!({"type": "throughput"}), "Missing test specification"),
        (
            json!({"type": "throughput", "spec": []}),
            "not a JSON object",
        ),
        (
            json!({"type": "throughput", "spec": {"schema": 8, "dest": "h"}}),
            "schema 8",
        ),
        (
            json!({"type": "throughput", "spec": {"schema": 1}}),
            "dest is missing",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "duration": "10"}}),
            "duration",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "parallel": 0}}),
            "parallel",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "parallel": "2"}}),
            "parallel",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "udp": "yes"}}),
            "udp",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "ip-version": 5}}),
            "ip-version",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "parallel": 5000}}),
            "streams",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "interval": "PT0.001S"}}),
            "interval",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "udp": true, "buffer-length": 9}}),
            "length",
        ),
        (
            json!({"type": "throughput", "spec": {"dest": "h", "mss": 10}}),
            "MSS",
        ),
    ];
    for (input, needle) in cases {
        let v = can_run(&input, &ToolConfig::default());
        assert_eq!(v["can-run"], json!(false), "{input}");
        assert!(
            reasons(&v).iter().any(|r| r.contains(needle)),
            "{input}: {needle:?} not in {v}"
        );
    }
}

#[test]
fn the_hosts_configured_limits_refuse_in_can_run() {
    let config = ToolConfig {
        max_streams: 4,
        max_rate_bps: 1e9,
        max_duration: Duration::from_secs(60),
        ..ToolConfig::default()
    };
    let ask = |spec: Value| can_run(&json!({"type": "throughput", "spec": spec}), &config);
    let ok = ask(json!({"dest": "h", "parallel": 4, "bandwidth": 1_000_000_000u64}));
    assert_eq!(ok, json!({"can-run": true}));
    for (spec, needle) in [
        (
            json!({"dest": "h", "parallel": 8, "bandwidth": 100_000_000u64}),
            "parallel 8 exceeds this host's max_streams of 4",
        ),
        (
            json!({"dest": "h"}),
            "bandwidth unlimited (none given) exceeds this host's max_rate of 1.00 Gbits/sec: \
             give bandwidth 1000000000 or less",
        ),
        (
            json!({"dest": "h", "bandwidth": 2_000_000_000u64}),
            "bandwidth 2000000000 exceeds",
        ),
        (
            json!({"dest": "h", "duration": "PT2M", "bandwidth": 100_000_000u64}),
            "a test of 120.0 s (omit and duration) exceeds this host's max_duration of 60.0 s",
        ),
    ] {
        let v = ask(spec.clone());
        assert!(
            reasons(&v).iter().any(|r| r.contains(needle)),
            "{spec}: {v}"
        );
    }
}

#[test]
fn duration_adds_setup_wait_warmup_and_shutdown() {
    let d = |spec: Value| duration(&json!({"type": "throughput", "spec": spec}));
    // setup max(200 ms / 50 ms, 1) = 4 s, wait 3, calibration 0.3, test 10, shutdown 2.
    assert_eq!(d(json!({"dest": "h"})), Ok(json!({"duration": "PT20S"})));
    // No calibration with a buffer length; omit 5; one second of setup for a 10 ms path.
    assert_eq!(
        d(
            json!({"dest": "h", "duration": "PT30S", "omit": "PT5S", "buffer-length": 65536,
                 "link-rtt": "PT0.01S"})
        ),
        Ok(json!({"duration": "PT41S"}))
    );
    // A 500 ms path needs ten seconds to set up.
    assert_eq!(
        d(json!({"dest": "h", "udp": true, "duration": "PT5S", "link-rtt": "PT0.5S"})),
        Ok(json!({"duration": "PT20S"}))
    );
    assert!(d(json!({"dest": "h", "duration": "5s"})).is_err());
    assert!(duration(&json!({})).is_err());
}

#[test]
fn udp_without_bandwidth_runs_at_iperf3s_default() {
    let t = Throughput::from_json(&json!({"dest": "h", "udp": true}))
        .map_err(|r| r.join("; "))
        .and_then(|t| t.test_spec());
    assert_eq!(
        t.map(|t| (t.protocol, t.bitrate_bps)),
        Ok((Protocol::Udp, 1e6))
    );
}

#[test]
fn zero_copy_false_fixes_the_copying_path() {
    let t = Throughput::from_json(&json!({"dest": "h", "zero-copy": false}))
        .map_err(|r| r.join("; "))
        .and_then(|t| t.test_spec());
    assert_eq!(
        t.map(|t| (t.zerocopy, t.calibration)),
        Ok((false, Duration::ZERO))
    );
    // A buffer length is written, as iperf3 -l writes; with zero-copy it is sent with
    // sendfile(2), as iperf3 -l -Z.
    let fixed = |spec: Value| {
        Throughput::from_json(&spec)
            .map_err(|r| r.join("; "))
            .and_then(|t| t.test_spec())
            .map(|t| (t.zerocopy, t.calibration))
    };
    assert_eq!(
        fixed(json!({"dest": "h", "buffer-length": 131_072})),
        Ok((false, Duration::ZERO))
    );
    assert_eq!(
        fixed(json!({"dest": "h", "buffer-length": 131_072, "zero-copy": true})),
        Ok((true, Duration::ZERO))
    );
}

/// Regression: can-run accepted `bandwidth` with `fq-rate`, which pScheduler's iperf3 tool
/// refuses ("Cannot have bandwidth and fq-rate set simultaneously"), by their presence.
#[test]
fn bandwidth_with_fq_rate_is_refused_as_the_iperf3_tool_refuses_it() {
    let v = can_run_spec(json!({"dest": "h", "bandwidth": 1_000_000, "fq-rate": 2_000_000}));
    assert_eq!(v["can-run"], json!(false));
    let r = reasons(&v);
    assert!(
        r.iter().any(|l| l.contains("bandwidth and fq-rate")),
        "{r:?}"
    );
    for alone in [
        json!({"dest": "h", "fq-rate": 1_000_000}),
        json!({"dest": "h", "bandwidth": 1_000_000}),
    ] {
        assert_eq!(
            can_run_spec(alone.clone())["can-run"],
            json!(true),
            "{alone}"
        );
    }
}

/// What pScheduler's iperf3 tool refuses in `can-run` (its `supported_options` leaves out
/// these throughput fields, `no-delay` with any value; it also refuses the bandwidth/fq-rate
/// pair), netsweep refuses too.
#[test]
fn can_run_refuses_what_the_iperf3_tool_refuses() {
    for spec in [
        json!({"dest": "h", "bandwidth-strict": true}),
        json!({"dest": "h", "burst-size": 10}),
        json!({"dest": "h", "reverse-connections": true}),
        json!({"dest": "h", "no-delay": true}),
        json!({"dest": "h", "no-delay": false}),
        json!({"dest": "h", "sctp": true}),
        json!({"dest": "h", "bandwidth": 1, "fq-rate": 1}),
    ] {
        assert_eq!(
            can_run_spec(spec.clone())["can-run"],
            json!(false),
            "{spec}"
        );
    }
}

/// The iperf3 tool's `-A` on each side: netsweep's client pins its streams and asks the
/// server to pin its own.
#[test]
fn cpu_affinities_pin_both_ends() {
    let t = Throughput::from_json(&json!({
        "schema": 7, "dest": "h", "client-cpu-affinity": 1, "server-cpu-affinity": 0
    }))
    .unwrap();
    let s = t.test_spec().unwrap();
    let one = crate::traffic::affinity::Cpus::one;
    assert_eq!(
        (s.affinity.client, s.affinity.server),
        (Some(one(1)), Some(one(0)))
    );
    let far =
        Throughput::from_json(&json!({"schema": 7, "dest": "h", "client-cpu-affinity": 5000}))
            .unwrap();
    assert!(far.test_spec().unwrap_err().contains("not a CPU number"));
}

/// `flow-label` is the iperf3 tool's `-L`: read, and checked as iperf3 checks it.
#[test]
fn a_flow_label_is_read_and_checked() {
    let spec = |v: Value| Throughput::from_json(&v).map(|t| t.flow_label);
    assert_eq!(
        spec(json!({"schema": 1, "dest": "h", "flow-label": 74565})),
        Ok(Some(0x12345))
    );
    assert_eq!(spec(json!({"schema": 1, "dest": "h"})), Ok(None));
    for bad in [0, 1_048_576] {
        let e = spec(json!({"schema": 1, "dest": "h", "flow-label": bad})).unwrap_err();
        assert!(e.iter().any(|p| p.contains("flow-label")), "{bad}: {e:?}");
    }
}

/// A trial's finding: can-run accepted a flow label towards an IPv4 address and an ip-version
/// against a dest of the other family, and the runs then failed.
#[test]
fn a_dest_address_of_the_other_family_is_refused_before_the_run() {
    let problems = |v: Value| Throughput::from_json(&v).err().unwrap_or_default();
    let e = problems(json!({"schema": 1, "dest": "127.0.0.1", "flow-label": 5}));
    assert!(
        e.iter().any(|p| p.contains("flow labels are IPv6's")),
        "{e:?}"
    );
    let e = problems(json!({"schema": 1, "dest": "127.0.0.1", "ip-version": 6}));
    assert!(e.iter().any(|p| p.contains("disagree")), "{e:?}");
    let e = problems(json!({"schema": 1, "dest": "::1", "ip-version": 4}));
    assert!(e.iter().any(|p| p.contains("IPv6 address")), "{e:?}");
    // Names and matching families stay accepted.
    assert!(
        problems(json!({"schema": 1, "dest": "::1", "flow-label": 5, "ip-version": 6})).is_empty()
    );
    assert!(problems(json!({"schema": 1, "dest": "h", "flow-label": 5})).is_empty());
}
