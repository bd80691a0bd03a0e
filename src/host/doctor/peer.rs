//! Path checks against a running `netsweep server`: round-trip time (TCP connects), the largest
//! packet that passes without fragmentation (ping with DF set, bisected), and a short test in
//! each direction with a warning when they differ by more than 2x.

use super::{Finding, Severity};
use crate::traffic::client::{self, ClientConfig};
use crate::traffic::spec::{Direction, TestSpec};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// The fastest of five TCP connects: the path's round trip, as ping's minimum is. What a
/// connect takes beyond it is this host's and the peer's scheduling: a trial's median read
/// 10.7 ms to a guest that ping put at 0.67 ms, and a buffer "PROBLEM" came and went with it.
fn connect_rtt(addr: SocketAddr) -> Option<Duration> {
    let v: Vec<Duration> = (0..5)
        .filter_map(|_| {
            let t = Instant::now();
            TcpStream::connect_timeout(&addr, Duration::from_secs(2))
                .ok()
                .map(|_| t.elapsed())
        })
        .collect();
    v.into_iter().min()
}

/// Whether a packet of `size` bytes (IP total) reaches `ip` with fragmentation forbidden, in
/// one try; `None` without ping.
fn ping_once(ip: &str, size: u32, v6: bool, wait: Duration) -> Option<bool> {
    let header = if v6 { 48 } else { 28 };
    let payload = size.saturating_sub(header).to_string();
    let mut cmd = Command::new("ping");
    match crate::platform::THIS_OS {
        // iputils: -M do forbids fragmentation, -W waits in seconds.
        crate::platform::Os::Linux => cmd
            .arg(if v6 { "-6" } else { "-4" })
            .args(["-M", "do", "-c", "1", "-W"])
            .arg(format!("{:.3}", wait.as_secs_f64())),
        // FreeBSD: -D sets DF (IPv4; IPv6 never fragments in flight), -W waits in ms.
        crate::platform::Os::FreeBsd => cmd
            .args(if v6 { vec!["-6"] } else { vec!["-4", "-D"] })
            .args(["-c", "1", "-W"])
            .arg(wait.as_millis().to_string()),
    };
    let out = cmd.args(["-s", &payload, ip]).output().ok()?;
    Some(out.status.success())
}

/// Largest packet size that reaches `ip` unfragmented, up to `high`; `None` without ping.
/// Also step 1 of `netsweep rfc6349`.
pub fn path_mtu(ip: &str, high: u32, v6: bool, rtt: Duration) -> Option<u32> {
    // A reply later than this is taken as lost (then tried again): a few RTTs, within reason.
    let wait = (rtt * 4).clamp(Duration::from_millis(200), Duration::from_secs(2));
    bisect_mtu(high, &mut |size| ping_once(ip, size, v6, wait))
}

/// Tries per size before it counts as blocked, so random loss does not read as a smaller MTU.
const PROBE_TRIES: usize = 3;

/// Largest size in [1280, high] for which `probe` succeeds (0 if not even 1280), by bisection.
/// `probe` is one try; a size passes if any of `PROBE_TRIES` tries does.
fn bisect_mtu(high: u32, probe: &mut dyn FnMut(u32) -> Option<bool>) -> Option<u32> {
    let mut passes = |size: u32| -> Option<bool> {
        for _ in 0..PROBE_TRIES {
            if probe(size)? {
                return Some(true);
            }
        }
        Some(false)
    };
    let low = 1280;
    if passes(high)? {
        return Some(high);
    }
    if !passes(low)? {
        return Some(0);
    }
    let (mut ok, mut bad) = (low, high);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if passes(mid)? { ok = mid } else { bad = mid }
    }
    Some(ok)
}

fn short_test(addr: SocketAddr, direction: Direction) -> Result<f64, String> {
    let spec = TestSpec {
        direction,
        omit: Duration::from_millis(500),
        ..TestSpec::tcp(Duration::from_secs(2))
    };
    client::run_test(
        &ClientConfig::new(addr),
        &spec,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .map(|r| r.summary.bits_per_second)
    .map_err(|e| e.message)
}

/// The device the route to `ip` leaves by (`ip route get`), for a fix that pastes as printed.
fn route_device(ip: &str) -> Option<String> {
    let out = std::process::Command::new("ip")
        .args(["route", "get", ip])
        .output()
        .ok()?;
    device_of_route(&String::from_utf8_lossy(&out.stdout))
}

/// The word after `dev` in `ip route get`'s answer.
fn device_of_route(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    words.find(|w| *w == "dev")?;
    words.next().map(str::to_string)
}

/// The two short tests' rates side by side: past `ASYMMETRY_WARNING` the classic sign of an
/// emulated NIC or an offload bug; past `ASYMMETRY_NOTE` worth a look at the slower direction's
/// receiver (a trial's 1.6x, beside 32% retransmits, was called ok).
fn asymmetry(up: f64, down: f64) -> Finding {
    let ratio = up.max(down) / up.min(down).max(1.0);
    let rates = format!(
        "to the peer {}, from the peer {}",
        crate::units::BitRate(up),
        crate::units::BitRate(down)
    );
    let slower = if up < down {
        "the peer (it receives the slower direction)"
    } else {
        "this host (it receives the slower direction)"
    };
    let f = if ratio > ASYMMETRY_WARNING {
        Finding::new(
            "peer.asymmetry",
            Severity::Warning,
            format!("the two directions differ by {ratio:.1}x ({rates}): the classic sign of an emulated NIC or an offload bug"),
        )
        .fix("check both hosts' NIC drivers (virtio, not rtl8139/e1000) and offloads (ethtool -k)")
    } else if ratio > ASYMMETRY_NOTE {
        Finding::new(
            "peer.asymmetry",
            Severity::Info,
            format!("the two directions differ by {ratio:.1}x ({rates})"),
        )
        .fix(format!(
            "run `netsweep doctor` on {slower}: its drops, retransmissions and NIC driver"
        ))
    } else {
        Finding::new("peer.asymmetry", Severity::Ok, rates)
    };
    f.evidence("upload_bps", format!("{up:.0}"))
        .evidence("download_bps", format!("{down:.0}"))
}

/// A difference between the directions that is a warning, and one that is worth a note.
const ASYMMETRY_WARNING: f64 = 2.0;
const ASYMMETRY_NOTE: f64 = 1.25;

/// What the path checks found.
#[derive(Debug, Clone)]
pub struct PeerCheck {
    pub findings: Vec<Finding>,
    /// The median TCP connect time; `None` when the peer did not answer.
    pub rtt: Option<Duration>,
    /// The short tests' rates, when both ran.
    pub measured: Option<super::measured::Measured>,
}

/// Every path check.
pub fn check(addr: SocketAddr, run_tests: bool) -> PeerCheck {
    let mut out = Vec::new();
    let mut measured = None;
    let Some(rtt) = connect_rtt(addr) else {
        out.push(
            Finding::new(
                "peer.unreachable",
                Severity::Problem,
                format!("cannot connect to {addr}"),
            )
            .fix(format!(
                "start `netsweep server -p {}` there, or give the port its server listens on \
                 (--peer {}), and check firewalls; the peer checks need it",
                addr.port(),
                match addr.ip() {
                    std::net::IpAddr::V4(ip) => format!("{ip}:PORT"),
                    std::net::IpAddr::V6(ip) => format!("[{ip}]:PORT"),
                }
            )),
        );
        return PeerCheck {
            findings: out,
            rtt: None,
            measured,
        };
    };
    out.push(
        Finding::new(
            "peer.rtt",
            Severity::Info,
            format!(
                "round-trip time to {addr}: {:.3} ms (TCP connect, median of 5)",
                rtt.as_secs_f64() * 1e3
            ),
        )
        .evidence("rtt_ms", format!("{:.3}", rtt.as_secs_f64() * 1e3)),
    );
    let ip = addr.ip().to_string();
    match crate::platform::sockopt::route_mtu(addr) {
        Some(mtu) => match path_mtu(&ip, mtu, addr.is_ipv6(), rtt) {
            Some(p) if p < mtu => out.push(
                Finding::new("peer.pmtu", Severity::Problem, format!("packets larger than {p} bytes do not reach {ip} although this host sends up to {mtu}: an MTU mismatch on the path (jumbo frames on one side only?)"))
                    .evidence("interface_mtu", mtu)
                    .evidence("path_mtu", p)
                    .fix(format!("use the same MTU on both ends (ip link set dev {} mtu {p} here, or raise the peer's and every hop's MTU to {mtu})", route_device(&ip).unwrap_or_else(|| "IFACE".into()))),
            ),
            Some(p) => out.push(Finding::new("peer.pmtu", Severity::Ok, format!("packets of the full {p}-byte MTU reach {ip} unfragmented")).evidence("path_mtu", p)),
            None => out.push(Finding::new("peer.pmtu", Severity::Info, "path MTU not probed: the ping command is missing").fix(crate::platform::process::install_hint("iputils-ping"))),
        },
        None => out.push(Finding::new("peer.pmtu", Severity::Info, "path MTU not probed: no route MTU")),
    }
    if run_tests {
        match (
            short_test(addr, Direction::Forward),
            short_test(addr, Direction::Reverse),
        ) {
            (Ok(up), Ok(down)) => {
                measured = Some(super::measured::Measured {
                    to_peer_bps: up,
                    from_peer_bps: down,
                });
                out.push(asymmetry(up, down));
            }
            (a, b) => out.push(Finding::new(
                "peer.test_failed",
                Severity::Warning,
                format!(
                    "short tests failed: {}",
                    [a.err(), b.err()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )),
        }
    }
    PeerCheck {
        findings: out,
        rtt: Some(rtt),
        measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: one ping per size, so a single lost reply on a lossy path read as "too big"
    /// and the doctor reported a smaller path MTU than the real one.
    #[test]
    fn directions_differing_by_a_quarter_are_noted_and_by_twice_warned() {
        assert_eq!(asymmetry(96e6, 95e6).severity, Severity::Ok);
        let note = asymmetry(487e6, 774e6);
        assert_eq!(note.severity, Severity::Info);
        assert!(note.title.contains("differ by 1.6x"), "{note:?}");
        assert!(note.fix.unwrap().contains("on the peer"));
        assert_eq!(asymmetry(10e6, 500e6).severity, Severity::Warning);
    }

    #[test]
    fn the_route_names_its_device() {
        assert_eq!(
            device_of_route("198.18.0.2 dev nsw-zm-a src 198.18.0.1 uid 0 \n    cache \n"),
            Some("nsw-zm-a".into())
        );
        assert_eq!(
            device_of_route("RTNETLINK answers: Network is unreachable"),
            None
        );
    }

    #[test]
    fn lost_probes_do_not_shrink_the_path_mtu() {
        // A 1504-byte path where the first two tries of every size are lost.
        let mut tries: std::collections::HashMap<u32, usize> = Default::default();
        let mut lossy = |size: u32| {
            let n = tries.entry(size).or_default();
            *n += 1;
            Some(*n > 2 && size <= 1504)
        };
        assert_eq!(bisect_mtu(9000, &mut lossy), Some(1504));
        let mut clean = |size: u32| Some(size <= 9000);
        assert_eq!(bisect_mtu(9000, &mut clean), Some(9000));
        let mut blocked = |_| Some(false);
        assert_eq!(bisect_mtu(9000, &mut blocked), Some(0));
        let mut no_ping = |_| None;
        assert_eq!(bisect_mtu(9000, &mut no_ping), None);
    }
}
