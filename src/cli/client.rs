//! `netsweep client`'s options (iperf3's client options among them, under iperf3's names) and
//! their conversion, once, into a validated `ClientConfig` and `TestSpec`, which `app` runs.

use super::{ClientAuthArgs, path, rates};
use crate::traffic::address::resolve;
use crate::traffic::client::{Bind, ClientConfig, PeerProtocol};
use crate::traffic::iperf3::IPERF3_PORT;
use crate::traffic::latency::LatencySpec;
use crate::traffic::protocol::DEFAULT_PORT;
use crate::traffic::spec::{
    Count, Direction, Protocol, RRUL_STREAMS, TestSpec, UDP_DEFAULT_LENGTH,
};
use crate::units::{BitRate, Bytes, parse_duration};
use anyhow::{Context, bail};
use clap::Args;
use std::net::IpAddr;

#[derive(Debug, Args, Clone)]
pub struct ClientArgs {
    /// Server host name or address.
    pub host: String,
    /// Server port (default 5310, netsweep's; when nothing listens there, iperf3's 5201 is
    /// tried, telling an iperf3 server from a netsweep one by itself).
    #[arg(long, short = 'p')]
    pub port: Option<u16>,
    /// Measured time, after the warm-up (10, 2s, 500ms; 10 s when neither -t, -n nor -k is
    /// given), or `auto`: end once the interval rates are steady (mean known to ±5%, at most
    /// 30 s; `auto:60s:2%` sets the ceiling and the precision; netsweep servers only), or 0:
    /// until Ctrl-C, which ends the test at the end of the interval running (iperf3's -t 0).
    #[arg(long, short = 't', allow_hyphen_values = true)]
    pub time: Option<String>,
    /// Reporting interval (0: none while the test runs, one over the whole test, as iperf3).
    #[arg(long, short = 'i', default_value = "1", allow_hyphen_values = true)]
    pub interval: String,
    /// Warm-up excluded from the results.
    #[arg(long, short = 'O', default_value = "0", allow_hyphen_values = true)]
    pub omit: String,
    /// Parallel streams (per direction).
    #[arg(long, short = 'P', default_value_t = 1)]
    pub parallel: u16,
    /// Server sends, client receives.
    #[arg(long, short = 'R', conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Socket buffer size on both ends (SO_SNDBUF/SO_RCVBUF), e.g. 64K, 4M; auto (or default)
    /// leaves the kernel's autotuning, as no -w.
    #[arg(long, short = 'w')]
    pub window: Option<String>,
    /// How -w is asked of the kernel: force (default; past net.core.rmem_max/wmem_max where
    /// root may), ask (capped by them, as a non-root iperf; the granted sizes are reported) or
    /// clamp (the advertised receive window exactly -w, held with TCP_WINDOW_CLAMP; Linux
    /// otherwise advertises up to twice -w).
    #[arg(long, value_name = "ask|force|clamp")]
    pub window_mode: Option<String>,
    /// TCP maximum segment size (iperf3's -M, --set-mss).
    #[arg(long, short = 'M', alias = "set-mss")]
    pub mss: Option<u32>,
    /// TCP congestion control (cubic, bbr, reno, ...).
    #[arg(long, short = 'C', alias = "linux-congestion")]
    pub congestion: Option<String>,
    /// TCP write size: write(2) calls of this size, sendfile(2) with -Z, as iperf3's (default:
    /// the call and size chosen by a 0.3 s calibration, which giving it skips; with -k, iperf3's
    /// 128K; receivers read 1-4 MiB at a time either way), or UDP datagram payload (default:
    /// the control connection's MSS, as iperf3's client: 1448 over a 1500-byte MTU with TCP
    /// timestamps; 1400 where the MSS cannot be read).
    #[arg(long, short = 'l')]
    pub length: Option<String>,
    /// Test UDP instead of TCP.
    #[arg(long, short = 'u')]
    pub udp: bool,
    /// Target rate of each stream, as iperf3's -b (-P 4 -b 100M: 400 Mbit/s a direction);
    /// 0 = unlimited. UDP default: 1M per stream, iperf3's, said at the start.
    #[arg(long, short = 'b', alias = "bandwidth", allow_hyphen_values = true)]
    pub bitrate: Option<String>,
    /// netsweep's own: target rate of a whole direction, split evenly over its streams.
    #[arg(long, value_name = "RATE", conflicts_with = "bitrate")]
    pub total_bitrate: Option<String>,
    /// Do not use UDP segmentation/receive offload (UDP_SEGMENT/UDP_GRO).
    #[arg(long)]
    pub no_udp_offload: bool,
    /// TCP: copy every write instead of sending from memory pages with sendfile(2).
    #[arg(long)]
    pub no_zerocopy: bool,
    /// Use IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// Bind to a local address or network device.
    #[arg(long, short = 'B')]
    pub bind: Option<String>,
    /// Print one JSON document instead of text: iperf3's (3.21's schema, netsweep's extra
    /// figures under `extensions`) in iperf3 mode (`--iperf3`, or `netsweep -c HOST`), else
    /// netsweep's own; `--json=iperf3` or `--json=netsweep` chooses.
    #[arg(
        long,
        short = 'J',
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "auto",
        value_name = "SCHEMA"
    )]
    pub json: Option<String>,
    /// iperf3's JSON as events, one line each, as iperf3 3.17+ writes them: start, every
    /// interval as it ends, then end ({"event":"interval","data":{...}}).
    #[arg(long)]
    pub json_stream: bool,
    /// With --json-stream: the whole document too, after the events (iperf3's
    /// --json-stream-full-output).
    #[arg(long, requires = "json_stream")]
    pub json_stream_full_output: bool,
    /// (internal) Set when the command line was iperf3's (`netsweep -c HOST ...`).
    #[arg(long, hide = true)]
    pub iperf3_cli: bool,
    /// Units of the text output: k m g t (bits/sec) or K M G T (Bytes/sec), as iperf3's -f.
    #[arg(long, short = 'f')]
    pub format: Option<String>,
    /// More detail: the test asked for and every socket of both ends (iperf3's -d/--debug too).
    #[arg(long, short = 'V', short_alias = 'd', alias = "debug")]
    pub verbose: bool,
    /// Append the output to this file instead of printing it (iperf3's --logfile).
    #[arg(long)]
    pub logfile: Option<std::path::PathBuf>,
    /// Write the client's process ID to FILE while it runs, removed at exit (iperf3's -I,
    /// which a client takes too); a FILE naming a running process is refused.
    #[arg(long, short = 'I', value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// (internal) The whole test as JSON, as a campaign hands it to a guest's netsweep; the
    /// options that shape a test are then ignored.
    #[arg(long, hide = true)]
    pub spec_json: Option<String>,
    /// Accepted for iperf3's sake: netsweep flushes every line already.
    #[arg(long)]
    pub forceflush: bool,
    /// With -l, send with sendfile(2) in calls of that size, as iperf3 -Z; without it the send
    /// path is calibrated (sendfile(2) where fastest). An iperf3 server that sends is asked to
    /// use sendfile(2).
    #[arg(short = 'Z', long = "zerocopy")]
    pub zerocopy_flag: bool,
    /// Receivers drop the data in the kernel instead of copying it (recv with MSG_TRUNC, as
    /// iperf3's --skip-rx-copy; Linux): the engine's ceiling without the copy. An iperf3
    /// server is asked to do the same. netsweep's own TCP and UDP tests do this unless --rx-copy is
    /// given; iperf3's command line (`netsweep -c HOST`) copies unless it is given, as iperf3.
    #[arg(long, conflicts_with = "rx_copy")]
    pub skip_rx_copy: bool,
    /// Receivers copy the data into the program, as applications do (iperf3's default): the
    /// figure then includes the receiving host's memory copy, not only the network and stack.
    #[arg(long)]
    pub rx_copy: bool,
    /// Speak iperf3's protocol (3.1 to 3.21) from the first byte, to a netsweep server too.
    /// Without it an iperf3 server is found at its first answer, on any port.
    #[arg(long)]
    pub iperf3: bool,
    /// Latency under load: small UDP probes echoed by the server, from an idle baseline
    /// before the load through the whole test (idle and loaded RTT percentiles, the latency
    /// the load added, probe loss, one-way delay variation per direction).
    #[arg(long)]
    pub latency: bool,
    /// Latency probes per second (implies --latency; 1 to 1000).
    #[arg(long, value_name = "N")]
    pub probe_rate: Option<u32>,
    /// Idle baseline before the load starts (implies --latency), e.g. 2s, 500ms, 0.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub latency_idle: Option<String>,
    /// Load and latency at once, in the spirit of flent's RRUL: TCP in both directions with
    /// 4 streams each (or -P) plus the latency probe with its idle baseline.
    #[arg(long, conflicts_with_all = ["udp", "reverse", "bidir"])]
    pub rrul: bool,
    /// End the test once this many bytes have moved in one direction after the warm-up
    /// (100M, 2G), instead of after a time: iperf3's -n. Runs with iperf3's protocol, which
    /// netsweep servers speak too.
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", conflicts_with_all = ["time", "blockcount"])]
    pub bytes: Option<String>,
    /// End the test once this many blocks of -l bytes (TCP writes, UDP datagrams) have
    /// moved in one direction: iperf3's -k (TCP blocks are iperf3's 128K without -l).
    #[arg(
        short = 'k',
        long = "blockcount",
        value_name = "BLOCKS",
        conflicts_with = "time"
    )]
    pub blockcount: Option<String>,
    /// A request/response test instead of throughput, between netsweep's client and server:
    /// rr (one transaction outstanding per connection, netperf's TCP_RR; UDP_RR with -u) or
    /// crr (a new TCP connection per transaction: connections per second). Reports
    /// transactions per second and the latency distribution (docs/request-response.md).
    #[arg(long = "test", value_name = "rr|crr")]
    pub test_kind: Option<String>,
    /// With --test: bytes per request and per response, netperf's -r (default 1,1; -r 64 is
    /// 64,64; sizes as 100, 1K, 1M).
    #[arg(
        short = 'r',
        long = "request-response",
        value_name = "REQ,RESP",
        requires = "test_kind"
    )]
    pub request_response: Option<String>,
    /// With --test: end after exactly this many transactions over all connections (-t, 60 s
    /// when not given, is then the most it may take). -n stays bytes, as in iperf3.
    #[arg(long, value_name = "N", requires = "test_kind")]
    pub transactions: Option<u64>,
    /// With --test rr: both ends poll their connections without sleeping, up to this long per
    /// wait (e.g. 1ms; then they block as usual). Removes the wake-up from each transaction's
    /// latency at the cost of a busy CPU per connection on each end (docs/request-response.md).
    #[arg(long, value_name = "TIME", requires = "test_kind")]
    pub spin: Option<String>,
    #[command(flatten)]
    pub ip: Box<Iperf3ClientOptions>,
    #[command(flatten)]
    pub auth: ClientAuthArgs,
    #[command(flatten)]
    pub path: path::PathArgs,
}

/// iperf3's client options for the IP header, the sockets and the far end's output, under
/// iperf3's names. Each is honoured in both protocols (netsweep's server applies the same
/// socket options to its ends); `-F/--file` is refused by name.
#[derive(Debug, Args, Clone, Default)]
pub struct Iperf3ClientOptions {
    /// Type of service of the data packets, 0-255 (decimal, 0x hex or 0 octal), as iperf3's -S.
    #[arg(short = 'S', long = "tos", value_name = "N", conflicts_with = "dscp")]
    pub tos: Option<String>,
    /// DSCP of the data packets: a number 0-63 or a name (ef, af11-af43, cs0-cs7, va).
    #[arg(long, value_name = "VALUE")]
    pub dscp: Option<String>,
    /// Caps each stream's sending rate in the kernel (SO_MAX_PACING_RATE), e.g. 100M.
    #[arg(long, value_name = "RATE")]
    pub fq_rate: Option<String>,
    /// Local port of the first data stream; stream i uses PORT + i (iperf3's numbering).
    #[arg(long, value_name = "PORT")]
    pub cport: Option<u16>,
    /// How long to wait for each connection to open, in milliseconds (default 5000).
    #[arg(long, value_name = "MS")]
    pub connect_timeout: Option<u64>,
    /// Data connections over MPTCP (needs net.mptcp.enabled = 1; the far end must listen
    /// for MPTCP, which iperf3 servers do and netsweep servers refuse by name).
    #[arg(short = 'm', long)]
    pub mptcp: bool,
    /// Print the far end's own account of the test (iperf3's text or JSON) after the result.
    #[arg(long)]
    pub get_server_output: bool,
    /// IPv6 flow label of this end's data packets, 1-0xfffff (Linux; iperf3's -L), e.g.
    /// -L 0x12345.
    #[arg(short = 'L', long, value_name = "N")]
    pub flowlabel: Option<String>,
    /// UDP datagrams with Don't Fragment set (fail instead of fragmenting above the MTU).
    #[arg(long)]
    pub dont_fragment: bool,
    /// End the test when the streams this end receives bring nothing for this long, in
    /// milliseconds ("idle timeout for receiving data"; iperf3's default, 120000).
    #[arg(long, value_name = "MS")]
    pub rcv_timeout: Option<u64>,
    /// TCP_NODELAY on both ends' data sockets (Nagle's algorithm off), as iperf3's -N.
    #[arg(short = 'N', long)]
    pub no_delay: bool,
    /// Senders send iperf3's repeating "0123456789" pattern instead of netsweep's own (both
    /// ends, as iperf3's --repeating-payload).
    #[arg(long)]
    pub repeating_payload: bool,
    /// Start every line of the text output with TITLE and two spaces (iperf3's -T; its JSON
    /// gets a top-level "title").
    #[arg(short = 'T', long, value_name = "TITLE")]
    pub title: Option<String>,
    /// Pin this end's data threads to CPU N (iperf3's -A), and with N,M the server's to CPU M
    /// for this test; either side may be a range (0-3) that the streams spread over, and ,M
    /// pins the server alone.
    #[arg(short = 'A', long, value_name = "N[,M]")]
    pub affinity: Option<String>,
    #[command(flatten)]
    pub timestamps: super::Timestamps,
    /// A string iperf3's JSON document carries as "extra_data" (iperf3's --extra-data).
    #[arg(long, value_name = "STR")]
    pub extra_data: Option<String>,
    /// 64-bit sequence numbers in UDP datagrams to an iperf3 server, as iperf3's
    /// --udp-counters-64bit (32-bit ones wrap after 4.3 billion datagrams); netsweep's own
    /// datagrams always carry 64-bit counters.
    #[arg(long)]
    pub udp_counters_64bit: bool,
    /// Bind the sockets to this network device (SO_BINDTODEVICE), as iperf3's --bind-dev;
    /// `-B DEV` does the same.
    #[arg(long, value_name = "DEV", conflicts_with = "bind")]
    pub bind_dev: Option<String>,
    /// Accepted for iperf3's sake: netsweep's UDP senders and receivers use GSO/GRO unless
    /// --no-udp-offload (a note says so).
    #[arg(long)]
    pub gsro: bool,
    /// Accepted for iperf3's sake: netsweep's pacer times each send itself (a note says so).
    #[arg(long, value_name = "USEC")]
    pub pacing_timer: Option<String>,
    /// Accepted for iperf3's sake (deprecated there): netsweep paces in its own threads, in
    /// the kernel only with --fq-rate.
    #[arg(long)]
    pub no_fq_socket_pacing: bool,
    /// TCP keepalive on the control connection, as iperf3's: idle seconds before the first
    /// probe / seconds between probes / probes unanswered before the connection is dropped;
    /// parts left out are the system's (e.g. --cntl-ka, --cntl-ka=60/10/3).
    #[arg(
        long,
        value_name = "IDLE/INTV/CNT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub cntl_ka: Option<String>,
    /// End the test when data this end sent stays unacknowledged for MS milliseconds
    /// (TCP_USER_TIMEOUT on the control and TCP data connections, as iperf3's; Linux only).
    #[arg(long, value_name = "MS")]
    pub snd_timeout: Option<u64>,
    /// iperf3's file transfer: refused by name (see `refusal`).
    #[arg(short = 'F', long, hide = true, value_name = "NAME")]
    pub file: Option<String>,
    /// iperf3's SCTP tests: refused by name (see `refusal`).
    #[arg(long, hide = true)]
    pub sctp: bool,
    /// iperf3's SCTP options: refused by name with --sctp.
    #[arg(long, hide = true, value_name = "N")]
    pub nstreams: Option<String>,
    #[arg(short = 'X', long, hide = true, value_name = "NAME")]
    pub xbind: Option<String>,
}

/// Why `--sctp` is refused.
pub const SCTP_REFUSAL: &str = "--sctp: netsweep tests TCP and UDP only; run SCTP tests with \
     iperf3";

/// Why `-F`/`--file` is refused.
pub const FILE_REFUSAL: &str = "-F/--file: netsweep sends from memory and discards what it \
     receives, so the test measures the network and not a disk; it does not read or write \
     files: run without -F (with -n SIZE for a file's size), or with iperf3 for a file transfer";

impl Iperf3ClientOptions {
    /// What netsweep does instead of the iperf3 options it accepts without acting on them,
    /// one note each, said at the start of the test.
    pub fn accepted_notes(&self, udp: bool) -> Vec<String> {
        let mut notes = Vec::new();
        if self.gsro {
            notes.push(if udp {
                "--gsro: accepted; netsweep's UDP senders and receivers use GSO/GRO already \
                 (--no-udp-offload turns them off)"
            } else {
                "--gsro: accepted and ignored: it applies to UDP tests (-u)"
            });
        }
        if self.dont_fragment && !udp {
            // As iperf3, which sets DF on IPv4 UDP sockets only and runs the TCP test.
            notes.push(
                "--dont-fragment: accepted and ignored: it applies to UDP tests (-u); TCP sends \
                 with Don't Fragment set already (path MTU discovery)",
            );
        }
        if self.pacing_timer.is_some() {
            notes.push(
                "--pacing-timer: accepted and ignored: netsweep's pacer times each send itself",
            );
        }
        if self.no_fq_socket_pacing {
            notes.push(
                "--no-fq-socket-pacing: accepted (deprecated in iperf3): netsweep paces in its \
                 own threads, and in the kernel only with --fq-rate",
            );
        }
        notes.into_iter().map(String::from).collect()
    }

    /// Why the test cannot run as asked: an option netsweep's client does not implement.
    pub fn refusal(&self) -> Option<String> {
        if self.sctp || self.nstreams.is_some() || self.xbind.is_some() {
            return Some(SCTP_REFUSAL.to_string());
        }
        self.file.as_ref().map(|_| FILE_REFUSAL.to_string())
    }

    /// The flow label asked for with `-L`, parsed and checked as iperf3 checks it, against the
    /// server's address.
    pub fn flowlabel_for(&self, server: std::net::SocketAddr) -> anyhow::Result<Option<u32>> {
        let Some(text) = &self.flowlabel else {
            return Ok(None);
        };
        let label = crate::traffic::spec::parse_flowlabel(text)
            .map_err(|e| anyhow::anyhow!("-L/--flowlabel {text}: {e}"))?;
        if !server.is_ipv6() {
            bail!(crate::traffic::client::socket::flowlabel_needs_ipv6(
                server.ip()
            ));
        }
        Ok(Some(label))
    }

    /// The type-of-service byte asked for with `-S` or `--dscp`, parsed as iperf3 does.
    pub fn tos_byte(&self) -> anyhow::Result<Option<u8>> {
        if let Some(t) = &self.tos {
            return crate::traffic::spec::parse_tos(t)
                .map(Some)
                .map_err(|e| anyhow::anyhow!("-S/--tos {t}: {e}"));
        }
        self.dscp
            .as_deref()
            .map(|d| {
                crate::traffic::spec::parse_dscp(d).map_err(|e| anyhow::anyhow!("--dscp {d}: {e}"))
            })
            .transpose()
    }
}

/// Whether a test that names neither `--skip-rx-copy` nor `--rx-copy` receives without the copy.
///
/// netsweep's own TCP and UDP throughput tests measure the network and the stack, not the receiving
/// program's memory copy: on the project's 2-core EPYC VM the copy held one stream to 0.76x and
/// two streams to 0.51x of what the same receivers carry without it (docs/performance.md,
/// "Against the newest iperf3 again"), and ESnet's guidance for fast hosts is iperf3's
/// `--skip-rx-copy`. UDP receivers still read coalesced batches, counted from each one's first
/// header (`engine::udp`): 1.4-2.3x the copying ones on loopback here, unlimited, lossless where
/// those lost 19-25%. iperf3's command line keeps iperf3's default (the copy), so a drop-in
/// measures what iperf3 measures; request/response tests read every byte of each message.
/// An iperf3 server named with `--iperf3` is not asked either: before 3.19 it copies, and it
/// never says which it did. Nor where this host's TCP cannot drop data unread (FreeBSD).
fn default_skips_rx_copy(a: &ClientArgs) -> bool {
    !a.rx_copy
        && !a.iperf3_cli
        && !a.iperf3
        && a.test_kind.is_none()
        && crate::platform::sockopt::RECV_TRUNC_DISCARDS
}

impl TryFrom<&ClientArgs> for (ClientConfig, TestSpec) {
    type Error = anyhow::Error;

    fn try_from(a: &ClientArgs) -> anyhow::Result<(ClientConfig, TestSpec)> {
        if let Some(why) = a.ip.refusal() {
            bail!("{why}");
        }
        // iperf3's `-l 0` is its default block (iperf_api.c: a blksize of 0 takes the
        // protocol's default), so `-l 0` here is netsweep's default, as if not given.
        let without_length;
        let a = match a.length.as_deref().map(str::parse::<Bytes>) {
            Some(Ok(Bytes(0))) => {
                without_length = ClientArgs {
                    length: None,
                    ..a.clone()
                };
                &without_length
            }
            _ => a,
        };
        let count = match (&a.bytes, &a.blockcount) {
            (Some(n), _) => Some(Count::Bytes(n.parse::<Bytes>().context("-n/--bytes")?.0)),
            (None, Some(k)) => Some(Count::Blocks(
                k.parse::<Bytes>().context("-k/--blockcount")?.0,
            )),
            (None, None) => None,
        };
        // As far as iperf3 lets a test run: the grid of a test that a count or an interrupt
        // ends.
        let longest = std::time::Duration::from_secs(crate::traffic::iperf3::wire::MAX_TIME_S);
        let (duration, steady) = match (&a.time, count) {
            (None, Some(_)) => (longest, None),
            (t, _) => crate::traffic::steady::parse_duration(t.as_deref().unwrap_or("10"))
                .map_err(|e| anyhow::anyhow!("-t/--time: {e}"))?,
        };
        // iperf3's -t 0: until interrupted (Ctrl-C), which then ends the test as its time would.
        let until_stopped = duration.is_zero() && steady.is_none();
        let duration = if until_stopped { longest } else { duration };
        let mut spec = if a.udp {
            TestSpec::udp(duration)
        } else {
            TestSpec::tcp(duration)
        };
        spec.steady = steady;
        spec.count = count;
        spec.until_stopped = until_stopped;
        spec.interval = parse_duration(&a.interval).context("-i/--interval")?;
        if a.iperf3_cli {
            // iperf3's bounds, as its server's (3.12 and 3.21 refuse -i 0.05).
            super::server::iperf3_interval(&a.interval)?;
        }
        if spec.interval.is_zero() {
            // iperf3's -i 0: no reports while the test runs, one interval over the whole test
            // (iperf3 3.21's text and JSON hold exactly that one).
            if spec.steady.is_some() {
                bail!("-i 0 with -t auto: the steady end is judged on the intervals; give -i");
            }
            if spec.until_stopped {
                bail!("-i 0 with -t 0: Ctrl-C ends the test at the end of an interval; give -i");
            }
            spec.interval = spec.duration;
            spec.whole_test_interval = true;
        }
        spec.omit = parse_duration(&a.omit).context("-O/--omit")?;
        // iperf3's bounds, said before connecting in its words (servers refuse past them).
        use crate::traffic::iperf3::wire::{MAX_STREAMS, MAX_TIME_S, MAX_WINDOW_BYTES};
        if a.parallel == 0 || a.parallel > MAX_STREAMS {
            bail!(
                "-P {}: invalid number of parallel streams (min = 1, max = {MAX_STREAMS})",
                a.parallel
            );
        }
        if spec.steady.is_none() && spec.duration.as_secs_f64() > MAX_TIME_S as f64 {
            bail!("-t/--time: test duration valid values are 0 to {MAX_TIME_S} seconds");
        }
        if a.port == Some(0) {
            bail!("-p 0: port number must be between 1 and 65535 inclusive");
        }
        spec.streams = a.parallel;
        spec.direction = match (a.reverse, a.bidir) {
            (true, _) => Direction::Reverse,
            (_, true) => Direction::Bidir,
            _ => Direction::Forward,
        };
        spec.window_bytes = match a.window.as_deref() {
            Some(w) => crate::traffic::spec::parse_window(w).context("-w/--window")?,
            None => None,
        };
        if spec.window_bytes.is_some_and(|w| w > MAX_WINDOW_BYTES) {
            bail!("-w/--window: socket buffer size too large (maximum = {MAX_WINDOW_BYTES} bytes)");
        }
        if let Some(m) = &a.window_mode {
            spec.window_mode = m
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--window-mode: {e}"))?;
        }
        spec.mss_bytes = a.mss;
        spec.congestion = a.congestion.clone();
        if let Some(l) = &a.length {
            let b = l.parse::<Bytes>().context("-l/--length")?.0;
            spec.length_bytes =
                u32::try_from(b).map_err(|_| anyhow::anyhow!("-l/--length {l} is too large"))?;
        }
        if spec.protocol == Protocol::Udp && a.length.is_none() {
            spec.length_bytes = UDP_DEFAULT_LENGTH;
        }
        rates::apply_block_length(a, &mut spec);
        spec.udp_offload = !a.no_udp_offload;
        let asked = if a.no_zerocopy {
            Some(false)
        } else {
            a.zerocopy_flag.then_some(true)
        };
        spec.zerocopy = crate::traffic::spec::zerocopy_asked(a.length.is_some(), asked);
        spec.tos = a.ip.tos_byte()?;
        if let Some(r) = &a.ip.fq_rate {
            let bps = r.parse::<BitRate>().context("--fq-rate")?.bits_per_second();
            // 0 means no cap, as iperf3's --fq-rate 0.
            spec.fq_rate_bps = (bps >= 1.0).then_some(bps.round() as u64);
        }
        spec.dont_fragment = a.ip.dont_fragment && a.udp;
        spec.skip_rx_copy = a.skip_rx_copy || default_skips_rx_copy(a);
        spec.no_delay = a.ip.no_delay;
        spec.repeating_payload = a.ip.repeating_payload;
        if let Some(v) = &a.ip.affinity {
            spec.affinity = affinity(v)?;
        }
        if a.ip.no_delay && spec.protocol == Protocol::Udp {
            bail!("-N/--no-delay applies to TCP only (UDP has no Nagle's algorithm)");
        }
        // A path or size the user names is used as named: no calibration (a rate needs none:
        // paced senders never calibrate).
        if a.length.is_some() || a.no_zerocopy {
            spec.calibration = std::time::Duration::ZERO;
        }
        let server = resolve(&a.host, a.port.unwrap_or(DEFAULT_PORT), a.ipv4, a.ipv6)?;
        let mut cfg = ClientConfig::new(server);
        cfg.cport = a.ip.cport.filter(|p| *p != 0);
        cfg.mptcp = a.ip.mptcp;
        if cfg.mptcp && spec.protocol == Protocol::Udp {
            bail!("-m/--mptcp applies to TCP only");
        }
        cfg.server_output = a.ip.get_server_output;
        if let Some(ms) = a.ip.connect_timeout {
            if ms == 0 {
                bail!("--connect-timeout 0: give the milliseconds to wait, e.g. 3000");
            }
            cfg.connect_timeout = std::time::Duration::from_millis(ms);
        }
        // As iperf3 (IERVRSONLYRCVTIMEOUT): a client that only sends receives no data to time.
        if a.ip.rcv_timeout.is_some() && spec.direction == Direction::Forward {
            bail!(
                "--rcv-timeout: client receive timeout is valid only in receiving mode \
                 (-R or --bidir), as iperf3's"
            );
        }
        cfg.rcv_timeout = rates::rcv_timeout(a.ip.rcv_timeout)?;
        cfg.liveness = rates::liveness(a.ip.cntl_ka.as_deref(), a.ip.snd_timeout)?;
        cfg.udp_counters_64bit = a.ip.udp_counters_64bit;
        cfg.flowlabel = a.ip.flowlabel_for(server)?;
        cfg.title.clone_from(&a.ip.title);
        cfg.extra_data.clone_from(&a.ip.extra_data);
        cfg.notes
            .extend(a.ip.accepted_notes(spec.protocol == Protocol::Udp));
        cfg.iperf3_blocks = a.length.is_none() && spec.protocol == Protocol::Tcp;
        cfg.udp_path_datagrams = a.length.is_none() && spec.protocol == Protocol::Udp;
        if a.zerocopy_flag {
            cfg.far_zerocopy = true;
            cfg.notes.push(
                if spec.protocol == Protocol::Udp {
                    "-Z: accepted and ignored: it chooses TCP's sendfile(2), and UDP sends \
                     datagrams"
                } else if a.length.is_some() && !a.no_zerocopy {
                    "-Z: the senders use sendfile(2) in calls of -l, as iperf3 -Z; an iperf3 \
                     server that sends (-R, --bidir) is asked to use sendfile(2) too"
                } else {
                    "-Z: accepted; netsweep calibrates its send path and uses zero-copy \
                     sendfile(2) where it is the fastest here (-l N -Z fixes sendfile of N, \
                     --no-zerocopy or -l alone write(2)); an iperf3 server that sends (-R, \
                     --bidir) is asked to use sendfile(2), as by iperf3 -Z"
                }
                .into(),
            );
        }
        if a.rrul {
            spec.direction = Direction::Bidir;
            if a.parallel == 1 {
                spec.streams = RRUL_STREAMS;
            }
        }
        // Once the stream count is final: -b is per stream.
        cfg.notes.extend(rates::apply_rate(a, &mut spec)?);
        if a.latency || a.rrul || a.probe_rate.is_some() || a.latency_idle.is_some() {
            let mut l = LatencySpec::default();
            if let Some(r) = a.probe_rate {
                l.probe_rate_hz = r;
            }
            if let Some(i) = &a.latency_idle {
                l.idle = parse_duration(i).context("--latency-idle")?;
            }
            if a.iperf3 || a.auth.username.is_some() {
                bail!("--latency needs a netsweep server: iperf3 servers do not echo its probes");
            }
            spec.latency = Some(l);
        }
        if let Some(j) = &a.spec_json {
            spec = serde_json::from_str(j).context("--spec-json is not a netsweep test")?;
        }
        spec.validate()?;
        // iperf3's authentication exists in iperf3's protocol only: --username speaks it.
        cfg.auth = a.auth.load(a.iperf3_cli)?.map(std::sync::Arc::new);
        // A count or -t 0 runs with iperf3's protocol, whose client ends the test when it
        // wants (netsweep's own protocol shares a grid fixed in advance); netsweep servers
        // speak it.
        let client_ends = spec.count.is_some() || spec.until_stopped;
        cfg.peer = if a.iperf3 || cfg.auth.is_some() || client_ends {
            let adapted = crate::traffic::iperf3::client::adapt(&spec);
            crate::traffic::iperf3::client::params_for(&adapted).map_err(|e| {
                let flag = if a.iperf3 {
                    "--iperf3"
                } else if spec.count.is_some() {
                    "-n/-k (iperf3's protocol)"
                } else if spec.until_stopped {
                    "-t 0 (iperf3's protocol)"
                } else {
                    "--username"
                };
                anyhow::anyhow!("{flag}: {e}")
            })?;
            PeerProtocol::Iperf3
        } else if a.port == Some(IPERF3_PORT) {
            PeerProtocol::Detect
        } else {
            PeerProtocol::Netsweep
        };
        // Without -p, --iperf3 too: a netsweep server serves iperf3's protocol on 5310, and where
        // nothing listens there `iperf3 -s` may on 5201.
        cfg.port_fallback = a.port.is_none().then_some(IPERF3_PORT);
        cfg.bind = match (&a.bind, &a.ip.bind_dev) {
            (_, Some(dev)) => Some(Bind::Device(dev.clone())),
            (Some(b), None) => Some(match b.parse::<IpAddr>() {
                Ok(ip) => Bind::Address(ip),
                Err(_) => Bind::Device(b.to_string()),
            }),
            (None, None) => None,
        };
        if let Some(Bind::Address(ip)) = &cfg.bind
            && ip.is_ipv4() != server.is_ipv4()
        {
            return Err(crate::traffic::address::AddressError(format!(
                "-B {ip} and server {server} are of different address families"
            ))
            .into());
        }
        cfg.path = a.path.facts()?;
        Ok((cfg, spec))
    }
}

/// The client's `-A`, its own CPUs checked against the ones this process may use.
fn affinity(v: &str) -> anyhow::Result<crate::traffic::affinity::Affinity> {
    let a = crate::traffic::affinity::Affinity::parse_client(v)
        .map_err(|e| anyhow::anyhow!("-A/--affinity: {e}"))?;
    if let Some(why) = a.client.and_then(crate::traffic::session::unusable_cpus) {
        bail!("-A/--affinity {v}: {why}");
    }
    Ok(a)
}
