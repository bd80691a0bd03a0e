//! iperf3's `-J` document and `--json-stream` lines as a `TestTimeline` (`traffic::over_time`):
//! every interval's streams and sums, with the sender's `retransmits`, `rtt` (microseconds)
//! and `snd_cwnd` (bytes) where the client's end was the sender. Numbers are read with
//! `import`'s leniency (-1 written as 18446744073709551615 is unknown); a rate that is not a
//! finite, physically possible figure is refused with its place in the file named.
//!
//! The stream format (iperf3 3.17+, `--json-stream`) is one `{"event": NAME, "data": ...}`
//! object per line: `start` (the `-J` document's `start` object), one `interval` per interval
//! (an element of its `intervals`), `end`, and `error` (a string). The events are put back
//! together into the `-J` shape and read the same way; a stream cut before `end` still draws.

use super::import::lenient_f64;
use crate::traffic::over_time::{Format, Point, StreamLine, TestFacts, TestTimeline, continuous};
use serde_json::{Map, Value};

/// 10 Tbit/s: beyond any link iperf3 has measured (as `import`).
const MAX_RATE: f64 = 1e13;

/// Reads an `iperf3 -J` document.
pub fn read_document(source: &str, doc: &Value) -> Result<TestTimeline, String> {
    let error = doc
        .get("error")
        .and_then(Value::as_str)
        .map(crate::inputs::peer_text);
    let intervals = doc
        .get("intervals")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if intervals.is_empty() {
        return Err(match error {
            Some(e) => format!("holds no interval, only iperf3's error: {e}"),
            None => "holds no interval: nothing to draw".into(),
        });
    }
    let start = doc.get("start").unwrap_or(&Value::Null);
    let test = facts(start, intervals);
    let mut totals: Vec<StreamLine> = Vec::new();
    let mut streams: Vec<(i64, StreamLine)> = Vec::new();
    for (k, iv) in intervals.iter().enumerate() {
        for (key, name) in [("sum", "total"), ("sum_bidir_reverse", "total (reverse)")] {
            let Some(sum) = iv.get(key) else { continue };
            let p = point(sum).map_err(|e| format!("intervals[{k}].{key}.{e}"))?;
            match totals.iter_mut().find(|t| t.name == name) {
                Some(t) => t.points.push(p),
                None => totals.push(StreamLine {
                    name: name.into(),
                    points: vec![p],
                }),
            }
        }
        let rows = iv.get("streams").and_then(Value::as_array);
        for (j, s) in rows.into_iter().flatten().enumerate() {
            let p = point(s).map_err(|e| format!("intervals[{k}].streams[{j}].{e}"))?;
            let socket = s.get("socket").and_then(Value::as_i64).unwrap_or(j as i64);
            match streams.iter_mut().find(|(id, _)| *id == socket) {
                Some((_, l)) => l.points.push(p),
                None => {
                    let reverse = test.direction == "bidir"
                        && s.get("sender").and_then(Value::as_bool) == Some(false);
                    let name =
                        format!("stream {socket}{}", if reverse { " (reverse)" } else { "" });
                    streams.push((
                        socket,
                        StreamLine {
                            name,
                            points: vec![p],
                        },
                    ));
                }
            }
        }
    }
    let mut streams: Vec<StreamLine> = streams.into_iter().map(|(_, l)| l).collect();
    for line in totals.iter_mut().chain(streams.iter_mut()) {
        continuous(&mut line.points);
    }
    Ok(TestTimeline {
        source: source.to_string(),
        format: Format::Iperf3Json,
        test,
        totals,
        streams,
        latency: None,
        error,
        transactions: None,
    })
}

/// Reads `iperf3 --json-stream` lines.
pub fn read_stream(source: &str, text: &str) -> Result<TestTimeline, String> {
    let mut doc = Map::new();
    let mut intervals = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("line {} is not JSON ({e})", n + 1))?;
        let event = v.get("event").and_then(Value::as_str).ok_or_else(|| {
            format!(
                "line {} has no \"event\": every line must be {{\"event\":...,\"data\":...}}",
                n + 1
            )
        })?;
        let data = v.get("data").cloned().unwrap_or(Value::Null);
        match event {
            "start" | "end" | "error" => {
                doc.insert(event.to_string(), data);
            }
            "interval" => intervals.push(data),
            // server_output_json, server_output_text and events of later versions.
            _ => {}
        }
    }
    doc.insert("intervals".into(), Value::Array(intervals));
    let mut t = read_document(source, &Value::Object(doc))?;
    t.format = Format::Iperf3Stream;
    Ok(t)
}

/// The test's facts from `start` (and the first interval, for the direction of a file
/// without `test_start`).
fn facts(start: &Value, intervals: &[Value]) -> TestFacts {
    let ts = start.get("test_start").unwrap_or(&Value::Null);
    let flag = |k: &str| {
        ts.get(k)
            .is_some_and(|v| v.as_bool().unwrap_or_else(|| v.as_i64().unwrap_or(0) != 0))
    };
    let bidir = flag("bidir")
        || intervals
            .iter()
            .any(|iv| iv.get("sum_bidir_reverse").is_some());
    TestFacts {
        host: start
            .pointer("/connecting_to/host")
            .and_then(Value::as_str)
            .map(crate::inputs::peer_text),
        protocol: ts
            .get("protocol")
            .and_then(Value::as_str)
            .map(crate::inputs::peer_text)
            .unwrap_or_else(|| "TCP".into()),
        direction: if bidir {
            "bidir"
        } else if flag("reverse") {
            "reverse"
        } else {
            "forward"
        }
        .into(),
        duration_s: ts.get("duration").and_then(lenient_f64).unwrap_or(0.0),
        streams: ts.get("num_streams").and_then(Value::as_u64).unwrap_or(0) as u32,
        tool: start
            .get("version")
            .and_then(Value::as_str)
            .map(crate::inputs::peer_text),
        started_unix: start.pointer("/timestamp/timesecs").and_then(lenient_f64),
    }
}

/// One stream's (or a sum's) interval.
fn point(v: &Value) -> Result<Point, String> {
    let num = |k: &str| v.get(k).and_then(lenient_f64);
    let bps = num("bits_per_second").ok_or("bits_per_second is missing")?;
    if !(0.0..=MAX_RATE).contains(&bps) {
        return Err(format!(
            "bits_per_second is {bps}, outside 0 to {MAX_RATE}: the file is damaged"
        ));
    }
    let start_s = num("start").unwrap_or(0.0);
    let end_s = num("end").unwrap_or(start_s);
    // iperf3 writes 0 for the RTT and window of a stream whose sender is the far end.
    let positive = |k: &str| num(k).filter(|x| *x > 0.0);
    Ok(Point {
        start_s,
        end_s,
        omitted: v.get("omitted").and_then(Value::as_bool).unwrap_or(false),
        bits_per_second: bps,
        retransmits: num("retransmits").filter(|r| *r >= 0.0).map(|r| r as u64),
        rtt_ms: positive("rtt").map(|us| us / 1000.0),
        cwnd_bytes: positive("snd_cwnd").map(|b| b as u64),
        lost_percent: num("lost_percent").filter(|l| (0.0..=100.0).contains(l)),
        probe_p50_ms: None,
        probe_p99_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::over_time::read;

    /// Two intervals of a two-stream TCP test as iperf3 3.12 writes them (trimmed).
    pub const TWO_STREAMS: &str = r#"{"start":{"version":"iperf 3.12","connecting_to":{"host":"127.0.0.1","port":5201},
      "timestamp":{"time":"Fri, 27 Nov 2026 01:00:00 GMT","timesecs":1795741200},
      "test_start":{"protocol":"TCP","num_streams":2,"duration":2,"reverse":0,"omit":0}},
     "intervals":[
      {"streams":[{"socket":5,"start":0,"end":1.0,"seconds":1.0,"bytes":1,"bits_per_second":4e9,"retransmits":0,"snd_cwnd":1047728,"rtt":154,"omitted":false,"sender":true},
                  {"socket":7,"start":0,"end":1.0,"seconds":1.0,"bytes":1,"bits_per_second":3e9,"retransmits":2,"snd_cwnd":524288,"rtt":162,"omitted":false,"sender":true}],
       "sum":{"start":0,"end":1.0,"seconds":1.0,"bytes":2,"bits_per_second":7e9,"retransmits":2,"omitted":false,"sender":true}},
      {"streams":[{"socket":5,"start":1.0,"end":2.0,"seconds":1.0,"bytes":1,"bits_per_second":5e9,"retransmits":18446744073709551615,"snd_cwnd":1047728,"rtt":150,"omitted":false,"sender":true},
                  {"socket":7,"start":1.0,"end":2.0,"seconds":1.0,"bytes":1,"bits_per_second":2e9,"retransmits":0,"snd_cwnd":0,"rtt":0,"omitted":false,"sender":true}],
       "sum":{"start":1.0,"end":2.0,"seconds":1.0,"bytes":2,"bits_per_second":7e9,"retransmits":0,"omitted":false,"sender":true}}],
     "end":{"sum_sent":{"bits_per_second":7e9},"sum_received":{"bits_per_second":7e9}}}"#;

    #[test]
    fn an_iperf3_document_gives_streams_sums_rtt_and_cwnd() {
        let t = read("a.json", TWO_STREAMS).unwrap();
        assert_eq!(t.format, Format::Iperf3Json);
        assert_eq!(t.test.host.as_deref(), Some("127.0.0.1"));
        assert_eq!((t.test.protocol.as_str(), t.test.streams), ("TCP", 2));
        assert_eq!(
            (t.test.duration_s, t.test.direction.as_str()),
            (2.0, "forward")
        );
        assert_eq!(t.test.tool.as_deref(), Some("iperf 3.12"));
        assert_eq!(t.totals.len(), 1);
        assert_eq!(t.totals[0].points[1].bits_per_second, 7e9);
        let names: Vec<&str> = t.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["stream 5", "stream 7"]);
        let s5 = &t.streams[0].points;
        assert_eq!(s5[0].rtt_ms, Some(0.154));
        assert_eq!(s5[0].cwnd_bytes, Some(1047728));
        // -1 written as u64::MAX is unknown, and 0 RTT/cwnd is iperf3's "not the sender".
        assert_eq!(s5[1].retransmits, None);
        assert_eq!(
            (
                t.streams[1].points[1].rtt_ms,
                t.streams[1].points[1].cwnd_bytes
            ),
            (None, None)
        );
        assert_eq!(t.streams[1].points[0].retransmits, Some(2));
    }

    #[test]
    fn a_json_stream_reads_like_the_document() {
        let doc: Value = serde_json::from_str(TWO_STREAMS).unwrap();
        let mut lines = vec![format!("{{\"event\":\"start\",\"data\":{}}}", doc["start"])];
        for iv in doc["intervals"].as_array().unwrap() {
            lines.push(format!("{{\"event\":\"interval\",\"data\":{iv}}}"));
        }
        lines.push(format!("{{\"event\":\"end\",\"data\":{}}}", doc["end"]));
        let stream = lines.join("\n") + "\n";
        let t = read("s.jsonl", &stream).unwrap();
        assert_eq!(t.format, Format::Iperf3Stream);
        let d = read("a.json", TWO_STREAMS).unwrap();
        assert_eq!((t.totals, t.streams, t.test), (d.totals, d.streams, d.test));
        // Cut before "end": what arrived still draws.
        let cut = lines[..2].join("\n");
        assert_eq!(read("s.jsonl", &cut).unwrap().totals[0].points.len(), 1);
        // A damaged line is named.
        let bad = format!("{}\nnot json\n", lines[0]);
        let e = read("s.jsonl", &bad).unwrap_err().to_string();
        assert!(e.contains("s.jsonl") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn impossible_rates_and_empty_documents_are_refused_with_the_place_named() {
        let bad = TWO_STREAMS.replacen("\"bits_per_second\":3e9", "\"bits_per_second\":-3e9", 1);
        let e = read("a.json", &bad).unwrap_err().to_string();
        assert!(e.contains("intervals[0].streams[1].bits_per_second"), "{e}");
        let e = read(
            "a.json",
            r#"{"start":{},"intervals":[],"end":{},"error":"unable to connect"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("unable to connect") && e.contains("iperf3 -J"),
            "{e}"
        );
    }

    #[test]
    fn bidir_and_warm_up_times_are_kept_apart() {
        let iv = |s: f64, omitted: bool| {
            format!(
                r#"{{"streams":[{{"socket":5,"start":{s},"end":{e},"bits_per_second":1e9,"omitted":{omitted},"sender":true}},
                              {{"socket":7,"start":{s},"end":{e},"bits_per_second":2e9,"omitted":{omitted},"sender":false}}],
                   "sum":{{"start":{s},"end":{e},"bits_per_second":1e9,"omitted":{omitted}}},
                   "sum_bidir_reverse":{{"start":{s},"end":{e},"bits_per_second":2e9,"omitted":{omitted}}}}}"#,
                e = s + 1.0
            )
        };
        let doc = format!(
            r#"{{"start":{{"test_start":{{"protocol":"TCP","num_streams":1,"duration":1,"omit":1,"bidir":1}}}},"intervals":[{},{}]}}"#,
            iv(0.0, true),
            iv(0.0, false)
        );
        let t = read("b.json", &doc).unwrap();
        assert_eq!(t.test.direction, "bidir");
        let names: Vec<&str> = t
            .totals
            .iter()
            .chain(&t.streams)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["total", "total (reverse)", "stream 5", "stream 7 (reverse)"]
        );
        // The measured interval follows the warm-up instead of drawing over it.
        let p = &t.totals[0].points;
        assert_eq!((p[0].omitted, p[1].start_s, p[1].end_s), (true, 1.0, 2.0));
    }
}
