//! Kernel counters around a run: `/proc/net/snmp` and `/proc/net/netstat` (TCP retransmissions,
//! UDP receive errors, listen overflows, ...) and `/proc/net/dev` (bytes, packets, errors and
//! drops per interface), plus their deltas. On FreeBSD the same counters come from
//! `netstat -ibn` and `netstat -s --libxo json` of a `freebsd::Capture`, under the Linux names
//! (`of_freebsd`). Parsing is pure; `read` takes the proc root so fixture trees can stand in, and
//! reads the calling thread's namespace (`thread-self`).

use crate::host::freebsd;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Counters of one interface from `/proc/net/dev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DevCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errors: u64,
    pub rx_dropped: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub tx_dropped: u64,
}

/// A snapshot of one namespace's counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// `Proto.Field` from snmp and netstat, e.g. `Tcp.RetransSegs`, `TcpExt.ListenOverflows`.
    pub protocol: BTreeMap<String, i64>,
    pub interfaces: BTreeMap<String, DevCounters>,
}

/// Parses the paired header/value lines of `/proc/net/snmp` or `/proc/net/netstat`.
pub fn parse_pairs(text: &str, into: &mut BTreeMap<String, i64>) {
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [head, vals] = pair else { continue };
        let (Some((proto, names)), Some((proto2, values))) =
            (head.split_once(':'), vals.split_once(':'))
        else {
            continue;
        };
        if proto != proto2 {
            continue;
        }
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = v.parse::<i64>() {
                into.insert(format!("{proto}.{n}"), v);
            }
        }
    }
}

/// Parses `/proc/net/dev`.
pub fn parse_dev(text: &str) -> BTreeMap<String, DevCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let f: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        if f.len() < 16 {
            continue;
        }
        out.insert(
            name.trim().to_string(),
            DevCounters {
                rx_bytes: f[0],
                rx_packets: f[1],
                rx_errors: f[2],
                rx_dropped: f[3],
                tx_bytes: f[8],
                tx_packets: f[9],
                tx_errors: f[10],
                tx_dropped: f[11],
            },
        );
    }
    out
}

/// Reads a snapshot under `proc_root` (normally `/proc`), in the calling thread's namespace.
pub fn read(proc_root: &Path) -> Snapshot {
    let net = if proc_root.join("thread-self/net").exists() {
        proc_root.join("thread-self/net")
    } else {
        proc_root.join("net")
    };
    let mut s = Snapshot::default();
    for f in ["snmp", "netstat"] {
        if let Ok(text) = crate::inputs::read_pseudo(&net.join(f)) {
            parse_pairs(&text, &mut s.protocol);
        }
    }
    if let Ok(text) = crate::inputs::read_pseudo(&net.join("dev")) {
        s.interfaces = parse_dev(&text);
    }
    s
}

/// A snapshot of this host (on Linux: the calling thread's namespace) from this system's own
/// sources: `/proc` on Linux, `netstat --libxo json` on FreeBSD.
pub fn read_live() -> Snapshot {
    match crate::platform::THIS_OS {
        crate::platform::Os::Linux => read(Path::new("/proc")),
        crate::platform::Os::FreeBsd => of_freebsd(&freebsd::Capture::live_counters()),
    }
}

/// The interface counters of `netstat -ibn --libxo json`: one `<Link#N>` entry per
/// interface (the per-address entries repeat a subset and are skipped).
pub fn parse_netstat_interfaces(json_text: &str) -> BTreeMap<String, DevCounters> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json_text) else {
        return BTreeMap::new();
    };
    let list = v["statistics"]["interface"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for i in list {
        let is_link = i["network"]
            .as_str()
            .is_some_and(|n| n.starts_with("<Link#"));
        let Some(name) = i["name"].as_str().filter(|_| is_link) else {
            continue;
        };
        let n = |k: &str| {
            freebsd::whole(&i[k])
                .and_then(|v| u64::try_from(v).ok())
                .unwrap_or(0)
        };
        out.insert(
            name.to_string(),
            DevCounters {
                rx_bytes: n("received-bytes"),
                rx_packets: n("received-packets"),
                rx_errors: n("received-errors"),
                rx_dropped: n("dropped-packets"),
                tx_bytes: n("sent-bytes"),
                tx_packets: n("sent-packets"),
                tx_errors: n("send-errors"),
                tx_dropped: 0,
            },
        );
    }
    out
}

/// FreeBSD's `netstat -s` fields and the Linux counter names netsweep's checks read
/// (`/proc/net/snmp` and `netstat` names), so retransmission and drop checks work unchanged.
/// Several FreeBSD fields may add up into one Linux name.
pub const PROTOCOL_NAMES: [(&str, &str); 14] = [
    ("tcp.sent-packets", "Tcp.OutSegs"),
    ("tcp.sent-retransmitted-packets", "Tcp.RetransSegs"),
    ("tcp.received-packets", "Tcp.InSegs"),
    ("tcp.discard-bad-checksum", "Tcp.InErrs"),
    ("tcp.listen-queue-overflows", "TcpExt.ListenOverflows"),
    ("tcp.retransmit-timeouts", "TcpExt.TCPTimeouts"),
    ("tcp.received-out-of-order", "TcpExt.TCPOFOQueue"),
    ("tcp.sack.recovery-episodes", "TcpExt.TCPSackRecovery"),
    ("udp.received-datagrams", "Udp.InDatagrams"),
    ("udp.output-packets", "Udp.OutDatagrams"),
    ("udp.dropped-no-socket", "Udp.NoPorts"),
    ("udp.dropped-full-socket-buffer", "Udp.RcvbufErrors"),
    ("udp.dropped-full-socket-buffer", "Udp.InErrors"),
    ("udp.dropped-bad-checksum", "Udp.InErrors"),
];

/// The TCP and UDP counters of `netstat -s --libxo json`, under their Linux names, plus every
/// FreeBSD field as `freebsd.<proto>.<field>`.
pub fn parse_netstat_protocols(json_text: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json_text) else {
        return out;
    };
    let stats = &v["statistics"];
    let get = |path: &str| -> Option<i64> {
        let mut cur = stats;
        for part in path.split('.') {
            cur = cur.get(part)?;
        }
        freebsd::whole(cur)
    };
    for (bsd, linux) in PROTOCOL_NAMES {
        if let Some(x) = get(bsd) {
            *out.entry(linux.to_string()).or_insert(0) += x;
        }
    }
    for proto in ["tcp", "udp"] {
        if let Some(fields) = stats[proto].as_object() {
            for (k, x) in fields {
                if let Some(x) = freebsd::whole(x) {
                    out.insert(format!("freebsd.{proto}.{k}"), x);
                }
            }
        }
    }
    out
}

/// Counters of a FreeBSD host in netsweep's common form.
pub fn of_freebsd(c: &freebsd::Capture) -> Snapshot {
    Snapshot {
        protocol: parse_netstat_protocols(&c.netstat_protocols),
        interfaces: parse_netstat_interfaces(&c.netstat_interfaces),
    }
}

/// What moved between two snapshots: only non-zero changes are kept.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delta {
    pub protocol: BTreeMap<String, i64>,
    pub interfaces: BTreeMap<String, DevCounters>,
}

pub fn delta(before: &Snapshot, after: &Snapshot) -> Delta {
    let protocol = after
        .protocol
        .iter()
        .filter_map(|(k, v)| {
            let d = v - before.protocol.get(k).copied().unwrap_or(0);
            (d != 0).then(|| (k.clone(), d))
        })
        .collect();
    let interfaces = after
        .interfaces
        .iter()
        .filter_map(|(k, a)| {
            let b = before.interfaces.get(k).copied().unwrap_or_default();
            let d = DevCounters {
                rx_bytes: a.rx_bytes.saturating_sub(b.rx_bytes),
                rx_packets: a.rx_packets.saturating_sub(b.rx_packets),
                rx_errors: a.rx_errors.saturating_sub(b.rx_errors),
                rx_dropped: a.rx_dropped.saturating_sub(b.rx_dropped),
                tx_bytes: a.tx_bytes.saturating_sub(b.tx_bytes),
                tx_packets: a.tx_packets.saturating_sub(b.tx_packets),
                tx_errors: a.tx_errors.saturating_sub(b.tx_errors),
                tx_dropped: a.tx_dropped.saturating_sub(b.tx_dropped),
            };
            (d != DevCounters::default()).then(|| (k.clone(), d))
        })
        .collect();
    Delta {
        protocol,
        interfaces,
    }
}

/// Counters whose growth signals trouble: retransmissions, drops, errors, overflows.
pub fn trouble(d: &Delta) -> Vec<(String, i64)> {
    const KEYS: [&str; 8] = [
        "Tcp.RetransSegs",
        "Tcp.InErrs",
        "Udp.RcvbufErrors",
        "Udp.InErrors",
        "TcpExt.ListenOverflows",
        "TcpExt.ListenDrops",
        "TcpExt.TCPLostRetransmit",
        "TcpExt.TCPTimeouts",
    ];
    let mut out: Vec<(String, i64)> = KEYS
        .iter()
        .filter_map(|k| d.protocol.get(*k).map(|v| (k.to_string(), *v)))
        .collect();
    for (name, c) in &d.interfaces {
        for (what, v) in [
            ("rx_errors", c.rx_errors),
            ("rx_dropped", c.rx_dropped),
            ("tx_errors", c.tx_errors),
            ("tx_dropped", c.tx_dropped),
        ] {
            if v > 0 {
                out.push((format!("{name}.{what}"), v as i64));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 120 0\nUdp: InDatagrams RcvbufErrors\nUdp: 10 3\n";
    const DEV: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n  eth0: 5000 50 1 2 0 0 0 0 7000 70 0 4 0 0 0 0\n";

    #[test]
    fn parses_snmp_and_dev() {
        let mut m = BTreeMap::new();
        parse_pairs(SNMP, &mut m);
        assert_eq!(m["Tcp.RetransSegs"], 120);
        assert_eq!(m["Udp.RcvbufErrors"], 3);
        let d = parse_dev(DEV);
        assert_eq!(d["eth0"].rx_dropped, 2);
        assert_eq!(d["eth0"].tx_dropped, 4);
        assert_eq!(d["lo"].tx_bytes, 1000);
    }

    #[test]
    fn deltas_keep_only_what_moved_and_flag_trouble() {
        let mut a = Snapshot::default();
        parse_pairs(SNMP, &mut a.protocol);
        a.interfaces = parse_dev(DEV);
        let mut b = a.clone();
        *b.protocol.get_mut("Tcp.RetransSegs").unwrap() += 5;
        b.interfaces.get_mut("eth0").unwrap().rx_dropped += 7;
        let d = delta(&a, &b);
        assert_eq!(d.protocol.len(), 1);
        assert_eq!(d.interfaces.len(), 1);
        let t = trouble(&d);
        assert!(t.contains(&("Tcp.RetransSegs".to_string(), 5)));
        assert!(t.contains(&("eth0.rx_dropped".to_string(), 7)));
    }

    #[test]
    fn reads_a_fixture_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("net")).unwrap();
        std::fs::write(dir.path().join("net/snmp"), SNMP).unwrap();
        std::fs::write(dir.path().join("net/dev"), DEV).unwrap();
        let s = read(dir.path());
        assert_eq!(s.protocol["Tcp.RetransSegs"], 120);
        assert_eq!(s.interfaces.len(), 2);
    }

    fn freebsd_fixture(dir: &str) -> freebsd::Capture {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freebsd");
        freebsd::Capture::from_dir(&root.join(dir)).expect("fixture capture")
    }

    #[test]
    fn netstat_libxo_counters_under_linux_names() {
        let c = of_freebsd(&freebsd_fixture("vm-re0"));
        // Only the <Link#N> entry of each interface counts (the per-address ones repeat a subset).
        assert_eq!(c.interfaces.len(), 2);
        let re0 = c.interfaces["re0"];
        assert_eq!(re0.rx_bytes, 2_685_539_012);
        assert_eq!(re0.rx_dropped, 412);
        assert_eq!(re0.tx_errors, 3);
        let p = &c.protocol;
        assert_eq!(p["Tcp.RetransSegs"], 14);
        assert_eq!(p["Tcp.OutSegs"], 902_118);
        assert_eq!(p["TcpExt.TCPSackRecovery"], 2);
        assert_eq!(p["Udp.RcvbufErrors"], 5);
        // Full socket buffers and bad checksums both count as UDP input errors, as on Linux.
        assert_eq!(p["Udp.InErrors"], 5);
        assert_eq!(p["freebsd.tcp.received-out-of-order"], 311);
        assert!(parse_netstat_protocols("not json").is_empty());
        assert!(parse_netstat_interfaces("{\"statistics\": 3}").is_empty());
    }

    #[test]
    fn libxo_numbers_in_strings_are_read_too() {
        let i = r#"{"statistics": {"interface": [{"name":"vtnet0","network":"<Link#1>","mtu":"1500","received-bytes":"123","dropped-packets":"4"}]}}"#;
        let c = parse_netstat_interfaces(i);
        assert_eq!(c["vtnet0"].rx_bytes, 123);
        assert_eq!(c["vtnet0"].rx_dropped, 4);
        let s = r#"{"statistics": {"tcp": {"sent-retransmitted-packets":"9","sack":{"recovery-episodes":"1"}}}}"#;
        let p = parse_netstat_protocols(s);
        assert_eq!(p["Tcp.RetransSegs"], 9);
        assert_eq!(p["TcpExt.TCPSackRecovery"], 1);
    }
}
