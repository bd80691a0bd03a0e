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
/// remote netsweep journals and restores its own settings. A profile file is read here and
/// sent on standard input (a path would be opened there); the commands the remote suggests
/// are printed as they reach it from here; `--hold` holds here and restores there at the end
/// (a holder there outlived this end's Ctrl-C, orphaned, the profile in force).
fn over_ssh(dest: &str, c: &TuneCommon) -> anyhow::Result<ExitCode> {
    let mut args: Vec<String> = Vec::new();
    let mut hold = false;
    // After the program and `tune` (`remote_tune` says `tune` there).
    let mut it = std::env::args().skip(2).peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--target" => {
                it.next();
                args.extend(["--target".into(), "local".into()]);
            }
            "--ssh-option" | "--remote-netsweep" | "--profiles" => {
                it.next();
            }
            "--hold" => hold = true,
            _ if a.starts_with("--target=") => args.push("--target=local".into()),
            _ if ["--ssh-option=", "--remote-netsweep=", "--profiles="]
                .iter()
                .any(|p| a.starts_with(p)) => {}
            _ => args.push(a),
        }
    }
    let profiles = match &c.profiles {
        Some(f) if f.as_os_str() == "-" => Some(
            crate::inputs::read_stdin(crate::inputs::MAX_CONFIG_BYTES)
                .context("reading profiles from standard input")?,
        ),
        Some(f) => Some(
            crate::inputs::read_file(f, crate::inputs::MAX_CONFIG_BYTES)
                .with_context(|| format!("cannot read {}", f.display()))?,
        ),
        None => None,
    };
    if profiles.is_some() {
        args.extend(["--profiles".into(), "-".into()]);
    }
    let stop = hold.then(signals::install);
    let mut target = vec![format!("ssh:{dest}")];
    for o in &c.ssh_options {
        target.extend(["--ssh-option".into(), o.clone()]);
    }
    if c.remote_netsweep != "netsweep" {
        target.extend(["--remote-netsweep".into(), c.remote_netsweep.clone()]);
    }
    let target: Vec<String> = target.iter().map(|w| crate::paste::quote(w)).collect();
    let target = format!("--target {}", target.join(" "));
    let ok = remote_tune(dest, c, &args, profiles.as_deref(), &target)?;
    let Some(stop) = stop.filter(|_| ok) else {
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    };
    crate::outln!("holding until Ctrl-C, SIGTERM or SIGHUP (then restored on {dest})");
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let restore = ["restore".to_string(), "--target".into(), "local".into()];
    let ok = remote_tune(dest, c, &restore, None, &target)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `netsweep tune ARGS` on `dest` through ssh, its output printed here with the commands it
/// suggests made to reach it from here (`target`: this end's `--target` words); whether it
/// succeeded.
fn remote_tune(
    dest: &str,
    c: &TuneCommon,
    args: &[String],
    stdin: Option<&str>,
    target: &str,
) -> anyhow::Result<bool> {
    use std::io::Write;
    // ssh hands the words to the remote shell joined by spaces: each is quoted for it.
    let words: Vec<String> = std::iter::once(c.remote_netsweep.as_str())
        .chain(std::iter::once("tune"))
        .chain(args.iter().map(String::as_str))
        .map(crate::paste::quote)
        .collect();
    let mut child = tuning::ssh_command(&c.ssh_options)
        .args(["--", dest])
        .args(&words)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot run ssh (install openssh-client)")?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .context("ssh's standard input")?;
    }
    let out = child.wait_with_output().context("ssh")?;
    let program = crate::paste::program();
    let here = |text: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(text)
            .lines()
            .map(|l| tuning::localize_hint(l, &program, target))
            .collect()
    };
    crate::outln!("on {dest}, by its {}:", c.remote_netsweep);
    for line in here(&out.stdout) {
        crate::outln!("{line}");
    }
    for line in here(&out.stderr) {
        crate::errln!("{line}");
    }
    Ok(out.status.success())
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
    let mut t = target_of(&common)?;
    if let Target::Ssh(dest) = &t {
        let (has_netsweep, host) =
            tuning::SshHost::probe(dest, &common.ssh_options, &common.remote_netsweep)?;
        let plain = Target::SshSysctl(host);
        // A profile applied with plain sysctl commands is journaled here: it is read and
        // restored the same way even where netsweep runs there now (its own journal would
        // say "not tuned" of a host that is).
        let journaled_here = tuning::read_journal(&plain).is_some();
        if has_netsweep && !journaled_here {
            return over_ssh(dest, &common);
        }
        if has_netsweep {
            crate::errln!(
                "netsweep: {dest} was tuned with plain sysctl commands over ssh (the journal is \
                 here in {}): handled the same way",
                tuning::journal_dir().display()
            );
        } else {
            crate::errln!(
                "netsweep: {dest} ({}) has no `{}`: tuning it with plain sysctl commands over \
                 ssh, the journal kept here in {}",
                plain.os().name(),
                common.remote_netsweep,
                tuning::journal_dir().display()
            );
        }
        t = plain;
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

/// The target `--target` names. A lab host is the lab's to parse: it knows whether the host is
/// a guest.
fn target_of(common: &TuneCommon) -> anyhow::Result<Target> {
    crate::lab::vm::agent::tuning_target(&common.target)
        .unwrap_or_else(|| Target::parse(&common.target))
        .map_err(anyhow::Error::msg)
}

/// Where `tune show` reads the values a raising profile would leave: the target named
/// (`--target ssh:...` read this host's values and called them the server's), with its words.
fn shown_place(common: &TuneCommon) -> anyhow::Result<(Target, String)> {
    if common.target == "local" {
        return Ok((Target::Local, "here".into()));
    }
    let t = match target_of(common)? {
        // Read with sysctl there whether or not netsweep runs there.
        Target::Ssh(dest) => Target::SshSysctl(
            tuning::SshHost::probe(&dest, &common.ssh_options, &common.remote_netsweep)?.1,
        ),
        other => other,
    };
    let words = format!("on {}", common.target);
    Ok((t, words))
}

fn show(name: Option<String>, common: &TuneCommon) -> anyhow::Result<ExitCode> {
    let (place, place_words) = shown_place(common)?;
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
                "  (raises only: a value already larger is kept, field by field; \"{place_words}\" \
                 is what applying it would leave there)"
            );
        }
        for (k, (v, why)) in &p.linux {
            let why = if why.is_empty() {
                String::new()
            } else {
                format!("   # {why}")
            };
            let here = (p.raise_only && place.os() == crate::platform::Os::Linux)
                .then(|| place.read(k).ok())
                .flatten()
                .map(|now| format!("   ({place_words}: \"{}\")", profile::raised(&now, v)))
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
    let kept = entries.iter().filter(|e| e.applied == e.original).count();
    let counted = if kept == 0 {
        format!("{} settings", entries.len())
    } else {
        let changed = entries.len() - kept;
        let s = if changed == 1 { "" } else { "s" };
        format!("{changed} setting{s} changed, {kept} kept")
    };
    crate::outln!(
        "applied profile {} on {} ({counted}; originals saved in {}):",
        p.name,
        t.id(),
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
        crate::outln!("restore with: {}", tuning::restore_command(t));
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
    // Values someone changed after the apply are put back too: said, not done silently.
    let changed: Vec<(String, String)> = tuning::read_journal(t)
        .map(|j| {
            let read = |k: &str| t.read(k).map_err(|e| format!("{e:#}"));
            tuning::state::key_states(&j, &read)
                .into_iter()
                .filter_map(|(e, s)| match s {
                    tuning::state::KeyState::Other(now) => Some((e.key, now)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let restored = tuning::restore(t)?;
    match restored {
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
    for (key, now) in &changed {
        crate::outln!(
            "note: {key} held \"{now}\", neither the profile's value nor the original: it was \
             changed after the apply, and is back to the original now"
        );
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
    let restore = tuning::restore_command(t);
    crate::outln!(
        "{}",
        tuning::state::headline(&t.id(), &j, &state, &owner, &restore)
    );
    for (e, s) in &keys {
        let (now, mark) = match s {
            // A raising profile's value already in force: nothing was written.
            tuning::state::KeyState::Applied if e.applied == e.original => {
                (e.applied.clone(), "kept")
            }
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
