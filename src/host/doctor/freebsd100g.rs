//! The 100G host checklist (`host100g.*`) on FreeBSD: the items FreeBSD exposes as sysctls
//! (docs/doctor-100g.md), read from a `host::freebsd::Capture` and judged as on Linux by
//! `host100g::judge::finding` against the path's rate, with FreeBSD's own fixes. Rings,
//! coalescing, pause frames and interrupt placement are per driver there (iflib tunables,
//! mlx5en's `dev.mce.*`) and are not read; BIG TCP has no FreeBSD counterpart (TSO is capped by
//! the driver's `if_hw_tsomax`).

use super::Finding;
use super::Severity;
use super::host100g::judge::{G10, G40, G100, Verdict, finding};
use std::collections::BTreeMap;

/// The sysctls these items read (added to the live capture).
pub const SYSCTLS: [&str; 6] = [
    "kern.smp.threads_per_core",
    "machdep.hyperthreading_allowed",
    "hw.dmar.enable",
    "dev.hwpstate_intel",
    "net.inet.tcp.functions_default",
    "net.inet.tcp.pmtud_blackhole_detection",
];

fn wrong(title: String, severity: Severity, fix: &str) -> Verdict {
    Verdict::Wrong {
        title,
        severity,
        fix: Some(fix.to_string()),
    }
}

/// Intel Speed Shift's energy/performance preference per CPU (`dev.hwpstate_intel.N.epp`,
/// 0 = performance ... 100 = energy saving).
pub fn cpu_governor(s: &BTreeMap<String, String>) -> Verdict {
    let epp: Vec<(&str, &str)> = s
        .iter()
        .filter(|(k, _)| k.starts_with("dev.hwpstate_intel.") && k.ends_with(".epp"))
        .map(|(k, v)| (k.as_str(), v.trim()))
        .collect();
    if epp.is_empty() {
        return Verdict::Unknown(
            "no dev.hwpstate_intel.*.epp (no Intel Speed Shift driver: a virtual machine, an AMD \
             CPU or powerd's est/cpufreq): the clock's policy is not judged"
                .into(),
        );
    }
    let slow: Vec<&(&str, &str)> = epp.iter().filter(|(_, v)| *v != "0").collect();
    if slow.is_empty() {
        return Verdict::Ok(format!(
            "Intel Speed Shift prefers performance on all {} CPUs (epp 0)",
            epp.len()
        ));
    }
    let fix = slow
        .iter()
        .map(|(k, _)| format!("{k}=0"))
        .collect::<Vec<_>>()
        .join(" ");
    wrong(
        format!(
            "Intel Speed Shift leans to saving energy on {} of {} CPUs (epp {}): each packet's \
             cost follows the clock, and a clock that ramps lags bursts",
            slow.len(),
            epp.len(),
            slow.first().map_or("?", |(_, v)| v)
        ),
        Severity::Warning,
        &format!("sysctl {fix}"),
    )
}

/// Simultaneous multithreading: `kern.smp.threads_per_core`, and whether the scheduler may use
/// the siblings (`machdep.hyperthreading_allowed`, a loader tunable).
pub fn smt(s: &BTreeMap<String, String>) -> Verdict {
    let per_core = s.get("kern.smp.threads_per_core").map(|v| v.trim());
    let allowed = s.get("machdep.hyperthreading_allowed").map(|v| v.trim());
    match (per_core, allowed) {
        (None, _) => Verdict::Unknown("kern.smp.threads_per_core is unreadable".into()),
        (Some("1"), _) => Verdict::Ok("no SMT: one thread per core".into()),
        (Some(n), Some("0")) => Verdict::Ok(format!(
            "SMT siblings are unused ({n} threads per core, machdep.hyperthreading_allowed=0)"
        )),
        (Some(n), _) => wrong(
            format!(
                "SMT (hyper-threading) is on, {n} threads per core: the NIC's interrupts and the \
                 test's thread can share one physical core (the fix takes effect at the next boot)"
            ),
            Severity::Info,
            "sysrc -f /boot/loader.conf machdep.hyperthreading_allowed=0",
        ),
    }
}

/// Whether Intel VT-d translates DMA (`hw.dmar.enable`, off unless set at boot).
pub fn iommu(s: &BTreeMap<String, String>) -> Verdict {
    match s.get("hw.dmar.enable").map(|v| v.trim()) {
        Some("1") => wrong(
            "DMAR (the IOMMU) translates every DMA (hw.dmar.enable=1): at 100G the IOTLB misses \
             cost throughput (the fix takes effect at the next boot)"
                .into(),
            Severity::Warning,
            "sysrc -f /boot/loader.conf hw.dmar.enable=0",
        ),
        Some(v) => Verdict::Ok(format!("DMAR translation is off (hw.dmar.enable={v})")),
        None => Verdict::Ok("no DMAR translation (hw.dmar.enable is unset: off)".into()),
    }
}

/// Pacing: FreeBSD has no fq qdisc; the RACK and BBR TCP stacks pace, the default one does not.
pub fn pacing(s: &BTreeMap<String, String>) -> Verdict {
    match s.get("net.inet.tcp.functions_default").map(|v| v.trim()) {
        None => Verdict::Unknown("net.inet.tcp.functions_default is unreadable".into()),
        Some(v @ ("rack" | "bbr")) => Verdict::Ok(format!("the default TCP stack ({v}) paces")),
        Some(v) => wrong(
            format!(
                "the default TCP stack ({v}) does not pace: a fast sender's bursts overrun \
                 slower receivers and switch buffers (the RACK stack paces)"
            ),
            Severity::Warning,
            "kldload -n tcp_rack && sysctl net.inet.tcp.functions_default=rack && \
             sysrc kld_list+=tcp_rack && echo net.inet.tcp.functions_default=rack >> /etc/sysctl.conf",
        ),
    }
}

/// MTU black-hole detection (fasterdata: on for jumbo-frame hosts, so a path with a smaller MTU
/// whose ICMP is filtered still works).
pub fn mtu_probing(s: &BTreeMap<String, String>) -> Verdict {
    match s
        .get("net.inet.tcp.pmtud_blackhole_detection")
        .map(|v| v.trim())
    {
        None => Verdict::Unknown("net.inet.tcp.pmtud_blackhole_detection is unreadable".into()),
        Some("0") => wrong(
            "net.inet.tcp.pmtud_blackhole_detection is 0: with jumbo frames, a path whose \
             smaller MTU's ICMP is filtered stalls"
                .into(),
            Severity::Info,
            "sysctl net.inet.tcp.pmtud_blackhole_detection=1",
        ),
        Some(v) => Verdict::Ok(format!("net.inet.tcp.pmtud_blackhole_detection is {v}")),
    }
}

/// Every checklist item FreeBSD exposes, judged for a path of `rate` bit/s, appended to `out`.
pub fn check(s: &BTreeMap<String, String>, rate: Option<f64>, out: &mut Vec<Finding>) {
    let id = |item: &str| format!("host100g.{item}");
    let items: [(&str, f64, Verdict, &[&str]); 5] = [
        (
            "cpu_governor",
            G10,
            cpu_governor(s),
            &["dev.hwpstate_intel.0.epp"],
        ),
        (
            "smt",
            G100,
            smt(s),
            &[
                "kern.smp.threads_per_core",
                "machdep.hyperthreading_allowed",
            ],
        ),
        ("iommu", G40, iommu(s), &["hw.dmar.enable"]),
        (
            "pacing",
            G10,
            pacing(s),
            &["net.inet.tcp.functions_default"],
        ),
        (
            "mtu_probing",
            G10,
            mtu_probing(s),
            &["net.inet.tcp.pmtud_blackhole_detection"],
        ),
    ];
    for (item, from, verdict, keys) in items {
        let mut f = finding(id(item), from, rate, verdict);
        for k in keys {
            f = f.evidence(*k, super::opt(s.get(*k).cloned()));
        }
        out.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::doctor::CheckState;

    fn map(lines: &[(&str, &str)]) -> BTreeMap<String, String> {
        lines
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn untuned() -> BTreeMap<String, String> {
        map(&[
            ("kern.smp.threads_per_core", "2"),
            ("machdep.hyperthreading_allowed", "1"),
            ("hw.dmar.enable", "1"),
            ("dev.hwpstate_intel.0.epp", "50"),
            ("dev.hwpstate_intel.1.epp", "0"),
            ("net.inet.tcp.functions_default", "freebsd"),
            ("net.inet.tcp.pmtud_blackhole_detection", "0"),
        ])
    }

    fn tuned() -> BTreeMap<String, String> {
        map(&[
            ("kern.smp.threads_per_core", "2"),
            ("machdep.hyperthreading_allowed", "0"),
            ("hw.dmar.enable", "0"),
            ("dev.hwpstate_intel.0.epp", "0"),
            ("dev.hwpstate_intel.1.epp", "0"),
            ("net.inet.tcp.functions_default", "rack"),
            ("net.inet.tcp.pmtud_blackhole_detection", "1"),
        ])
    }

    fn run(s: &BTreeMap<String, String>, rate: Option<f64>) -> Vec<Finding> {
        let mut out = Vec::new();
        check(s, rate, &mut out);
        out
    }

    #[test]
    fn an_untuned_100g_host_gets_every_item_with_freebsds_fix() {
        let f = run(&untuned(), Some(100e9));
        assert_eq!(f.len(), 5);
        let get = |id: &str| f.iter().find(|x| x.id == id).unwrap();
        for (id, fix) in [
            ("host100g.cpu_governor", "sysctl dev.hwpstate_intel.0.epp=0"),
            (
                "host100g.smt",
                "sysrc -f /boot/loader.conf machdep.hyperthreading_allowed=0",
            ),
            (
                "host100g.iommu",
                "sysrc -f /boot/loader.conf hw.dmar.enable=0",
            ),
            (
                "host100g.pacing",
                "sysctl net.inet.tcp.functions_default=rack",
            ),
            (
                "host100g.mtu_probing",
                "sysctl net.inet.tcp.pmtud_blackhole_detection=1",
            ),
        ] {
            let x = get(id);
            assert_ne!(x.severity, Severity::Ok, "{x:?}");
            assert!(x.fix.as_deref().unwrap().contains(fix), "{x:?}");
            assert_eq!(x.checklist.as_ref().unwrap().state, CheckState::Finding);
        }
        // Only the CPU whose preference is not performance is in the fix.
        let gov = get("host100g.cpu_governor");
        assert!(!gov.fix.as_deref().unwrap().contains("intel.1"), "{gov:?}");
        assert!(gov.title.contains("1 of 2 CPUs"), "{}", gov.title);
    }

    #[test]
    fn a_tuned_host_is_ok_and_a_slow_path_needs_nothing() {
        for f in run(&tuned(), Some(100e9)) {
            assert_eq!(f.severity, Severity::Ok, "{f:?}");
        }
        // At 1 Gbit/s none of these items matters: all ok, each saying from which rate.
        for f in run(&untuned(), Some(1e9)) {
            assert_eq!(f.severity, Severity::Ok, "{f:?}");
            let item = f.checklist.unwrap();
            assert_eq!(item.state, CheckState::Ok);
            assert!(item.reason.unwrap().contains("matters from"));
        }
        // At 10 Gbit/s the 10G items are found and the 40G/100G ones are not.
        let f = run(&untuned(), Some(10e9));
        let found: Vec<&str> = f
            .iter()
            .filter(|x| x.severity != Severity::Ok)
            .map(|x| x.id.as_str())
            .collect();
        assert_eq!(
            found,
            [
                "host100g.cpu_governor",
                "host100g.pacing",
                "host100g.mtu_probing"
            ]
        );
    }

    #[test]
    fn unreadable_facts_are_unknown_and_say_why() {
        let f = run(&BTreeMap::new(), Some(100e9));
        let unknown: Vec<&str> = f
            .iter()
            .filter(|x| x.checklist.as_ref().unwrap().state == CheckState::Unknown)
            .map(|x| x.id.as_str())
            .collect();
        assert_eq!(
            unknown,
            [
                "host100g.cpu_governor",
                "host100g.smt",
                "host100g.pacing",
                "host100g.mtu_probing"
            ]
        );
        // hw.dmar.enable unset is off, FreeBSD's default.
        let iommu = f.iter().find(|x| x.id == "host100g.iommu").unwrap();
        assert_eq!(iommu.severity, Severity::Ok);
        // A single-threaded core has no SMT to turn off.
        let one = map(&[("kern.smp.threads_per_core", "1")]);
        assert!(matches!(smt(&one), Verdict::Ok(_)));
    }

    #[test]
    fn every_fix_is_a_shell_line() {
        for f in run(&untuned(), Some(100e9)) {
            let fix = f.fix.unwrap();
            let ok = std::process::Command::new("sh")
                .args(["-n", "-c", &fix])
                .status()
                .map(|s| s.success());
            if let Ok(ok) = ok {
                assert!(ok, "sh -n refuses {fix:?}");
            }
        }
    }
}
