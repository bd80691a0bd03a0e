//! The typed description of one test (`TestSpec`) that the client sends to the server, and its
//! validation. Both sides build their interval grid (`Timeline`) from the same spec, so their
//! interval reports line up without clock synchronisation.
//!
//! Built by `cli` from command-line flags, by the campaign runner from a plan, and checked by
//! the server against its caps (`ServerLimits`) before any data flows.

use crate::units::BitRate;

mod ip_header;
mod limits;
mod window;
pub use ip_header::{parse_dscp, parse_flowlabel, parse_tos};
pub use limits::Refusal;
use serde::{Deserialize, Serialize};
use std::time::Duration;
pub use window::{WindowMode, parse_window};

/// Transport under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

/// Which way data flows, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client sends, server receives (iperf3's default).
    Forward,
    /// Server sends, client receives (`-R`).
    Reverse,
    /// Both at once, each with `streams` streams (`--bidir`).
    Bidir,
}

/// Which side sends on one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flow {
    ClientToServer,
    ServerToClient,
}

impl Flow {
    /// The words for it in logs and summaries: "client to server".
    pub fn words(self) -> &'static str {
        match self {
            Flow::ClientToServer => "client to server",
            Flow::ServerToClient => "server to client",
        }
    }

    /// The other direction.
    pub fn other(self) -> Flow {
        match self {
            Flow::ClientToServer => Flow::ServerToClient,
            Flow::ServerToClient => Flow::ClientToServer,
        }
    }
}

/// Whether TCP senders of a fixed path use sendfile(2) (`TestSpec::zerocopy`), as iperf3 reads
/// its flags: `asked` is `-Z` (`Some(true)`) or `--no-zerocopy` (`Some(false)`); without either,
/// a length the user names (`-l`) is written with write(2), as iperf3's `-l`, and otherwise
/// sendfile stays among the calibrated choices. (sendfile of a fixed size is the slowest path on
/// the AMD EPYC VMs of docs/performance.md, so `-l` alone must not pick it.)
pub fn zerocopy_asked(length_given: bool, asked: Option<bool>) -> bool {
    asked.unwrap_or(!length_given)
}

/// Everything both ends need to run one test. Sent in the client's `Request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSpec {
    pub protocol: Protocol,
    pub direction: Direction,
    /// Measured duration, after the omitted warm-up.
    #[serde(with = "micros", rename = "duration_us")]
    pub duration: Duration,
    /// Warm-up excluded from the summary (`-O`).
    #[serde(with = "micros", rename = "omit_us")]
    pub omit: Duration,
    /// Reporting interval (`-i`).
    #[serde(with = "micros", rename = "interval_us")]
    pub interval: Duration,
    /// Streams per direction (`-P`).
    pub streams: u16,
    /// Requested SO_SNDBUF/SO_RCVBUF on both ends, bytes; `None` leaves the kernel's autotuning.
    pub window_bytes: Option<u64>,
    /// How `window_bytes` is asked of the kernel: forced past its maxima, or asked the way a
    /// non-root iperf does (capped by `net.core.{r,w}mem_max` / `kern.ipc.maxsockbuf`).
    /// Absent from an older peer's request: forced, as before.
    #[serde(default)]
    pub window_mode: WindowMode,
    /// TCP_MAXSEG on the client's sockets (the client's SYN advertises it to the server).
    pub mss_bytes: Option<u32>,
    /// TCP congestion control for both ends' sockets.
    pub congestion: Option<String>,
    /// TCP write size, or UDP datagram payload size, in bytes.
    pub length_bytes: u32,
    /// Total target rate over all streams of one direction, bit/s; 0 = unlimited.
    pub bitrate_bps: f64,
    /// Allow UDP segmentation/receive offload (UDP_SEGMENT/UDP_GRO) where the kernel has it.
    pub udp_offload: bool,
    /// TCP senders hand the kernel pages with sendfile(2) instead of copying each write.
    #[serde(default = "yes")]
    pub zerocopy: bool,
    /// TCP senders first try each of their send paths and chunk sizes for this long, keep the
    /// fastest, and the grid leaves this time out like `omit`; zero sends with `length_bytes`
    /// and `zerocopy` as given (`-l`, `--no-zerocopy` and `-b` set it to zero).
    #[serde(with = "micros", rename = "calibration_us", default)]
    pub calibration: Duration,
    /// TCP senders without a calibration still choose their path: they start on the host's
    /// record's pick (or the path as given) and re-check it on the warm connection, in the
    /// results (`engine::sendpath`). Set against an iperf3 server, whose count leaves no time
    /// for a calibration (`iperf3::client::adapt`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live_path_choice: bool,
    /// Latency probes beside the test (`--latency`), with an idle baseline before the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::traffic::latency::LatencySpec>,
    /// `duration = "auto"`: the test ends once its interval rates are steady (`steady`), and
    /// `duration` is its ceiling. Absent: the test runs for `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::traffic::steady::Steady>,
    /// In a result of a `duration = "auto"` test: the leading measured intervals the rule found
    /// to be the initial transient (MSER), left out of the summary like `omit`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub transient: u32,
    /// The type-of-service byte (DSCP << 2 | ECN) of both ends' data sockets (`-S`/`--tos`,
    /// `--dscp`); absent leaves the kernel's 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
    /// SO_MAX_PACING_RATE of every TCP data socket, bit/s per stream (`--fq-rate`): the
    /// kernel paces each sender to it (TCP's own pacing, or the fq qdisc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_rate_bps: Option<u64>,
    /// UDP datagrams go with Don't Fragment set (`--dont-fragment`): larger than the path's
    /// MTU, they fail instead of being fragmented.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dont_fragment: bool,
    /// Receivers drop the data in the kernel instead of copying it (`--skip-rx-copy`, iperf3's
    /// name: `recv` with MSG_TRUNC): the engine's ceiling without the copy. Linux only. Off by
    /// default here (campaigns, pScheduler); `netsweep client` turns it on for its TCP tests
    /// unless `--rx-copy` is given (`cli::default_skips_rx_copy`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_rx_copy: bool,
    /// iperf3's `-n`/`-k`: the test ends once this much has moved in one direction after the
    /// warm-up; `duration` is then only its ceiling. Absent: the test runs for `duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<Count>,
    /// iperf3's `-t 0`: the test runs until the client is interrupted (or reaches its count),
    /// and ends then at the end of the interval running; `duration` is only its ceiling.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub until_stopped: bool,
    /// iperf3's `-i 0`: no reports while the test runs; `interval` is the whole test, and
    /// iperf3's JSON says 0 as iperf3's does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_test_interval: bool,
    /// TCP_NODELAY on both ends' data sockets (iperf3's `-N`): writes go out at once instead
    /// of waiting for Nagle's algorithm.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_delay: bool,
    /// Senders send iperf3's repeating "0123456789" pattern (`--repeating-payload`) instead
    /// of netsweep's own pattern.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeating_payload: bool,
    /// A request/response test instead of a throughput one (a campaign's `test = "rr"`): its
    /// duration, streams (connections) and protocol are this spec's. The server never sees it:
    /// `traffic::rr::spec_of` turns it into the `RrSpec` the rr client asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<crate::traffic::rr::RrTest>,
    /// The CPUs each end pins its data threads to (`-A`/`--affinity`); a server's own `-A`
    /// fills in `server` where the client left it unset.
    #[serde(
        default,
        skip_serializing_if = "crate::traffic::affinity::Affinity::is_unset"
    )]
    pub affinity: crate::traffic::affinity::Affinity,
}

/// How much a test moves before it ends (iperf3's `-n` and `-k`), counted after the warm-up
/// over all streams of one direction. A test in both directions ends when either direction
/// has moved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Count {
    /// `-n`: bytes.
    Bytes(u64),
    /// `-k`: blocks of `length_bytes`, that is TCP writes or UDP datagrams.
    Blocks(u64),
}

impl Count {
    /// The bytes this count stands for with blocks of `length` bytes.
    pub fn bytes(self, length: u32) -> u64 {
        match self {
            Count::Bytes(b) => b,
            Count::Blocks(k) => k.saturating_mul(u64::from(length)),
        }
    }

    /// In words, as iperf3's verbose header says it: "1048576 bytes", "100 blocks".
    pub fn words(self) -> String {
        match self {
            Count::Bytes(b) => format!("{b} bytes"),
            Count::Blocks(k) => format!("{k} blocks"),
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How long TCP senders calibrate their send path by default: four candidates, two turns of
/// 37.5 ms each.
pub const DEFAULT_CALIBRATION: Duration = Duration::from_millis(300);

fn yes() -> bool {
    true
}

/// Smallest UDP payload: sequence number and send timestamp.
pub const UDP_HEADER_BYTES: u32 = 16;
/// Largest UDP payload over IPv4.
pub const UDP_MAX_PAYLOAD: u32 = 65_507;
/// Largest TCP write size accepted.
pub const TCP_MAX_LENGTH: u32 = 64 << 20;
/// Default TCP write size: large writes halve the per-byte syscall cost against 128 KiB.
pub const TCP_DEFAULT_LENGTH: u32 = 1 << 20;
/// Default UDP payload: fits a 1500-byte MTU over IPv4 and IPv6.
pub const UDP_DEFAULT_LENGTH: u32 = 1400;
/// iperf3's UDP payload without `-l` when its control connection's MSS is unknown
/// (`DEFAULT_UDP_BLKSIZE`); known, it takes the MSS (`ClientConfig::udp_path_datagrams`).
pub const IPERF3_UDP_LENGTH: u32 = 1460;
/// UDP target rate of a spec built without one (`TestSpec::udp`, a campaign plan's
/// `protocol = "udp"`): netsweep's own default, 1 Gbit/s per direction. The command line's `-u`
/// takes iperf3's `IPERF3_UDP_RATE` instead.
pub const UDP_DEFAULT_RATE: f64 = 1e9;
/// iperf3's default `--rcv-timeout`: how long a test may go without data on any stream this
/// end receives before it ends with "idle timeout for receiving data".
pub const DEFAULT_RCV_TIMEOUT: Duration = Duration::from_secs(120);
/// The shortest `--rcv-timeout` iperf3 accepts (`MIN_NO_MSG_RCVD_TIMEOUT`).
pub const MIN_RCV_TIMEOUT: Duration = Duration::from_millis(100);

/// iperf3's UDP rate without `-b`: 1 Mbit/s per stream (`-u` on the command line).
pub const IPERF3_UDP_RATE: f64 = 1e6;
/// iperf3's TCP block size without `-l`, 128 KiB: what `-k` counts in and what an iperf3
/// client's parameters mean without a length.
pub const IPERF3_TCP_LENGTH: u32 = 128 << 10;

/// Streams per direction of `--rrul` when -P is not given.
pub const RRUL_STREAMS: u16 = 4;

/// The largest `-w`: iperf3's (its servers refuse more, `SERVER_ERROR` "socket buffer size too
/// large"), kept by a plan, a pScheduler test and both netsweep ends alike (a plan's 600M ran
/// where the client refused 1G).
pub const MAX_WINDOW_BYTES: u64 = 512 << 20;

/// Why a spec is not runnable. The message names the option and what would be accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("duration must be more than 0 (-t)")]
    ZeroDuration,
    #[error("interval must be at least 10ms (-i), got {0:?}")]
    IntervalTooShort(Duration),
    #[error("streams must be between 1 and 1024 (-P), got {0}")]
    Streams(u16),
    #[error(
        "window must be more than 0 (-w); leave it out or write auto to keep the kernel's autotuning"
    )]
    ZeroWindow,
    #[error(
        "window {0} bytes is larger than {MAX_WINDOW_BYTES} bytes (512 MiB: iperf3's limit, which every netsweep end keeps) (-w)"
    )]
    HugeWindow(u64),
    #[error("MSS must be between 88 and 65535 bytes (-M), got {0}")]
    Mss(u32),
    #[error("length must be between {min} and {max} bytes for {proto} (-l), got {got}")]
    Length {
        proto: &'static str,
        min: u32,
        max: u32,
        got: u32,
    },
    #[error("bitrate must be a finite rate of 0 (unlimited) or more (-b)")]
    Bitrate,
    #[error(
        "bitrate {rate} would not send one {length}-byte write in {seconds:.1} s: ask for at least {least} (-b)"
    )]
    RateTooLow {
        rate: BitRate,
        length: u32,
        seconds: f64,
        least: BitRate,
    },
    #[error(
        "congestion control name {0:?} is not valid: use a name from net.ipv4.tcp_available_congestion_control"
    )]
    Congestion(String),
    #[error("{0} applies to TCP only")]
    TcpOnly(&'static str),
    #[error("{0} applies to UDP only (TCP sends with Don't Fragment set already)")]
    UdpOnly(&'static str),
    #[error("send path calibration lasts at most 10 s")]
    Calibration,
    #[error("{0}")]
    Latency(String),
    #[error(
        "duration auto needs a precision between 0 and 100% and a ceiling of at least its {0:.1} s floor (-t auto:30s)"
    )]
    Steady(f64),
    #[error("a byte or block count (-n/-k) must be more than 0")]
    ZeroCount,
    #[error("a test ends at a byte or block count (-n/-k) or {0}, not both")]
    CountWith(&'static str),
}

impl TestSpec {
    /// A TCP test with the defaults of `netsweep client`.
    pub fn tcp(duration: Duration) -> TestSpec {
        TestSpec {
            protocol: Protocol::Tcp,
            direction: Direction::Forward,
            duration,
            omit: Duration::ZERO,
            interval: Duration::from_secs(1),
            streams: 1,
            window_bytes: None,
            window_mode: WindowMode::Force,
            mss_bytes: None,
            congestion: None,
            length_bytes: TCP_DEFAULT_LENGTH,
            bitrate_bps: 0.0,
            udp_offload: true,
            zerocopy: true,
            calibration: DEFAULT_CALIBRATION,
            live_path_choice: false,
            latency: None,
            steady: None,
            transient: 0,
            tos: None,
            fq_rate_bps: None,
            dont_fragment: false,
            skip_rx_copy: false,
            count: None,
            until_stopped: false,
            whole_test_interval: false,
            no_delay: false,
            repeating_payload: false,
            rr: None,
            affinity: Default::default(),
        }
    }

    /// A UDP test with the defaults of `netsweep client -u`.
    pub fn udp(duration: Duration) -> TestSpec {
        TestSpec {
            protocol: Protocol::Udp,
            length_bytes: UDP_DEFAULT_LENGTH,
            bitrate_bps: UDP_DEFAULT_RATE,
            calibration: Duration::ZERO,
            ..TestSpec::tcp(duration)
        }
    }

    /// What kind of test this is, for log lines: "TCP forward test, 4 streams".
    pub fn kind_words(&self) -> String {
        let protocol = match self.protocol {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        };
        let direction = match self.direction {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
            Direction::Bidir => "bidirectional",
        };
        let streams = if self.streams == 1 {
            "1 stream".to_string()
        } else {
            format!("{} streams", self.streams)
        };
        format!("{protocol} {direction} test, {streams}")
    }

    /// Checks every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.duration.is_zero() {
            return Err(SpecError::ZeroDuration);
        }
        if let Some(rule) = self.steady
            && (!(rule.precision > 0.0 && rule.precision < 1.0) || rule.floor > self.duration)
        {
            return Err(SpecError::Steady(rule.floor.as_secs_f64()));
        }
        if self.interval < Duration::from_millis(10) {
            return Err(SpecError::IntervalTooShort(self.interval));
        }
        if self.streams == 0 || self.streams > 1024 {
            return Err(SpecError::Streams(self.streams));
        }
        match self.window_bytes {
            Some(0) => return Err(SpecError::ZeroWindow),
            Some(w) if w > MAX_WINDOW_BYTES => return Err(SpecError::HugeWindow(w)),
            _ => {}
        }
        let (proto, min, max) = match self.protocol {
            Protocol::Tcp => ("TCP", 1, TCP_MAX_LENGTH),
            Protocol::Udp => ("UDP", UDP_HEADER_BYTES, UDP_MAX_PAYLOAD),
        };
        if self.length_bytes < min || self.length_bytes > max {
            return Err(SpecError::Length {
                proto,
                min,
                max,
                got: self.length_bytes,
            });
        }
        if !self.bitrate_bps.is_finite() || self.bitrate_bps < 0.0 {
            return Err(SpecError::Bitrate);
        }
        // Every stream must be able to send at least one write or datagram in the test.
        let seconds = self.total_time().as_secs_f64();
        let least = 8.0 * f64::from(self.length_bytes) * f64::from(self.streams.max(1)) / seconds;
        if self.bitrate_bps > 0.0 && self.bitrate_bps < least {
            return Err(SpecError::RateTooLow {
                rate: BitRate(self.bitrate_bps),
                length: self.length_bytes,
                seconds,
                least: BitRate(least.ceil()),
            });
        }
        if self.protocol == Protocol::Udp {
            if self.mss_bytes.is_some() {
                return Err(SpecError::TcpOnly("-M/--mss"));
            }
            if self.congestion.is_some() {
                return Err(SpecError::TcpOnly("-C/--congestion"));
            }
        } else if self.dont_fragment {
            return Err(SpecError::UdpOnly("--dont-fragment"));
        }
        if self.calibration > Duration::from_secs(10) {
            return Err(SpecError::Calibration);
        }
        if let Some(m) = self.mss_bytes
            && !(88..=65535).contains(&m)
        {
            return Err(SpecError::Mss(m));
        }
        if let Some(c) = &self.congestion
            && (c.is_empty()
                || c.len() > 15
                || !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
        {
            return Err(SpecError::Congestion(c.clone()));
        }
        if let Some(problem) = self.latency.as_ref().and_then(|l| l.problem()) {
            return Err(SpecError::Latency(problem));
        }
        if let Some(c) = self.count {
            if c.bytes(self.length_bytes) == 0 {
                return Err(SpecError::ZeroCount);
            }
            if self.steady.is_some() {
                return Err(SpecError::CountWith("once steady (-t auto)"));
            }
            if self.latency.is_some() {
                // A count runs with iperf3's protocol, which carries no latency probes.
                return Err(SpecError::CountWith("with latency probes (--latency)"));
            }
        }
        Ok(())
    }

    /// How long the test holds the server: the idle baseline of the latency probe, then the
    /// warm-up and the measured duration.
    pub fn wall_time(&self) -> Duration {
        self.latency.map(|l| l.idle).unwrap_or_default() + self.total_time()
    }

    /// The flows of this test, one entry per stream, in stream-id order.
    pub fn flows(&self) -> Vec<Flow> {
        let n = self.streams as usize;
        match self.direction {
            Direction::Forward => vec![Flow::ClientToServer; n],
            Direction::Reverse => vec![Flow::ServerToClient; n],
            Direction::Bidir => {
                let mut v = vec![Flow::ClientToServer; n];
                v.extend(std::iter::repeat_n(Flow::ServerToClient, n));
                v
            }
        }
    }

    /// The receive window a TCP receiver holds with TCP_WINDOW_CLAMP (`--window-mode clamp`).
    pub fn window_clamp(&self) -> Option<u64> {
        self.window_bytes
            .filter(|_| self.window_mode == WindowMode::Clamp && self.protocol == Protocol::Tcp)
    }

    /// Target rate of one stream (the total is split evenly), bit/s; 0 = unlimited.
    pub fn stream_rate(&self) -> BitRate {
        BitRate(self.bitrate_bps / f64::from(self.streams.max(1)))
    }

    /// The calibration that happens: only unlimited TCP senders calibrate (a paced or UDP
    /// sender's path does not limit it), so for other tests `calibration` is ignored.
    pub fn effective_calibration(&self) -> Duration {
        if self.protocol == Protocol::Tcp && self.bitrate_bps == 0.0 {
            self.calibration
        } else {
            Duration::ZERO
        }
    }

    /// Whether the TCP senders choose their send path (a calibration, or a live choice), and
    /// so use and add to the host's record of earlier tests (`host::sendmemory`).
    pub fn chooses_send_path(&self) -> bool {
        !self.effective_calibration().is_zero() || self.effective_live_path_choice()
    }

    /// A live path choice where it happens: unlimited TCP, as a calibration.
    pub fn effective_live_path_choice(&self) -> bool {
        self.live_path_choice && self.protocol == Protocol::Tcp && self.bitrate_bps == 0.0
    }

    /// What comes before the measured period: the send path calibration, then `omit`.
    pub fn warmup(&self) -> Duration {
        self.effective_calibration() + self.omit
    }

    /// Wall time from start until the senders stop.
    pub fn total_time(&self) -> Duration {
        self.warmup() + self.duration
    }

    /// The interval grid both ends build from this spec.
    pub fn timeline(&self) -> crate::traffic::timeline::Timeline {
        crate::traffic::timeline::Timeline::new(self.warmup(), self.interval, self.duration)
            .omit_leading(self.transient as usize)
    }

    /// Intervals in the grid (warm-up included), computed without building it.
    pub fn interval_count(&self) -> u64 {
        let step = self.interval.as_nanos().max(1);
        let phase = |d: Duration| d.as_nanos().div_ceil(step);
        u64::try_from(phase(self.warmup()) + phase(self.duration)).unwrap_or(u64::MAX)
    }

    /// Interval reports one end keeps: one per interval per stream.
    pub fn interval_records(&self) -> u64 {
        self.interval_count()
            .saturating_mul(self.flows().len() as u64)
    }
}

/// Interval reports a server keeps for one test by default (streams x intervals): about
/// 22 MB of reports, so four tests at once stay far below what a client could make a server
/// commit before (1.27 GB for a UDP test of an hour at 10 ms intervals with 32 streams).
pub const DEFAULT_MAX_INTERVAL_RECORDS: u64 = 200_000;
/// Connections a server holds before they are admitted to a test.
pub const DEFAULT_MAX_PENDING: usize = 64;

/// Server-side caps, checked before any data flows.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerLimits {
    pub max_tests: usize,
    pub max_duration: Duration,
    pub max_streams: u16,
    /// bit/s per direction; 0 = no cap.
    pub max_rate_bps: f64,
    /// Most interval reports (streams x intervals) one test may ask for.
    pub max_interval_records: u64,
    /// Most connections held before their test is admitted (or their data connection matched).
    pub max_pending: usize,
    /// Open files the server budgets its tests' sockets under; 0 = the soft RLIMIT_NOFILE
    /// (`ulimit -n`, raised to the hard limit by `netsweep server`).
    pub max_open_files: u64,
    /// `--rcv-timeout`: a test whose streams this server receives get nothing for this long
    /// ends with iperf3's "idle timeout for receiving data" (iperf3's default, 120 s).
    pub rcv_timeout: Duration,
    /// `-A`: the CPUs this server pins its tests' data threads to, unless a client's `-A N,M`
    /// asks for others.
    pub affinity: Option<crate::traffic::affinity::Cpus>,
    /// `--server-bitrate-limit`: one test's total rate, checked as iperf3's server checks it.
    pub bitrate_limit: Option<crate::traffic::bitrate_limit::BitrateLimit>,
    /// `--cntl-ka` and `--snd-timeout`: set on the connections this server accepts.
    pub liveness: crate::traffic::liveness::Liveness,
    /// `-i`: the interval of an iperf3 client's tests, which iperf3's clients do not send (its
    /// server reports on its own `-i`); zero: one interval over the whole test (iperf3's
    /// `-i 0`). A netsweep client's tests follow the client's `-i`.
    pub iperf3_interval: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_tests: 4,
            max_duration: Duration::from_secs(3600),
            max_streams: 128,
            max_rate_bps: 0.0,
            max_interval_records: DEFAULT_MAX_INTERVAL_RECORDS,
            max_pending: DEFAULT_MAX_PENDING,
            max_open_files: 0,
            rcv_timeout: DEFAULT_RCV_TIMEOUT,
            affinity: None,
            bitrate_limit: None,
            liveness: crate::traffic::liveness::Liveness::default(),
            iperf3_interval: Duration::from_secs(1),
        }
    }
}

/// Serde helper: a `Duration` as whole microseconds.
pub mod micros {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_micros(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        assert_eq!(TestSpec::tcp(Duration::from_secs(10)).validate(), Ok(()));
        assert_eq!(TestSpec::udp(Duration::from_secs(10)).validate(), Ok(()));
    }

    #[test]
    fn bad_values_are_named() {
        let base = TestSpec::tcp(Duration::from_secs(1));
        assert_eq!(
            TestSpec {
                duration: Duration::ZERO,
                ..base.clone()
            }
            .validate(),
            Err(SpecError::ZeroDuration)
        );
        assert_eq!(
            TestSpec {
                window_bytes: Some(0),
                ..base.clone()
            }
            .validate(),
            Err(SpecError::ZeroWindow)
        );
        assert_eq!(
            TestSpec {
                streams: 0,
                ..base.clone()
            }
            .validate(),
            Err(SpecError::Streams(0))
        );
        assert!(matches!(
            TestSpec {
                length_bytes: 8,
                ..TestSpec::udp(Duration::from_secs(1))
            }
            .validate(),
            Err(SpecError::Length { .. })
        ));
        assert!(
            TestSpec {
                congestion: Some("../x".into()),
                ..base.clone()
            }
            .validate()
            .is_err()
        );
        assert!(
            TestSpec {
                mss_bytes: Some(1400),
                ..TestSpec::udp(Duration::from_secs(1))
            }
            .validate()
            .is_err()
        );
    }

    /// Regression: `-b 0.00000000000001` panicked the sender; with `-R` the client printed zero
    /// bytes and exited 0. Such a rate is refused with the least rate that sends anything.
    #[test]
    fn a_rate_that_sends_nothing_is_refused() {
        let spec = TestSpec {
            bitrate_bps: 1e-14,
            ..TestSpec::udp(Duration::from_secs(10))
        };
        let e = spec.validate().unwrap_err().to_string();
        assert!(e.contains("at least") && e.contains("-b"), "{e}");
        let ok = TestSpec {
            bitrate_bps: 8.0 * 1400.0 / 10.0,
            ..TestSpec::udp(Duration::from_secs(10))
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn bidir_has_both_flows() {
        let spec = TestSpec {
            direction: Direction::Bidir,
            streams: 2,
            ..TestSpec::tcp(Duration::from_secs(1))
        };
        assert_eq!(
            spec.flows(),
            vec![
                Flow::ClientToServer,
                Flow::ClientToServer,
                Flow::ServerToClient,
                Flow::ServerToClient
            ]
        );
    }

    #[test]
    fn interval_count_matches_the_grid() {
        for (omit, interval, duration) in [(0, 1000, 10_000), (1500, 1000, 3000), (0, 300, 1000)] {
            let spec = TestSpec {
                omit: Duration::from_millis(omit),
                interval: Duration::from_millis(interval),
                ..TestSpec::tcp(Duration::from_millis(duration))
            };
            assert_eq!(spec.interval_count(), spec.timeline().len() as u64);
        }
    }

    #[test]
    fn spec_round_trips_through_json() {
        let spec = TestSpec {
            omit: Duration::from_millis(1500),
            ..TestSpec::udp(Duration::from_secs(3))
        };
        let text = serde_json::to_string(&spec).unwrap();
        assert!(text.contains("\"duration_us\":3000000"), "{text}");
        assert_eq!(serde_json::from_str::<TestSpec>(&text).unwrap(), spec);
    }

    /// A request from a netsweep without `--window-mode` is forced, as it always was; the mode
    /// travels to the server.
    #[test]
    fn the_window_mode_travels_and_defaults_to_force() {
        let mut spec = TestSpec::tcp(Duration::from_secs(1));
        spec.window_mode = WindowMode::Ask;
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["window_mode"], "ask");
        let back: TestSpec = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.window_mode, WindowMode::Ask);
        let mut old = json;
        old.as_object_mut().unwrap().remove("window_mode");
        let back: TestSpec = serde_json::from_value(old).unwrap();
        assert_eq!(back.window_mode, WindowMode::Force);
        assert_eq!(parse_window("auto").unwrap(), None);
        assert_eq!(parse_window("Default").unwrap(), None);
        assert_eq!(parse_window("64K").unwrap(), Some(65536));
        assert!(parse_window("none").is_err());
    }

    #[test]
    fn a_clamped_window_is_held_by_tcp_receivers_over_a_doubled_buffer() {
        let mut spec = TestSpec::tcp(Duration::from_secs(1));
        spec.window_bytes = Some(1 << 20);
        assert_eq!(spec.window_clamp(), None, "force: no clamp");
        spec.window_mode = "clamp".parse().unwrap();
        assert_eq!(spec.window_clamp(), Some(1 << 20));
        assert!(spec.window_mode.forced());
        let headroom = crate::platform::sockopt::CLAMP_HEADROOM;
        assert_eq!(spec.window_mode.buffer_for(1 << 20), headroom << 20);
        assert_eq!(WindowMode::Ask.buffer_for(1 << 20), 1 << 20);
        assert!(!WindowMode::Ask.forced());
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(json["window_mode"], "clamp");
        spec.protocol = Protocol::Udp;
        assert_eq!(spec.window_clamp(), None, "UDP has no window to clamp");
        let e = "gently".parse::<WindowMode>().unwrap_err();
        assert!(e.contains("clamp"), "{e}");
    }
}
