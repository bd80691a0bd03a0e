//! The judgments of the 100G checklist: pure functions of the facts read and the path's rate,
//! each returning one `Finding` with a checklist state. An item that is wrong but does not
//! matter at the path's rate (a 1 Gbit/s host with its ring sizes at the default) is `ok`
//! with the reason, never a finding; an item whose fact could not be read is `unknown` with
//! the reason. Every fix is one command line a root shell runs as printed, interface names
//! quoted by `paste::quote`. The rates each item matters from follow ESnet's fasterdata host
//! tuning pages (docs/doctor-100g.md).

use super::parse::{Coalesce, Feature, LinkDetails, Pause, Qdisc, Rings};
use crate::host::doctor::{CheckState, ChecklistItem, Finding, Severity};
use crate::paste::quote;
use crate::units::BitRate;
use std::collections::BTreeMap;

pub const G10: f64 = 10e9;
pub const G40: f64 = 40e9;
pub const G100: f64 = 100e9;

/// What a judgment found, before the path's rate decides what it means.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Set as recommended (the title says what was read).
    Ok(String),
    /// Not as recommended: how bad it is where it matters, and the command that fixes it
    /// (`None` only when no command can: fq missing from the kernel, a NIC's MTU limit).
    Wrong {
        title: String,
        severity: Severity,
        fix: Option<String>,
    },
    /// The fact could not be read: why.
    Unknown(String),
    /// Nothing on the host to change, but how to run the test here (the NUMA node to pin it
    /// to): `ok`, with the command as its fix, a note where the rate makes it matter.
    Advice { title: String, fix: String },
}

fn wrong(title: impl Into<String>, severity: Severity, fix: Option<String>) -> Verdict {
    Verdict::Wrong {
        title: title.into(),
        severity,
        fix,
    }
}

/// The finding of item `id` for a path of `rate` bit/s, given the verdict: a `Wrong` below
/// `from` is `ok` (not needed at this rate), and with no rate known it is `unknown`.
pub fn finding(id: String, from: f64, rate: Option<f64>, v: Verdict) -> Finding {
    let item = |state, reason: Option<String>| ChecklistItem {
        state,
        matters_from_bps: from,
        rate_bps: rate,
        reason,
    };
    let (f, it) = match v {
        Verdict::Ok(title) => (
            Finding::new(id, Severity::Ok, title),
            item(CheckState::Ok, None),
        ),
        Verdict::Advice { title, fix } => {
            let sev = if rate.is_some_and(|r| r >= from) {
                Severity::Info
            } else {
                Severity::Ok
            };
            (
                Finding::new(id, sev, title).fix(fix),
                item(CheckState::Ok, None),
            )
        }
        Verdict::Unknown(why) => (
            Finding::new(id, Severity::Info, format!("not checked: {why}")),
            item(CheckState::Unknown, Some(why)),
        ),
        Verdict::Wrong {
            title,
            severity,
            fix,
        } => match rate {
            Some(r) if r < from => {
                let why = format!(
                    "matters from {}; the path runs at {}",
                    BitRate(from),
                    BitRate(r)
                );
                (
                    Finding::new(id, Severity::Ok, format!("{title} (fine here: {why})")),
                    item(CheckState::Ok, Some(why)),
                )
            }
            Some(_) => {
                let mut f = Finding::new(id, severity, title);
                f.fix = fix;
                (f, item(CheckState::Finding, None))
            }
            None => {
                let why = format!(
                    "the path's rate is unknown (give --rate); this matters from {}",
                    BitRate(from)
                );
                let mut f = Finding::new(id, Severity::Info, format!("{title} ({why})"));
                f.fix = fix;
                (f, item(CheckState::Unknown, Some(why)))
            }
        },
    };
    Finding {
        checklist: Some(it),
        ..f
    }
}

/// CPU frequency governors in use (`scaling_governor` of every CPU, deduplicated).
pub fn cpu_governor(govs: &[String]) -> Verdict {
    if govs.is_empty() {
        return Verdict::Unknown(
            "no cpufreq/scaling_governor in sysfs (a virtual machine, or no cpufreq driver): \
             the firmware or hypervisor sets the clock"
                .into(),
        );
    }
    if govs.iter().all(|g| g == "performance") {
        return Verdict::Ok("CPU frequency governor is performance".into());
    }
    wrong(
        format!(
            "CPU frequency governor is {}, not performance: each packet's cost follows the clock, and a governor that ramps lags bursts",
            govs.join(",")
        ),
        Severity::Warning,
        Some("cpupower frequency-set -g performance".into()),
    )
}

/// Simultaneous multithreading (`smt/active`, `smt/control`).
pub fn smt(active: Option<&str>, control: Option<&str>) -> Verdict {
    match (active, control) {
        (_, Some(c @ ("notsupported" | "notimplemented"))) => {
            Verdict::Ok(format!("no SMT to turn off (smt/control: {c})"))
        }
        (Some("0"), _) => Verdict::Ok(format!(
            "SMT is off (smt/control: {})",
            control.unwrap_or("?")
        )),
        (Some("1"), _) => wrong(
            "SMT (hyper-threading) is on: the NIC's interrupts and the test's thread can share one physical core",
            Severity::Info,
            Some("echo off | tee /sys/devices/system/cpu/smt/control".into()),
        ),
        _ => {
            Verdict::Unknown("no /sys/devices/system/cpu/smt/active (a kernel before 4.19)".into())
        }
    }
}

/// The NUMA facts of one NIC: its node and the host's nodes with their CPUs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Numa {
    /// `device/numa_node`; `None` or negative when the platform does not say.
    pub nic_node: Option<i32>,
    /// Every node's CPUs, by node number.
    pub nodes: BTreeMap<u32, Vec<u32>>,
}

impl Numa {
    fn local_cpus(&self) -> Option<(u32, &Vec<u32>)> {
        let n = u32::try_from(self.nic_node?).ok()?;
        self.nodes.get(&n).map(|c| (n, c))
    }
}

/// The IRQs of a NIC (number and its `smp_affinity_list`) against its NUMA node's CPUs.
pub fn irq_affinity(nic: &str, numa: &Numa, irqs: &[(u32, Option<Vec<u32>>)]) -> Verdict {
    if irqs.is_empty() {
        return Verdict::Unknown(format!(
            "no interrupts of {nic} found (device/msi_irqs, /proc/interrupts)"
        ));
    }
    if numa.nodes.len() <= 1 {
        return Verdict::Ok(format!(
            "{nic}: one NUMA node, so its {} interrupts run on local cores",
            irqs.len()
        ));
    }
    let Some((node, cpus)) = numa.local_cpus() else {
        return Verdict::Unknown(format!(
            "{nic} does not say its NUMA node (device/numa_node)"
        ));
    };
    let remote: Vec<u32> = irqs
        .iter()
        .filter(|(_, aff)| {
            aff.as_ref()
                .is_some_and(|a| a.iter().any(|c| !cpus.contains(c)))
        })
        .map(|(i, _)| *i)
        .collect();
    if remote.is_empty() {
        return Verdict::Ok(format!(
            "{nic}: its {} interrupts run on NUMA node {node}, the NIC's own",
            irqs.len()
        ));
    }
    let list: Vec<String> = remote.iter().map(u32::to_string).collect();
    let cpu_list = compact(cpus);
    wrong(
        format!(
            "{nic} sits on NUMA node {node}, but {} of its {} interrupts may run on other nodes' cores: every packet crosses the socket interconnect",
            remote.len(),
            irqs.len()
        ),
        Severity::Warning,
        Some(format!(
            "systemctl stop irqbalance; for i in {}; do echo {cpu_list} > /proc/irq/$i/smp_affinity_list; done",
            list.join(" ")
        )),
    )
}

/// `[0,1,2,3,8]` as the kernel writes CPU lists: `0-3,8`.
pub fn compact(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Where the test's own threads should run: the NIC's node, when the host has several.
/// `server` is the pasteable command the prefix goes in front of.
pub fn numa_threads(nic: &str, numa: &Numa, server: &str) -> Verdict {
    if numa.nodes.len() <= 1 {
        return Verdict::Ok(format!("{nic}: one NUMA node, every core is local"));
    }
    let Some((node, _)) = numa.local_cpus() else {
        return Verdict::Unknown(format!(
            "{nic} does not say its NUMA node (device/numa_node)"
        ));
    };
    Verdict::Advice {
        title: format!(
            "{nic} sits on NUMA node {node} of {}: run the test's threads and memory there, at both ends (the same numactl prefix before the client)",
            numa.nodes.len()
        ),
        fix: format!("numactl --cpunodebind={node} --membind={node} {server}"),
    }
}

/// Ring sizes, current against the driver's maximum.
pub fn rings(nic: &str, r: &Rings) -> Verdict {
    let (Some(rx), Some(rx_max)) = (r.rx, r.rx_max) else {
        return Verdict::Unknown(format!("`ethtool -g {nic}` reports no ring sizes"));
    };
    let tx_short = matches!((r.tx, r.tx_max), (Some(t), Some(m)) if t < m);
    if rx >= rx_max && !tx_short {
        return Verdict::Ok(format!("{nic}: rings at the driver's maximum (rx {rx})"));
    }
    let mut fix = format!("ethtool -G {} rx {rx_max}", quote(nic));
    if let Some(m) = r.tx_max.filter(|_| tx_short) {
        fix.push_str(&format!(" tx {m}"));
    }
    wrong(
        format!(
            "{nic}: rx ring {rx} of {rx_max}, tx ring {} of {}: a burst longer than the ring is dropped before the kernel sees it",
            crate::host::doctor::opt(r.tx),
            crate::host::doctor::opt(r.tx_max)
        ),
        Severity::Warning,
        Some(fix),
    )
}

/// Whether a NIC's interrupt coalescing can be set from this host: a virtio_net device offers
/// it only with `VIRTIO_NET_F_VQ_NOTF_COAL` or `VIRTIO_NET_F_NOTF_COAL` (feature bits 52 and
/// 53 of sysfs's `device/features`), and Linux's virtio_net refuses `ethtool -C` without them
/// (a trial's guest was told `ethtool -C eth0 adaptive-rx on`). Other drivers answer for
/// themselves (`ethtool -c`).
pub fn coalescing_settable(driver: Option<&str>, virtio_features: Option<&str>) -> bool {
    if driver != Some("virtio_net") {
        return true;
    }
    let bit = |n: usize| virtio_features.and_then(|f| f.as_bytes().get(n).copied()) == Some(b'1');
    bit(52) || bit(53)
}

/// Interrupt coalescing on receive: adaptive, or some microseconds, not one interrupt per
/// packet; a device that offers none to set (`coalescing_settable`) is said without a fix.
pub fn coalescing(nic: &str, c: &Coalesce, settable: bool) -> Verdict {
    if c.adaptive_rx == Some(true) {
        return Verdict::Ok(format!("{nic}: adaptive receive coalescing is on"));
    }
    let Some(usecs) = c.rx_usecs else {
        return Verdict::Unknown(format!("`ethtool -c {nic}` reports no rx-usecs"));
    };
    if usecs > 0 || c.rx_frames.is_some_and(|f| f > 1) {
        return Verdict::Ok(format!(
            "{nic}: receive interrupts coalesced (rx-usecs {usecs}, rx-frames {})",
            crate::host::doctor::opt(c.rx_frames)
        ));
    }
    if !settable {
        return wrong(
            format!(
                "{nic}: one interrupt per received packet, and its virtio device offers no \
                 coalescing to set (neither VIRTIO_NET_F_NOTF_COAL nor VQ_NOTF_COAL): the \
                 hypervisor's virtio backend decides"
            ),
            Severity::Info,
            None,
        );
    }
    let fix = if c.adaptive_rx.is_some() {
        format!("ethtool -C {} adaptive-rx on", quote(nic))
    } else {
        format!("ethtool -C {} rx-usecs 8", quote(nic))
    };
    wrong(
        format!(
            "{nic}: one interrupt per received packet (rx-usecs 0, adaptive off): the CPU spends itself on interrupts"
        ),
        Severity::Warning,
        Some(fix),
    )
}

/// Ethernet pause frames (flow control).
pub fn pause(nic: &str, p: &Pause) -> Verdict {
    match (p.rx, p.tx) {
        (Some(true), Some(true)) => Verdict::Ok(format!("{nic}: pause frames on (rx and tx)")),
        (Some(_), Some(_)) => wrong(
            format!(
                "{nic}: pause frames off (rx {}, tx {}): a receiver that falls behind drops packets instead of pausing its sender; turn them on where the switch port honours them",
                on(p.rx),
                on(p.tx)
            ),
            Severity::Info,
            Some(format!("ethtool -A {} rx on tx on", quote(nic))),
        ),
        _ => Verdict::Unknown(format!(
            "`ethtool -a {nic}` reports no pause settings (the driver does not support them)"
        )),
    }
}

fn on(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => "?",
    }
}

/// Segmentation and receive offloads (TSO, GSO, GRO); LRO is reported, not judged (a host
/// that forwards must keep it off).
pub fn offloads(nic: &str, f: &BTreeMap<String, Feature>) -> Verdict {
    let keys = [
        ("tcp-segmentation-offload", "tso"),
        ("generic-segmentation-offload", "gso"),
        ("generic-receive-offload", "gro"),
    ];
    if keys.iter().all(|(k, _)| !f.contains_key(*k)) {
        return Verdict::Unknown(format!("`ethtool -k {nic}` lists no offloads"));
    }
    let off: Vec<&str> = keys
        .iter()
        .filter(|(k, _)| f.get(*k).is_some_and(|x| !x.on && !x.fixed))
        .map(|(_, short)| *short)
        .collect();
    let lro = f.get("large-receive-offload").map(|x| x.on);
    if off.is_empty() {
        return Verdict::Ok(format!(
            "{nic}: TSO, GSO and GRO on where the driver allows (LRO {})",
            on(lro)
        ));
    }
    let args: Vec<String> = off.iter().map(|s| format!("{s} on")).collect();
    wrong(
        format!(
            "{nic}: {} off: the kernel handles every 1500-byte packet on its own",
            off.join(", ")
        ),
        Severity::Warning,
        Some(format!("ethtool -K {} {}", quote(nic), args.join(" "))),
    )
}

/// Whether `sch_fq` can be used on this kernel.
#[derive(Debug, Clone, PartialEq)]
pub enum FqAvailable {
    Yes,
    /// Why not (no module, no modules directory for this kernel).
    No(String),
}

/// The qdiscs of a NIC: fq (pacing) on every transmit queue.
pub fn qdisc(nic: &str, q: &[Qdisc], fq: &FqAvailable, txqueues: Option<u32>) -> Verdict {
    let Some(root) = q.iter().find(|x| x.root) else {
        return Verdict::Unknown(format!("`tc qdisc show dev {nic}` shows no root qdisc"));
    };
    let leaves: Vec<&Qdisc> = if root.kind == "mq" || root.kind == "mqprio" {
        q.iter().filter(|x| !x.root).collect()
    } else {
        vec![root]
    };
    if !leaves.is_empty() && leaves.iter().all(|x| x.kind == "fq") {
        let rate = leaves
            .iter()
            .find_map(|x| x.maxrate.clone())
            .map_or(String::new(), |r| format!(", maxrate {r}"));
        return Verdict::Ok(format!("{nic}: fq paces every transmit queue{rate}"));
    }
    let kinds: Vec<&str> = leaves.iter().map(|x| x.kind.as_str()).collect();
    let kinds = if kinds.is_empty() {
        root.kind.clone()
    } else {
        let mut k = kinds.clone();
        k.dedup();
        k.join(",")
    };
    if let FqAvailable::No(why) = fq {
        return wrong(
            format!(
                "{nic}: qdisc {kinds}, and fq is unavailable on this kernel ({why}): no pacing, so bursts at line rate overrun slower hops; a kernel built with CONFIG_NET_SCH_FQ is needed"
            ),
            Severity::Warning,
            None,
        );
    }
    let fix = if txqueues.unwrap_or(1) > 1 {
        format!(
            "sysctl -w net.core.default_qdisc=fq && tc qdisc replace dev {} root mq",
            quote(nic)
        )
    } else {
        format!("tc qdisc replace dev {} root fq", quote(nic))
    };
    wrong(
        format!(
            "{nic}: qdisc {kinds}, not fq: no pacing, so TCP sends its window in line-rate bursts that overrun slower hops"
        ),
        Severity::Warning,
        Some(fix),
    )
}

/// Jumbo frames: MTU 9000 (where the NIC allows it).
pub fn mtu(nic: &str, mtu: Option<u32>, maxmtu: Option<u32>) -> Verdict {
    let Some(m) = mtu else {
        return Verdict::Unknown(format!("{nic}'s MTU is unreadable"));
    };
    if m >= 9000 {
        return Verdict::Ok(format!("{nic}: MTU {m}"));
    }
    if let Some(max) = maxmtu.filter(|x| *x < 9000) {
        return wrong(
            format!(
                "{nic}: MTU {m}, and the NIC allows at most {max}: six times the packets of a 9000-byte path"
            ),
            Severity::Warning,
            None,
        );
    }
    wrong(
        format!(
            "{nic}: MTU {m}: six times the packets of MTU 9000 for the same rate (every hop of the path must carry 9000: `netsweep doctor --peer` probes it)"
        ),
        Severity::Warning,
        Some(format!("ip link set dev {} mtu 9000", quote(nic))),
    )
}

/// The size BIG TCP sets: the kernel documentation's example, within what the driver takes.
const BIG_TCP_SIZE: u32 = 185_000;

/// BIG TCP: GSO and GRO packets above 64 KiB (IPv6 from Linux 5.19, IPv4 from 6.3).
pub fn big_tcp(nic: &str, d: &LinkDetails) -> Verdict {
    let (Some(gso), Some(gro)) = (d.gso_max_size, d.gro_max_size) else {
        return Verdict::Unknown(format!(
            "`ip -d link show {nic}` prints no gso_max_size/gro_max_size (a kernel or iproute2 before BIG TCP)"
        ));
    };
    let v4_small = d.gso_ipv4_max_size.is_some_and(|x| x <= 65536)
        || d.gro_ipv4_max_size.is_some_and(|x| x <= 65536);
    if gso > 65536 && gro > 65536 && !v4_small {
        return Verdict::Ok(format!(
            "{nic}: BIG TCP on (gso_max_size {gso}, gro_max_size {gro})"
        ));
    }
    let Some(tso) = d.tso_max_size.filter(|t| *t > 65536) else {
        return Verdict::Ok(format!(
            "{nic}: BIG TCP unavailable: the driver takes TSO packets up to {} bytes",
            crate::host::doctor::opt(d.tso_max_size)
        ));
    };
    let size = tso.min(BIG_TCP_SIZE);
    let mut fix = format!(
        "ip link set dev {} gso_max_size {size} gro_max_size {size}",
        quote(nic)
    );
    if d.gso_ipv4_max_size.is_some() {
        fix.push_str(&format!(
            " gso_ipv4_max_size {size} gro_ipv4_max_size {size}"
        ));
    }
    wrong(
        format!(
            "{nic}: GSO/GRO packets capped at {gso}/{gro} bytes though the driver takes {tso}: BIG TCP would cut per-packet work near 3x"
        ),
        Severity::Warning,
        Some(fix),
    )
}

/// `net.ipv4.tcp_mtu_probing` (fasterdata: on for jumbo-frame hosts, so a path with a smaller
/// MTU and a black hole still works).
pub fn mtu_probing(value: Option<&str>) -> Verdict {
    match value {
        None => Verdict::Unknown("net.ipv4.tcp_mtu_probing is unreadable".into()),
        Some("0") => wrong(
            "net.ipv4.tcp_mtu_probing is 0: with jumbo frames, a path whose smaller MTU's ICMP is filtered stalls",
            Severity::Info,
            Some(crate::platform::sysctl::sysctl_line(
                "net.ipv4.tcp_mtu_probing",
                "1",
            )),
        ),
        Some(v) => Verdict::Ok(format!("net.ipv4.tcp_mtu_probing is {v}")),
    }
}

/// Whether the IOMMU translates the NIC's DMA: `/sys/class/iommu` entries and the command line.
pub fn iommu(units: Option<usize>, cmdline: Option<&str>) -> Verdict {
    let Some(cmdline) = cmdline else {
        return Verdict::Unknown("/proc/cmdline is unreadable".into());
    };
    if let Some(arg) = super::parse::iommu_passthrough(cmdline) {
        return Verdict::Ok(format!("IOMMU in passthrough or off ({arg})"));
    }
    match units {
        None | Some(0) => Verdict::Ok("no IOMMU translates DMA (/sys/class/iommu is empty)".into()),
        Some(n) => wrong(
            format!(
                "{n} IOMMU unit(s) translate every DMA and the command line has no iommu=pt: at 100G the IOTLB misses cost throughput (reboot after the fix)"
            ),
            Severity::Warning,
            Some(
                r#"sed -i 's/^GRUB_CMDLINE_LINUX="/&iommu=pt /' /etc/default/grub && update-grub"#
                    .into(),
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
