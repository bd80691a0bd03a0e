//! The labs of this host as the files in the state directory record them (`state`): the
//! listing that also finds namespaces a crash left behind, and `down_by_name`, which removes
//! whatever of a lab is still there.

use super::processes::{Kind, LabProcess};
use super::relay::{is_our_relay, stop_process};
use super::state::{LabState, read_state};
use super::topology::{Emulator, Host, LabNames};
use super::vm::agent::guest_target;
use crate::platform::netns;
use anyhow::bail;
use std::path::Path;

/// Removes lab `name`: its relay process, both namespaces (with their devices), its state
/// file. Safe to repeat; returns what was removed.
pub fn down_by_name(name: &str, state_dir: &Path) -> anyhow::Result<Vec<String>> {
    let names = LabNames::new(name).map_err(anyhow::Error::msg)?;
    let mut removed = Vec::new();
    if let Some(pid) = read_state(state_dir, name).and_then(|s| s.relay_pid)
        && is_our_relay(pid, name)
    {
        stop_process(pid);
        removed.push(format!("delay line process {pid}"));
    }
    // Guests: by the PID the state records, or by the pidfile if the state was never
    // written (a crash during the boot).
    let state = read_state(state_dir, name);
    for h in [Host::A, Host::B] {
        let files = super::vm::guest::Files::for_host(state_dir, name, h);
        let guest_pid = state
            .as_ref()
            .and_then(|s| s.guest_at(h).map(|g| g.pid))
            .or_else(|| {
                std::fs::read_to_string(&files.pidfile)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
            });
        if let Some(pid) = guest_pid
            && super::vm::guest::stop(pid, &files.pidfile)
        {
            removed.push(format!("guest of host {} (QEMU process {pid})", h.letter()));
        }
        let _ = std::fs::remove_file(&files.console);
        let _ = std::fs::remove_file(&files.pidfile);
    }
    // What no state or pidfile names: a relay or QEMU started just before its starter was
    // killed. A few passes, for a QEMU that forks while it daemonizes.
    for _ in 0..3 {
        let found = super::processes::of_lab(name, state_dir);
        if found.is_empty() {
            break;
        }
        for p in found {
            if stop_found(name, state_dir, &p) {
                removed.push(match p.kind {
                    Kind::Relay => format!("delay line process {} (found running)", p.pid),
                    Kind::Guest => format!("QEMU process {} (found running)", p.pid),
                });
            }
        }
    }
    let mut errors = Vec::new();
    for h in [Host::A, Host::B] {
        let ns = names.namespace(h);
        // What `lab exec` left running inside (a server started with `&`): deleting the
        // namespace would not end it, only hide it.
        for pid in netns::pids(&ns) {
            super::relay::stop_process(pid);
            removed.push(format!("process {pid} left running in {ns}"));
        }
        if netns::exists(&ns) {
            match netns::run("ip", &["netns", "del", &ns]) {
                Ok(()) => removed.push(format!("namespace {ns}")),
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    for ext in ["json", "log", "tmp"] {
        let f = state_dir.join(format!("{name}.{ext}"));
        if f.exists() && std::fs::remove_file(&f).is_ok() && ext == "json" {
            removed.push(format!("state file {}", f.display()));
        }
    }
    // Tuning journals of its guests: their kernels are gone, and the settings with them.
    for h in [Host::A, Host::B] {
        let t = guest_target(state_dir, name, h);
        if crate::host::tuning::read_journal(&t).is_some()
            && let Ok(Some(r)) = crate::host::tuning::restore(&t)
            && r.target_gone
        {
            removed.push(format!(
                "tuning journal of {} (profile {})",
                t.id(),
                r.profile
            ));
        }
    }
    if !errors.is_empty() {
        bail!("lab {name} not fully removed: {}", errors.join("; "));
    }
    Ok(removed)
}

/// Stops a process `scan` found, after checking again that it is still that process.
fn stop_found(name: &str, state_dir: &Path, p: &LabProcess) -> bool {
    match p.kind {
        Kind::Relay => {
            let ok = is_our_relay(p.pid, name);
            if ok {
                stop_process(p.pid);
            }
            ok
        }
        Kind::Guest => [Host::A, Host::B].into_iter().any(|h| {
            let files = super::vm::guest::Files::for_host(state_dir, name, h);
            super::vm::guest::stop(p.pid, &files.pidfile)
        }),
    }
}

/// Finds the labs whose owning process died without removing them (a campaign killed with
/// `kill -9`), puts back the tuning that process applied inside their namespaces (host-wide
/// keys written from there included), and removes them. Returns one line per lab.
pub fn reap_orphans(state_dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for l in list(state_dir) {
        let Some(owner) = l.state.as_ref().and_then(|s| s.owner_pid) else {
            // Processes of a lab with neither state nor namespaces: a lab is recorded before
            // anything of it is made, so no live process is building this one.
            if l.state.is_none() && l.only_processes {
                match down_by_name(&l.name, state_dir) {
                    Ok(removed) => out.push(format!(
                        "lab {} had no state file and no namespaces left, only processes: removed {}",
                        l.name,
                        removed.join(", ")
                    )),
                    Err(e) => out.push(format!("{e:#}")),
                }
            }
            continue;
        };
        if crate::platform::process::alive(owner) {
            continue;
        }
        let Ok(names) = LabNames::new(&l.name) else {
            continue;
        };
        let mut done = Vec::new();
        for h in [Host::A, Host::B] {
            let ns = names.namespace(h);
            if !netns::exists(&ns) {
                continue;
            }
            // A guest host was tuned inside its guest, a namespace host in the namespace.
            let target = match l.state.as_ref().is_some_and(|s| s.guest_at(h).is_some()) {
                true => guest_target(state_dir, &l.name, h),
                false => crate::host::tuning::Target::Netns(ns.clone()),
            };
            match crate::host::tuning::recover(&target) {
                Ok(Some(r)) => done.push(r.recovery_line(&target)),
                Ok(None) => {}
                Err(e) => done.push(format!("could not restore the tuning of {ns}: {e:#}")),
            }
        }
        match down_by_name(&l.name, state_dir) {
            Ok(removed) => done.extend(removed.into_iter().map(|r| format!("removed {r}"))),
            Err(e) => done.push(format!("{e:#}")),
        }
        out.push(format!(
            "lab {} was left by process {owner}, which ended without removing it: {}",
            l.name,
            done.join(", ")
        ));
    }
    out
}

/// A lab found on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    pub name: String,
    pub state: Option<LabState>,
    /// Namespaces present without a state file, or a dead relay: left by a crash.
    pub leftover: bool,
    /// Only processes of the lab remain (a relay or QEMU, found by its command line): no
    /// namespace of it exists.
    pub only_processes: bool,
}

/// Labs with state files, and namespaces of ours without one.
pub fn list(state_dir: &Path) -> Vec<Listing> {
    let mut names: Vec<String> = std::fs::read_dir(state_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .strip_suffix(".json")
                        .map(String::from)
                })
                .collect()
        })
        .unwrap_or_default();
    names.extend(
        netns::list()
            .iter()
            .filter_map(|ns| LabNames::owner_of(ns).map(|(n, _)| n)),
    );
    let running = super::processes::scan(state_dir);
    names.extend(running.iter().map(|p| p.lab.clone()));
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|name| {
            let state = read_state(state_dir, &name);
            let relay_dead = state.as_ref().is_some_and(|s| {
                s.emulator == Emulator::Userspace
                    && !s.relay_pid.is_some_and(crate::platform::process::alive)
            });
            let lab_names = LabNames::new(&name);
            let present = [Host::A, Host::B].map(|h| {
                lab_names
                    .as_ref()
                    .is_ok_and(|n| netns::exists(&n.namespace(h)))
            });
            let only_processes = present == [false, false] && running.iter().any(|p| p.lab == name);
            Listing {
                leftover: state.is_none() || relay_dead || present != [true, true],
                only_processes,
                name,
                state,
            }
        })
        .collect()
}
