//! Checks of one host, from `/proc` and `/sys` under a `HostView`: the NIC checks of `nic`,
//! counters (absolute, and their growth between two samples), buffers against the
//! bandwidth-delay product, TCP options, firewall state, CPU governor and kernel.

use super::nic::{Iface, interfaces, nic_checks};
use super::{BufferSide, Finding, HostView, PathHints, RateBound, Severity, opt};
use crate::units::{BitRate, Bytes};
use std::collections::BTreeMap;

/// Counters and rates sampled at one moment.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub counters: crate::host::counters::Snapshot,
    /// Per-CPU (processed, dropped, time_squeeze) from `softnet_stat`.
    pub softnet: Vec<(u64, u64, u64)>,
    pub ctxt: Option<u64>,
    pub intr: Option<u64>,
    /// Per-process (pid, name, user+system clock ticks).
    pub procs: Vec<(u32, String, u64)>,
}

/// Counters, softnet and /proc/stat rates of one moment (no per-process scan).
pub fn sample_counters(view: &HostView) -> Sample {
    let softnet = view
        .read("proc/net/softnet_stat")
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<u64> = l
                .split_whitespace()
                .map(|x| u64::from_str_radix(x, 16).unwrap_or(0))
                .collect();
            (
                f.first().copied().unwrap_or(0),
                f.get(1).copied().unwrap_or(0),
                f.get(2).copied().unwrap_or(0),
            )
        })
        .collect();
    let stat = view.read("proc/stat").unwrap_or_default();
    let field = |k: &str| {
        stat.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    Sample {
        counters: crate::host::counters::read(&view.proc_root),
        softnet,
        ctxt: field("ctxt"),
        intr: field("intr"),
        procs: Vec::new(),
    }
}

/// `sample_counters` plus the CPU time of every process (for `--watch`'s CPU hogs).
pub fn sample(view: &HostView) -> Sample {
    let mut procs = Vec::new();
    if let Ok(d) = std::fs::read_dir(&view.proc_root) {
        for e in d.filter_map(|e| e.ok()) {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(s) = crate::inputs::read_pseudo(&e.path().join("stat")) else {
                continue;
            };
            let Some((head, rest)) = s.rsplit_once(')') else {
                continue;
            };
            let name = head
                .split_once('(')
                .map(|x| x.1.to_string())
                .unwrap_or_default();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            procs.push((pid, name, ticks));
        }
    }
    Sample {
        procs,
        ..sample_counters(view)
    }
}

/// Dropped or failed packets below this share of an interface's packets are a note, not a
/// warning.
const RARE_DROPS: f64 = 1e-4;

/// The counters' findings; `view` (Linux) says since when they count and what the host's
/// limits are, for the fixes.
pub(super) fn counter_checks(s: &Sample, view: Option<&HostView>, out: &mut Vec<Finding>) {
    let since = view.map_or("since boot", HostView::counted_since);
    let sysctl = |k: &str| view.and_then(|v| v.sysctl(k));
    for (name, c) in &s.counters.interfaces {
        if name == "lo" || name == "lo0" {
            continue;
        }
        let bad = c.rx_errors + c.rx_dropped + c.tx_errors + c.tx_dropped;
        // A handful among many packets (a guest's one rx drop at boot, a frame of a protocol
        // nobody listens to) is a note; a warning from 1 in 10,000 of the packets counted.
        let packets = c.rx_packets + c.tx_packets;
        let rare = packets > 0 && (bad as f64) < RARE_DROPS * packets as f64;
        if bad > 0 {
            out.push(
                Finding::new(format!("counters.drops.{name}"), if rare { Severity::Info } else { Severity::Warning }, format!("{name} has dropped or failed packets {} (rx drop {}, rx err {}, tx drop {}, tx err {}{})", since, c.rx_dropped, c.rx_errors, c.tx_dropped, c.tx_errors, if rare { format!("; {bad} of {packets} packets") } else { String::new() }))
                    .evidence("rx_dropped", c.rx_dropped)
                    .evidence("tx_dropped", c.tx_dropped)
                    .fix("run `netsweep doctor --watch 10` during a test to see whether they grow; check ethtool -S for the cause"),
            );
        }
    }
    let p = &s.counters.protocol;
    if let (Some(r), Some(o)) = (p.get("Tcp.RetransSegs"), p.get("Tcp.OutSegs"))
        && *o > 1000
    {
        let share = *r as f64 / *o as f64 * 100.0;
        let sev = if share > 1.0 {
            Severity::Warning
        } else {
            Severity::Ok
        };
        out.push(
            Finding::new(
                "tcp.retransmits",
                sev,
                format!("TCP retransmitted {share:.2}% of segments {since}"),
            )
            .evidence("RetransSegs", r)
            .evidence("OutSegs", o),
        );
    }
    if let Some(v) = p.get("TcpExt.ListenOverflows").filter(|v| **v > 0) {
        out.push(
            Finding::new(
                "tcp.listen_overflows",
                Severity::Warning,
                format!(
                    "{v} listen queue overflows {since}: a server accepts too slowly"
                ),
            )
            .evidence("ListenOverflows", v)
            .fix(match sysctl("net.core.somaxconn").and_then(|m| m.parse::<u64>().ok()) {
                Some(m) if m >= 4096 => format!(
                    "net.core.somaxconn is already {m}: raise the accepting server's own listen \
                     backlog (its listen() argument), or make it accept faster"
                ),
                _ => "sysctl -w net.core.somaxconn=4096, and raise the server's own listen backlog"
                    .to_string(),
            }),
        );
    }
    // Reordering and SACK recovery: the signs of a path that reorders or loses in bursts.
    let sack: Vec<(&str, i64)> = [
        "TcpExt.TCPSACKReorder",
        "TcpExt.TCPTSReorder",
        "TcpExt.TCPRenoReorder",
        "TcpExt.TCPSackRecovery",
        "TcpExt.TCPSACKReneging",
    ]
    .iter()
    .filter_map(|k| p.get(*k).filter(|v| **v > 0).map(|v| (*k, *v)))
    .collect();
    if !sack.is_empty() {
        let mut f = Finding::new(
            "tcp.reordering",
            Severity::Info,
            format!("TCP saw reordering or SACK recoveries {since}"),
        );
        for (k, v) in sack {
            f = f.evidence(k.trim_start_matches("TcpExt."), v);
        }
        out.push(f);
    }
    let dropped: u64 = s.softnet.iter().map(|x| x.1).sum();
    let squeezed: u64 = s.softnet.iter().map(|x| x.2).sum();
    if dropped > 0 {
        out.push(
            Finding::new(
                "softnet.drops",
                Severity::Warning,
                format!("{dropped} packets dropped because the per-CPU backlog was full"),
            )
            .evidence("dropped", dropped)
            .fix("sysctl -w net.core.netdev_max_backlog=10000 (and spread interrupts: RSS/RPS)"),
        );
    }
    if squeezed > 0 {
        out.push(
            Finding::new(
                "softnet.squeeze",
                Severity::Info,
                format!("receive processing ran out of budget {squeezed} times"),
            )
            .evidence("time_squeeze", squeezed)
            .fix(budget_fix(&sysctl)),
        );
    }
}

/// What grew between two samples `secs` apart (`--watch`).
pub fn change_checks(a: &Sample, b: &Sample, secs: f64, ticks_per_s: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    let d = crate::host::counters::delta(&a.counters, &b.counters);
    for (name, c) in &d.interfaces {
        let bad = c.rx_errors + c.rx_dropped + c.tx_errors + c.tx_dropped;
        if bad > 0 && name != "lo" {
            out.push(
                Finding::new(format!("counters.growing.{name}"), Severity::Problem, format!("{name} dropped or failed {bad} packets in {secs:.0} s"))
                    .evidence("rx_dropped", c.rx_dropped)
                    .evidence("rx_errors", c.rx_errors)
                    .evidence("tx_dropped", c.tx_dropped)
                    .evidence("tx_errors", c.tx_errors)
                    .fix(format!("look at `ethtool -S {name}` for the counter that grows; ring sizes: ethtool -G {name} rx 4096")),
            );
        }
    }
    if let Some(r) = d.protocol.get("Tcp.RetransSegs").filter(|v| **v > 0) {
        let out_segs = d.protocol.get("Tcp.OutSegs").copied().unwrap_or(0).max(1);
        out.push(
            Finding::new(
                "tcp.retransmits_growing",
                if *r * 100 > out_segs {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                format!(
                    "{r} TCP segments retransmitted in {secs:.0} s ({:.2}% of sent)",
                    *r as f64 * 100.0 / out_segs as f64
                ),
            )
            .evidence("RetransSegs", r),
        );
    }
    let sd: u64 = b
        .softnet
        .iter()
        .zip(&a.softnet)
        .map(|(x, y)| x.1.saturating_sub(y.1))
        .sum();
    if sd > 0 {
        out.push(
            Finding::new(
                "softnet.drops_growing",
                Severity::Problem,
                format!("{sd} packets dropped at the CPU backlog in {secs:.0} s"),
            )
            .fix("sysctl -w net.core.netdev_max_backlog=10000"),
        );
    }
    if let (Some(c0), Some(c1), Some(i0), Some(i1)) = (a.ctxt, b.ctxt, a.intr, b.intr) {
        out.push(
            Finding::new(
                "system.rates",
                Severity::Info,
                format!(
                    "{:.0} context switches/s, {:.0} interrupts/s",
                    (c1.saturating_sub(c0)) as f64 / secs,
                    (i1.saturating_sub(i0)) as f64 / secs
                ),
            )
            .evidence(
                "ctxt_per_s",
                format!("{:.0}", (c1.saturating_sub(c0)) as f64 / secs),
            ),
        );
    }
    let before: BTreeMap<u32, u64> = a.procs.iter().map(|(p, _, t)| (*p, *t)).collect();
    for (pid, name, t) in &b.procs {
        // The measurement itself (a netsweep or peer tool test running beside the watch) is
        // what the user is watching, not a hog to stop.
        if MEASUREMENT_TOOLS.contains(&name.as_str()) {
            continue;
        }
        let used =
            t.saturating_sub(before.get(pid).copied().unwrap_or(*t)) as f64 / ticks_per_s / secs
                * 100.0;
        if used > 50.0 {
            out.push(
                Finding::new(
                    format!("system.cpu_hog.{pid}"),
                    Severity::Warning,
                    format!("process {pid} ({name}) used {used:.0}% of a core while watching"),
                )
                .evidence("pid", pid)
                .fix("stop it during measurements, or pin tests away from its cores"),
            );
        }
    }
    out
}

/// Process names that are the measurement, not a hog, when `--watch` runs beside a test.
const MEASUREMENT_TOOLS: &[&str] = &["netsweep", "iperf3", "iperf", "nuttcp"];

fn parse_triple(v: &str) -> Option<u64> {
    v.split_whitespace().nth(2)?.parse().ok()
}

fn buffer_checks(view: &HostView, ifaces: &[Iface], hints: &PathHints, out: &mut Vec<Finding>) {
    let rate = hints.rate_bps.or_else(|| {
        ifaces
            .iter()
            .filter_map(Iface::link_speed_mbit)
            .max()
            .map(|m| m as f64 * 1e6)
    });
    let rmem = view
        .sysctl("net.ipv4.tcp_rmem")
        .as_deref()
        .and_then(parse_triple);
    let wmem = view
        .sysctl("net.ipv4.tcp_wmem")
        .as_deref()
        .and_then(parse_triple);
    let rmem_max: Option<u64> = view
        .sysctl("net.core.rmem_max")
        .and_then(|v| v.parse().ok());
    let wmem_max: Option<u64> = view
        .sysctl("net.core.wmem_max")
        .and_then(|v| v.parse().ok());
    let (Some(rate), Some(rtt)) = (rate, hints.rtt) else {
        out.push(
            Finding::new("buffers.bdp_unknown", Severity::Info, "buffers not compared with the bandwidth-delay product: the path's rate or RTT is unknown")
                .evidence("tcp_rmem max", opt(rmem))
                .evidence("tcp_wmem max", opt(wmem))
                .fix("give --rtt and --rate, or --rate and --peer HOST[:PORT] of a running netsweep server (which measures the RTT)"),
        );
        return;
    };
    // Linux advertises about half of the receive buffer as window; autotuning needs 2 x BDP.
    // The same advice as `tune bdp` gives (`tuning::advice`).
    let advice = crate::host::tuning::advice::BufferAdvice::for_path(rate, rtt.as_secs_f64());
    let (bdp, need) = (advice.bdp as f64, advice.need);
    let ev = |f: Finding| {
        f.evidence("rate", BitRate(rate))
            .evidence("rtt", format!("{:?}", rtt))
            .evidence("bdp", Bytes(bdp as u64))
    };
    for (key, max, side) in [
        ("net.ipv4.tcp_rmem", rmem, "receive"),
        ("net.ipv4.tcp_wmem", wmem, "send"),
    ] {
        let Some(max) = max else { continue };
        let id = format!("buffers.{}", key.rsplit('.').next().unwrap_or(key));
        if max < need {
            let ceiling = max as f64 / 2.0 * 8.0 / rtt.as_secs_f64();
            let bound = RateBound {
                what: format!("{key} max {}", Bytes(max)),
                bits_per_second: ceiling,
                side: BufferSide::of_word(side),
                rtt,
                path_bps: rate,
            };
            out.push(
                ev(Finding::new(id, Severity::Problem, format!("{key} max {} is below 2 x BDP ({}): one TCP flow's {side} window caps it near {}{}", Bytes(max), Bytes(need), BitRate(ceiling), advice.cap_note(rtt.as_secs_f64()).map(|n| format!(" ({n})")).unwrap_or_default())))
                    .evidence(key, max)
                    .bound(bound)
                    .fix(format!(
                        "on both hosts: {}",
                        crate::platform::sysctl::sysctl_line(
                            key,
                            &crate::host::tuning::advice::BufferAdvice::value(key, need)
                                .unwrap_or_default()
                        )
                    )),
            );
        } else {
            out.push(ev(Finding::new(
                id,
                Severity::Ok,
                format!("{key} max {} covers 2 x BDP ({})", Bytes(max), Bytes(need)),
            )));
        }
    }
    for (key, max) in [
        ("net.core.rmem_max", rmem_max),
        ("net.core.wmem_max", wmem_max),
    ] {
        if let Some(m) = max.filter(|m| *m < need) {
            out.push(
                Finding::new(format!("buffers.{}", key.rsplit('.').next().unwrap_or(key)), Severity::Warning, format!("{key} {} is below 2 x BDP: programs that set their buffers (iperf3 -w, iperf -w, netsweep -w without root) are capped there; netsweep run as root forces -w past it (SO_SNDBUFFORCE/SO_RCVBUFFORCE)", Bytes(m)))
                    .evidence(key, m)
                    .fix(crate::platform::sysctl::sysctl_line(key, &need.to_string())),
            );
        }
    }
}

fn tcp_checks(view: &HostView, out: &mut Vec<Finding>) {
    for (key, sev, why) in [
        (
            "net.ipv4.tcp_window_scaling",
            Severity::Problem,
            "windows are capped at 64 KiB",
        ),
        (
            "net.ipv4.tcp_sack",
            Severity::Warning,
            "every loss costs a full window of recovery",
        ),
        (
            "net.ipv4.tcp_timestamps",
            Severity::Warning,
            "RTT measurement and PAWS are weaker",
        ),
    ] {
        if view.sysctl(key).as_deref() == Some("0") {
            let name = key.rsplit('.').next().unwrap_or(key);
            out.push(
                Finding::new(format!("tcp.{name}"), sev, format!("{key} is off: {why}"))
                    .evidence(key, 0)
                    .fix(format!("sysctl -w {key}=1")),
            );
        }
    }
    if let Some(cc) = view.sysctl("net.ipv4.tcp_congestion_control") {
        out.push(
            Finding::new(
                "tcp.congestion",
                Severity::Info,
                format!(
                    "congestion control {cc} (available: {})",
                    view.sysctl("net.ipv4.tcp_available_congestion_control")
                        .unwrap_or_default()
                ),
            )
            .evidence("tcp_congestion_control", cc),
        );
    }
}

/// What to do about receive processing out of budget: raise the budgets still below 600
/// packets and 8 ms (one pasteable `sysctl -w`), else spread the work over more cores. The
/// budgets are the host's: a network namespace has no such keys (a trial in a lab namespace
/// was told a `sysctl -w` that failed there with "cannot stat"), so from one the command is
/// for the host's own namespace.
fn budget_fix(sysctl: &dyn Fn(&str) -> Option<String>) -> String {
    let keys = [
        ("net.core.netdev_budget", 600),
        ("net.core.netdev_budget_usecs", 8000),
    ];
    if keys.iter().all(|(k, _)| sysctl(k).is_none()) {
        let all: Vec<String> = keys.iter().map(|(k, w)| format!("{k}={w}")).collect();
        return format!(
            "the budgets are the host's, not in this network namespace: in the host's own, \
             sysctl -w {}, or spread receive processing over more cores (RSS queues, or RPS)",
            all.join(" ")
        );
    }
    let raise: Vec<String> = keys
        .into_iter()
        .filter(|(k, want)| {
            sysctl(k)
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v < *want)
        })
        .map(|(k, want)| format!("{k}={want}"))
        .collect();
    if raise.is_empty() {
        "the budgets are already raised (net.core.netdev_budget, netdev_budget_usecs): spread \
         receive processing over more cores (RSS queues, or RPS)"
            .to_string()
    } else {
        format!(
            "sysctl -w {}, or spread receive processing over more cores (RSS queues, or RPS)",
            raise.join(" ")
        )
    }
}

fn system_checks(view: &HostView, out: &mut Vec<Finding>) {
    if let (Some(c), Some(m)) = (
        view.sysctl("net.netfilter.nf_conntrack_count"),
        view.sysctl("net.netfilter.nf_conntrack_max"),
    ) {
        let (c, m): (f64, f64) = (c.parse().unwrap_or(0.0), m.parse().unwrap_or(1.0));
        // The module's keys exist once it is loaded, but it looks packets up only where a rule
        // or NAT asks for it: an empty table (a trial's host and lab, with connections open)
        // costs nothing.
        let finding = if m > 0.0 && c / m > 0.8 {
            Finding::new(
                "firewall.conntrack",
                Severity::Problem,
                format!(
                    "the connection tracking table is {:.0}% full: new flows get dropped",
                    c / m * 100.0
                ),
            )
            .fix("raise net.netfilter.nf_conntrack_max, or exempt test traffic with a NOTRACK rule")
        } else if c > 0.0 {
            Finding::new(
                "firewall.conntrack",
                Severity::Info,
                format!(
                    "connection tracking (firewall/NAT) tracks {c:.0} connections: each of \
                     their packets is looked up"
                ),
            )
            .fix("exempt test traffic with a NOTRACK rule (the raw table) where it need not be tracked")
        } else {
            Finding::new(
                "firewall.conntrack",
                Severity::Ok,
                "connection tracking is loaded but tracks no connection here: no lookups",
            )
        };
        out.push(finding.evidence("count", c).evidence("max", m));
    }
    if let Some(t) = view
        .read("proc/net/ip_tables_names")
        .filter(|t| !t.is_empty())
    {
        out.push(
            Finding::new(
                "firewall.iptables",
                Severity::Info,
                format!(
                    "iptables tables in use: {}",
                    t.split_whitespace().collect::<Vec<_>>().join(", ")
                ),
            )
            .evidence("tables", t.replace('\n', " ")),
        );
    }
    let gov_dir = view.sys_root.join("devices/system/cpu");
    let mut govs: Vec<String> = std::fs::read_dir(&gov_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    crate::inputs::read_pseudo(&e.path().join("cpufreq/scaling_governor")).ok()
                })
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    govs.sort();
    govs.dedup();
    if govs.iter().any(|g| g == "powersave") {
        out.push(
            Finding::new(
                "cpu.governor",
                Severity::Warning,
                "CPU frequency governor is powersave: results vary with the clock",
            )
            .evidence("governors", govs.join(","))
            .fix("cpupower frequency-set -g performance"),
        );
    } else if !govs.is_empty() {
        out.push(Finding::new(
            "cpu.governor",
            Severity::Ok,
            format!("CPU frequency governor: {}", govs.join(",")),
        ));
    }
    if let Some(k) = view.sysctl("kernel.osrelease") {
        out.push(
            Finding::new("kernel.version", Severity::Info, format!("kernel {k}"))
                .evidence("osrelease", k),
        );
    }
}

/// Every static check of one host.
pub fn check(view: &HostView, hints: &PathHints) -> Vec<Finding> {
    let mut out = Vec::new();
    let ifaces = interfaces(view);
    nic_checks(view, &ifaces, &mut out);
    counter_checks(&sample_counters(view), Some(view), &mut out);
    buffer_checks(view, &ifaces, hints, &mut out);
    tcp_checks(view, &mut out);
    system_checks(view, &mut out);
    super::host100g::check(view, &ifaces, hints, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::budget_fix;

    #[test]
    fn the_budget_fix_raises_what_is_low_and_is_for_the_host_from_a_namespace() {
        let host = |k: &str| match k {
            "net.core.netdev_budget" => Some("300".to_string()),
            "net.core.netdev_budget_usecs" => Some("8000".to_string()),
            _ => None,
        };
        assert!(
            budget_fix(&host).starts_with("sysctl -w net.core.netdev_budget=600, or spread"),
            "{}",
            budget_fix(&host)
        );
        let raised = |_: &str| Some("10000".to_string());
        assert!(budget_fix(&raised).starts_with("the budgets are already raised"));
        let namespace = |_: &str| None;
        let fix = budget_fix(&namespace);
        assert!(
            fix.starts_with("the budgets are the host's, not in this network namespace")
                && fix.contains(
                    "sysctl -w net.core.netdev_budget=600 net.core.netdev_budget_usecs=8000"
                ),
            "{fix}"
        );
    }
}
