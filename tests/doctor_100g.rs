//! doctor's 100G host checklist (`host100g.*`) through the command line: on fixture trees of a
//! tuned 100G host (every item ok), the same host untuned (every item a finding with its fix),
//! and a 1 Gbit/s host with the untuned settings (no 100G item raised); every fix is parsed by
//! a shell and, for ethtool/ip/tc, run on a veth in a namespace the test makes (root); and
//! on this machine, every item present with a state (and a reason when unknown).

mod common;

use netsweep::host::doctor::{CheckState, Diagnosis, Finding, Severity};
use std::path::PathBuf;
use std::process::Command;

const NIC: &str = "ens1f0np0";
const HOST_ITEMS: [&str; 4] = ["cpu_governor", "smt", "iommu", "mtu_probing"];
const NIC_ITEMS: [&str; 9] = [
    "irq_affinity",
    "numa",
    "rings",
    "coalescing",
    "pause",
    "offloads",
    "qdisc",
    "mtu",
    "big_tcp",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/host100g")
        .join(name)
}

fn doctor(args: &[&str]) -> Diagnosis {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .arg("doctor")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    common::doctor_diagnosis(&out)
}

fn on_root(name: &str, extra: &[&str]) -> Diagnosis {
    let root = fixture(name);
    let mut args = vec!["--root", root.to_str().unwrap()];
    args.extend(extra);
    doctor(&args)
}

/// The checklist's findings by item id, each asserted to carry a checklist state.
fn checklist(d: &Diagnosis, nic: &str) -> Vec<(String, Finding)> {
    let ids = HOST_ITEMS
        .iter()
        .map(|i| format!("host100g.{i}"))
        .chain(NIC_ITEMS.iter().map(|i| format!("host100g.{i}.{nic}")));
    ids.map(|id| {
        let f = d
            .get(&id)
            .unwrap_or_else(|| panic!("{id} missing: {:#?}", d.findings));
        assert!(f.checklist.is_some(), "{id} has no checklist state");
        (id, f.clone())
    })
    .collect()
}

fn state(f: &Finding) -> CheckState {
    f.checklist.as_ref().map(|c| c.state).unwrap()
}

#[test]
fn a_tuned_100g_host_has_every_item_ok() {
    let d = on_root("tuned-100g", &[]);
    for (id, f) in checklist(&d, NIC) {
        assert_eq!(state(&f), CheckState::Ok, "{id}: {}", f.title);
        if id.starts_with("host100g.numa.") {
            // Not a setting of the host: where to run the test on its two NUMA nodes.
            assert_eq!(f.severity, Severity::Info);
            let fix = f.fix.clone().unwrap();
            assert!(
                fix.starts_with("numactl --cpunodebind=1 --membind=1 "),
                "{fix}"
            );
        } else {
            assert_eq!(f.fix, None, "{id}");
            assert_eq!(f.severity, Severity::Ok, "{id}");
        }
        assert_eq!(
            f.checklist.unwrap().rate_bps,
            Some(100e9),
            "{id}: the link speed"
        );
    }
    let q = d.get("host100g.qdisc.ens1f0np0").unwrap();
    assert!(q.title.contains("maxrate 12Gbit"), "{}", q.title);
}

/// The fix each item of the untuned host must give (interface names as in the fixture).
fn expected_fixes() -> Vec<(String, String)> {
    let n = NIC;
    [
        ("cpu_governor", "cpupower frequency-set -g performance".to_string()),
        ("smt", "echo off | tee /sys/devices/system/cpu/smt/control".into()),
        ("iommu", r#"sed -i 's/^GRUB_CMDLINE_LINUX="/&iommu=pt /' /etc/default/grub && update-grub"#.into()),
        ("mtu_probing", "sysctl -w net.ipv4.tcp_mtu_probing=1".into()),
        (&format!("irq_affinity.{n}"), "systemctl stop irqbalance; for i in 120 121 122 123; do echo 8-15 > /proc/irq/$i/smp_affinity_list; done".into()),
        (&format!("rings.{n}"), format!("ethtool -G {n} rx 8192 tx 8192")),
        (&format!("coalescing.{n}"), format!("ethtool -C {n} adaptive-rx on")),
        (&format!("pause.{n}"), format!("ethtool -A {n} rx on tx on")),
        (&format!("offloads.{n}"), format!("ethtool -K {n} tso on gro on")),
        (&format!("qdisc.{n}"), format!("sysctl -w net.core.default_qdisc=fq && tc qdisc replace dev {n} root mq")),
        (&format!("mtu.{n}"), format!("ip link set dev {n} mtu 9000")),
        (&format!("big_tcp.{n}"), format!("ip link set dev {n} gso_max_size 185000 gro_max_size 185000 gso_ipv4_max_size 185000 gro_ipv4_max_size 185000")),
    ]
    .into_iter()
    .map(|(k, v)| (format!("host100g.{k}"), v))
    .collect()
}

#[test]
fn an_untuned_100g_host_has_every_item_found_with_its_fix() {
    let d = on_root("untuned-100g", &[]);
    let fixes = expected_fixes();
    for (id, f) in checklist(&d, NIC) {
        assert!(f.severity >= Severity::Info, "{id}");
        if id.starts_with("host100g.numa.") {
            assert_eq!(state(&f), CheckState::Ok, "advice, not a finding");
            let fix = f.fix.as_deref().unwrap();
            assert!(
                fix.starts_with("numactl --cpunodebind=1 --membind=1 ") && fix.ends_with(" server"),
                "{fix}"
            );
            continue;
        }
        assert_eq!(state(&f), CheckState::Finding, "{id}: {}", f.title);
        let want = fixes
            .iter()
            .find(|(k, _)| *k == id)
            .map(|(_, v)| v.as_str());
        assert_eq!(f.fix.as_deref(), want, "{id}");
    }
    let text = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["doctor", "--root"])
        .arg(fixture("untuned-100g"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("fix: ethtool -G ens1f0np0 rx 8192 tx 8192"),
        "{text}"
    );
}

#[test]
fn a_1g_host_is_not_told_about_100g_items() {
    let d = on_root("host-1g", &[]);
    for (id, f) in checklist(&d, NIC) {
        assert_eq!(state(&f), CheckState::Ok, "{id}: {}", f.title);
        assert!(f.severity <= Severity::Ok, "{id}");
        if !id.starts_with("host100g.numa.") {
            assert_eq!(f.fix, None, "{id}");
        }
    }
    // Told its path is 100G (`--rate`), the same host gets the findings.
    let d = on_root("host-1g", &["--rate", "100G"]);
    let found = checklist(&d, NIC)
        .iter()
        .filter(|(_, f)| state(f) == CheckState::Finding)
        .count();
    assert_eq!(
        found,
        HOST_ITEMS.len() + NIC_ITEMS.len() - 1,
        "all but the numa advice"
    );
    // And at 10G, only the items that matter from 10G.
    let d = on_root("host-1g", &["--rate", "10G"]);
    for (id, f) in checklist(&d, NIC) {
        let from = f.checklist.as_ref().unwrap().matters_from_bps;
        let want = if from <= 10e9 {
            CheckState::Finding
        } else {
            CheckState::Ok
        };
        assert_eq!(state(&f), want, "{id} matters from {from}");
    }
}

/// A network namespace this test made, deleted on drop.
struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn sh(args: &[&str]) -> std::process::Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

/// Every fix is one line a POSIX shell parses; ethtool, ip and tc fixes run on a veth named
/// like the fixture's NIC in a namespace of this test, where each tool must accept the
/// command line (a driver that cannot do it, "not supported", is the veth's limit, not a
/// syntax error); sysctl fixes name keys this kernel has.
#[test]
fn every_fix_parses_and_the_tools_accept_it() {
    let fixes: Vec<String> = on_root("untuned-100g", &[])
        .findings
        .into_iter()
        .filter(|f| f.checklist.is_some())
        .filter_map(|f| f.fix)
        .collect();
    assert_eq!(fixes.len(), HOST_ITEMS.len() + NIC_ITEMS.len());
    for fix in &fixes {
        let out = sh(&["sh", "-n", "-c", fix]);
        assert!(
            out.status.success(),
            "{fix}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for part in fix.split("&&").map(str::trim) {
            if let Some(kv) = part.strip_prefix("sysctl -w ") {
                let key = kv.split('=').next().unwrap();
                let path = format!("/proc/sys/{}", key.replace('.', "/"));
                assert!(std::path::Path::new(&path).exists(), "{fix}: no {path}");
            }
        }
    }
    let test = "every_fix_parses_and_the_tools_accept_it";
    if !common::root_or_skip(test)
        || !common::tool_or_skip(test, "ip")
        || !common::tool_or_skip(test, "ethtool")
        || !common::tool_or_skip(test, "tc")
    {
        return;
    }
    let ns = Ns(format!("nsd100g{}", std::process::id()));
    assert!(sh(&["ip", "netns", "add", &ns.0]).status.success());
    let add = sh(&[
        "ip",
        "-n",
        &ns.0,
        "link",
        "add",
        NIC,
        "numtxqueues",
        "4",
        "numrxqueues",
        "4",
        "type",
        "veth",
        "peer",
        "name",
        "nsd100gpeer",
    ]);
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let ip_help = String::from_utf8_lossy(&sh(&["ip", "link", "help"]).stderr).to_string();
    let mut ran = 0;
    for fix in &fixes {
        for part in fix.split("&&").map(str::trim) {
            let tool = part.split_whitespace().next().unwrap();
            if !matches!(tool, "ethtool" | "ip" | "tc") {
                continue;
            }
            let mut part = part.to_string();
            // An iproute2 older than 6.3 (this machine's may be) lacks IPv4 BIG TCP's names.
            if tool == "ip"
                && !ip_help.contains("gso_ipv4_max_size")
                && let Some(i) = part.find(" gso_ipv4_max_size")
            {
                eprintln!(
                    "{test}: this ip lacks gso_ipv4_max_size; runs `{}`",
                    &part[..i]
                );
                part.truncate(i);
            }
            let out = sh(&["ip", "netns", "exec", &ns.0, "sh", "-c", &part]);
            let err = String::from_utf8_lossy(&out.stderr);
            let refused_by_driver = err.contains("not supported") || err.contains("Operation not");
            assert!(
                out.status.success() || refused_by_driver,
                "`{part}` is not accepted: {err}"
            );
            ran += 1;
        }
    }
    // rings, coalescing, pause, offloads (ethtool); qdisc (tc); mtu, big_tcp (ip).
    assert_eq!(ran, 7, "the ethtool, ip and tc fixes all ran");
}

/// On this machine: every item present with a state, unknown ones with a reason; a kernel
/// without fq is said so, not crashed on.
#[test]
fn this_machine_gives_every_item_a_state() {
    let d = doctor(&["--rate", "100G"]);
    let nics: Vec<String> = d
        .findings
        .iter()
        .filter_map(|f| f.id.strip_prefix("host100g.rings."))
        .map(str::to_string)
        .collect();
    if nics.is_empty() {
        let f = d.get("host100g.nic").expect("no NIC and no host100g.nic");
        assert_eq!(state(f), CheckState::Unknown);
    }
    for nic in &nics {
        for (id, f) in checklist(&d, nic) {
            let c = f.checklist.as_ref().unwrap();
            assert_eq!(c.rate_bps, Some(100e9), "{id}");
            match c.state {
                CheckState::Unknown => {
                    assert!(c.reason.as_ref().is_some_and(|r| !r.is_empty()), "{id}")
                }
                CheckState::Finding => assert!(f.severity >= Severity::Info, "{id}"),
                CheckState::Ok => {}
            }
            eprintln!("{id}: {:?} {}", c.state, f.title);
        }
        let q = d.get(&format!("host100g.qdisc.{nic}")).unwrap();
        if q.title.contains("fq is unavailable") {
            assert_eq!(q.fix, None, "no command installs fq into this kernel");
        }
    }
}
