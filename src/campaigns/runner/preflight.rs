//! What a plan is checked against before any traffic: tuning and congestion-control problems on each end, a remote server's refusals, and the warnings about counts, sizes and values that would not mean what they say.

use super::*;

/// Every reason the plan's profiles cannot be applied on these targets (a key the kernel
/// lacks, a host-wide key on a namespace, a bad value), found before any traffic.
pub fn tuning_problems(plan: &Plan, targets: &[crate::host::tuning::Target]) -> Vec<String> {
    let opts = crate::host::tuning::ApplyOptions {
        allow_host_wide: plan.allow_host_wide,
        owner_pid: None,
    };
    let mut problems = Vec::new();
    if let Some(r) = &plan.server_tuning {
        match r.reachable() {
            Err(e) => problems.push(format!("server_tuning {}: {e}", r.id())),
            Ok(()) => {
                for p in &plan.profiles {
                    if let Err(errors) = r.validate(p, &opts) {
                        problems.extend(
                            errors
                                .into_iter()
                                .map(|e| format!("profile {} on {}: {e}", p.name, r.id())),
                        );
                    }
                }
            }
        }
    }
    for p in &plan.profiles {
        for t in targets {
            let (p, _) = crate::host::tuning::as_on(t, p, targets);
            if let Err(errors) = crate::host::tuning::validate(t, &p, &opts) {
                problems.extend(
                    errors
                        .into_iter()
                        .map(|e| format!("profile {} on {}: {e}", p.name, t.id())),
                );
            }
        }
    }
    problems
}

/// The keys each profile writes on a lab's guest alone (`tuning::as_on`): host-wide keys that
/// the namespace beside it cannot hold, said before any traffic.
pub fn guest_only_notes(plan: &Plan, targets: &[crate::host::tuning::Target]) -> Vec<String> {
    let mut out = Vec::new();
    for p in &plan.profiles {
        for t in targets {
            let (_, left) = crate::host::tuning::as_on(t, p, targets);
            if !left.is_empty() {
                out.push(format!(
                    "profile {}: {} written on the guest only: {} is a network namespace of \
                     this machine, where {} host-wide (it holds the machine's value, which the \
                     campaign leaves as it is)",
                    p.name,
                    left.join(", "),
                    t.id(),
                    if left.len() == 1 { "it is" } else { "they are" }
                ));
            }
        }
    }
    out
}

/// Congestion controls of the plan that this host's kernel will not set on a socket (a typo such
/// as `bbrr`, a module that is not there), each tried on a throwaway socket before any traffic.
pub fn congestion_problems(plan: &Plan) -> Vec<String> {
    congestion_names(plan)
        .into_iter()
        .filter_map(|name| crate::platform::congestion::unusable(&name, "here"))
        .collect()
}

/// The congestion controls a plan's configurations ask for, each once.
pub fn congestion_names(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = plan
        .configurations()
        .iter()
        .filter_map(|c| plan.spec_for(c).ok())
        .filter_map(|s| s.congestion)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Congestion controls of the plan that a far end's kernel does not have (`ends`: each end's
/// name and its `tcp_available_congestion_control`); both ends set the test's control.
pub fn far_congestion_problems(plan: &Plan, ends: &[(String, String)]) -> Vec<String> {
    let names = congestion_names(plan);
    ends.iter()
        .flat_map(|(end, available)| {
            names
                .iter()
                .filter(|n| !available.split_whitespace().any(|a| a == n.as_str()))
                .map(move |n| {
                    format!("congestion control {n:?} is not available on {end} (available: {available})")
                })
        })
        .collect()
}

/// At most this many distinct tests of a plan are put to a far server before the campaign.
pub const FAR_CHECKS_MAX: usize = 256;

/// What a far end that can be asked (a netsweep server, through `ask`) says of the plan's
/// tests before any traffic: each distinct refusal once, with the first configuration that met
/// it (the problems), and a warning if the end could not be asked (then nothing more is asked).
pub fn far_refusals(
    plan: &Plan,
    mut ask: impl FnMut(&TestSpec) -> crate::traffic::client::Admission,
) -> (Vec<String>, Vec<String>) {
    use crate::traffic::client::Admission;
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut asked = std::collections::HashSet::new();
    for cfg in plan.configurations() {
        // A configuration whose spec cannot be built is refused by the plan's own checks.
        let Ok(mut spec) = plan.spec_for(&cfg) else {
            continue;
        };
        // A request/response test is put as the throughput test of its duration and
        // connections: the server holds both to the same --max-duration and --max-streams.
        spec.rr = None;
        if !asked.insert(serde_json::to_string(&spec).unwrap_or_default()) {
            continue;
        }
        if asked.len() > FAR_CHECKS_MAX {
            break;
        }
        match ask(&spec) {
            Admission::Admissible => {}
            Admission::Refused(why) => {
                if !problems.iter().any(|(w, _)| *w == why) {
                    problems.push((why, label(&cfg)));
                }
            }
            Admission::Unknown(why) => {
                let warning = format!(
                    "the plan's tests could not be put to the server before the campaign, so a \
                     test it refuses fails only when it runs: {why}"
                );
                return (render_refusals(problems), vec![warning]);
            }
        }
    }
    (render_refusals(problems), Vec::new())
}

pub(super) fn render_refusals(problems: Vec<(String, String)>) -> Vec<String> {
    problems
        .into_iter()
        .map(|(why, cfg)| format!("{cfg}: {why}"))
        .collect()
}

/// A warning for plans whose runs per configuration are too few for `compare`'s pairs
/// (`explain` contrasts the whole design with the error pooled over every configuration, which
/// two rounds of several configurations can give: a trial was told "none will be made" and
/// then read explain's p-values).
pub fn count_warning(plan: &Plan) -> Option<String> {
    use crate::analysis::sets::{MIN_RUNS, MIN_RUNS_IN_DESIGN};
    let count = plan.repeat.count;
    let pooled = "`explain` pools the error over the whole design and may decide with fewer, \
                  on less evidence";
    if count < MIN_RUNS_IN_DESIGN as u32 {
        Some(format!(
            "[repeat] count = {count}: `compare` needs at least {MIN_RUNS_IN_DESIGN} runs per \
             configuration and will compare none; {pooled}; raise count to {MIN_RUNS} or more"
        ))
    } else if count < MIN_RUNS as u32 {
        Some(format!(
            "[repeat] count = {count}: `compare` and `explain` decide on the error pooled over \
             the whole design, on less evidence; no run can be checked against its siblings \
             and `stats` compares none of one configuration's runs (each needs {MIN_RUNS}); \
             raise count to {MIN_RUNS} or more"
        ))
    } else {
        None
    }
}

/// Plans above this many configurations are questioned (`size_warning`).
pub const SANE_CONFIGURATIONS: usize = 10_000;

/// A warning for a plan over `SANE_CONFIGURATIONS`: its count and the time its runs would
/// take at its tests' wall times (`specs`, one per configuration), overhead not counted.
pub fn size_warning(plan: &Plan, specs: &[TestSpec]) -> Option<String> {
    let n = specs.len();
    (n > SANE_CONFIGURATIONS).then(|| {
        let per_round: f64 = specs.iter().map(|s| s.wall_time().as_secs_f64()).sum();
        let total = per_round * f64::from(plan.repeat.count);
        format!(
            "the plan has {n} configurations (more than {SANE_CONFIGURATIONS}): {} runs would \
             take at least {:.0} hours ({:.1} days) of tests alone; is a dimension swept by \
             mistake? Sweep fewer values, or split the plan",
            n as u64 * u64::from(plan.repeat.count),
            total / 3600.0,
            total / 86_400.0
        )
    })
}

/// What the plan's values meet on this host, for `value_warnings`.
#[derive(Debug, Clone, Default)]
pub struct HostLimits {
    pub root: bool,
    /// `net.core.rmem_max` and `wmem_max`: the caps of `-w` without root.
    pub rmem_max: Option<u64>,
    pub wmem_max: Option<u64>,
    /// The kernel has `sch_netem` (else labs use the userspace delay line).
    pub netem: bool,
}

/// What the userspace delay line carries on this kind of machine (measured: 2.5 Gbit/s of
/// 1500-byte packets without loss at 20 ms RTT, README "Measured").
pub const DELAY_LINE_CEILING_BPS: f64 = crate::lab::delayline::CEILING_BPS;

/// Values that run but will not mean what the plan says, found before any traffic: too few
/// runs, a duration shorter than its interval, windows the kernel will not grant, a lab rate
/// beyond what the emulator carries.
pub fn value_warnings(plan: &Plan, host: &HostLimits) -> Vec<String> {
    let mut out: Vec<String> = count_warning(plan).into_iter().collect();
    let specs: Vec<TestSpec> = plan
        .configurations()
        .iter()
        .filter_map(|c| plan.spec_for(c).ok())
        .collect();
    out.extend(size_warning(plan, &specs));
    if let Some(s) = specs.iter().find(|s| s.duration < s.interval) {
        out.push(format!(
            "duration {:?} is shorter than the interval {:?}: each test reports one short interval",
            s.duration, s.interval
        ));
    }
    let local = matches!(
        plan.target,
        Target::Loopback | Target::Lab { .. } | Target::Auto { .. }
    );
    if local && !host.root {
        let cap = host.rmem_max.into_iter().chain(host.wmem_max).min();
        let widest = specs.iter().filter_map(|s| s.window_bytes).max();
        if let (Some(cap), Some(w)) = (cap, widest)
            && w > cap
        {
            out.push(format!(
                "window {} is above net.core.rmem_max/wmem_max ({}): without root the kernel \
                 grants at most {} (twice the cap), so larger windows measure the cap; run as \
                 root or raise the caps",
                crate::units::Bytes(w),
                crate::units::Bytes(cap),
                crate::units::Bytes(cap.saturating_mul(2))
            ));
        }
    }
    // A profile forced windows make inert is said now, not after the campaign.
    let all_forced = !specs.is_empty()
        && specs
            .iter()
            .all(|s| s.window_bytes.is_some() && s.window_mode.forced());
    if all_forced
        && let Some(w) = crate::campaigns::explain::profile_cannot_matter(
            &plan.facts().profile_keys,
            true,
            false,
        )
    {
        out.push(format!(
            "{w}: drop the profile dimension, or ask for windows (window_mode = \"ask\")"
        ));
    }
    if let Target::Lab { path, emulator } | Target::Auto { path, emulator } = &plan.target {
        let userspace = match emulator {
            crate::lab::EmulatorChoice::Userspace => true,
            crate::lab::EmulatorChoice::Auto => !host.netem,
            crate::lab::EmulatorChoice::Netem => false,
        };
        // The target's rate, or the fastest a `rate` dimension of the matrix asks for.
        let fastest = plan
            .configurations()
            .iter()
            .filter_map(|c| plan.path_for(c)?.ok()?.rate_bps)
            .chain(path.rate_bps)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
        if let Some(rate) = fastest.filter(|r| userspace && *r > DELAY_LINE_CEILING_BPS) {
            out.push(format!(
                "rate {} is above what the userspace delay line carries (about {} measured on \
                 this kind of machine): goodput near the top will show the emulator, not the rate",
                crate::units::BitRate(rate),
                crate::units::BitRate(DELAY_LINE_CEILING_BPS)
            ));
        }
    }
    out
}
