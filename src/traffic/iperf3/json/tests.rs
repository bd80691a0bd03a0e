use super::*;
use std::collections::BTreeMap;

fn fixture(name: &str) -> TestResult {
    let path = format!(
        "{}/tests/fixtures/iperf3-json/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn iperf3_fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/iperf3-json/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json")
}

fn server() -> SocketAddr {
    "127.0.0.1:5201".parse().expect("address")
}

/// Every key path of a document with its JSON type; arrays stand for their elements.
fn shape(v: &Value, path: &str, out: &mut BTreeMap<String, &'static str>) {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    out.insert(path.to_string(), kind);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                shape(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for x in a {
                shape(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

/// Keys of iperf3 3.12's document netsweep does not measure (the path MTU).
const NOT_MEASURED: &[&str] = &["$.intervals[].streams[].pmtu"];

fn assert_same_shape(ours: &Value, theirs: &Value) {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    shape(ours, "$", &mut a);
    shape(theirs, "$", &mut b);
    for (path, kind) in &b {
        if NOT_MEASURED.contains(&path.as_str()) {
            continue;
        }
        assert_eq!(a.get(path), Some(kind), "{path}: iperf3 has a {kind}");
    }
}

#[test]
fn tcp_documents_have_every_key_of_iperf3s_with_its_type() {
    let doc = document(&with_cookie(fixture("netsweep-tcp-P2-O1.json")), server());
    assert_same_shape(&doc, &iperf3_fixture("iperf3.12-tcp-P2.json"));
}

#[test]
fn udp_documents_have_every_key_of_iperf3s_with_its_type() {
    let doc = document(&with_cookie(fixture("netsweep-udp-P2.json")), server());
    assert_same_shape(&doc, &iperf3_fixture("iperf3.12-udp.json"));
}

/// A result as this version's clients record it, with the test's cookie (the fixtures are
/// older).
fn with_cookie(mut r: TestResult) -> TestResult {
    r.start.cookie = Some("5j53cbvvnfnqhetitomz25i5ts7t4mof4eva".into());
    r
}

/// The document's cookie is the test's, or none: a result recorded without one (an older
/// version's) gets no invented cookie.
#[test]
fn the_cookie_is_the_tests_or_none() {
    let r = fixture("netsweep-udp-P2.json");
    assert!(document(&r, server())["start"].get("cookie").is_none());
    let doc = document(&with_cookie(r), server());
    assert_eq!(
        doc["start"]["cookie"],
        "5j53cbvvnfnqhetitomz25i5ts7t4mof4eva"
    );
}

/// Each rate is its object's bytes over its object's seconds (one end's time base).
fn assert_rates_match_their_seconds(v: &Value, path: &str) {
    if let Value::Object(m) = v {
        if let (Some(b), Some(s), Some(r)) = (
            m.get("bytes").and_then(Value::as_f64),
            m.get("seconds").and_then(Value::as_f64),
            m.get("bits_per_second").and_then(Value::as_f64),
        ) && s > 0.0
            && !path.ends_with(".receiver")
            && !path.ends_with(".sum")
        {
            let want = b * 8.0 / s;
            assert!(
                (r - want).abs() <= want * 1e-9 + 1e-9,
                "{path}: {r} != {want}"
            );
        }
        for (k, x) in m {
            assert_rates_match_their_seconds(x, &format!("{path}.{k}"));
        }
    } else if let Value::Array(a) = v {
        for x in a {
            assert_rates_match_their_seconds(x, &format!("{path}[]"));
        }
    }
}

#[test]
fn every_rate_divides_bytes_by_the_seconds_beside_it() {
    for name in [
        "netsweep-tcp-P2-O1.json",
        "netsweep-udp-P2.json",
        "netsweep-tcp-bidir.json",
        "netsweep-tcp-reverse.json",
    ] {
        let doc = document(&fixture(name), server());
        assert_rates_match_their_seconds(&doc, name);
        // The receiver's rate is over its `end` (its own seconds), as in iperf3.
        for s in doc["end"]["streams"].as_array().into_iter().flatten() {
            if let Some(r) = s.get("receiver") {
                let want =
                    r["bytes"].as_f64().unwrap_or(0.0) * 8.0 / r["end"].as_f64().unwrap_or(1.0);
                let got = r["bits_per_second"].as_f64().unwrap_or(-1.0);
                assert!((got - want).abs() <= want * 1e-9 + 1e-9, "{name}");
            }
        }
    }
}

#[test]
fn interval_sums_add_up_their_streams_and_restart_after_the_warm_up() {
    let r = fixture("netsweep-tcp-P2-O1.json");
    let doc = document(&r, server());
    let ivs = doc["intervals"].as_array().expect("intervals");
    // -t 2 -O 1 -i 1 after a 0.3 s calibration: the 1.3 s warm-up in two omitted intervals,
    // then two measured ones whose clock restarts at 0.
    let omitted: Vec<bool> = ivs
        .iter()
        .map(|i| i["sum"]["omitted"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(omitted, [true, true, false, false], "{ivs:#?}");
    assert_eq!(ivs[0]["sum"]["start"].as_f64(), Some(0.0));
    assert_eq!(ivs[2]["sum"]["start"].as_f64(), Some(0.0));
    assert!((ivs[3]["sum"]["end"].as_f64().unwrap_or(0.0) - 2.0).abs() < 1e-6);
    for iv in ivs {
        let streams: u64 = iv["streams"]
            .as_array()
            .expect("streams")
            .iter()
            .map(|s| s["bytes"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(iv["sum"]["bytes"].as_u64(), Some(streams));
        assert_eq!(iv["sum"]["sender"], json!(true));
    }
    // The measured intervals' sender bytes add up to end.sum_sent.
    let measured: u64 = ivs[2..]
        .iter()
        .map(|i| i["sum"]["bytes"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(doc["end"]["sum_sent"]["bytes"].as_u64(), Some(measured));
    assert_eq!(
        doc["end"]["sum_received"]["bytes"].as_u64(),
        Some(r.summary.bytes)
    );
}

#[test]
fn bidir_names_the_servers_direction_bidir_reverse() {
    let doc = document(&fixture("netsweep-tcp-bidir.json"), server());
    let end = &doc["end"];
    for k in [
        "sum_sent",
        "sum_received",
        "sum_sent_bidir_reverse",
        "sum_received_bidir_reverse",
    ] {
        assert!(end[k]["bytes"].as_u64().unwrap_or(0) > 0, "{k}: {end:#}");
    }
    assert_eq!(end["sum_sent"]["sender"], json!(true));
    assert_eq!(end["sum_sent_bidir_reverse"]["sender"], json!(false));
    assert_eq!(end["streams"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["start"]["test_start"]["bidir"], json!(1));
    assert!(doc["intervals"][0]["sum_bidir_reverse"].is_object());
}

#[test]
fn reverse_tests_are_written_from_the_receivers_side() {
    let r = fixture("netsweep-tcp-reverse.json");
    let doc = document(&r, server());
    // No -O: the calibration interval is not one of iperf3's.
    assert_eq!(doc["intervals"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["start"]["test_start"]["reverse"], json!(1));
    let s = &doc["intervals"][0]["streams"][0];
    assert_eq!(s["sender"], json!(false));
    assert!(
        s.get("retransmits").is_none(),
        "a receiver has no TCP_INFO of the sender"
    );
    assert_eq!(doc["end"]["sum_received"]["sender"], json!(false));
    assert_eq!(
        doc["end"]["sum_received"]["bytes"].as_u64(),
        Some(r.summary.bytes)
    );
}

#[test]
fn udp_end_has_the_original_sum_and_both_sides() {
    let r = fixture("netsweep-udp-P2.json");
    let doc = document(&r, server());
    let end = &doc["end"];
    assert_eq!(end["sum"]["packets"].as_u64(), r.summary.packets);
    assert_eq!(end["sum"]["lost_packets"].as_u64(), r.summary.lost_packets);
    assert_eq!(end["sum_sent"]["sender"], json!(true));
    assert_eq!(end["sum_received"]["sender"], json!(false));
    // A trial's finding: iperf3's receiver counts the datagrams it saw and lost (the highest
    // sequence number): lost_packets / packets is lost_percent, as in the intervals.
    let received = &end["sum_received"];
    assert_eq!(received["packets"].as_u64(), r.summary.packets);
    let (lost, packets) = (
        received["lost_packets"].as_f64().unwrap(),
        received["packets"].as_f64().unwrap(),
    );
    assert!(
        (received["lost_percent"].as_f64().unwrap() - 100.0 * lost / packets).abs() < 1e-9,
        "{received}"
    );
    assert!(end["streams"][0]["udp"]["jitter_ms"].is_number());
    // iperf3's -b is per stream: 50M over two streams.
    assert_eq!(
        doc["start"]["test_start"]["target_bitrate"],
        json!(25_000_000)
    );
    assert!(doc["start"].get("tcp_mss_default").is_none());
}

#[test]
fn netsweeps_own_figures_are_under_extensions_only() {
    let r = fixture("netsweep-tcp-P2-O1.json");
    let doc = document(&r, server());
    let x = &doc["extensions"];
    assert_eq!(x["netsweep_version"], json!(r.netsweep_version));
    assert_eq!(x["summary"]["bytes"].as_u64(), Some(r.summary.bytes));
    for k in ["summary", "directions", "netsweep_version", "spec"] {
        assert!(doc.get(k).is_none() || k == "end", "{k} at the top");
    }
    assert!(
        doc.get("error").is_none(),
        "a test that worked has no error key"
    );
}

#[test]
fn a_test_until_interrupted_has_iperf3s_duration_0() {
    let mut r = fixture("netsweep-tcp-reverse.json");
    let asked = r.spec.duration.as_secs();
    assert!(asked > 0);
    assert_eq!(
        document(&r, server())["start"]["test_start"]["duration"],
        json!(asked)
    );
    r.spec.until_stopped = true;
    assert_eq!(
        document(&r, server())["start"]["test_start"]["duration"],
        json!(0),
        "iperf3 -t 0 writes the duration it was given"
    );
}

/// iperf3 3.21 writes `-i 0` as `"interval": 0` (its one interval spans the test).
#[test]
fn interval_zero_is_written_as_iperf3_writes_it() {
    let mut r = fixture("netsweep-tcp-reverse.json");
    let asked = r.spec.interval.as_secs_f64();
    assert!(asked > 0.0);
    let written = |r: &TestResult| document(r, server())["start"]["test_start"]["interval"].clone();
    assert_eq!(written(&r), json!(asked));
    r.spec.whole_test_interval = true;
    r.spec.interval = r.spec.duration;
    assert_eq!(written(&r), json!(0.0));
}

#[test]
fn fq_rate_is_written_where_iperf3_writes_it() {
    let mut r = fixture("netsweep-tcp-reverse.json");
    r.spec.fq_rate_bps = Some(5_000_000_000);
    let doc = document(&r, server());
    assert_eq!(doc["start"]["fq_rate"], json!(5_000_000_000u64));
    assert_eq!(
        doc["start"]["test_start"]["fqrate"],
        json!(5_000_000_000u64)
    );
}

#[test]
fn a_test_cut_short_carries_iperf3s_error_key() {
    let mut r = fixture("netsweep-tcp-reverse.json");
    r.error = Some("the server closed the connection".into());
    assert_eq!(
        document(&r, server())["error"],
        json!("the server closed the connection")
    );
}

#[test]
fn stream_events_are_one_line_each() {
    let r = fixture("netsweep-tcp-reverse.json");
    let line = stream_event(
        "interval",
        &interval(&r.spec, &r.intervals[2]).expect("measured"),
    );
    assert!(!line.contains('\n'));
    assert!(
        line.starts_with("{\"event\":\"interval\",\"data\":{"),
        "{line}"
    );
    let v: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["event"], json!("interval"));
    assert!(v["data"]["sum"]["bytes"].is_u64());
}

#[test]
fn timestamps_are_rfc1123_as_iperf3_writes_them() {
    // From iperf3 3.12's own document (tests/fixtures/iperf3-json/iperf3.12-tcp-P2.json).
    assert_eq!(rfc1123(1_795_462_209), "Mon, 23 Nov 2026 19:30:09 GMT");
    assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(rfc1123(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
}

#[test]
fn netsweeps_own_iperf3_importer_reads_the_document() {
    for name in ["netsweep-tcp-P2-O1.json", "netsweep-udp-P2.json"] {
        let r = fixture(name);
        let text = document(&r, server()).to_string();
        crate::traffic::iperf3::parse_json_result(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
