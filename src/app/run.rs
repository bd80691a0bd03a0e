//! `netsweep run`: a campaign from its plan, stored as it runs, with its summary and answer.

use crate::app::report::write_report;
use crate::campaigns::campaign::{self, Metric};
use crate::campaigns::executor::{AddressExecutor, LabExecutor, LibvirtExecutor, LoopbackExecutor};
use crate::campaigns::plan::{Plan, Target};
use crate::campaigns::runner::{self, Executor, Progress};
use crate::campaigns::store::{CampaignRow, RunnerLock, Store};
use crate::cli::{More, RunArgs};
use crate::inputs;
use crate::lab::LabOptions;
use crate::platform::signals;
use crate::units::BitRate;
use anyhow::{Context, bail};
use hints::{first_difference, more_command, resume_command};
use std::path::Path;
use std::process::ExitCode;
use summary::print_summary;

mod hints;
mod summary;

/// Builds the executor of a plan's target; this is also the reachability check.
fn executor_for(plan: &Plan, check: bool) -> anyhow::Result<Box<dyn Executor>> {
    if matches!(plan.target, Target::Lab { .. } | Target::Auto { .. }) {
        // A campaign killed before (kill -9) left its lab and the tuning inside it.
        super::lab::reap(std::path::Path::new(crate::lab::STATE_DIR));
    }
    // A campaign killed before (kill -9) left a libvirt domain redefined: put it back first
    // (a check only says so: it does nothing to a guest).
    use crate::host::libvirt::journal::{self, Stale};
    let mode = if check { Stale::Report } else { Stale::Restore };
    let say = |l: &str| crate::errln!("{l}");
    for line in journal::recover_stale(std::time::Duration::from_secs(60), mode, &say) {
        crate::errln!("netsweep: {line}");
    }
    // Eight characters at most: a campaign keeping several labs appends a digit (`pool`).
    let lab_name = format!("r{}", std::process::id() % 10_000_000);
    let lab = |path: &crate::lab::PathConfig, emulator| -> anyhow::Result<Box<dyn Executor>> {
        let opts = LabOptions {
            emulator,
            // Handlers are installed before anything is built (`run`); a signal during the
            // build stops it and removes what was made.
            interrupt: Some(signals::flag()),
            ..LabOptions::default()
        };
        // The other paths the campaign sweeps: a lab target boots their guests at once.
        let others: Vec<crate::lab::PathConfig> = plan
            .configurations()
            .iter()
            .filter_map(|c| plan.path_for(c)?.ok())
            .filter(|p| p != path)
            .collect();
        Ok(Box::new(LabExecutor::start(
            &lab_name,
            path.clone(),
            &others,
            &opts,
        )?))
    };
    Ok(match &plan.target {
        Target::Loopback => Box::new(LoopbackExecutor::start()?),
        Target::Lab { path, emulator } => lab(path, *emulator)?,
        Target::Auto { path, emulator } => match crate::platform::netns::check_privileges() {
            Ok(()) => lab(path, *emulator)?,
            Err(why) => {
                crate::errln!(
                    "running on loopback instead of a lab, without its rate and delay: {why:#}"
                );
                Box::new(LoopbackExecutor::start()?)
            }
        },
        Target::Address(host) => Box::new(AddressExecutor {
            addr: reachable(
                host,
                crate::traffic::protocol::DEFAULT_PORT,
                "netsweep server",
            )?,
            peer: crate::traffic::client::PeerProtocol::Netsweep,
        }),
        Target::Libvirt(t) => {
            let exec = LibvirtExecutor::start(t, check)?;
            for line in &exec.notes {
                crate::errln!("netsweep: {line}");
            }
            Box::new(exec)
        }
        Target::Iperf3(host) => Box::new(AddressExecutor {
            addr: reachable(host, crate::traffic::iperf3::IPERF3_PORT, "iperf3 -s")?,
            peer: crate::traffic::client::PeerProtocol::Iperf3,
        }),
    })
}

/// The address of `HOST[:PORT]`, checked to accept connections (a server of `what` there).
fn reachable(host: &str, default_port: u16, what: &str) -> anyhow::Result<std::net::SocketAddr> {
    let addr = crate::traffic::address::resolve_host_port(host, default_port)?;
    let port = if addr.port() == default_port {
        String::new()
    } else {
        format!(" -p {}", addr.port())
    };
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(3)).with_context(
        || format!("target {addr} is unreachable: is `{what}{port}` running there?"),
    )?;
    Ok(addr)
}

/// `--resume` needs an unfinished campaign of the plan; without `--resume` or `--new` one is an
/// error, so a campaign is never continued or abandoned by accident.
fn check_resume(
    a: &RunArgs,
    (db, store, plan): (&Path, &Store, &Plan),
    unfinished: Option<&CampaignRow>,
) -> anyhow::Result<()> {
    match unfinished {
        // An unfinished campaign of an edited plan: said, with the line that differs (a trial
        // changed one line and read "no unfinished campaign").
        None if a.resume => match store.newest_unfinished()? {
            // Its plan as it was, written beside this one, and the command that resumes it (a
            // VM trial was told to resume "with its plan as it was", with no way to get it).
            Some(other) => match hints::saved_plan(&a.plan, other.id, &other.plan_toml) {
                Some(saved) => bail!(
                    "cannot resume with this plan: {} holds unfinished campaign {} of a plan that \
                     differs from {} ({}); that plan as it was is now in {}: resume it with: {}; \
                     or start this one with --new",
                    db.display(),
                    other.id,
                    a.plan.display(),
                    first_difference(&other.plan_toml, &plan.source),
                    saved.display(),
                    crate::paste::netsweep(&[
                        std::ffi::OsStr::new("run"),
                        saved.as_os_str(),
                        "--db".as_ref(),
                        db.as_os_str(),
                        "--resume".as_ref(),
                    ])
                ),
                None => bail!(
                    "cannot resume with this plan: {} holds unfinished campaign {} of a plan \
                     that differs from {} ({}); resume it with its plan as it was, or start this \
                     one with --new",
                    db.display(),
                    other.id,
                    a.plan.display(),
                    first_difference(&other.plan_toml, &plan.source)
                ),
            },
            None => bail!(
                "nothing to resume: {} has no unfinished campaign of this plan (to add rounds \
                 to a finished one, keep its plan as it was and use --more N)",
                db.display()
            ),
        },
        Some(c) if !a.resume && !a.new => bail!(
            "{} has an unfinished campaign {} of this plan: continue it with --resume, or start over with --new",
            db.display(),
            c.id
        ),
        _ => Ok(()),
    }
}

/// This host's limits that the plan's values meet (`runner::value_warnings`).
fn host_limits() -> runner::HostLimits {
    let read = |key: &str| {
        crate::inputs::read_pseudo(Path::new("/proc/sys/net/core").join(key).as_path())
            .ok()
            .and_then(|t| t.trim().parse().ok())
    };
    let release = crate::inputs::read_pseudo(Path::new("/proc/sys/kernel/osrelease"))
        .map(|r| r.trim().to_string())
        .unwrap_or_default();
    let module_dir = Path::new("/lib/modules")
        .join(&release)
        .join("kernel/net/sched");
    let netem = Path::new("/sys/module/sch_netem").exists()
        || std::fs::read_dir(&module_dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with("sch_netem"))
        });
    runner::HostLimits {
        root: crate::platform::process::is_root(),
        rmem_max: read("rmem_max"),
        wmem_max: read("wmem_max"),
        netem,
    }
}

/// How many rounds `--more` adds: the number given, or with `auto` the rounds the finished
/// campaign's answer says would settle its undecided comparisons (`None`, said once, when
/// every comparison is decided already).
fn rounds_to_add(store: &Store, plan: &Plan, more: More) -> anyhow::Result<Option<u32>> {
    let More::Rounds(n) = more else {
        let Some(c) = store.finished_campaign(&plan.source)? else {
            // more_rounds says why there is nothing to extend.
            return Ok(Some(1));
        };
        // Configurations with too few runs to compare are in no comparison at all (a trial's
        // `--more auto` after count = 2 said every comparison was decided): they need the
        // rounds that bring each to the minimum first.
        let mut ok_runs: std::collections::BTreeMap<String, usize> = store
            .configurations(c.id)?
            .into_iter()
            .map(|row| (row.label, 0))
            .collect();
        for r in store.runs(c.id)?.iter().filter(|r| r.status == "ok") {
            *ok_runs.entry(r.configuration.clone()).or_default() += 1;
        }
        let fewest = ok_runs.values().copied().min().unwrap_or(0);
        let min = crate::analysis::sets::MIN_RUNS;
        if fewest < min {
            let n = min - fewest;
            crate::outln!(
                "campaign {} has configurations with {fewest} successful run(s), fewer than \
                 the {min} a comparison needs: adding {n} round(s) first",
                c.id
            );
            return Ok(Some(u32::try_from(n).unwrap_or(u32::MAX)));
        }
        let ask = crate::campaigns::explain::Ask::new(Metric::BitsPerSecond);
        let e = super::explain::explanation(store, c.id, &ask)?;
        // The comparisons the run printed count too (`until = "decided"` waits for them).
        let facts = plan.facts();
        let runs = store.runs(c.id)?;
        let used = if ask.keeps_outliers(&facts) {
            runs
        } else {
            campaign::screen(&runs, Metric::BitsPerSecond).0
        };
        let (open, rounds) = campaign::open_in(
            &campaign::summary_groups(&used, &plan.order(), &ask.judging(&facts)),
            &e.settled,
        );
        let undecided = open
            + e.comparisons
                .iter()
                .filter(|d| d.decision.outcome == crate::analysis::decide::Outcome::Undecided)
                .count();
        let needed = e.effects.rounds_needed.max(rounds);
        if undecided > 0 && needed.is_none() {
            bail!(
                "--more auto: {undecided} comparison(s) of campaign {}'s answer are undecided, \
                 and at this noise no practical number of rounds would settle them: make the \
                 runs quieter (longer runs, an idle host) or give --more N",
                c.id
            );
        }
        return Ok(match needed {
            Some(n) => {
                crate::outln!(
                    "the answer of campaign {} needs about {n} more rounds to settle its \
                     undecided comparisons",
                    c.id
                );
                Some(u32::try_from(n).unwrap_or(u32::MAX))
            }
            None => {
                crate::outln!(
                    "every comparison of campaign {}'s answer is decided: no rounds to add",
                    c.id
                );
                None
            }
        });
    };
    Ok(Some(n))
}

/// The finished campaign `--more N` extends, and its rounds in all afterwards.
fn more_rounds(
    store: &Store,
    plan: &Plan,
    db: &Path,
    unfinished: Option<&CampaignRow>,
    n: u32,
) -> anyhow::Result<(CampaignRow, u32)> {
    if n == 0 {
        bail!("--more 0 adds nothing");
    }
    if let Some(c) = unfinished {
        bail!(
            "campaign {} of this plan is unfinished: finish it with --resume first, then add rounds",
            c.id
        );
    }
    let Some(c) = store.finished_campaign(&plan.source)? else {
        bail!(
            "{} has no finished campaign of this plan to add rounds to (the plan must be the \
             same text as when it ran)",
            db.display()
        );
    };
    // On from the rounds that ran: a campaign `until` stopped early ran fewer than it planned
    // (a trial's `--more 2` after 3 of at most 5 rounds ran one, `until` stopping it again).
    let done = store
        .runs(c.id)?
        .iter()
        .map(|r| r.round + 1)
        .max()
        .unwrap_or(c.repetitions);
    let rounds = done
        .checked_add(n)
        .filter(|r| {
            u64::from(*r) * plan.configurations().len() as u64 <= crate::campaigns::plan::MAX_RUNS
        })
        .with_context(|| format!("--more {n}: more runs than one campaign holds"))?;
    Ok((c, rounds))
}

fn bar(done: usize, total: usize) -> String {
    let width = 20;
    let filled = (done * width).checked_div(total).unwrap_or(width);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(width - filled))
}

fn fmt_eta(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

pub fn run(a: &RunArgs) -> anyhow::Result<ExitCode> {
    // First: a signal at any later moment (the lab and its guests being built included) is
    // seen, and whatever was made is removed, instead of the process dying half way.
    let stop = signals::install();
    let text = inputs::read_file(&a.plan, inputs::MAX_CONFIG_BYTES)
        .with_context(|| format!("cannot read plan {}", a.plan.display()))?;
    let file = a.plan.display().to_string();
    let plan = match Plan::parse(&file, &text) {
        Ok(p) => p,
        Err(e) => {
            crate::errln!("{e}");
            return Ok(ExitCode::from(2));
        }
    };
    let db = a.db.clone().unwrap_or_else(|| {
        a.plan
            .parent()
            .unwrap_or(Path::new("."))
            .join("netsweep.db")
    });
    // A check reads the database that is there and creates none (a trial's `run --check`
    // left an empty campaign database and its lock beside the plan).
    let checking_anew = a.check && !db.exists();
    let _lock = (!checking_anew)
        .then(|| RunnerLock::acquire(&db))
        .transpose()?;
    let mut store = if checking_anew {
        Store::in_memory()?
    } else {
        Store::open(&db)?
    };
    let unfinished = store.unfinished_campaign(&plan.source)?;
    let extended = match a.more {
        Some(more) => {
            let Some(n) = rounds_to_add(&store, &plan, more)? else {
                return Ok(ExitCode::SUCCESS);
            };
            let (c, rounds) = more_rounds(&store, &plan, &db, unfinished.as_ref(), n)?;
            Some((c, n, rounds))
        }
        None => {
            check_resume(a, (&db, &store, &plan), unfinished.as_ref())?;
            None
        }
    };
    let mut plan = plan;
    if let Some((_, _, rounds)) = &extended {
        // Every round asked for runs: `until` decides only past them.
        plan.repeat.count = *rounds;
        plan.repeat.min = *rounds;
    }
    // Every warning and every refusal at once, before any traffic.
    for w in runner::value_warnings(&plan, &host_limits()) {
        crate::errln!("warning: {w}");
    }
    let cc = runner::congestion_problems(&plan);
    if !cc.is_empty() {
        crate::errln!("{file}: {}, nothing was run", cc.join("; "));
        return Ok(ExitCode::from(2));
    }
    let mut exec = executor_for(&plan, a.check)?;
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        drop(exec);
        crate::errln!("interrupted before the campaign started: nothing was run");
        return Ok(ExitCode::from(130));
    }
    let (far, far_warnings) = exec.far_check(&plan);
    for w in far_warnings {
        crate::errln!("warning: {w}");
    }
    if !far.is_empty() {
        crate::errln!("{file}: {}, nothing was run", far.join("; "));
        return Ok(ExitCode::from(2));
    }
    let targets = exec.tuning_targets();
    for note in runner::guest_only_notes(&plan, &targets) {
        crate::errln!("note: {note}");
    }
    let problems = runner::tuning_problems(&plan, &targets);
    if !problems.is_empty() {
        crate::errln!(
            "{file}: the plan's tuning profiles cannot be applied on {}, nothing was run:\n  {}",
            exec.describe(),
            problems.join("\n  ")
        );
        return Ok(ExitCode::from(2));
    }
    let configs = plan.configurations().len();
    if a.check {
        crate::outln!(
            "plan {file} is valid: {configs} configurations x {} runs on {}",
            plan.repeat.count,
            exec.describe()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some((c, n, rounds)) = &extended {
        store.extend_campaign(c.id, *rounds)?;
        crate::outln!(
            "adding {n} rounds to campaign {} ({rounds} rounds in all)",
            c.id
        );
    }
    let (campaign, seed) = match unfinished
        .filter(|_| a.resume)
        .or(extended.map(|(c, _, _)| c))
    {
        Some(c) => {
            crate::outln!("resuming campaign {} (seed {})", c.id, c.seed);
            (c.id, c.seed)
        }
        None => {
            let seed = plan
                .repeat
                .seed
                .unwrap_or_else(|| u64::from(rand::random::<u32>()));
            let facts = exec.host_facts();
            let id = store.create_campaign(&plan, Some(&file), &exec.describe(), seed, &facts)?;
            // The doctor's view of this host, kept next to the numbers.
            store.set_doctor(id, &serde_json::to_string(&super::doctor::host_only())?)?;
            (id, seed)
        }
    };
    crate::outln!(
        "campaign {campaign}: {configs} configurations x {} runs, {} order (seed {seed}), target {}, results in {}",
        plan.repeat.count,
        plan.repeat.order.name(),
        exec.describe(),
        db.display()
    );
    let mut printer = ProgressPrinter::default();
    let outcome = runner::run_campaign(
        &plan,
        &mut store,
        campaign,
        seed,
        exec.as_mut(),
        stop,
        &mut |p| printer.show(p),
    )?;
    if let Some(gathered) = exec.facts_gathered() {
        store.add_host_fact(campaign, "guests", &gathered)?;
    }
    drop(exec);
    printer.print_overhead();
    let rounds_needed = print_summary(&store, campaign, &plan, &db)?;
    if outcome.interrupted {
        crate::outln!(
            "interrupted: {} runs stored; continue with: {}",
            outcome.ran,
            resume_command(a)
        );
        return Ok(ExitCode::from(130));
    }
    if outcome.skipped > 0 && outcome.skipped_left == 0 {
        crate::outln!(
            "{} configuration(s) failed the same way to the campaign's last round (the notes \
             above say why), so none of their runs is left to retry; after a fix, add the rounds \
             they need with: {}",
            outcome.skipped,
            more_command(a, "auto")
        );
    } else if outcome.skipped > 0 {
        crate::outln!(
            "{} configuration(s) were skipped for failing the same way round after round (the \
             notes above say why); after a fix, retry them with: {}",
            outcome.skipped,
            resume_command(a)
        );
    } else {
        // Failures short of a skip (a guest that died in the last round, a VM trial's 4 runs):
        // said, with the command that adds a round in their place.
        let failed = store
            .runs(campaign)?
            .iter()
            .filter(|r| r.status != "ok")
            .count();
        if failed > 0 {
            crate::outln!(
                "{failed} run(s) failed (the lines above say why) and are left out of the \
                 answer; after a fix, add a round of every configuration with: {}",
                more_command(a, "1")
            );
        }
    }
    if outcome.all_failing {
        crate::errln!(
            "campaign {campaign} stopped: every configuration failed the same way in two \
             consecutive rounds"
        );
        return Ok(ExitCode::from(1));
    }
    let stem = db
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let report = db.with_file_name(format!("{stem}-campaign{campaign}.html"));
    write_report(&store, campaign, &report, crate::cli::ReportFormat::Html)?;
    // Every suggested command pastes as printed: a dimension of the plan, not a placeholder.
    if let Some(first) = plan.dimensions.first() {
        crate::outln!(
            "compare other ways: {}",
            crate::paste::netsweep(&[
                std::ffi::OsStr::new("compare"),
                "--db".as_ref(),
                db.as_os_str(),
                "--by".as_ref(),
                first.name.as_ref(),
            ])
        );
        if plan.dimensions.len() > 1 {
            let names: Vec<&str> = plan.dimensions.iter().map(|d| d.name.as_str()).collect();
            crate::outln!("  (--by takes any of: {})", names.join(", "));
        }
    }
    crate::outln!("report: {}", report.display());
    if let Some(n) = rounds_needed {
        crate::outln!(
            "to settle the undecided comparisons: {}",
            more_command(a, &n.to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a campaign's progress, one line per finished run, and keeps the runner's overhead.
#[derive(Default)]
struct ProgressPrinter {
    overheads: Vec<f64>,
}

impl ProgressPrinter {
    fn show(&mut self, p: &Progress) {
        match p {
            Progress::Started {
                total,
                already_done,
            } if *already_done > 0 => {
                crate::outln!("{already_done} of {total} runs already stored");
            }
            Progress::Started { .. } => {}
            Progress::Note(n) => crate::outln!("note: {n}"),
            Progress::RunFinished {
                done,
                total,
                failures,
                label,
                round,
                bits_per_second,
                error,
                eta,
                overhead,
            } => {
                self.overheads.push(overhead.as_secs_f64());
                let what = match (bits_per_second, error) {
                    (Some(b), _) => BitRate(*b).to_string(),
                    (_, Some(e)) => format!("FAILED: {e}"),
                    _ => "?".into(),
                };
                crate::outln!(
                    "{} {done:>4}/{total} {label} (round {}): {what}   failures {failures}, ETA {}",
                    bar(*done, *total),
                    round + 1,
                    fmt_eta(*eta)
                );
            }
        }
    }

    fn print_overhead(&self) {
        if self.overheads.is_empty() {
            return;
        }
        let mean = self.overheads.iter().sum::<f64>() / self.overheads.len() as f64;
        crate::outln!(
            "runner overhead per run (store, counters, setup): mean {:.0} ms",
            mean * 1000.0
        );
    }
}
