//! Command-line syntax (clap) and its conversion, once, into validated configurations
//! (`TryFrom`). No other module sees clap types.

use clap::{Args, Parser, Subcommand};

mod auth;
mod client;
mod commands;
mod lab;
pub mod path;
mod rates;
mod rr;
mod server;

pub use auth::{ClientAuthArgs, ServerAuthArgs};
pub use client::{ClientArgs, FILE_REFUSAL, Iperf3ClientOptions, SCTP_REFUSAL};
pub use server::{ServerArgs, ServerConfig, ServerOutput};

pub use commands::{
    CompareArgs, DoctorArgs, ExplainArgs, ExportArgs, ImportArgs, MigrateArgs, More, PlotArgs,
    ReportArgs, RunArgs, TuneCommand, TuneCommon,
};
pub use lab::{LabCommand, PathArgs, VmArgs};

/// `netsweep export --format`: one exporter each (`app::export`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

/// `netsweep report --format`: HTML with charts, or Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Html,
    Md,
}

#[derive(Debug, Parser)]
#[command(
    name = "netsweep",
    version,
    about = "Measure, tune and explain network throughput",
    after_help = "Examples:
  netsweep server                                  # on one host
  netsweep client HOST -t 10 -P 2 --json           # on the other
  netsweep -s  /  netsweep -c HOST -t 10 -P 2 -J   # iperf3's command line, iperf3's output
  sudo netsweep lab test --rate 1G --rtt 20ms -- -w 256K
  netsweep run examples/quickstart.toml            # a campaign, its summary and HTML report
  netsweep stats before.txt after.txt              # did the change make a difference?
  netsweep doctor --peer HOST                      # what limits throughput here

`netsweep help COMMAND` shows each command's options and examples."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve tests until stopped (Ctrl-C).
    // An option given twice: the last one counts, as with iperf3's getopt (wrappers add
    // defaults before the user's own).
    #[command(
        args_override_self = true,
        after_help = "Examples:\n  netsweep server\n  netsweep server --bind 198.18.0.2 --max-tests 1 --max-rate 1G\n  netsweep server --iperf3          # iperf3 clients find it on 5201 too\n  netsweep -s                       # iperf3's spelling: each test on stdout as iperf3 -s\n  netsweep -s -J > tests.json       # a JSON document per test, as iperf3 -s -J\n  netsweep -s -i 0.5                # iperf3 clients' tests reported every 0.5 s"
    )]
    Server(ServerArgs),
    /// Run one test against a `netsweep server` (or an iperf3 server: --iperf3).
    #[command(
        args_override_self = true,
        after_help = "Examples:\n  netsweep client 127.0.0.1 -t 10\n  netsweep client 198.18.0.2 -P 4 -w 1M -C cubic --json\n  netsweep client ::1 -6 -u -b 1G -l 1400\n  netsweep client host -R -O 2 -t 30\n  netsweep client host -n 1G -P 4              # until 1 GiB is sent (-k: blocks)\n  netsweep client nas.example --iperf3 -P 4     # against an iperf3 server\n  netsweep client 198.18.0.2 --latency -t 30    # latency under load: idle and loaded RTT\n  netsweep client 198.18.0.2 --rrul -t 30       # TCP both ways, 4 streams each, plus the probe\n  netsweep client 127.0.0.1 --test rr -t 5       # transactions/s and latency percentiles\n  netsweep client 127.0.0.1 --test rr --spin 1ms # both ends poll: no wake-up per transaction\n  netsweep client 127.0.0.1 --test crr -P 4      # new TCP connection per transaction\n  netsweep client 127.0.0.1 -u --test rr -r 100,10000 --transactions 10000"
    )]
    Client(Box<ClientArgs>),
    /// ministat-compatible statistics of number files, with Welch, Mann-Whitney and a verdict.
    #[command(
        after_help = "Input: one number per line (or column -C of delimited lines), # comments.\nThe first file is the baseline.\n\nExamples:\n  netsweep stats e1000.txt vtnet.txt\n  netsweep stats -c 99 -C 2 -d , before.csv after.csv\n  netsweep stats --json a b c"
    )]
    Stats(StatsArgs),
    /// Run a campaign plan: sweep, repeat in interleaved order, store every run in SQLite.
    #[command(
        after_help = "Examples:\n  netsweep run examples/quickstart.toml\n  netsweep run plan.toml --db results.db\n  netsweep run plan.toml --resume        # after Ctrl-C or a crash\n  netsweep run examples/bufferbloat.toml # queue size against latency under load (root)"
    )]
    Run(RunArgs),
    /// Compare stored runs: one dimension's values within each combination of the others.
    #[command(
        after_help = "Examples:\n  netsweep compare --db netsweep.db --by congestion\n  netsweep compare --db netsweep.db --by window --where parallel=1 --metric retransmits"
    )]
    Compare(CompareArgs),
    /// Say what matters in a campaign, by how much, and why: effects ranked, each
    /// configuration against its ceilings, what cannot matter by construction.
    #[command(
        after_help = "Examples:\n  netsweep explain --db netsweep.db\n  netsweep explain --db wan.db --campaign 2 --metric retransmits\n  netsweep explain --db wan.db --rate 1G --json\n  netsweep explain --db bufferbloat.db --metric added_latency_ms"
    )]
    Explain(ExplainArgs),
    /// Print one row per stored run (CSV or JSON).
    Export(ExportArgs),
    /// Read iperf3 -J result files (or netsweep's own --json) into a campaign, to compare old results with new ones.
    #[command(
        after_help = "Example:\n  netsweep import --db old.db --set nic=e1000 e1000-*.json\n  netsweep import --db old.db --campaign 1 --set nic=virtio virtio-*.json\n  netsweep client 198.18.0.2 -t 10 --json > run1.json && netsweep import --db mine.db --set sysctl=after run1.json"
    )]
    Import(ImportArgs),
    /// Upgrade a results database to this netsweep's schema (read commands never do).
    #[command(after_help = "Example:\n  netsweep migrate --db old.db")]
    Migrate(MigrateArgs),
    /// Write a self-contained HTML report (or Markdown with SVG files) of a campaign.
    #[command(
        after_help = "Examples:\n  netsweep report --db netsweep.db\n  netsweep report --db netsweep.db --campaign 3 -o wan.html\n  netsweep report --db netsweep.db --format md -o wan.md"
    )]
    Report(ReportArgs),
    /// Draw one test over time: rate per stream and in total, retransmits, RTT, cwnd and
    /// latency under load, from netsweep's or iperf3's JSON, as HTML or SVG.
    #[command(
        after_help = "Examples:\n  netsweep client 127.0.0.1 -t 10 -P 2 --json > test.json && netsweep plot test.json -o test.html\n  iperf3 -c 127.0.0.1 -J > iperf3.json && netsweep plot iperf3.json -o iperf3.svg\n  netsweep plot stream.jsonl                # iperf3 --json-stream lines: stream.html\n  netsweep plot --db netsweep.db --run 12 -o run-12.html"
    )]
    Plot(PlotArgs),
    /// Explain what limits throughput on this host and path, and how to fix it.
    #[command(
        after_help = "Examples:\n  netsweep doctor\n  netsweep doctor --peer 198.18.0.2 --rate 10G\n  netsweep doctor --watch 10 --json\n  netsweep doctor --rate 100G --json   # the 100G host checklist (host100g.*) judged at 100 Gbit/s\n  virsh dumpxml vm1 | netsweep doctor --libvirt-xml -\n  netsweep doctor --root /path/to/fixture   # proc/ and sys/ of another host\n  netsweep doctor --root ./bsd --rate 1G --rtt 20ms   # a FreeBSD host's saved sysctl/netstat/ifconfig outputs\n\nExit status: 0 when no finding is a problem (warnings and notes included), 2 when one is, 1 when the host could not be diagnosed."
    )]
    Doctor(DoctorArgs),
    /// RFC 6349's TCP throughput test against a `netsweep server`: path MTU, baseline RTT,
    /// bottleneck bandwidth, the BDP, then TCP tests with windows sized from it, each with the
    /// transfer time ratio, TCP efficiency and buffer delay.
    #[command(
        after_help = "Examples:\n  netsweep rfc6349 198.18.0.2 --path-rate 1G\n  netsweep rfc6349 198.18.0.2 --path-rate 1G --baseline-rtt 20ms -t 5 --json\n  netsweep rfc6349 host --windows 50%,100%,150%,4M --pass 90%\n  netsweep lab exec wan a -- netsweep rfc6349 198.18.0.2 --path-rate 1G --framing ip"
    )]
    Rfc6349(Box<path::Rfc6349Args>),
    /// Sysctl tuning profiles on a host, namespace, lab host or ssh target, always restored.
    #[command(subcommand)]
    Tune(TuneCommand),
    /// A two-host network on this machine (root): namespaces, rate, delay, jitter, loss.
    #[command(subcommand)]
    Lab(LabCommand),
    /// One method of the perfSONAR pScheduler tool plugin (JSON on standard input and output).
    #[command(
        after_help = "pScheduler calls these through contrib/pscheduler/netsweep/; by hand:\n  netsweep pscheduler enumerate\n  echo '{\"type\": \"throughput\", \"spec\": {\"schema\": 1, \"dest\": \"host\"}}' | netsweep pscheduler can-run"
    )]
    Pscheduler {
        #[arg(value_enum)]
        method: PschedulerMethod,
    },
}

/// The methods of a pScheduler tool plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PschedulerMethod {
    Enumerate,
    CanRun,
    Duration,
    ParticipantData,
    Run,
    MergedResults,
}

/// iperf3's `--timestamps[=FORMAT]`, in both roles.
#[derive(Debug, Args, Clone, Default)]
pub struct Timestamps {
    /// Start every line of output (a server's: every message) with the local time in
    /// strftime(3)'s FORMAT (default "%c ", the locale's date and time), as iperf3's
    /// --timestamps.
    #[arg(
        id = "timestamps",
        long = "timestamps",
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "%c "
    )]
    pub format: Option<String>,
}

/// Parses repeated `KEY=VALUE` options.
pub fn pairs(items: &[String], flag: &str) -> anyhow::Result<Vec<(String, String)>> {
    key_values(items, flag)
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Files of numbers (- for standard input; none reads standard input).
    pub files: Vec<String>,
    /// Column to read (1-based).
    #[arg(short = 'C', long, default_value_t = 1)]
    pub column: usize,
    /// Field delimiter characters.
    #[arg(short = 'd', long, default_value = " \t")]
    pub delimiters: String,
    /// Confidence level in percent (any value, e.g. 90, 95, 99.5, or 99.5%).
    #[arg(short = 'c', long, default_value = "95", value_parser = parse_confidence)]
    pub confidence: f64,
    /// Plot width in characters.
    #[arg(short = 'w', long, default_value_t = 74)]
    pub width: usize,
    /// Average/median/stddev bars on separate lines.
    #[arg(short = 's')]
    pub separate: bool,
    /// No plot, no comparisons: the table only.
    #[arg(short = 'n')]
    pub no_plot: bool,
    /// Statistics and comparisons without the plot (ministat's -A).
    #[arg(short = 'A')]
    pub no_graph: bool,
    /// Relative change the "runs needed" estimate is for.
    #[arg(long, default_value = "5%")]
    pub change: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `-c 99.5` or `-c 99.5%` (stats, compare and explain alike).
pub(crate) fn parse_confidence(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .map_err(|_| format!("{s:?} is not a confidence level in percent (e.g. 95 or 99.5%)"))
}

pub(crate) fn key_values(items: &[String], flag: &str) -> anyhow::Result<Vec<(String, String)>> {
    items
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| anyhow::anyhow!("{flag} {kv:?}: expected KEY=VALUE"))
        })
        .collect()
}

/// iperf3's words for an option of the other role on iperf3's command line (`netsweep -c HOST
/// -D`, `netsweep -s -t 5`), where clap would say "unexpected argument" and suggest `-- -D`,
/// which fails the same way: "some option you are trying to set is server only" (iperf3's
/// IESERVERONLY, IECLIENTONLY). `None` for any other parse error, which clap reports.
/// Two options iperf3 refuses together, in iperf3's words (`iperf_parse_arguments`):
/// reverse with bidirectional, and more than one of the test's ends (`-t`, `-n`, `-k`).
fn iperf3_conflict(e: &clap::Error) -> Option<String> {
    let has = conflicting(e);
    if has("--reverse") && has("--bidir") {
        return Some("parameter error - cannot be both reverse and bidirectional".into());
    }
    let ends = ["--time", "--bytes", "--blockcount"];
    (ends.iter().filter(|l| has(l)).count() >= 2).then(|| {
        "parameter error - only one test end condition (-t, -n, -k) may be specified".into()
    })
}

/// Whether a clap conflict error names the option `long` ("--time") on either side.
fn conflicting(e: &clap::Error) -> impl Fn(&str) -> bool {
    use clap::error::{ContextKind, ContextValue};
    let mut names = Vec::new();
    for kind in [ContextKind::InvalidArg, ContextKind::PriorArg] {
        match e.get(kind) {
            Some(ContextValue::String(s)) => names.push(s.clone()),
            Some(ContextValue::Strings(v)) => names.extend(v.iter().cloned()),
            _ => {}
        }
    }
    move |long: &str| {
        names
            .iter()
            .any(|n| n.split([' ', '=']).next() == Some(long))
    }
}

/// A request/response test given a throughput test's count beside `-t` (`--test rr -t 1 -n
/// 10`): clap's "'--time' cannot be used with '--bytes'" said nothing of what to use; this says
/// what the same count says without `-t`.
pub fn rr_count_conflict(argv: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    if e.kind() != clap::error::ErrorKind::ArgumentConflict {
        return None;
    }
    let args: Vec<&str> = argv.iter().filter_map(|a| a.to_str()).collect();
    let mode = args.iter().enumerate().find_map(|(i, a)| match *a {
        "--test" => args.get(i + 1).copied(),
        _ => a.strip_prefix("--test="),
    })?;
    let has = conflicting(e);
    let flag = if has("--bytes") {
        "-n"
    } else if has("--blockcount") {
        "-k"
    } else {
        return None;
    };
    Some(format!(
        "--test {mode}: {flag} (use --transactions) does not apply to a request/response test"
    ))
}

pub fn iperf3_role_error(argv: &[std::ffi::OsString], e: &clap::Error) -> Option<String> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !argv.iter().any(|a| a == "--iperf3-cli") {
        return None;
    }
    if e.kind() == ErrorKind::ArgumentConflict {
        return iperf3_conflict(e);
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let (other, only, taker) = match argv.get(1).and_then(|a| a.to_str()) {
        Some("client") => ("server", "server", "netsweep -s"),
        Some("server") => ("client", "client", "netsweep -c HOST"),
        _ => return None,
    };
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let name = arg.split('=').next().unwrap_or(arg);
    let cli = Cli::command();
    let known =
        cli.find_subcommand(other)?
            .get_arguments()
            .any(|a| match name.strip_prefix("--") {
                Some(long) => a
                    .get_long_and_visible_aliases()
                    .is_some_and(|l| l.contains(&long)),
                None => {
                    let mut chars = name.chars().skip(1);
                    let short = chars.next();
                    chars.next().is_none()
                        && short.is_some_and(|c| {
                            a.get_short_and_visible_aliases()
                                .is_some_and(|s| s.contains(&c))
                        })
                }
            });
    known.then(|| {
        format!(
            "parameter error - some option you are trying to set is {only} only ({name}: \
             `{taker}` takes it)"
        )
    })
}

/// The name netsweep runs under, as iperf3 names itself in its messages: "iperf3" when it
/// stands in for iperf3 under that name (a link `iperf3` to netsweep), else "netsweep".
pub fn program_name(args: &[std::ffi::OsString]) -> &'static str {
    let named = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n.to_string_lossy().starts_with("iperf3"));
    if named { "iperf3" } else { "netsweep" }
}

/// iperf3's `-v` alone: the version as iperf3's first line gives it, which version probes read
/// (`iperf3 -v | awk '{print $2}'`; netsweep printed "netsweep 0.1.0"), the netsweep
/// behind it in parentheses, as `-J`'s `start.version` says it. `--version` stays netsweep's,
/// except under the name iperf3, where it is iperf3's `-v` too (pScheduler's iperf3 tool reads
/// `iperf3 --version` to choose the peers' login padding). Then iperf3's second and third
/// lines: the system, and the optional features this build has in iperf3's words, which
/// feature probes grep (`iperf3 -v | grep -q authentication`).
pub fn iperf3_version(args: &[std::ffi::OsString]) -> Option<String> {
    let asked = args.len() == 2
        && (args[1] == "-v" || (args[1] == "--version" && program_name(args) == "iperf3"));
    asked.then(|| {
        format!(
            "iperf {} (netsweep {}): iperf3's command line, JSON and protocol\n{}\n\
             Optional features available: {}\n\
             netsweep --version gives netsweep's own",
            crate::traffic::iperf3::json::SCHEMA_VERSION,
            env!("CARGO_PKG_VERSION"),
            crate::platform::system_info(),
            IPERF3_FEATURES.join(", ")
        )
    })
}

/// Under the name iperf3, `-h`/`--help` alone, or no arguments at all: iperf3's usage line and
/// every option of both roles (clap's help of `server` and `client`, whose flags are iperf3's),
/// so `iperf3 --help | grep -q -- --bidir` finds what this build has (it showed netsweep's
/// subcommands). The text, and whether it is the error of no arguments (iperf3 then says
/// "must either be a client (-c) or server (-s)" and exits 1).
pub fn iperf3_help(args: &[std::ffi::OsString]) -> Option<(String, bool)> {
    if program_name(args) != "iperf3" {
        return None;
    }
    let no_role = args.len() == 1;
    if !no_role && !(args.len() == 2 && (args[1] == "-h" || args[1] == "--help")) {
        return None;
    }
    use clap::CommandFactory;
    let mut cli = Cli::command();
    let mut role = |name: &str| {
        cli.find_subcommand_mut(name)
            .map(|c| c.render_long_help().to_string())
            .unwrap_or_default()
    };
    let (server, client) = (role("server"), role("client"));
    let text = format!(
        "Usage: iperf3 [-s|-c host] [options]\n       iperf3 [-h|--help] [-v|--version]\n\n\
         Server (iperf3 -s [options]):\n{server}\n\
         Client (iperf3 -c host [options]):\n{client}\n\
         This is netsweep under iperf3's name: iperf3's options, protocol and JSON \
         (netsweep --help for its own commands)."
    );
    Some((text, no_role))
}

/// The optional features of iperf3's `-v` this build has (iperf3's names; no SCTP).
const IPERF3_FEATURES: &[&str] = &[
    "CPU affinity setting",
    #[cfg(target_os = "linux")]
    "IPv6 flow label",
    "TCP congestion algorithm",
    "sendfile / zerocopy",
    "socket pacing",
    "authentication",
    #[cfg(target_os = "linux")]
    "bind to device",
    "support IPv4 don't fragment",
    "POSIX threads",
];

/// Rewrites iperf3's command lines into netsweep's: `netsweep -s ...` is `netsweep server
/// --iperf3-cli ...` and `netsweep -c HOST ...` is `netsweep client HOST --iperf3-cli ...` (`-c HOST` may
/// stand anywhere; `--iperf3-cli` makes `-J` print iperf3's document); `netsweep -v` is
/// `netsweep --version`.
pub fn iperf3_argv(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let args = split_client_value(split_server_cluster(args));
    let Some((prog, rest)) = args.split_first() else {
        return args;
    };
    let first = rest.first().and_then(|a| a.to_str());
    // iperf3's -v: the version.
    if rest.len() == 1 && first == Some("-v") {
        return vec![prog.clone(), "--version".into()];
    }
    // Only when no subcommand comes first: `netsweep -c HOST -t 5`, `netsweep -t 5 -c HOST`,
    // `netsweep --use-pkcs1-padding -s -1` (pScheduler's iperf3 tool puts that flag first).
    let starts_with_flag = first.is_some_and(|a| a.starts_with('-'));
    if let Some(i) = rest
        .iter()
        .position(|a| a == "-s" || a == "--server")
        .filter(|_| starts_with_flag)
        .filter(|i| !rest[..*i].iter().any(|a| a == "-c" || a == "--client"))
    {
        let mut out = vec![prog.clone(), "server".into(), "--iperf3-cli".into()];
        out.extend(rest[..i].iter().cloned());
        out.extend(rest[i + 1..].iter().cloned());
        return out;
    }
    if let Some(i) = rest
        .iter()
        .position(|a| a == "-c" || a == "--client")
        .filter(|_| starts_with_flag)
    {
        let mut out = vec![prog.clone(), "client".into()];
        // `-c` last, without its host: the client's parser says the host is missing.
        out.extend(rest.get(i + 1).cloned());
        out.push("--iperf3-cli".into());
        out.extend(rest[..i].iter().cloned());
        out.extend(rest.iter().skip(i + 2).cloned());
        return out;
    }
    args
}

/// iperf3's `-cHOST` and `--client=HOST` (getopt's forms of an option's value) become `-c HOST`,
/// on an iperf3 command line only (its first word a flag, not a subcommand).
fn split_client_value(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let iperf3_line = args
        .get(1)
        .and_then(|a| a.to_str())
        .is_some_and(|a| a.starts_with('-'));
    if !iperf3_line {
        return args;
    }
    args.into_iter()
        .enumerate()
        .flat_map(|(i, a)| {
            let host = a.to_str().filter(|_| i > 0).and_then(|t| {
                t.strip_prefix("--client=")
                    .or_else(|| t.strip_prefix("-c").filter(|h| !h.starts_with('-')))
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
            });
            match host {
                Some(h) => vec!["-c".into(), h.into()],
                None => vec![a],
            }
        })
        .collect()
}

/// iperf3's `-sD`, `-s1`, `-sDV`: the server flag clustered with a server's flags that take no
/// value becomes `-s` and the rest of the cluster.
fn split_server_cluster(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    args.into_iter()
        .enumerate()
        .flat_map(|(i, a)| {
            let cluster = a
                .to_str()
                .and_then(|t| t.strip_prefix("-s"))
                .filter(|rest| !rest.is_empty() && rest.chars().all(|c| "D1VdJ46".contains(c)))
                .map(|rest| vec!["-s".into(), format!("-{rest}").into()]);
            match cluster {
                Some(split) if i > 0 => split,
                _ => vec![a],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
