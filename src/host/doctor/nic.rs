//! NIC checks of one host: driver and model (emulated NICs in VMs), PCI ids, virtio features,
//! MTU, queues, speed and duplex, MTU mismatches with a bridge or veth peer, and offloads.

use super::{Finding, HostView, Severity, opt};

/// One network interface as sysfs describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Iface {
    pub name: String,
    pub driver: Option<String>,
    pub mtu: Option<u32>,
    pub txqueuelen: Option<u32>,
    pub speed_mbit: Option<i64>,
    pub duplex: Option<String>,
    pub master: Option<String>,
    pub ifindex: Option<u32>,
    pub iflink: Option<u32>,
    pub features: Option<String>,
    /// PCI vendor:device of the NIC, e.g. `10ec:8139` (RTL8139), `1af4:1000` (virtio-net).
    pub pci_id: Option<String>,
    /// Backed by a device (`device` in sysfs: PCI, virtio, USB); a veth, TUN/TAP, bridge or
    /// dummy has none, and the speed it reports is nominal (tun and veth say 10000 Mbit/s
    /// whatever the path behind them carries: a trial's lab at 200 Mbit/s read as 10G).
    pub has_device: bool,
}

impl Iface {
    /// The link's rate in Mbit/s, when a device reports one (not a virtual device's nominal
    /// figure).
    pub fn link_speed_mbit(&self) -> Option<i64> {
        self.speed_mbit.filter(|_| self.has_device)
    }
}

fn link_name(p: &std::path::Path) -> Option<String> {
    std::fs::read_link(p)
        .ok()
        .and_then(|t| t.file_name().map(|f| f.to_string_lossy().to_string()))
}

/// Interfaces under `sys/class/net`, `lo` excluded, sorted by name.
pub fn interfaces(view: &HostView) -> Vec<Iface> {
    let dir = view.sys_root.join("class/net");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.retain(|n| n != "lo");
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let base = dir.join(&name);
            let rd = |f: &str| {
                crate::inputs::read_pseudo(&base.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
            };
            Iface {
                driver: link_name(&base.join("device/driver")),
                mtu: rd("mtu").and_then(|v| v.parse().ok()),
                txqueuelen: rd("tx_queue_len").and_then(|v| v.parse().ok()),
                speed_mbit: rd("speed")
                    .and_then(|v| v.parse().ok())
                    .filter(|v: &i64| *v > 0),
                has_device: base.join("device").exists(),
                duplex: rd("duplex").filter(|d| d != "unknown"),
                master: link_name(&base.join("master")),
                ifindex: rd("ifindex").and_then(|v| v.parse().ok()),
                iflink: rd("iflink").and_then(|v| v.parse().ok()),
                features: rd("device/features"),
                pci_id: rd("device/vendor").zip(rd("device/device")).map(|(v, d)| {
                    format!(
                        "{}:{}",
                        v.trim_start_matches("0x"),
                        d.trim_start_matches("0x")
                    )
                }),
                name,
            }
        })
        .collect()
}

/// True when the host looks like a virtual machine.
pub fn in_vm(view: &HostView) -> bool {
    let dmi = [
        "sys/class/dmi/id/sys_vendor",
        "sys/class/dmi/id/product_name",
    ]
    .iter()
    .filter_map(|p| view.read(p))
    .any(|v| {
        [
            "QEMU",
            "KVM",
            "VMware",
            "VirtualBox",
            "Xen",
            "Microsoft",
            "Google",
            "Amazon",
            "Bochs",
        ]
        .iter()
        .any(|k| v.contains(k))
    });
    dmi || view.read("proc/cpuinfo").is_some_and(|c| {
        c.lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

const VIRTIO_FIX: &str = "switch the VM's NIC model to virtio: libvirt <model type='virtio'/> (see `netsweep doctor --libvirt-xml`), QEMU -device virtio-net-pci";

pub(super) fn nic_checks(view: &HostView, ifaces: &[Iface], out: &mut Vec<Finding>) {
    let vm = in_vm(view);
    for i in ifaces {
        let id = |what: &str| format!("nic.{what}.{}", i.name);
        match i.driver.as_deref() {
            Some(d @ ("8139too" | "8139cp")) => out.push(
                Finding::new(id("emulated"), Severity::Problem, format!("{} is an emulated Realtek RTL8139 NIC ({d}): expect a small fraction of line rate, often in one direction only", i.name))
                    .evidence("driver", d)
                    .evidence("pci_id", opt(i.pci_id.clone()))
                    .evidence("virtual machine", vm)
                    .fix(VIRTIO_FIX),
            ),
            Some(d @ ("e1000" | "e1000e")) if vm => out.push(
                Finding::new(id("emulated"), Severity::Warning, format!("{} is an emulated Intel {d} NIC in a virtual machine: far slower and more CPU-hungry than virtio", i.name))
                    .evidence("driver", d)
                    .fix(VIRTIO_FIX),
            ),
            Some("virtio_net") => {
                let mut f = Finding::new(id("driver"), Severity::Ok, format!("{} uses virtio_net", i.name)).evidence("driver", "virtio_net");
                if let Some(feat) = &i.features {
                    f = f.evidence("virtio features", feat);
                    // Bit 15: mergeable receive buffers; bit 0: checksum offload (virtio spec 5.1.3).
                    let bit = |n: usize| feat.as_bytes().get(n) == Some(&b'1');
                    if !bit(0) || !bit(15) {
                        f.severity = Severity::Warning;
                        f.title = format!("{} uses virtio_net without checksum offload or mergeable buffers", i.name);
                        f.fix = Some("enable csum and mrg_rxbuf on the virtio device (libvirt <driver> options, QEMU -device virtio-net-pci,csum=on,mrg_rxbuf=on)".into());
                    }
                }
                out.push(f);
            }
            Some(d) => out.push(Finding::new(id("driver"), Severity::Info, format!("{} uses driver {d}", i.name)).evidence("driver", d)),
            None => {}
        }
        let mut f =
            Finding::new(
                id("link"),
                Severity::Info,
                format!(
                    "{}: MTU {}, txqueuelen {}, {}",
                    i.name,
                    opt(i.mtu),
                    opt(i.txqueuelen),
                    match (i.speed_mbit, i.has_device) {
                        (None, _) => "speed unknown".into(),
                        (Some(s), true) =>
                            format!("{s} Mbit/s {}", i.duplex.clone().unwrap_or_default()),
                        (Some(s), false) => format!(
                            "a virtual device (its {s} Mbit/s is nominal, not the path's rate)"
                        ),
                    }
                ),
            )
            .evidence("mtu", opt(i.mtu))
            .evidence("txqueuelen", opt(i.txqueuelen));
        if i.duplex.as_deref() == Some("half") {
            f.severity = Severity::Problem;
            f.title = format!("{} runs half duplex: collisions cap throughput", i.name);
            f.fix = Some(format!(
                "ethtool -s {} duplex full autoneg on (and check the switch port)",
                i.name
            ));
        } else if i.txqueuelen.is_some_and(|q| q < 1000)
            && i.link_speed_mbit().is_some_and(|s| s >= 10_000)
        {
            f.severity = Severity::Warning;
            f.title = format!(
                "{} has txqueuelen {} on a {} Mbit/s link",
                i.name,
                opt(i.txqueuelen),
                i.speed_mbit.unwrap_or(0)
            );
            f.fix = Some(format!("ip link set dev {} txqueuelen 10000", i.name));
        }
        out.push(f);
        // The other end of a bridge port or veth pair on this host with another MTU.
        let peer = i
            .master
            .as_ref()
            .and_then(|m| ifaces.iter().find(|x| &x.name == m))
            .or_else(|| {
                ifaces
                    .iter()
                    .find(|x| i.iflink != i.ifindex && x.ifindex.is_some() && x.ifindex == i.iflink)
            });
        if let Some(p) = peer
            && p.mtu != i.mtu
            && i.mtu.is_some()
            && p.mtu.is_some()
        {
            out.push(
                Finding::new(id("mtu_mismatch"), Severity::Warning, format!("{} has MTU {} but {} has MTU {}: jumbo frames are configured on one side only and large packets will be dropped", i.name, opt(i.mtu), p.name, opt(p.mtu)))
                    .evidence(format!("{}.mtu", i.name), opt(i.mtu))
                    .evidence(format!("{}.mtu", p.name), opt(p.mtu))
                    .fix(format!("use the same MTU on both: ip link set dev {} mtu {}", i.name, p.mtu.unwrap_or(1500).min(i.mtu.unwrap_or(1500)))),
            );
        }
        if view.live && i.driver.is_some() {
            out.push(offloads(&i.name));
        }
    }
    if !view.live {
        out.push(Finding::new(
            "nic.offload.skipped",
            Severity::Info,
            "offloads not checked: reading a fixture tree, not a live host",
        ));
    }
}

/// TSO/GSO/GRO/checksum state from `ethtool -k`.
fn offloads(iface: &str) -> Finding {
    let id = format!("nic.offload.{iface}");
    let Ok(out) = std::process::Command::new("ethtool")
        .args(["-k", iface])
        .output()
    else {
        return Finding::new(
            id,
            Severity::Info,
            "offloads not checked: ethtool is not installed",
        )
        .fix(crate::platform::process::install_hint("ethtool"));
    };
    let text = String::from_utf8_lossy(&out.stdout);
    offload_finding(iface, &super::host100g::parse::ethtool_features(&text), id)
}

/// The offloads `ethtool -k` lists: off where the driver lets them be turned on is a warning
/// with the command that does it (for those only); off and fixed by the driver (an emulated
/// NIC's) is a note that no command changes; all on is fine.
fn offload_finding(
    iface: &str,
    features: &std::collections::BTreeMap<String, super::host100g::parse::Feature>,
    id: String,
) -> Finding {
    let keys = [
        ("tcp-segmentation-offload", "tso"),
        ("generic-segmentation-offload", "gso"),
        ("generic-receive-offload", "gro"),
        ("rx-checksumming", "rx"),
        ("tx-checksumming", "tx"),
    ];
    let mut evidence = Vec::new();
    let (mut settable, mut fixed) = (Vec::new(), Vec::new());
    for (key, short) in keys {
        let Some(f) = features.get(key) else {
            continue;
        };
        let state = match (f.on, f.fixed) {
            (true, _) => "on",
            (false, false) => {
                settable.push((key, short));
                "off"
            }
            (false, true) => {
                fixed.push(key);
                "off [fixed]"
            }
        };
        evidence.push((key, state));
    }
    let names = |v: &[&str]| v.join(", ");
    let mut f = if evidence.is_empty() {
        Finding::new(
            id,
            Severity::Info,
            format!("offloads not checked: `ethtool -k {iface}` lists none"),
        )
    } else if !settable.is_empty() {
        let keys: Vec<&str> = settable.iter().map(|(k, _)| *k).collect();
        let args: Vec<String> = settable.iter().map(|(_, s)| format!("{s} on")).collect();
        Finding::new(
            id,
            Severity::Warning,
            format!("{iface}: {} off: every packet costs CPU", names(&keys)),
        )
        .fix(format!("ethtool -K {iface} {}", args.join(" ")))
    } else if !fixed.is_empty() {
        Finding::new(
            id,
            Severity::Info,
            format!(
                "{iface}: {} off, and its driver cannot turn them on: every packet costs CPU \
                 (a NIC or NIC model that offloads them would not)",
                names(&fixed)
            ),
        )
    } else {
        Finding::new(
            id,
            Severity::Ok,
            format!("{iface}: segmentation, receive and checksum offloads are on"),
        )
    };
    for (key, state) in evidence {
        f = f.evidence(key, state);
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::doctor::host100g::parse::ethtool_features;

    fn finding(text: &str) -> Finding {
        offload_finding("eth0", &ethtool_features(text), "nic.offload.eth0".into())
    }

    /// A trial's finding: a lab's TUN device read "10000 Mbit/s full" on a 200 Mbit/s path. A
    /// device without `device` in sysfs (veth, TUN) says its speed is nominal, its txqueuelen
    /// is not judged against it, and it is no link rate; a NIC's speed stays the link's.
    #[test]
    fn a_virtual_devices_speed_is_nominal() {
        let root = tempfile::tempdir().unwrap();
        let w = |rel: &str, v: &str| {
            let p = root.path().join("sys/class/net").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, format!("{v}\n")).unwrap();
        };
        for dev in ["tun0", "eth0"] {
            w(&format!("{dev}/speed"), "10000");
            w(&format!("{dev}/tx_queue_len"), "500");
            w(&format!("{dev}/duplex"), "full");
        }
        w("eth0/device/vendor", "0x8086");
        let view = HostView::fixture(root.path());
        let ifaces = interfaces(&view);
        let speeds: Vec<_> = ifaces.iter().map(Iface::link_speed_mbit).collect();
        assert_eq!(speeds, [Some(10_000), None]);
        let mut out = Vec::new();
        nic_checks(&view, &ifaces, &mut out);
        let link = |dev: &str| {
            out.iter()
                .find(|f| f.id == format!("nic.link.{dev}"))
                .unwrap()
        };
        assert_eq!(link("tun0").severity, Severity::Info);
        assert!(
            link("tun0")
                .title
                .contains("a virtual device (its 10000 Mbit/s is nominal, not the path's rate)"),
            "{:?}",
            link("tun0")
        );
        assert_eq!(link("eth0").severity, Severity::Warning);
        assert!(
            link("eth0")
                .title
                .contains("txqueuelen 500 on a 10000 Mbit/s link")
        );
    }

    /// An emulated RTL8139 (8139cp): TSO "off" over sub-features the driver fixes. It was
    /// called a warning with `ethtool -K eth0 tso on ...`, which that driver refuses.
    #[test]
    fn offloads_the_driver_cannot_turn_on_are_a_note_without_a_command() {
        let f = finding(
            "Features for eth0:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: on\ntcp-segmentation-offload: off\n\ttx-tcp-segmentation: off [fixed]\n\ttx-tcp6-segmentation: off [fixed]\ngeneric-segmentation-offload: on\ngeneric-receive-offload: on\n",
        );
        assert_eq!(f.severity, Severity::Info, "{f:?}");
        assert!(
            f.title
                .contains("tcp-segmentation-offload off, and its driver cannot")
        );
        assert!(f.fix.is_none(), "{f:?}");
        assert!(
            f.evidence
                .contains(&("tcp-segmentation-offload".into(), "off [fixed]".into()))
        );
    }

    #[test]
    fn offloads_turned_off_get_the_command_for_those_only() {
        let f = finding(
            "rx-checksumming: on\ntx-checksumming: on\ntcp-segmentation-offload: on\n\ttx-tcp-segmentation: on\ngeneric-segmentation-offload: off\ngeneric-receive-offload: off\n",
        );
        assert_eq!(f.severity, Severity::Warning, "{f:?}");
        assert_eq!(f.fix.as_deref(), Some("ethtool -K eth0 gso on gro on"));
        let on = finding(
            "rx-checksumming: on [fixed]\ntx-checksumming: on\ntcp-segmentation-offload: on\ngeneric-segmentation-offload: on\ngeneric-receive-offload: on\n",
        );
        assert_eq!(on.severity, Severity::Ok, "{on:?}");
        assert_eq!(finding("Features for eth0:\n").severity, Severity::Info);
    }
}
