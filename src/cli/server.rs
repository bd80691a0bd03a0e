//! `netsweep server`'s options (iperf3's server options among them: `-1`, `--idle-timeout`,
//! `-J`, `-4`/`-6`, the login files) and their conversion into a validated `ServerConfig`,
//! which `app::serve` runs.

use super::ServerAuthArgs;
use super::rates;
use crate::traffic::iperf3::IPERF3_PORT;
use crate::traffic::protocol::DEFAULT_PORT;
use crate::traffic::spec::ServerLimits;
use crate::units::{BitRate, parse_duration};
use anyhow::{Context, bail};
use clap::Args;
use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on (default: all IPv6 and IPv4 addresses).
    #[arg(long, short = 'B')]
    pub bind: Option<IpAddr>,
    /// Port to listen on [default: 5310, netsweep's; iperf3's command line (`netsweep -s`)
    /// also listens on iperf3's 5201 unless -p is given, as `--iperf3` does]
    #[arg(long, short = 'p')]
    pub port: Option<u16>,
    /// Tests served at once; a client over the cap is told "busy" at once (default 4; 1 on
    /// iperf3's command line, `netsweep -s`, as iperf3 serves one test at a time).
    #[arg(long)]
    pub max_tests: Option<usize>,
    /// Longest test accepted (warm-up included).
    #[arg(long, default_value = "1h")]
    pub max_duration: String,
    /// iperf3's name for --max-duration, in seconds (0: iperf3's longest test, 24 h plus the
    /// warm-up); iperf3 ends a longer test when it passes the limit, netsweep refuses it at the
    /// start.
    #[arg(long, value_name = "SECONDS", conflicts_with = "max_duration")]
    pub server_max_duration: Option<u64>,
    /// Most streams per direction accepted.
    #[arg(long, default_value_t = 128)]
    pub max_streams: u16,
    /// Highest total rate accepted per direction, e.g. 1G; unlimited tests are refused when set.
    #[arg(long)]
    pub max_rate: Option<String>,
    /// Most interval reports one test may ask the server to keep (streams x intervals);
    /// e.g. `-t 1h -i 1 -P 50` needs 180,000.
    #[arg(long, default_value_t = crate::traffic::spec::DEFAULT_MAX_INTERVAL_RECORDS)]
    pub max_intervals: u64,
    /// Most connections that have not yet been admitted to a test (slow or idle clients are
    /// dropped beyond it).
    #[arg(long, default_value_t = crate::traffic::spec::DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// Also listen on iperf3's port 5201, so `iperf3 -c HOST` finds this server (iperf3
    /// clients are served on every port this server listens on).
    #[arg(long)]
    pub iperf3: bool,
    /// Also listen on this port for iperf3 clients (implies --iperf3).
    #[arg(long)]
    pub iperf3_port: Option<u16>,
    /// Serve one test, then exit (iperf3's -1; pScheduler's iperf3 tool starts `-s -1`).
    #[arg(short = '1', long)]
    pub one_off: bool,
    /// End a test when the streams this server receives bring nothing for this long, in
    /// milliseconds ("idle timeout for receiving data"; iperf3's default, 120000).
    #[arg(long, value_name = "MS")]
    pub rcv_timeout: Option<u64>,
    /// With -1: exit (status 0) when no client has been served for this many seconds, as
    /// iperf3's --idle-timeout; without -1 there is no state to reset, and it is accepted.
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<u64>,
    /// Print each test's JSON document on standard output as it ends (iperf3's -J on a
    /// server; with -1 the one test's): its figures, with the error if it failed.
    #[arg(long, short = 'J')]
    pub json: bool,
    /// Pin the data threads of every test to CPU N (iperf3's -A), or spread them over a range
    /// (0-3); a client's -A N,M picks the CPU for its own test.
    #[arg(short = 'A', long, value_name = "N")]
    pub affinity: Option<String>,
    /// (internal) Set when the command line was iperf3's (`netsweep -s ...`).
    #[arg(long, hide = true)]
    pub iperf3_cli: bool,
    /// IPv4 only: listen on 0.0.0.0 without -B (iperf3's -4 on a server).
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6: listen on :: without -B (iperf3's -6; -B with an IPv6 address).
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// Run in the background once listening (iperf3's -D): what the server says until then
    /// (or why it cannot start) is printed here, then its messages go to --logfile, or nowhere.
    #[arg(short = 'D', long)]
    pub daemon: bool,
    /// (internal) This process is -D's background server.
    #[arg(long, hide = true)]
    pub daemon_child: bool,
    /// Write the server's process ID to FILE while it runs, removed at exit (iperf3's -I); a
    /// FILE naming a running process is refused.
    #[arg(short = 'I', long, value_name = "FILE")]
    pub pidfile: Option<std::path::PathBuf>,
    /// Once listening, append the server's messages (and -J's document) to FILE (iperf3's
    /// --logfile); a symbolic link or anything but a regular file is refused.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<std::path::PathBuf>,
    /// Accepted for iperf3's sake: every message is written whole as it happens.
    #[arg(long)]
    pub forceflush: bool,
    #[command(flatten)]
    pub timestamps: super::Timestamps,
    /// The interval of an iperf3 client's tests, as iperf3's server (0.1 to 60 s; 0: one
    /// interval over the whole test); default 1 s. A netsweep client's tests follow its own -i.
    #[arg(short = 'i', long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub interval: Option<String>,
    /// The unit of each test's text on stdout, as iperf3's -f: k m g t (bits/sec) or
    /// K M G T (Bytes/sec).
    #[arg(short = 'f', long, value_name = "UNIT")]
    pub format: Option<String>,
    #[arg(short = 'V', long, short_alias = 'd', alias = "debug", hide = true)]
    pub verbose: bool,
    /// One test's total rate, all streams and both directions, as iperf3's: a test asking
    /// more is refused; one whose average over the last SECONDS (default 5) passes RATE is
    /// ended (iperf3's error 27), e.g. 10G or 10G/2.
    #[arg(long, value_name = "RATE[/SECONDS]")]
    pub server_bitrate_limit: Option<String>,
    /// Close a connection whose sent data stays unacknowledged for MS milliseconds
    /// (TCP_USER_TIMEOUT on every TCP connection accepted, as iperf3's; Linux only).
    #[arg(long, value_name = "MS")]
    pub snd_timeout: Option<u64>,
    /// TCP keepalive on control connections, as iperf3's: IDLE/INTERVAL/COUNT (seconds,
    /// seconds, probes), parts left out the system's (e.g. --cntl-ka=60/10/3).
    #[arg(
        long,
        value_name = "IDLE/INTV/CNT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub cntl_ka: Option<String>,
    /// iperf3 server options netsweep's server does not implement: refused by name.
    #[arg(long, hide = true, value_name = "DEV")]
    pub bind_dev: Option<String>,
    #[arg(short = 'm', long, hide = true)]
    pub mptcp: bool,
    #[arg(long, hide = true)]
    pub json_stream: bool,
    #[command(flatten)]
    pub auth: ServerAuthArgs,
}

/// How the server runs and where its messages go: iperf3's `-D`, `-I`, `--logfile` and
/// `--timestamps`.
#[derive(Debug, Clone, Default)]
pub struct ServerOutput {
    /// This process is `-D`'s background server: its messages go to `logfile` or nowhere once
    /// it listens.
    pub background: bool,
    pub pidfile: Option<std::path::PathBuf>,
    pub logfile: Option<std::path::PathBuf>,
    /// strftime(3) format of the time before each message.
    pub timestamps: Option<String>,
    /// Options accepted without acting on them, one note each, said at the start.
    pub notes: Vec<String>,
}

/// A validated server configuration.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// More ports on the same address (iperf3's, with `--iperf3`).
    pub extra_ports: Vec<u16>,
    /// iperf3's port, listened on when it is free (`netsweep -s` without `-p`): iperf3's
    /// clients find the server there as they find iperf3's, and a host where an iperf3 server
    /// already holds it keeps serving on netsweep's port.
    pub iperf3_port_if_free: Option<u16>,
    pub limits: ServerLimits,
    /// iperf3 authentication of the clients (`--rsa-private-key-path`).
    pub auth: Option<std::sync::Arc<crate::traffic::iperf3::login::ServerAuth>>,
    /// Exit after the first test ends, whatever its outcome (`-1`); a refused login does not
    /// count, as in iperf3.
    pub one_off: bool,
    /// With `one_off`: exit when no client has been served for this long (`--idle-timeout`).
    pub idle_timeout: Option<std::time::Duration>,
    /// Print each test's iperf3-style JSON document on stdout as it ends (`--json`).
    pub json: bool,
    /// iperf3's "Server listening on PORT" on standard output once listening (`-s` without
    /// `-J`), the line scripts wait for, and each test's text after it as iperf3's server.
    pub iperf3_banner: bool,
    /// Started as iperf3's `-s`: stopped by a signal, it says so in iperf3's words and exits
    /// 1, as iperf3 does (`netsweep server` exits 0).
    pub iperf3_cli: bool,
    /// The unit of the tests' text (`-f`).
    pub units: crate::units::RateFormat,
    pub output: ServerOutput,
}

impl TryFrom<&ServerArgs> for ServerConfig {
    type Error = anyhow::Error;

    fn try_from(a: &ServerArgs) -> anyhow::Result<ServerConfig> {
        let ip = match (a.bind, a.ipv4, a.ipv6) {
            (Some(ip), true, _) if !ip.is_ipv4() => {
                bail!("-B {ip} is not an IPv4 address, and -4 asks for IPv4: drop one of them")
            }
            (Some(ip), _, true) if !ip.is_ipv6() => {
                bail!("-B {ip} is not an IPv6 address, and -6 asks for IPv6: drop one of them")
            }
            (Some(ip), _, _) => ip,
            (None, true, _) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            (None, _, _) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        };
        // iperf3's server runs one test at a time and tells a second client it is busy: two
        // tests at once share the host and skew both, with nothing in either result to say so.
        let max_tests = a.max_tests.unwrap_or(if a.iperf3_cli { 1 } else { 4 });
        if max_tests == 0 {
            bail!("--max-tests must be at least 1");
        }
        if let Some(why) = refusal(a) {
            bail!("{why}");
        }
        let max_rate_bps = match &a.max_rate {
            Some(r) => r
                .parse::<BitRate>()
                .context("--max-rate")?
                .bits_per_second(),
            None => 0.0,
        };
        let bitrate_limit = a
            .server_bitrate_limit
            .as_deref()
            .map(|l| {
                l.parse()
                    .map_err(|e| anyhow::anyhow!("--server-bitrate-limit {l}: {e}"))
            })
            .transpose()?;
        let port = a.port.unwrap_or(DEFAULT_PORT);
        let extra_ports = match (a.iperf3, a.iperf3_port) {
            (_, Some(p)) => vec![p],
            (true, None) => vec![IPERF3_PORT],
            (false, None) => Vec::new(),
        }
        .into_iter()
        .filter(|p| *p != port)
        .collect::<Vec<u16>>();
        Ok(ServerConfig {
            listen: SocketAddr::new(ip, port),
            iperf3_port_if_free: (a.iperf3_cli && a.port.is_none() && extra_ports.is_empty())
                .then_some(IPERF3_PORT),
            extra_ports,
            auth: a.auth.load(a.iperf3_cli)?.map(std::sync::Arc::new),
            one_off: a.one_off,
            idle_timeout: match a.idle_timeout {
                Some(0) => bail!("--idle-timeout must be at least 1 second"),
                t => t.map(std::time::Duration::from_secs),
            },
            json: a.json,
            iperf3_banner: a.iperf3_cli && !a.json,
            iperf3_cli: a.iperf3_cli,
            units: match a.format.as_deref() {
                Some(f) => f.parse().context("-f/--format")?,
                None => crate::units::RateFormat::Auto,
            },
            output: ServerOutput {
                background: a.daemon_child,
                pidfile: a.pidfile.clone(),
                logfile: a.logfile.clone(),
                timestamps: a.timestamps.format.clone(),
                notes: accepted_notes(a),
            },
            limits: ServerLimits {
                max_tests,
                max_duration: match a.server_max_duration {
                    Some(0) => std::time::Duration::from_secs(
                        crate::traffic::iperf3::wire::MAX_TIME_S
                            + crate::traffic::iperf3::wire::MAX_OMIT_S,
                    ),
                    Some(s) => std::time::Duration::from_secs(s),
                    None => parse_duration(&a.max_duration).context("--max-duration")?,
                },
                max_streams: a.max_streams,
                max_rate_bps,
                max_interval_records: a.max_intervals,
                max_pending: a.max_pending.max(1),
                max_open_files: 0,
                rcv_timeout: rates::rcv_timeout(a.rcv_timeout)?,
                affinity: a.affinity.as_deref().map(server_affinity).transpose()?,
                bitrate_limit,
                liveness: rates::liveness(a.cntl_ka.as_deref(), a.snd_timeout)?,
                iperf3_interval: a
                    .interval
                    .as_deref()
                    .map(iperf3_interval)
                    .transpose()?
                    .unwrap_or(std::time::Duration::from_secs(1)),
            },
        })
    }
}

/// Why the server cannot run as asked: an iperf3 server option netsweep's does not implement.
fn refusal(a: &ServerArgs) -> Option<&'static str> {
    if a.bind_dev.is_some() {
        return Some(
            "--bind-dev: a netsweep server listens on an address (-B ADDRESS), not a device; \
             run with -B, or with iperf3",
        );
    }
    if a.mptcp {
        return Some(
            "-m/--mptcp: netsweep servers do not accept MPTCP connections; run iperf3 -s --mptcp",
        );
    }
    a.json_stream.then_some(
        "--json-stream: a netsweep server prints one JSON document per test with -J (its \
         clients stream theirs with --json-stream)",
    )
}

/// `-i` in iperf3's bounds and words, both roles: 0.1 to 60 seconds, or 0.
pub(super) fn iperf3_interval(v: &str) -> anyhow::Result<std::time::Duration> {
    parse_duration(v)
        .ok()
        .filter(|d| d.is_zero() || (0.1..=60.0).contains(&d.as_secs_f64()))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "-i/--interval {v}: invalid report interval (min = 0.1, max = 60 seconds, or 0)"
            )
        })
}

/// What the server does instead of the iperf3 options it accepts without acting on them.
fn accepted_notes(a: &ServerArgs) -> Vec<String> {
    let mut notes = Vec::new();
    if a.verbose {
        notes.push(
            "-V: accepted and ignored: this server writes each test's lines and summary as \
             iperf3's does without -V"
                .to_string(),
        );
    }
    notes
}

/// The server's `-A`: CPUs this process may use.
fn server_affinity(v: &str) -> anyhow::Result<crate::traffic::affinity::Cpus> {
    if v.contains(',') {
        bail!(
            "-A/--affinity {v}: a server takes its own CPUs (N or a range N-M); N,M is the client's"
        );
    }
    let cpus = crate::traffic::affinity::Cpus::parse(v)
        .map_err(|e| anyhow::anyhow!("-A/--affinity: {e}"))?;
    if let Some(why) = crate::traffic::session::unusable_cpus(cpus) {
        bail!("-A/--affinity {v}: {why}");
    }
    Ok(cpus)
}
