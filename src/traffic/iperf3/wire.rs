//! iperf3's control protocol, as esnet/iperf 3.1 to 3.21 speak it (facts from `iperf_api.c`,
//! `iperf_client_api.c`, `iperf_server_api.c`, `iperf_udp.c`; checked against Debian's 3.12 with
//! the captured exchanges in `tests/fixtures/iperf3/`). Pure encoding and decoding: sockets are
//! the caller's.
//!
//! A test: the client connects and sends a 37-byte cookie (36 characters and a NUL). The
//! server answers with one-byte states: `PARAM_EXCHANGE`, after which the client sends its
//! parameters as JSON behind a 4-byte big-endian length; `CREATE_STREAMS`, after which the client
//! opens the data connections one after another (TCP: each starts with the cookie; UDP: a
//! 4-byte datagram the server answers with 4 bytes); `TEST_START` and `TEST_RUNNING`. The client
//! ends the test with `TEST_END`; the server says `EXCHANGE_RESULTS`, the client sends its
//! results, the server its own, then `DISPLAY_RESULTS`; the client says `IPERF_DONE`. A busy
//! server sends `ACCESS_DENIED`; a failing one `SERVER_ERROR` and two big-endian int32: its
//! error code and errno.
//!
//! `params` reads and writes the client's parameters (`Params`) and refuses what iperf3's
//! server refuses (`Refusal`); `code` has iperf3's error codes.
//!
//! Numbers are read leniently: iperf3 writes -1 as 18446744073709551615 or 1.8446744073709552e19
//! (Debian's 3.12) and integers as floats.

use serde_json::{Map, Value, json};

/// Cookie length on the wire: 36 characters and a NUL.
pub const COOKIE_LEN: usize = 37;
/// The characters iperf3 makes cookies of.
const COOKIE_CHARS: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Largest parameter document accepted from a client (iperf3's own limit is 8 KiB).
pub const MAX_PARAMS_BYTES: u32 = 64 << 10;
/// Largest results document accepted from a peer (the server's output, when asked for, is in it).
pub const MAX_RESULTS_BYTES: u32 = 16 << 20;
/// iperf3's limits, which its peers enforce: streams, block size, seconds.
pub const MAX_STREAMS: u16 = 128;
pub const MAX_TCP_BLOCK: u32 = 1 << 20;
pub const MAX_UDP_BLOCK: u32 = 65_535 - 8 - 20;
pub const MAX_TIME_S: u64 = 86_400;
pub const MAX_OMIT_S: u64 = 600;
/// iperf3's MAX_TCP_BUFFER: the largest socket buffer (`-w`) it asks for, bytes.
pub const MAX_WINDOW_BYTES: u64 = crate::traffic::spec::MAX_WINDOW_BYTES;
/// The UDP "connect" datagram of a little-endian client (0x36373839 in host order: "9876").
pub const UDP_CONNECT_MSG: [u8; 4] = 0x3637_3839u32.to_le_bytes();
/// The reply every client from 3.1 to 3.21 accepts: the legacy value 987654321 as a
/// little-endian host writes it (newer clients also take "6789").
pub const UDP_CONNECT_REPLY: [u8; 4] = 987_654_321u32.to_le_bytes();

/// A test's cookie.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_LEN]);

impl Cookie {
    pub fn random() -> Cookie {
        let mut c = [0u8; COOKIE_LEN];
        for b in &mut c[..COOKIE_LEN - 1] {
            *b = COOKIE_CHARS[rand::random::<u8>() as usize % COOKIE_CHARS.len()];
        }
        Cookie(c)
    }

    /// A cookie as iperf3 sends it: 36 lowercase letters or digits, then a NUL.
    pub fn parse(b: &[u8]) -> Option<Cookie> {
        let c: [u8; COOKIE_LEN] = b.try_into().ok()?;
        (looks_like_cookie(&c[..COOKIE_LEN - 1]) && c[COOKIE_LEN - 1] == 0).then_some(Cookie(c))
    }
}

impl std::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(&self.0[..COOKIE_LEN - 1]))
    }
}

/// Whether the first bytes of a connection could start an iperf3 cookie (netsweep's own
/// preambles start with capitals, so the two never collide).
pub fn looks_like_cookie(b: &[u8]) -> bool {
    b.iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// A one-byte state of the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    TestStart,
    TestRunning,
    TestEnd,
    ParamExchange,
    CreateStreams,
    ServerTerminate,
    ClientTerminate,
    ExchangeResults,
    DisplayResults,
    IperfStart,
    IperfDone,
    AccessDenied,
    ServerError,
}

impl State {
    pub fn byte(self) -> u8 {
        let v: i8 = match self {
            State::TestStart => 1,
            State::TestRunning => 2,
            State::TestEnd => 4,
            State::ParamExchange => 9,
            State::CreateStreams => 10,
            State::ServerTerminate => 11,
            State::ClientTerminate => 12,
            State::ExchangeResults => 13,
            State::DisplayResults => 14,
            State::IperfStart => 15,
            State::IperfDone => 16,
            State::AccessDenied => -1,
            State::ServerError => -2,
        };
        v as u8
    }

    pub fn from_byte(b: u8) -> Option<State> {
        Some(match b as i8 {
            1 => State::TestStart,
            2 => State::TestRunning,
            4 => State::TestEnd,
            9 => State::ParamExchange,
            10 => State::CreateStreams,
            11 => State::ServerTerminate,
            12 => State::ClientTerminate,
            13 => State::ExchangeResults,
            14 => State::DisplayResults,
            15 => State::IperfStart,
            16 => State::IperfDone,
            -1 => State::AccessDenied,
            -2 => State::ServerError,
            _ => return None,
        })
    }

    /// iperf3's own name for the state (`iperf_api.h`), and what it means, for messages.
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            State::TestStart => ("TEST_START", "the test starts"),
            State::TestRunning => ("TEST_RUNNING", "the test runs"),
            State::TestEnd => ("TEST_END", "the test's time is up"),
            State::ParamExchange => ("PARAM_EXCHANGE", "send the parameters"),
            State::CreateStreams => ("CREATE_STREAMS", "open the streams"),
            State::ServerTerminate => ("SERVER_TERMINATE", "it was stopped or hit an error"),
            State::ClientTerminate => ("CLIENT_TERMINATE", "it was stopped or hit an error"),
            State::ExchangeResults => ("EXCHANGE_RESULTS", "send the results"),
            State::DisplayResults => ("DISPLAY_RESULTS", "the results are exchanged"),
            State::IperfStart => ("IPERF_START", "starting"),
            State::IperfDone => ("IPERF_DONE", "done"),
            State::AccessDenied => ("ACCESS_DENIED", "busy with another test"),
            State::ServerError => ("SERVER_ERROR", "an error, with its code"),
        }
    }

    /// What a peer that sent this state out of turn did, in words: "ended the test
    /// (SERVER_TERMINATE: it was stopped or hit an error)" or "said CREATE_STREAMS (open the
    /// streams)".
    pub fn as_peer_act(self) -> String {
        let (name, meaning) = self.words();
        match self {
            State::ServerTerminate | State::ClientTerminate => {
                format!("ended the test ({name}: {meaning})")
            }
            _ => format!("said {name} ({meaning})"),
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.words().0)
    }
}

/// A JSON document behind its 4-byte big-endian length.
pub fn encode_json(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// Why a length-prefixed document was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsonError {
    #[error("an empty JSON document")]
    Empty,
    #[error("a JSON document of {len} bytes, more than the {cap} accepted")]
    TooLarge { len: u32, cap: u32 },
    #[error("malformed JSON: {0}")]
    Malformed(String),
    #[error("JSON that is not an object")]
    NotObject,
}

/// Checks a document's length against `cap` before anything is read or allocated.
pub fn check_json_length(prefix: [u8; 4], cap: u32) -> Result<usize, JsonError> {
    let len = u32::from_be_bytes(prefix);
    if len == 0 {
        return Err(JsonError::Empty);
    }
    if len > cap {
        return Err(JsonError::TooLarge { len, cap });
    }
    Ok(len as usize)
}

/// Parses a document's body; it must be an object.
pub fn parse_json(body: &[u8]) -> Result<Map<String, Value>, JsonError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(JsonError::NotObject),
        Err(e) => Err(JsonError::Malformed(crate::inputs::peer_text(
            &e.to_string(),
        ))),
    }
}

/// A number as iperf3 writes it; u64::MAX (or its float) stands for -1.
fn int(m: &Map<String, Value>, key: &str) -> Option<i64> {
    let v = m.get(key)?;
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    if let Some(u) = v.as_u64() {
        return Some(if u >= 1 << 63 { -1 } else { u as i64 });
    }
    let f = v.as_f64().filter(|f| f.is_finite())?;
    Some(if f >= 9.2e18 { -1 } else { f as i64 })
}

fn float(m: &Map<String, Value>, key: &str) -> Option<f64> {
    m.get(key)?.as_f64().filter(|f| f.is_finite())
}

fn flag(m: &Map<String, Value>, key: &str) -> bool {
    match m.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(v) => v.as_f64().is_some_and(|f| f != 0.0),
        None => false,
    }
}

fn text(m: &Map<String, Value>, key: &str) -> Option<String> {
    m.get(key)?.as_str().map(crate::inputs::peer_text)
}

pub mod code;
pub use code::error_text;
mod params;
pub use params::{Params, Refusal};

/// iperf3's id of the stream at `index` in the order the client opens them: 1, 3, 4, 5, ...
/// (iperf3 skips 2 and keeps doing so for compatibility).
pub fn stream_id(index: usize) -> i64 {
    if index == 0 { 1 } else { index as i64 + 2 }
}

/// Where the stream with iperf3 id `id` is in the opening order.
pub fn stream_index(id: i64) -> Option<usize> {
    match id {
        1 => Some(0),
        i if i >= 3 => usize::try_from(i - 2).ok(),
        _ => None,
    }
}

/// One stream's figures in a results document.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResult {
    pub id: i64,
    /// Sender: bytes sent after the omitted period; receiver: bytes received after it.
    pub bytes: u64,
    /// Sender's TCP retransmits, when it has them.
    pub retransmits: Option<u64>,
    /// Receiver's RFC 1889 jitter, seconds.
    pub jitter_s: f64,
    /// Receiver: datagrams missing from the sequence; sender: 0.
    pub errors: i64,
    pub omitted_errors: Option<i64>,
    /// Sender: datagrams sent; receiver: the highest sequence number seen.
    pub packets: i64,
    pub omitted_packets: Option<i64>,
    /// Seconds from the stream's start (after the omitted period) to its end, by the reporting
    /// end's clock; missing from servers older than 3.2.
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
}

impl StreamResult {
    /// The reporting end's measured seconds, when it told them.
    pub fn seconds(&self) -> Option<f64> {
        let s = self.end_time? - self.start_time.unwrap_or(0.0);
        (s.is_finite() && s > 0.0).then_some(s)
    }

    /// Datagrams after the omitted period.
    pub fn measured_packets(&self) -> i64 {
        self.packets
            .saturating_sub(self.omitted_packets.unwrap_or(0).max(0))
    }

    /// Datagrams lost after the omitted period (`errors` counts from the start).
    pub fn measured_errors(&self) -> i64 {
        self.errors
            .saturating_sub(self.omitted_errors.unwrap_or(0).max(0))
    }
}

/// A results document (both directions send one after `EXCHANGE_RESULTS`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    pub cpu_total: f64,
    pub cpu_user: f64,
    pub cpu_system: f64,
    /// 1 when the sender's figures include TCP retransmits, 0 when not, -1 from a receiver.
    pub sender_has_retransmits: i64,
    pub congestion_used: Option<String>,
    pub streams: Vec<StreamResult>,
    /// The peer's version, when its output (asked for with `get_server_output`) tells it.
    pub version: Option<String>,
    /// What a netsweep server speaking iperf3's protocol says it is (`SERVER_SOFTWARE`:
    /// "netsweep 0.1.0"). iperf3 sends no such key, and ignores it.
    pub server_software: Option<String>,
    /// Whether a netsweep server's receivers dropped the data without copying it
    /// (`SKIPPED_RX_COPY`); iperf3 does not say.
    pub skipped_rx_copy: Option<bool>,
    /// The server's own output, when asked for (`server_output_text` or `_json`).
    pub server_output: Option<crate::traffic::result::ServerOutput>,
}

impl Results {
    pub fn to_json(&self) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                let mut o = json!({
                    "id": s.id,
                    "bytes": s.bytes,
                    "retransmits": s.retransmits.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX)),
                    "jitter": s.jitter_s,
                    "errors": s.errors,
                    "packets": s.packets,
                    "start_time": s.start_time.unwrap_or(0.0),
                    "end_time": s.end_time.unwrap_or(0.0),
                });
                if let (Some(e), Some(p), Some(m)) =
                    (s.omitted_errors, s.omitted_packets, o.as_object_mut())
                {
                    m.insert("omitted_errors".into(), json!(e));
                    m.insert("omitted_packets".into(), json!(p));
                }
                o
            })
            .collect();
        let mut doc = json!({
            "cpu_util_total": self.cpu_total,
            "cpu_util_user": self.cpu_user,
            "cpu_util_system": self.cpu_system,
            "sender_has_retransmits": self.sender_has_retransmits,
            "streams": streams,
        });
        if let (Some(cc), Some(m)) = (&self.congestion_used, doc.as_object_mut()) {
            m.insert("congestion_used".into(), json!(cc));
        }
        doc
    }

    /// Reads a peer's results; the fields iperf3 itself requires must be there.
    pub fn from_json(m: &Map<String, Value>) -> Result<Results, String> {
        let need = |key: &str| float(m, key).ok_or_else(|| format!("results without \"{key}\""));
        let cpu_total = need("cpu_util_total")?;
        let cpu_user = need("cpu_util_user")?;
        let cpu_system = need("cpu_util_system")?;
        let sender_has_retransmits =
            int(m, "sender_has_retransmits").ok_or("results without \"sender_has_retransmits\"")?;
        let list = m
            .get("streams")
            .and_then(Value::as_array)
            .ok_or("results without a \"streams\" list")?;
        if list.len() > 2 * usize::from(MAX_STREAMS) {
            return Err(format!("results for {} streams", list.len()));
        }
        let mut streams = Vec::with_capacity(list.len());
        for s in list {
            let s = s
                .as_object()
                .ok_or("a stream result that is not an object")?;
            let need =
                |key: &str| int(s, key).ok_or_else(|| format!("a stream result without \"{key}\""));
            let id = need("id")?;
            let bytes = u64::try_from(need("bytes")?).map_err(|_| "a negative byte count")?;
            streams.push(StreamResult {
                id,
                bytes,
                retransmits: u64::try_from(need("retransmits")?).ok(),
                jitter_s: float(s, "jitter").ok_or("a stream result without \"jitter\"")?,
                errors: need("errors")?,
                omitted_errors: int(s, "omitted_errors"),
                packets: need("packets")?,
                omitted_packets: int(s, "omitted_packets"),
                start_time: float(s, "start_time"),
                end_time: float(s, "end_time"),
            });
        }
        Ok(Results {
            cpu_total,
            cpu_user,
            cpu_system,
            sender_has_retransmits,
            congestion_used: text(m, "congestion_used"),
            streams,
            version: peer_version(m),
            server_software: text(m, SERVER_SOFTWARE),
            skipped_rx_copy: m.get(SKIPPED_RX_COPY).and_then(Value::as_bool),
            server_output: server_output(m),
        })
    }

    /// The result of the stream with iperf3 id `id`.
    pub fn stream(&self, id: i64) -> Option<&StreamResult> {
        self.streams.iter().find(|s| s.id == id)
    }
}

/// A server's own output in a results document: its JSON document (servers run with -J),
/// else its text with its lines kept and everything else a terminal would act on escaped.
fn server_output(m: &Map<String, Value>) -> Option<crate::traffic::result::ServerOutput> {
    use crate::traffic::result::ServerOutput;
    match (m.get("server_output_json"), m.get("server_output_text")) {
        (Some(j @ Value::Object(_)), _) => Some(ServerOutput::Json(j.clone())),
        (_, Some(Value::String(t))) => Some(ServerOutput::Text(crate::inputs::peer_lines(t))),
        _ => None,
    }
}

/// The key of a netsweep server's own name and version in the results it sends.
pub const SERVER_SOFTWARE: &str = "netsweep_server";

/// The key under which a netsweep server says, in the results it sends, whether its receivers
/// dropped the data without copying it (`--skip-rx-copy`), so its client can say which receive
/// mode ran. Sent only when the server received; iperf3 ignores the key.
pub const SKIPPED_RX_COPY: &str = "netsweep_skipped_rx_copy";

/// How netsweep names itself to an iperf3 peer ("netsweep 0.1.0"): the client's
/// `client_version`, the server's `SERVER_SOFTWARE`.
pub fn own_software() -> String {
    format!("netsweep {}", env!("CARGO_PKG_VERSION"))
}

/// The version in a server's output: `server_output_json.start.version` ("iperf 3.12"), or
/// "iperf 3.x" in its text output (servers started with -V print it).
fn peer_version(m: &Map<String, Value>) -> Option<String> {
    let from_json = m
        .get("server_output_json")
        .and_then(|j| j.get("start"))
        .and_then(|s| s.get("version"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let from_text = || {
        let t = m.get("server_output_text")?.as_str()?;
        let at = t.find("iperf 3.")?;
        let word: String = t[at + 6..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-' || *c == '+')
            .take(16)
            .collect();
        Some(format!("iperf {word}"))
    };
    from_json
        .or_else(from_text)
        .map(|v| crate::inputs::peer_text(v.trim_start_matches("iperf ")))
}

/// A SERVER_ERROR message: the state byte, then the code and errno as big-endian int32.
pub fn server_error(code: i32, errno: i32) -> [u8; 9] {
    let mut m = [0u8; 9];
    m[0] = State::ServerError.byte();
    m[1..5].copy_from_slice(&code.to_be_bytes());
    m[5..].copy_from_slice(&errno.to_be_bytes());
    m
}

#[cfg(test)]
mod tests;
