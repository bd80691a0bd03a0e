//! `netsweep doctor`.

use crate::cli::DoctorArgs;
use crate::doctor::{self, Diagnosis, HostView, PathHints};
use crate::units::{BitRate, parse_duration};
use anyhow::Context;
use std::io::Read;
use std::process::ExitCode;

/// The live host's diagnosis without a peer (stored with every campaign).
pub fn host_only() -> Diagnosis {
    Diagnosis {
        findings: doctor::host::check(&HostView::live(), &PathHints::default()),
    }
}

pub fn run(a: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let findings = if let Some(src) = &a.libvirt_xml {
        let xml = if src == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading standard input")?;
            s
        } else {
            std::fs::read_to_string(src).with_context(|| format!("cannot read {src}"))?
        };
        doctor::libvirt::check(&xml).map_err(|e| anyhow::anyhow!("{src}: {e}"))?
    } else {
        let view = match &a.root {
            Some(r) => HostView::fixture(r),
            None => HostView::live(),
        };
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
        if let Some(peer) = &a.peer {
            let (host, port) = match peer.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') || h.starts_with('[') => {
                    (h.to_string(), p.parse().context("--peer port")?)
                }
                _ => (peer.clone(), crate::cli::DEFAULT_PORT),
            };
            let addr = crate::cli::resolve(&host, port, false, false)?;
            let (f, rtt) = doctor::peer::check(addr, !a.no_tests);
            findings.extend(f);
            hints.rtt = hints.rtt.or(rtt);
        }
        let before = a.watch.map(|_| doctor::host::sample(&view));
        findings.extend(doctor::host::check(&view, &hints));
        if let (Some(secs), Some(before)) = (a.watch, before) {
            let secs = secs.clamp(0.1, 3600.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            let after = doctor::host::sample(&view);
            // SAFETY: sysconf has no preconditions.
            let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
            findings.extend(doctor::host::change_checks(&before, &after, secs, ticks));
        }
        findings
    };
    let d = Diagnosis { findings };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        print!("{}", doctor::render(&d));
    }
    Ok(ExitCode::SUCCESS)
}
