//! The `start` object of iperf3's document: who connected, when, and the test asked for,
//! for the client's document and (`asked_test_start`, `version`, `timestamp`) the server's.

use super::{SCHEMA_VERSION, socket_id};
use crate::traffic::measure::SocketInfo;
use crate::traffic::result::StartInfo;
use crate::traffic::spec::{Count, Direction, Protocol, TestSpec};
use serde_json::{Map, Value, json};
use std::net::SocketAddr;

/// The `start` object. `info` may be `StartInfo::default()` with only a timestamp when the
/// streams are not known yet (the first `--json-stream` event); `connected` is then empty.
pub fn start(spec: &TestSpec, info: &StartInfo, server: SocketAddr) -> Value {
    let mut s = Map::new();
    let connected: Vec<Value> = info
        .client_sockets
        .iter()
        .filter_map(|sock| {
            let local: SocketAddr = sock.local.parse().ok()?;
            let remote: SocketAddr = sock.remote.parse().ok()?;
            Some(json!({
                "socket": socket_id(sock.stream),
                "local_host": plain_ip(local),
                "local_port": local.port(),
                "remote_host": plain_ip(remote),
                "remote_port": remote.port(),
            }))
        })
        .collect();
    s.insert("connected".into(), Value::Array(connected));
    s.insert("version".into(), Value::String(version()));
    s.insert(
        "system_info".into(),
        Value::String(crate::platform::system_info()),
    );
    s.insert("timestamp".into(), timestamp(info.timestamp_unix_s));
    s.insert(
        "connecting_to".into(),
        json!({ "host": plain_ip(server), "port": server.port() }),
    );
    s.extend(this_end(
        spec,
        info.cookie.as_deref(),
        info.control_mss_bytes,
        info.client_sockets.first(),
    ));
    s.insert("test_start".into(), test_start(spec, info.chunk_bytes));
    Value::Object(s)
}

/// The keys of `start` that say what this end had, in iperf3's order: the test's `cookie`,
/// the MSS (`tcp_mss` as asked, else `tcp_mss_default`: the control connection's,
/// `control_mss`, as iperf3's client reads it; 0 unknown), the rates asked per stream, `-w`
/// (`sock_bufsize`) and the buffers the kernel granted its first data socket (`first`).
pub fn this_end(
    spec: &TestSpec,
    cookie: Option<&str>,
    control_mss: Option<u32>,
    first: Option<&SocketInfo>,
) -> Map<String, Value> {
    let mut s = Map::new();
    if let Some(c) = cookie {
        s.insert("cookie".into(), json!(c));
    }
    if spec.protocol == Protocol::Tcp {
        match spec.mss_bytes {
            Some(m) => s.insert("tcp_mss".into(), json!(m)),
            None => s.insert("tcp_mss_default".into(), json!(control_mss.unwrap_or(0))),
        };
    }
    s.insert("target_bitrate".into(), json!(stream_bitrate(spec)));
    s.insert("fq_rate".into(), json!(spec.fq_rate_bps.unwrap_or(0)));
    s.insert("sock_bufsize".into(), json!(spec.window_bytes.unwrap_or(0)));
    if let Some(f) = first {
        s.insert("sndbuf_actual".into(), json!(f.sndbuf_bytes));
        s.insert("rcvbuf_actual".into(), json!(f.rcvbuf_bytes));
    }
    s
}

/// `start.version`: iperf3's schema version, so readers that check it read on, and this
/// program's.
pub fn version() -> String {
    format!(
        "iperf {SCHEMA_VERSION} (netsweep {})",
        env!("CARGO_PKG_VERSION")
    )
}

/// `start.timestamp` of a moment in Unix seconds.
pub fn timestamp(unix_s: f64) -> Value {
    let millis = (unix_s * 1000.0).max(0.0) as u64;
    json!({
        "time": rfc1123(millis / 1000),
        "timesecs": millis / 1000,
        "timemillisecs": millis,
    })
}

/// `start.test_start` as a server writes it: the test asked for (its block size as asked).
pub fn asked_test_start(spec: &TestSpec) -> Value {
    test_start(spec, None)
}

fn test_start(spec: &TestSpec, chunk_bytes: Option<u64>) -> Value {
    let blksize = match (spec.protocol, chunk_bytes) {
        (Protocol::Tcp, Some(c)) if spec.length_bytes == 0 || !spec.calibration.is_zero() => c,
        _ => u64::from(spec.length_bytes),
    };
    json!({
        "protocol": match spec.protocol { Protocol::Tcp => "TCP", Protocol::Udp => "UDP" },
        "num_streams": spec.streams,
        "blksize": blksize,
        "omit": spec.omit.as_secs(),
        // As iperf3 writes a test that ends at a count (no duration, the count asked for) or
        // when interrupted (-t 0: the duration asked, 0).
        "duration": if spec.count.is_some() || spec.until_stopped { 0 } else { spec.duration.as_secs() },
        "bytes": match spec.count { Some(Count::Bytes(b)) => b, _ => 0 },
        "blocks": match spec.count { Some(Count::Blocks(k)) => k, _ => 0 },
        "reverse": i32::from(spec.direction == Direction::Reverse),
        "tos": spec.tos.unwrap_or(0),
        "target_bitrate": stream_bitrate(spec),
        "bidir": i32::from(spec.direction == Direction::Bidir),
        "fqrate": spec.fq_rate_bps.unwrap_or(0),
        // -i 0 (one interval over the whole test) is 0, as iperf3 writes it.
        "interval": if spec.whole_test_interval { 0.0 } else { spec.interval.as_secs_f64() },
        "gso": 0,
        "gro": 0,
    })
}

/// iperf3's `-b` is per stream; netsweep's spec holds the total of a direction.
fn stream_bitrate(spec: &TestSpec) -> u64 {
    (spec.bitrate_bps / f64::from(spec.streams.max(1))).round() as u64
}

/// An address as iperf3 prints it: IPv4-mapped IPv6 shown as IPv4.
fn plain_ip(a: SocketAddr) -> String {
    match a.ip() {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or_else(|| v6.to_string(), |v4| v4.to_string()),
        ip => ip.to_string(),
    }
}

/// `Mon, 23 Nov 2026 19:30:09 GMT` (RFC 1123, as iperf3's `timestamp.time`).
pub fn rfc1123(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    let (year, month, day) = crate::units::civil_from_days(days as i64);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}
