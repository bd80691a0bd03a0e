//! Commands inside a lab's guests, through their command channels (`vm::channel`): `lab exec`
//! on a guest host, a guest's sysctls (the host's sysctls and tuning profiles go into its
//! guest's kernel) and its kernel counters. Each connects from the guest's host namespace to
//! the guest's control address, over the TAP device, with the lab's token from its state.
//!
//! Tuning reaches a guest through here: `GuestKernel` is the guest's kernel as a
//! `tuning::SysctlPlace`, and `tuning_target` turns `--target lab:NAME:a|b` into a target.

use crate::host::tuning::{self, SysctlPlace, Target};
use crate::lab::state::{self, read_state};
use crate::lab::sysctl_path;
use crate::lab::topology::{Host, LabNames};
use crate::lab::vm;
use crate::platform::{Os, netns};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long a command in a guest may stay silent before `exec_in_guest` gives up.
pub const GUEST_EXEC_SILENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `argv` inside the guest of lab `name`'s host `h` (state in `state_dir`), through the
/// guest's command channel, connecting from the host's own namespace (over the TAP device, so
/// the channel never crosses the lab's path) with the lab's token.
pub fn exec_in_guest(
    state_dir: &Path,
    name: &str,
    h: Host,
    argv: &[String],
) -> anyhow::Result<(String, i32)> {
    let names = LabNames::new(name).map_err(anyhow::Error::msg)?;
    let token = read_state(state_dir, name)
        .and_then(|s| s.guest_token)
        .with_context(|| {
            format!(
                "lab {name} has no guest token in {}: take it down and up again",
                state_dir.display()
            )
        })?;
    let alive = || {
        read_state(state_dir, name)
            .and_then(|s| s.guest_at(h).map(|g| !g.gone()))
            .unwrap_or(false)
    };
    if !alive() {
        bail!(
            "host {}'s guest in lab {name} is not running (its QEMU has exited)",
            h.letter()
        );
    }
    let addr = std::net::SocketAddr::new(h.control_ipv4().into(), vm::channel::EXEC_PORT);
    // A few tries: a guest that has just booted may still be starting its channel.
    let stream = netns::run_in(&names.namespace(h), || {
        let mut tries = 0;
        loop {
            match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)) {
                Err(e) if tries < 20 && e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                other => break other,
            }
        }
    })?
    .with_context(|| format!("cannot reach the guest's command channel at {addr}"))?;
    vm::channel::exec(stream, &token, argv, GUEST_EXEC_SILENCE, &alive)
}

/// Runs a shell script in a guest and returns its output, or an error with the output when it
/// fails.
fn guest_shell(state_dir: &Path, name: &str, h: Host, script: &str) -> anyhow::Result<String> {
    let (out, rc) = exec_in_guest(
        state_dir,
        name,
        h,
        &["sh".into(), "-c".into(), script.into()],
    )?;
    if rc != 0 {
        bail!("{}", out.trim());
    }
    Ok(out)
}

/// Reads a sysctl in a guest (through `/proc/sys`, which every guest kernel has).
pub fn guest_sysctl_read(
    state_dir: &Path,
    name: &str,
    h: Host,
    key: &str,
) -> anyhow::Result<String> {
    if !crate::platform::sysctl::valid_name(key) {
        bail!("{key:?} is not a sysctl name");
    }
    let path = sysctl_path(key).display().to_string();
    match exec_in_guest(state_dir, name, h, &["cat".into(), path])? {
        (v, 0) => Ok(crate::platform::sysctl::normalize(&v)),
        _ => bail!("the kernel of host {}'s guest has no {key}", h.letter()),
    }
}

/// Writes a sysctl in a guest.
pub fn guest_sysctl_write(
    state_dir: &Path,
    name: &str,
    h: Host,
    key: &str,
    value: &str,
) -> anyhow::Result<()> {
    if !crate::platform::sysctl::valid_name(key) {
        bail!("{key:?} is not a sysctl name");
    }
    if value.contains(['\'', '\n', '\0']) {
        bail!("sysctl value {value:?} for {key} is not valid");
    }
    let path = sysctl_path(key);
    guest_shell(
        state_dir,
        name,
        h,
        &format!("echo '{value}' > '{}'", path.display()),
    )
    .map(|_| ())
}

/// Kernel counters of a guest, read from its `/proc/net` through the command channel.
pub fn guest_counters(
    state_dir: &Path,
    name: &str,
    h: Host,
) -> anyhow::Result<crate::host::counters::Snapshot> {
    let out = guest_shell(
        state_dir,
        name,
        h,
        "cat /proc/net/snmp /proc/net/netstat; echo @@dev; cat /proc/net/dev",
    )?;
    let (pairs, dev) = out
        .split_once("@@dev\n")
        .context("the guest's counters came back cut off")?;
    let mut s = crate::host::counters::Snapshot::default();
    crate::host::counters::parse_pairs(pairs, &mut s.protocol);
    s.interfaces = crate::host::counters::parse_dev(dev);
    Ok(s)
}

/// The kernel of a lab host's QEMU guest as a place tuning writes to: sysctls go through the
/// guest's command channel, the journal stays on this host, and the place is gone when the
/// lab's state no longer records the guest (its kernel went with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestKernel {
    pub lab: String,
    pub host: Host,
    /// The lab's state directory, which says whether the guest still runs.
    pub state_dir: PathBuf,
}

impl SysctlPlace for GuestKernel {
    fn id(&self) -> String {
        format!("guest-{}-{}", self.lab, self.host.letter())
    }

    fn arg(&self) -> String {
        format!("lab:{}:{}", self.lab, self.host.letter())
    }

    fn os(&self) -> Os {
        Os::Linux
    }

    fn read(&self, key: &str) -> anyhow::Result<String> {
        guest_sysctl_read(&self.state_dir, &self.lab, self.host, key)
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        guest_sysctl_write(&self.state_dir, &self.lab, self.host, key, value)
    }

    /// Gone with its lab, or with its QEMU (killed, out of memory, crashed): what was written
    /// there went with the kernel.
    fn gone(&self) -> bool {
        read_state(&self.state_dir, &self.lab)
            .is_none_or(|s| s.guest_at(self.host).is_none_or(|g| g.gone()))
    }
}

/// The tuning target of lab `lab`'s guest on host `host` (state in `state_dir`).
pub fn guest_target(state_dir: &Path, lab: &str, host: Host) -> Target {
    Target::Place(Arc::new(GuestKernel {
        lab: lab.to_string(),
        host,
        state_dir: state_dir.to_path_buf(),
    }))
}

/// The tuning target that `--target lab:NAME:a|b` names, or `None` when `s` names no lab host:
/// the guest's kernel when the host is a guest (or was one whose journal is still here to be
/// cleared), else the host's namespace.
pub fn tuning_target(s: &str) -> Option<Result<Target, String>> {
    let rest = s.strip_prefix("lab:")?;
    Some(lab_host_target(rest, Path::new(state::STATE_DIR)))
}

fn lab_host_target(rest: &str, state_dir: &Path) -> Result<Target, String> {
    const FORMS: &str = "lab targets are lab:NAME:a or lab:NAME:b";
    let (name, host) = rest.rsplit_once(':').ok_or(FORMS)?;
    let h = Host::parse(host).ok_or(FORMS)?;
    let names = LabNames::new(name)?;
    let guest = guest_target(state_dir, name, h);
    let is_guest = read_state(state_dir, name).is_some_and(|s| s.guest_at(h).is_some())
        || tuning::read_journal(&guest).is_some();
    Ok(if is_guest {
        guest
    } else {
        Target::Netns(names.namespace(h))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_hosts_parse_into_their_namespace_or_guest() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            lab_host_target("wan:b", dir.path()),
            Ok(Target::Netns("nsw-wan-b".into()))
        );
        assert!(lab_host_target("wan:c", dir.path()).is_err());
        assert!(tuning_target("netns:x").is_none());
        let g = guest_target(dir.path(), "wan", Host::B);
        assert_eq!(tuning::target_arg(&g), "lab:wan:b");
        assert_eq!(g.id(), "guest-wan-b");
        // No state file: the guest is gone, with its kernel.
        assert!(matches!(&g, Target::Place(p) if p.gone()));
    }
}
