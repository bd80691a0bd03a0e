//! The judgments on facts as read, and the path's rate deciding what a wrong item means.

use super::*;
use crate::host::doctor::host100g::parse;

fn state(f: &Finding) -> CheckState {
    f.checklist.as_ref().map(|c| c.state).unwrap()
}

fn wrong_fix(v: &Verdict) -> Option<&str> {
    match v {
        Verdict::Wrong { fix, .. } => fix.as_deref(),
        _ => panic!("expected a wrong verdict, got {v:?}"),
    }
}

#[test]
fn a_wrong_item_is_a_finding_only_from_its_rate() {
    let v = || cpu_governor(&["schedutil".to_string()]);
    let at_100g = finding("host100g.cpu_governor".into(), G10, Some(100e9), v());
    assert_eq!(state(&at_100g), CheckState::Finding);
    assert_eq!(at_100g.severity, Severity::Warning);
    assert_eq!(
        at_100g.fix.as_deref(),
        Some("cpupower frequency-set -g performance")
    );
    let at_1g = finding("host100g.cpu_governor".into(), G10, Some(1e9), v());
    assert_eq!(state(&at_1g), CheckState::Ok);
    assert_eq!(at_1g.severity, Severity::Ok);
    assert_eq!(at_1g.fix, None, "a 1G host is not told to fix a 10G item");
    assert!(
        at_1g
            .checklist
            .unwrap()
            .reason
            .unwrap()
            .contains("matters from 10.0 Gbits/sec")
    );
    let unknown_rate = finding("x".into(), G10, None, v());
    assert_eq!(state(&unknown_rate), CheckState::Unknown);
    assert!(unknown_rate.title.contains("--rate"));
    let unreadable = finding("x".into(), G10, Some(100e9), cpu_governor(&[]));
    assert_eq!(state(&unreadable), CheckState::Unknown);
    assert!(
        unreadable
            .checklist
            .unwrap()
            .reason
            .unwrap()
            .contains("cpufreq")
    );
}

#[test]
fn governor_and_smt() {
    assert!(matches!(
        cpu_governor(&["performance".into()]),
        Verdict::Ok(_)
    ));
    assert!(matches!(smt(Some("0"), Some("off")), Verdict::Ok(_)));
    assert!(matches!(
        smt(Some("0"), Some("notsupported")),
        Verdict::Ok(_)
    ));
    assert_eq!(
        wrong_fix(&smt(Some("1"), Some("on"))),
        Some("echo off | tee /sys/devices/system/cpu/smt/control")
    );
    assert!(matches!(smt(None, None), Verdict::Unknown(_)));
}

fn two_nodes(nic_node: i32) -> Numa {
    Numa {
        nic_node: Some(nic_node),
        nodes: [(0, (0..8).collect()), (1, (8..16).collect())].into(),
    }
}

#[test]
fn irqs_off_the_nics_node_are_pinned_to_it() {
    let all = Some((0..16).collect::<Vec<u32>>());
    let v = irq_affinity(
        "eth0",
        &two_nodes(1),
        &[(120, all.clone()), (121, Some(vec![9]))],
    );
    assert_eq!(
        wrong_fix(&v),
        Some(
            "systemctl stop irqbalance; for i in 120; do echo 8-15 > /proc/irq/$i/smp_affinity_list; done"
        )
    );
    assert!(matches!(
        irq_affinity("eth0", &two_nodes(1), &[(121, Some(vec![8, 9]))]),
        Verdict::Ok(_)
    ));
    let one = Numa {
        nic_node: Some(-1),
        nodes: [(0, vec![0, 1])].into(),
    };
    assert!(matches!(
        irq_affinity("eth0", &one, &[(29, all.clone())]),
        Verdict::Ok(_)
    ));
    assert!(matches!(
        irq_affinity("eth0", &two_nodes(-1), &[(29, all)]),
        Verdict::Unknown(_)
    ));
    assert!(matches!(
        irq_affinity("eth0", &two_nodes(1), &[]),
        Verdict::Unknown(_)
    ));
    assert_eq!(compact(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
}

#[test]
fn the_tests_threads_go_on_the_nics_node() {
    let Verdict::Advice { fix, .. } = numa_threads("eth0", &two_nodes(1), "netsweep server") else {
        panic!("a host of two nodes is told where to run the test")
    };
    assert_eq!(fix, "numactl --cpunodebind=1 --membind=1 netsweep server");
    // Advice, not a finding: ok at every rate, a note where the rate makes it matter.
    let at = |rate| {
        finding(
            "n".into(),
            G40,
            Some(rate),
            numa_threads("eth0", &two_nodes(1), "s"),
        )
    };
    assert_eq!(
        (state(&at(100e9)), at(100e9).severity),
        (CheckState::Ok, Severity::Info)
    );
    assert_eq!(
        (state(&at(1e9)), at(1e9).severity),
        (CheckState::Ok, Severity::Ok)
    );
    let one = Numa {
        nic_node: Some(0),
        nodes: [(0, vec![0])].into(),
    };
    assert!(matches!(
        numa_threads("eth0", &one, "netsweep server"),
        Verdict::Ok(_)
    ));
}

#[test]
fn rings_below_the_maximum_are_raised_to_it() {
    let r = Rings {
        rx: Some(1024),
        rx_max: Some(8192),
        tx: Some(1024),
        tx_max: Some(8192),
    };
    assert_eq!(
        wrong_fix(&rings("ens1f0np0", &r)),
        Some("ethtool -G ens1f0np0 rx 8192 tx 8192")
    );
    let rx_only = Rings {
        tx: Some(8192),
        ..r.clone()
    };
    assert_eq!(
        wrong_fix(&rings("eth0", &rx_only)),
        Some("ethtool -G eth0 rx 8192")
    );
    let full = Rings {
        rx: Some(256),
        rx_max: Some(256),
        tx: Some(256),
        tx_max: Some(256),
    };
    assert!(matches!(rings("eth0", &full), Verdict::Ok(_)));
    assert!(matches!(
        rings("eth0", &Rings::default()),
        Verdict::Unknown(_)
    ));
}

#[test]
fn an_interrupt_per_packet_is_coalesced() {
    let per_packet = Coalesce {
        adaptive_rx: Some(false),
        rx_usecs: Some(0),
        rx_frames: Some(1),
    };
    assert_eq!(
        wrong_fix(&coalescing("eth0", &per_packet, true)),
        Some("ethtool -C eth0 adaptive-rx on")
    );
    let no_adaptive = Coalesce {
        adaptive_rx: None,
        ..per_packet.clone()
    };
    assert_eq!(
        wrong_fix(&coalescing("eth0", &no_adaptive, true)),
        Some("ethtool -C eth0 rx-usecs 8")
    );
    let adaptive = Coalesce {
        adaptive_rx: Some(true),
        ..per_packet
    };
    assert!(matches!(
        coalescing("eth0", &adaptive, true),
        Verdict::Ok(_)
    ));
    assert!(matches!(
        coalescing("eth0", &Coalesce::default(), true),
        Verdict::Unknown(_)
    ));
    // A virtio_net device without the notification-coalescing features: no fix to paste.
    let mut features = "0".repeat(64);
    assert!(!coalescing_settable(Some("virtio_net"), Some(&features)));
    assert!(coalescing_settable(Some("mlx5_core"), None));
    match coalescing("eth0", &per_packet, false) {
        Verdict::Wrong { fix, severity, .. } => {
            assert_eq!((fix, severity), (None, Severity::Info));
        }
        v => panic!("{v:?}"),
    }
    for bit in [52, 53] {
        features.replace_range(bit..=bit, "1");
        assert!(coalescing_settable(Some("virtio_net"), Some(&features)));
        features.replace_range(bit..=bit, "0");
    }
}

#[test]
fn pause_frames_off_and_unsupported() {
    let off = Pause {
        autoneg: Some(false),
        rx: Some(false),
        tx: Some(true),
    };
    assert_eq!(
        wrong_fix(&pause("eth0", &off)),
        Some("ethtool -A eth0 rx on tx on")
    );
    let on = Pause {
        rx: Some(true),
        ..off
    };
    assert!(matches!(pause("eth0", &on), Verdict::Ok(_)));
    assert!(matches!(
        pause("eth0", &Pause::default()),
        Verdict::Unknown(_)
    ));
}

#[test]
fn offloads_off_are_turned_on_unless_fixed() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/host100g/captured/ethtool-k.veth.txt"
    ))
    .unwrap();
    // The veth as created: GRO off (changeable), TSO and GSO on.
    assert_eq!(
        wrong_fix(&offloads("vd0", &parse::ethtool_features(&text))),
        Some("ethtool -K vd0 gro on")
    );
    let fixed = parse::ethtool_features(
        "tcp-segmentation-offload: off [fixed]\ngeneric-receive-offload: on\n",
    );
    assert!(matches!(offloads("lo", &fixed), Verdict::Ok(_)));
    assert!(matches!(
        offloads("x", &BTreeMap::new()),
        Verdict::Unknown(_)
    ));
}

fn q(kind: &str, root: bool) -> Qdisc {
    Qdisc {
        kind: kind.into(),
        root,
        maxrate: None,
    }
}

#[test]
fn fq_on_every_queue_or_its_fix_and_a_kernel_without_fq() {
    assert!(matches!(
        qdisc(
            "eth0",
            &[q("mq", true), q("fq", false)],
            &FqAvailable::Yes,
            Some(8)
        ),
        Verdict::Ok(_)
    ));
    assert!(matches!(
        qdisc("eth0", &[q("fq", true)], &FqAvailable::Yes, Some(1)),
        Verdict::Ok(_)
    ));
    let mq = [
        q("mq", true),
        q("pfifo_fast", false),
        q("pfifo_fast", false),
    ];
    assert_eq!(
        wrong_fix(&qdisc("eth0", &mq, &FqAvailable::Yes, Some(64))),
        Some("sysctl -w net.core.default_qdisc=fq && tc qdisc replace dev eth0 root mq")
    );
    assert_eq!(
        wrong_fix(&qdisc(
            "eth0",
            &[q("pfifo_fast", true)],
            &FqAvailable::Yes,
            Some(1)
        )),
        Some("tc qdisc replace dev eth0 root fq")
    );
    let missing = qdisc(
        "eth0",
        &[q("pfifo_fast", true)],
        &FqAvailable::No("no sch_fq".into()),
        Some(1),
    );
    assert_eq!(wrong_fix(&missing), None);
    let Verdict::Wrong { title, .. } = missing else {
        unreachable!()
    };
    assert!(
        title.contains("fq is unavailable on this kernel (no sch_fq)"),
        "{title}"
    );
    assert!(matches!(
        qdisc("eth0", &[], &FqAvailable::Yes, None),
        Verdict::Unknown(_)
    ));
}

#[test]
fn mtu_9000_where_the_nic_allows_it() {
    assert_eq!(
        wrong_fix(&mtu("eth0", Some(1500), Some(9978))),
        Some("ip link set dev eth0 mtu 9000")
    );
    assert_eq!(wrong_fix(&mtu("eth0", Some(1500), Some(4000))), None);
    assert!(matches!(mtu("eth0", Some(9000), None), Verdict::Ok(_)));
    assert!(matches!(mtu("eth0", None, None), Verdict::Unknown(_)));
}

#[test]
fn big_tcp_when_the_driver_takes_it() {
    let d = LinkDetails {
        gso_max_size: Some(65536),
        gro_max_size: Some(65536),
        tso_max_size: Some(524280),
        ..LinkDetails::default()
    };
    assert_eq!(
        wrong_fix(&big_tcp("eth0", &d)),
        Some("ip link set dev eth0 gso_max_size 185000 gro_max_size 185000")
    );
    let v4 = LinkDetails {
        gso_ipv4_max_size: Some(65536),
        gro_ipv4_max_size: Some(65536),
        ..d.clone()
    };
    assert_eq!(
        wrong_fix(&big_tcp("eth0", &v4)),
        Some(
            "ip link set dev eth0 gso_max_size 185000 gro_max_size 185000 gso_ipv4_max_size 185000 gro_ipv4_max_size 185000"
        )
    );
    let capped = LinkDetails {
        tso_max_size: Some(65536),
        ..d.clone()
    };
    assert!(matches!(big_tcp("eth0", &capped), Verdict::Ok(_)));
    let on = LinkDetails {
        gso_max_size: Some(185000),
        gro_max_size: Some(185000),
        ..d
    };
    assert!(matches!(big_tcp("eth0", &on), Verdict::Ok(_)));
    assert!(matches!(
        big_tcp("eth0", &LinkDetails::default()),
        Verdict::Unknown(_)
    ));
}

#[test]
fn iommu_and_mtu_probing() {
    assert!(matches!(
        iommu(Some(1), Some("ro iommu=pt")),
        Verdict::Ok(_)
    ));
    assert!(matches!(iommu(Some(0), Some("ro")), Verdict::Ok(_)));
    assert!(
        wrong_fix(&iommu(Some(2), Some("ro intel_iommu=on")))
            .unwrap()
            .contains("iommu=pt")
    );
    assert!(matches!(iommu(Some(1), None), Verdict::Unknown(_)));
    assert_eq!(
        wrong_fix(&mtu_probing(Some("0"))),
        Some("sysctl -w net.ipv4.tcp_mtu_probing=1")
    );
    assert!(matches!(mtu_probing(Some("1")), Verdict::Ok(_)));
}

#[test]
fn interface_names_in_fixes_are_quoted_for_the_shell() {
    let r = Rings {
        rx: Some(1),
        rx_max: Some(2),
        ..Rings::default()
    };
    assert_eq!(
        wrong_fix(&rings("we$ird", &r)),
        Some("ethtool -G 'we$ird' rx 2")
    );
}
