//! Runs a campaign: the schedule (rounds of freshly shuffled configurations, or the
//! sequential shell-loop order), user-dimension setup/teardown, pauses, and storing each run as
//! soon as it ends. Traffic goes through an `Executor`, so tests drive the runner with a mock
//! (hyperfine's idea) and `executor` supplies the real loopback, lab and address targets.
//!
//! Resuming recomputes the same schedule from the stored seed and skips what is stored.

use crate::campaigns::plan::{Configuration, Plan, Target, label};
use crate::campaigns::store::{ConfigRow, NewRun, Store};
use crate::platform::clock::now_unix;
use crate::traffic::result::TestResult;
use crate::traffic::spec::TestSpec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod preflight;
mod schedule;
pub use schedule::schedule;
mod tuner;
pub use preflight::*;
use tuner::Tuner;

/// What an executor reports for one test.
pub struct ExecOutcome {
    pub result: Result<TestResult, String>,
    /// Time spent in the test itself (connect to final result); the rest is overhead.
    pub engine_time: Duration,
    /// Kernel counter deltas of the hosts involved (JSON), when readable.
    pub counters: Option<serde_json::Value>,
}

impl ExecOutcome {
    /// A run that failed before any traffic (bad spec, failed setup or tuning).
    pub fn failed(error: String) -> ExecOutcome {
        ExecOutcome {
            result: Err(error),
            engine_time: Duration::ZERO,
            counters: None,
        }
    }
}

/// Where the traffic of a campaign goes.
pub trait Executor {
    /// A one-line description of the target (stored with the campaign).
    fn describe(&self) -> String;
    /// Facts about the hosts, collected once per campaign.
    fn host_facts(&mut self) -> serde_json::Value;
    /// Runs one test; `stop` interrupts it.
    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome;
    /// Runs a setup or teardown command of a user dimension.
    fn shell(&mut self, command: &str) -> Result<(), String>;
    /// Each guest of the lab in use whose QEMU no longer runs (killed, out of memory,
    /// crashed), said in a sentence; none on targets without guests.
    fn dead_guests(&self) -> Vec<String> {
        Vec::new()
    }
    /// Builds the lab in use again with new guests (`dead_guests` named some): its tuning
    /// targets are then the new lab's, without the tuning. What the dead guests' consoles said
    /// last.
    fn revive(&mut self) -> Result<String, String> {
        Err("this target has no lab to build again".into())
    }
    /// Where tuning profiles are applied (client and, when reachable, server side).
    fn tuning_targets(&self) -> Vec<crate::host::tuning::Target> {
        vec![crate::host::tuning::Target::Local]
    }
    /// The path of the lab in use, for targets that have one.
    fn path(&self) -> Option<crate::lab::PathConfig> {
        None
    }
    /// Gives the lab this path (a `[matrix]` path setting such as `queue`): another lab, or
    /// the same one rebuilt; returns whether the lab in use changed (its tuning targets then
    /// are another lab's, or a rebuilt one's without the tuning).
    fn set_path(&mut self, _path: &crate::lab::PathConfig) -> Result<bool, String> {
        Err("this target has no lab path to change (path settings need a lab)".into())
    }
    /// The NIC model of a libvirt domain target's interface (`None`: not such a target, or
    /// libvirt's default model).
    fn nic_model(&self) -> Option<String> {
        None
    }
    /// Gives a libvirt domain's interface this model and restarts the domain with it (`[matrix]
    /// nic` on a libvirt target); whether it changed.
    fn set_nic_model(&mut self, _model: &str) -> Result<bool, String> {
        Err("this target has no libvirt domain whose NIC model could change".into())
    }
    /// Facts gathered during the campaign that `host_facts` could not have at its start: each
    /// guest a lab booted (its NIC model, driver and own doctor), keyed by its description.
    fn facts_gathered(&mut self) -> Option<serde_json::Value> {
        None
    }
    /// What the ends other than this host say of the plan before any traffic (a lab's guests:
    /// their congestion controls; a netsweep server: whether it admits each test): problems that
    /// stop the campaign, and warnings.
    fn far_check(&self, _plan: &Plan) -> (Vec<String>, Vec<String>) {
        (Vec::new(), Vec::new())
    }
}

/// Progress as the campaign goes.
#[derive(Debug, Clone)]
pub enum Progress {
    Started {
        total: usize,
        already_done: usize,
    },
    /// Something the user should know (e.g. tuning restored after a crash).
    Note(String),
    RunFinished {
        done: usize,
        total: usize,
        failures: usize,
        label: String,
        round: u32,
        bits_per_second: Option<f64>,
        error: Option<String>,
        eta: Duration,
        /// Time spent outside the test itself (store, counters, setup), for this run.
        overhead: Duration,
    },
}

/// How a campaign ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub ran: usize,
    pub failed: usize,
    pub interrupted: bool,
    /// Configurations skipped for failing the same way in consecutive rounds (`failfast`).
    pub skipped: usize,
    /// Their runs left unrun: the campaign is left unfinished so `--resume` retries them. None
    /// (they failed to the last round): the campaign is finished, and `--more` adds rounds.
    pub skipped_left: usize,
    /// Every configuration was skipped, so the campaign stopped.
    pub all_failing: bool,
}

/// Keeps user dimensions set up as the runs require.
struct UserState {
    current: Vec<(String, Option<String>)>,
}

impl UserState {
    /// Switches user dimensions to the values of `cfg`; an error names the failed command.
    fn switch(
        &mut self,
        plan: &Plan,
        cfg: &[(String, String)],
        exec: &mut dyn Executor,
    ) -> Result<(), String> {
        for (dim, value) in cfg
            .iter()
            .filter(|(d, _)| plan.dimensions.iter().any(|x| x.user && &x.name == d))
        {
            let slot = match self.current.iter_mut().find(|(d, _)| d == dim) {
                Some(s) => s,
                None => {
                    self.current.push((dim.clone(), None));
                    self.current.last_mut().ok_or("internal")?
                }
            };
            if slot.1.as_deref() == Some(value.as_str()) {
                continue;
            }
            if let Some(old) = slot.1.take()
                && let Some(td) = plan.user_value(dim, &old).and_then(|v| v.teardown.clone())
            {
                exec.shell(&td)
                    .map_err(|e| format!("teardown of {dim}={old} failed: {e}"))?;
            }
            if let Some(su) = plan.user_value(dim, value).and_then(|v| v.setup.clone()) {
                exec.shell(&su)
                    .map_err(|e| format!("setup of {dim}={value} failed: {e}"))?;
            }
            slot.1 = Some(value.clone());
        }
        Ok(())
    }

    fn teardown_all(&mut self, plan: &Plan, exec: &mut dyn Executor) {
        for (dim, value) in self.current.drain(..) {
            if let Some(td) =
                value.and_then(|v| plan.user_value(&dim, &v).and_then(|x| x.teardown.clone()))
            {
                let _ = exec.shell(&td);
            }
        }
    }
}

/// Runs (or resumes) campaign `campaign` of `plan` with the stored `seed`.
pub fn run_campaign(
    plan: &Plan,
    store: &mut Store,
    campaign: i64,
    seed: u64,
    exec: &mut dyn Executor,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> anyhow::Result<Outcome> {
    let configs: Vec<ConfigRow> = store.configurations(campaign)?;
    // Each configuration as the store keeps it, resolved when the campaign was made (or when
    // an older store was migrated: `store::legacy`).
    let resolved: Vec<Result<Configuration, String>> = configs
        .iter()
        .map(|c| {
            c.resolved.clone().ok_or_else(|| {
                format!(
                    "configuration {} has no resolved test in the store: its plan no longer \
                     resolves it",
                    c.label
                )
            })
        })
        .collect();
    // A libvirt domain restarts for each change of its NIC model: a round keeps the runs of one
    // model together (the models in shuffled order), as `group_profiles` does for profiles.
    let groups = model_groups(&resolved).or_else(|| {
        plan.repeat
            .group_profiles
            .then(|| profile_groups(plan, &resolved))
    });
    let order = schedule(
        configs.len(),
        plan.repeat.count,
        plan.repeat.order,
        seed,
        groups.as_deref(),
    );
    let mut tuner = (!plan.profiles.is_empty()).then(|| Tuner::new(plan, exec.tuning_targets()));
    if let Some(t) = &tuner {
        for note in t.recover() {
            on_progress(&Progress::Note(note));
        }
    }
    let done = store.finished_slots(campaign)?;
    let total = order.len();
    on_progress(&Progress::Started {
        total,
        already_done: done.len(),
    });
    let mut user = UserState {
        current: Vec::new(),
    };
    let mut outcome = Outcome {
        ran: 0,
        failed: 0,
        interrupted: false,
        skipped: 0,
        skipped_left: 0,
        all_failing: false,
    };
    let earlier = store.skipped(campaign)?;
    // Configurations skipped earlier with none of their runs left (they failed to the last
    // round) have nothing to retry here: a trial's --resume said "retrying" and ran nothing.
    let left = |id: i64| {
        configs.iter().position(|c| c.id == id).is_some_and(|pos| {
            order
                .iter()
                .any(|&(p, r)| p == pos && !done.contains(&(p, r)))
        })
    };
    if earlier.iter().any(|(id, _)| left(*id)) {
        let names: Vec<String> = earlier
            .iter()
            .filter_map(|(id, _)| configs.iter().find(|c| c.id == *id))
            .map(|c| label(&c.dims))
            .collect();
        on_progress(&Progress::Note(format!(
            "retrying {} configuration(s) skipped earlier for failing round after round: {}",
            earlier.len(),
            names.join(", ")
        )));
        store.clear_skips(campaign)?;
    }
    let mut failfast = failfast::FailFast::default();
    let mut revived = 0;
    let mut finished = done.len();
    let mut spent = Duration::ZERO;
    for (sequence, &(pos, round)) in order.iter().enumerate() {
        if done.contains(&(pos, round)) {
            continue;
        }
        if failfast.is_skipped(pos) {
            outcome.skipped_left += 1;
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            outcome.interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let cfg = &configs[pos];
        let started_unix = now_unix();
        if let Some(note) = revive(exec, tuner.as_mut(), &mut revived) {
            on_progress(&Progress::Note(note));
        }
        // The lab first (its tuning targets may change with it), then the profile on them.
        let this = resolved[pos].clone();
        let tuned = this.as_ref().map_err(String::clone).and_then(|c| {
            switch_path(c, exec, tuner.as_mut())?;
            match (&mut tuner, &c.profile) {
                (Some(t), Some(p)) => t.switch(p),
                _ => Ok(()),
            }
        });
        let tuning_json = tuner.as_ref().map(|t| t.values().to_string());
        // The host's CPUs around the test: a run on a saturated host measures the host.
        let cpu_before = crate::platform::cputime::read(std::path::Path::new("/proc"));
        let ExecOutcome {
            result,
            mut counters,
            engine_time: test_time,
        } = match tuned
            .and_then(|_| user.switch(plan, &cfg.dims, exec))
            .and(this.as_ref().map_err(String::clone))
        {
            Ok(c) => run_configuration(c, exec, stop),
            Err(e) => ExecOutcome::failed(e),
        };
        if stop.load(Ordering::Relaxed) {
            // An interrupted test is not a finished run: --resume runs it again.
            outcome.interrupted = true;
            break;
        }
        host_cpu_into(&mut counters, cpu_before);
        let error = match &result {
            Err(e) => Some(e.clone()),
            Ok(r) => no_data(r),
        };
        let bps = result.as_ref().ok().map(|r| r.summary.bits_per_second);
        store.insert_run(
            campaign,
            &NewRun {
                configuration_id: cfg.id,
                round,
                sequence,
                started_unix,
                finished_unix: now_unix(),
                error: error.clone(),
                result: result.ok(),
                counters_json: counters.map(|c| c.to_string()),
                tuning_json,
                imported: None,
            },
        )?;
        outcome.ran += 1;
        finished += 1;
        if error.is_some() {
            outcome.failed += 1;
        }
        let elapsed = t0.elapsed();
        spent += elapsed + plan.repeat.pause;
        let remaining = total - finished;
        let eta = if outcome.ran > 0 {
            spent / outcome.ran as u32 * remaining as u32
        } else {
            Duration::ZERO
        };
        on_progress(&Progress::RunFinished {
            done: finished,
            total,
            failures: outcome.failed,
            label: label(&cfg.dims),
            round,
            bits_per_second: bps,
            error: error.clone(),
            eta,
            overhead: elapsed.saturating_sub(test_time),
        });
        if let Some(skip) = failfast.record(pos, round, error.as_deref()) {
            store.skip_configuration(campaign, cfg.id, &skip.reason)?;
            outcome.skipped += 1;
            on_progress(&Progress::Note(format!(
                "skipping {} for the rest of the campaign: {}",
                label(&cfg.dims),
                skip.reason
            )));
            if failfast.skipped_count() == configs.len() {
                outcome.all_failing = true;
                outcome.skipped_left += remaining;
                on_progress(&Progress::Note(
                    "every configuration is failing round after round: the campaign stops here; \
                     fix the cause named above and retry them with --resume"
                        .into(),
                ));
                break;
            }
        }
        if let Some(why) = round_settles(plan, store, campaign, &order, sequence, round)? {
            on_progress(&Progress::Note(why));
            break;
        }
        if remaining > 0 && !plan.repeat.pause.is_zero() {
            sleep_unless_stopped(plan.repeat.pause, stop);
        }
    }
    user.teardown_all(plan, exec);
    if let Some(mut t) = tuner.take() {
        for note in t.restore_all() {
            on_progress(&Progress::Note(note));
        }
    }
    // A campaign with skipped configurations' runs left stays open, so `--resume` can retry
    // them.
    if !outcome.interrupted && outcome.skipped_left == 0 {
        store.finish_campaign(campaign)?;
    }
    Ok(outcome)
}

/// Adds the host's CPU use since `before` to a run's counters (`host_cpu.busy_percent`).
fn host_cpu_into(
    counters: &mut Option<serde_json::Value>,
    before: Option<crate::platform::cputime::CpuTicks>,
) {
    use crate::platform::cputime;
    let (Some(b), Some(a)) = (before, cputime::read(std::path::Path::new("/proc"))) else {
        return;
    };
    let Some(busy) = cputime::busy_percent(b, a) else {
        return;
    };
    let entry = serde_json::json!({ "busy_percent": busy, "cores": a.cores });
    match counters {
        Some(serde_json::Value::Object(m)) => {
            m.insert("host_cpu".into(), entry);
        }
        None => *counters = Some(serde_json::json!({ "host_cpu": entry })),
        Some(_) => {}
    }
}

/// At the end of a round, whether `[repeat] until` is met (after at least `min` rounds): the
/// note that says why the campaign stops there.
fn round_settles(
    plan: &Plan,
    store: &Store,
    campaign: i64,
    order: &[(usize, u32)],
    sequence: usize,
    round: u32,
) -> anyhow::Result<Option<String>> {
    let Some(until) = plan.repeat.until else {
        return Ok(None);
    };
    let round_ends = order.get(sequence + 1).is_none_or(|(_, r)| *r != round);
    let rounds = round + 1;
    if !round_ends || rounds < plan.repeat.min || rounds >= plan.repeat.count {
        return Ok(None);
    }
    let runs = store.runs(campaign)?;
    let order = plan.order();
    let facts = plan.facts();
    let judging =
        crate::campaigns::explain::Ask::new(crate::campaigns::campaign::Metric::BitsPerSecond)
            .judging(&facts);
    // Only a swept profile can be settled by construction: the stored results are read for it
    // alone, at each round's end.
    let settled = if facts.profile_keys.is_empty() {
        crate::campaigns::campaign::Settled::default()
    } else {
        let results: Vec<(i64, crate::traffic::result::TestResult)> = store
            .run_results(campaign)?
            .into_iter()
            .filter_map(|(id, json)| Some((id, serde_json::from_str(json.as_deref()?).ok()?)))
            .collect();
        let configs = store.configurations(campaign)?;
        crate::campaigns::explain::cannot_matter(&facts, &configs, &runs, &results).1
    };
    Ok(
        crate::campaigns::campaign::until_met(&runs, until, (&order, &settled), &judging).map(
            |why| {
                format!(
                    "stopping after {rounds} of at most {} rounds: {why}",
                    plan.repeat.count
                )
            },
        ),
    )
}

/// Each configuration's profile as an index into the plan's profiles, so the schedule can
/// keep the runs of one profile together within a round.
fn profile_groups(plan: &Plan, resolved: &[Result<Configuration, String>]) -> Vec<usize> {
    resolved
        .iter()
        .map(|c| {
            c.as_ref()
                .ok()
                .and_then(|c| c.profile.as_ref())
                .and_then(|p| plan.profiles.iter().position(|v| &v.name == p))
                .unwrap_or(0)
        })
        .collect()
}

/// Each configuration's libvirt NIC model as an index, when the plan sweeps one.
fn model_groups(resolved: &[Result<Configuration, String>]) -> Option<Vec<usize>> {
    let models: Vec<Option<&str>> = resolved
        .iter()
        .map(|c| c.as_ref().ok().and_then(|c| c.nic_model.as_deref()))
        .collect();
    if models.iter().all(Option::is_none) {
        return None;
    }
    let mut seen: Vec<Option<&str>> = Vec::new();
    Some(
        models
            .iter()
            .map(|m| {
                seen.iter().position(|x| x == m).unwrap_or_else(|| {
                    seen.push(*m);
                    seen.len() - 1
                })
            })
            .collect(),
    )
}

/// Gives the lab this configuration's path settings when they differ from the lab in use, or
/// a libvirt domain this configuration's NIC model: the tuning goes back first, while the lab
/// or guest it was applied to still exists (a lab kept for its guest stays up, a rebuilt one
/// or a restarted domain does not), and the tuner then works on the targets in use, where the
/// caller applies the configuration's profile.
fn switch_path(
    cfg: &Configuration,
    exec: &mut dyn Executor,
    tuner: Option<&mut Tuner>,
) -> Result<(), String> {
    enum Change<'a> {
        Model(&'a str),
        Path(&'a crate::lab::PathConfig),
    }
    let change = if let Some(model) = cfg.nic_model.as_deref() {
        if exec.nic_model().as_deref() == Some(model) {
            return Ok(());
        }
        Change::Model(model)
    } else {
        let Some(path) = cfg.path.as_ref() else {
            return Ok(());
        };
        if exec.path().as_ref() == Some(path) {
            return Ok(());
        }
        Change::Path(path)
    };
    let mut tuner = tuner;
    if let Some(t) = tuner.as_deref_mut() {
        let errors = t.restore_all();
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
    }
    match change {
        Change::Model(m) => exec.set_nic_model(m)?,
        Change::Path(p) => exec.set_path(p)?,
    };
    if let Some(t) = tuner {
        t.targets = exec.tuning_targets();
    }
    Ok(())
}

/// Most times a campaign builds its lab again for guests that died: a guest that dies again
/// and again (out of memory in every boot) is a fault to fix, not to wait through.
const MAX_REVIVALS: u32 = 3;

/// A guest of the lab in use died (killed, out of memory, crashed: each later run would fail
/// on it): the lab is built again with new guests, at most `MAX_REVIVALS` times a campaign.
/// The tuning goes back first, while the lab's other host still exists (the dead guest's went
/// with its kernel), and the tuner then works on the new lab's targets, where the caller
/// applies the configuration's profile. What to tell the user; `None` while every guest runs.
fn revive(exec: &mut dyn Executor, tuner: Option<&mut Tuner>, revived: &mut u32) -> Option<String> {
    let dead = exec.dead_guests();
    if dead.is_empty() || *revived > MAX_REVIVALS {
        return None;
    }
    let dead = dead.join("; ");
    *revived += 1;
    if *revived > MAX_REVIVALS {
        return Some(format!(
            "{dead}: its lab is not built again (guests died {MAX_REVIVALS} times in this \
             campaign already); its runs fail until the cause is fixed (see the guests' \
             consoles) and --resume builds the lab anew"
        ));
    }
    let mut tuner = tuner;
    let restored = tuner
        .as_deref_mut()
        .map(Tuner::restore_all)
        .unwrap_or_default();
    let rebuilt = exec.revive();
    if let Some(t) = tuner {
        t.targets = exec.tuning_targets();
    }
    let restored = match restored.is_empty() {
        true => String::new(),
        false => format!(" (putting the tuning back: {})", restored.join("; ")),
    };
    Some(match rebuilt {
        Ok(consoles) => format!(
            "{dead}: the lab was built again with a new guest, and the campaign goes on{restored}\n\
             {consoles}"
        ),
        Err(e) => format!("{dead}: building its lab again failed: {e}{restored}"),
    })
}

/// Why a finished throughput test is no measurement: nothing arrived in its measured time (a
/// trial's guest stopped passing traffic, and the run was stored as a valid 0 bits/sec, then
/// ranked among "the fastest"). The result is kept beside the failure.
pub fn no_data(r: &crate::traffic::result::TestResult) -> Option<String> {
    (r.rr.is_none() && r.summary.bytes == 0).then(|| {
        format!(
            "no data arrived in the test's {:.1} s: the path or the far end stalled (the run \
             counts as failed, not as 0 bits/sec)",
            r.summary.seconds
        )
    })
}

fn run_configuration(
    cfg: &Configuration,
    exec: &mut dyn Executor,
    stop: &AtomicBool,
) -> ExecOutcome {
    exec.run_test(&cfg.spec, stop)
}

fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) {
    let until = Instant::now() + d;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(
            Duration::from_millis(50).min(until.saturating_duration_since(Instant::now())),
        );
    }
}

pub mod failfast;

#[cfg(test)]
pub(crate) mod tests;
