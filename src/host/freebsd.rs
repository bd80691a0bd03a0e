//! A FreeBSD host as its own tools describe it: `sysctl` output (settings, `dev.<driver>.<unit>.%desc`
//! for the NIC model) and `ifconfig -m` (MTU, offloads enabled and possible, media speed). A
//! `Capture` also holds the `netstat --libxo json` outputs, which `counters` reads into its own
//! common form (`counters::of_freebsd`), so this room needs none of the counters' types.
//!
//! The parsers are pure and compiled everywhere, so they are tested on Linux with fixtures; a
//! `Capture` is the four outputs, taken live on FreeBSD (`Capture::live`) or read from a
//! directory (`Capture::from_dir`: `doctor --root DIR` with files saved on a FreeBSD host).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The files of a saved capture and the commands that make them on a FreeBSD host.
pub const FILES: [(&str, &str); 4] = [
    (
        "sysctl.txt",
        "sysctl kern hw.model hw.ncpu hw.physmem net.inet.tcp dev",
    ),
    ("netstat-i.json", "netstat -ibn --libxo json"),
    ("netstat-s.json", "netstat -s --libxo json"),
    ("ifconfig.txt", "ifconfig -m"),
];

/// The largest output read from one command or file.
const MAX_OUTPUT: usize = 16 << 20;

/// The outputs a FreeBSD host is read from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capture {
    pub sysctl: String,
    pub netstat_interfaces: String,
    pub netstat_protocols: String,
    pub ifconfig: String,
}

/// The sysctls read live (the subtrees doctor, facts and tuning use).
const LIVE_SYSCTLS: [&str; 16] = [
    "kern.ostype",
    "kern.osrelease",
    "kern.vm_guest",
    "hw.model",
    "hw.ncpu",
    "hw.physmem",
    "kern.ipc.maxsockbuf",
    "kern.ipc.somaxconn",
    "kern.ipc.nmbclusters",
    "net.inet.tcp",
    "net.link.ifqmaxlen",
    "net.isr.dispatch",
    // doctor's 100G checklist (`doctor::freebsd100g::SYSCTLS`; net.inet.tcp is above).
    "kern.smp.threads_per_core",
    "machdep.hyperthreading_allowed",
    "hw.dmar.enable",
    "dev.hwpstate_intel",
];

fn run(program: &str, args: &[&str]) -> String {
    match Command::new(program).args(args).output() {
        Ok(out) => {
            let n = out.stdout.len().min(MAX_OUTPUT);
            String::from_utf8_lossy(&out.stdout[..n]).to_string()
        }
        Err(_) => String::new(),
    }
}

impl Capture {
    /// Runs FreeBSD's tools on this host (`sysctl -e` would change the format; `-i` skips
    /// names this release lacks).
    pub fn live() -> Capture {
        let ifconfig = run("ifconfig", &["-m"]);
        let mut names: Vec<String> = LIVE_SYSCTLS.iter().map(|s| s.to_string()).collect();
        for i in parse_ifconfig(&ifconfig) {
            if let Some((driver, unit)) = driver_and_unit(&i.name) {
                names.push(format!("dev.{driver}.{unit}"));
            }
        }
        let mut args = vec!["-i"];
        args.extend(names.iter().map(String::as_str));
        Capture {
            sysctl: run("sysctl", &args),
            netstat_interfaces: run("netstat", &["-ibn", "--libxo", "json"]),
            netstat_protocols: run("netstat", &["-s", "--libxo", "json"]),
            ifconfig,
        }
    }

    /// Only the counters (the two `netstat` outputs): cheap enough to take around every test.
    pub fn live_counters() -> Capture {
        Capture {
            netstat_interfaces: run("netstat", &["-ibn", "--libxo", "json"]),
            netstat_protocols: run("netstat", &["-s", "--libxo", "json"]),
            ..Capture::default()
        }
    }

    /// A capture saved in `dir` (the `FILES`); `None` when `dir` has no `sysctl.txt`.
    pub fn from_dir(dir: &Path) -> Option<Capture> {
        let read = |f: &str| {
            crate::inputs::read_file(&dir.join(f), MAX_OUTPUT as u64)
                .ok()
                .unwrap_or_default()
        };
        if !dir.join(FILES[0].0).is_file() {
            return None;
        }
        Some(Capture {
            sysctl: read(FILES[0].0),
            netstat_interfaces: read(FILES[1].0),
            netstat_protocols: read(FILES[2].0),
            ifconfig: read(FILES[3].0),
        })
    }

    pub fn sysctls(&self) -> BTreeMap<String, String> {
        parse_sysctl(&self.sysctl)
    }
}

/// Whether `name` looks like a sysctl name (`a.b`, letters, digits, `_`, `%`, `.`, `-`).
fn is_sysctl_name(name: &str) -> bool {
    name.contains('.') && crate::platform::sysctl::valid_name(name)
}

/// Parses `sysctl` output (`name: value` per line; a value spanning several lines, such as
/// `net.inet.tcp.cc.available`, starts on the next line and keeps its lines joined by
/// newlines; other lines that are no `name: value` are skipped). `name=value` lines (as
/// `sysctl -e` or a saved `/etc/sysctl.conf` write them) are accepted too.
pub fn parse_sysctl(text: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in text.lines() {
        let split = line
            .split_once(": ")
            .or_else(|| line.strip_suffix(':').map(|n| (n, "")))
            .or_else(|| line.split_once('='))
            .filter(|(n, _)| is_sysctl_name(n));
        match split {
            Some((name, value)) => {
                let value = value.trim();
                out.insert(name.to_string(), value.to_string());
                // Multi-line values start on the line after their name.
                last = value.is_empty().then(|| name.to_string());
            }
            None => {
                if let Some(v) = last.as_ref().and_then(|n| out.get_mut(n)) {
                    if !v.is_empty() {
                        v.push('\n');
                    }
                    v.push_str(line.trim_end());
                }
            }
        }
    }
    out
}

/// One interface as `ifconfig -m` describes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IfconfigIface {
    pub name: String,
    pub flags: Vec<String>,
    pub mtu: Option<u32>,
    /// Offloads and features enabled (`options=`).
    pub options: Vec<String>,
    /// Offloads and features the driver supports (`capabilities=`, from `-m`).
    pub capabilities: Vec<String>,
    /// The active media, e.g. `Ethernet autoselect (100baseTX <full-duplex>)`.
    pub media: Option<String>,
    pub status: Option<String>,
}

/// The names inside `<...>` of `options=4c07bb<RXCSUM,TXCSUM,...>`.
fn bracketed(v: &str) -> Vec<String> {
    v.split_once('<')
        .and_then(|(_, r)| r.split_once('>'))
        .map(|(inner, _)| {
            inner
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Parses `ifconfig -m` (or plain `ifconfig`) output.
pub fn parse_ifconfig(text: &str) -> Vec<IfconfigIface> {
    let mut out: Vec<IfconfigIface> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(['\t', ' ']) {
            let Some((name, rest)) = line.split_once(": flags=") else {
                continue;
            };
            let words: Vec<&str> = rest.split_whitespace().collect();
            out.push(IfconfigIface {
                name: name.to_string(),
                flags: bracketed(rest),
                mtu: words
                    .iter()
                    .position(|w| *w == "mtu")
                    .and_then(|i| words.get(i + 1))
                    .and_then(|v| v.parse().ok()),
                ..IfconfigIface::default()
            });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        let l = line.trim();
        if let Some(v) = l.strip_prefix("options=") {
            cur.options = bracketed(v);
        } else if let Some(v) = l.strip_prefix("capabilities=") {
            cur.capabilities = bracketed(v);
        } else if let Some(v) = l.strip_prefix("media: ") {
            cur.media = Some(v.to_string());
        } else if let Some(v) = l.strip_prefix("status: ") {
            cur.status = Some(v.to_string());
        }
    }
    out
}

/// The speed of an active media description in Mbit/s: `(100baseTX <full-duplex>)` -> 100,
/// `(10Gbase-T <full-duplex>)` -> 10000, `(1000baseT ...)` -> 1000.
pub fn media_speed_mbit(media: &str) -> Option<i64> {
    let active = media.split_once('(')?.1;
    let word = active.split_whitespace().next()?;
    let prefix = &word[..word.find("base")?];
    let end = prefix
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(prefix.len());
    let n: f64 = prefix[..end].parse().ok()?;
    match &prefix[end..] {
        "G" => Some((n * 1000.0).round() as i64),
        "" => Some(n.round() as i64),
        _ => None,
    }
}

/// `re0` -> (`re`, 0): FreeBSD names interfaces after their driver and unit.
pub fn driver_and_unit(ifname: &str) -> Option<(&str, u32)> {
    let digits = ifname.len() - ifname.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == ifname.len() {
        return None;
    }
    let (d, u) = ifname.split_at(ifname.len() - digits);
    Some((d, u.parse().ok()?))
}

/// A libxo value as a whole number: JSON numbers, or digits in a string (libxo quotes values
/// whose format it does not know to be numeric).
pub fn whole(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// One NIC of a FreeBSD host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Nic {
    pub name: String,
    /// The driver (`vtnet`, `em`, `re`, ...), from the name and `dev.<driver>.<unit>`.
    pub driver: Option<String>,
    /// `dev.<driver>.<unit>.%desc`, e.g. `RealTek 8139C+ 10/100BaseTX`.
    pub description: Option<String>,
    /// `vendor=0x10ec device=0x8139` from `%pnpinfo`, as `10ec:8139`.
    pub pci_id: Option<String>,
    pub mtu: Option<u32>,
    pub speed_mbit: Option<i64>,
    pub options: Vec<String>,
    pub capabilities: Vec<String>,
}

fn pnp_field<'a>(pnp: &'a str, key: &str) -> Option<&'a str> {
    pnp.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim_start_matches("0x"))
}

/// The NICs of a capture (loopback and interfaces without a device node, such as bridges
/// and tunnels, keep `driver: None`).
pub fn nics(c: &Capture, sysctls: &BTreeMap<String, String>) -> Vec<Nic> {
    parse_ifconfig(&c.ifconfig)
        .into_iter()
        .filter(|i| !i.flags.iter().any(|f| f == "LOOPBACK"))
        .map(|i| {
            let dev = driver_and_unit(&i.name)
                .map(|(d, u)| (d.to_string(), format!("dev.{d}.{u}")))
                .filter(|(_, base)| sysctls.contains_key(&format!("{base}.%desc")));
            let description = dev
                .as_ref()
                .and_then(|(_, base)| sysctls.get(&format!("{base}.%desc")).cloned());
            let pci_id = dev.as_ref().and_then(|(_, base)| {
                let pnp = sysctls.get(&format!("{base}.%pnpinfo"))?;
                Some(format!(
                    "{}:{}",
                    pnp_field(pnp, "vendor")?,
                    pnp_field(pnp, "device")?
                ))
            });
            Nic {
                driver: dev.map(|(d, _)| d),
                description,
                pci_id,
                mtu: i.mtu,
                speed_mbit: i.media.as_deref().and_then(media_speed_mbit),
                options: i.options,
                capabilities: i.capabilities,
                name: i.name,
            }
        })
        .collect()
}

/// The FreeBSD sysctls recorded with every campaign (per host), like `hostfacts::SYSCTLS`.
pub const SYSCTLS: [&str; 12] = [
    "kern.ipc.maxsockbuf",
    "net.inet.tcp.sendbuf_max",
    "net.inet.tcp.recvbuf_max",
    "net.inet.tcp.sendspace",
    "net.inet.tcp.recvspace",
    "net.inet.tcp.sendbuf_auto",
    "net.inet.tcp.recvbuf_auto",
    "net.inet.tcp.cc.algorithm",
    "net.inet.tcp.rfc1323",
    "net.inet.tcp.sack.enable",
    "net.inet.tcp.delayed_ack",
    "kern.ipc.somaxconn",
];

/// Host facts in the shape `hostfacts::collect` gives for Linux.
pub fn facts(c: &Capture) -> Value {
    let s = c.sysctls();
    let sysctls: serde_json::Map<String, Value> = SYSCTLS
        .iter()
        .filter_map(|k| s.get(*k).map(|v| (k.to_string(), Value::String(v.clone()))))
        .collect();
    let interfaces: Vec<Value> = nics(c, &s)
        .iter()
        .map(|n| {
            json!({
                "name": n.name,
                "mtu": n.mtu,
                "driver": n.driver,
                "description": n.description,
                "speed_mbit": n.speed_mbit,
            })
        })
        .collect();
    json!({
        "os": "FreeBSD",
        "kernel": s.get("kern.osrelease"),
        "cpu_model": s.get("hw.model"),
        "cpus": s.get("hw.ncpu").and_then(|v| v.parse::<u64>().ok()),
        "vm_guest": s.get("kern.vm_guest"),
        "sysctls": sysctls,
        "interfaces": interfaces,
    })
}

#[cfg(test)]
mod tests;
