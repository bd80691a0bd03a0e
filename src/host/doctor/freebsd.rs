//! The doctor's checks of a FreeBSD host, from a `host::freebsd::Capture`: the same findings
//! (ids, severities) as on Linux, with FreeBSD's evidence and fixes: the NIC model from
//! `dev.<driver>.<unit>.%desc` (`re`/`rl`: RTL8139 family, `em`: e1000, `vtnet`: virtio),
//! offloads from `ifconfig -m`, counters from `netstat -s`/`-i`, `kern.ipc.maxsockbuf` and
//! `net.inet.tcp.{send,recv}buf_max` against the bandwidth-delay product, RFC 1323 and SACK,
//! congestion control from `net.inet.tcp.cc.*`.

use super::host::{Sample, counter_checks};
use super::{BufferSide, Finding, PathHints, RateBound, Severity, opt};
use crate::host::freebsd::{self, Capture, Nic};
use crate::units::{BitRate, Bytes};
use std::collections::BTreeMap;

const VIRTIO_FIX: &str = "give the VM a virtio NIC (libvirt <model type='virtio'/>, QEMU -device \
     virtio-net-pci; see `netsweep doctor --libvirt-xml`); FreeBSD attaches it as vtnet0, so \
     rename ifconfig_<old>0 to ifconfig_vtnet0 in /etc/rc.conf";

/// Offloads worth having on a NIC that supports them, with the `ifconfig` word that enables each.
const OFFLOADS: [(&str, &str); 5] = [
    ("RXCSUM", "rxcsum"),
    ("TXCSUM", "txcsum"),
    ("TSO4", "tso4"),
    ("TSO6", "tso6"),
    ("LRO", "lro"),
];

fn nic_checks(nics: &[Nic], in_vm: bool, out: &mut Vec<Finding>) {
    for n in nics {
        let id = |what: &str| format!("nic.{what}.{}", n.name);
        let desc = n.description.clone().unwrap_or_default();
        match n.driver.as_deref() {
            Some(d @ ("re" | "rl")) if desc.contains("8139") || d == "rl" => out.push(
                Finding::new(
                    id("emulated"),
                    Severity::Problem,
                    format!(
                        "{} is a Realtek RTL8139-family NIC ({d}: {desc}){}: expect a small \
                         fraction of line rate, often in one direction only",
                        n.name,
                        if in_vm {
                            ", emulated by the hypervisor"
                        } else {
                            ""
                        }
                    ),
                )
                .evidence("driver", d)
                .evidence("description", &desc)
                .evidence("pci_id", opt(n.pci_id.clone()))
                .evidence("virtual machine", in_vm)
                .fix(VIRTIO_FIX),
            ),
            Some(d @ ("em" | "lem")) if in_vm => out.push(
                Finding::new(
                    id("emulated"),
                    Severity::Warning,
                    format!(
                        "{} is an emulated Intel e1000 NIC ({d}: {desc}) in a virtual machine: \
                         far slower and more CPU-hungry than virtio",
                        n.name
                    ),
                )
                .evidence("driver", d)
                .evidence("description", &desc)
                .fix(VIRTIO_FIX),
            ),
            Some("vtnet") => out.push(
                Finding::new(
                    id("driver"),
                    Severity::Ok,
                    format!("{} uses virtio (vtnet)", n.name),
                )
                .evidence("driver", "vtnet")
                .evidence("description", &desc),
            ),
            Some(d) => out.push(
                Finding::new(
                    id("driver"),
                    Severity::Info,
                    format!("{} uses driver {d} ({desc})", n.name),
                )
                .evidence("driver", d),
            ),
            None => {}
        }
        let off: Vec<(&str, &str)> = OFFLOADS
            .iter()
            .copied()
            .filter(|(cap, _)| {
                n.capabilities.iter().any(|c| c == cap) && !n.options.iter().any(|o| o == cap)
            })
            .collect();
        if !off.is_empty() {
            let names: Vec<&str> = off.iter().map(|(c, _)| *c).collect();
            let words: Vec<&str> = off.iter().map(|(_, w)| *w).collect();
            out.push(
                Finding::new(
                    format!("nic.offload.{}", n.name),
                    Severity::Warning,
                    format!(
                        "{} supports {} but has it turned off: every packet costs more CPU",
                        n.name,
                        names.join(", ")
                    ),
                )
                .evidence("options", n.options.join(","))
                .evidence("capabilities", n.capabilities.join(","))
                .fix(format!(
                    "ifconfig {} {} (and add them to ifconfig_{} in /etc/rc.conf)",
                    n.name,
                    words.join(" "),
                    n.name
                )),
            );
        }
    }
}

fn num(s: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    s.get(key).and_then(|v| v.trim().parse().ok())
}

fn buffer_checks(
    s: &BTreeMap<String, String>,
    nics: &[Nic],
    hints: &PathHints,
    out: &mut Vec<Finding>,
) {
    let maxsockbuf = num(s, "kern.ipc.maxsockbuf");
    let rate = hints.rate_bps.or_else(|| {
        nics.iter()
            .filter_map(|n| n.speed_mbit)
            .max()
            .map(|m| m as f64 * 1e6)
    });
    let (Some(rate), Some(rtt)) = (rate, hints.rtt) else {
        out.push(
            Finding::new(
                "buffers.bdp_unknown",
                Severity::Info,
                "buffers not compared with the bandwidth-delay product: the path's rate or RTT is unknown",
            )
            .evidence("kern.ipc.maxsockbuf", opt(maxsockbuf))
            .evidence("net.inet.tcp.recvbuf_max", opt(num(s, "net.inet.tcp.recvbuf_max")))
            .fix("give --rtt and --rate, or --rate and --peer HOST[:PORT] of a running netsweep server (which measures the RTT)"),
        );
        return;
    };
    let bdp = rate / 8.0 * rtt.as_secs_f64();
    let need = (2.0 * bdp).ceil() as u64;
    let ev = |f: Finding| {
        f.evidence("rate", BitRate(rate))
            .evidence("rtt", format!("{rtt:?}"))
            .evidence("bdp", Bytes(bdp as u64))
    };
    // kern.ipc.maxsockbuf bounds every socket buffer, set by a program (-w) or grown by
    // autotuning; FreeBSD has no privileged way past it.
    if let Some(m) = maxsockbuf {
        let (sev, title) = if m < need {
            (
                Severity::Problem,
                format!(
                    "kern.ipc.maxsockbuf {} is below 2 x BDP ({}): no socket buffer, -w or \
                     autotuned, can grow past it, so one flow is capped near {}",
                    Bytes(m),
                    Bytes(need),
                    BitRate(m as f64 * 8.0 / rtt.as_secs_f64())
                ),
            )
        } else {
            (
                Severity::Ok,
                format!(
                    "kern.ipc.maxsockbuf {} covers 2 x BDP ({})",
                    Bytes(m),
                    Bytes(need)
                ),
            )
        };
        let mut f =
            ev(Finding::new("buffers.maxsockbuf", sev, title)).evidence("kern.ipc.maxsockbuf", m);
        if m < need {
            f = f
                .fix(format!(
                    "sysctl kern.ipc.maxsockbuf={need} on both hosts (and in /etc/sysctl.conf)"
                ))
                .bound(RateBound {
                    what: format!("kern.ipc.maxsockbuf {}", Bytes(m)),
                    bits_per_second: m as f64 * 8.0 / rtt.as_secs_f64(),
                    side: BufferSide::Both,
                    rtt,
                    path_bps: rate,
                });
        }
        out.push(f);
    }
    for (key, side) in [
        ("net.inet.tcp.recvbuf_max", "receive"),
        ("net.inet.tcp.sendbuf_max", "send"),
    ] {
        let Some(m) = num(s, key) else { continue };
        let id = format!("buffers.{}", key.rsplit('.').next().unwrap_or(key));
        if (m as f64) < bdp {
            out.push(
                ev(Finding::new(
                    id,
                    Severity::Problem,
                    format!(
                        "{key} {} is below the BDP ({}): autotuning stops there and one flow's {side} window caps it near {}",
                        Bytes(m),
                        Bytes(bdp as u64),
                        BitRate(m as f64 * 8.0 / rtt.as_secs_f64())
                    ),
                ))
                .evidence(key, m)
                .fix(format!("sysctl {key}={need} on both hosts"))
                .bound(RateBound {
                    what: format!("{key} {}", Bytes(m)),
                    bits_per_second: m as f64 * 8.0 / rtt.as_secs_f64(),
                    side: BufferSide::of_word(side),
                    rtt,
                    path_bps: rate,
                }),
            );
        } else {
            out.push(ev(Finding::new(
                id,
                Severity::Ok,
                format!("{key} {} covers the BDP", Bytes(m)),
            )));
        }
    }
}

fn tcp_checks(s: &BTreeMap<String, String>, out: &mut Vec<Finding>) {
    for (key, id, sev, why) in [
        (
            "net.inet.tcp.rfc1323",
            "tcp.window_scaling",
            Severity::Problem,
            "window scaling and timestamps are off: windows are capped at 64 KiB",
        ),
        (
            "net.inet.tcp.sack.enable",
            "tcp.sack",
            Severity::Warning,
            "every loss costs a full window of recovery",
        ),
        (
            "net.inet.tcp.sendbuf_auto",
            "tcp.sendbuf_auto",
            Severity::Warning,
            "send buffers stay at net.inet.tcp.sendspace instead of growing with the path",
        ),
        (
            "net.inet.tcp.recvbuf_auto",
            "tcp.recvbuf_auto",
            Severity::Warning,
            "receive buffers stay at net.inet.tcp.recvspace instead of growing with the path",
        ),
    ] {
        if s.get(key).map(|v| v.trim()) == Some("0") {
            out.push(
                Finding::new(id, sev, format!("{key} is 0: {why}"))
                    .evidence(key, 0)
                    .fix(format!("sysctl {key}=1")),
            );
        }
    }
    if let Some(cc) = s.get("net.inet.tcp.cc.algorithm") {
        let available: Vec<&str> = s
            .get("net.inet.tcp.cc.available")
            .map(|v| {
                v.lines()
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|w| *w != "CCmod")
                    .collect()
            })
            .unwrap_or_default();
        out.push(
            Finding::new(
                "tcp.congestion",
                Severity::Info,
                format!(
                    "congestion control {cc} (available: {})",
                    available.join(" ")
                ),
            )
            .evidence("net.inet.tcp.cc.algorithm", cc),
        );
    }
}

/// Every static check of a FreeBSD host.
pub fn check(c: &Capture, hints: &PathHints) -> Vec<Finding> {
    let s = c.sysctls();
    let in_vm = s
        .get("kern.vm_guest")
        .is_some_and(|g| !g.is_empty() && g != "none");
    let nics = freebsd::nics(c, &s);
    let mut out = Vec::new();
    nic_checks(&nics, in_vm, &mut out);
    counter_checks(&sample(c), None, &mut out);
    for f in out.iter_mut() {
        if let Some(name) = f.id.strip_prefix("counters.drops.") {
            f.fix = Some(format!(
                "run `netsweep doctor --watch 10` during a test to see whether they grow; \
                 `sysctl dev.{}` and `netstat -I {name} -w 1 -d` show the driver's own counters",
                freebsd::driver_and_unit(name)
                    .map(|(d, u)| format!("{d}.{u}"))
                    .unwrap_or_else(|| name.to_string())
            ));
        }
    }
    buffer_checks(&s, &nics, hints, &mut out);
    tcp_checks(&s, &mut out);
    let rate = hints.rate_bps.or_else(|| {
        nics.iter()
            .filter_map(|n| n.speed_mbit)
            .max()
            .map(|m| m as f64 * 1e6)
    });
    super::freebsd100g::check(&s, rate, &mut out);
    if let Some(k) = s.get("kern.osrelease") {
        out.push(
            Finding::new("kernel.version", Severity::Info, format!("FreeBSD {k}"))
                .evidence("kern.osrelease", k)
                .evidence("kern.vm_guest", opt(s.get("kern.vm_guest"))),
        );
    }
    out
}

/// The counters of a capture as a doctor sample (for `--watch`'s growth checks too).
pub fn sample(c: &Capture) -> Sample {
    Sample {
        counters: crate::host::counters::of_freebsd(c),
        ..Sample::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn capture() -> Capture {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freebsd/vm-re0");
        Capture::from_dir(&dir).unwrap()
    }

    #[test]
    fn an_rtl8139_guest_with_small_buffers() {
        let hints = PathHints {
            rate_bps: Some(1e9),
            rtt: Some(Duration::from_millis(20)),
        };
        let f = check(&capture(), &hints);
        let get = |id: &str| {
            f.iter()
                .find(|x| x.id == id)
                .unwrap_or_else(|| panic!("{id}: {f:#?}"))
        };
        let nic = get("nic.emulated.re0");
        assert_eq!(nic.severity, Severity::Problem);
        assert!(nic.title.contains("RealTek 8139C+"), "{}", nic.title);
        assert!(nic.fix.as_deref().unwrap().contains("vtnet0"));
        // 1 Gbit/s x 20 ms = 2.5 MB; 2 x BDP = 5 MB > 2 MiB.
        let m = get("buffers.maxsockbuf");
        assert_eq!(m.severity, Severity::Problem);
        assert!(
            m.fix
                .as_deref()
                .unwrap()
                .contains("kern.ipc.maxsockbuf=5000000"),
            "{m:?}"
        );
        assert_eq!(get("buffers.recvbuf_max").severity, Severity::Problem);
        let off = get("nic.offload.re0");
        assert!(off.title.contains("TSO4"), "{}", off.title);
        assert!(off.fix.as_deref().unwrap().starts_with("ifconfig re0 tso4"));
        // netstat -i: 412 input drops and 3 output errors on re0.
        let drops = get("counters.drops.re0");
        assert_eq!(drops.severity, Severity::Warning);
        assert!(
            drops.fix.as_deref().unwrap().contains("sysctl dev.re.0"),
            "{drops:?}"
        );
        assert!(get("tcp.congestion").title.contains("cubic"));
        assert!(f.iter().all(|x| x.id != "tcp.window_scaling"));
    }

    #[test]
    fn windows_off_and_buffers_fine_on_a_short_path() {
        let mut c = capture();
        c.sysctl = c
            .sysctl
            .replace("net.inet.tcp.rfc1323: 1", "net.inet.tcp.rfc1323: 0");
        let hints = PathHints {
            rate_bps: Some(100e6),
            rtt: Some(Duration::from_millis(1)),
        };
        let f = check(&c, &hints);
        let w = f.iter().find(|x| x.id == "tcp.window_scaling").unwrap();
        assert_eq!(w.severity, Severity::Problem);
        assert_eq!(w.fix.as_deref(), Some("sysctl net.inet.tcp.rfc1323=1"));
        let m = f.iter().find(|x| x.id == "buffers.maxsockbuf").unwrap();
        assert_eq!(m.severity, Severity::Ok);
    }
}
