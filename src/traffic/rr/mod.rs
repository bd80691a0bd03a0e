//! Request/response tests (`--test rr`, `--test crr`, `-u --test rr`): netperf's TCP_RR,
//! TCP_CRR and UDP_RR between netsweep's own client and server. A transaction is one request
//! of `request_bytes` answered by one response of `response_bytes`; each of `concurrency`
//! connections keeps one transaction outstanding; crr opens a new TCP connection for every
//! transaction (connect, request, response, close) and so measures connections per second.
//!
//! This room owns the test's description (`RrSpec`, sent in `ClientMsg::Transactions` and
//! checked by the server against `ServerLimits` and the caps here), the loops of both ends
//! (`engine`, beside the throughput engine and sharing its sockets' setup), the latency record
//! (`hdr`: every transaction, bounded relative error), the merged result (`result`), its text
//! (`output`) and the client's session (`client`). The server's session is
//! `traffic::server::rr`.

use crate::traffic::spec::{Direction, Protocol, ServerLimits, TestSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub mod client;
pub mod engine;
pub mod hdr;
pub mod output;
pub mod result;

/// Which request/response test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RrMode {
    /// Transactions on long-lived connections (netperf's TCP_RR / UDP_RR).
    Rr,
    /// A new TCP connection per transaction (netperf's TCP_CRR).
    Crr,
}

impl RrMode {
    pub fn name(self) -> &'static str {
        match self {
            RrMode::Rr => "rr",
            RrMode::Crr => "crr",
        }
    }
}

impl std::str::FromStr for RrMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rr" => Ok(RrMode::Rr),
            "crr" => Ok(RrMode::Crr),
            other => Err(format!(
                "--test {other:?}: expected rr (request/response on open connections) or crr \
                 (a new TCP connection per transaction)"
            )),
        }
    }
}

/// Largest request or response a server accepts, bytes (TCP); buffers of this size are held
/// per connection on both ends.
pub const MAX_MESSAGE_BYTES: u32 = 1 << 20;
/// Largest UDP request or response: one datagram over IPv4 or IPv6 without jumbograms.
pub const MAX_UDP_MESSAGE_BYTES: u32 = 65_507;
/// Most concurrent transactions (connections) of one test, whatever `--max-streams` says.
pub const MAX_CONCURRENCY: u16 = 1024;
/// The longest `--spin` either end accepts, microseconds: each wait keeps a CPU busy for up
/// to this long before it blocks.
pub const MAX_SPIN_US: u64 = 100_000;
/// How long the client waits for a UDP response before it counts the transaction lost and
/// sends the request again.
pub const UDP_RESPONSE_WAIT: Duration = Duration::from_millis(200);

/// One request/response test, as the client asks it of the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RrSpec {
    pub mode: RrMode,
    pub protocol: Protocol,
    /// Bytes per request (netperf's `-r REQ,`).
    pub request_bytes: u32,
    /// Bytes per response (netperf's `-r ,RESP`).
    pub response_bytes: u32,
    /// Connections, each with one transaction outstanding (`-P`).
    pub concurrency: u16,
    /// How long the test runs; with `transactions`, the most it may run.
    #[serde(with = "crate::traffic::spec::micros", rename = "duration_us")]
    pub duration: Duration,
    /// Ends the test after exactly this many transactions over all connections
    /// (`--transactions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// The CPUs each end pins its connections' threads to (`-A`/`--affinity`).
    #[serde(
        default,
        skip_serializing_if = "crate::traffic::affinity::Affinity::is_unset"
    )]
    pub affinity: crate::traffic::affinity::Affinity,
    /// rr (TCP and UDP): how long each end polls a connection without sleeping before it
    /// blocks, microseconds (`--spin`); `None` blocks at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<u64>,
}

impl RrSpec {
    /// A 1-byte request/response test on one TCP connection for `duration`.
    pub fn tcp(mode: RrMode, duration: Duration) -> RrSpec {
        RrSpec {
            mode,
            protocol: Protocol::Tcp,
            request_bytes: 1,
            response_bytes: 1,
            concurrency: 1,
            duration,
            transactions: None,
            affinity: Default::default(),
            spin_us: None,
        }
    }

    /// How long each end polls before it blocks (`--spin`).
    pub fn spin(&self) -> Option<Duration> {
        self.spin_us.filter(|&us| us > 0).map(Duration::from_micros)
    }

    /// A warning when polling ends on one host would outnumber its CPUs: `cpus` CPUs, both ends
    /// here when `same_host` (loopback). Each polling connection keeps a thread runnable at each
    /// end, and threads that wait for a CPU held by another poller add a scheduler slice to every
    /// transaction: on 2 CPUs, `-u -P 2 --spin 2ms` (four pollers) fell to 766 transactions/s
    /// with p50 4 ms where blocking carried 116,000 (docs/request-response.md).
    pub fn polling_oversubscribed(&self, same_host: bool, cpus: usize) -> Option<String> {
        self.spin()?;
        let pollers = usize::from(self.concurrency.max(1)) * if same_host { 2 } else { 1 };
        (pollers > cpus.max(1)).then(|| {
            format!(
                "--spin with {pollers} polling threads on {cpus} CPUs{}: polling pays when each \
                 poller has a CPU of its own and can cost many times the rate when they wait for \
                 each other; compare with a run without --spin",
                if same_host {
                    " (both ends on this host)"
                } else {
                    " at this end"
                }
            )
        })
    }

    /// Why this test cannot run anywhere, if it cannot.
    pub fn invalid(&self) -> Option<String> {
        let cap = match self.protocol {
            Protocol::Tcp => MAX_MESSAGE_BYTES,
            Protocol::Udp => MAX_UDP_MESSAGE_BYTES,
        };
        if self.mode == RrMode::Crr && self.protocol == Protocol::Udp {
            return Some("--test crr opens TCP connections: it has no UDP form (drop -u)".into());
        }
        if self.spin_us.is_some() && self.mode == RrMode::Crr {
            return Some(
                "--spin: a crr transaction waits mostly in connect and accept, which do not spin; \
                 use it with --test rr"
                    .into(),
            );
        }
        if self.spin_us.is_some_and(|us| us > MAX_SPIN_US) {
            return Some(format!(
                "--spin: at most {} ms per wait (it keeps a CPU busy for that long)",
                MAX_SPIN_US / 1000
            ));
        }
        if self.request_bytes == 0 || self.response_bytes == 0 {
            return Some("-r: requests and responses need at least 1 byte each".into());
        }
        if self.request_bytes > cap || self.response_bytes > cap {
            return Some(format!(
                "-r {},{}: at most {cap} bytes each over {}",
                self.request_bytes,
                self.response_bytes,
                match self.protocol {
                    Protocol::Tcp => "TCP",
                    Protocol::Udp => "UDP (one datagram)",
                }
            ));
        }
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Some(format!(
                "-P {}: 1 to {MAX_CONCURRENCY} concurrent transactions",
                self.concurrency
            ));
        }
        if self.duration.is_zero() {
            return Some("-t: the test needs a duration (or a ceiling for --transactions)".into());
        }
        if self.transactions == Some(0) {
            return Some("--transactions 0: ask for at least one".into());
        }
        None
    }

    /// Why a server under `limits` refuses this test, if it does.
    pub fn refusal(&self, limits: &ServerLimits) -> Option<String> {
        if let Some(why) = self.invalid() {
            return Some(why);
        }
        if self.duration > limits.max_duration {
            return Some(format!(
                "test of {:.1}s exceeds this server's --max-duration of {:.1}s",
                self.duration.as_secs_f64(),
                limits.max_duration.as_secs_f64()
            ));
        }
        if self.concurrency > limits.max_streams {
            return Some(format!(
                "{} concurrent transactions exceed this server's --max-streams of {}",
                self.concurrency, limits.max_streams
            ));
        }
        None
    }

    /// The test in words: "TCP rr, 1-byte requests, 1-byte responses, 1 connection, 10.0 s".
    pub fn words(&self) -> String {
        let proto = match self.protocol {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        };
        let until = match self.transactions {
            Some(n) => format!(
                "{n} transactions (at most {:.1} s)",
                self.duration.as_secs_f64()
            ),
            None => format!("{:.1} s", self.duration.as_secs_f64()),
        };
        let spin = self.spin_us.map_or(String::new(), |us| {
            format!(", polling up to {us} us per wait")
        });
        format!(
            "{proto} {}, {}-byte requests, {}-byte responses, {} concurrent{spin}, {until}",
            self.mode.name(),
            self.request_bytes,
            self.response_bytes,
            self.concurrency
        )
    }
}

/// A request/response test as a campaign's plan names it (`test = "rr"`, `request_response`,
/// `transactions`), carried in `TestSpec::rr`; the spec gives its duration, protocol and
/// connections (`streams`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RrTest {
    pub mode: RrMode,
    pub request_bytes: u32,
    pub response_bytes: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Microseconds each wait polls before it blocks (`--spin`, the plan's `spin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<u64>,
}

impl RrTest {
    /// 1-byte requests and responses, as `--test rr|crr` without `-r`.
    pub fn new(mode: RrMode) -> RrTest {
        RrTest {
            mode,
            request_bytes: 1,
            response_bytes: 1,
            transactions: None,
            spin_us: None,
        }
    }
}

/// The request/response test a spec describes (`None`: a throughput test), or why it cannot
/// run: the throughput options with no meaning here are refused by name.
pub fn spec_of(spec: &TestSpec) -> Option<Result<RrSpec, String>> {
    let rr = spec.rr?;
    let name = rr.mode.name();
    let refused = [
        (
            spec.direction != Direction::Forward,
            "reverse/bidir/direction",
        ),
        (spec.latency.is_some(), "latency/rrul"),
        (spec.count.is_some(), "a byte count (use transactions)"),
        (spec.steady.is_some(), "duration = \"auto\""),
    ];
    if let Some((_, what)) = refused.iter().find(|(set, _)| *set) {
        return Some(Err(format!(
            "test = \"{name}\": {what} does not apply to a request/response test"
        )));
    }
    let out = RrSpec {
        mode: rr.mode,
        protocol: spec.protocol,
        request_bytes: rr.request_bytes,
        response_bytes: rr.response_bytes,
        concurrency: spec.streams,
        duration: spec.duration,
        transactions: rr.transactions,
        affinity: spec.affinity,
        spin_us: rr.spin_us,
    };
    Some(match out.invalid() {
        Some(why) => Err(why),
        None => Ok(out),
    })
}

/// What the server counted of one request/response test (`ServerMsg::RrDone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerCounts {
    /// Responses sent.
    pub transactions: u64,
    /// TCP connections accepted for the test's transactions (crr: one per transaction; rr:
    /// the `concurrency` data connections).
    pub accepted_connections: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
}

impl ServerCounts {
    pub fn add(&mut self, o: &ServerCounts) {
        self.transactions += o.transactions;
        self.accepted_connections += o.accepted_connections;
        self.bytes_received += o.bytes_received;
        self.bytes_sent += o.bytes_sent;
    }
}

/// Parses netperf's `-r REQ,RESP` (`-r 100` sets both; sizes as `64`, `1K`, `1M`).
pub fn parse_sizes(v: &str) -> Result<(u32, u32), String> {
    let one = |s: &str| -> Result<u32, String> {
        let b = s
            .trim()
            .parse::<crate::units::Bytes>()
            .map_err(|e| format!("-r {v:?}: {e}"))?;
        u32::try_from(b.0).map_err(|_| format!("-r {v:?}: {s} is too large"))
    };
    match v.split_once(',') {
        Some((req, resp)) => Ok((one(req)?, one(resp)?)),
        None => one(v).map(|n| (n, n)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn polling_is_said_to_oversubscribe_only_when_pollers_outnumber_cpus() {
        let mut spec = RrSpec::tcp(RrMode::Rr, Duration::from_secs(1));
        assert_eq!(
            spec.polling_oversubscribed(true, 2),
            None,
            "no --spin, no warning"
        );
        spec.spin_us = Some(1000);
        assert_eq!(
            spec.polling_oversubscribed(true, 2),
            None,
            "two pollers, two CPUs"
        );
        spec.concurrency = 2;
        let w = spec
            .polling_oversubscribed(true, 2)
            .expect("four pollers on two CPUs");
        assert!(
            w.contains("4 polling threads on 2 CPUs (both ends on this host)"),
            "{w}"
        );
        assert_eq!(
            spec.polling_oversubscribed(false, 2),
            None,
            "two here, two CPUs"
        );
        assert!(spec.polling_oversubscribed(false, 1).is_some());
        assert_eq!(spec.polling_oversubscribed(true, 8), None);
    }

    use super::*;

    #[test]
    fn sizes_parse_as_netperf_and_the_server_caps_them() {
        assert_eq!(parse_sizes("1,1"), Ok((1, 1)));
        assert_eq!(parse_sizes("100,10000"), Ok((100, 10000)));
        assert_eq!(parse_sizes("64"), Ok((64, 64)));
        assert_eq!(parse_sizes("1K,1M"), Ok((1024, 1 << 20)));
        assert!(parse_sizes("a,b").is_err());
        let mut s = RrSpec::tcp(RrMode::Rr, Duration::from_secs(1));
        let limits = ServerLimits::default();
        assert_eq!(s.refusal(&limits), None);
        s.response_bytes = MAX_MESSAGE_BYTES + 1;
        assert!(s.refusal(&limits).unwrap().contains("at most"));
        s.response_bytes = 1;
        s.concurrency = limits.max_streams + 1;
        assert!(s.refusal(&limits).unwrap().contains("--max-streams"));
        s.concurrency = 1;
        s.duration = limits.max_duration + Duration::from_secs(1);
        assert!(s.refusal(&limits).unwrap().contains("--max-duration"));
        s.duration = Duration::from_secs(1);
        s.protocol = Protocol::Udp;
        s.request_bytes = 70_000;
        assert!(s.refusal(&limits).unwrap().contains("UDP"));
        s.request_bytes = 1;
        s.mode = RrMode::Crr;
        assert!(s.invalid().unwrap().contains("no UDP form"));
    }

    #[test]
    fn the_spec_round_trips_as_json() {
        let mut s = RrSpec::tcp(RrMode::Crr, Duration::from_millis(1500));
        s.transactions = Some(7);
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["duration_us"], 1_500_000);
        assert_eq!(j["mode"], "crr");
        assert_eq!(serde_json::from_value::<RrSpec>(j).unwrap(), s);
    }
}
