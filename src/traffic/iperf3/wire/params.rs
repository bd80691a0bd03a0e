//! The parameters an iperf3 client sends after the cookie (`Params`): read and written under
//! iperf3's keys, with what iperf3's own server refuses refused the same way (`Refusal`).

use super::{
    MAX_OMIT_S, MAX_STREAMS, MAX_TCP_BLOCK, MAX_TIME_S, MAX_UDP_BLOCK, MAX_WINDOW_BYTES, code,
    flag, int, text,
};
use serde_json::{Map, Value, json};

/// A test's parameters, as the client sends them after `PARAM_EXCHANGE`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    pub udp: bool,
    pub omit_s: u64,
    pub time_s: u64,
    /// `-n` / `-k`: bytes or blocks to send instead of a time (0 = by time).
    pub bytes: u64,
    pub blocks: u64,
    pub mss: Option<u32>,
    pub nodelay: bool,
    pub parallel: u16,
    pub reverse: bool,
    pub bidirectional: bool,
    pub window: Option<u64>,
    pub len: Option<u32>,
    /// Per stream, bit/s (0 = unlimited).
    pub bandwidth_bps: u64,
    pub congestion: Option<String>,
    pub get_server_output: bool,
    pub udp_counters_64bit: bool,
    pub client_version: Option<String>,
    /// The RSA-encrypted credentials, base64 (`auth::encode_token`), when the client logs in.
    pub authtoken: Option<String>,
    /// `-S`/`--tos`/`--dscp`: the type-of-service byte of the data sockets (0: unset).
    pub tos: u8,
    /// `--fq-rate`: SO_MAX_PACING_RATE of every TCP data socket, bit/s per stream (0: none).
    pub fqrate_bps: u64,
    /// `--dont-fragment`: UDP datagrams with Don't Fragment set.
    pub dont_fragment: bool,
    /// `-m`/`--mptcp`: the client's data connections are MPTCP.
    pub mptcp: bool,
    /// `-A n,m`: the CPU the server pins itself to for this test (`server_affinity`).
    pub server_affinity: Option<u16>,
    /// `--skip-rx-copy`: receivers drop the data with MSG_TRUNC instead of copying it.
    pub skip_rx_copy: bool,
    /// `--repeating-payload`: senders send "0123456789..." (iperf3's
    /// `fill_with_repeating_pattern`).
    pub repeating_payload: bool,
    /// `-Z`: senders hand the kernel pages with sendfile(2) instead of writing the block.
    pub zerocopy: bool,
    /// `-L`: the IPv6 flow label of the client's data connections (set by the client on its
    /// own sockets; iperf3's server only checks it).
    pub flowlabel: Option<u32>,
    /// `-T` and `--extra-data`: strings the client's document carries, which iperf3's server
    /// puts in its own `-J` document too.
    pub title: Option<String>,
    pub extra_data: Option<String>,
    /// iperf3 options the client asked for that a netsweep server does not implement, by
    /// their command-line names (`--fq-rate`, `-S/--tos/--dscp`, ...): such a test is refused
    /// with `code::UNIMPLEMENTED` and the server's log names them, never run without them.
    pub unimplemented: Vec<&'static str>,
}

/// Parameters an iperf3 client sends for options a netsweep server does not implement, with
/// the options' command-line names; a key counts when it is true or a non-zero number.
/// (`gso`/`gro` and `pacing_timer` change how a sender works, not what is measured: accepted;
/// `nodelay`, `repeating_payload`, `zerocopy`, `skip_rx_copy`, `server_affinity`, `flowlabel`,
/// `title` and `extra_data` are honoured.)
const UNIMPLEMENTED_OPTIONS: &[(&str, &str)] = &[("burst", "-b RATE/BURST")];

/// The options of `UNIMPLEMENTED_OPTIONS` a parameter document asks for.
fn unimplemented_options(m: &Map<String, Value>) -> Vec<&'static str> {
    UNIMPLEMENTED_OPTIONS
        .iter()
        .filter(|(key, _)| match m.get(*key) {
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64().is_some_and(|v| v != 0.0),
            Some(Value::String(s)) => !s.is_empty(),
            _ => false,
        })
        .map(|(_, name)| *name)
        .collect()
}

/// Why a client's parameters were refused: the iperf3 error code to send back, and words.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub code: i32,
    pub reason: String,
}

impl Refusal {
    pub fn new(code: i32, reason: impl Into<String>) -> Refusal {
        Refusal {
            code,
            reason: reason.into(),
        }
    }
}

impl Params {
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(if self.udp { "udp" } else { "tcp" }.into(), json!(true));
        m.insert("omit".into(), json!(self.omit_s));
        m.insert("time".into(), json!(self.time_s));
        m.insert("num".into(), json!(self.bytes));
        m.insert("blockcount".into(), json!(self.blocks));
        if let Some(mss) = self.mss {
            m.insert("MSS".into(), json!(mss));
        }
        if self.nodelay {
            m.insert("nodelay".into(), json!(true));
        }
        if self.repeating_payload {
            // iperf3 sends it as the number 1.
            m.insert("repeating_payload".into(), json!(1));
        }
        m.insert("parallel".into(), json!(self.parallel));
        if self.reverse {
            m.insert("reverse".into(), json!(true));
        }
        if self.bidirectional {
            m.insert("bidirectional".into(), json!(true));
        }
        if let Some(w) = self.window {
            m.insert("window".into(), json!(w));
        }
        if let Some(l) = self.len {
            m.insert("len".into(), json!(l));
        }
        if self.bandwidth_bps > 0 {
            m.insert("bandwidth".into(), json!(self.bandwidth_bps));
        }
        if let Some(cc) = &self.congestion {
            m.insert("congestion".into(), json!(cc));
        }
        if self.get_server_output {
            m.insert("get_server_output".into(), json!(1));
        }
        if self.udp_counters_64bit {
            m.insert("udp_counters_64bit".into(), json!(1));
        }
        if let Some(v) = &self.client_version {
            m.insert("client_version".into(), json!(v));
        }
        if let Some(t) = &self.authtoken {
            m.insert("authtoken".into(), json!(t));
        }
        if self.tos != 0 {
            m.insert("TOS".into(), json!(self.tos));
        }
        if self.fqrate_bps > 0 {
            m.insert("fqrate".into(), json!(self.fqrate_bps));
        }
        if self.dont_fragment {
            m.insert("dont_fragment".into(), json!(1));
        }
        if self.mptcp {
            m.insert("mptcp".into(), json!(true));
        }
        if let Some(cpu) = self.server_affinity {
            m.insert("server_affinity".into(), json!(cpu));
        }
        if self.skip_rx_copy {
            // iperf3 sends it as a number (iperf_api.c, send_parameters).
            m.insert("skip_rx_copy".into(), json!(1));
        }
        if self.zerocopy {
            // A number too.
            m.insert("zerocopy".into(), json!(1));
        }
        if let Some(label) = self.flowlabel {
            m.insert("flowlabel".into(), json!(label));
        }
        for (key, value) in [("title", &self.title), ("extra_data", &self.extra_data)] {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        Value::Object(m)
    }

    /// Reads a client's parameters, refusing what iperf3's own server refuses (with its code).
    pub fn from_json(m: &Map<String, Value>) -> Result<Params, Refusal> {
        let bounded = |key: &str, max: u64, code: i32, what: &str| -> Result<u64, Refusal> {
            match int(m, key) {
                None => Ok(0),
                Some(v) if v >= 0 && v as u64 <= max => Ok(v as u64),
                Some(v) => Err(Refusal::new(code, format!("{what} {v} out of range"))),
            }
        };
        let parallel = match int(m, "parallel") {
            None => 1,
            Some(p) if (1..=i64::from(MAX_STREAMS)).contains(&p) => p as u16,
            Some(p) => {
                return Err(Refusal::new(
                    code::NUM_STREAMS,
                    format!("{p} streams (iperf3 allows 1 to {MAX_STREAMS})"),
                ));
            }
        };
        let udp = flag(m, "udp");
        if !udp && !flag(m, "tcp") {
            return Err(Refusal::new(
                code::UNIMPLEMENTED,
                if flag(m, "sctp") {
                    "the client asked for --sctp, which this netsweep server does not implement \
                     (it serves TCP and UDP)"
                } else {
                    "neither TCP nor UDP asked for (SCTP is not served)"
                },
            ));
        }
        let opt_u32 =
            |key: &str, max: u64, code: i32, what: &str| -> Result<Option<u32>, Refusal> {
                match int(m, key) {
                    None | Some(0) => Ok(None),
                    Some(v) if v > 0 && v as u64 <= max => Ok(Some(v as u32)),
                    Some(v) => Err(Refusal::new(code, format!("{what} {v} out of range"))),
                }
            };
        let block_max = if udp { MAX_UDP_BLOCK } else { MAX_TCP_BLOCK };
        let block_code = if udp {
            code::UDP_BLOCK_SIZE
        } else {
            code::BLOCK_SIZE
        };
        Ok(Params {
            udp,
            omit_s: bounded("omit", MAX_OMIT_S, code::OMIT, "omit")?,
            time_s: bounded("time", MAX_TIME_S, code::DURATION, "duration")?,
            bytes: bounded("num", u64::MAX >> 1, code::RECV_PARAMS, "byte count")?,
            blocks: bounded(
                "blockcount",
                u64::MAX >> 1,
                code::RECV_PARAMS,
                "block count",
            )?,
            mss: opt_u32("MSS", 32 * 1024 - 1, code::MSS, "MSS")?,
            nodelay: flag(m, "nodelay"),
            parallel,
            reverse: flag(m, "reverse"),
            bidirectional: flag(m, "bidirectional"),
            window: opt_u32("window", MAX_WINDOW_BYTES, code::BUF_SIZE, "window")?.map(u64::from),
            len: opt_u32("len", u64::from(block_max), block_code, "block size")?,
            bandwidth_bps: bounded("bandwidth", u64::MAX >> 1, code::RECV_PARAMS, "bitrate")?,
            congestion: text(m, "congestion"),
            get_server_output: flag(m, "get_server_output"),
            udp_counters_64bit: flag(m, "udp_counters_64bit"),
            client_version: text(m, "client_version"),
            // Kept as sent: base64 is ASCII, and `auth::decode_token` checks it.
            authtoken: m
                .get("authtoken")
                .and_then(Value::as_str)
                .map(str::to_string),
            tos: bounded("TOS", 255, code::BAD_TOS, "TOS")? as u8,
            fqrate_bps: bounded("fqrate", u64::MAX >> 1, code::RECV_PARAMS, "fq rate")?,
            dont_fragment: flag(m, "dont_fragment"),
            mptcp: flag(m, "mptcp"),
            skip_rx_copy: flag(m, "skip_rx_copy"),
            // iperf3 sends it only when set (-1 is its "none"), as a number up to 1024.
            server_affinity: match int(m, "server_affinity") {
                None => None,
                Some(v) if v < 0 => None,
                Some(v) if v <= i64::from(crate::traffic::affinity::MAX_CPU) => Some(v as u16),
                Some(v) => {
                    return Err(Refusal::new(
                        code::AFFINITY,
                        format!("server CPU affinity {v} out of range"),
                    ));
                }
            },
            repeating_payload: flag(m, "repeating_payload"),
            zerocopy: flag(m, "zerocopy"),
            // iperf3's server refuses a label outside 1 to 0xfffff with IESETFLOW.
            flowlabel: opt_u32("flowlabel", 0xf_ffff, code::SET_FLOW, "flow label")?,
            title: text(m, "title"),
            extra_data: text(m, "extra_data"),
            unimplemented: unimplemented_options(m),
        })
    }

    /// Streams this test opens (both directions with `--bidir`).
    pub fn stream_count(&self) -> usize {
        usize::from(self.parallel) * if self.bidirectional { 2 } else { 1 }
    }
}
