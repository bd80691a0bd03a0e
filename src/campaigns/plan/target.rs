//! Reading `[target]` (loopback, lab, auto, address, and how an address target's server is
//! tuned) and resolving the profiles the matrix names against it.

use super::{PROFILE_DIMENSION, Reader, Target, scalar};
use crate::lab::{EmulatorChoice, PathConfig};
use crate::units::{BitRate, parse_duration, parse_percent};
use toml_edit::{Item, TableLike};

const TARGET_KEYS: [&str; 20] = [
    "kind",
    "vm",
    "nic",
    "vcpus",
    "memory",
    "queues",
    "host",
    "rate",
    "rtt",
    "delay",
    "jitter",
    "loss",
    "mtu",
    "mtu_b",
    "queue",
    "emulator",
    "server_tuning",
    "ssh_options",
    "remote_netsweep",
    "allow_host_wide",
];

/// Settings of a lab's path, and of its guests (`vm = "b"` or `"both"`), that a plan can also sweep in
/// `[matrix]` (the lab is rebuilt, and the guest rebooted, when the value changes).
pub const PATH_DIMENSIONS: [&str; 10] = [
    "rate", "rtt", "delay", "jitter", "loss", "queue", "nic", "vcpus", "memory", "queues",
];

/// The settings of a guest among `PATH_DIMENSIONS`.
pub const GUEST_DIMENSIONS: [&str; 4] = ["nic", "vcpus", "memory", "queues"];

/// Applies one path setting, written as on `lab up`'s command line.
pub fn apply_path(path: &mut PathConfig, key: &str, v: &str) -> Result<(), String> {
    let d = |v: &str| parse_duration(v).map_err(|e| e.to_string());
    if GUEST_DIMENSIONS.contains(&key) {
        let Some(g) = path.guest.as_mut() else {
            return Err(format!(
                "{key} is a setting of a guest: add vm = \"b\" to a lab [target]"
            ));
        };
        let n = || {
            v.parse::<u32>()
                .map_err(|_| format!("{key} {v:?} is not a whole number"))
        };
        match key {
            "nic" => g.nic = crate::lab::vm::NicModel::parse(v)?,
            "vcpus" => g.vcpus = n()?,
            "memory" => g.memory_mib = n()?,
            _ => g.queues = n()?,
        }
        g.validate()?;
        return path.validate();
    }
    match key {
        "rate" => {
            path.rate_bps = Some(
                v.parse::<BitRate>()
                    .map_err(|e| e.to_string())?
                    .bits_per_second(),
            )
        }
        "rtt" => path.delay = d(v)? / 2,
        "delay" => path.delay = d(v)?,
        "jitter" => path.jitter = d(v)?,
        "loss" => path.loss_percent = parse_percent(v).map_err(|e| e.to_string())?,
        "queue" => path.set_queue(v)?,
        _ => return Err(format!("{key:?} is not a path setting")),
    }
    path.validate()
}

/// `[target] server_tuning = "ssh:USER@HOST"` (with `ssh_options` and `remote_netsweep`): how
/// tuning profiles reach the server of an `address` target.
pub(super) fn read_server_tuning(
    r: &mut Reader,
    table: &dyn TableLike,
    kind: &str,
) -> Option<crate::host::tuning::Remote> {
    let (dest, span) = r.string(table, "server_tuning")?;
    let Some(dest) = dest
        .strip_prefix("ssh:")
        .filter(|d| !d.is_empty() && !d.starts_with('-'))
    else {
        r.issue(
            span,
            format!("server_tuning {dest:?} must be ssh:USER@HOST"),
        );
        return None;
    };
    if kind != "address" && kind != "libvirt" {
        r.issue(span.clone(), "server_tuning applies to kind = \"address\" and \"libvirt\" only (lab and loopback servers are tuned directly)");
    }
    let ssh_options = r.ssh_options(table);
    let netsweep = r
        .string(table, "remote_netsweep")
        .map(|(s, _)| s)
        .unwrap_or_else(|| "netsweep".into());
    Some(crate::host::tuning::Remote::new(
        dest,
        ssh_options,
        netsweep,
    ))
}

pub(super) fn read_target(r: &mut Reader, item: Option<&Item>) -> Target {
    let Some(table) = item.and_then(Item::as_table_like) else {
        r.issue(
            item.and_then(Item::span),
            "[target] is missing: set kind = \"loopback\", \"lab\", \"auto\", \"address\", \"iperf3\" or \"libvirt\"",
        );
        return Target::Loopback;
    };
    let span = item.and_then(Item::span);
    let keys: Vec<&str> = TARGET_KEYS
        .iter()
        .chain(super::libvirt::LIBVIRT_KEYS.iter())
        .copied()
        .collect();
    r.unknown_keys(table, "target", &keys);
    let kind = r
        .string(table, "kind")
        .map(|(s, _)| s)
        .unwrap_or_else(|| "loopback".into());
    let mut path = PathConfig::default();
    let mut emulator = EmulatorChoice::Auto;
    if let Some((v, vspan)) = r.string(table, "vm") {
        if (v == "b" || v == "both") && kind == "lab" {
            path.guest = Some(crate::lab::vm::guest::GuestSpec::default());
            path.guest_a = v == "both";
        } else {
            r.issue(
                vspan,
                format!(
                    "vm {v:?}: vm = \"b\" (host b a QEMU guest) or \"both\" (guest to guest) \
                     on kind = \"lab\""
                ),
            );
        }
    }
    for key in [
        "rate", "rtt", "delay", "jitter", "loss", "mtu", "mtu_b", "queue", "emulator", "nic",
        "vcpus", "memory", "queues",
    ] {
        let Some((v, vspan)) = r.string(table, key) else {
            continue;
        };
        let res: Result<(), String> = (|| {
            match key {
                "mtu" => {
                    let m = v
                        .parse()
                        .map_err(|_| format!("mtu {v:?} is not a number"))?;
                    path.mtu_a = m;
                    path.mtu_b = m;
                }
                "mtu_b" => {
                    path.mtu_b = v
                        .parse()
                        .map_err(|_| format!("mtu_b {v:?} is not a number"))?
                }
                "emulator" => {
                    emulator = match v.as_str() {
                        "auto" => EmulatorChoice::Auto,
                        "netem" => EmulatorChoice::Netem,
                        "userspace" => EmulatorChoice::Userspace,
                        _ => return Err(format!("emulator {v:?} is not auto, netem or userspace")),
                    }
                }
                _ => apply_path(&mut path, key, &v)?,
            }
            Ok(())
        })();
        if let Err(msg) = res {
            r.issue(vspan, format!("target {key}: {msg}"));
        }
    }
    if let Err(msg) = path.validate() {
        r.issue_unsaid(span.clone(), "target path", &msg);
    }
    if kind != "libvirt" {
        for k in super::libvirt::LIBVIRT_KEYS {
            if let Some((key, _)) = table.get_key_value(k) {
                r.issue(
                    key.span(),
                    format!("{k} is a key of kind = \"libvirt\" targets"),
                );
            }
        }
    }
    match kind.as_str() {
        "loopback" => Target::Loopback,
        "libvirt" => {
            super::libvirt::read(r, table, span.clone()).map_or(Target::Loopback, Target::Libvirt)
        }
        "lab" => Target::Lab { path, emulator },
        "auto" => Target::Auto { path, emulator },
        "iperf3" => match r.string(table, "host") {
            Some((h, _)) => Target::Iperf3(h),
            None => {
                r.issue(
                    span.clone(),
                    "target kind \"iperf3\" needs host = \"HOST:5201\"",
                );
                Target::Loopback
            }
        },
        "address" => match r.string(table, "host") {
            Some((h, _)) => Target::Address(h),
            None => {
                r.issue(
                    span.clone(),
                    "target kind \"address\" needs host = \"HOST:PORT\"",
                );
                Target::Loopback
            }
        },
        other => {
            let s = table.get("kind").and_then(Item::span);
            r.issue(
                s,
                format!(
                    "target kind {other:?} is not loopback, lab, auto, address, iperf3 or libvirt"
                ),
            );
            Target::Loopback
        }
    }
}

/// Finds every profile the matrix names: in the plan's `[profiles]`, else a built-in
/// (`high-bdp` and `high-bdp-ns` are sized from the lab target's rate and RTT).
pub(super) fn resolve_profiles(
    r: &mut Reader,
    matrix: Option<&Item>,
    target: &Target,
    from_file: Vec<crate::host::tuning::profile::Profile>,
    profiles_table: Option<&Item>,
) -> Vec<crate::host::tuning::profile::Profile> {
    let Some(arr) = matrix
        .and_then(Item::as_table)
        .and_then(|t| t.get(PROFILE_DIMENSION))
    else {
        return Vec::new();
    };
    let Some(arr) = arr.as_array() else {
        r.issue(arr.span(), "matrix profile must be a list of profile names");
        return Vec::new();
    };
    let rate_rtt = match target {
        Target::Lab { path, .. } | Target::Auto { path, .. } => path
            .rate_bps
            .zip((!path.delay.is_zero()).then(|| path.rtt().as_secs_f64())),
        _ => None,
    };
    let mut out = Vec::new();
    for v in arr.iter() {
        let Some(name) = scalar(v) else { continue };
        match from_file.iter().find(|p| p.name == name) {
            Some(p) => out.push(p.clone()),
            None => match crate::host::tuning::profile::builtin(&name, rate_rtt) {
                Ok(p) => out.push(p),
                // Defined in the file but refused there: that problem is already reported.
                Err(_)
                    if profiles_table
                        .and_then(Item::as_table_like)
                        .is_some_and(|t| t.contains_key(&name)) => {}
                Err(e) => r.issue(
                    v.span(),
                    format!("profile {name:?}: {e}; define it in [profiles.{name}.linux]"),
                ),
            },
        }
    }
    out
}
