//! Argument structs of `run`, `compare`, `report`, `plot`, `export`, `import`, `tune` and
//! `doctor`.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (TOML).
    pub plan: std::path::PathBuf,
    /// Results database (default: netsweep.db beside the plan).
    #[arg(long)]
    pub db: Option<std::path::PathBuf>,
    /// Continue the unfinished campaign of this plan without repeating finished runs.
    #[arg(long, conflicts_with = "new")]
    pub resume: bool,
    /// Start a new campaign even if an unfinished one of this plan exists.
    #[arg(long)]
    pub new: bool,
    /// Check the plan and the target, then stop before any traffic.
    #[arg(long)]
    pub check: bool,
    /// Add N interleaved rounds to the finished campaign of this plan (its seed and
    /// configurations kept), when the answer is not clear yet; `auto` adds the rounds the
    /// answer says would settle its undecided comparisons.
    #[arg(long, value_name = "N|auto", conflicts_with_all = ["new", "resume"], value_parser = parse_more)]
    pub more: Option<More>,
}

/// `run --more`: a number of rounds, or as many as the answer needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum More {
    Rounds(u32),
    Auto,
}

fn parse_more(text: &str) -> Result<More, String> {
    if text.eq_ignore_ascii_case("auto") {
        return Ok(More::Auto);
    }
    text.parse()
        .map(More::Rounds)
        .map_err(|_| format!("{text:?} is not a number of rounds or auto"))
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
    /// Campaign id (default: the newest).
    #[arg(long)]
    pub campaign: Option<i64>,
    /// Dimension whose values are compared (default: the last one of the plan).
    #[arg(long)]
    pub by: Option<String>,
    /// Only runs with DIM=VALUE (repeatable).
    #[arg(long = "where")]
    pub filters: Vec<String>,
    /// bits_per_second (default), retransmits, lost_percent, jitter_ms, cpu_local_percent,
    /// cpu_remote_percent; with latency probes loaded_p50_ms, loaded_p99_ms, added_latency_ms;
    /// RFC 6349's transfer_time_ratio, tcp_efficiency_percent, buffer_delay_percent; of
    /// request/response tests (`test = "rr"`) transactions (per second), latency_p99 (µs).
    #[arg(long, default_value = "bits_per_second")]
    pub metric: String,
    /// Confidence level in percent (e.g. 95, 99.5 or 99.5%).
    #[arg(short = 'c', long, default_value = "95", value_parser = crate::cli::parse_confidence)]
    pub confidence: f64,
    /// Keep runs far outside their configuration's siblings (set aside and named by default).
    #[arg(long)]
    pub keep_outliers: bool,
    /// The smallest change that matters, e.g. 5% (default: the plan's [answer] change, or 5%).
    #[arg(long)]
    pub change: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
    /// Campaign id (default: the newest).
    #[arg(long)]
    pub campaign: Option<i64>,
    /// goodput (default), retransmits, loss, jitter, cpu, cpu_remote_percent; with latency
    /// probes loaded_p50_ms, loaded_p99_ms, added_latency_ms; RFC 6349's transfer_time_ratio,
    /// tcp_efficiency_percent, buffer_delay_percent; of request/response tests (`test =
    /// "rr"`) transactions (per second), latency_p99 (µs).
    #[arg(long, default_value = "goodput")]
    pub metric: String,
    /// The path's rate, when the plan's target does not say it (an address target), e.g. 1G.
    #[arg(long)]
    pub rate: Option<String>,
    /// Keep runs far outside their configuration's siblings in the effects (they are set
    /// aside and named by default).
    #[arg(long)]
    pub keep_outliers: bool,
    /// The smallest change that matters, e.g. 5% (default: the plan's [answer] change, or 5%).
    #[arg(long)]
    pub change: Option<String>,
    /// Confidence level in percent (e.g. 95, 99.5 or 99.5%).
    #[arg(short = 'c', long, default_value = "95", value_parser = crate::cli::parse_confidence)]
    pub confidence: f64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TuneCommand {
    /// The bandwidth-delay product and the buffer settings it implies, against this kernel.
    #[command(after_help = "Example:\n  netsweep tune bdp --rate 10G --rtt 1.6ms")]
    Bdp {
        #[arg(long)]
        rate: String,
        #[arg(long)]
        rtt: String,
    },
    /// Show the built-in profiles, or one profile with what each setting does.
    Show {
        profile: Option<String>,
        #[command(flatten)]
        common: TuneCommon,
    },
    /// Apply a profile; it stays until `tune restore` (or until Ctrl-C with --hold).
    #[command(
        after_help = "Examples:\n  netsweep tune apply large-buffers\n  netsweep tune apply high-bdp-ns --rate 10G --rtt 20ms --target lab:wan:a\n  netsweep tune apply bigbuf --profiles profiles.toml --target netns:NAME\n  netsweep tune apply bigbuf --profiles profiles.toml --hold   # restored on Ctrl-C"
    )]
    Apply {
        profile: String,
        #[command(flatten)]
        common: TuneCommon,
        /// Change host-wide keys even on a namespace target.
        #[arg(long)]
        allow_host_wide: bool,
        /// Stay in the foreground and restore on Ctrl-C, SIGTERM or SIGHUP.
        #[arg(long)]
        hold: bool,
    },
    /// Put back the values saved before `tune apply` (safe to repeat).
    Restore {
        #[command(flatten)]
        common: TuneCommon,
    },
    /// What is applied on a target, with the original and current values.
    Status {
        #[command(flatten)]
        common: TuneCommon,
    },
}

#[derive(Debug, Args, Clone)]
pub struct TuneCommon {
    /// local, netns:NAME, lab:NAME:a|b, or ssh:USER@HOST.
    #[arg(long, default_value = "local")]
    pub target: String,
    /// A TOML file with [profiles.NAME.linux] / [profiles.NAME.freebsd] tables (- for stdin).
    #[arg(long)]
    pub profiles: Option<std::path::PathBuf>,
    /// Path rate for the high-bdp and high-bdp-ns profiles.
    #[arg(long)]
    pub rate: Option<String>,
    /// Path RTT for the high-bdp and high-bdp-ns profiles.
    #[arg(long)]
    pub rtt: Option<String>,
    /// ssh targets: an OpenSSH option passed as `-o OPTION` (repeatable), e.g. Port=2222.
    #[arg(long = "ssh-option")]
    pub ssh_options: Vec<String>,
    /// ssh targets: the netsweep command on the remote host.
    #[arg(long, default_value = "netsweep")]
    pub remote_netsweep: String,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A running `netsweep server` to check the path to (RTT, path MTU, both directions).
    #[arg(long)]
    pub peer: Option<String>,
    /// Bottleneck rate of the path, e.g. 10G (default: the fastest link speed). The 100G
    /// host checklist (host100g.*) raises each item only from the rate it matters at.
    #[arg(long)]
    pub rate: Option<String>,
    /// Round-trip time of the path (default: measured to --peer).
    #[arg(long)]
    pub rtt: Option<String>,
    /// Watch counters for this many seconds and report what grows.
    #[arg(long, allow_hyphen_values = true)]
    pub watch: Option<f64>,
    /// Diagnose a saved host instead of the live system: a Linux host's proc/ and sys/ below
    /// this directory, or a FreeBSD host's saved outputs (sysctl.txt, netstat-i.json,
    /// netstat-s.json, ifconfig.txt).
    #[arg(long)]
    pub root: Option<std::path::PathBuf>,
    /// Check a libvirt domain definition (file, or - for standard input) instead of this host.
    /// (The host's and the path's checks are not made: their flags are refused with it.)
    #[arg(long, conflicts_with_all = ["libvirt", "peer", "rate", "rtt", "watch", "root", "no_tests"])]
    pub libvirt_xml: Option<String>,
    /// Check a libvirt domain as it runs (virsh dumpxml), with the exact virsh commands of
    /// the fix, instead of this host. Example: netsweep doctor --libvirt vm1 --guest-ssh
    /// root@192.0.2.10
    #[arg(long, value_name = "DOMAIN", conflicts_with_all = ["peer", "rate", "rtt", "watch", "root", "no_tests"])]
    pub libvirt: Option<String>,
    /// With --libvirt: libvirt's connection URI (virsh -c), e.g. qemu:///system.
    #[arg(long, value_name = "URI", requires = "libvirt")]
    pub connect: Option<String>,
    /// With --libvirt: read the driver the guest bound to each interface over ssh.
    #[arg(long, value_name = "USER@HOST", requires = "libvirt")]
    pub guest_ssh: Option<String>,
    /// With --peer: skip the short throughput tests.
    #[arg(long)]
    pub no_tests: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
    /// Campaign id (default: the newest).
    #[arg(long)]
    pub campaign: Option<i64>,
    /// Output file (default: report.html, or report.md with --format md).
    #[arg(short = 'o', long)]
    pub output: Option<std::path::PathBuf>,
    /// html or md (default: md for an output file ending in .md or .markdown, else html).
    #[arg(long, value_enum)]
    pub format: Option<super::ReportFormat>,
    /// Also draw each stored run over time (as `netsweep plot`), one HTML page per run in a
    /// directory beside the report (report.html: report-runs/run-ID.html), linked from it.
    #[arg(long)]
    pub run_pictures: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["file", "run"])))]
pub struct PlotArgs {
    /// The result file: netsweep's `client --json` document (a throughput or `--test rr|crr`
    /// test), iperf3's `-J` document or iperf3's `--json-stream` lines (the format is found
    /// from the text).
    pub file: Option<std::path::PathBuf>,
    /// Output file: .html for a page, .svg for one SVG picture (default: FILE's name with
    /// .html, or run-ID.html).
    #[arg(short = 'o', long)]
    pub output: Option<std::path::PathBuf>,
    /// A run stored in a campaign database (`export` lists their ids), instead of FILE.
    #[arg(long, value_name = "ID", requires = "db", conflicts_with = "file")]
    pub run: Option<i64>,
    /// The database of --run.
    #[arg(long, requires = "run")]
    pub db: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
    #[arg(long)]
    pub campaign: Option<i64>,
    #[arg(long, value_enum, default_value_t = super::ExportFormat::Csv)]
    pub format: super::ExportFormat,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[arg(long, default_value = "netsweep.db")]
    pub db: std::path::PathBuf,
    /// Add to this campaign (default: the newest imported campaign with the same dimension
    /// names, so `--set nic=e1000` then `--set nic=vtnet` land in one campaign to compare).
    #[arg(long, conflicts_with = "new")]
    pub campaign: Option<i64>,
    /// Start a new imported campaign even if one with these dimension names exists.
    #[arg(long)]
    pub new: bool,
    /// Dimension values of these files, DIM=VALUE (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// iperf3 -J output files, or netsweep's own --json.
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
}
