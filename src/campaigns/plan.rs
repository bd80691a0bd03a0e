//! Campaign plans (TOML): the target, the base test, the matrix of dimensions, user-defined
//! dimensions with setup/teardown commands, and repetition. `Plan::parse` validates the whole
//! file and reports every problem at once with its line. `options` turns a client option into
//! a `TestSpec` change, `target` reads `[target]` and the tuning profiles. Used by `runner` and
//! `app::run`.

use crate::lab::{EmulatorChoice, PathConfig};
use crate::traffic::spec::TestSpec;
use std::time::Duration;
use toml_edit::{Document, Item, TableLike};

/// Where the tests go.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A server started by netsweep on 127.0.0.1.
    Loopback,
    /// A temporary lab (root).
    Lab {
        path: PathConfig,
        emulator: EmulatorChoice,
    },
    /// The lab when running as root, loopback otherwise.
    Auto {
        path: PathConfig,
        emulator: EmulatorChoice,
    },
    /// A running `netsweep server`.
    Address(String),
    /// A running iperf3 server (`HOST:PORT`, port 5201 when left out), spoken to in iperf3's
    /// protocol: the dimensions iperf3 supports, no server-side counters.
    Iperf3(String),
    /// A user's libvirt domain with a server in the guest; `[matrix] nic` sweeps its NIC model.
    Libvirt(LibvirtTarget),
}

impl Target {
    /// Whether the far end speaks iperf3's protocol (and runs only what iperf3 can).
    pub fn speaks_iperf3(&self) -> bool {
        match self {
            Target::Iperf3(_) => true,
            Target::Libvirt(l) => l.server == crate::traffic::client::PeerProtocol::Iperf3,
            _ => false,
        }
    }
}

/// Run order of a campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each round runs every configuration once, freshly shuffled.
    Interleaved,
    /// All repetitions of one configuration, then the next (the shell-loop order).
    Sequential,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Interleaved => "interleaved",
            Order::Sequential => "sequential",
        }
    }
}

/// One value of a dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct DimValue {
    pub label: String,
    pub setup: Option<String>,
    pub teardown: Option<String>,
}

/// A swept dimension: a client option, or a user-defined one with commands.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub name: String,
    /// True for user-defined dimensions (values carry setup/teardown, not options).
    pub user: bool,
    /// True for a setting of the lab's path (`queue`, `rate`, ...): the lab is rebuilt.
    pub path: bool,
    pub values: Vec<DimValue>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Repeat {
    pub count: u32,
    pub pause: Duration,
    pub order: Order,
    pub seed: Option<u64>,
    /// Keep each round's configurations of one tuning profile together (fewer switches).
    pub group_profiles: bool,
    /// Stop before `count` (then the most rounds) once the answer is clear, after at least
    /// `min` rounds.
    pub until: Option<Until>,
    pub min: u32,
}

/// When a campaign has enough rounds (`[repeat] until`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    /// Every configuration's mean known within this fraction at 95% (`until = "2%"`).
    Precision(f64),
    /// Every comparison significant, or ruling out a change of this fraction (`until =
    /// "decided"`, with `change = "5%"`).
    Decided(f64),
}

/// Most configurations one plan may sweep, and most runs (configurations x count).
pub const MAX_CONFIGURATIONS: u64 = 100_000;
pub const MAX_RUNS: u64 = 1_000_000;

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub name: String,
    pub source: String,
    pub target: Target,
    pub base: TestSpec,
    /// The client options `[test]` names (a `length` there is written unless `zerocopy` is
    /// named too, in `[test]` or the matrix).
    pub base_options: Vec<String>,
    pub dimensions: Vec<Dimension>,
    pub repeat: Repeat,
    /// The tuning profiles the `profile` dimension names, resolved.
    pub profiles: Vec<crate::host::tuning::profile::Profile>,
    /// How the server of an `address` target is tuned (`[target] server_tuning`).
    pub server_tuning: Option<crate::host::tuning::Remote>,
    /// Profiles may change host-wide keys on namespace targets (`[target] allow_host_wide`).
    pub allow_host_wide: bool,
    /// How the answer is judged (`[answer]`).
    pub answer: AnswerSettings,
}

/// How a campaign's answer is judged (`[answer]`). Stored in `PlanFacts`, which refuses keys it
/// does not know; so does this.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerSettings {
    /// The smallest change that matters, relative (0.05 = 5%).
    pub change: f64,
    /// The value each unordered dimension is compared with.
    pub baselines: Vec<(String, String)>,
    /// Keep runs far outside their siblings in the effects.
    pub keep_outliers: bool,
}

impl Default for AnswerSettings {
    /// The judging of a plan without `[answer]`.
    fn default() -> AnswerSettings {
        AnswerSettings {
            change: crate::analysis::decide::DEFAULT_CHANGE,
            baselines: Vec::new(),
            keep_outliers: false,
        }
    }
}

/// The dimension whose values are tuning profiles.
pub const PROFILE_DIMENSION: &str = "profile";

/// One problem in a plan file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanIssue {
    pub line: usize,
    pub message: String,
}

/// Every problem found in a plan file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.file, .issues))]
pub struct PlanError {
    pub file: String,
    pub issues: Vec<PlanIssue>,
}

fn render(file: &str, issues: &[PlanIssue]) -> String {
    let mut s = format!("{} problem(s) in {file}:", issues.len());
    for i in issues {
        s.push_str(&format!("\n  {file}:{}: {}", i.line, i.message));
    }
    s
}

struct Reader<'a> {
    text: &'a str,
    issues: Vec<PlanIssue>,
}

impl Reader<'_> {
    fn line_of(&self, span: Option<std::ops::Range<usize>>) -> usize {
        span.map(|r| {
            self.text[..r.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1
        })
        .unwrap_or(1)
    }

    /// Records a problem of the plan at `span`; the same problem at the same line once.
    fn issue(&mut self, span: Option<std::ops::Range<usize>>, message: impl Into<String>) {
        let issue = PlanIssue {
            line: self.line_of(span),
            message: message.into(),
        };
        if !self.issues.contains(&issue) {
            self.issues.push(issue);
        }
    }

    /// Records `what: detail` unless `detail` was already said of another line: a check of
    /// the whole (the lab's path, a matrix value applied to it) meets the fault of one key
    /// that its own line already reported (a guest's memory, out of range, said once).
    fn issue_unsaid(&mut self, span: Option<std::ops::Range<usize>>, what: &str, detail: &str) {
        let said = self.issues.iter().any(|i| {
            i.message
                .strip_suffix(detail)
                .is_some_and(|m| m.ends_with(": "))
        });
        if !said {
            self.issue(span, format!("{what}: {detail}"));
        }
    }

    /// `ssh_options = ["Port=2222", ...]`: what ssh is given with `-o`, for `server_tuning` and
    /// a libvirt target's `server_start` alike (read by both, said once: `issue` drops a
    /// repeat).
    fn ssh_options(&mut self, table: &dyn TableLike) -> Vec<String> {
        let Some(item) = table.get("ssh_options") else {
            return Vec::new();
        };
        let Some(list) = item.as_array() else {
            self.issue(
                item.span(),
                "ssh_options must be a list, e.g. [\"Port=2222\"]",
            );
            return Vec::new();
        };
        list.iter()
            .filter_map(|v| {
                // Strings only: `[2222]` would become `ssh -o 2222`, which fails only at run
                // time.
                let option = v.as_str().map(str::to_string);
                if option.is_none() {
                    self.issue(
                        v.span(),
                        "each of ssh_options is one ssh -o option, e.g. \"Port=2222\"",
                    );
                }
                option
            })
            .collect()
    }

    /// Reports keys of `table` that are not in `allowed`.
    fn unknown_keys(&mut self, table: &dyn TableLike, section: &str, allowed: &[&str]) {
        for (k, _) in table.iter() {
            if !allowed.contains(&k) {
                let span = table.get_key_value(k).and_then(|(key, _)| key.span());
                self.issue(
                    span,
                    format!(
                        "unknown key {k:?} in [{section}]; expected one of {}",
                        allowed.join(", ")
                    ),
                );
            }
        }
    }

    fn string(
        &mut self,
        table: &dyn TableLike,
        key: &str,
    ) -> Option<(String, Option<std::ops::Range<usize>>)> {
        let item = table.get(key)?;
        match item.as_value().and_then(scalar) {
            Some(s) => Some((s, item.span())),
            None => {
                self.issue(
                    item.span(),
                    format!("{key} must be a string, number or boolean"),
                );
                None
            }
        }
    }
}

impl Plan {
    /// Parses and validates a plan; `file` names it in messages.
    pub fn parse(file: &str, text: &str) -> Result<Plan, PlanError> {
        let doc = Document::parse(text.to_string()).map_err(|e| {
            let line = e
                .span()
                .map(|r| text[..r.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1);
            PlanError {
                file: file.into(),
                issues: vec![PlanIssue {
                    line,
                    message: e.message().to_string(),
                }],
            }
        })?;
        let mut r = Reader {
            text,
            issues: Vec::new(),
        };
        let root = doc.as_table();
        r.unknown_keys(
            root,
            "top level",
            &[
                "name",
                "target",
                "test",
                "matrix",
                "dimensions",
                "repeat",
                "profiles",
                "answer",
            ],
        );
        let name = r
            .string(root, "name")
            .map(|(s, _)| s)
            .unwrap_or_else(|| default_name(file));
        let target = read_target(&mut r, root.get("target"));
        let server_tuning = root
            .get("target")
            .and_then(Item::as_table_like)
            .and_then(|t| {
                let kind = t
                    .get("kind")
                    .and_then(Item::as_str)
                    .unwrap_or("loopback")
                    .to_string();
                read_server_tuning(&mut r, t, &kind)
            });
        let allow_host_wide = read_allow_host_wide(&mut r, root.get("target"));
        let (base, base_options) = read_test(&mut r, root.get("test"));
        let lab_path = match &target {
            Target::Lab { path, .. } | Target::Auto { path, .. } => path.clone(),
            _ => PathConfig::default(),
        };
        let libvirt = matches!(target, Target::Libvirt(_));
        let mut dimensions = read_matrix(&mut r, root.get("matrix"), &base, &lab_path, libvirt);
        for d in read_user_dimensions(&mut r, root.get("dimensions")) {
            if dimensions.iter().any(|m| m.name == d.name) {
                r.issue(
                    root.get("dimensions").and_then(Item::span),
                    format!(
                        "dimension {:?} is both in [matrix] and in [dimensions]: keep one",
                        d.name
                    ),
                );
            }
            dimensions.push(d);
        }
        // Every problem of the profiles at once, each at its line.
        let (file_profiles, problems) = crate::host::tuning::profile::parse_all(text);
        for (why, span) in problems {
            r.issue(
                span.or_else(|| root.get("profiles").and_then(Item::span)),
                why,
            );
        }
        let profiles = resolve_profiles(
            &mut r,
            root.get("matrix"),
            &target,
            file_profiles,
            root.get("profiles"),
        );
        let repeat = read_repeat(&mut r, root.get("repeat"));
        let repeat_change = root
            .get("repeat")
            .and_then(Item::as_table_like)
            .filter(|t| t.contains_key("change"))
            .and(match repeat.until {
                Some(Until::Decided(c)) => Some(c),
                _ => None,
            });
        let answer = answer::read_answer(&mut r, root.get("answer"), &dimensions, repeat_change);
        // Counted before anything is built: a matrix of 2 x 10^10 configurations aborted on
        // allocation when it was expanded.
        let configs = dimensions
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(d.values.len() as u64));
        let runs = configs.and_then(|c| c.checked_mul(u64::from(repeat.count)));
        if configs.is_none_or(|c| c > MAX_CONFIGURATIONS) || runs.is_none_or(|n| n > MAX_RUNS) {
            let sizes: Vec<String> = dimensions
                .iter()
                .map(|d| format!("{} {}", d.values.len(), d.name))
                .collect();
            r.issue(
                root.get("matrix").and_then(Item::span),
                format!(
                    "the matrix makes {} configurations ({}) and {} runs: at most {MAX_CONFIGURATIONS} \
                     configurations and {MAX_RUNS} runs fit in one campaign",
                    configs.map_or("more than 2^64".into(), |c| c.to_string()),
                    sizes.join(" x "),
                    runs.map_or("more than 2^64".into(), |c| c.to_string()),
                ),
            );
        }
        let has = |section: &str, key: &str| {
            root.get(section)
                .and_then(Item::as_table_like)
                .is_some_and(|t| t.contains_key(key))
        };
        let udp_somewhere = base.protocol == crate::traffic::spec::Protocol::Udp
            || dimensions
                .iter()
                .any(|d| d.name == "protocol" && d.values.iter().any(|v| v.label == "udp"));
        if matches!(
            target,
            Target::Address(_) | Target::Iperf3(_) | Target::Libvirt(_)
        ) && udp_somewhere
            && !has("test", "bitrate")
            && !has("matrix", "bitrate")
        {
            r.issue(
                root.get("test").and_then(Item::span),
                "UDP to an address target needs a rate: add bitrate = \"100M\" (or \"0\" for \
                 unlimited) to [test]; the 1 Gbit/s default is for loopback and labs only",
            );
        }
        if let Target::Libvirt(_) = target
            && let Some(d) = dimensions.iter().find(|d| d.path && d.name != "nic")
        {
            r.issue(
                root.get("matrix").and_then(Item::span),
                format!(
                    "matrix {}: a libvirt target sweeps its domain's nic model only (the path \
                     is the user's network; use kind = \"lab\" with vm = \"b\" for {})",
                    d.name, d.name
                ),
            );
        } else if !matches!(
            target,
            Target::Lab { .. } | Target::Auto { .. } | Target::Libvirt(_)
        ) && let Some(d) = dimensions.iter().find(|d| d.path)
        {
            r.issue(
                root.get("matrix").and_then(Item::span),
                format!(
                    "matrix {} changes the path of a lab: it needs [target] kind = \"lab\"",
                    d.name
                ),
            );
        }
        if r.issues.is_empty() {
            // Every configuration must make a valid test.
            let plan = Plan {
                name,
                source: text.to_string(),
                target,
                base,
                base_options,
                dimensions,
                repeat,
                profiles,
                server_tuning,
                allow_host_wide,
                answer,
            };
            // What an iperf3 server cannot run, once per reason, with the configurations.
            let mut iperf3_cannot: std::collections::BTreeMap<String, Vec<String>> =
                Default::default();
            for cfg in plan.configurations() {
                let spec = plan
                    .spec_for(&cfg)
                    .and_then(|s| s.validate().map(|_| s).map_err(|e| e.to_string()))
                    .and_then(|s| match crate::traffic::rr::spec_of(&s) {
                        Some(Err(why)) => Err(why),
                        _ => Ok(s),
                    });
                match spec {
                    Err(msg) => r.issues.push(PlanIssue {
                        line: 1,
                        message: format!("configuration {}: {msg}", label(&cfg)),
                    }),
                    Ok(spec) if plan.target.speaks_iperf3() && spec.rr.is_some() => {
                        iperf3_cannot
                            .entry("request/response tests need netsweep's own server".to_string())
                            .or_default()
                            .push(label(&cfg));
                    }
                    Ok(spec) if plan.target.speaks_iperf3() => {
                        let adapted = crate::traffic::iperf3::client::adapt(&spec);
                        if let Err(msg) = crate::traffic::iperf3::client::params_for(&adapted) {
                            iperf3_cannot.entry(msg).or_default().push(label(&cfg));
                        }
                    }
                    Ok(_) => {}
                }
            }
            for (msg, configs) in iperf3_cannot {
                r.issues.push(PlanIssue {
                    line: 1,
                    message: format!(
                        "an iperf3 target cannot run {} configuration{} ({}{}): {msg}",
                        configs.len(),
                        if configs.len() == 1 { "" } else { "s" },
                        configs[0],
                        if configs.len() > 1 { ", ..." } else { "" }
                    ),
                });
            }
            if r.issues.is_empty() {
                return Ok(plan);
            }
        }
        r.issues.sort_by_key(|i| i.line);
        Err(PlanError {
            file: file.into(),
            issues: r.issues,
        })
    }

    /// All configurations: the cartesian product of the dimensions, in declared order (a parsed
    /// plan has at most `MAX_CONFIGURATIONS`).
    pub fn configurations(&self) -> Vec<Vec<(String, String)>> {
        let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for d in &self.dimensions {
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    d.values.iter().map(move |v| {
                        let mut c = prefix.clone();
                        c.push((d.name.clone(), v.label.clone()));
                        c
                    })
                })
                .collect();
        }
        out
    }

    /// The test of one configuration.
    pub fn spec_for(&self, cfg: &[(String, String)]) -> Result<TestSpec, String> {
        let mut spec = self.base.clone();
        let options: Vec<&str> = cfg
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| {
                self.dimensions
                    .iter()
                    .any(|d| d.name == *k && !d.user && !d.path)
            })
            .collect();
        for (k, v) in cfg.iter().filter(|(k, _)| options.contains(&k.as_str())) {
            apply_option(&mut spec, k, v).map_err(|e| format!("{k} = {v}: {e}"))?;
        }
        settle_zerocopy(&mut spec, |k| {
            options.contains(&k) || self.base_options.iter().any(|b| b == k)
        });
        Ok(spec)
    }

    /// The lab path of one configuration, when the plan sweeps path settings.
    pub fn path_for(&self, cfg: &[(String, String)]) -> Option<Result<PathConfig, String>> {
        let base = match &self.target {
            Target::Lab { path, .. } | Target::Auto { path, .. } => path,
            _ => return None,
        };
        let dims: Vec<_> = cfg
            .iter()
            .filter(|(k, _)| self.dimensions.iter().any(|d| &d.name == k && d.path))
            .collect();
        if dims.is_empty() {
            return None;
        }
        let mut path = base.clone();
        for (k, v) in dims {
            if let Err(e) = target::apply_path(&mut path, k, v) {
                return Some(Err(format!("{k} = {v}: {e}")));
            }
        }
        Some(Ok(path))
    }

    /// The NIC model of one configuration, when the plan sweeps a libvirt domain's `nic`.
    pub fn libvirt_model_for<'a>(&self, cfg: &'a [(String, String)]) -> Option<&'a str> {
        if !matches!(self.target, Target::Libvirt(_)) {
            return None;
        }
        cfg.iter()
            .find(|(k, _)| k == "nic")
            .map(|(_, v)| v.as_str())
    }

    /// The setup/teardown of a user dimension's value.
    pub fn user_value(&self, dim: &str, label: &str) -> Option<&DimValue> {
        self.dimensions
            .iter()
            .find(|d| d.user && d.name == dim)?
            .values
            .iter()
            .find(|v| v.label == label)
    }
}

/// `dim=value dim=value`, the label of a configuration.
pub fn label(cfg: &[(String, String)]) -> String {
    if cfg.is_empty() {
        return "(base)".into();
    }
    cfg.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn default_name(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "campaign".into())
}

/// `[target] allow_host_wide = true`: the plan's `--allow-host-wide`.
fn read_allow_host_wide(r: &mut Reader, item: Option<&Item>) -> bool {
    let table = item.and_then(Item::as_table_like);
    let Some((v, span)) = table.and_then(|t| r.string(t, "allow_host_wide")) else {
        return false;
    };
    parse_bool(&v).unwrap_or_else(|e| {
        r.issue(span, format!("target allow_host_wide: {e}"));
        false
    })
}

mod answer;
mod configuration;
mod facts;
mod libvirt;
mod matrix;
mod options;
mod repeat;
mod target;

pub use configuration::Configuration;
pub use facts::PlanFacts;
pub use libvirt::{LibvirtTarget, ServerStart};
use matrix::{read_matrix, read_test, read_user_dimensions};
pub use options::{OPTIONS, apply_option};
use options::{parse_bool, scalar, settle_zerocopy};
use repeat::read_repeat;
pub use target::{GUEST_DIMENSIONS, PATH_DIMENSIONS, apply_path};
use target::{read_server_tuning, read_target, resolve_profiles};

#[cfg(test)]
mod tests;
