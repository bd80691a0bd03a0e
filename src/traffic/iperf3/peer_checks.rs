//! Range checks of an iperf3 server's results document against the test this end ran (pure):
//! its seconds lie within the test, no stream claims bytes in no time or faster than any link,
//! its byte and datagram counts agree with what this end sent or received (within a stated
//! tolerance), its loss, jitter and CPU are possible. `peer_result::assemble` calls `check`;
//! every sentence it returns becomes an `INCONSISTENT` line and a failed test.

use super::wire::{Results, StreamResult};
use crate::traffic::measure::{Role, StreamReport};
use crate::traffic::result::checks::{MAX_RATE_BPS, max_cpu_percent, time_slack};
use crate::traffic::result::saturating_sum;
use crate::traffic::spec::{Protocol, TestSpec};

/// A stream's seconds below this with bytes counted is a zero-length interval.
pub const MIN_SECONDS: f64 = 0.001;

/// Bytes a peer's count may differ from this end's in the direction physics allows: what sat
/// in socket buffers and on the path when the test's clocks stopped. The largest of 64 MiB,
/// a quarter of this end's count, and four times the asked window.
pub fn byte_slack(spec: &TestSpec, ours: u64) -> u64 {
    let window = spec.window_bytes.unwrap_or(0).saturating_mul(4);
    (64u64 << 20).max(ours / 4).max(window)
}

/// How far an iperf3 server's counted seconds may lie from this end's for one stream: its
/// clock starts when it says TEST_RUNNING and stops when it reads TEST_END, so the control
/// round trips and the senders' last writes (`client::SENDERS_GRACE`) lie between them: a
/// quarter second and 5% of the test.
pub fn time_base_slack(duration: std::time::Duration) -> f64 {
    0.25 + 0.05 * duration.as_secs_f64()
}

/// The contradictions between the server's results and the test, one sentence each.
///
/// `far_buffer` is the largest receive buffer the server's kernel may hold unread (see
/// `below_acked`); 0 when unknown.
pub fn check(
    spec: &TestSpec,
    peer: &Results,
    mine: &[&StreamReport],
    roles: &[Role],
    far_buffer: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, report) in mine.iter().enumerate() {
        let Some(t) = peer.stream(super::wire::stream_id(i)) else {
            continue;
        };
        let role = roles.get(i).copied().unwrap_or(Role::Sender);
        out.extend(
            timing(spec, t)
                .into_iter()
                .map(|p| format!("stream {i}: {p}")),
        );
        out.extend(
            counts(spec, t, report, role, far_buffer)
                .into_iter()
                .map(|p| format!("stream {i}: {p}")),
        );
    }
    let most = max_cpu_percent(spec);
    for (name, v) in [
        ("total", peer.cpu_total),
        ("user", peer.cpu_user),
        ("system", peer.cpu_system),
    ] {
        if !(v.is_finite() && (0.0..=most).contains(&v)) {
            out.push(format!(
                "the iperf3 server's {name} CPU of {}% is outside 0-{most}% (at most 100% for \
                 each of its threads)",
                short(v)
            ));
        }
    }
    out
}

/// The server's seconds: within the test and its slack, not zero with bytes, not faster than
/// any link.
fn timing(spec: &TestSpec, t: &StreamResult) -> Vec<String> {
    let mut out = Vec::new();
    let wall = spec.wall_time();
    let limit = wall.as_secs_f64() + time_slack(wall);
    let start = t.start_time.unwrap_or(0.0);
    let Some(end) = t.end_time else {
        return out;
    };
    if !(start.is_finite() && end.is_finite() && start >= 0.0 && end >= start) {
        out.push(format!(
            "the iperf3 server's interval {}-{} s is not an interval",
            short(start),
            short(end)
        ));
        return out;
    }
    if end > limit {
        out.push(format!(
            "the iperf3 server's interval {start:.2}-{} s ends after the {:.2} s test (allowed: \
             {limit:.2} s)",
            short(end),
            wall.as_secs_f64()
        ));
    }
    let secs = end - start;
    let ours = spec.duration.as_secs_f64();
    let apart = time_base_slack(spec.duration);
    if spec.omit.is_zero() && t.bytes > 0 && (secs - ours).abs() > apart {
        out.push(format!(
            "the iperf3 server counted over {secs:.3} s where this end counted over {ours:.3} s \
             (more than {apart:.3} s apart): rates over the two clocks cannot be compared"
        ));
    }
    if t.bytes > 0 && secs < MIN_SECONDS {
        out.push(format!(
            "the iperf3 server counts {} bytes in a zero-length interval {start:.3}-{end:.3} s",
            t.bytes
        ));
    } else if secs >= MIN_SECONDS && t.bytes as f64 * 8.0 / secs > MAX_RATE_BPS {
        out.push(format!(
            "the iperf3 server counts {} bytes in {secs:.3} s, faster than any link ({:e} bit/s)",
            t.bytes, MAX_RATE_BPS
        ));
    }
    out
}

/// The server's counts against this end's: bytes, datagrams, loss and jitter.
fn counts(
    spec: &TestSpec,
    t: &StreamResult,
    mine: &StreamReport,
    role: Role,
    far_buffer: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    let wall_s = spec.wall_time().as_secs_f64();
    let ours =
        saturating_sum(mine.intervals.iter().map(|x| x.bytes)).saturating_add(mine.tail_bytes);
    let slack = byte_slack(spec, ours);
    let tcp = spec.protocol == Protocol::Tcp;
    match role {
        // The server received what this end sent: a TCP receiver gets nearly all of it.
        Role::Sender if tcp && spec.omit.is_zero() && t.bytes.saturating_add(slack) < ours => {
            out.push(format!(
                "the iperf3 server received {} bytes of the {ours} sent (more than {slack} bytes \
                 short)",
                t.bytes
            ));
        }
        // The server sent what this end received, and what was still in flight at the end.
        Role::Receiver if tcp && t.bytes > ours.saturating_add(slack) => {
            out.push(format!(
                "the iperf3 server says it sent {} bytes, {ours} arrived (more than {slack} bytes \
                 apart)",
                t.bytes
            ));
        }
        _ => {}
    }
    // Without -O both ends count from the start (with it, the server leaves the omitted
    // seconds out and this end's figures do not).
    if tcp && spec.omit.is_zero() {
        match role {
            Role::Sender => out.extend(below_acked(spec, t.bytes, mine, far_buffer)),
            Role::Receiver => out.extend(below_received(spec, t.bytes, mine, ours, slack)),
        }
    }
    if tcp && !spec.omit.is_zero() && role == Role::Sender {
        out.extend(below_sent_after_warmup(spec, t.bytes, mine, far_buffer));
    }
    if spec.protocol == Protocol::Udp {
        let claimed = "the iperf3 server";
        if !(t.jitter_s.is_finite() && t.jitter_s >= 0.0 && t.jitter_s <= wall_s) {
            out.push(format!(
                "{claimed}'s jitter of {} ms is impossible (finite, at least 0, under the test)",
                short(t.jitter_s * 1000.0)
            ));
        }
        if role == Role::Sender {
            let sent = saturating_sum(mine.intervals.iter().map(|x| x.packets));
            let lost = t.measured_errors();
            if lost < 0 || u64::try_from(lost).is_ok_and(|l| l > sent) {
                out.push(format!(
                    "{claimed} counts {lost} datagrams lost of the {sent} sent (a loss outside \
                     0-100%)"
                ));
            }
            let seen = t.measured_packets();
            if seen < 0 || u64::try_from(seen).is_ok_and(|s| s > sent.saturating_add(sent / 4)) {
                out.push(format!(
                    "{claimed} saw {seen} datagrams' sequence numbers, {sent} were sent"
                ));
            }
        }
    }
    out
}

/// Bytes that may wait unread in a receiver's buffer per byte of the largest window it
/// advertised: Linux advertises at least about a quarter of its buffer, and autotuning may
/// grow the buffer while data waits (an iperf3 3.12 server reading two directions with one
/// thread left 28 MB unread where it had advertised 14.5 MB at most, measured).
const UNREAD_PER_WINDOW: u64 = 4;
/// And never less than this (a receiver that advertised little), nor than this share of what
/// was acknowledged: an iperf3 server stops counting when it reads TEST_END, and on a fast
/// path tens of MB can still wait then (26 MB of 1.3 GB measured on loopback with a 1200-byte
/// MSS, whose buffers hold more per advertised byte).
const UNREAD_FLOOR: u64 = 16 << 20;
/// The least allowed for a server that settled before TEST_END: a margin for a reader whose
/// buffer grew past four windows (not seen: settled honest servers left at most 3.7 MB).
const SETTLED_FLOOR: u64 = 4 << 20;
const UNREAD_SHARE: u64 = 20;

/// The largest receive buffer an iperf3 server's kernel may fill, given `host_max`, the most
/// autotuning can grow one to (this host's, a far end tuned like this one). An iperf3 server
/// sets each data socket's SO_RCVBUF to the window asked (the kernel doubles it, and caps a
/// plain request at its `rmem_max`), which also ends its autotuning: with `-w` the buffer
/// cannot grow past twice the window.
pub(crate) fn far_receive_buffer(spec: &TestSpec, host_max: u64) -> u64 {
    spec.window_bytes
        .map_or(host_max, |w| host_max.min(w.saturating_mul(2)))
}

/// What this end's own kernel says the server's kernel acknowledged (TCP_INFO bytes_acked) is
/// the floor of what the server can have read: all of it but what still waited in its receive
/// buffer when it stopped counting (`UNREAD_PER_WINDOW` times the largest window it
/// advertised, at least `UNREAD_FLOOR`, a twentieth of the acknowledged bytes and
/// `far_buffer`) and one write. A count under that floor is false,
/// where `byte_slack` lets any test under 64 MiB be reported as nothing.
///
/// `far_buffer` is the largest buffer the server's kernel may fill: the windows sampled once
/// an interval miss it, as a starved reader's window closes while its buffer grows (an
/// iperf3 server on a busy 2-core host left 32.0 MB unread of a 1-second `--bidir` test, its
/// largest sampled window under 6.4 MB, with `tcp_rmem`'s maximum at 32 MiB: measured in CI).
/// The caller passes `far_receive_buffer`: this host's maximum (a far end tuned like this one),
/// or twice an asked window.
///
/// When the far end settled before TEST_END (`StreamReport::drained`: every byte acknowledged,
/// its window back to half its largest, sampled every millisecond), its application was
/// reading, and `UNREAD_PER_WINDOW` of its largest windows bound what it left (`engine::drain`
/// says why); the floors above are for a far end that did not settle. Honest iperf3 servers
/// (3.12 and 3.21+, loopback, `-n 5M` to `-t 2 -P 4`, idle host) then counted every byte but
/// 38 of the kernel's acknowledged count (which holds the 37-byte cookie and the SYN), at
/// worst 3.7 MB short behind a 33 MB window.
fn below_acked(
    spec: &TestSpec,
    claimed: u64,
    mine: &StreamReport,
    far_buffer: u64,
) -> Option<String> {
    let acked = mine.bytes_acked?;
    let asked = spec.window_bytes.unwrap_or(0).saturating_mul(2);
    let largest = match mine.drained {
        Some(d) => d.window_max_bytes,
        None => mine
            .intervals
            .iter()
            .filter_map(|i| i.tcp.as_ref().map(|t| t.snd_wnd_bytes))
            .max()
            .unwrap_or(0),
    };
    let by_window = largest.max(asked).saturating_mul(UNREAD_PER_WINDOW);
    let unread = if mine.drained.is_some() {
        // The far end settled before TEST_END (`engine::drain`): its application was reading,
        // and what it left unread is bounded by its window.
        by_window.max(SETTLED_FLOOR)
    } else {
        by_window
            .max(UNREAD_FLOOR)
            .max(acked / UNREAD_SHARE)
            .max(far_buffer)
    };
    let floor = acked.saturating_sub(unread.saturating_add(u64::from(spec.length_bytes)));
    (claimed < floor).then(|| {
        format!(
            "the iperf3 server says it received {claimed} bytes, but its kernel acknowledged \
             {acked} (this end's TCP_INFO), of which at most {unread} could wait unread in its \
             buffer"
        )
    })
}

/// A sender cannot have sent less than arrived before it was told to stop, at any size: what
/// this end's kernel had received (TCP_INFO, read or not) right before TEST_END, less one
/// write of `-l` bytes that was under way when the server took its count (and one sequence
/// number for a FIN). What arrived after TEST_END is no floor: an iperf3 3.16+ server's
/// stream threads write on while its main thread takes the count (587 KB more arrived than
/// an honest 3.21+ server counted in a 1-second `--bidir` test on a 2-core host with both
/// cores busy, measured). Without the kernel's count (FreeBSD), what was read here less
/// `byte_slack`.
fn below_received(
    spec: &TestSpec,
    claimed: u64,
    mine: &StreamReport,
    read: u64,
    slack: u64,
) -> Option<String> {
    match mine.tcp_bytes_received {
        Some(k) => {
            let floor = k.saturating_sub(u64::from(spec.length_bytes).saturating_add(1));
            (claimed < floor).then(|| {
                format!(
                    "the iperf3 server says it sent {claimed} bytes, but this end's kernel had \
                     received {k} before TEST_END (TCP_INFO; {read} read in all)"
                )
            })
        }
        None => (claimed < read.saturating_sub(slack)).then(|| {
            format!(
                "the iperf3 server says it sent {claimed} bytes, but {read} arrived here (more \
                 than {slack} bytes apart)"
            )
        }),
    }
}

/// With `-O` the server counts from the end of its own warm-up, which starts with the test at
/// its end, so this end's kernel total (which includes the warm-up) is no floor. What this end
/// wrote after its warm-up is: the server's warm-up may end later by as much as the two ends'
/// clocks may lie apart (`time_base_slack`, taken twice: a busy host), at the test's measured
/// rate, and what waits unread (as `below_acked`) and one write are allowed. A server claiming
/// 1000 bytes of a `-t 2 -O 1` test that carried 2.25 GB passed before (the checks stopped at
/// -O).
fn below_sent_after_warmup(
    spec: &TestSpec,
    claimed: u64,
    mine: &StreamReport,
    far_buffer: u64,
) -> Option<String> {
    let timeline = spec.timeline();
    let measured = saturating_sum(
        mine.intervals
            .iter()
            .filter(|i| {
                usize::try_from(i.index)
                    .ok()
                    .and_then(|k| timeline.slots().get(k))
                    .is_some_and(|slot| !slot.omitted)
            })
            .map(|i| i.bytes),
    );
    let seconds = spec.duration.as_secs_f64();
    // A test that ends at a count has no measured length to take the rate from (its duration
    // is only the ceiling): left to the other checks.
    if measured == 0 || seconds <= 0.0 || spec.count.is_some() {
        return None;
    }
    let skew_s = 2.0 * time_base_slack(spec.duration);
    let skewed = (measured as f64 / seconds * skew_s) as u64;
    let unread = UNREAD_FLOOR
        .max(measured / UNREAD_SHARE)
        .max(far_buffer)
        .max(
            spec.window_bytes
                .unwrap_or(0)
                .saturating_mul(2 * UNREAD_PER_WINDOW),
        );
    let allowed = skewed
        .saturating_add(unread)
        .saturating_add(u64::from(spec.length_bytes));
    let floor = measured.saturating_sub(allowed);
    (claimed < floor).then(|| {
        format!(
            "the iperf3 server says it received {claimed} bytes after its warm-up (-O), but this \
             end wrote {measured} after its own; at most {allowed} could fall before the server's \
             warm-up ended or wait unread in its buffer"
        )
    })
}

/// A number as a sentence can carry it: a 300-digit figure in scientific notation.
fn short(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e9 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::measure::IntervalReport;
    use crate::traffic::spec::Flow;
    use std::time::Duration;

    #[test]
    fn an_asked_window_bounds_the_far_buffer() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        assert_eq!(far_receive_buffer(&spec, 32 << 20), 32 << 20);
        spec.window_bytes = Some(1 << 20);
        assert_eq!(far_receive_buffer(&spec, 32 << 20), 2 << 20);
        spec.window_bytes = Some(64 << 20);
        assert_eq!(far_receive_buffer(&spec, 32 << 20), 32 << 20);
    }

    /// Regression: an iperf3 server claiming 1000 bytes of a -n 50M test (or half of what it
    /// got) passed, as any count within 64 MiB of this end's did.
    #[test]
    fn a_count_below_what_the_servers_kernel_acknowledged_is_false_at_any_size() {
        let spec = TestSpec::tcp(Duration::from_secs(2));
        let mut sent = mine(50 << 20, 0, Role::Sender);
        sent.bytes_acked = Some(50 << 20);
        sent.intervals[0].tcp = Some(crate::traffic::measure::TcpSample {
            snd_wnd_bytes: 3 << 20,
            ..Default::default()
        });
        for claimed in [1000, 25 << 20] {
            let w = below_acked(&spec, claimed, &sent, 0).expect("a false count");
            assert!(w.contains("acknowledged 52428800"), "{w}");
        }
        // What may still wait behind a 3 MiB window (and one write) is allowed.
        assert_eq!(below_acked(&spec, (50 - 16 - 1) << 20, &sent, 0), None);
        assert_eq!(below_acked(&spec, 50 << 20, &sent, 0), None);
        // A far end whose buffers may grow to 32 MiB may leave that much unread, and no more.
        assert_eq!(
            below_acked(&spec, (50 - 32 - 1) << 20, &sent, 32 << 20),
            None
        );
        assert!(below_acked(&spec, (50 - 34) << 20, &sent, 32 << 20).is_some());
        sent.bytes_acked = None;
        assert_eq!(below_acked(&spec, 1000, &sent, 0), None);
    }

    /// Issue 42, item 3: under the far receive buffer (32 MiB), half of a -n 50M test passed.
    /// Once the far end settled before TEST_END (`engine::drain`), four of its largest windows
    /// may wait unread, not the whole buffer.
    #[test]
    fn after_the_far_end_settled_its_window_bounds_what_it_left_unread() {
        let spec = TestSpec::tcp(Duration::from_secs(2));
        let mut sent = mine(50 << 20, 0, Role::Sender);
        sent.bytes_acked = Some((50 << 20) + 38);
        let far = 32 << 20;
        assert_eq!(below_acked(&spec, 25 << 20, &sent, far), None, "unsettled");
        sent.drained = Some(crate::traffic::measure::Drained {
            window_bytes: 3 << 20,
            window_max_bytes: 4 << 20,
        });
        for claimed in [1000, 25 << 20, (50 - 17) << 20] {
            let w = below_acked(&spec, claimed, &sent, far).expect("a false count");
            assert!(w.contains("at most 16777216 could wait unread"), "{w}");
        }
        assert_eq!(below_acked(&spec, (50 - 16) << 20, &sent, far), None);
        // A window asked with -w (the far buffer is twice it) counts as the largest.
        let wide = TestSpec {
            window_bytes: Some(8 << 20),
            ..spec.clone()
        };
        assert_eq!(below_acked(&wide, 1000, &sent, far), None);
    }

    /// Regression (outside audit of issue 42): with `-t 2 -O 1` a server claiming 1000 bytes of
    /// 2.25 GB passed, as every count check stopped at -O.
    #[test]
    fn with_a_warm_up_a_count_below_what_was_sent_after_it_is_false() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        spec.omit = Duration::from_secs(1);
        let timeline = spec.timeline();
        let mut sent = StreamReport::empty(0, Flow::ClientToServer, Role::Sender, None);
        for (k, slot) in timeline.slots().iter().enumerate() {
            sent.intervals.push(IntervalReport {
                stream: 0,
                index: k as u32,
                role: Role::Sender,
                // The warm-up's slots carry as much as the measured ones: they must not count.
                bytes: if slot.omitted {
                    2_000_000_000
                } else {
                    1_125_000_000
                },
                packets: 0,
                tcp: None,
                udp: None,
            });
        }
        let measured = 2_250_000_000u64;
        for claimed in [1000, measured / 2] {
            let w = below_sent_after_warmup(&spec, claimed, &sent, 32 << 20)
                .expect("a false count after the warm-up");
            assert!(w.contains("wrote 2250000000"), "{w}");
        }
        // An honest server whose warm-up ended 0.7 s after this end's, with 32 MiB unread.
        let honest_count = measured - (measured as f64 * 0.7 / 2.0) as u64 - (32 << 20);
        assert_eq!(
            below_sent_after_warmup(&spec, honest_count, &sent, 32 << 20),
            None
        );
        assert_eq!(
            below_sent_after_warmup(&spec, measured, &sent, 32 << 20),
            None
        );
        let mut counted = spec.clone();
        counted.count = Some(crate::traffic::spec::Count::Bytes(measured));
        assert_eq!(
            below_sent_after_warmup(&counted, 1000, &sent, 32 << 20),
            None,
            "a count test's ceiling is no length to take a rate from"
        );
        // Wired into the checks for -O, and only for -O.
        let m = &sent;
        let lie = StreamResult {
            bytes: 1000,
            ..honest()
        };
        let p = check(&spec, &results(lie), &[m], &[Role::Sender], 32 << 20);
        assert!(p.iter().any(|p| p.contains("after its warm-up")), "{p:?}");
    }

    fn mine(bytes: u64, packets: u64, role: Role) -> StreamReport {
        let mut r = StreamReport::empty(0, Flow::ClientToServer, role, None);
        r.intervals.push(IntervalReport {
            stream: 0,
            index: 0,
            role,
            bytes,
            packets,
            tcp: None,
            udp: None,
        });
        r
    }

    fn results(t: StreamResult) -> Results {
        Results {
            cpu_total: 5.0,
            cpu_user: 1.0,
            cpu_system: 4.0,
            streams: vec![t],
            ..Results::default()
        }
    }

    fn honest() -> StreamResult {
        StreamResult {
            id: 1,
            bytes: 1_000_000,
            start_time: Some(0.0),
            end_time: Some(2.0),
            ..StreamResult::default()
        }
    }

    fn spec() -> TestSpec {
        TestSpec::tcp(Duration::from_secs(2))
    }

    #[test]
    fn an_honest_server_passes() {
        let m = mine(1_000_000, 0, Role::Sender);
        assert!(check(&spec(), &results(honest()), &[&m], &[Role::Sender], 0).is_empty());
    }

    #[test]
    fn a_server_interval_longer_than_the_test_is_inconsistent() {
        let m = mine(1_000_000, 0, Role::Sender);
        let t = StreamResult {
            end_time: Some(1000.0),
            ..honest()
        };
        let p = check(&spec(), &results(t), &[&m], &[Role::Sender], 0);
        assert!(p.iter().any(|p| p.contains("ends after")), "{p:?}");
    }

    /// Regression (-P 128 against iperf3): senders held in their writes for seconds kept
    /// TEST_END back, the server counted over twice this end's seconds and its rate read 2-3x
    /// low with exit code 0. Seconds further apart than the slack are inconsistent now.
    #[test]
    fn a_server_counting_over_other_seconds_than_this_end_is_inconsistent() {
        let m = mine(1_000_000, 0, Role::Sender);
        let slack = time_base_slack(spec().duration);
        assert!((slack - 0.35).abs() < 1e-9, "0.25 s + 5% of 2 s");
        for (end, apart) in [(2.30, false), (1.70, false), (2.40, true), (4.5, true)] {
            let t = StreamResult {
                end_time: Some(end),
                ..honest()
            };
            let p = check(&spec(), &results(t), &[&m], &[Role::Sender], 0);
            assert_eq!(
                p.iter().any(|p| p.contains("cannot be compared")),
                apart,
                "{end}: {p:?}"
            );
        }
    }

    #[test]
    fn a_server_zero_length_interval_with_bytes_is_inconsistent() {
        let m = mine(1_000_000, 0, Role::Sender);
        let t = StreamResult {
            end_time: Some(0.0),
            ..honest()
        };
        let p = check(&spec(), &results(t), &[&m], &[Role::Sender], 0);
        assert!(p.iter().any(|p| p.contains("zero-length")), "{p:?}");
    }

    #[test]
    fn a_server_cpu_of_300_digits_or_negative_is_inconsistent() {
        let m = mine(1_000_000, 0, Role::Sender);
        for cpu in [1e300, -50.0] {
            let r = Results {
                cpu_total: cpu,
                ..results(honest())
            };
            let p = check(&spec(), &r, &[&m], &[Role::Sender], 0);
            assert!(p.iter().any(|p| p.contains("CPU")), "{cpu}: {p:?}");
            assert!(p.iter().all(|p| p.len() < 300), "{p:?}");
        }
    }

    /// A reverse server's count is checked against what this end's kernel had received, read
    /// or not (TCP_INFO bytes_received), right before TEST_END, at any size, less one write
    /// under way when the server took its count.
    #[test]
    fn a_reverse_server_claiming_less_than_this_kernel_received_is_inconsistent() {
        let spec = TestSpec {
            length_bytes: 128 << 10,
            ..spec()
        };
        let mut m = mine(1_000_000, 0, Role::Receiver);
        m.tcp_bytes_received = Some(5_000_000);
        let claiming = |bytes, m: &StreamReport| {
            let t = StreamResult { bytes, ..honest() };
            check(&spec, &results(t), &[m], &[Role::Receiver], 0)
        };
        let p = claiming(4_800_000, &m);
        assert!(
            p.iter()
                .any(|p| p.contains("had received 5000000 before TEST_END")),
            "{p:?}"
        );
        // One 128 KiB write (and a FIN) may have been under way: 5,000,000 - 131,073.
        assert!(claiming(4_868_927, &m).is_empty());
        assert_eq!(claiming(4_868_926, &m).len(), 1);
        // Without the kernel's count (FreeBSD): what was read, less the byte slack.
        m.tcp_bytes_received = None;
        m.intervals[0].bytes = 500 << 20;
        let p = claiming(1000, &m);
        assert!(p.iter().any(|p| p.contains("arrived here")), "{p:?}");
        assert!(claiming((500 - 125) << 20, &m).is_empty());
    }

    #[test]
    fn a_reverse_server_claiming_exabytes_is_inconsistent() {
        let m = mine(1_000_000, 0, Role::Receiver);
        let t = StreamResult {
            bytes: 4_294_967_296u64 << 30,
            ..honest()
        };
        let p = check(&spec(), &results(t), &[&m], &[Role::Receiver], 0);
        assert!(p.iter().any(|p| p.contains("says it sent")), "{p:?}");
        assert!(
            p.iter().any(|p| p.contains("faster than any link")),
            "{p:?}"
        );
    }

    #[test]
    fn udp_loss_beyond_what_was_sent_and_negative_jitter_are_inconsistent() {
        let spec = TestSpec::udp(Duration::from_secs(2));
        let m = mine(1_400_000, 1000, Role::Sender);
        let t = StreamResult {
            errors: 560_224_089_635,
            packets: 1000,
            jitter_s: -3.0,
            ..honest()
        };
        let p = check(&spec, &results(t), &[&m], &[Role::Sender], 0);
        assert!(p.iter().any(|p| p.contains("datagrams lost")), "{p:?}");
        assert!(p.iter().any(|p| p.contains("jitter")), "{p:?}");
    }
}
