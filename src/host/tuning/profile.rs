//! Tuning profiles: named sets of sysctls per operating system. Built-ins (`default`,
//! `high-bdp` sized from a rate and an RTT, `large-buffers` from the classic host-tuning
//! guides), profile files in TOML, the allowlist of network sysctls, and the FreeBSD names
//! understood (mapped to their Linux meaning).

use crate::platform::Os;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a sysctl takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Each network namespace has its own value.
    Namespace,
    /// One value for the whole host (refused on a lab host unless asked).
    HostWide,
}

/// Network sysctls netsweep may change, with their scope (measured on Linux 6.x; see
/// shared/KERNEL-FACTS.md) and whether the value is text (a name) rather than numbers.
const ALLOWED: [(&str, Scope, bool); 25] = [
    ("net.core.rmem_max", Scope::HostWide, false),
    // Per namespace since Linux 6.8 (written in a namespace on 6.18, the host's unchanged);
    // the ancillary and zero-copy notification memory a socket may hold.
    ("net.core.optmem_max", Scope::Namespace, false),
    ("net.core.wmem_max", Scope::HostWide, false),
    ("net.core.rmem_default", Scope::HostWide, false),
    ("net.core.wmem_default", Scope::HostWide, false),
    ("net.core.netdev_max_backlog", Scope::HostWide, false),
    ("net.core.netdev_budget", Scope::HostWide, false),
    ("net.core.netdev_budget_usecs", Scope::HostWide, false),
    ("net.core.default_qdisc", Scope::HostWide, true),
    ("net.core.somaxconn", Scope::Namespace, false),
    ("net.ipv4.tcp_rmem", Scope::Namespace, false),
    ("net.ipv4.tcp_wmem", Scope::Namespace, false),
    ("net.ipv4.tcp_mem", Scope::HostWide, false),
    ("net.ipv4.udp_mem", Scope::HostWide, false),
    ("net.ipv4.udp_rmem_min", Scope::Namespace, false),
    ("net.ipv4.tcp_congestion_control", Scope::Namespace, true),
    ("net.ipv4.tcp_timestamps", Scope::Namespace, false),
    ("net.ipv4.tcp_sack", Scope::Namespace, false),
    ("net.ipv4.tcp_window_scaling", Scope::Namespace, false),
    ("net.ipv4.tcp_mtu_probing", Scope::Namespace, false),
    ("net.ipv4.tcp_no_metrics_save", Scope::Namespace, false),
    (
        "net.ipv4.tcp_slow_start_after_idle",
        Scope::Namespace,
        false,
    ),
    ("net.ipv4.tcp_notsent_lowat", Scope::Namespace, false),
    ("net.ipv4.tcp_adv_win_scale", Scope::Namespace, false),
    ("net.ipv4.tcp_moderate_rcvbuf", Scope::Namespace, false),
];

/// The scope of an allowed key; `None` for keys not on the allowlist.
pub fn scope(key: &str) -> Option<Scope> {
    ALLOWED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, s, _)| *s)
}

/// Checks a key and value before anything is written; the error says why.
pub fn check(key: &str, value: &str) -> Result<(), String> {
    if key.contains("..") || key.contains('/') || key.contains(['\n', '\0']) {
        return Err(format!(
            "sysctl name {key:?} is not accepted (no '..', '/' or newlines)"
        ));
    }
    if value.contains(['\n', '\r', '\0']) {
        return Err(format!("value for {key} contains a line break or NUL"));
    }
    let Some((_, _, text)) = ALLOWED.iter().find(|(k, _, _)| *k == key) else {
        return Err(not_allowed(key));
    };
    check_value(key, value, *text)?;
    if *text {
        return Ok(());
    }
    check_linux_numbers(key, value)
}

/// Linux keys whose value is three numbers, each at least the one before (min, default or
/// pressure, max).
const TRIPLES: [&str; 4] = [
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.ipv4.udp_mem",
];
/// Linux keys the kernel holds in a long; the other numeric keys are C ints.
const LONGS: [&str; 2] = ["net.ipv4.tcp_mem", "net.ipv4.udp_mem"];

/// What a Linux kernel would refuse or misread, said before anything is written: a number past
/// the kernel's int (a trial's `net.core.rmem_max = "99999999999"` passed `--check` and failed
/// every run in the guest), and a triple out of order or short (`tcp_rmem = "4096 131072 1"`).
fn check_linux_numbers(key: &str, value: &str) -> Result<(), String> {
    let parts: Vec<u64> = value
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let most = if LONGS.contains(&key) {
        i64::MAX as u64
    } else {
        i32::MAX as u64
    };
    if let Some(big) = parts.iter().find(|p| **p > most) {
        return Err(format!(
            "value {value:?} for {key}: {big} is past what Linux holds there ({most})"
        ));
    }
    if TRIPLES.contains(&key) {
        let ordered = parts.len() == 3 && parts[0] <= parts[1] && parts[1] <= parts[2];
        if !ordered {
            return Err(format!(
                "value {value:?} for {key}: three numbers are expected, each at least the one \
                 before (min, default, max)"
            ));
        }
    }
    Ok(())
}

/// Why `key` is refused, with what was probably meant: the Linux keys a FreeBSD name means, or
/// an allowed key a few letters away.
fn not_allowed(key: &str) -> String {
    let refused = format!("{key} is not on netsweep's allowlist of network sysctls");
    if let Some((_, linux)) = FREEBSD.iter().find(|(k, _)| *k == key) {
        return format!(
            "{refused}: it is FreeBSD's, and means {} on Linux (a profile's freebsd table takes \
             FreeBSD's names)",
            linux.join(" and ")
        );
    }
    let near = ALLOWED
        .iter()
        .map(|(k, _, _)| *k)
        .map(|k| (strsim::levenshtein(k, key), k))
        .min();
    if let Some((_, k)) = near.filter(|(d, _)| *d <= 3) {
        return format!("{refused} (did you mean {k}?)");
    }
    // Farther, but an allowed key begins it or ends its last part (a VM trial's
    // `net.ipv4.tcp_rmem_max`: net.ipv4.tcp_rmem, or net.core.rmem_max).
    let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let mut like: Vec<&str> = ALLOWED
        .iter()
        .map(|(k, _, _)| *k)
        .filter(|k| key.starts_with(k) || last(key).ends_with(&last(k)))
        .collect();
    like.truncate(2);
    match like.as_slice() {
        [] => refused,
        some => format!("{refused} (did you mean {}?)", some.join(" or ")),
    }
}

/// FreeBSD sysctls netsweep may change, and whether the value is text (a name). All are
/// host-wide (FreeBSD's VNET jails aside).
pub const FREEBSD_ALLOWED: [(&str, bool); 15] = [
    ("kern.ipc.maxsockbuf", false),
    ("kern.ipc.somaxconn", false),
    ("net.inet.tcp.sendbuf_max", false),
    ("net.inet.tcp.recvbuf_max", false),
    ("net.inet.tcp.sendspace", false),
    ("net.inet.tcp.recvspace", false),
    ("net.inet.tcp.sendbuf_auto", false),
    ("net.inet.tcp.recvbuf_auto", false),
    ("net.inet.tcp.sendbuf_inc", false),
    ("net.inet.tcp.recvbuf_inc", false),
    ("net.inet.tcp.cc.algorithm", true),
    ("net.inet.tcp.sack.enable", false),
    ("net.inet.tcp.rfc1323", false),
    ("net.inet.tcp.delayed_ack", false),
    ("net.inet.tcp.mssdflt", false),
];

/// Checks a FreeBSD key and value against `FREEBSD_ALLOWED`.
pub fn check_freebsd(key: &str, value: &str) -> Result<(), String> {
    if value.contains(['\n', '\r', '\0']) {
        return Err(format!("value for {key} contains a line break or NUL"));
    }
    let Some((_, text)) = FREEBSD_ALLOWED.iter().find(|(k, _)| *k == key) else {
        return Err(format!(
            "{key} is not on netsweep's allowlist of FreeBSD network sysctls ({})",
            FREEBSD_ALLOWED.map(|(k, _)| k).join(", ")
        ));
    };
    check_value(key, value, *text)
}

/// Checks a key and value for the table of `os`.
pub fn check_for(os: Os, key: &str, value: &str) -> Result<(), String> {
    match os {
        Os::Linux => check(key, value),
        Os::FreeBsd => check_freebsd(key, value),
    }
}

/// A value is a short name (`text`) or one to three whole numbers.
fn check_value(key: &str, value: &str, text: bool) -> Result<(), String> {
    let text = &text;
    let ok = if *text {
        !value.is_empty()
            && value.len() <= 32
            && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    } else {
        let parts: Vec<&str> = value.split_whitespace().collect();
        !parts.is_empty() && parts.len() <= 3 && parts.iter().all(|p| p.parse::<u64>().is_ok())
    };
    if !ok {
        return Err(format!(
            "value {value:?} for {key} does not parse (expected {})",
            if *text {
                "a name"
            } else {
                "one to three whole numbers"
            }
        ));
    }
    check_name(key, value)
}

/// The names a text key takes on a stock kernel: Linux's congestion control modules
/// (`net/ipv4/tcp_*.c`) and queueing disciplines, FreeBSD's `cc_*` modules.
const NAMES: [(&str, &[&str]); 3] = [
    (
        "net.ipv4.tcp_congestion_control",
        &[
            "bbr",
            "bic",
            "cdg",
            "cubic",
            "dctcp",
            "highspeed",
            "htcp",
            "hybla",
            "illinois",
            "lp",
            "nv",
            "reno",
            "scalable",
            "vegas",
            "veno",
            "westwood",
            "yeah",
        ],
    ),
    (
        "net.core.default_qdisc",
        &[
            "pfifo_fast",
            "pfifo",
            "bfifo",
            "fq",
            "fq_codel",
            "fq_pie",
            "codel",
            "cake",
            "sfq",
            "pie",
            "noqueue",
        ],
    ),
    (
        "net.inet.tcp.cc.algorithm",
        &[
            "newreno", "cubic", "htcp", "vegas", "cdg", "chd", "dctcp", "hd",
        ],
    ),
];

/// A name one or two letters from a known one is a typo, said before anything is written (a
/// VM trial's `tcp_congestion_control = "cubicc"` passed `--check` and failed every run with
/// "No such file or directory"); a name far from all of them may be a module of its own and
/// is left to the kernel.
fn check_name(key: &str, value: &str) -> Result<(), String> {
    let Some((_, known)) = NAMES.iter().find(|(k, _)| *k == key) else {
        return Ok(());
    };
    if known.contains(&value) {
        return Ok(());
    }
    match known
        .iter()
        .map(|k| (strsim::levenshtein(k, value), *k))
        .min()
        .filter(|(d, _)| *d <= 2)
    {
        Some((_, near)) => Err(format!(
            "value {value:?} for {key} is no {} a stock kernel knows (did you mean {near}?)",
            if key.ends_with("qdisc") {
                "queueing discipline"
            } else {
                "congestion control"
            }
        )),
        None => Ok(()),
    }
}

/// FreeBSD names and the Linux keys they mean. Values carry over unchanged except where
/// noted (`kern.ipc.maxsockbuf` bounds both directions; buffer maxima become the third field
/// of tcp_rmem/tcp_wmem).
pub const FREEBSD: [(&str, &[&str]); 6] = [
    (
        "kern.ipc.maxsockbuf",
        &["net.core.rmem_max", "net.core.wmem_max"],
    ),
    ("net.inet.tcp.sendbuf_max", &["net.ipv4.tcp_wmem"]),
    ("net.inet.tcp.recvbuf_max", &["net.ipv4.tcp_rmem"]),
    (
        "net.inet.tcp.cc.algorithm",
        &["net.ipv4.tcp_congestion_control"],
    ),
    ("net.inet.tcp.sack.enable", &["net.ipv4.tcp_sack"]),
    (
        "net.inet.tcp.rfc1323",
        &["net.ipv4.tcp_timestamps", "net.ipv4.tcp_window_scaling"],
    ),
];

/// Why a profile cannot tune a host of `os`: it has settings, but none for that system.
pub fn missing_table(p: &Profile, os: Os) -> Option<String> {
    let (mine, other) = match os {
        Os::Linux => (p.linux.len(), p.freebsd.len()),
        Os::FreeBsd => (p.freebsd.len(), p.linux.len()),
    };
    (mine == 0 && other > 0).then(|| {
        format!(
            "profile {} has no [profiles.{}.{}] table: nothing in it applies to a {} host \
             (its {} settings are for the other system)",
            p.name,
            p.name,
            match os {
                Os::Linux => "linux",
                Os::FreeBsd => "freebsd",
            },
            os.name(),
            other
        )
    })
}

/// A named profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// Linux key -> (value, what it does).
    pub linux: BTreeMap<String, (String, String)>,
    /// FreeBSD names as written, with their values.
    pub freebsd: BTreeMap<String, String>,
    /// Only raise: a numeric setting already above the profile's value is kept, field by field
    /// (the built-ins, which exist to make buffers large enough, never shrink a larger one).
    pub raise_only: bool,
}

impl Profile {
    /// The settings (name, value) this profile writes on a host of `os`.
    pub fn table(&self, os: Os) -> BTreeMap<String, String> {
        match os {
            Os::Linux => self
                .linux
                .iter()
                .map(|(k, (v, _))| (k.clone(), v.clone()))
                .collect(),
            Os::FreeBsd => self.freebsd.clone(),
        }
    }
}

/// What a raise-only profile writes over `current`: the larger of each numeric field, or the
/// profile's value when the two are not lists of numbers of the same length.
pub fn raised(current: &str, wanted: &str) -> String {
    let nums =
        |s: &str| -> Option<Vec<u64>> { s.split_whitespace().map(|x| x.parse().ok()).collect() };
    match (nums(current), nums(wanted)) {
        (Some(c), Some(w)) if c.len() == w.len() && !c.is_empty() => c
            .iter()
            .zip(&w)
            .map(|(a, b)| (*a).max(*b).to_string())
            .collect::<Vec<_>>()
            .join(" "),
        _ => wanted.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// The built-in profiles; `high-bdp` and `high-bdp-ns` (its per-namespace keys) need the
/// path's rate (bit/s) and RTT (s).
pub fn builtin(name: &str, rate_rtt: Option<(f64, f64)>) -> Result<Profile, String> {
    let mut linux = BTreeMap::new();
    let mut freebsd = BTreeMap::new();
    let mut set = |k: &str, v: String, why: &str| {
        linux.insert(k.to_string(), (v, why.to_string()));
    };
    // FreeBSD: kern.ipc.maxsockbuf bounds every buffer including its mbuf overhead (a cluster
    // of 2048 bytes costs 2304), so it gets an eighth more than the buffers it must allow.
    let mut bsd = |max: u64| {
        freebsd.insert(
            "kern.ipc.maxsockbuf".to_string(),
            (max + max / 8).to_string(),
        );
        freebsd.insert("net.inet.tcp.sendbuf_max".to_string(), max.to_string());
        freebsd.insert("net.inet.tcp.recvbuf_max".to_string(), max.to_string());
    };
    let description = match name {
        "default" => "change nothing; the values in force are recorded".to_string(),
        "high-bdp" | "high-bdp-ns" => {
            let (rate, rtt) =
                rate_rtt.ok_or_else(|| format!("the {name} profile needs --rate and --rtt"))?;
            let bdp = (rate / 8.0 * rtt).ceil() as u64;
            let max = (2 * bdp).clamp(4 << 20, super::advice::KERNEL_MAX);
            bsd(max);
            let host_wide = name == "high-bdp";
            if host_wide {
                set(
                    "net.core.rmem_max",
                    max.to_string(),
                    "largest receive buffer a program may ask for (iperf -w, netsweep -w)",
                );
                set(
                    "net.core.wmem_max",
                    max.to_string(),
                    "largest send buffer a program may ask for",
                );
            }
            set(
                "net.ipv4.tcp_rmem",
                super::advice::BufferAdvice::value("net.ipv4.tcp_rmem", max).unwrap_or_default(),
                "min, default and autotuning maximum of TCP receive buffers: 2 x BDP keeps a window of one BDP",
            );
            set(
                "net.ipv4.tcp_wmem",
                super::advice::BufferAdvice::value("net.ipv4.tcp_wmem", max).unwrap_or_default(),
                "min, default and autotuning maximum of TCP send buffers",
            );
            set(
                "net.ipv4.tcp_no_metrics_save",
                "1".into(),
                "do not start new connections from a previous connection's (possibly bad) metrics",
            );
            format!(
                "buffers sized for {} at {:.1} ms RTT (BDP {} bytes, buffers 2 x BDP){}",
                crate::units::BitRate(rate),
                rtt * 1e3,
                bdp,
                if host_wide {
                    ""
                } else {
                    "; per-namespace keys only, for lab hosts and other namespaces: TCP autotuning \
                     grows to 2 x BDP, while -w stays capped by the host's net.core.rmem_max/wmem_max"
                }
            )
        }
        "large-buffers" => {
            bsd(33_554_432);
            // ESnet host tuning for 10 Gbit/s paths up to about 100 ms.
            set(
                "net.core.rmem_max",
                "67108864".into(),
                "64 MiB: largest receive buffer a program may ask for",
            );
            set(
                "net.core.wmem_max",
                "67108864".into(),
                "64 MiB: largest send buffer a program may ask for",
            );
            set(
                "net.ipv4.tcp_rmem",
                "4096 87380 33554432".into(),
                "TCP receive autotuning up to 32 MiB",
            );
            set(
                "net.ipv4.tcp_wmem",
                "4096 65536 33554432".into(),
                "TCP send autotuning up to 32 MiB",
            );
            set(
                "net.ipv4.tcp_mtu_probing",
                "1".into(),
                "probe the path MTU when ICMP is blocked (black holes)",
            );
            set(
                "net.core.netdev_max_backlog",
                "30000".into(),
                "longer per-CPU input queue for bursts at 10 Gbit/s",
            );
            "the classic large-buffer set of host-tuning guides (ESnet, 10 Gbit/s up to ~100 ms)"
                .to_string()
        }
        other => {
            return Err(format!(
                "no built-in profile {other:?}: built-ins are default, high-bdp, high-bdp-ns, large-buffers"
            ));
        }
    };
    Ok(Profile {
        name: name.to_string(),
        description,
        linux,
        freebsd,
        raise_only: name != "default",
    })
}

/// Writes a profile back as a profile file (both systems' tables).
pub fn to_toml(p: &Profile) -> String {
    let mut s = String::new();
    if p.raise_only {
        s.push_str(&format!("[profiles.{}]\nraise_only = true\n", p.name));
    }
    for (os, table) in [
        ("linux", p.table(Os::Linux)),
        ("freebsd", p.table(Os::FreeBsd)),
    ] {
        if table.is_empty() {
            continue;
        }
        s.push_str(&format!("[profiles.{}.{os}]\n", p.name));
        for (k, v) in table {
            s.push_str(&format!("\"{k}\" = \"{v}\"\n"));
        }
    }
    s
}

/// Reads `[profiles.NAME.linux]` / `[profiles.NAME.freebsd]` tables (a profile file or a plan):
/// the first problem, if any (`parse_all` has every one).
pub fn parse_file(text: &str) -> Result<Vec<Profile>, String> {
    let (profiles, problems) = parse_all(text);
    match problems.into_iter().next() {
        Some((why, _)) => Err(why),
        None => Ok(profiles),
    }
}

/// A problem of a profile table and where it is in the text (a byte range), when known.
pub type Problem = (String, Option<std::ops::Range<usize>>);

/// Every profile that reads, and every problem at once, each where it is: a VM trial's plan
/// with two misspelt keys and a bad value took three `--check`s, one problem each.
pub fn parse_all(text: &str) -> (Vec<Profile>, Vec<Problem>) {
    let doc = match toml_edit::Document::parse(text.to_string()) {
        Ok(d) => d,
        Err(e) => return (Vec::new(), vec![(e.to_string(), None)]),
    };
    let Some(profiles) = doc
        .as_table()
        .get("profiles")
        .and_then(|p| p.as_table_like())
    else {
        return (Vec::new(), Vec::new());
    };
    let mut out = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    for (name, body) in profiles.iter() {
        let Some(table) = body.as_table_like() else {
            problems.push((format!("profiles.{name} must be a table"), body.span()));
            continue;
        };
        let mut p = Profile {
            name: name.to_string(),
            description: "from a profile file".into(),
            linux: BTreeMap::new(),
            freebsd: BTreeMap::new(),
            raise_only: false,
        };
        let before = problems.len();
        for (os, kv) in table.iter() {
            if os == "raise_only" {
                match kv.as_bool() {
                    Some(b) => p.raise_only = b,
                    None => problems.push((
                        format!("profiles.{name}.raise_only must be true or false"),
                        kv.span(),
                    )),
                }
                continue;
            }
            let Some(pairs) = kv.as_table_like() else {
                problems.push((
                    format!("profiles.{name}.{os} must be a table of sysctls"),
                    kv.span(),
                ));
                continue;
            };
            if os != "linux" && os != "freebsd" {
                problems.push((
                    format!("profiles.{name}: unknown operating system {os:?} (linux or freebsd)"),
                    kv.span(),
                ));
                continue;
            }
            for (k, v) in pairs.iter() {
                let Some(value) = v
                    .as_str()
                    .map(String::from)
                    .or_else(|| v.as_integer().map(|i| i.to_string()))
                else {
                    problems.push((
                        format!("profiles.{name}.{os}.{k}: value must be a string or integer"),
                        v.span(),
                    ));
                    continue;
                };
                let checked = if os == "linux" {
                    check(k, &value)
                } else {
                    check_freebsd(k, &value)
                };
                match checked {
                    Err(e) => problems.push((format!("profiles.{name}.{os}: {e}"), v.span())),
                    Ok(()) if os == "linux" => {
                        p.linux.insert(k.to_string(), (value, String::new()));
                    }
                    Ok(()) => {
                        p.freebsd.insert(k.to_string(), value);
                    }
                }
            }
        }
        if problems.len() == before {
            out.push(p);
        }
    }
    (out, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trial's plan passed `--check` with values a kernel refuses or misreads, and got no
    /// pointer for a FreeBSD name or a typo.
    #[test]
    fn values_a_kernel_refuses_and_names_a_user_meant_are_said_before_any_write() {
        let e = check("net.core.rmem_max", "99999999999").unwrap_err();
        assert!(
            e.contains("past what Linux holds there (2147483647)"),
            "{e}"
        );
        assert!(check("net.core.rmem_max", "2147483647").is_ok());
        let e = check("net.ipv4.tcp_rmem", "4096 131072 1").unwrap_err();
        assert!(e.contains("each at least the one before"), "{e}");
        assert!(check("net.ipv4.tcp_rmem", "4096").is_err());
        assert!(check("net.ipv4.tcp_rmem", "4096 131072 16777216").is_ok());
        // tcp_mem is in pages, held in a long.
        assert!(check("net.ipv4.tcp_mem", "3000000000 4000000000 5000000000").is_ok());
        let e = check("kern.ipc.maxsockbuf", "16777216").unwrap_err();
        assert!(
            e.contains(
                "it is FreeBSD's, and means net.core.rmem_max and net.core.wmem_max on Linux"
            ),
            "{e}"
        );
        let e = check("net.ipv4.tcp_rmme", "4096 131072 16777216").unwrap_err();
        assert!(e.ends_with("(did you mean net.ipv4.tcp_rmem?)"), "{e}");
        let e = check("net.ipv4.ip_forward", "1").unwrap_err();
        assert!(!e.contains("did you mean"), "{e}");
        assert!(check("net.core.optmem_max", "81920").is_ok());
        // Farther from an allowed key, but begun or ended by one (a VM trial's).
        let e = check("net.ipv4.tcp_rmem_max", "4194304").unwrap_err();
        assert!(
            e.ends_with("(did you mean net.core.rmem_max or net.ipv4.tcp_rmem?)"),
            "{e}"
        );
        // A congestion control or qdisc a letter or two from a stock one is a typo; a name far
        // from all of them may be a module of its own.
        let e = check("net.ipv4.tcp_congestion_control", "cubicc").unwrap_err();
        assert!(e.ends_with("(did you mean cubic?)"), "{e}");
        assert!(check("net.ipv4.tcp_congestion_control", "bbr").is_ok());
        assert!(check("net.ipv4.tcp_congestion_control", "prague").is_ok());
        let e = check("net.core.default_qdisc", "fq_codle").unwrap_err();
        assert!(e.contains("queueing discipline") && e.ends_with("(did you mean fq_codel?)"));
    }

    #[test]
    fn the_issue_profile_file_is_accepted() {
        let text = r#"
[profiles.bigbuf.linux]
"net.ipv4.tcp_rmem" = "4096 131072 16777216"
"net.ipv4.tcp_wmem" = "4096 16384 16777216"

[profiles.bigbuf.freebsd]
"kern.ipc.maxsockbuf" = "16777216"
"net.inet.tcp.sendbuf_max" = "16777216"
"net.inet.tcp.recvbuf_max" = "16777216"
"#;
        let p = parse_file(text).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].linux["net.ipv4.tcp_rmem"].0, "4096 131072 16777216");
        assert_eq!(p[0].freebsd.len(), 3);
    }

    #[test]
    fn dangerous_keys_and_values_are_refused() {
        assert!(check("net.ipv4.tcp_rmem", "4096 131072 16777216").is_ok());
        assert!(
            check("net/../kernel/panic", "1")
                .unwrap_err()
                .contains("not accepted")
        );
        assert!(
            check("kernel.panic", "1")
                .unwrap_err()
                .contains("allowlist")
        );
        assert!(
            check("net.ipv4.tcp_rmem", "lots")
                .unwrap_err()
                .contains("does not parse")
        );
        assert!(check("net.ipv4.tcp_rmem", "1\n2").is_err());
        assert!(check("net.ipv4.tcp_congestion_control", "bbr; rm -rf /").is_err());
        assert!(parse_file("[profiles.x.linux]\n\"kernel.panic\" = \"1\"\n").is_err());
    }

    #[test]
    fn profiles_round_trip_through_toml() {
        let p = builtin("large-buffers", None).unwrap();
        let back = parse_file(&to_toml(&p)).unwrap();
        assert_eq!(
            back[0]
                .linux
                .iter()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<Vec<_>>(),
            p.linux
                .iter()
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn raise_only_keeps_larger_fields() {
        assert_eq!(
            raised("4096 131072 33554432", "4096 131072 5000000"),
            "4096 131072 33554432"
        );
        assert_eq!(
            raised("4096 87380 6291456", "4096 131072 16777216"),
            "4096 131072 16777216"
        );
        assert_eq!(raised("212992", "16777216"), "16777216");
        assert_eq!(raised("cubic", "bbr"), "bbr");
        let p = builtin("large-buffers", None).unwrap();
        assert!(p.raise_only);
        assert!(
            parse_file(&to_toml(&p)).unwrap()[0].raise_only,
            "kept over ssh"
        );
        assert!(!builtin("default", None).unwrap().raise_only);
    }

    #[test]
    fn high_bdp_is_sized_from_rate_and_rtt() {
        let p = builtin("high-bdp", Some((10e9, 0.0016))).unwrap();
        // 10 Gbit/s x 1.6 ms = 2,000,000 bytes; buffers 2 x BDP but at least 4 MiB.
        assert_eq!(p.linux["net.ipv4.tcp_rmem"].0, "4096 131072 4194304");
        let p = builtin("high-bdp", Some((10e9, 0.1))).unwrap();
        assert_eq!(p.linux["net.core.rmem_max"].0, "250000000");
        assert!(builtin("high-bdp", None).is_err());
        assert!(builtin("default", None).unwrap().linux.is_empty());
        // The per-namespace variant: the same autotuning limits, no host-wide key.
        let ns = builtin("high-bdp-ns", Some((10e9, 0.1))).unwrap();
        assert_eq!(ns.linux["net.ipv4.tcp_rmem"], p.linux["net.ipv4.tcp_rmem"]);
        assert!(
            ns.linux.keys().all(|k| scope(k) == Some(Scope::Namespace)),
            "{:?}",
            ns.linux.keys()
        );
        assert!(builtin("high-bdp-ns", None).is_err());
    }

    #[test]
    fn each_system_gets_its_own_table() {
        let text = "[profiles.mixed.linux]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 8388608\"\n\
                    [profiles.mixed.freebsd]\n\"kern.ipc.maxsockbuf\" = 9437184\n\
                    \"net.inet.tcp.recvspace\" = \"131072\"\n\"net.inet.tcp.cc.algorithm\" = \"cubic\"\n";
        let p = parse_file(text).unwrap().remove(0);
        assert_eq!(p.table(Os::Linux).len(), 1);
        let bsd = p.table(Os::FreeBsd);
        assert_eq!(bsd["kern.ipc.maxsockbuf"], "9437184");
        assert_eq!(bsd["net.inet.tcp.cc.algorithm"], "cubic");
        // Both tables survive the trip to a remote netsweep.
        let back = parse_file(&to_toml(&p)).unwrap().remove(0);
        assert_eq!(back.table(Os::FreeBsd), bsd);
        assert_eq!(back.table(Os::Linux), p.table(Os::Linux));
        assert!(missing_table(&p, Os::FreeBsd).is_none());
        let linux_only = parse_file("[profiles.l.linux]\n\"net.ipv4.tcp_sack\" = \"1\"\n")
            .unwrap()
            .remove(0);
        let e = missing_table(&linux_only, Os::FreeBsd).unwrap();
        assert!(e.contains("no [profiles.l.freebsd] table"), "{e}");
    }

    #[test]
    fn freebsd_names_are_checked_against_their_own_allowlist() {
        assert!(check_freebsd("net.inet.tcp.sendspace", "65536").is_ok());
        assert!(check_freebsd("net.inet.tcp.cc.algorithm", "htcp").is_ok());
        assert!(check_freebsd("kern.securelevel", "-1").is_err());
        assert!(check_freebsd("kern.ipc.maxsockbuf", "1;reboot").is_err());
        assert!(check_freebsd("net.inet.tcp.cc.algorithm", "a b").is_err());
        assert!(parse_file("[profiles.x.freebsd]\n\"kern.securelevel\" = \"-1\"\n").is_err());
        // A Linux name in the FreeBSD table is refused, and the other way round.
        assert!(check_for(Os::FreeBsd, "net.ipv4.tcp_rmem", "1 2 3").is_err());
        assert!(check_for(Os::Linux, "kern.ipc.maxsockbuf", "1").is_err());
    }

    #[test]
    fn builtins_carry_a_freebsd_table_sized_like_the_linux_one() {
        let p = builtin("high-bdp", Some((10e9, 0.01))).unwrap();
        // BDP 12.5 MB; buffers 2 x BDP; maxsockbuf an eighth more for mbuf overhead.
        let b = p.table(Os::FreeBsd);
        assert_eq!(b["net.inet.tcp.recvbuf_max"], "25000000");
        assert_eq!(b["kern.ipc.maxsockbuf"], "28125000");
        assert_eq!(p.linux["net.ipv4.tcp_rmem"].0, "4096 131072 25000000");
        assert!(
            builtin("default", None)
                .unwrap()
                .table(Os::FreeBsd)
                .is_empty()
        );
    }
}
