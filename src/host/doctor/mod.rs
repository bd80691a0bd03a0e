//! `netsweep doctor`: runs the expert checklist (NIC model and driver, MTU, queues, offloads,
//! drops and retransmissions, buffers against the bandwidth-delay product, congestion control,
//! firewall state, CPU governor, kernel) and says what is wrong and how to fix it. Each
//! finding has a stable id, a severity, the evidence read, and the fix.
//!
//! Checks read `/proc` and `/sys` under a `HostView` root, so fixture trees stand in for a real
//! host; `peer` adds path checks against a running `netsweep server`, `libvirt` reads a domain
//! definition.

pub mod freebsd;
pub mod freebsd100g;
pub mod host;
pub mod host100g;
pub mod libvirt;
pub mod measured;
pub mod nic;
pub mod peer;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// An optional value as text, `?` when unknown.
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    Info,
    Warning,
    Problem,
}

/// One result of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable identifier, e.g. `nic.emulated.eth0`.
    pub id: String,
    pub severity: Severity,
    pub title: String,
    /// The values read, as `name = value` pairs.
    pub evidence: Vec<(String, String)>,
    /// The command or setting to change.
    pub fix: Option<String>,
    /// The rate this finding claims one flow cannot pass, for `measured::reconcile` to set
    /// against the path's own test; not part of the JSON (the title says it).
    #[serde(skip)]
    pub bound: Option<RateBound>,
    /// For the items of the 100G host checklist (`host100g`): the item's state judged against
    /// the path's rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checklist: Option<ChecklistItem>,
}

/// The state of one checklist item: `ok` (also when the item does not matter at the path's
/// rate), `finding` (it matters and is wrong: the finding's `fix` says what to run), or
/// `unknown` (the fact could not be read: `reason` says why).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    Ok,
    Finding,
    Unknown,
}

/// What a checklist finding adds to the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecklistItem {
    pub state: CheckState,
    /// The rate from which this item matters, bit/s.
    pub matters_from_bps: f64,
    /// The path's rate it was judged against (`--rate`, else the link speed), bit/s.
    pub rate_bps: Option<f64>,
    /// Why the state is `unknown`, or why an item that is wrong does not matter here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Which of this host's buffers a bound is about: its sending side bounds the test to the
/// peer, its receiving side the test from it; FreeBSD's `kern.ipc.maxsockbuf` bounds both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferSide {
    Send,
    Receive,
    Both,
}

impl BufferSide {
    /// The side a buffer check names in its words ("send" or "receive").
    pub fn of_word(side: &str) -> BufferSide {
        if side == "send" {
            BufferSide::Send
        } else {
            BufferSide::Receive
        }
    }
}

/// A static bound on one flow's rate: a buffer's size over an RTT estimate. A bound, not a
/// measurement: the RTT is an estimate and the share of a buffer the kernel keeps for its own
/// overhead varies, so a test of the same path that passes more refutes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RateBound {
    /// The setting and its value, as the title names them (`net.ipv4.tcp_wmem max 512 KBytes`).
    pub what: String,
    /// The bound, bit/s.
    pub bits_per_second: f64,
    pub side: BufferSide,
    /// The RTT the bound assumed.
    pub rtt: std::time::Duration,
    /// The path's rate the check used (`--rate` or the fastest link), bit/s.
    pub path_bps: f64,
}

impl Finding {
    pub fn new(id: impl Into<String>, severity: Severity, title: impl Into<String>) -> Finding {
        Finding {
            id: id.into(),
            severity,
            title: title.into(),
            evidence: Vec::new(),
            fix: None,
            bound: None,
            checklist: None,
        }
    }

    pub fn bound(mut self, b: RateBound) -> Finding {
        self.bound = Some(b);
        self
    }

    pub fn evidence(mut self, k: impl Into<String>, v: impl ToString) -> Finding {
        self.evidence.push((k.into(), v.to_string()));
        self
    }

    pub fn fix(mut self, f: impl Into<String>) -> Finding {
        self.fix = Some(f.into());
        self
    }
}

/// Where a host's `/proc` and `/sys` are (the live system or a fixture tree).
#[derive(Debug, Clone)]
pub struct HostView {
    pub proc_root: PathBuf,
    pub sys_root: PathBuf,
    /// False for fixture trees: checks that need live commands (ethtool) say so instead.
    pub live: bool,
}

impl HostView {
    pub fn live() -> HostView {
        HostView {
            proc_root: "/proc".into(),
            sys_root: "/sys".into(),
            live: true,
        }
    }

    /// A fixture tree with `proc/` and `sys/` below `root`.
    pub fn fixture(root: &Path) -> HostView {
        HostView {
            proc_root: root.join("proc"),
            sys_root: root.join("sys"),
            live: false,
        }
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        let (base, rest) = rel.split_once('/')?;
        let root = if base == "proc" {
            &self.proc_root
        } else {
            &self.sys_root
        };
        crate::inputs::read_pseudo(&root.join(rest))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// The tree's own root: `/` live, the fixture's directory else (for `lib/modules` and a
    /// fixture's saved command outputs under `cmd/`).
    pub fn root(&self) -> PathBuf {
        if self.live {
            PathBuf::from("/")
        } else {
            self.proc_root
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.proc_root.clone())
        }
    }

    pub fn sysctl(&self, key: &str) -> Option<String> {
        crate::host::hostfacts::sysctl(&self.proc_root, key)
    }

    /// Since when the network counters of `/proc/net` count: a network namespace other than
    /// init's (a lab host) has its own, from when it was made, not since boot. Where init's
    /// cannot be read (a container's PID 1 hidden from `ip netns exec`; a numbers audit read
    /// "since boot" in a lab host), a namespace named under `/run/netns` is one.
    pub fn counted_since(&self) -> &'static str {
        const NAMESPACE: &str = "since this network namespace was made";
        let ns = |pid: &str| std::fs::read_link(self.proc_root.join(pid).join("ns/net")).ok();
        match (ns("self"), ns("1")) {
            (Some(me), Some(init)) if me != init => NAMESPACE,
            (Some(me), None)
                if self.live
                    && crate::platform::netns::name_of(&me.to_string_lossy()).is_some() =>
            {
                NAMESPACE
            }
            _ => "since boot",
        }
    }
}

/// What the user told us about the path.
#[derive(Debug, Clone, Default)]
pub struct PathHints {
    /// Bottleneck rate, bit/s (`--rate`, else the fastest link speed).
    pub rate_bps: Option<f64>,
    /// Round-trip time (`--rtt`, or measured to `--peer`).
    pub rtt: Option<std::time::Duration>,
}

/// A full diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub findings: Vec<Finding>,
}

impl Diagnosis {
    pub fn worst(&self) -> Severity {
        self.findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Ok)
    }

    pub fn get(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }
}

/// Renders findings for a terminal, worst first.
pub fn render(d: &Diagnosis) -> String {
    let mut out = String::new();
    let mut sorted: Vec<&Finding> = d.findings.iter().collect();
    sorted.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(&b.id)));
    for f in sorted {
        let tag = match f.severity {
            Severity::Problem => "PROBLEM",
            Severity::Warning => "WARNING",
            Severity::Info => "info   ",
            Severity::Ok => "ok     ",
        };
        out.push_str(&format!("{tag} {}  [{}]\n", f.title, f.id));
        if !f.evidence.is_empty() && f.severity >= Severity::Warning {
            let ev: Vec<String> = f.evidence.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("        evidence: {}\n", ev.join(", ")));
        }
        if let Some(fix) = &f.fix {
            out.push_str(&format!("        fix: {fix}\n"));
        }
    }
    let counts = |s| d.findings.iter().filter(|f| f.severity == s).count();
    out.push_str(&format!(
        "{} problem(s), {} warning(s), {} note(s), {} check(s) fine\n",
        counts(Severity::Problem),
        counts(Severity::Warning),
        counts(Severity::Info),
        counts(Severity::Ok)
    ));
    out
}
