//! `netsweep tune`.

use crate::cli::{TuneCommand, TuneCommon};
use crate::host::tuning::{self, ApplyOptions, Target, profile};
use crate::platform::signals;
use crate::units::{BitRate, parse_duration};
use anyhow::{Context, bail};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

fn rate_rtt(c: &TuneCommon) -> anyhow::Result<Option<(f64, f64)>> {
    match (&c.rate, &c.rtt) {
        (Some(r), Some(t)) => path(r, t).map(Some),
        (None, None) => Ok(None),
        _ => bail!("--rate and --rtt go together"),
    }
}

/// A path's rate (bit/s) and round-trip time (s), both above zero. The RTT must carry its
/// unit: `--rtt 80` read as 80 s sized buffers for a 477 MB window where ping's 80 ms was meant.
fn path(rate: &str, rtt: &str) -> anyhow::Result<(f64, f64)> {
    let r = rate.parse::<BitRate>().context("--rate")?.bits_per_second();
    if r.is_nan() || r <= 0.0 {
        bail!("--rate {rate}: give the path's rate, e.g. 10G (0 is no path)");
    }
    if rtt.trim().parse::<f64>().is_ok() {
        bail!(
            "--rtt {rtt}: give its unit, e.g. {}ms as ping prints it (or {rtt}s)",
            rtt.trim()
        );
    }
    let t = parse_duration(rtt).context("--rtt")?.as_secs_f64();
    if t <= 0.0 {
        bail!("--rtt {rtt}: give the path's round-trip time, e.g. 20ms");
    }
    Ok((r, t))
}

/// A profile by name: from --profiles first, then the built-ins.
fn load(name: &str, c: &TuneCommon) -> anyhow::Result<profile::Profile> {
    if let Some(f) = &c.profiles {
        let text = if f.as_os_str() == "-" {
            crate::inputs::read_stdin(crate::inputs::MAX_CONFIG_BYTES)
                .context("reading profiles from standard input")?
        } else {
            crate::inputs::read_file(f, crate::inputs::MAX_CONFIG_BYTES)
                .with_context(|| format!("cannot read {}", f.display()))?
        };
        let found =
            profile::parse_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        if let Some(p) = found.into_iter().find(|p| p.name == name) {
            return Ok(p);
        }
    }
    profile::builtin(name, rate_rtt(c)?).map_err(anyhow::Error::msg)
}

/// Runs the same command on the remote host through OpenSSH, with `--target local`: the
/// remote netsweep journals and restores its own settings.
fn over_ssh(dest: &str, c: &TuneCommon) -> anyhow::Result<ExitCode> {
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1).peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--target" => {
                it.next();
                args.extend(["--target".into(), "local".into()]);
            }
            "--ssh-option" | "--remote-netsweep" => {
                it.next();
            }
            _ if a.starts_with("--target=") => args.push("--target=local".into()),
            _ if a.starts_with("--ssh-option=") || a.starts_with("--remote-netsweep=") => {}
            _ => args.push(a),
        }
    }
    let status = tuning::ssh_command(&c.ssh_options)
        .args(["--", dest, &c.remote_netsweep])
        .args(&args)
        .status()
        .context("cannot run ssh (install openssh-client)")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Restores a journal left by a crashed owner, saying so.
fn recover_first(t: &Target) -> anyhow::Result<()> {
    if let Some(r) = tuning::recover(t)? {
        crate::errln!("netsweep: {}", r.recovery_line(t));
    }
    Ok(())
}

pub fn run(cmd: TuneCommand) -> anyhow::Result<ExitCode> {
    let (common, action) = match cmd {
        TuneCommand::Bdp { rate, rtt } => return bdp(&rate, &rtt),
        TuneCommand::Show { profile, common } => return show(profile, &common),
        TuneCommand::Apply {
            profile,
            common,
            allow_host_wide,
            hold,
        } => (
            common,
            Action::Apply {
                profile,
                allow_host_wide,
                hold,
            },
        ),
        TuneCommand::Restore { common } => (common, Action::Restore),
        TuneCommand::Status { common } => (common, Action::Status),
    };
    // A lab host is the lab's to parse: it knows whether the host is a guest.
    let mut t = crate::lab::vm::agent::tuning_target(&common.target)
        .unwrap_or_else(|| Target::parse(&common.target))
        .map_err(anyhow::Error::msg)?;
    if let Target::Ssh(dest) = &t {
        let (has_netsweep, host) =
            tuning::SshHost::probe(dest, &common.ssh_options, &common.remote_netsweep)?;
        if has_netsweep {
            return over_ssh(dest, &common);
        }
        crate::errln!(
            "netsweep: {dest} ({}) has no `{}`: tuning it with plain sysctl commands over ssh, \
             the journal kept here in {}",
            host.os.name(),
            common.remote_netsweep,
            tuning::journal_dir().display()
        );
        t = Target::SshSysctl(host);
    }
    match action {
        Action::Apply {
            profile,
            allow_host_wide,
            hold,
        } => {
            recover_first(&t)?;
            let p = load(&profile, &common)?;
            apply(&t, &p, allow_host_wide, hold)
        }
        Action::Restore => restore(&t),
        Action::Status => {
            recover_first(&t)?;
            status(&t)
        }
    }
}

/// What to do on a local, namespace or lab target.
enum Action {
    Apply {
        profile: String,
        allow_host_wide: bool,
        hold: bool,
    },
    Restore,
    Status,
}

fn bdp(rate: &str, rtt: &str) -> anyhow::Result<ExitCode> {
    let (r, t) = path(rate, rtt)?;
    crate::out!(
        "{}",
        tuning::bdp_text(r, t, &|k| crate::platform::sysctl::read(k).ok())
    );
    Ok(ExitCode::SUCCESS)
}

fn show(name: Option<String>, common: &TuneCommon) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = match name {
        Some(n) => vec![n],
        None => vec![
            "default".into(),
            "high-bdp".into(),
            "high-bdp-ns".into(),
            "large-buffers".into(),
        ],
    };
    for n in names {
        let p = match load(&n, common) {
            Ok(p) => p,
            Err(e) => {
                crate::outln!("{n}: {e:#}");
                continue;
            }
        };
        crate::outln!("{}: {}", p.name, p.description);
        if p.raise_only {
            crate::outln!(
                "  (raises only: a value already larger is kept, field by field; \"here\" is what \
                 applying it would leave on this host)"
            );
        }
        for (k, (v, why)) in &p.linux {
            let why = if why.is_empty() {
                String::new()
            } else {
                format!("   # {why}")
            };
            let here = crate::platform::sysctl::read(k)
                .ok()
                .filter(|_| p.raise_only && cfg!(target_os = "linux"))
                .map(|now| format!("   (here: \"{}\")", profile::raised(&now, v)))
                .unwrap_or_default();
            crate::outln!("  {k} = \"{v}\"{here}{why}");
        }
        for (k, v) in &p.freebsd {
            let meaning = profile::FREEBSD
                .iter()
                .find(|(f, _)| f == k)
                .map(|(_, l)| format!("means {} on Linux; ", l.join(", ")))
                .unwrap_or_default();
            crate::outln!("  (FreeBSD) {k} = \"{v}\"   # {meaning}applied on FreeBSD only");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn apply(
    t: &Target,
    p: &profile::Profile,
    allow_host_wide: bool,
    hold: bool,
) -> anyhow::Result<ExitCode> {
    let stop = signals::install();
    let opts = ApplyOptions {
        allow_host_wide,
        owner_pid: hold.then(std::process::id),
    };
    let entries = tuning::apply(t, p, &opts)?;
    crate::outln!(
        "applied profile {} on {} ({} settings; originals saved in {}):",
        p.name,
        t.id(),
        entries.len(),
        tuning::journal_dir().display()
    );
    for e in &entries {
        if e.applied == e.original {
            crate::outln!(
                "  {} = \"{}\" kept: already at or above the profile's value, which never lowers one",
                e.key,
                e.original
            );
        } else {
            crate::outln!("  {} = \"{}\" (was \"{}\")", e.key, e.applied, e.original);
        }
    }
    if !hold {
        crate::outln!(
            "restore with: {}",
            crate::paste::netsweep(&["tune", "restore", "--target", &tuning::target_arg(t)])
        );
        return Ok(ExitCode::SUCCESS);
    }
    crate::outln!("holding until Ctrl-C, SIGTERM or SIGHUP");
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let r = tuning::restore(t)?;
    crate::outln!(
        "restored {} setting(s) on {}",
        r.map_or(0, |r| r.entries.len()),
        t.id()
    );
    Ok(ExitCode::SUCCESS)
}

fn restore(t: &Target) -> anyhow::Result<ExitCode> {
    match tuning::restore(t)? {
        Some(r) if r.target_gone => crate::outln!(
            "{} no longer exists: its settings of profile {} went with it (journal removed)",
            t.id(),
            r.profile
        ),
        Some(r) => {
            crate::outln!("restored profile {} on {}:", r.profile, t.id());
            for e in &r.entries {
                crate::outln!("  {} = \"{}\"", e.key, e.original);
            }
        }
        None => crate::outln!("nothing to restore on {}", t.id()),
    }
    Ok(ExitCode::SUCCESS)
}

fn status(t: &Target) -> anyhow::Result<ExitCode> {
    let Some(j) = tuning::read_journal(t) else {
        crate::outln!("{}: not tuned by netsweep", t.id());
        return Ok(ExitCode::SUCCESS);
    };
    let owner = j
        .owner_pid
        .map_or("kept until `tune restore`".to_string(), |p| {
            format!("held by process {p}")
        });
    let read = |k: &str| t.read(k).map_err(|e| format!("{e:#}"));
    let keys = tuning::state::key_states(&j, &read);
    let state = tuning::state::profile_state(&keys);
    crate::outln!("{}", tuning::state::headline(&t.id(), &j, &state, &owner));
    for (e, s) in &keys {
        let (now, mark) = match s {
            tuning::state::KeyState::Applied => (e.applied.clone(), "applied"),
            tuning::state::KeyState::Original => (e.original.clone(), "NOT applied"),
            tuning::state::KeyState::Other(v) => (v.clone(), "changed since"),
            tuning::state::KeyState::Unreadable(err) => (format!("unreadable: {err}"), "unknown"),
        };
        crate::outln!(
            "  {} = \"{now}\" [{mark}] (applied \"{}\", original \"{}\")",
            e.key,
            e.applied,
            e.original
        );
    }
    Ok(ExitCode::SUCCESS)
}
