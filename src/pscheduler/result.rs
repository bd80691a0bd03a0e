//! netsweep's `TestResult` in the throughput test's result format, and `merged-results`.
//!
//! The format follows the iperf3 tool's conventions so that a mesh mixing tools compares like
//! with like: `throughput-bits` and `throughput-bytes` are the *sender's* rate and byte count
//! (iperf3's `bits_per_second` and `bytes` of the sending side), `receiver-throughput-bits`
//! in the summaries is the receiver's goodput (netsweep's headline figure), `rtt` is the
//! sender's smoothed RTT in microseconds and `tcp-window-size` its congestion window in bytes,
//! both from TCP_INFO, `jitter` is in milliseconds. Pure; called by `run` and `method`.

use crate::traffic::result::{Interval, StreamInterval, Summary, TestResult};
use crate::traffic::spec::{Direction, Protocol};
use serde_json::{Map, Value, json};

/// A JSON number, never NaN or infinity (which JSON cannot carry); those become 0.
fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(json!(0), Value::Number)
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// One stream's (or all streams') row of one interval.
fn interval_block(
    proto: Protocol,
    row: &StreamInterval,
    iv: &Interval,
    stream_id: Option<u16>,
) -> Value {
    let secs = iv.end_s - iv.start_s;
    let mut b = Map::new();
    if let Some(id) = stream_id {
        b.insert("stream-id".into(), json!(id));
    }
    b.insert("start".into(), num(iv.start_s));
    b.insert("end".into(), num(iv.end_s));
    b.insert("throughput-bits".into(), num(rate(row.sent_bytes, secs)));
    b.insert("throughput-bytes".into(), json!(row.sent_bytes));
    b.insert("omitted".into(), json!(iv.omitted));
    match proto {
        Protocol::Tcp => {
            if let Some(r) = row.retransmits {
                b.insert("retransmits".into(), json!(r));
            }
            // iperf3 reports these per stream only.
            if stream_id.is_some() {
                if let Some(c) = row.cwnd_bytes {
                    b.insert("tcp-window-size".into(), json!(c));
                }
                if let Some(r) = row.rtt_us {
                    b.insert("rtt".into(), json!(r));
                }
            }
        }
        Protocol::Udp => {
            b.insert("sent".into(), json!(row.packets));
            b.insert("lost".into(), json!(row.lost_packets));
            b.insert("jitter".into(), row.jitter_ms.map_or(Value::Null, num));
        }
    }
    Value::Object(b)
}

/// A summary over the measured period `start..end`.
fn summary_block(
    proto: Protocol,
    s: &Summary,
    (start, end): (f64, f64),
    stream_id: Option<u16>,
) -> Value {
    let mut b = Map::new();
    if let Some(id) = stream_id {
        b.insert("stream-id".into(), json!(id));
    }
    b.insert("start".into(), num(start));
    b.insert("end".into(), num(end));
    b.insert("throughput-bits".into(), num(rate(s.sent_bytes, s.seconds)));
    b.insert("throughput-bytes".into(), json!(s.sent_bytes));
    b.insert("receiver-throughput-bits".into(), num(s.bits_per_second));
    match proto {
        Protocol::Tcp => {
            if let Some(r) = s.retransmits {
                b.insert("retransmits".into(), json!(r));
            }
            if let Some(r) = s.rtt_mean_us {
                b.insert("rtt".into(), num(r));
            }
        }
        Protocol::Udp => {
            b.insert("sent".into(), json!(s.packets));
            b.insert("lost".into(), json!(s.lost_packets));
            b.insert("jitter".into(), s.jitter_ms.map_or(Value::Null, num));
        }
    }
    Value::Object(b)
}

/// The measured period: from the first measured interval's start to the last one's end.
fn measured_window(r: &TestResult) -> (f64, f64) {
    let first = r.intervals.iter().find(|i| !i.omitted);
    let last = r.intervals.iter().rev().find(|i| !i.omitted);
    match (first, last) {
        (Some(f), Some(l)) => (f.start_s, l.end_s),
        _ => (0.0, 0.0),
    }
}

/// An empty result body for failures that measured nothing.
fn empty_body() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("intervals".into(), json!([]));
    m.insert("summary".into(), json!({"streams": [], "summary": {}}));
    m
}

/// A participant's result for a finished test. It succeeds when the test ended by itself and
/// netsweep's consistency checks found nothing; otherwise the figures stay, with the reason.
pub fn from_test(r: &TestResult, diags: &str) -> Value {
    let proto = r.spec.protocol;
    let intervals: Vec<Value> = r
        .intervals
        .iter()
        .map(|iv| {
            let streams: Vec<Value> = iv
                .streams
                .iter()
                .map(|s| interval_block(proto, s, iv, Some(s.stream)))
                .collect();
            json!({"streams": streams, "summary": interval_block(proto, &iv.total, iv, None)})
        })
        .collect();
    let window = measured_window(r);
    let streams: Vec<Value> = r
        .directions
        .iter()
        .flat_map(|d| d.streams.iter())
        .map(|s| summary_block(proto, &s.summary, window, Some(s.stream)))
        .collect();
    let mut m = Map::new();
    m.insert("succeeded".into(), json!(true));
    m.insert("intervals".into(), Value::Array(intervals));
    m.insert(
        "summary".into(),
        json!({"streams": streams, "summary": summary_block(proto, &r.summary, window, None)}),
    );
    if proto == Protocol::Tcp {
        let senders = match r.spec.direction {
            Direction::Reverse => &r.start.server_sockets,
            _ => &r.start.client_sockets,
        };
        if let Some(mss) = senders.iter().find_map(|s| s.mss_bytes) {
            m.insert("mss".into(), json!(mss));
        }
        if let Some(w) = r.spec.window_bytes {
            m.insert("requested-tcp-window-size".into(), json!(w));
        }
    }
    let mut diags = diags.to_string();
    for w in &r.warnings {
        diags.push_str(&format!("\nwarning: {w}"));
    }
    let mut errors: Vec<String> = r.error.iter().cloned().collect();
    if !r.inconsistencies.is_empty() {
        errors.push(format!(
            "the figures contradict each other: {}",
            r.inconsistencies.join("; ")
        ));
    }
    if !errors.is_empty() {
        m.insert("succeeded".into(), json!(false));
        m.insert("error".into(), json!(errors.join("; ")));
    }
    m.insert("diags".into(), json!(diags));
    Value::Object(m)
}

/// A failed participant result: the error, the diagnostics, what was measured (if anything).
pub fn failure(error: &str, diags: &str, partial: Option<&TestResult>) -> Value {
    let mut m = match partial.map(|p| from_test(p, diags)) {
        Some(Value::Object(m)) => m,
        _ => empty_body(),
    };
    m.insert("succeeded".into(), json!(false));
    let error = match m.get("error").and_then(Value::as_str) {
        Some(e) if !e.is_empty() && !error.contains(e) => format!("{error}; {e}"),
        _ => error.to_string(),
    };
    m.insert("error".into(), json!(error));
    m.insert("diags".into(), json!(diags));
    Value::Object(m)
}

/// The result of a participant that only served the test: its figures are in participant 0's
/// result, which carries both ends' measurements.
pub fn served(ok: bool, error: Option<&str>, diags: &str) -> Value {
    let mut m = empty_body();
    m.insert("succeeded".into(), json!(ok));
    if let Some(e) = error {
        m.insert("error".into(), json!(e));
    }
    m.insert("diags".into(), json!(diags));
    Value::Object(m)
}

/// `merged-results`: `{"test": {"spec": ...}, "results": [participant 0's, participant 1's]}`.
///
/// The iperf3 tool takes the sending side's result (the server's in a reverse test) and copies
/// the receiver's rate into it. A netsweep client's result already merges both ends' figures,
/// sender and receiver, in either direction, so participant 0's result is the test's; the
/// server participant adds its diagnostics, and its error when the client has none to give.
pub fn merge(input: &Value) -> Value {
    let spec = input.get("test").and_then(|t| t.get("spec"));
    let flag = |k: &str| spec.and_then(|s| s.get(k)).and_then(Value::as_bool) == Some(true);
    let one_ended = flag("single-ended") || flag("loopback");
    let Some(results) = input.get("results").and_then(Value::as_array) else {
        return failure("the merged-results input has no results list", "", None);
    };
    let expected = if one_ended { 1 } else { 2 };
    if results.len() != expected {
        return failure(
            &format!(
                "expected {expected} result{} to merge, got {}",
                if expected == 1 { "" } else { "s" },
                results.len()
            ),
            "",
            None,
        );
    }
    let text = |r: Option<&Value>, k: &str| -> Option<String> {
        r.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (client, server) = (results.first(), results.get(1));
    let mut diags = String::new();
    for (i, r) in [client, server].into_iter().enumerate() {
        if let Some(d) = text(r, "diags") {
            diags.push_str(&format!("Participant {i}:\n{d}\n"));
        }
    }
    let server_error = text(server, "error");
    let mut merged = match client.filter(|c| c.is_object()) {
        Some(c) => c.clone(),
        None => {
            let why = match &server_error {
                Some(e) => {
                    format!("participant 0 (the client) returned no result; participant 1: {e}")
                }
                None => "participant 0 (the client) returned no result".to_string(),
            };
            return failure(&why, &diags, None);
        }
    };
    let client_ok = merged.get("succeeded") == Some(&Value::Bool(true));
    if !client_ok && text(client, "error").is_none() {
        let why = server_error.map_or(
            "participant 0 (the client) failed without saying why".into(),
            |e| format!("participant 1 (the server): {e}"),
        );
        merged["error"] = json!(why);
    }
    merged["diags"] = json!(diags);
    let problems = crate::pscheduler::schema::problems(&merged);
    if problems.is_empty() {
        merged
    } else {
        failure(
            &format!(
                "participant 0's result is not a throughput result: {}",
                problems.join("; ")
            ),
            &diags,
            None,
        )
    }
}

#[cfg(test)]
mod tests;
