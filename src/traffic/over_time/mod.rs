//! One test over time, read from a result file: netsweep's own `client --json` document,
//! iperf3's `-J` document or iperf3's `--json-stream` lines, each turned into one
//! `TestTimeline` (the test's facts, the total and every stream per interval, latency under
//! load as a CDF) for `netsweep plot` and the campaign report's per-run pictures to draw.
//!
//! The format is found from the text itself (`read`); anything else is refused naming the file
//! and the three formats expected. Values are normalised here, once: rates in bit/s, RTT in
//! milliseconds, windows in bytes, times in seconds since the first interval began (a time
//! base that restarts after iperf3's `-O` warm-up is made continuous), CDF shares in percent.
//! Reading only; `report::plot` draws.

pub mod netsweep;
pub mod rr;

use serde_json::Value;
use std::fmt;

/// The formats `read` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `netsweep client --json` (or `--json=netsweep`), also what the campaign store keeps.
    Netsweep,
    /// `iperf3 -J` (or netsweep's client in iperf3 mode with `-J`).
    Iperf3Json,
    /// `iperf3 --json-stream` (3.17+): one `{"event":...,"data":...}` object per line.
    Iperf3Stream,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Netsweep => "netsweep --json",
            Format::Iperf3Json => "iperf3 -J",
            Format::Iperf3Stream => "iperf3 --json-stream",
        })
    }
}

/// What the test was: the title of its picture.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestFacts {
    /// The far end, as the file names it.
    pub host: Option<String>,
    /// "TCP" or "UDP".
    pub protocol: String,
    /// "forward", "reverse" (the far end sends) or "bidir".
    pub direction: String,
    /// Measured seconds asked for (0 when the test was a byte or block count).
    pub duration_s: f64,
    /// Streams per direction.
    pub streams: u32,
    /// The program that wrote the file ("iperf 3.12", "netsweep 0.1.0").
    pub tool: Option<String>,
    /// When the test started, Unix seconds.
    pub started_unix: Option<f64>,
}

/// One interval of one stream (or of the total).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Point {
    /// Seconds since the first interval began.
    pub start_s: f64,
    pub end_s: f64,
    /// Part of the warm-up (`-O`).
    pub omitted: bool,
    /// Goodput (netsweep: delivered to the receiver; iperf3: as the client's end counted it).
    pub bits_per_second: f64,
    /// TCP segments retransmitted in the interval (sender's count).
    pub retransmits: Option<u64>,
    /// Smoothed RTT the sender's kernel saw at the end of the interval, ms.
    pub rtt_ms: Option<f64>,
    /// Sender's congestion window, bytes.
    pub cwnd_bytes: Option<u64>,
    /// UDP datagrams lost in the interval, percent.
    pub lost_percent: Option<f64>,
    /// Latency probes sent in the interval: median and 99th percentile round trip, ms.
    pub probe_p50_ms: Option<f64>,
    pub probe_p99_ms: Option<f64>,
}

/// One stream's intervals.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamLine {
    /// "stream 1", "stream 5 (reverse)".
    pub name: String,
    pub points: Vec<Point>,
}

/// Latency under load as cumulative distributions: (round trip ms, percent of probes at or
/// below it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencyCdf {
    pub loaded: Vec<(f64, f64)>,
    pub idle: Vec<(f64, f64)>,
}

/// One test over time.
#[derive(Debug, Clone, PartialEq)]
pub struct TestTimeline {
    /// The file (or stored run) it was read from.
    pub source: String,
    pub format: Format,
    pub test: TestFacts,
    /// All streams together per interval (one line per direction with `--bidir`: `totals`).
    pub totals: Vec<StreamLine>,
    pub streams: Vec<StreamLine>,
    pub latency: Option<LatencyCdf>,
    /// The test ended with an error the file records.
    pub error: Option<String>,
    /// A request/response test's transactions (it has no intervals).
    pub transactions: Option<rr::Transactions>,
}

/// Why a file cannot be drawn.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReadError {
    #[error(
        "{file} is not a test result netsweep can plot: expected netsweep's `client --json` \
         document (throughput or request/response), iperf3's `-J` document or iperf3's `--json-stream` lines, found {found}"
    )]
    UnknownFormat { file: String, found: String },
    #[error("{file} looks like {format} output but {problem}")]
    Damaged {
        file: String,
        format: Format,
        problem: String,
    },
}

/// Reads `text` (from `source`, named in errors) in whichever of the three formats it is.
pub fn read(source: &str, text: &str) -> Result<TestTimeline, ReadError> {
    let damaged = |format: Format| {
        move |problem: String| ReadError::Damaged {
            file: source.to_string(),
            format,
            problem,
        }
    };
    match serde_json::from_str::<Value>(text) {
        Ok(doc) => {
            if doc.get("netsweep_version").is_some() && doc.get("intervals").is_some() {
                return netsweep::read(source, doc).map_err(damaged(Format::Netsweep));
            }
            if let Some(rr) = doc.get("rr").filter(|_| doc.get("intervals").is_none()) {
                return rr::read(source, rr).map_err(damaged(Format::Netsweep));
            }
            if doc.get("start").is_some()
                && (doc.get("intervals").is_some() || doc.get("end").is_some())
            {
                return crate::traffic::iperf3::over_time::read_document(source, &doc)
                    .map_err(damaged(Format::Iperf3Json));
            }
            if doc.get("event").is_some() {
                // A stream of a single line.
                return crate::traffic::iperf3::over_time::read_stream(source, text)
                    .map_err(damaged(Format::Iperf3Stream));
            }
            Err(ReadError::UnknownFormat {
                file: source.to_string(),
                found: describe(&doc),
            })
        }
        Err(whole) => {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            match serde_json::from_str::<Value>(first) {
                Ok(v) if v.get("event").is_some() => {
                    crate::traffic::iperf3::over_time::read_stream(source, text)
                        .map_err(damaged(Format::Iperf3Stream))
                }
                Ok(v) => Err(ReadError::UnknownFormat {
                    file: source.to_string(),
                    found: format!("lines of JSON whose first is {}", describe(&v)),
                }),
                Err(_) => Err(ReadError::UnknownFormat {
                    file: source.to_string(),
                    found: if text.trim().is_empty() {
                        "an empty file".into()
                    } else {
                        format!("text that is not JSON ({whole})")
                    },
                }),
            }
        }
    }
}

/// A JSON value in a few words, for an error: its type, or an object's first keys.
fn describe(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let keys: Vec<String> = m
                .keys()
                .take(6)
                .map(|k| format!("\"{}\"", crate::inputs::peer_text(k)))
                .collect();
            if keys.is_empty() {
                "an empty JSON object".into()
            } else {
                format!("a JSON object with keys {}", keys.join(", "))
            }
        }
        Value::Array(_) => "a JSON array".into(),
        _ => "a single JSON value, not an object".into(),
    }
}

/// Makes interval times continuous: a line whose times restart (iperf3's intervals begin again
/// at 0 after the `-O` warm-up) continues from where the previous interval ended.
pub fn continuous(points: &mut [Point]) {
    let mut offset = 0.0;
    let mut last_end: f64 = 0.0;
    for p in points.iter_mut() {
        // Clock noise of a millisecond is no restart.
        if p.start_s + offset < last_end - 1e-3 {
            offset = last_end - p.start_s;
        }
        p.start_s += offset;
        p.end_s += offset;
        last_end = p.end_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_files_are_refused_by_name_with_what_was_expected() {
        for (text, found) in [
            ("", "an empty file"),
            ("hello", "not JSON"),
            (r#"{"campaign": 1, "runs": []}"#, "\"campaign\""),
            ("[1, 2]", "a JSON array"),
            ("{\"a\":1}\n{\"b\":2}\n", "lines of JSON"),
        ] {
            let e = read("results/x.json", text).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, ReadError::UnknownFormat { .. }), "{msg}");
            assert!(msg.contains("results/x.json"), "{msg}");
            assert!(
                msg.contains("iperf3's `-J`") && msg.contains("--json-stream"),
                "{msg}"
            );
            assert!(msg.contains(found), "{text}: {msg}");
        }
    }

    #[test]
    fn a_time_base_that_restarts_after_the_warm_up_is_made_continuous() {
        let p = |s: f64, e: f64| Point {
            start_s: s,
            end_s: e,
            ..Point::default()
        };
        let mut pts = vec![p(0.0, 1.0), p(1.0, 2.0), p(0.0, 1.0), p(1.0, 2.0)];
        continuous(&mut pts);
        let ends: Vec<f64> = pts.iter().map(|p| p.end_s).collect();
        assert_eq!(ends, [1.0, 2.0, 3.0, 4.0]);
        // Clock noise is left alone.
        let mut pts = vec![p(0.0, 1.0005), p(1.0, 2.0)];
        continuous(&mut pts);
        assert_eq!(pts[1].start_s, 1.0);
    }
}
