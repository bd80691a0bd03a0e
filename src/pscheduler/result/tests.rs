use super::*;
use crate::pscheduler::schema::problems;

/// Real `netsweep client --json` results on loopback: TCP -P 2 -O 1, TCP -R -w 256K, UDP -P 2.
fn fixture(name: &str) -> TestResult {
    let text = match name {
        "tcp" => include_str!("../../../tests/fixtures/pscheduler/netsweep-tcp.json"),
        "tcp-reverse" => {
            include_str!("../../../tests/fixtures/pscheduler/netsweep-tcp-reverse.json")
        }
        _ => include_str!("../../../tests/fixtures/pscheduler/netsweep-udp.json"),
    };
    match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => panic!("fixture {name}: {e}"),
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The figures in a converted result agree with each other and with netsweep's.
fn check_figures(r: &TestResult, v: &Value) {
    assert_eq!(problems(v), Vec::<String>::new());
    let intervals = v["intervals"].as_array().map_or(0, Vec::len);
    assert_eq!(intervals, r.intervals.len());
    for (iv, src) in v["intervals"]
        .as_array()
        .into_iter()
        .flatten()
        .zip(&r.intervals)
    {
        let s = &iv["summary"];
        let secs = f(&s["end"]) - f(&s["start"]);
        assert!(
            close(
                f(&s["throughput-bits"]),
                f(&s["throughput-bytes"]) * 8.0 / secs
            ),
            "{s}"
        );
        let stream_bytes: f64 = iv["streams"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| f(&b["throughput-bytes"]))
            .sum();
        assert_eq!(stream_bytes, f(&s["throughput-bytes"]));
        assert_eq!(f(&s["throughput-bytes"]), src.total.sent_bytes as f64);
        assert_eq!(s["omitted"], json!(src.omitted));
    }
    let sum = &v["summary"]["summary"];
    assert_eq!(f(&sum["throughput-bytes"]), r.summary.sent_bytes as f64);
    assert!(close(
        f(&sum["receiver-throughput-bits"]),
        r.summary.bits_per_second
    ));
    assert!(close(
        f(&sum["throughput-bits"]),
        r.summary.sent_bytes as f64 * 8.0 / r.summary.seconds
    ));
    let measured: Vec<&Interval> = r.intervals.iter().filter(|i| !i.omitted).collect();
    assert_eq!(f(&sum["start"]), measured[0].start_s);
    assert_eq!(f(&sum["end"]), measured[measured.len() - 1].end_s);
    let streams = v["summary"]["streams"].as_array().map_or(0, Vec::len);
    assert_eq!(streams, usize::from(r.spec.streams));
}

#[test]
fn a_tcp_result_keeps_netsweeps_figures_in_the_schema() {
    let r = fixture("tcp");
    let v = from_test(&r, "diags here");
    check_figures(&r, &v);
    assert_eq!(v["succeeded"], json!(true));
    assert!(
        v["intervals"][0]["summary"]["omitted"] == json!(true),
        "-O 1: first omitted"
    );
    let stream = &v["intervals"][1]["streams"][0];
    assert!(stream["rtt"].as_u64().is_some_and(|r| r > 0), "{stream}");
    assert!(stream["tcp-window-size"].as_u64().is_some_and(|w| w > 0));
    assert!(
        stream.get("sent").is_none(),
        "no UDP figures in TCP: {stream}"
    );
    let retrans: u64 = v["summary"]["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["retransmits"].as_u64())
        .sum();
    assert_eq!(
        v["summary"]["summary"]["retransmits"].as_u64(),
        Some(retrans)
    );
    assert_eq!(v["mss"], json!(32768));
    assert_eq!(v["diags"], json!("diags here"));
}

#[test]
fn a_reverse_result_takes_the_servers_sockets_as_the_senders() {
    let r = fixture("tcp-reverse");
    let v = from_test(&r, "");
    check_figures(&r, &v);
    let server_mss = r.start.server_sockets.iter().find_map(|s| s.mss_bytes);
    assert_eq!(v["mss"].as_u64(), server_mss.map(u64::from));
    assert_eq!(v["requested-tcp-window-size"], json!(262_144));
}

#[test]
fn a_udp_result_carries_sent_lost_and_jitter() {
    let r = fixture("udp");
    let v = from_test(&r, "");
    check_figures(&r, &v);
    let sum = &v["summary"]["summary"];
    assert_eq!(sum["sent"].as_u64(), r.summary.packets);
    assert_eq!(sum["lost"].as_u64(), r.summary.lost_packets);
    assert!(sum["jitter"].is_number(), "{sum}");
    for iv in v["intervals"].as_array().into_iter().flatten() {
        for s in iv["streams"].as_array().into_iter().flatten() {
            assert!(s["lost"].as_u64() <= s["sent"].as_u64(), "{s}");
            assert!(
                s.get("retransmits").is_none() && s.get("rtt").is_none(),
                "{s}"
            );
        }
    }
    // 50 Mbit/s asked: the sender's rate is within 5 % of it.
    let bits = f(&sum["throughput-bits"]);
    assert!((bits - 50e6).abs() < 2.5e6, "{bits}");
}

#[test]
fn inconsistent_or_cut_tests_fail_with_their_figures() {
    let mut r = fixture("tcp");
    r.inconsistencies = vec!["receiver got more than the sender sent".into()];
    let v = from_test(&r, "");
    assert_eq!(v["succeeded"], json!(false));
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("contradict"))
    );
    assert_eq!(problems(&v), Vec::<String>::new());
    let cut = failure("the test did not end within its time slot", "d", Some(&r));
    assert_eq!(cut["succeeded"], json!(false));
    let e = cut["error"].as_str().unwrap_or("");
    assert!(e.contains("time slot") && e.contains("contradict"), "{e}");
    assert_eq!(
        cut["intervals"].as_array().map(Vec::len),
        Some(r.intervals.len())
    );
    assert_eq!(problems(&cut), Vec::<String>::new());
}

#[test]
fn numbers_json_cannot_carry_become_zero() {
    assert_eq!(num(f64::NAN), json!(0));
    assert_eq!(num(f64::INFINITY), json!(0));
    assert_eq!(num(1.5), json!(1.5));
}

fn two(client: Value, server: Value, spec: Value) -> Value {
    merge(&json!({"test": {"type": "throughput", "spec": spec}, "results": [client, server]}))
}

#[test]
fn merging_takes_the_clients_result_and_both_diagnostics() {
    let client = from_test(&fixture("tcp"), "client said");
    let server = served(true, None, "server said");
    for spec in [json!({"dest": "h"}), json!({"dest": "h", "reverse": true})] {
        let m = two(client.clone(), server.clone(), spec);
        assert_eq!(problems(&m), Vec::<String>::new());
        assert_eq!(m["succeeded"], json!(true));
        assert_eq!(m["intervals"], client["intervals"]);
        assert_eq!(m["summary"], client["summary"]);
        assert_eq!(
            m["diags"],
            json!("Participant 0:\nclient said\nParticipant 1:\nserver said\n")
        );
    }
}

#[test]
fn merging_failures_says_which_participant_failed() {
    let no_test = served(false, Some("no test arrived from the client"), "s");
    let m = two(Value::Null, no_test.clone(), json!({"dest": "h"}));
    assert_eq!(m["succeeded"], json!(false));
    let e = m["error"].as_str().unwrap_or("");
    assert!(
        e.contains("participant 0") && e.contains("no test arrived"),
        "{e}"
    );
    assert_eq!(problems(&m), Vec::<String>::new());
    // A client failure with no reason of its own takes the server's.
    let silent = json!({"succeeded": false, "diags": "", "intervals": [], "summary": {}});
    let m = two(silent, no_test, json!({"dest": "h"}));
    assert!(
        m["error"]
            .as_str()
            .is_some_and(|e| e.contains("participant 1")),
        "{m}"
    );
    assert_eq!(problems(&m), Vec::<String>::new());
}

#[test]
fn merging_checks_the_count_and_shape_of_results() {
    let ok = from_test(&fixture("udp"), "");
    let cases = [
        (
            json!({"test": {"spec": {"dest": "h"}}, "results": [ok.clone()]}),
            "expected 2",
        ),
        (json!({"test": {"spec": {"dest": "h"}}}), "no results"),
        (
            json!({"test": {"spec": {"dest": "h", "loopback": true}}, "results": [ok, ok]}),
            "expected 1",
        ),
        (
            json!({"test": {"spec": {"dest": "h"}}, "results": [{"succeeded": true}, {}]}),
            "not a throughput result",
        ),
    ];
    for (input, needle) in cases {
        let m = merge(&input);
        assert_eq!(m["succeeded"], json!(false), "{input}");
        assert!(
            m["error"].as_str().is_some_and(|e| e.contains(needle)),
            "{needle}: {m}"
        );
        assert_eq!(problems(&m), Vec::<String>::new());
    }
    let single = merge(
        &json!({"test": {"spec": {"dest": "h", "single-ended": true}},
                               "results": [from_test(&fixture("udp"), "")]}),
    );
    assert_eq!(single["succeeded"], json!(true));
}
