//! The 100G host checklist of ESnet's fasterdata (docs/doctor-100g.md): CPU governor, SMT,
//! IOMMU and `tcp_mtu_probing` for the host, and for each NIC its interrupts' and the test's
//! NUMA node, ring sizes, coalescing, pause frames, offloads, qdisc (fq and pacing), MTU 9000
//! and BIG TCP. Every item is one finding with a stable id (`host100g.ITEM` or
//! `host100g.ITEM.IF`) and a checklist state (ok, finding, unknown with the reason), judged
//! against the path's rate: `--rate`, else the NIC's link speed.
//!
//! This room reads the facts (sysfs and procfs under the `HostView`, and `ethtool`, `ip`,
//! `tc` outputs); `parse` turns outputs into values and `judge` decides. On a fixture tree
//! the command outputs come from `cmd/TOOL-OPTION.IF.txt` files (`Commands::file_name`), so
//! a saved 100G host is diagnosed as it would be live.

pub mod judge;
pub mod parse;

use super::nic::Iface;
use super::{Finding, HostView, PathHints};
use judge::{FqAvailable, G10, G40, G100, Numa, Verdict, finding};
use std::collections::BTreeMap;

/// The largest command output read.
const MAX_OUTPUT: usize = 1 << 20;

/// One command the checklist reads: live it runs, on a fixture tree its saved output is read.
struct Command<'a> {
    program: &'a str,
    args: Vec<&'a str>,
}

impl Command<'_> {
    /// `ethtool -g eth0` is saved as `cmd/ethtool-g.eth0.txt`; `ip -d link show eth0` as
    /// `cmd/ip-d-link.eth0.txt`; `tc qdisc show dev eth0` as `cmd/tc-qdisc.eth0.txt`.
    fn file_name(&self, nic: &str) -> String {
        let opts: Vec<&str> = self
            .args
            .iter()
            .filter(|a| **a != nic && !matches!(**a, "show" | "dev"))
            .map(|a| a.trim_start_matches('-'))
            .collect();
        format!("{}-{}.{nic}.txt", self.program, opts.join("-"))
    }

    /// The output, or why there is none (not installed, the driver refused, not saved).
    fn output(&self, view: &HostView, nic: &str) -> Result<String, String> {
        let line = format!("{} {}", self.program, self.args.join(" "));
        if !view.live {
            let path = view.root().join("cmd").join(self.file_name(nic));
            return crate::inputs::read_regular(&path, MAX_OUTPUT as u64)
                .map_err(|_| format!("no saved `{line}` output ({})", path.display()));
        }
        let out = std::process::Command::new(self.program)
            .args(&self.args)
            .output()
            .map_err(|e| format!("cannot run `{line}`: {e} (install {})", self.program))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("Operation not supported") {
                return Err(format!("the driver does not support `{line}`"));
            }
            return Err(format!(
                "`{line}` failed: {}",
                err.lines().next().unwrap_or("no message").trim()
            ));
        }
        let n = out.stdout.len().min(MAX_OUTPUT);
        Ok(String::from_utf8_lossy(&out.stdout[..n]).to_string())
    }
}

fn run(
    view: &HostView,
    nic: &str,
    program: &'static str,
    args: &[&'static str],
) -> Result<String, String> {
    let mut a: Vec<&str> = args.to_vec();
    a.push(nic);
    let c = Command { program, args: a };
    c.output(view, nic)
}

/// A command's parsed output, or the `Unknown` verdict saying why there is none.
fn with<T>(
    out: Result<String, String>,
    parse: impl Fn(&str) -> T,
    judge: impl Fn(T) -> Verdict,
) -> Verdict {
    match out {
        Ok(text) => judge(parse(&text)),
        Err(why) => Verdict::Unknown(why),
    }
}

fn dir_entries(path: &std::path::Path) -> Option<Vec<String>> {
    std::fs::read_dir(path).ok().map(|d| {
        d.filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect()
    })
}

/// Every CPU's governor, deduplicated and sorted.
fn governors(view: &HostView) -> Vec<String> {
    let dir = view.sys_root.join("devices/system/cpu");
    let mut govs: Vec<String> = dir_entries(&dir)
        .unwrap_or_default()
        .iter()
        .filter(|n| n.starts_with("cpu") && n[3..].parse::<u32>().is_ok())
        .filter_map(|n| {
            view.read(&format!(
                "sys/devices/system/cpu/{n}/cpufreq/scaling_governor"
            ))
        })
        .collect();
    govs.sort();
    govs.dedup();
    govs
}

/// The host's NUMA nodes and their CPUs, and the NIC's node.
fn numa(view: &HostView, nic: &str) -> Numa {
    let mut nodes = BTreeMap::new();
    for n in dir_entries(&view.sys_root.join("devices/system/node")).unwrap_or_default() {
        let Some(num) = n.strip_prefix("node").and_then(|x| x.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(cpus) = view
            .read(&format!("sys/devices/system/node/{n}/cpulist"))
            .and_then(|c| parse::cpu_list(&c))
        {
            nodes.insert(num, cpus);
        }
    }
    Numa {
        nic_node: view
            .read(&format!("sys/class/net/{nic}/device/numa_node"))
            .and_then(|v| v.parse().ok()),
        nodes,
    }
}

/// The NIC's IRQs (MSI vectors in sysfs, else `/proc/interrupts` lines naming the interface
/// or its device, as virtio's `virtio2-input.0`) and each one's CPU list.
fn irqs(view: &HostView, nic: &str) -> Vec<(u32, Option<Vec<u32>>)> {
    let base = view.sys_root.join("class/net").join(nic).join("device");
    let mut nums: Vec<u32> = dir_entries(&base.join("msi_irqs"))
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    if nums.is_empty() {
        let device = std::fs::canonicalize(&base)
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()))
            .unwrap_or_default();
        let text = view.read("proc/interrupts").unwrap_or_default();
        nums = parse::irqs_named(&text, &[nic, &device]);
    }
    nums.sort_unstable();
    nums.into_iter()
        .map(|i| {
            let aff = view
                .read(&format!("proc/irq/{i}/smp_affinity_list"))
                .and_then(|t| parse::cpu_list(&t));
            (i, aff)
        })
        .collect()
}

/// Whether `sch_fq` is loaded, built in, or loadable for the running kernel.
fn fq_available(view: &HostView, qdiscs_seen: bool) -> FqAvailable {
    if qdiscs_seen || view.sys_root.join("module/sch_fq").exists() {
        return FqAvailable::Yes;
    }
    let Some(release) = view.sysctl("kernel.osrelease") else {
        return FqAvailable::No("the kernel release is unreadable".into());
    };
    let dir = view.root().join("lib/modules").join(&release);
    if !dir.is_dir() {
        return FqAvailable::No(format!(
            "sch_fq is not loaded and there is no {} to load it from",
            dir.display()
        ));
    }
    let listed = ["modules.builtin", "modules.dep"].iter().any(|f| {
        crate::inputs::read_file(&dir.join(f), 64 << 20).is_ok_and(|t| t.contains("/sch_fq.ko"))
    });
    if listed {
        FqAvailable::Yes
    } else {
        FqAvailable::No(format!("kernel {release} has no sch_fq module"))
    }
}

/// The NICs the checklist is about: interfaces backed by a device (bridges, veths, ifbs and
/// tunnels have no rings, IRQs or pause frames of their own).
fn nics(ifaces: &[Iface]) -> Vec<&Iface> {
    ifaces.iter().filter(|i| i.driver.is_some()).collect()
}

/// Every checklist item of this host, appended to `out`.
pub fn check(view: &HostView, ifaces: &[Iface], hints: &PathHints, out: &mut Vec<Finding>) {
    let nics = nics(ifaces);
    let host_rate = hints.rate_bps.or_else(|| {
        nics.iter()
            .filter_map(|i| i.speed_mbit)
            .max()
            .map(|m| m as f64 * 1e6)
    });
    let id = |item: &str| format!("host100g.{item}");
    let govs = governors(view);
    out.push(
        finding(
            id("cpu_governor"),
            G10,
            host_rate,
            judge::cpu_governor(&govs),
        )
        .evidence(
            "governors",
            if govs.is_empty() {
                "?".into()
            } else {
                govs.join(",")
            },
        ),
    );
    let active = view.read("sys/devices/system/cpu/smt/active");
    let control = view.read("sys/devices/system/cpu/smt/control");
    out.push(
        finding(
            id("smt"),
            G100,
            host_rate,
            judge::smt(active.as_deref(), control.as_deref()),
        )
        .evidence("smt/active", super::opt(active.clone()))
        .evidence("smt/control", super::opt(control.clone())),
    );
    let units = dir_entries(&view.sys_root.join("class/iommu")).map(|d| d.len());
    let cmdline = view.read("proc/cmdline");
    out.push(
        finding(
            id("iommu"),
            G40,
            host_rate,
            judge::iommu(units, cmdline.as_deref()),
        )
        .evidence("iommu units", super::opt(units)),
    );
    let probing = view.sysctl("net.ipv4.tcp_mtu_probing");
    out.push(
        finding(
            id("mtu_probing"),
            G10,
            host_rate,
            judge::mtu_probing(probing.as_deref()),
        )
        .evidence("net.ipv4.tcp_mtu_probing", super::opt(probing.clone())),
    );
    if nics.is_empty() {
        out.push(finding(
            id("nic"),
            G10,
            host_rate,
            Verdict::Unknown("no interface backed by a device in sys/class/net".into()),
        ));
    }
    for nic in nics {
        nic_items(
            view,
            nic,
            hints.rate_bps.or(nic.speed_mbit.map(|m| m as f64 * 1e6)),
            out,
        );
    }
}

/// The checklist items of one NIC, judged against `rate`.
fn nic_items(view: &HostView, nic: &Iface, rate: Option<f64>, out: &mut Vec<Finding>) {
    let name = nic.name.as_str();
    let id = |item: &str| format!("host100g.{item}.{name}");
    let numa = numa(view, name);
    let irqs = irqs(view, name);
    out.push(
        finding(
            id("irq_affinity"),
            G40,
            rate,
            judge::irq_affinity(name, &numa, &irqs),
        )
        .evidence("numa_node", super::opt(numa.nic_node))
        .evidence("irqs", irqs.len()),
    );
    let server = crate::paste::netsweep(&["server"]);
    out.push(finding(
        id("numa"),
        G40,
        rate,
        judge::numa_threads(name, &numa, &server),
    ));
    ethtool_items(view, nic, rate, out);
    link_items(view, nic, rate, out);
}

/// The items read from `ethtool -g/-c/-a/-k`.
fn ethtool_items(view: &HostView, nic: &Iface, rate: Option<f64>, out: &mut Vec<Finding>) {
    let name = nic.name.as_str();
    let settable = judge::coalescing_settable(nic.driver.as_deref(), nic.features.as_deref());
    let id = |item: &str| format!("host100g.{item}.{name}");
    out.push(finding(
        id("rings"),
        G10,
        rate,
        with(
            run(view, name, "ethtool", &["-g"]),
            parse::ethtool_rings,
            |r| judge::rings(name, &r),
        ),
    ));
    out.push(finding(
        id("coalescing"),
        G10,
        rate,
        with(
            run(view, name, "ethtool", &["-c"]),
            parse::ethtool_coalesce,
            |c| judge::coalescing(name, &c, settable),
        ),
    ));
    out.push(finding(
        id("pause"),
        G40,
        rate,
        with(
            run(view, name, "ethtool", &["-a"]),
            parse::ethtool_pause,
            |p| judge::pause(name, &p),
        ),
    ));
    out.push(finding(
        id("offloads"),
        G10,
        rate,
        with(
            run(view, name, "ethtool", &["-k"]),
            parse::ethtool_features,
            |f| judge::offloads(name, &f),
        ),
    ));
}

/// The items read from `ip -d link` and `tc qdisc`: fq pacing, MTU 9000, BIG TCP.
fn link_items(view: &HostView, nic: &Iface, rate: Option<f64>, out: &mut Vec<Finding>) {
    let name = nic.name.as_str();
    let id = |item: &str| format!("host100g.{item}.{name}");
    let link = run(view, name, "ip", &["-d", "link", "show"]);
    let details = link.map(|t| parse::ip_link_details(&t));
    let qdiscs = run(view, name, "tc", &["qdisc", "show", "dev"]);
    let fq_seen = qdiscs
        .as_deref()
        .is_ok_and(|t| parse::tc_qdiscs(t).iter().any(|q| q.kind == "fq"));
    let fq = fq_available(view, fq_seen);
    let txq = details.as_ref().ok().and_then(|d| d.numtxqueues);
    let mut q = finding(
        id("qdisc"),
        G10,
        rate,
        with(qdiscs, parse::tc_qdiscs, |q| {
            judge::qdisc(name, &q, &fq, txq)
        }),
    );
    if let FqAvailable::No(why) = &fq {
        q = q.evidence("fq", format!("unavailable: {why}"));
    }
    out.push(q);
    let maxmtu = details.as_ref().ok().and_then(|d| d.maxmtu);
    out.push(
        finding(id("mtu"), G10, rate, judge::mtu(name, nic.mtu, maxmtu))
            .evidence("mtu", super::opt(nic.mtu)),
    );
    out.push(finding(
        id("big_tcp"),
        G100,
        rate,
        match &details {
            Ok(d) => judge::big_tcp(name, d),
            Err(why) => Verdict::Unknown(why.clone()),
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_outputs_are_named_after_the_command() {
        let c = |p, a: Vec<&'static str>| {
            Command {
                program: p,
                args: a,
            }
            .file_name("eth0")
        };
        assert_eq!(c("ethtool", vec!["-g", "eth0"]), "ethtool-g.eth0.txt");
        assert_eq!(
            c("ip", vec!["-d", "link", "show", "eth0"]),
            "ip-d-link.eth0.txt"
        );
        assert_eq!(
            c("tc", vec!["qdisc", "show", "dev", "eth0"]),
            "tc-qdisc.eth0.txt"
        );
    }
}
