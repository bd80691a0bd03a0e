//! The honest cross-check (root; CI runs it): on one lab path, netsweep→iperf3-server,
//! iperf3→netsweep-server and netsweep→netsweep agree on TCP goodput and on UDP loss at a paced
//! rate, in both directions, through a rate limit with delay and through random loss.

mod common;

use netsweep::lab::{EmulatorChoice, Host, Lab, PathConfig};
use netsweep::traffic::client::{self, ClientConfig, PeerProtocol};
use netsweep::traffic::spec::{Direction, ServerLimits, TestSpec};
use serde_json::Value;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const IPERF3_PORT: u16 = 5201;

use common::KillOnDrop as Proc;

fn lab(tag: &str, dir: &tempfile::TempDir, path: PathConfig) -> Lab {
    common::lab_up(tag, dir, path, EmulatorChoice::Userspace)
}

/// One direction's receiver goodput and UDP loss, whoever measured them.
#[derive(Debug, Clone, Copy)]
struct Figures {
    bits_per_second: f64,
    lost_percent: Option<f64>,
    /// UDP: datagrams sent and lost, as the receiver counted them.
    packets: Option<u64>,
    lost_packets: Option<u64>,
    /// UDP: the receiver's losses per interval, added up, where its intervals have them.
    interval_lost: Option<u64>,
    /// UDP: the receiver's own summary of its losses, where the client's is another's (an
    /// iperf3 client's summary of a netsweep server's receiving: 3.12 adds the warm-up's).
    receiver_lost: Option<u64>,
    /// The loss includes the warm-up's, as the client warned: an iperf3 server before 3.13
    /// (Debian's 3.12) reports its losses from the start only.
    losses_from_start: bool,
    /// Datagrams this host dropped during the run, not the path: the receiving namespace's
    /// kernel (socket buffer full, `Udp RcvbufErrors`) and the sending namespace's device (the
    /// userspace delay line fell behind). The delay line's own drops are the path's.
    host_drops: u64,
}

impl Figures {
    /// UDP loss the path caused: the receiver's lost count less the host's own drops.
    /// The receiver's own count where the client's is another's (iperf3 3.12's client adds
    /// the warm-up's losses to a server's; 3.13 on take them out).
    fn path_loss_percent(&self) -> f64 {
        let (Some(packets), Some(lost)) = (self.packets, self.receiver_lost.or(self.lost_packets))
        else {
            return self.lost_percent.unwrap_or(f64::NAN);
        };
        lost.saturating_sub(self.host_drops) as f64 * 100.0 / packets.max(1) as f64
    }
}

/// Runs `f` and counts the datagrams of `direction` that the host, not the path, dropped
/// meanwhile: the receiving namespace's kernel at a full UDP socket buffer (its receiver fell
/// behind) and the sending namespace's device (the delay line fell behind). Both happen only on
/// a busy host.
fn host_drops<T>(lab: &Lab, direction: Direction, f: impl FnOnce() -> T) -> (T, u64) {
    use netsweep::host::counters;
    let (from, to) = match direction {
        Direction::Reverse => (Host::B, Host::A),
        _ => (Host::A, Host::B),
    };
    let snap = |h| lab.run_in(h, counters::read_live).expect("counters");
    let (s0, r0) = (snap(from), snap(to));
    let out = f();
    let (s1, r1) = (snap(from), snap(to));
    let (ds, dr) = (counters::delta(&s0, &s1), counters::delta(&r0, &r1));
    let proto = |k: &str| u64::try_from(dr.protocol.get(k).copied().unwrap_or(0)).unwrap_or(0);
    let kernel = proto("Udp.RcvbufErrors").max(proto("Udp.InErrors"));
    let device = ds
        .interfaces
        .get(&lab.device(from))
        .map_or(0, |c| c.tx_dropped);
    if kernel + device > 0 {
        eprintln!(
            "{direction:?}: the host dropped {kernel} (receiver's socket) + {device} (sender's \
             device)"
        );
    }
    (out, kernel + device)
}

/// One pairing's figures with the host's own drops of its direction (`host_drops`).
fn with_host_drops(lab: &Lab, direction: Direction, f: impl FnOnce() -> Figures) -> Figures {
    let (fig, dropped) = host_drops(lab, direction, f);
    Figures {
        host_drops: dropped,
        ..fig
    }
}

/// netsweep's client in host a against `addr` in host b, speaking `peer`.
fn netsweep_client(
    lab: &Lab,
    addr: std::net::SocketAddr,
    peer: PeerProtocol,
    spec: &TestSpec,
) -> Figures {
    let cfg = ClientConfig {
        peer,
        ..ClientConfig::new(addr)
    };
    let r = lab
        .run_in(Host::A, || {
            client::run_test(&cfg, spec, &AtomicBool::new(false), &mut |_| {})
        })
        .expect("thread in a")
        .unwrap_or_else(|e| panic!("{peer:?} {spec:?}: {e}"));
    assert!(r.inconsistencies.is_empty(), "{:?}", r.inconsistencies);
    Figures {
        bits_per_second: r.summary.bits_per_second,
        lost_percent: r.summary.lost_percent,
        packets: r.summary.packets,
        lost_packets: r.summary.lost_packets,
        interval_lost: r
            .intervals
            .iter()
            .filter(|iv| !iv.omitted)
            .flat_map(|iv| &iv.streams)
            .map(|s| s.lost_packets)
            .sum(),
        receiver_lost: None,
        losses_from_start: r
            .warnings
            .iter()
            .any(|w| w.contains("which of its losses were in the warm-up")),
        host_drops: 0,
    }
}

/// Debian's iperf3 client in host a against netsweep's server in host b.
fn iperf3_client(lab: &Lab, port: u16, spec: &TestSpec) -> Figures {
    let mut c = lab.command(Host::A, "iperf3");
    c.args([
        "-c",
        &Host::B.address().to_string(),
        "-p",
        &port.to_string(),
        "-J",
    ]);
    c.args([
        "-t",
        &spec.duration.as_secs().to_string(),
        "-O",
        &spec.omit.as_secs().to_string(),
    ]);
    if spec.direction == Direction::Reverse {
        c.arg("-R");
    } else {
        // The server's own document: its intervals as the receiver.
        c.arg("--get-server-output");
    }
    if spec.protocol == netsweep::traffic::spec::Protocol::Udp {
        c.args([
            "-u",
            "-l",
            "1400",
            "-b",
            &format!("{}", spec.bitrate_bps as u64),
        ]);
    }
    let udp = spec.protocol == netsweep::traffic::spec::Protocol::Udp;
    let mut attempt = 0;
    let doc = loop {
        attempt += 1;
        let out = c.output().expect("iperf3 -c");
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let error = doc["error"].as_str().unwrap_or_default();
        // iperf3's UDP hello is one datagram each way, never repeated: on a lossy path a lost
        // hello or answer ends its client with this error (against iperf3's own server too).
        if udp && attempt < 3 && error.starts_with("unable to read from stream socket") {
            eprintln!("iperf3 client lost its UDP hello on the lossy path ({error}); again");
            continue;
        }
        break doc;
    };
    assert!(doc.get("error").is_none(), "{}", doc["error"]);
    let end = &doc["end"];
    if udp {
        Figures {
            bits_per_second: end["sum"]["bits_per_second"].as_f64().unwrap(),
            lost_percent: end["sum"]["lost_percent"].as_f64(),
            packets: end["sum"]["packets"].as_u64(),
            lost_packets: end["sum"]["lost_packets"].as_u64(),
            // The receiver's intervals and summary: the server's text with a forward test.
            receiver_lost: doc["server_output_text"]
                .as_str()
                .and_then(|t| text_losses(t).1),
            interval_lost: match doc["server_output_text"].as_str() {
                Some(text) => text_losses(text).0,
                None => doc["intervals"].as_array().and_then(|ivs| {
                    ivs.iter()
                        .filter(|iv| iv["sum"]["omitted"] == false)
                        .map(|iv| iv["sum"]["lost_packets"].as_u64())
                        .sum()
                }),
            },
            losses_from_start: false,
            host_drops: 0,
        }
    } else {
        Figures {
            bits_per_second: end["sum_received"]["bits_per_second"].as_f64().unwrap(),
            lost_percent: None,
            packets: None,
            lost_packets: None,
            interval_lost: None,
            receiver_lost: None,
            losses_from_start: false,
            host_drops: 0,
        }
    }
}

/// The losses of a UDP receiver's text as iperf3 writes it (`... 0.008 ms  3/900 (0.33%)`):
/// its measured interval lines' added up (the warm-up's, `(omitted)`, left out), and its
/// summary's (`... receiver`).
fn text_losses(text: &str) -> (Option<u64>, Option<u64>) {
    let lost = |l: &str| -> Option<u64> {
        l.split_whitespace()
            .find_map(|w| w.split_once('/')?.0.parse().ok())
    };
    let intervals: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("[  1]") && l.ends_with(')') && !l.ends_with("(omitted)"))
        .filter_map(lost)
        .collect();
    let summary = text
        .lines()
        .find(|l| l.starts_with("[  1]") && l.ends_with("receiver"))
        .and_then(lost);
    (
        (!intervals.is_empty()).then(|| intervals.iter().sum()),
        summary,
    )
}

/// The three pairings on one spec: netsweep→netsweep, netsweep→iperf3, iperf3→netsweep.
fn three_ways(lab: &Lab, spec: &TestSpec) -> [Figures; 3] {
    let own = lab
        .start_server(Host::B, ServerLimits::default())
        .expect("netsweep server in b");
    let d = spec.direction;
    let ns_ns = with_host_drops(lab, d, || {
        netsweep_client(lab, own.addr, PeerProtocol::Netsweep, spec)
    });
    let ip_ns = with_host_drops(lab, d, || iperf3_client(lab, own.addr.port(), spec));
    drop(own);
    let _iperf3 = Proc(
        lab.command(Host::B, "iperf3")
            .args(["-s", "-p", &IPERF3_PORT.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s in b"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let addr = std::net::SocketAddr::new(Host::B.address(), IPERF3_PORT);
    let ns_ip = with_host_drops(lab, d, || {
        netsweep_client(lab, addr, PeerProtocol::Iperf3, spec)
    });
    [ns_ns, ns_ip, ip_ns]
}

fn spread(values: &[f64]) -> f64 {
    let max = values.iter().cloned().fold(f64::MIN, f64::max);
    let min = values.iter().cloned().fold(f64::MAX, f64::min);
    max / min
}

#[test]
fn the_three_pairings_agree_through_a_rate_limit_and_through_loss() {
    if !common::root_or_skip("the_three_pairings_agree_through_a_rate_limit_and_through_loss")
        || !common::tool_or_skip(
            "the_three_pairings_agree_through_a_rate_limit_and_through_loss",
            "iperf3",
        )
    {
        return;
    }
    // One at a time: each is sensitive to a starved receiver, and together they would starve
    // each other on a 2-core host.
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let limited = lab(
        "i3r",
        &dir,
        PathConfig {
            rate_bps: Some(200e6),
            delay: Duration::from_millis(5),
            ..PathConfig::default()
        },
    );
    for direction in [Direction::Forward, Direction::Reverse] {
        let spec = TestSpec {
            direction,
            omit: Duration::from_secs(1),
            calibration: Duration::ZERO,
            ..TestSpec::tcp(Duration::from_secs(4))
        };
        // Each run is bounded by the path's rate. On a shared machine (CI's other work) a run
        // can only lose rate to the host, never gain past the path: the pairings are compared
        // by their best of up to 3 interleaved rounds, stopping once they agree (regression:
        // "Reverse TCP disagree: [178338576.0, 193064736.0, 193069514.47]" with one core busy).
        let mut best = [0.0f64; 3];
        let mut seen = Vec::new();
        for _ in 0..3 {
            let f = three_ways(&limited, &spec);
            for (b, x) in best.iter_mut().zip(&f) {
                assert!(
                    x.bits_per_second <= 200e6 * 1.02,
                    "{direction:?} TCP past the path: {f:?}"
                );
                *b = b.max(x.bits_per_second);
            }
            seen.push(f.iter().map(|x| x.bits_per_second).collect::<Vec<_>>());
            if spread(&best) <= 1.08 && best.iter().all(|r| *r >= 200e6 * 0.82) {
                break;
            }
        }
        assert!(
            best.iter().all(|r| *r >= 200e6 * 0.82),
            "{direction:?} TCP below the path in every round: {seen:?}"
        );
        assert!(
            spread(&best) <= 1.08,
            "{direction:?} TCP disagree in every round: {seen:?}"
        );
        let spec = TestSpec {
            direction,
            bitrate_bps: 100e6,
            length_bytes: 1400,
            ..TestSpec::udp(Duration::from_secs(3))
        };
        // As above: a receiver the busy host descheduled overflows its socket (the host's
        // drops, said by the test: "the host dropped 694 (receiver's socket)", one pairing at
        // 96.5 of 100 Mbit/s with one core busy), never the path's; the best of up to 3 rounds.
        let mut best = [0.0f64; 3];
        let mut seen = Vec::new();
        for _ in 0..3 {
            let f = three_ways(&limited, &spec);
            for x in &f {
                assert!(x.path_loss_percent() < 0.5, "{direction:?} UDP {f:?}");
            }
            for (b, x) in best.iter_mut().zip(&f) {
                *b = b.max(x.bits_per_second);
            }
            seen.push(f.iter().map(|x| x.bits_per_second).collect::<Vec<_>>());
            if spread(&best) <= 1.03 {
                break;
            }
        }
        assert!(
            spread(&best) <= 1.03,
            "{direction:?} UDP rates disagree in every round: {seen:?}"
        );
    }
    drop(limited);
    let lossy = lab(
        "i3l",
        &dir,
        PathConfig {
            delay: Duration::from_millis(1),
            loss_percent: 1.0,
            ..PathConfig::default()
        },
    );
    for direction in [Direction::Forward, Direction::Reverse] {
        // With a warm-up: its losses are in no figure of the test (regression: a netsweep
        // server's summary counted them, its datagrams not).
        let spec = TestSpec {
            direction,
            bitrate_bps: 50e6,
            length_bytes: 1400,
            omit: Duration::from_secs(1),
            calibration: Duration::ZERO,
            ..TestSpec::udp(Duration::from_secs(4))
        };
        // The pairings must agree on the path's loss. A busy host (CI's other work) adds its own
        // drops, each counted by the kernel or the delay line, and they are taken out here
        // (regression: "Reverse loss [1.10, 0.95, 10.74] on a 1% path" in CI).
        let f = three_ways(&lossy, &spec);
        // A loss the client warned includes the warm-up's is left out (iperf3 3.12's server).
        let losses: Vec<f64> = f
            .iter()
            .filter(|x| !x.losses_from_start)
            .map(Figures::path_loss_percent)
            .collect();
        for l in &losses {
            assert!(
                (0.6..=1.4).contains(l),
                "{direction:?} loss {losses:?} on a 1% path"
            );
        }
        let (lo, hi) = losses
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
        assert!(hi - lo <= 0.4, "{direction:?} losses disagree: {losses:?}");
        // Each receiver's intervals count the losses the summary has (iperf3 counts each
        // interval's from its sequence numbers; a loss at an interval's end falls in the next):
        // netsweep's server and client receiving from iperf3, and iperf3 receiving. Only a
        // netsweep client sending to iperf3's server has none (iperf3 reports no intervals).
        let [ns_ns, ns_ip, ip_ns] = &f;
        let mut with_intervals = vec![ns_ns, ip_ns];
        if direction == Direction::Reverse {
            with_intervals.push(ns_ip);
        }
        // The summary also counts the losses before datagrams read after the last interval
        // closed (in the linger): with a core kept busy, a reverse test from iperf3's server
        // measured 170 by interval against 176 in all.
        for x in with_intervals {
            let per_interval = x.interval_lost.unwrap_or(0);
            let lost = x.receiver_lost.or(x.lost_packets).unwrap_or(0);
            assert!(
                per_interval > 0 && per_interval.abs_diff(lost) <= 3 + lost / 25,
                "{direction:?}: {per_interval} lost by interval, {lost} in all: {f:?}"
            );
        }
    }
}

/// Regression (issue 41): iperf3 3.12's client with a UDP count in reverse (`-u -k 1K -R`)
/// ends only once it has *received* the count; netsweep's server sent exactly the count, so
/// one lost datagram left the client waiting for its 120 s receive timeout. At 1% loss about
/// ten of the 1024 datagrams are lost in every run: the server now tops up after a grace and
/// the client ends within seconds, the server having sent the count and little more.
#[test]
fn an_iperf3_client_receiving_a_udp_count_ends_through_loss() {
    let test = "an_iperf3_client_receiving_a_udp_count_ends_through_loss";
    if !common::root_or_skip(test) || !common::tool_or_skip(test, "iperf3") {
        return;
    }
    // One at a time: each is sensitive to a starved receiver, and together they would starve
    // each other on a 2-core host.
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let lossy = lab(
        "i3c",
        &dir,
        PathConfig {
            delay: Duration::from_millis(1),
            loss_percent: 1.0,
            ..PathConfig::default()
        },
    );
    let server = lossy
        .start_server(Host::B, ServerLimits::default())
        .expect("netsweep server in b");
    // The count in datagrams of 1400 bytes: -k 1K is 1024 blocks; -n 1400000 is 1000.
    for (count_args, count) in [(["-k", "1K"], 1024u64), (["-n", "1400000"], 1000)] {
        let mut attempt = 0;
        let ((doc, took), dropped) = host_drops(&lossy, Direction::Reverse, || {
            loop {
                attempt += 1;
                let out_path = dir.path().join("iperf3.json");
                let mut c = lossy.command(Host::A, "iperf3");
                c.args(["-c", &Host::B.address().to_string()])
                    .args(["-p", &server.addr.port().to_string()])
                    .args(["-u", "-b", "100M", "-l", "1400", "-R", "-J"])
                    .args(count_args)
                    .stdin(Stdio::null())
                    .stdout(std::fs::File::create(&out_path).unwrap())
                    .stderr(Stdio::null());
                let started = std::time::Instant::now();
                let mut child = Proc(c.spawn().expect("iperf3 -c in a"));
                // Bounded: the old server left the client waiting 120 s; give up after 30.
                let ended = common::wait_bounded_check(Duration::from_secs(30), || {
                    child.0.try_wait().ok().flatten().is_some()
                });
                let took = started.elapsed();
                drop(child);
                assert!(
                    ended,
                    "{count_args:?}: iperf3's client still waiting after {took:?}"
                );
                let doc: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap())
                    .unwrap_or_else(|e| panic!("{count_args:?}: {e}"));
                let error = doc["error"].as_str().unwrap_or_default();
                // A lost UDP hello ends iperf3's client at once (see `iperf3_client`): again.
                if attempt < 3 && error.starts_with("unable to read from stream socket") {
                    continue;
                }
                break (doc, took);
            }
        });
        assert!(doc.get("error").is_none(), "{}", doc["error"]);
        let sum = &doc["end"]["sum"];
        eprintln!(
            "{count_args:?}: ended after {took:?}, end.sum {sum}, {dropped} dropped by the host \
             (not the path)"
        );
        // Within seconds, not iperf3's 120 s receive timeout. Datagrams the receiving host
        // dropped itself (a starved iperf3 on a busy host: CI had 941 of 1965 lost) are topped
        // up like the path's, which takes longer (regression: "took 11.0s").
        let limit = if dropped == 0 { 10 } else { 25 };
        assert!(
            took < Duration::from_secs(limit),
            "{count_args:?}: took {took:?} ({dropped} dropped by the host)"
        );
        // The highest sequence number the client saw: at least the count, and the server's
        // top-up stays small (the lost datagrams and a few more while TEST_END travels).
        let packets = sum["packets"].as_u64().unwrap();
        let lost = sum["lost_packets"].as_u64().unwrap();
        assert!(
            (count..=count + count / 20 + 10 + dropped).contains(&packets),
            "{count_args:?}: {packets} datagrams for a count of {count} ({lost} lost, \
             {dropped} of them by the receiving host)"
        );
        assert!(packets - lost >= count, "{count_args:?}: {sum}");
    }
}
