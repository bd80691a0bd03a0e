//! The `lab` subcommands.

use crate::cli::{Cli, ClientArgs, Command, LabCommand, PathArgs, VmArgs};
use crate::lab::{self, EmulatorChoice, Host, Lab, LabOptions, PathConfig, RelayMode};
use crate::traffic::client::ClientConfig;
use crate::traffic::spec::{ServerLimits, TestSpec};
use crate::units::BitRate;
use crate::{platform::netns, platform::signals};
use anyhow::{Context, bail};
use clap::Parser;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(cmd: LabCommand) -> anyhow::Result<ExitCode> {
    let state_dir = PathBuf::from(lab::STATE_DIR);
    if !matches!(
        cmd,
        LabCommand::Relay { .. } | LabCommand::GuestChannel { .. }
    ) {
        reap(&state_dir);
    }
    match cmd {
        LabCommand::Up { name, path, vm } => up(&name, &path, &vm, state_dir),
        LabCommand::VmImage => vm_image(),
        LabCommand::Down { name } => {
            netns::check_privileges()?;
            let removed = lab::down_by_name(&name, &state_dir)?;
            if removed.is_empty() {
                crate::outln!("lab {name}: nothing to remove");
            }
            for r in removed {
                crate::outln!("removed {r}");
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::List => {
            list(&state_dir);
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Exec {
            name,
            host,
            command,
        } => {
            let h =
                Host::parse(&host).with_context(|| format!("host must be a or b, not {host:?}"))?;
            if lab::read_state(&state_dir, &name).is_some_and(|s| s.guest_at(h).is_some()) {
                let (out, rc) = lab::exec_in_guest(&state_dir, &name, h, &command)?;
                crate::out!("{out}");
                return Ok(ExitCode::from(u8::try_from(rc).unwrap_or(1)));
            }
            let names = lab::LabNames::new(&name).map_err(anyhow::Error::msg)?;
            let ns = names.namespace(h);
            if !netns::exists(&ns) {
                bail!(
                    "no lab {name}: create it with `{}`",
                    crate::paste::netsweep(&["lab", "up", name.as_str()])
                );
            }
            let err = std::process::Command::new("ip")
                .args(["netns", "exec", &ns])
                .args(&command)
                .exec();
            Err(err).context("cannot run ip netns exec")
        }
        LabCommand::Test { path, vm, client } => test(&path, &vm, &client),
        LabCommand::Relay {
            name,
            state_dir: dir,
        } => {
            let stop = signals::install();
            lab::run_relay(&name, &dir.unwrap_or(state_dir), stop)?;
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::GuestChannel {
            listen,
            peer,
            token_file,
        } => {
            let listener = std::net::TcpListener::bind(listen)
                .with_context(|| format!("cannot listen on {listen}"))?;
            lab::vm::channel::serve(listener, &token_file, peer)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn describe(p: &PathConfig, emulator: lab::Emulator) -> String {
    let rate = p
        .rate_bps
        .map_or("unlimited".to_string(), |r| BitRate(r).to_string());
    format!(
        "rate {rate}, {}, loss {}%, MTU {}/{}, {}",
        p.delay_text(),
        p.loss_percent,
        p.mtu_a,
        p.mtu_b,
        emulator.describe()
    )
}

/// What `--jitter` means on this lab, so nobody expects RFC 3550's jitter to read it back.
pub fn jitter_note(p: &PathConfig, emulator: lab::Emulator) -> Option<String> {
    if p.jitter.is_zero() {
        return None;
    }
    Some(match emulator {
        lab::Emulator::Userspace => format!(
            "jitter: each packet's one-way delay varies uniformly within +/-{:?}, but packets never \
             overtake each other (a late packet holds back the ones behind it), so the RFC 3550 \
             jitter of a paced flow reads far below {:?} (typically a tenth); it is the spread of \
             one-way delays, not of inter-arrival times",
            p.jitter, p.jitter
        ),
        _ => format!(
            "jitter: netem varies each packet's delay within +/-{:?} and reorders packets when \
             the variation exceeds their spacing, as netem does by default",
            p.jitter
        ),
    })
}

/// The lab's path, with host b a guest when `--vm` asks for one.
fn lab_path(path: &PathArgs, vm: &VmArgs) -> anyhow::Result<(PathConfig, EmulatorChoice)> {
    let (mut p, emulator) = <(PathConfig, EmulatorChoice)>::try_from(path)?;
    p.guest = vm.spec()?;
    p.guest_a = vm.both();
    Ok((p, emulator))
}

fn vm_image() -> anyhow::Result<ExitCode> {
    let dir = lab::vm::image::dir();
    let exe = std::env::current_exe().context("cannot find the netsweep executable")?;
    let image = lab::vm::image::prepare(&dir, &exe, &|m| crate::errln!("{m}"))?;
    crate::outln!("guest image in {}:", image.dir.display());
    crate::outln!(
        "  kernel {} ({})",
        image.kernel_version,
        image.vmlinux.display()
    );
    crate::outln!(
        "  initramfs {} (busybox, NIC modules, this netsweep)",
        image.initrd.display()
    );
    crate::outln!("use it: netsweep lab up NAME --vm b --nic virtio|e1000|rtl8139");
    Ok(ExitCode::SUCCESS)
}

fn up(name: &str, path: &PathArgs, vm: &VmArgs, state_dir: PathBuf) -> anyhow::Result<ExitCode> {
    let (path, emulator) = lab_path(path, vm)?;
    let exe = std::env::current_exe().context("cannot find the netsweep executable")?;
    let opts = LabOptions {
        state_dir,
        emulator,
        relay: RelayMode::Daemon(exe),
        guest_netsweep: None,
        interrupt: None,
    };
    let lab = up_interruptibly(name, path, &opts)?;
    crate::outln!("lab {name} is up: {}", describe(lab.path(), lab.emulator()));
    if let Some(note) = jitter_note(lab.path(), lab.emulator()) {
        crate::outln!("  {note}");
    }
    match lab.guest_at(Host::A) {
        Some(g) => crate::outln!("  host a: {} at {}", g.describe(), Host::A.ipv4()),
        None => crate::outln!(
            "  host a: namespace {} address {} / {}",
            lab.namespace(Host::A),
            Host::A.ipv4(),
            Host::A.ipv6()
        ),
    }
    if let Some(g) = lab.guest() {
        crate::outln!(
            "  host b: {} at {}, its netsweep server on port {}",
            g.describe(),
            Host::B.ipv4(),
            crate::traffic::protocol::DEFAULT_PORT
        );
        // A guest has netsweep on its PATH; namespace a runs this very binary.
        let (client, note) = if lab.guest_at(Host::A).is_some() {
            (
                "netsweep".to_string(),
                "the client in guest a, the server in guest b; -R for guest b to guest a",
            )
        } else {
            (crate::paste::program(), "-R for guest to host")
        };
        crate::outln!(
            "try: {} -- {client} client 198.18.0.2     # {note}",
            crate::paste::netsweep(&["lab", "exec", name, "a"]),
        );
    } else {
        crate::outln!(
            "  host b: namespace {} address {} / {}",
            lab.namespace(Host::B),
            Host::B.ipv4(),
            Host::B.ipv6()
        );
        let me = crate::paste::program();
        crate::outln!(
            "try: {} -- {me} server &   {} -- {me} client 198.18.0.2",
            crate::paste::netsweep(&["lab", "exec", name, "b"]),
            crate::paste::netsweep(&["lab", "exec", name, "a"]),
        );
    }
    crate::outln!(
        "remove it with: {}",
        crate::paste::netsweep(&["lab", "down", name])
    );
    lab.persist();
    Ok(ExitCode::SUCCESS)
}

/// Removes the labs of processes that died without removing them (and restores their
/// tuning), saying so; needs the privileges to remove namespaces, so it is quiet without.
pub fn reap(state_dir: &std::path::Path) {
    if netns::check_privileges().is_err() {
        return;
    }
    for line in lab::reap_orphans(state_dir) {
        crate::errln!("{line}");
    }
}

fn list(state_dir: &std::path::Path) {
    let labs = lab::list(state_dir);
    if labs.is_empty() {
        crate::outln!("no labs");
    }
    for l in labs {
        let what = match &l.state {
            Some(s) => {
                let mut text = describe(&s.path, s.emulator);
                for h in [Host::A, Host::B] {
                    if let Some(g) = s.guest_at(h) {
                        text.push_str(&format!("; host {}: {}", h.letter(), g.describe()));
                    }
                }
                text
            }
            None if l.only_processes => {
                "no state file and no namespaces, but its delay line or QEMU still runs".to_string()
            }
            None => "no state file".to_string(),
        };
        let flag = if l.leftover {
            format!(
                "  LEFTOVER: clean with `{}`",
                crate::paste::netsweep(&["lab", "down", l.name.as_str()])
            )
        } else {
            String::new()
        };
        crate::outln!("{}: {what}{flag}", l.name);
    }
}

/// Builds a lab with Ctrl-C, SIGTERM and SIGHUP caught first: a signal while the namespaces
/// are made or a guest boots (seconds under emulation) no longer kills the process half way,
/// leaving them and QEMU behind; the lab is finished, then removed, and the command stops.
fn up_interruptibly(name: &str, path: PathConfig, opts: &LabOptions) -> anyhow::Result<Lab> {
    let stop = signals::install();
    let opts = LabOptions {
        interrupt: Some(stop),
        ..opts.clone()
    };
    let lab = Lab::up(name, path, &opts).with_context(|| format!("lab {name} was not built"))?;
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        lab.down()?;
        bail!("interrupted while lab {name} was being built: removed it again");
    }
    Ok(lab)
}

fn test(path: &PathArgs, vm: &VmArgs, client_args: &[String]) -> anyhow::Result<ExitCode> {
    let (path, emulator) = lab_path(path, vm)?;
    let mut argv = vec![
        "netsweep".to_string(),
        "client".to_string(),
        Host::B.ipv4().to_string(),
    ];
    argv.extend(client_args.iter().cloned());
    let args: ClientArgs = match Cli::try_parse_from(&argv)
        .map_err(|e| anyhow::anyhow!("client options: {e}"))?
        .command
    {
        Command::Client(a) => *a,
        _ => bail!("client options expected after --"),
    };
    let (mut cfg, spec): (ClientConfig, TestSpec) = (&args).try_into()?;
    let view = crate::app::ClientView::try_from(&args)?;
    let name = format!("t{}", std::process::id() % 100_000_000);
    let opts = LabOptions {
        emulator,
        ..LabOptions::default()
    };
    let lab = up_interruptibly(&name, path, &opts)?;
    cfg.path = std::mem::take(&mut cfg.path).or(lab.path().rfc6349_facts(lab.emulator()));
    if view.json.is_none() {
        crate::outln!("lab {name}: {}", describe(lab.path(), lab.emulator()));
        if let Some(note) = jitter_note(lab.path(), lab.emulator()) {
            crate::outln!("  {note}");
        }
        for h in [Host::A, Host::B] {
            if let Some(g) = lab.guest_at(h) {
                crate::outln!("  host {}: {}", h.letter(), g.describe());
            }
        }
    }
    // A guest runs its own server (started by its init); a namespace gets one here.
    let server = match lab.guest() {
        Some(_) => None,
        None => Some(lab.start_server(Host::B, ServerLimits::default())?),
    };
    let drops0 = lab.delay_line_drops_by_direction();
    let snapshot = |h| lab.run_in(h, crate::host::counters::read_live).ok();
    let before = (snapshot(Host::A), snapshot(Host::B));
    let code = match lab.guest_at(Host::A) {
        // Guest to guest: the client runs in host a's guest, which prints its own result.
        Some(_) => lab.exec_in_guest(Host::A, &argv).map(|(out, rc)| {
            crate::out!("{out}");
            ExitCode::from(u8::try_from(rc).unwrap_or(1))
        }),
        None => lab.run_in(Host::A, || crate::app::client_and_print(&cfg, &spec, &view)),
    };
    if spec.protocol == crate::traffic::spec::Protocol::Udp && view.json.is_none() {
        let drops = crate::lab::loss::between(drops0, lab.delay_line_drops_by_direction());
        if let ((Some(a0), Some(b0)), Some(a1), Some(b1)) =
            (before, snapshot(Host::A), snapshot(Host::B))
        {
            let d = [
                crate::host::counters::delta(&a0, &a1),
                crate::host::counters::delta(&b0, &b1),
            ];
            for (from, to, way) in [(0, 1, "a to b"), (1, 0, "b to a")] {
                let device = lab.device(if from == 0 { Host::A } else { Host::B });
                if let Some(s) =
                    crate::lab::loss::account(None, drops[from], &d[from], &d[to], &device)
                {
                    crate::outln!("Lab path from host {way}: {s}");
                }
            }
        }
    }
    drop(server);
    lab.down()?;
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a lab with `--jitter 2ms` measured 0.14 to 0.24 ms of RFC 3550 jitter, with
    /// no word on why.
    #[test]
    fn the_jitter_note_says_what_the_delay_line_does() {
        let mut p = PathConfig::default();
        assert_eq!(jitter_note(&p, lab::Emulator::Userspace), None);
        p.jitter = std::time::Duration::from_millis(2);
        let note = jitter_note(&p, lab::Emulator::Userspace).unwrap();
        assert!(
            note.contains("never overtake") && note.contains("RFC 3550"),
            "{note}"
        );
        let netem = jitter_note(&p, lab::Emulator::Netem).unwrap();
        assert!(netem.contains("reorders"), "{netem}");
    }
}
