//! Facts about a host, recorded once per campaign next to its numbers: kernel, CPU, interfaces
//! with driver and MTU, and the network sysctls that shape throughput. Reads `/proc` and
//! `/sys` under injectable roots; `/proc/sys/net` and `thread-self/net` follow the calling
//! thread's namespace, so a lab host's own values are read from a thread inside it.

use serde_json::{Map, Value, json};
use std::path::Path;

/// The sysctls recorded with every campaign (per host).
pub const SYSCTLS: [&str; 14] = [
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.netdev_max_backlog",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_no_metrics_save",
];

fn read_trim(p: &Path) -> Option<String> {
    crate::inputs::read_pseudo(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Reads one sysctl under `proc_root` (`net.ipv4.tcp_rmem` -> `sys/net/ipv4/tcp_rmem`).
pub fn sysctl(proc_root: &Path, key: &str) -> Option<String> {
    if !crate::platform::sysctl::valid_name(key) {
        return None;
    }
    read_trim(&proc_root.join("sys").join(key.replace('.', "/")))
        .map(|v| crate::platform::sysctl::normalize(&v))
}

/// The facts of the host (or, on Linux, the namespace) the calling thread is in, read from
/// this system's own sources: `/proc` and `/sys` on Linux, its tools on FreeBSD.
pub fn collect_live() -> Value {
    match crate::platform::THIS_OS {
        crate::platform::Os::Linux => collect(Path::new("/proc"), Path::new("/sys")),
        crate::platform::Os::FreeBsd => {
            crate::host::freebsd::facts(&crate::host::freebsd::Capture::live())
        }
    }
}

/// Collects the facts of the host (or namespace) the calling thread is in.
pub fn collect(proc_root: &Path, sys_root: &Path) -> Value {
    let cpuinfo = crate::inputs::read_pseudo(&proc_root.join("cpuinfo")).unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let mut sysctls = Map::new();
    for k in SYSCTLS {
        if let Some(v) = sysctl(proc_root, k) {
            sysctls.insert(k.to_string(), Value::String(v));
        }
    }
    let dev = proc_root.join("thread-self/net/dev");
    let dev = if dev.exists() {
        dev
    } else {
        proc_root.join("net/dev")
    };
    let names: Vec<String> =
        crate::host::counters::parse_dev(&crate::inputs::read_pseudo(&dev).unwrap_or_default())
            .into_keys()
            .collect();
    let interfaces: Vec<Value> = names
        .iter()
        .map(|n| {
            let base = sys_root.join("class/net").join(n);
            let driver = std::fs::read_link(base.join("device/driver"))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().to_string()));
            json!({
                "name": n,
                "mtu": read_trim(&base.join("mtu")).and_then(|v| v.parse::<u32>().ok()),
                "driver": driver,
                "speed_mbit": read_trim(&base.join("speed")).and_then(|v| v.parse::<i64>().ok()).filter(|v| *v > 0),
            })
        })
        .collect();
    json!({
        "kernel": read_trim(&proc_root.join("sys/kernel/osrelease")),
        "cpu_model": model,
        "cpus": cpus,
        "sysctls": sysctls,
        "interfaces": interfaces,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc");
        let s = dir.path().join("sys");
        std::fs::create_dir_all(p.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(p.join("sys/net/ipv4")).unwrap();
        std::fs::create_dir_all(p.join("net")).unwrap();
        std::fs::create_dir_all(s.join("class/net/eth0")).unwrap();
        std::fs::write(p.join("sys/kernel/osrelease"), "6.1.0\n").unwrap();
        std::fs::write(p.join("sys/net/ipv4/tcp_rmem"), "4096\t131072\t6291456\n").unwrap();
        std::fs::write(
            p.join("cpuinfo"),
            "processor\t: 0\nmodel name\t: Test CPU\nprocessor\t: 1\n",
        )
        .unwrap();
        std::fs::write(
            p.join("net/dev"),
            "h1\nh2\n  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
        )
        .unwrap();
        std::fs::write(s.join("class/net/eth0/mtu"), "9000\n").unwrap();
        let f = collect(&p, &s);
        assert_eq!(f["kernel"], "6.1.0");
        assert_eq!(f["cpus"], 2);
        assert_eq!(f["cpu_model"], "Test CPU");
        assert_eq!(f["sysctls"]["net.ipv4.tcp_rmem"], "4096 131072 6291456");
        assert_eq!(f["interfaces"][0]["mtu"], 9000);
        assert_eq!(sysctl(&p, "../../etc/passwd"), None);
    }
}
