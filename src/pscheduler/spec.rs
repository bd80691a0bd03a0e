//! pScheduler's `throughput` test specification (schemas 1 to 7 of
//! pscheduler-test-throughput's `validate.py`) as netsweep reads it: which fields netsweep
//! honours, which it refuses and why (`can-run`), how long a run takes (`duration`), and the
//! netsweep `TestSpec` a run executes. Pure; called by `pscheduler::method` and `run`.

use crate::pscheduler::config::ToolConfig;
use crate::pscheduler::iso8601;
use crate::traffic::spec::{Direction, Refusal, TestSpec};
use crate::units::BitRate;
use serde_json::{Map, Value};
use std::time::Duration;

/// Highest throughput spec schema understood (pScheduler's `MAX_SCHEMA`).
pub const MAX_SCHEMA: u64 = 7;
/// Test length when the spec names none (the iperf3 tool's `DEFAULT_DURATION`).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Round-trip time assumed when the spec has no `link-rtt` (the iperf3 tool's).
pub const DEFAULT_LINK_RTT: Duration = Duration::from_millis(200);
/// How long the client gives the server to come up after the scheduled start.
pub const WAIT_FOR_SERVER: Duration = Duration::from_secs(3);
/// Time left at the end for the server participant to wind down.
pub const SERVER_SHUTDOWN: Duration = Duration::from_secs(2);
/// UDP rate when the spec has no `bandwidth`: iperf3's 1 Mbit/s, which a mesh configured for
/// the iperf3 tool expects, and which cannot flood a real path.
pub const UDP_DEFAULT_BANDWIDTH: u64 = 1_000_000;

/// The spec fields netsweep runs as asked: those pScheduler's iperf3 tool supports; everything
/// else is refused by name in `can-run`, `no-delay` with any value as the iperf3 tool refuses
/// it.
const SUPPORTED: &[&str] = &[
    "schema",
    "source",
    "source-node",
    "dest",
    "dest-node",
    "duration",
    "interval",
    "link-rtt",
    "parallel",
    "udp",
    "bandwidth",
    "window-size",
    "mss",
    "buffer-length",
    "ip-version",
    "local-address",
    "omit",
    "congestion",
    "zero-copy",
    "reverse",
    "single-ended",
    "single-ended-port",
    "loopback",
    "ip-tos",
    "fq-rate",
    "client-cpu-affinity",
    "server-cpu-affinity",
    "flow-label",
];

/// Why a spec field is refused, for the fields pScheduler knows but netsweep does not honour.
fn refusal_of(key: &str) -> String {
    if key == "no-delay" {
        return "the no-delay option is refused with any value, as pScheduler's iperf3 tool \
                refuses it (not among its supported options): netsweep runs what that tool \
                runs, so a task behaves the same with either"
            .into();
    }
    let why = match key {
        "bandwidth-strict" | "burst-size" => "its pacer has no burst or strictness setting",
        "reverse-connections" => "the client always opens the connections",
        _ => "the option is unknown to it",
    };
    format!("netsweep does not support the {key} option: {why}")
}

/// A throughput spec, read once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Throughput {
    pub dest: String,
    pub source: Option<String>,
    pub duration: Option<Duration>,
    pub omit: Duration,
    pub interval: Option<Duration>,
    pub link_rtt: Option<Duration>,
    pub parallel: Option<u64>,
    pub udp: bool,
    /// bit/s over all streams.
    pub bandwidth: Option<u64>,
    pub window_size: Option<u64>,
    pub mss: Option<u64>,
    pub buffer_length: Option<u64>,
    pub ip_version: Option<u8>,
    pub local_address: Option<String>,
    pub congestion: Option<String>,
    pub zero_copy: Option<bool>,
    pub reverse: bool,
    pub single_ended: bool,
    pub single_ended_port: Option<u16>,
    pub loopback: bool,
    /// The type-of-service byte of the data packets (IP_TOS / IPV6_TCLASS), both ends.
    pub ip_tos: Option<u8>,
    /// SO_MAX_PACING_RATE of every TCP stream, bit/s per stream.
    pub fq_rate: Option<u64>,
    /// The CPU each end pins its data threads to (the iperf3 tool's `-A` on each side).
    pub client_cpu: Option<u64>,
    pub server_cpu: Option<u64>,
    /// The IPv6 flow label of the client's data packets (the iperf3 tool's `-L`).
    pub flow_label: Option<u32>,
}

/// Reads fields of one JSON object, collecting every problem instead of stopping at the first.
struct Reader<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<String>,
}

impl Reader<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn string(&mut self, key: &str) -> Option<String> {
        let v = self.get(key)?;
        match v.as_str() {
            Some(s) if !s.is_empty() => Some(s.to_string()),
            _ => {
                self.problems
                    .push(format!("{key} must be a non-empty string, got {v}"));
                None
            }
        }
    }

    fn boolean(&mut self, key: &str) -> Option<bool> {
        let v = self.get(key)?;
        let b = v.as_bool();
        if b.is_none() {
            self.problems
                .push(format!("{key} must be true or false, got {v}"));
        }
        b
    }

    /// An integer of at least `min` (pScheduler's Cardinal is `min` 1).
    fn integer(&mut self, key: &str, min: u64) -> Option<u64> {
        let v = self.get(key)?;
        match v.as_u64() {
            Some(n) if n >= min => Some(n),
            _ => {
                self.problems.push(format!(
                    "{key} must be an integer of at least {min}, got {v}"
                ));
                None
            }
        }
    }

    fn duration(&mut self, key: &str) -> Option<Duration> {
        let s = self.string(key)?;
        match iso8601::parse_duration(&s) {
            Ok(d) => Some(d),
            Err(e) => {
                self.problems.push(format!("{key}: {e}"));
                None
            }
        }
    }
}

impl Throughput {
    /// Reads a spec; every unsupported field and malformed value is a reason in the error.
    pub fn from_json(spec: &Value) -> Result<Throughput, Vec<String>> {
        let Some(map) = spec.as_object() else {
            return Err(vec!["the test specification is not a JSON object".into()]);
        };
        let mut r = Reader {
            map,
            problems: Vec::new(),
        };
        for key in map.keys() {
            if !SUPPORTED.contains(&key.as_str()) {
                r.problems.push(refusal_of(key));
            }
        }
        if let Some(schema) = r.integer("schema", 1)
            && schema > MAX_SCHEMA
        {
            r.problems.push(format!(
                "throughput spec schema {schema} is newer than the {MAX_SCHEMA} netsweep knows"
            ));
        }
        let ip_tos = r.integer("ip-tos", 0).and_then(|t| {
            u8::try_from(t).ok().or_else(|| {
                r.problems
                    .push(format!("ip-tos {t} is out of range (0 to 255)"));
                None
            })
        });
        if map.contains_key("bandwidth") && map.contains_key("fq-rate") {
            // As pScheduler's iperf3 tool, which refuses the pair by their presence.
            r.problems.push(
                "bandwidth and fq-rate cannot be set together: bandwidth paces netsweep's \
                 writes, fq-rate the kernel's fq qdisc; choose one"
                    .into(),
            );
        }
        let ip_version = r.integer("ip-version", 4).and_then(|v| match v {
            4 | 6 => Some(v as u8),
            _ => {
                r.problems
                    .push(format!("ip-version must be 4 or 6, got {v}"));
                None
            }
        });
        let flow_label = r.integer("flow-label", 1).and_then(|l| {
            u32::try_from(l)
                .ok()
                .filter(|l| *l <= 0xf_ffff)
                .or_else(|| {
                    r.problems.push(format!(
                        "flow-label {l} is out of range (an IPv6 flow label is 1 to 1048575)"
                    ));
                    None
                })
        });
        let single_ended_port = r.integer("single-ended-port", 1).and_then(|p| {
            u16::try_from(p).ok().or_else(|| {
                r.problems
                    .push(format!("single-ended-port {p} is not a port"));
                None
            })
        });
        let t = Throughput {
            dest: r.string("dest").unwrap_or_default(),
            source: r.string("source"),
            duration: r.duration("duration"),
            omit: r.duration("omit").unwrap_or_default(),
            interval: r.duration("interval"),
            link_rtt: r.duration("link-rtt"),
            parallel: r.integer("parallel", 1),
            udp: r.boolean("udp").unwrap_or(false),
            bandwidth: r.integer("bandwidth", 1),
            window_size: r.integer("window-size", 1),
            mss: r.integer("mss", 1),
            buffer_length: r.integer("buffer-length", 1),
            ip_version,
            local_address: r.string("local-address"),
            congestion: r.string("congestion"),
            zero_copy: r.boolean("zero-copy"),
            reverse: r.boolean("reverse").unwrap_or(false),
            single_ended: r.boolean("single-ended").unwrap_or(false),
            single_ended_port,
            loopback: r.boolean("loopback").unwrap_or(false),
            ip_tos: ip_tos.filter(|t| *t != 0),
            fq_rate: r.integer("fq-rate", 0).filter(|f| *f > 0),
            client_cpu: r.integer("client-cpu-affinity", 0),
            server_cpu: r.integer("server-cpu-affinity", 0),
            flow_label,
        };
        if t.dest.is_empty() && !r.problems.iter().any(|p| p.starts_with("dest")) {
            r.problems.push("dest is missing".into());
        }
        // A dest written as an address says its family: a spec that asks the other, or a flow
        // label of IPv4, cannot run, and can-run says so (a trial's can-run accepted both and
        // the runs failed), so that pScheduler picks another tool.
        let literal = t
            .dest
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>();
        if let Ok(ip) = literal {
            let family = if ip.is_ipv4() { 4 } else { 6 };
            if t.ip_version.is_some_and(|v| v != family) {
                r.problems.push(format!(
                    "ip-version {} and dest {} (an IPv{family} address) disagree",
                    t.ip_version.unwrap_or(0),
                    t.dest
                ));
            }
            if t.flow_label.is_some() && ip.is_ipv4() {
                r.problems.push(format!(
                    "flow-label: dest {} is IPv4, and flow labels are IPv6's",
                    t.dest
                ));
            }
        }
        if r.problems.is_empty() {
            Ok(t)
        } else {
            Err(r.problems)
        }
    }

    /// The netsweep test this spec asks for, checked.
    pub fn test_spec(&self) -> Result<TestSpec, String> {
        let duration = self.duration.unwrap_or(DEFAULT_DURATION);
        let mut t = if self.udp {
            TestSpec::udp(duration)
        } else {
            TestSpec::tcp(duration)
        };
        t.omit = self.omit;
        if let Some(i) = self.interval {
            t.interval = i;
        }
        if let Some(p) = self.parallel {
            t.streams = u16::try_from(p).map_err(|_| format!("parallel {p} is too many"))?;
        }
        if self.reverse {
            t.direction = Direction::Reverse;
        }
        t.window_bytes = self.window_size;
        if let Some(m) = self.mss {
            t.mss_bytes = Some(u32::try_from(m).map_err(|_| format!("mss {m} is too large"))?);
        }
        t.congestion = self.congestion.clone();
        if let Some(l) = self.buffer_length {
            t.length_bytes =
                u32::try_from(l).map_err(|_| format!("buffer-length {l} is too large"))?;
            t.calibration = Duration::ZERO;
        }
        match (self.bandwidth, self.udp) {
            (Some(b), _) => t.bitrate_bps = b as f64,
            (None, true) => t.bitrate_bps = UDP_DEFAULT_BANDWIDTH as f64,
            (None, false) => {}
        }
        // As iperf3's `-l` and `-Z` (and the command line's).
        t.zerocopy =
            crate::traffic::spec::zerocopy_asked(self.buffer_length.is_some(), self.zero_copy);
        if self.zero_copy == Some(false) {
            t.calibration = Duration::ZERO;
        }
        t.tos = self.ip_tos;
        t.fq_rate_bps = self.fq_rate;
        let cpu = |c: u64, side: &str| -> Result<crate::traffic::affinity::Cpus, String> {
            u16::try_from(c)
                .ok()
                .filter(|c| *c <= crate::traffic::affinity::MAX_CPU)
                .map(crate::traffic::affinity::Cpus::one)
                .ok_or_else(|| format!("{side}-cpu-affinity {c} is not a CPU number"))
        };
        t.affinity.client = self.client_cpu.map(|c| cpu(c, "client")).transpose()?;
        t.affinity.server = self.server_cpu.map(|c| cpu(c, "server")).transpose()?;
        t.validate().map_err(|e| e.to_string())?;
        Ok(t)
    }

    /// Connection set-up allowance: one second per 50 ms of round trip, at least one (the
    /// iperf3 tool's `setup_time`, measured in pScheduler's issue 838).
    pub fn setup_time(&self) -> Duration {
        let rtt = self.link_rtt.unwrap_or(DEFAULT_LINK_RTT);
        Duration::from_secs_f64((rtt.as_secs_f64() * 1000.0 / 50.0).max(1.0))
    }

    /// The whole time slot a run needs: set-up, waiting for the server, warm-up (send path
    /// calibration and omit), the test, and the server's wind-down.
    pub fn slot(&self) -> Duration {
        let (warmup, duration) = match self.test_spec() {
            Ok(t) => (t.warmup(), t.duration),
            Err(_) => (self.omit, self.duration.unwrap_or(DEFAULT_DURATION)),
        };
        self.setup_time() + WAIT_FOR_SERVER + warmup + duration + SERVER_SHUTDOWN
    }
}

/// `can-run`'s answer: `{"can-run": true}` or `{"can-run": false, "reasons": [...]}`.
pub fn can_run(input: &Value, config: &ToolConfig) -> Value {
    let refuse = |reasons: Vec<String>| serde_json::json!({"can-run": false, "reasons": reasons});
    match input.get("type").and_then(Value::as_str) {
        Some("throughput") => {}
        Some(_) => return refuse(vec!["Unsupported test type".into()]),
        None => return refuse(vec!["Missing test type".into()]),
    }
    let Some(spec) = input.get("spec") else {
        return refuse(vec!["Missing test specification".into()]);
    };
    let t = match Throughput::from_json(spec) {
        Ok(t) => t,
        Err(reasons) => return refuse(reasons),
    };
    let test = match t.test_spec() {
        Ok(test) => test,
        Err(e) => return refuse(vec![format!("netsweep cannot run this test: {e}")]),
    };
    // The server participant applies these limits; refusing here lets pScheduler pick another
    // tool instead of failing the run.
    if !t.single_ended
        && let Some(reason) = config.limits().refusal(&test)
    {
        return refuse(vec![format!(
            "{} (set in {})",
            limit_words(&reason),
            config.source.as_deref().unwrap_or("the defaults")
        )]);
    }
    serde_json::json!({"can-run": true})
}

/// A limit of this host's tool configuration in the spec's and the configuration's words
/// (`parallel`, `bandwidth`; `max_streams`, `max_rate`), not the command line's.
fn limit_words(r: &Refusal) -> String {
    match r {
        Refusal::Duration { asked, max } => format!(
            "a test of {:.1} s (omit and duration) exceeds this host's max_duration of {:.1} s",
            asked.as_secs_f64(),
            max.as_secs_f64()
        ),
        Refusal::Streams { asked, max } => {
            format!("parallel {asked} exceeds this host's max_streams of {max}")
        }
        Refusal::Intervals {
            flows,
            intervals,
            max,
        } => format!(
            "{flows} streams x {intervals} intervals make {} interval reports, more than the \
             {max} this host keeps: give a longer interval",
            intervals.saturating_mul(*flows as u64)
        ),
        // The spec's bandwidth is the test's total (`Throughput::test_spec`).
        Refusal::Rate {
            asked_bps, max_bps, ..
        } => format!(
            "bandwidth {} exceeds this host's max_rate of {}: give bandwidth {} or less",
            if *asked_bps == 0.0 {
                "unlimited (none given)".to_string()
            } else {
                format!("{asked_bps:.0}")
            },
            BitRate(*max_bps),
            max_bps.floor()
        ),
        Refusal::BitrateLimit(why) => why.clone(),
    }
}

/// `duration`'s answer, `{"duration": "PT17S"}`, from the test's input (`{"spec": ...}`).
pub fn duration(input: &Value) -> Result<Value, String> {
    let spec = input.get("spec").ok_or("the duration input has no spec")?;
    let t = Throughput::from_json(spec).map_err(|r| r.join("; "))?;
    Ok(serde_json::json!({"duration": iso8601::format_duration_ceil(t.slot())}))
}

#[cfg(test)]
mod tests;
