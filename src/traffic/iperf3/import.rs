//! iperf3's JSON result documents (`iperf3 -J`), read by `netsweep import`: the numbers a
//! campaign compares, checked for range, with the original document kept.
//!
//! Numbers are read leniently, as iperf3 writes them: Debian's 3.12 writes -1 as
//! 18446744073709551615, and some versions write integers as floats. A figure that is not a
//! finite, physically possible value (a negative rate, a loss above 100%) is refused with the
//! field named, never stored; so is a document whose figures contradict each other
//! (`agreement`: a rate against its bytes, the receiver against the sender, a sum against its
//! streams).

use serde_json::Value;

mod agreement;
pub use agreement::{RATE_SLACK, RECEIVED_SLACK, RECEIVED_SLACK_OMIT};

/// Numbers of a run measured by another tool (iperf3 -J), kept with its original JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Imported {
    pub bits_per_second: f64,
    pub retransmits: Option<i64>,
    pub lost_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
    pub cpu_local_percent: Option<f64>,
    pub cpu_remote_percent: Option<f64>,
    /// The test's `start.cookie` (one per test, the same in its client's and server's
    /// documents), so a test is imported once.
    pub cookie: Option<String>,
    /// When the test started (`start.timestamp.timesecs`).
    pub started_unix: Option<f64>,
    /// The test it was, in words ("TCP, 1 stream, reverse, unlimited"), from
    /// `start.test_start`: runs of one set should be of one kind.
    pub kind: Option<String>,
    /// A `--bidir` test, of which only the forward direction (`sum_received`) is taken.
    pub bidir: bool,
    pub raw_json: String,
}

impl Imported {
    /// The test a document is of: its cookie, else its whole text.
    pub fn identity(&self) -> &str {
        self.cookie.as_deref().unwrap_or(&self.raw_json)
    }
}

/// Largest iperf3 -J document read (an hour at 0.1 s intervals with 8 streams is about 60 MB).
pub const MAX_JSON_BYTES: u64 = 128 << 20;

/// A number from iperf3's JSON: integers, floats, or u64::MAX standing for -1.
pub(crate) fn lenient_f64(v: &Value) -> Option<f64> {
    if let Some(u) = v.as_u64() {
        return (u != u64::MAX).then_some(u as f64);
    }
    v.as_f64().filter(|x| x.is_finite())
}

/// A figure that must lie in `lo..=hi` when present.
fn in_range(end: &Value, path: &str, lo: f64, hi: f64) -> Result<Option<f64>, String> {
    match end.pointer(path).and_then(lenient_f64) {
        Some(x) if !(lo..=hi).contains(&x) => Err(format!(
            "end{path} is {x}, outside {lo} to {hi}: the document is damaged"
        )),
        other => Ok(other),
    }
}

/// A test's kind in words, from its `start.test_start`: protocol, streams, direction, rate.
fn kind_of(v: &Value) -> Option<String> {
    let t = v.pointer("/start/test_start")?;
    let protocol = t.get("protocol")?.as_str()?;
    let streams = t.get("num_streams").and_then(Value::as_u64).unwrap_or(1);
    let bidir = t.get("bidir").and_then(Value::as_u64) == Some(1)
        || v.pointer("/end/sum_received_bidir_reverse").is_some();
    let direction = if bidir {
        "bidir"
    } else if t.get("reverse").and_then(Value::as_u64) == Some(1) {
        "reverse"
    } else {
        "forward"
    };
    Some(kind_words(
        &crate::inputs::peer_text(protocol),
        streams,
        direction,
        t.get("target_bitrate").and_then(lenient_f64),
    ))
}

/// A test's kind in words: "TCP, 2 streams, reverse, -b 100 Mbits/sec per stream" (`per_stream`
/// 0 or none: "unlimited").
pub fn kind_words(
    protocol: &str,
    streams: u64,
    direction: &str,
    per_stream: Option<f64>,
) -> String {
    let rate = match per_stream {
        Some(b) if b > 0.0 => format!("-b {} per stream", crate::units::BitRate(b)),
        _ => "unlimited".to_string(),
    };
    format!(
        "{protocol}, {streams} stream{}, {direction}, {rate}",
        if streams == 1 { "" } else { "s" }
    )
}

/// A document's `start.cookie`, when it has one.
pub fn cookie_of(v: &Value) -> Option<String> {
    v.pointer("/start/cookie")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}

/// Reads the numbers of one iperf3 -J document.
pub fn parse_json_result(text: &str) -> Result<Imported, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(format!(
            "iperf3 reported an error: {}",
            crate::inputs::peer_text(err)
        ));
    }
    let end = v
        .get("end")
        .ok_or("no \"end\" section: is this iperf3 -J output?")?;
    let udp = end.get("sum").and_then(|s| s.get("lost_percent")).is_some();
    // 10 Tbit/s is beyond any link iperf3 has measured; a larger figure is damage, not data.
    let max_rate = 1e13;
    let section = if end.pointer("/sum_received/bits_per_second").is_some() {
        "/sum_received"
    } else {
        "/sum"
    };
    let bps = in_range(end, &format!("{section}/bits_per_second"), 0.0, max_rate)?
        .ok_or("no end.sum_received.bits_per_second")?;
    let retransmits = if udp {
        None
    } else {
        in_range(end, "/sum_sent/retransmits", 0.0, 9e15)?.map(|x| x as i64)
    };
    let (lost_percent, jitter_ms) = if udp {
        (
            in_range(end, "/sum/lost_percent", 0.0, 100.0)?,
            in_range(end, "/sum/jitter_ms", 0.0, 3.6e6)?,
        )
    } else {
        (None, None)
    };
    let cpu_local_percent = in_range(end, "/cpu_utilization_percent/host_total", 0.0, 1e5)?;
    let cpu_remote_percent = in_range(end, "/cpu_utilization_percent/remote_total", 0.0, 1e5)?;
    // Each figure in its range first, then the figures against each other.
    agreement::stored_rate_agrees(end, section, bps)?;
    let omit = v
        .pointer("/start/test_start/omit")
        .and_then(lenient_f64)
        .is_some_and(|o| o > 0.0);
    agreement::figures_agree(end, udp, omit)?;
    Ok(Imported {
        bits_per_second: bps,
        retransmits,
        lost_percent,
        jitter_ms,
        cpu_local_percent,
        cpu_remote_percent,
        cookie: cookie_of(&v),
        kind: kind_of(&v),
        bidir: end.get("sum_received_bidir_reverse").is_some(),
        started_unix: v
            .pointer("/start/timestamp/timemillisecs")
            .and_then(lenient_f64)
            .map(|ms| ms / 1000.0)
            .or_else(|| v.pointer("/start/timestamp/timesecs").and_then(lenient_f64))
            .filter(|t| *t > 0.0),
        raw_json: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_and_udp_documents_are_read() {
        let tcp = r#"{"end":{"sum_sent":{"retransmits":3,"bits_per_second":9.5e8},
            "sum_received":{"bits_per_second":9.4e8,"bytes":117500000,"seconds":1},
            "cpu_utilization_percent":{"host_total":12.5,"remote_total":30}}}"#;
        let t = parse_json_result(tcp).unwrap();
        assert_eq!(t.bits_per_second, 9.4e8);
        assert_eq!(t.retransmits, Some(3));
        assert_eq!(t.cpu_remote_percent, Some(30.0));
        let udp = r#"{"end":{"sum":{"bits_per_second":1e6,"bytes":125000,"seconds":1,
            "lost_percent":0.5,"jitter_ms":0.01}}}"#;
        let u = parse_json_result(udp).unwrap();
        assert_eq!(
            (u.lost_percent, u.jitter_ms, u.retransmits),
            (Some(0.5), Some(0.01), None)
        );
    }

    /// Debian's iperf3 3.12 writes -1 as 18446744073709551615.
    #[test]
    fn minus_one_as_u64_max_is_unknown_not_a_huge_number() {
        let doc = r#"{"end":{"sum_sent":{"retransmits":18446744073709551615},
            "sum_received":{"bits_per_second":1000,"bytes":125,"seconds":1}}}"#;
        assert_eq!(parse_json_result(doc).unwrap().retransmits, None);
    }

    /// Regression: a file whose rates were multiplied by 10, or whose bytes were zeroed, was
    /// stored as it said.
    #[test]
    fn a_rate_that_contradicts_its_own_bytes_is_refused() {
        let doc = |bytes: u64, bps: f64| {
            format!(
                r#"{{"end":{{"sum_received":{{"start":0,"end":10.0,"seconds":10.0,"bytes":{bytes},"bits_per_second":{bps}}}}}}}"#
            )
        };
        assert!(parse_json_result(&doc(3_464_833_389, 2.7718667e9)).is_ok());
        let e = parse_json_result(&doc(3_464_833_389, 2.7718667e10)).unwrap_err();
        assert!(
            e.contains("contradict") && e.contains("sum_received"),
            "{e}"
        );
        assert!(parse_json_result(&doc(0, 2.7718667e9)).is_err());
    }

    /// iperf3 3.12's own documents, a test's and its edits.
    const TCP_P2: &str = include_str!("../../../tests/fixtures/iperf3-json/iperf3.12-tcp-P2.json");
    const UDP: &str = include_str!("../../../tests/fixtures/iperf3-json/iperf3.12-udp.json");

    /// `iperf3 -s -1 -J` of a test it received: its `sum_sent` is 0 bytes (that end knows no
    /// sender's count).
    const SERVER_TCP: &str =
        include_str!("../../../tests/fixtures/iperf3-json/iperf3.12-server-tcp.json");

    /// Regression (a trial's finding): a server's document was refused as contradicting
    /// itself ("end.sum_received.bytes is 2491285504 but end.sum_sent.bytes is 0").
    #[test]
    fn an_iperf3_servers_document_imports_its_receivers_figures() {
        let v: Value = serde_json::from_str(SERVER_TCP).unwrap();
        assert_eq!(v["end"]["sum_sent"]["bytes"], serde_json::json!(0));
        let r = parse_json_result(SERVER_TCP).expect("a server's document");
        let want = v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        assert!(want > 0.0);
        assert_eq!(r.bits_per_second, want);
        assert!(r.cookie.is_some() && r.started_unix.is_some_and(|t| t > 1.7e9));
    }

    fn edited(text: &str, edit: impl Fn(&mut Value)) -> String {
        let mut v: Value = serde_json::from_str(text).unwrap();
        edit(&mut v);
        v.to_string()
    }

    /// Regression (issue 42, audit): each section was compared only with itself, so a
    /// `sum_received` whose bytes and rate were both multiplied by 10 was stored (the receiver
    /// got ten times what was sent), and so was one whose bytes were removed and rate x10.
    #[test]
    fn a_receiver_claiming_more_than_was_sent_or_a_rate_without_bytes_is_refused() {
        assert!(parse_json_result(TCP_P2).is_ok());
        assert!(parse_json_result(UDP).is_ok());
        let x10 = |v: &mut Value, key: &str| {
            let x = v["end"]["sum_received"][key].as_f64().unwrap();
            v["end"]["sum_received"][key] = serde_json::json!(x * 10.0);
        };
        let consistent_x10 = edited(TCP_P2, |v| {
            x10(v, "bytes");
            x10(v, "bits_per_second");
        });
        let e = parse_json_result(&consistent_x10).unwrap_err();
        assert!(e.contains("end.sum_received.bytes"), "{e}");
        let no_bytes = edited(TCP_P2, |v| {
            v["end"]["sum_received"]
                .as_object_mut()
                .unwrap()
                .remove("bytes");
            x10(v, "bits_per_second");
        });
        let e = parse_json_result(&no_bytes).unwrap_err();
        assert!(
            e.contains("end.sum_received has bits_per_second but no bytes"),
            "{e}"
        );
        // The sum edited alone no longer adds up over its streams.
        let sum_only = edited(TCP_P2, |v| {
            let x = v["end"]["sum_received"]["bytes"].as_f64().unwrap();
            v["end"]["sum_received"]["bytes"] = serde_json::json!(x * 0.5);
            let r = v["end"]["sum_received"]["bits_per_second"]
                .as_f64()
                .unwrap();
            v["end"]["sum_received"]["bits_per_second"] = serde_json::json!(r * 0.5);
        });
        let e = parse_json_result(&sum_only).unwrap_err();
        assert!(e.contains("end.streams"), "{e}");
        let udp_loss = edited(UDP, |v| {
            v["end"]["sum"]["lost_percent"] = serde_json::json!(99.0);
        });
        let e = parse_json_result(&udp_loss).unwrap_err();
        assert!(e.contains("lost_percent"), "{e}");
    }

    #[test]
    fn impossible_figures_are_refused_with_the_field_named() {
        for (doc, field) in [
            (
                r#"{"end":{"sum_received":{"bits_per_second":-5}}}"#,
                "bits_per_second",
            ),
            (
                r#"{"end":{"sum_received":{"bits_per_second":1e308}}}"#,
                "bits_per_second",
            ),
            (
                r#"{"end":{"sum":{"bits_per_second":1,"lost_percent":250}}}"#,
                "lost_percent",
            ),
        ] {
            let e = parse_json_result(doc).unwrap_err();
            assert!(e.contains(field), "{e}");
        }
        let e = parse_json_result(r#"{"error":"\u001b[2Jbad"}"#).unwrap_err();
        assert!(!e.contains('\x1b'), "{e:?}");
    }
}
