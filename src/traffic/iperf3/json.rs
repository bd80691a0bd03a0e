//! iperf3's `-J` document (and its `--json-stream` events) written from a netsweep result, so
//! scripts, dashboards and schedulers written for iperf3 read netsweep's output unchanged.
//!
//! The schema is iperf3 3.21's client document: `start` (`connected[]`, `version`,
//! `system_info`, `timestamp`, `connecting_to`, `cookie`, `tcp_mss_default` or `tcp_mss`,
//! `target_bitrate`, `fq_rate`, `sock_bufsize`, `sndbuf_actual`, `rcvbuf_actual`, `test_start`),
//! `intervals[]` (`streams[]`, `sum`, `sum_bidir_reverse`) and `end` (`streams[]` with
//! `sender`/`receiver` or `udp`, `sum_sent`, `sum_received`, `sum` for UDP, the `_bidir_reverse`
//! sums, `cpu_utilization_percent`, `sender_tcp_congestion`, `receiver_tcp_congestion`), with
//! iperf3's names and units (bytes, bits per second, seconds, RTT in microseconds, jitter in
//! milliseconds, CPU in percent). Figures netsweep does not measure are left out rather than
//! invented, except where iperf3 itself writes 0 for "unknown" (the sender's cwnd and RTT of a
//! stream whose sender is the far end). netsweep's own figures go under `extensions`.
//!
//! Time bases: every rate here divides bytes by the seconds of the end that counted them:
//! a `sender` object the sender's bytes over the sender's seconds, a `receiver` object the
//! receiver's over the receiver's (against an iperf3 server, its own clock). Interval times
//! restart at 0 after the warm-up, as iperf3's do after `-O`; without `-O` the warm-up is only
//! netsweep's send path calibration, which is no iperf3 interval (see `extensions.calibration`).
//!
//! Called by `app` for `-J` in iperf3 mode and for `--json-stream`, and by the iperf3 server's
//! own document (`server::document`) for its `intervals` (`interval_of` with
//! `Writer::Server`); pure rendering of a `TestResult`, no I/O.

use crate::traffic::iperf3::wire;
use crate::traffic::result::{
    DirectionResult, Interval, StreamInterval, StreamSummary, TestResult,
};
use crate::traffic::spec::{Direction, Flow, Protocol, TestSpec};
use serde_json::{Map, Value, json};
use std::net::SocketAddr;

/// The iperf3 release whose JSON schema this module writes.
pub const SCHEMA_VERSION: &str = "3.21";

/// The whole `-J` document of a finished (or cut short) test run by this client against
/// `server`.
pub fn document(result: &TestResult, server: SocketAddr) -> Value {
    let mut top = Map::new();
    top.insert("start".into(), start(&result.spec, &result.start, server));
    top.insert(
        "intervals".into(),
        Value::Array(
            result
                .intervals
                .iter()
                .filter_map(|iv| interval(&result.spec, iv))
                .collect(),
        ),
    );
    // A test that failed before the server's account arrived: iperf3's client writes an empty
    // end then, rather than totals half of which nobody measured (a trial's document read
    // sum_sent 0 bytes and the server's CPU 0 after a receive timeout). An interrupt is not
    // such a failure: iperf3's client prints the sums it has (`iperf_got_sigend`).
    let unreported = result
        .error
        .as_deref()
        .is_some_and(|e| !e.starts_with("interrupted"))
        && result
            .provenance
            .as_ref()
            .is_some_and(|p| p.from_peer.is_empty());
    top.insert(
        "end".into(),
        if unreported { json!({}) } else { end(result) },
    );
    if let Some(e) = &result.error {
        // iperf3 writes "error" only when the test failed; readers test for the key.
        top.insert("error".into(), Value::String(e.clone()));
    } else if let Some(cut) = &result.interrupted {
        interrupted::mark(&mut top, cut);
    }
    if let Some((key, value)) = server_output(result) {
        top.insert(key.into(), value);
    }
    top.insert("extensions".into(), extensions(result));
    Value::Object(top)
}

/// The far end's output as iperf3 puts it in its document and stream (`--get-server-output`):
/// `server_output_json` or `server_output_text`.
pub fn server_output(result: &TestResult) -> Option<(&'static str, Value)> {
    use crate::traffic::result::ServerOutput;
    match result.server_output.as_ref()? {
        ServerOutput::Json(j) => Some(("server_output_json", j.clone())),
        ServerOutput::Text(t) => Some(("server_output_text", Value::String(t.clone()))),
    }
}

/// One `--json-stream` line: `{"event":NAME,"data":DATA}` on one line, as iperf3 3.17+ writes.
pub fn stream_event(name: &str, data: &Value) -> String {
    // Written by hand so "event" comes first, as in iperf3's lines (a JSON object's keys are
    // otherwise sorted here).
    format!(
        "{{\"event\":{},\"data\":{data}}}",
        Value::String(name.into())
    )
}

/// iperf3 names streams by their socket; netsweep by index. The iperf3 wire ids (1, 3, 4, ...)
/// stand in, the same numbers an iperf3 server's results use.
fn socket_id(stream: u16) -> i64 {
    wire::stream_id(usize::from(stream))
}

/// The client (which writes this document) sends the streams of this flow.
fn client_sends(flow: Flow) -> bool {
    flow == Flow::ClientToServer
}

/// Times of an interval as iperf3 counts them: measured intervals from the end of the warm-up
/// (iperf3 restarts its clock after `-O`), omitted ones from the start. `None` for the warm-up
/// intervals of a test without `-O`: they are netsweep's send path calibration, which iperf3
/// has no interval for (it is under `extensions.calibration`).
fn interval_times(spec: &TestSpec, iv: &Interval) -> Option<(f64, f64)> {
    let origin = if iv.omitted {
        if spec.omit.is_zero() {
            return None;
        }
        0.0
    } else {
        spec.warmup().as_secs_f64()
    };
    Some((
        micros(iv.start_s - origin).max(0.0),
        micros(iv.end_s - origin).max(0.0),
    ))
}

/// Seconds rounded to the microsecond (iperf3 prints six decimals), so that 1.3 - 0.3 is 1.
fn micros(s: f64) -> f64 {
    (s * 1e6).round() / 1e6
}

fn rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// Which end writes a document: the `sender` flags, the counts and the sender's TCP figures
/// are that end's (iperf3's server writes `"sender": true` on the streams it sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Client,
    Server,
}

impl Writer {
    /// This end sends the streams of `flow`.
    fn sends(self, flow: Flow) -> bool {
        match self {
            Writer::Client => client_sends(flow),
            Writer::Server => !client_sends(flow),
        }
    }
}

/// One `intervals[]` entry of the client's document, or `None` for netsweep's calibration
/// intervals.
pub fn interval(spec: &TestSpec, iv: &Interval) -> Option<Value> {
    interval_of(Writer::Client, spec, iv)
}

/// One `intervals[]` entry as `writer` writes it, or `None` for netsweep's calibration
/// intervals. `iv`'s rows hold that end's counts (`bytes` received, `sent_bytes` sent).
pub fn interval_of(writer: Writer, spec: &TestSpec, iv: &Interval) -> Option<Value> {
    let (start, end) = interval_times(spec, iv)?;
    let seconds = micros(end - start);
    let mut out = Map::new();
    out.insert(
        "streams".into(),
        Value::Array(
            iv.streams
                .iter()
                .map(|row| interval_stream(writer, spec.protocol, row, (start, end), iv.omitted))
                .collect(),
        ),
    );
    for flow in [Flow::ClientToServer, Flow::ServerToClient] {
        let rows: Vec<&StreamInterval> =
            iv.streams.iter().filter(|r| r.flow == Some(flow)).collect();
        if rows.is_empty() {
            continue;
        }
        let name = sum_name("sum", spec, flow);
        out.insert(
            name,
            interval_sum(
                (writer, spec.protocol, flow),
                &rows,
                (start, end, seconds),
                iv.omitted,
            ),
        );
    }
    Some(Value::Object(out))
}

/// `sum`, or `sum_bidir_reverse` for the streams the server sends in a `--bidir` test
/// (iperf3's names, the same in the client's document and the server's).
fn sum_name(base: &str, spec: &TestSpec, flow: Flow) -> String {
    if spec.direction == Direction::Bidir && !client_sends(flow) {
        format!("{base}_bidir_reverse")
    } else {
        base.to_string()
    }
}

/// The bytes the writing end counted for a row: what it sent or what it received.
fn local_bytes(writer: Writer, row: &StreamInterval) -> u64 {
    if row.flow.is_some_and(|f| writer.sends(f)) {
        row.sent_bytes
    } else {
        row.bytes
    }
}

fn interval_stream(
    writer: Writer,
    proto: Protocol,
    row: &StreamInterval,
    (start, end): (f64, f64),
    omitted: bool,
) -> Value {
    let sender = row.flow.is_some_and(|f| writer.sends(f));
    let bytes = local_bytes(writer, row);
    let mut o = Map::new();
    o.insert("socket".into(), json!(socket_id(row.stream)));
    o.insert("start".into(), json!(start));
    o.insert("end".into(), json!(end));
    o.insert("seconds".into(), json!(micros(end - start)));
    o.insert("bytes".into(), json!(bytes));
    o.insert(
        "bits_per_second".into(),
        json!(rate(bytes, micros(end - start))),
    );
    match (proto, sender) {
        (Protocol::Tcp, true) => {
            if let Some(r) = row.retransmits {
                o.insert("retransmits".into(), json!(r));
                o.insert("snd_cwnd".into(), json!(row.cwnd_bytes.unwrap_or(0)));
                o.insert("snd_wnd".into(), json!(row.snd_wnd_bytes.unwrap_or(0)));
                o.insert("rtt".into(), json!(row.rtt_us.unwrap_or(0)));
                o.insert("rttvar".into(), json!(row.rttvar_us.unwrap_or(0)));
            }
        }
        (Protocol::Tcp, false) => {}
        (Protocol::Udp, true) => {
            o.insert("packets".into(), json!(row.packets.unwrap_or(0)));
        }
        (Protocol::Udp, false) => {
            let lost = row.lost_packets.unwrap_or(0);
            let packets = row.packets.unwrap_or(0);
            o.insert("jitter_ms".into(), json!(row.jitter_ms.unwrap_or(0.0)));
            o.insert("lost_packets".into(), json!(lost));
            o.insert("packets".into(), json!(packets));
            o.insert("lost_percent".into(), json!(percent(lost, packets)));
        }
    }
    o.insert("omitted".into(), json!(omitted));
    o.insert("sender".into(), json!(sender));
    Value::Object(o)
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn interval_sum(
    (writer, proto, flow): (Writer, Protocol, Flow),
    rows: &[&StreamInterval],
    (start, end, seconds): (f64, f64, f64),
    omitted: bool,
) -> Value {
    let sender = writer.sends(flow);
    let bytes = crate::traffic::result::saturating_sum(rows.iter().map(|r| local_bytes(writer, r)));
    let mut o = Map::new();
    o.insert("start".into(), json!(start));
    o.insert("end".into(), json!(end));
    o.insert("seconds".into(), json!(seconds));
    o.insert("bytes".into(), json!(bytes));
    o.insert("bits_per_second".into(), json!(rate(bytes, seconds)));
    let sum = |f: fn(&StreamInterval) -> Option<u64>| {
        crate::traffic::result::saturating_sum(rows.iter().map(|r| f(r).unwrap_or(0)))
    };
    match (proto, sender) {
        (Protocol::Tcp, true) if rows.iter().any(|r| r.retransmits.is_some()) => {
            o.insert("retransmits".into(), json!(sum(|r| r.retransmits)));
        }
        (Protocol::Tcp, _) => {}
        (Protocol::Udp, true) => {
            o.insert("packets".into(), json!(sum(|r| r.packets)));
        }
        (Protocol::Udp, false) => {
            let lost = sum(|r| r.lost_packets);
            let packets = sum(|r| r.packets);
            let jitter = rows.iter().filter_map(|r| r.jitter_ms).sum::<f64>() / rows.len() as f64;
            o.insert("jitter_ms".into(), json!(jitter));
            o.insert("lost_packets".into(), json!(lost));
            o.insert("packets".into(), json!(packets));
            o.insert("lost_percent".into(), json!(percent(lost, packets)));
        }
    }
    o.insert("omitted".into(), json!(omitted));
    o.insert("sender".into(), json!(sender));
    Value::Object(o)
}

/// Seconds behind a rate: `bytes * 8 / bits_per_second`, so the pair stays on the time base
/// the rate was computed on (the counting end's); `fallback` when there is no rate.
/// Rounded to the microsecond, as iperf3 prints it.
fn seconds_of(bytes: u64, bits_per_second: f64, fallback: f64) -> f64 {
    micros(if bits_per_second > 0.0 && bytes > 0 {
        bytes as f64 * 8.0 / bits_per_second
    } else {
        fallback
    })
}

/// The `end` object.
pub fn end(result: &TestResult) -> Value {
    let spec = &result.spec;
    let mut o = Map::new();
    let mut streams = Vec::new();
    for dir in &result.directions {
        for ss in &dir.streams {
            streams.push(end_stream(result, dir, ss));
        }
    }
    o.insert("streams".into(), Value::Array(streams));
    for dir in &result.directions {
        end_sums(spec, dir, &mut o);
    }
    let c = &result.cpu;
    let share = |s: f64, wall: f64| if wall > 0.0 { s / wall * 100.0 } else { 0.0 };
    o.insert(
        "cpu_utilization_percent".into(),
        json!({
            "host_total": c.local_percent,
            "host_user": share(c.local.user_s, c.local.wall_s),
            "host_system": share(c.local.system_s, c.local.wall_s),
            "remote_total": c.remote_percent,
            "remote_user": share(c.remote.user_s, c.remote.wall_s),
            "remote_system": share(c.remote.system_s, c.remote.wall_s),
        }),
    );
    if spec.protocol == Protocol::Tcp {
        let client = result
            .start
            .client_sockets
            .iter()
            .find_map(|s| s.congestion.clone());
        let server = result
            .start
            .server_sockets
            .iter()
            .find_map(|s| s.congestion.clone())
            .or_else(|| result.start.peer_congestion.clone());
        let (snd, rcv) = if spec.direction == Direction::Reverse {
            (server, client)
        } else {
            (client, server)
        };
        if let Some(c) = snd {
            o.insert("sender_tcp_congestion".into(), Value::String(c));
        }
        if let Some(c) = rcv {
            o.insert("receiver_tcp_congestion".into(), Value::String(c));
        }
    }
    Value::Object(o)
}

/// The largest cwnd the sender of `stream` reported in the measured intervals, bytes.
fn max_cwnd(result: &TestResult, stream: u16) -> u64 {
    result
        .intervals
        .iter()
        .filter(|iv| !iv.omitted)
        .flat_map(|iv| iv.streams.iter())
        .filter(|r| r.stream == stream)
        .filter_map(|r| r.cwnd_bytes)
        .max()
        .unwrap_or(0)
}

fn end_stream(result: &TestResult, dir: &DirectionResult, ss: &StreamSummary) -> Value {
    let s = &ss.summary;
    let sender = client_sends(dir.flow);
    let sender_secs = s.sent_seconds.map_or_else(
        || seconds_of(s.sent_bytes, s.sent_bits_per_second, s.seconds),
        micros,
    );
    let receiver_secs = seconds_of(s.bytes, s.bits_per_second, s.seconds);
    let local_secs = if sender { sender_secs } else { receiver_secs };
    let socket = socket_id(ss.stream);
    if result.spec.protocol == Protocol::Udp {
        let packets = s.packets.unwrap_or(0);
        let lost = s.lost_packets.unwrap_or(0);
        return json!({ "udp": {
            "socket": socket,
            "start": 0.0,
            "end": sender_secs,
            "seconds": sender_secs,
            "bytes": s.sent_bytes,
            "bits_per_second": rate(s.sent_bytes, sender_secs),
            "jitter_ms": s.jitter_ms.unwrap_or(0.0),
            "lost_packets": lost,
            "packets": packets,
            "lost_percent": percent(lost, packets),
            "out_of_order": s.out_of_order.unwrap_or(0),
            "sender": sender,
        }});
    }
    let mut snd = Map::new();
    snd.insert("socket".into(), json!(socket));
    snd.insert("start".into(), json!(0.0));
    snd.insert("end".into(), json!(sender_secs));
    snd.insert("seconds".into(), json!(sender_secs));
    snd.insert("bytes".into(), json!(s.sent_bytes));
    snd.insert(
        "bits_per_second".into(),
        json!(rate(s.sent_bytes, sender_secs)),
    );
    if let Some(r) = s.retransmits {
        // iperf3 writes these whenever the sender reported retransmits, 0 where unknown.
        snd.insert("retransmits".into(), json!(r));
        snd.insert("max_snd_cwnd".into(), json!(max_cwnd(result, ss.stream)));
        snd.insert(
            "max_snd_wnd".into(),
            json!(s.snd_wnd_max_bytes.unwrap_or(0)),
        );
        snd.insert("max_rtt".into(), json!(s.rtt_max_us.unwrap_or(0)));
        snd.insert("min_rtt".into(), json!(s.rtt_min_us.unwrap_or(0)));
        snd.insert(
            "mean_rtt".into(),
            json!(s.rtt_mean_us.map_or(0, |m| m.round() as u64)),
        );
    }
    snd.insert("sender".into(), json!(sender));
    json!({
        "sender": Value::Object(snd),
        "receiver": {
            "socket": socket,
            "start": 0.0,
            "end": receiver_secs,
            // iperf3 writes this end's own seconds here (its `end_time`).
            "seconds": local_secs,
            "bytes": s.bytes,
            "bits_per_second": rate(s.bytes, receiver_secs),
            "sender": sender,
        },
    })
}

/// `sum_sent`, `sum_received` (and UDP's `sum`) of one direction into `end`.
fn end_sums(spec: &TestSpec, dir: &DirectionResult, end: &mut Map<String, Value>) {
    let s = &dir.summary;
    let sender = client_sends(dir.flow);
    let sender_secs = s.sent_seconds.map_or_else(
        || seconds_of(s.sent_bytes, s.sent_bits_per_second, s.seconds),
        micros,
    );
    let receiver_secs = seconds_of(s.bytes, s.bits_per_second, s.seconds);
    let base = |secs: f64, bytes: u64, bps_secs: f64| {
        let mut m = Map::new();
        m.insert("start".into(), json!(0.0));
        m.insert("end".into(), json!(secs));
        m.insert("seconds".into(), json!(secs));
        m.insert("bytes".into(), json!(bytes));
        m.insert("bits_per_second".into(), json!(rate(bytes, bps_secs)));
        m
    };
    let mut sent = base(sender_secs, s.sent_bytes, sender_secs);
    let mut received = base(receiver_secs, s.bytes, receiver_secs);
    match spec.protocol {
        Protocol::Tcp => {
            if let Some(r) = s.retransmits {
                sent.insert("retransmits".into(), json!(r));
            }
            sent.insert("sender".into(), json!(sender));
            received.insert("sender".into(), json!(sender));
        }
        Protocol::Udp => {
            let packets = s.packets.unwrap_or(0);
            let lost = s.lost_packets.unwrap_or(0);
            let jitter = s.jitter_ms.unwrap_or(0.0);
            // iperf3's original UDP summary: bytes sent, over the receiver's seconds.
            let mut sum = base(receiver_secs, s.sent_bytes, sender_secs);
            sum.insert("jitter_ms".into(), json!(jitter));
            sum.insert("lost_packets".into(), json!(lost));
            sum.insert("packets".into(), json!(packets));
            sum.insert("lost_percent".into(), json!(percent(lost, packets)));
            sum.insert("sender".into(), json!(sender));
            end.insert(sum_name("sum", spec, dir.flow), Value::Object(sum));
            sent.insert("jitter_ms".into(), json!(0.0));
            sent.insert("lost_packets".into(), json!(0));
            // The sender's count, as iperf3's (`sender_total_packets`): every datagram carries
            // one -l block, and the datagrams in flight when the receiver's grid ended are in
            // the sender's bytes but not in the receiver's `packets`.
            let block = u64::from(spec.length_bytes.max(1));
            sent.insert("packets".into(), json!(s.sent_bytes / block));
            sent.insert("lost_percent".into(), json!(0.0));
            sent.insert("sender".into(), json!(true));
            received.insert("jitter_ms".into(), json!(jitter));
            received.insert("lost_packets".into(), json!(lost));
            // iperf3's receiver counts the sequence numbers it saw up to (`packet_count` is the
            // highest, iperf_udp.c): datagrams received and lost, as its intervals do, so that
            // lost_packets / packets is lost_percent.
            received.insert("packets".into(), json!(packets));
            received.insert("lost_percent".into(), json!(percent(lost, packets)));
            received.insert("sender".into(), json!(false));
        }
    }
    end.insert(sum_name("sum_sent", spec, dir.flow), Value::Object(sent));
    end.insert(
        sum_name("sum_received", spec, dir.flow),
        Value::Object(received),
    );
}

/// netsweep's figures iperf3 has no name for, under netsweep's own names.
fn extensions(result: &TestResult) -> Value {
    let mut x = Map::new();
    x.insert(
        "netsweep_version".into(),
        Value::String(result.netsweep_version.clone()),
    );
    let mut put = |k: &str, v: Result<Value, serde_json::Error>| {
        if let Ok(v) = v
            && !v.is_null()
        {
            x.insert(k.into(), v);
        }
    };
    put("peer", serde_json::to_value(&result.peer));
    put("summary", serde_json::to_value(&result.summary));
    put("directions", serde_json::to_value(&result.directions));
    put(
        "inconsistencies",
        serde_json::to_value(&result.inconsistencies),
    );
    put("warnings", serde_json::to_value(&result.warnings));
    put("provenance", serde_json::to_value(&result.provenance));
    put(
        "control_rtt_us",
        serde_json::to_value(result.start.control_rtt_us),
    );
    put("send_path", serde_json::to_value(&result.start.send_path));
    put(
        "chunk_bytes",
        serde_json::to_value(result.start.chunk_bytes),
    );
    put(
        "calibration",
        serde_json::to_value(&result.start.calibration),
    );
    put("rechecks", serde_json::to_value(&result.start.rechecks));
    put(
        "receive_mode",
        serde_json::to_value(&result.start.receive_mode),
    );
    put(
        "send_buffer_bytes",
        serde_json::to_value(result.start.send_buffer_bytes),
    );
    put(
        "receive_buffer_bytes",
        serde_json::to_value(result.start.receive_buffer_bytes),
    );
    put(
        "send_path_remembered_tests",
        serde_json::to_value(result.start.send_path_remembered_tests),
    );
    put(
        "server_sockets",
        serde_json::to_value(&result.start.server_sockets),
    );
    put("latency", serde_json::to_value(&result.latency));
    Value::Object(x)
}

mod interrupted;
mod start;
pub use start::{asked_test_start, rfc1123, start, this_end, timestamp, version};
#[cfg(test)]
mod tests;
