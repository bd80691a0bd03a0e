//! `netsweep doctor`.

use crate::cli::DoctorArgs;
use crate::host::doctor::{self, Diagnosis, HostView, PathHints};
use crate::host::freebsd;
use crate::inputs;
use crate::units::{BitRate, parse_duration};
use anyhow::Context;
use std::process::ExitCode;

/// Where a host's facts come from: Linux's `/proc` and `/sys` (live or a fixture tree), or a
/// FreeBSD host's tool outputs (live, or saved in a directory).
enum Source {
    Linux(HostView),
    FreeBsd(Option<std::path::PathBuf>),
}

impl Source {
    fn live() -> Source {
        match crate::platform::THIS_OS {
            crate::platform::Os::Linux => Source::Linux(HostView::live()),
            crate::platform::Os::FreeBsd => Source::FreeBsd(None),
        }
    }

    fn capture(dir: &Option<std::path::PathBuf>) -> freebsd::Capture {
        dir.as_deref()
            .and_then(freebsd::Capture::from_dir)
            .unwrap_or_else(freebsd::Capture::live)
    }

    fn check(&self, hints: &PathHints) -> Vec<doctor::Finding> {
        match self {
            Source::Linux(view) => doctor::host::check(view, hints),
            Source::FreeBsd(dir) => doctor::freebsd::check(&Self::capture(dir), hints),
        }
    }

    fn sample(&self) -> doctor::host::Sample {
        match self {
            Source::Linux(view) => doctor::host::sample(view),
            Source::FreeBsd(dir) => doctor::freebsd::sample(&Self::capture(dir)),
        }
    }
}

/// The live host's diagnosis without a peer (stored with every campaign).
pub fn host_only() -> Diagnosis {
    Diagnosis {
        findings: Source::live().check(&PathHints::default()),
    }
}

/// `doctor --libvirt DOMAIN`: the domain as it runs and as it will next start, and the
/// guest's drivers over ssh where given. A domain a killed campaign left changed is put back
/// first, so the diagnosis is of the user's own definition.
fn libvirt_domain(
    domain: &str,
    uri: Option<String>,
    guest_ssh: Option<&str>,
) -> anyhow::Result<Vec<doctor::Finding>> {
    use crate::host::libvirt::{journal, virsh::Virsh, xml};
    let say = |l: &str| crate::errln!("{l}");
    for line in journal::recover_stale(
        std::time::Duration::from_secs(60),
        journal::Stale::Restore,
        &say,
    ) {
        crate::errln!("netsweep: {line}");
    }
    let virsh = Virsh::new(uri);
    let live = virsh.dumpxml(domain, false).map_err(anyhow::Error::msg)?;
    let inactive = virsh.dumpxml(domain, true).map_err(anyhow::Error::msg)?;
    let mut drivers = Vec::new();
    if let Some(dest) = guest_ssh {
        if dest.starts_with('-') {
            anyhow::bail!("--guest-ssh {dest:?} must be USER@HOST");
        }
        for iface in xml::interfaces(&live).map_err(anyhow::Error::msg)? {
            if let Some(mac) = iface.mac {
                let d = crate::host::libvirt::guest_driver(dest, &[], &mac);
                if let Err(e) = &d {
                    crate::errln!("netsweep: the guest's driver for {mac}: {e}");
                }
                drivers.push((mac, d));
            }
        }
    }
    doctor::libvirt::check_live(&virsh, domain, &live, &inactive, &drivers)
        .map_err(|e| anyhow::anyhow!("libvirt domain {domain}: {e}"))
}

pub fn run(a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let findings = if let Some(src) = &a.libvirt_xml {
        let xml = if src == "-" {
            inputs::read_stdin(inputs::MAX_CONFIG_BYTES)?
        } else {
            inputs::read_file(src.as_ref(), inputs::MAX_CONFIG_BYTES)
                .with_context(|| format!("cannot read {src}"))?
        };
        doctor::libvirt::check(&xml).map_err(|e| anyhow::anyhow!("{src}: {e}"))?
    } else if let Some(domain) = &a.libvirt {
        libvirt_domain(domain, a.connect.clone(), a.guest_ssh.as_deref())?
    } else {
        let source = match &a.root {
            Some(r) => fixture_source(r)?,
            None => Source::live(),
        };
        let watch = a.watch.map(watch_seconds).transpose()?;
        let mut hints = PathHints {
            rate_bps: a
                .rate
                .as_deref()
                .map(|r| r.parse::<BitRate>().map(|b| b.bits_per_second()))
                .transpose()
                .context("--rate")?,
            rtt: a
                .rtt
                .as_deref()
                .map(parse_duration)
                .transpose()
                .context("--rtt")?,
        };
        let mut findings = Vec::new();
        let mut measured = None;
        if let Some(peer) = &a.peer {
            let addr = crate::traffic::address::resolve_host_port(
                peer,
                crate::traffic::protocol::DEFAULT_PORT,
            )
            .context("--peer")?;
            let peer = doctor::peer::check(addr, !a.no_tests);
            findings.extend(peer.findings);
            hints.rtt = hints.rtt.or(peer.rtt);
            measured = peer.measured;
        }
        let before = watch.map(|_| source.sample());
        findings.extend(source.check(&hints));
        if let Some(m) = measured {
            // The tests of this very path outrank the static bounds (never both unreconciled).
            let origin = if a.rtt.is_some() {
                doctor::measured::RttOrigin::Given
            } else {
                doctor::measured::RttOrigin::Connects
            };
            doctor::measured::reconcile(&mut findings, &m, origin);
        }
        if let (Some(secs), Some(before)) = (watch, before) {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            let after = source.sample();
            let ticks = crate::platform::process::clock_ticks_per_second();
            findings.extend(doctor::host::change_checks(&before, &after, secs, ticks));
        }
        findings
    };
    let d = Diagnosis { findings };
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        crate::out!("{}", doctor::render(&d));
    }
    Ok(exit_status(d.worst()))
}

/// Exit 2 when a finding is a problem, so a script or a monitoring check can act on it (`diff`
/// and `grep` keep 1 for trouble as well; netsweep exits 1 when it could not diagnose at all);
/// warnings and notes exit 0, as a host without problems.
fn exit_status(worst: doctor::Severity) -> ExitCode {
    if worst == doctor::Severity::Problem {
        ExitCode::from(PROBLEM_EXIT)
    } else {
        ExitCode::SUCCESS
    }
}

/// `netsweep doctor`'s exit status when at least one finding is a problem.
const PROBLEM_EXIT: u8 = 2;

/// A fixture for `--root`: a FreeBSD capture (`sysctl.txt` and the other files of
/// `host::freebsd::FILES`), or a Linux tree holding `proc/` or `sys/`; anything else would read
/// nothing and report a healthy host.
fn fixture_source(root: &std::path::Path) -> anyhow::Result<Source> {
    if freebsd::Capture::from_dir(root).is_some() {
        return Ok(Source::FreeBsd(Some(root.to_path_buf())));
    }
    let view = HostView::fixture(root);
    if !view.proc_root.is_dir() && !view.sys_root.is_dir() {
        anyhow::bail!(
            "--root {}: no proc/ or sys/ directory there (a copy of a Linux host's /proc and \
             /sys), and no sysctl.txt (a FreeBSD host's saved outputs: {})",
            root.display(),
            freebsd::FILES
                .iter()
                .map(|(f, cmd)| format!("`{cmd} > {f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(Source::Linux(view))
}

/// `--watch SECONDS`: a finite number from 0.1 to 3600.
fn watch_seconds(secs: f64) -> anyhow::Result<f64> {
    if !(0.1..=3600.0).contains(&secs) {
        anyhow::bail!("--watch takes seconds from 0.1 to 3600, got {secs}");
    }
    Ok(secs)
}
