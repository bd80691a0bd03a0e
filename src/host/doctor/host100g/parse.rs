//! Pure parsers of what the 100G checklist reads: `ethtool -g/-c/-a/-k`, `ip -d link show`,
//! `tc qdisc show`, kernel CPU lists (`0-3,8-11`), `/proc/interrupts` and the kernel command
//! line. Each takes the text as printed and returns what it could read (`None` for a field
//! the driver reports as `n/a` or does not print), so a new ethtool or iproute2 that adds
//! lines changes nothing. Tested on outputs captured on real hosts (tests/fixtures/host100g).

use std::collections::BTreeMap;

/// `ethtool -g IF`: ring sizes, current and the driver's maximum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rings {
    pub rx: Option<u32>,
    pub rx_max: Option<u32>,
    pub tx: Option<u32>,
    pub tx_max: Option<u32>,
}

/// `ethtool -c IF`: interrupt coalescing on receive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coalesce {
    /// `None` when the driver has no adaptive moderation (`n/a`).
    pub adaptive_rx: Option<bool>,
    pub rx_usecs: Option<u32>,
    pub rx_frames: Option<u32>,
}

/// `ethtool -a IF`: Ethernet pause frames (802.3x flow control).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pause {
    pub autoneg: Option<bool>,
    pub rx: Option<bool>,
    pub tx: Option<bool>,
}

/// One feature of `ethtool -k IF`: on or off, and whether the driver lets it change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feature {
    pub on: bool,
    pub fixed: bool,
}

/// `ip -d link show IF`: the numbers the checklist needs (bytes for the sizes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkDetails {
    pub mtu: Option<u32>,
    pub maxmtu: Option<u32>,
    pub numtxqueues: Option<u32>,
    pub gso_max_size: Option<u32>,
    pub gro_max_size: Option<u32>,
    pub tso_max_size: Option<u32>,
    /// IPv4 BIG TCP (Linux 6.3+, iproute2 6.3+): absent on older ones.
    pub gso_ipv4_max_size: Option<u32>,
    pub gro_ipv4_max_size: Option<u32>,
}

/// One line of `tc qdisc show dev IF`.
#[derive(Debug, Clone, PartialEq)]
pub struct Qdisc {
    pub kind: String,
    pub root: bool,
    /// `maxrate` of an fq qdisc, as tc prints it (`90Gbit`).
    pub maxrate: Option<String>,
}

fn number(v: &str) -> Option<u32> {
    v.trim().parse().ok()
}

fn on_off(v: &str) -> Option<bool> {
    match v.trim() {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// Parses `ethtool -g`: the `RX:` and `TX:` lines of "Pre-set maximums" and of "Current
/// hardware settings".
pub fn ethtool_rings(text: &str) -> Rings {
    let mut r = Rings::default();
    let mut current = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("Pre-set maximums") {
            current = false;
        } else if l.starts_with("Current hardware settings") {
            current = true;
        } else if let Some((k, v)) = l.split_once(':') {
            let slot = match (k.trim(), current) {
                ("RX", false) => &mut r.rx_max,
                ("RX", true) => &mut r.rx,
                ("TX", false) => &mut r.tx_max,
                ("TX", true) => &mut r.tx,
                _ => continue,
            };
            *slot = number(v);
        }
    }
    r
}

/// Parses `ethtool -c`: `Adaptive RX: off  TX: n/a`, `rx-usecs: 0`, `rx-frames: 1`.
pub fn ethtool_coalesce(text: &str) -> Coalesce {
    let mut c = Coalesce::default();
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("Adaptive RX:") {
            c.adaptive_rx = rest.split_whitespace().next().and_then(on_off);
        } else if let Some(v) = l.strip_prefix("rx-usecs:") {
            c.rx_usecs = number(v);
        } else if let Some(v) = l.strip_prefix("rx-frames:") {
            c.rx_frames = number(v);
        }
    }
    c
}

/// Parses `ethtool -a`: `Autonegotiate:`, `RX:`, `TX:` (the `RX negotiated:` lines of newer
/// ethtools are skipped: they say what the link partner agreed, not what is set).
pub fn ethtool_pause(text: &str) -> Pause {
    let mut p = Pause::default();
    for line in text.lines() {
        if let Some((k, v)) = line.trim().split_once(':') {
            match k.trim() {
                "Autonegotiate" => p.autoneg = on_off(v),
                "RX" => p.rx = on_off(v),
                "TX" => p.tx = on_off(v),
                _ => {}
            }
        }
    }
    p
}

/// Parses `ethtool -k`: `name: on|off [fixed]` (sub-features indented, kept under their own
/// names). ethtool never marks a group's line (`tcp-segmentation-offload`) fixed, only its
/// sub-features: a group whose sub-features are all fixed is fixed too (8139cp's TSO is
/// "off" over three "off [fixed]" lines, and `ethtool -K tso on` fails there).
pub fn ethtool_features(text: &str) -> BTreeMap<String, Feature> {
    let mut out = BTreeMap::new();
    // The group line before the indented lines, and whether all of those were fixed.
    let mut group: Option<(String, bool, usize)> = None;
    let close = |out: &mut BTreeMap<String, Feature>, g: Option<(String, bool, usize)>| {
        if let Some((name, all_fixed, n)) = g
            && n > 0
            && all_fixed
            && let Some(f) = out.get_mut(&name)
        {
            f.fixed = true;
        }
    };
    for line in text.lines() {
        let Some((k, v)) = line.trim().split_once(':') else {
            continue;
        };
        let mut words = v.split_whitespace();
        let Some(on) = words.next().and_then(on_off) else {
            continue;
        };
        let fixed = words.any(|w| w == "[fixed]");
        let name = k.trim().to_string();
        if line.starts_with(char::is_whitespace) {
            if let Some((_, all_fixed, n)) = group.as_mut() {
                *all_fixed &= fixed;
                *n += 1;
            }
        } else {
            close(&mut out, group.take());
            group = Some((name.clone(), true, 0));
        }
        out.insert(name, Feature { on, fixed });
    }
    close(&mut out, group.take());
    out
}

/// Parses `ip -d link show IF` (text): the value after each keyword it knows.
pub fn ip_link_details(text: &str) -> LinkDetails {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| number(v))
    };
    LinkDetails {
        mtu: after("mtu"),
        maxmtu: after("maxmtu"),
        numtxqueues: after("numtxqueues"),
        gso_max_size: after("gso_max_size"),
        gro_max_size: after("gro_max_size"),
        tso_max_size: after("tso_max_size"),
        gso_ipv4_max_size: after("gso_ipv4_max_size"),
        gro_ipv4_max_size: after("gro_ipv4_max_size"),
    }
}

/// Parses `tc qdisc show dev IF`: `qdisc KIND HANDLE: root|parent P ...` per line.
pub fn tc_qdiscs(text: &str) -> Vec<Qdisc> {
    text.lines()
        .filter_map(|line| {
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.first() != Some(&"qdisc") {
                return None;
            }
            Some(Qdisc {
                kind: w.get(1)?.to_string(),
                root: w.contains(&"root"),
                maxrate: w
                    .iter()
                    .position(|x| *x == "maxrate")
                    .and_then(|i| w.get(i + 1))
                    .map(|s| s.to_string()),
            })
        })
        .collect()
}

/// Parses a kernel CPU list (`0-3,8-11`, `5`, empty) into CPU numbers; `None` when malformed.
pub fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The IRQ numbers of `/proc/interrupts` lines whose name (the last word) contains one of
/// `names` (an interface name such as `eth0-TxRx-0`, or a device such as `virtio2-input.0`).
pub fn irqs_named(interrupts: &str, names: &[&str]) -> Vec<u32> {
    interrupts
        .lines()
        .filter_map(|line| {
            let (irq, rest) = line.trim_start().split_once(':')?;
            let irq: u32 = irq.parse().ok()?;
            let last = rest.split_whitespace().last()?;
            names
                .iter()
                .any(|n| !n.is_empty() && last.contains(n))
                .then_some(irq)
        })
        .collect()
}

/// Whether the kernel command line turns the IOMMU's DMA translation off for the host's own
/// devices: `iommu=pt`, `iommu=off`, `intel_iommu=off`, `amd_iommu=off`, or
/// `intel_iommu=on,pt`-style lists that include `pt`.
pub fn iommu_passthrough(cmdline: &str) -> Option<String> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .find(|w| {
            let Some((k, v)) = w.split_once('=') else {
                return false;
            };
            matches!(k, "iommu" | "intel_iommu" | "amd_iommu")
                && v.split(',').any(|x| x == "pt" || x == "off")
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/host100g");

    fn read(rel: &str) -> String {
        std::fs::read_to_string(format!("{CAPTURED}/{rel}")).unwrap()
    }

    #[test]
    fn rings_of_a_virtio_nic_and_of_an_mlx5_100g_nic() {
        let v = ethtool_rings(&read("captured/ethtool-g.virtio.txt"));
        assert_eq!(
            v,
            Rings {
                rx: Some(256),
                rx_max: Some(256),
                tx: Some(256),
                tx_max: Some(256)
            }
        );
        let m = ethtool_rings(&read("untuned-100g/cmd/ethtool-g.ens1f0np0.txt"));
        assert_eq!(
            (m.rx, m.rx_max, m.tx, m.tx_max),
            (Some(1024), Some(8192), Some(1024), Some(8192))
        );
        assert_eq!(
            ethtool_rings("netlink error: Operation not supported\n"),
            Rings::default()
        );
    }

    #[test]
    fn coalescing_adaptive_and_per_packet() {
        let v = ethtool_coalesce(&read("captured/ethtool-c.virtio.txt"));
        assert_eq!(
            v,
            Coalesce {
                adaptive_rx: Some(false),
                rx_usecs: Some(0),
                rx_frames: Some(1)
            }
        );
        let m = ethtool_coalesce(&read("tuned-100g/cmd/ethtool-c.ens1f0np0.txt"));
        assert_eq!(m.adaptive_rx, Some(true));
        assert_eq!(m.rx_usecs, Some(8));
    }

    #[test]
    fn pause_frames_and_an_unsupported_driver() {
        let m = ethtool_pause(&read("untuned-100g/cmd/ethtool-a.ens1f0np0.txt"));
        assert_eq!(
            m,
            Pause {
                autoneg: Some(false),
                rx: Some(false),
                tx: Some(false)
            }
        );
        assert_eq!(
            ethtool_pause(&read("captured/ethtool-a.veth.txt")),
            Pause::default()
        );
    }

    #[test]
    fn features_with_fixed_and_sub_features() {
        let f = ethtool_features(&read("captured/ethtool-k.veth.txt"));
        assert_eq!(
            f["tcp-segmentation-offload"],
            Feature {
                on: true,
                fixed: false
            }
        );
        assert_eq!(
            f["generic-receive-offload"],
            Feature {
                on: false,
                fixed: false
            }
        );
        assert_eq!(
            f["large-receive-offload"],
            Feature {
                on: false,
                fixed: true
            }
        );
        assert_eq!(
            f["tx-checksum-ipv4"],
            Feature {
                on: false,
                fixed: true
            }
        );
        assert!(!f.contains_key("Features for vd0"));
    }

    /// A group over sub-features the driver fixes is fixed (8139cp's TSO: `ethtool -K eth0
    /// tso on` says "Could not change any device features"); one with a settable sub-feature
    /// is not, and a group without sub-features is as its own line says.
    #[test]
    fn a_group_whose_sub_features_are_all_fixed_is_fixed() {
        let f = ethtool_features(
            "Features for eth0:\nrx-checksumming: on\ntx-checksumming: on\n\ttx-checksum-ipv4: on\n\ttx-checksum-ipv6: off [fixed]\ntcp-segmentation-offload: off\n\ttx-tcp-segmentation: off [fixed]\n\ttx-tcp6-segmentation: off [fixed]\ngeneric-segmentation-offload: off\ngeneric-receive-offload: on\nlarge-receive-offload: off [fixed]\n",
        );
        let fixed = |k: &str| f[k].fixed;
        assert!(fixed("tcp-segmentation-offload"), "{f:?}");
        assert!(!f["tcp-segmentation-offload"].on);
        assert!(!fixed("tx-checksumming") && !fixed("rx-checksumming"));
        assert!(!fixed("generic-segmentation-offload") && fixed("large-receive-offload"));
        // The captured virtio NIC: its TSO group has settable sub-features.
        let v = ethtool_features(&read("captured/ethtool-k.virtio.txt"));
        assert!(!v["tcp-segmentation-offload"].fixed && !v["tx-checksumming"].fixed);
        assert!(v["rx-checksumming"].fixed);
    }

    #[test]
    fn ip_details_of_a_veth_a_virtio_nic_and_big_tcp() {
        let v = ip_link_details(&read("captured/ip-d-link.veth.txt"));
        assert_eq!(v.mtu, Some(1500));
        assert_eq!(v.maxmtu, Some(65535));
        assert_eq!(v.numtxqueues, Some(2));
        assert_eq!(v.gso_max_size, Some(65536));
        assert_eq!(v.tso_max_size, Some(524280));
        assert_eq!(v.gso_ipv4_max_size, None);
        let e = ip_link_details(&read("captured/ip-d-link.virtio.txt"));
        assert_eq!((e.mtu, e.tso_max_size), (Some(1400), Some(65536)));
        let big = ip_link_details(&read("tuned-100g/cmd/ip-d-link.ens1f0np0.txt"));
        assert_eq!(big.gso_ipv4_max_size, Some(185000));
        assert_eq!(big.gro_max_size, Some(185000));
    }

    #[test]
    fn qdiscs_root_and_children() {
        assert_eq!(
            tc_qdiscs(&read("captured/tc-qdisc.virtio.txt")),
            vec![Qdisc {
                kind: "pfifo_fast".into(),
                root: true,
                maxrate: None
            }]
        );
        assert_eq!(
            tc_qdiscs(&read("captured/tc-qdisc.veth.txt"))[0].kind,
            "noqueue"
        );
        let q = tc_qdiscs(&read("tuned-100g/cmd/tc-qdisc.ens1f0np0.txt"));
        assert_eq!(q[0].kind, "mq");
        assert!(q[0].root);
        assert!(q[1..].iter().all(|x| x.kind == "fq" && !x.root));
        assert_eq!(q[1].maxrate.as_deref(), Some("12Gbit"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0-3,8-9"), Some(vec![0, 1, 2, 3, 8, 9]));
        assert_eq!(cpu_list("5\n"), Some(vec![5]));
        assert_eq!(cpu_list(""), Some(vec![]));
        assert_eq!(cpu_list("3-1"), None);
        assert_eq!(cpu_list("x"), None);
    }

    #[test]
    fn irqs_by_interface_or_device_name() {
        let text = "           CPU0       CPU1\n 26:  0 9  IO-APIC   4-edge      ttyS0\n 29: 5 6 PCI-MSIX-0000:00:01.0 1-edge virtio2-input.0\n 30: 5 6 PCI-MSIX-0000:00:01.0 2-edge virtio2-output.0\n 40: 1 1 PCI-MSI 3-edge eth1-TxRx-0\nNMI: 0 0 Non-maskable interrupts\n";
        assert_eq!(irqs_named(text, &["eth0", "virtio2"]), vec![29, 30]);
        assert_eq!(irqs_named(text, &["eth1"]), vec![40]);
        assert_eq!(irqs_named(text, &[""]), Vec::<u32>::new());
    }

    #[test]
    fn iommu_passthrough_on_the_command_line() {
        assert_eq!(
            iommu_passthrough("ro quiet iommu=pt").as_deref(),
            Some("iommu=pt")
        );
        assert_eq!(
            iommu_passthrough("intel_iommu=on,pt").as_deref(),
            Some("intel_iommu=on,pt")
        );
        assert_eq!(iommu_passthrough("intel_iommu=on quiet"), None);
        assert_eq!(iommu_passthrough("quiet -- iommu=pt"), None);
    }
}
