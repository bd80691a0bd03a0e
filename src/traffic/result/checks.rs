//! Checks of both ends' reports against each other and against physics, before any of their
//! numbers are believed: a receiver cannot count more than its sender sent, a TCP receiver that
//! read to the end of the data has every byte sent, a UDP receiver cannot get more datagrams of
//! an interval than were sent in it, no count reaches 2^64, and no stream moves more than
//! `MAX_RATE_BPS`. Pure; `result::build` calls it for tests that ended normally.
//! `implausible` checks the finished result's figures against the test and physics (rates,
//! loss, jitter, CPU, seconds) whichever end measured them; `client::finish` calls it for
//! both netsweep and iperf3 peers.

use super::saturating_sum;
use crate::traffic::measure::{IntervalReport, StreamReport};
use crate::traffic::spec::{Protocol, TestSpec};
use crate::traffic::timeline::Timeline;

/// A paced UDP sender below this share of its target did not send what was asked.
pub const SHORTFALL: f64 = 0.97;

/// Sockets whose buffers the kernel granted smaller than `-w` asked: the test then ran with
/// the smaller window. FreeBSD grants exactly what it allows (`kern.ipc.maxsockbuf` caps it for
/// every user); Linux grants twice the request, capped by `net.core.{w,r}mem_max` unless set
/// by root. A grant below the request is capped on either system.
pub fn window_grants(spec: &TestSpec, start: &super::StartInfo) -> Vec<String> {
    let Some(asked) = spec.window_bytes else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (end, sockets) in [
        ("client", &start.client_sockets),
        ("server", &start.server_sockets),
    ] {
        let Some(s) = sockets.first() else { continue };
        // This end's own account of the window its buffers allow; a record without it (an
        // older netsweep) is judged by the reported sizes alone.
        let window = s
            .window_bytes
            .unwrap_or_else(|| s.sndbuf_bytes.min(s.rcvbuf_bytes));
        if window > 0 && window < asked {
            let why = match spec.window_mode {
                crate::traffic::spec::WindowMode::Ask => {
                    "the window was asked (--window-mode ask) and capped by that host's maxima \
                     (FreeBSD: kern.ipc.maxsockbuf; Linux: net.core.wmem_max/rmem_max); a profile \
                     raising them lets a larger window through"
                }
                crate::traffic::spec::WindowMode::Force
                | crate::traffic::spec::WindowMode::Clamp => {
                    "the window was capped by that host's limit (FreeBSD: kern.ipc.maxsockbuf; \
                     Linux: net.core.wmem_max/rmem_max, which only root lifts); raise it to \
                     compare windows"
                }
            };
            out.push(format!(
                "-w asked {} but the {end}'s kernel granted send {} / receive {} (a window of {}): \
                 {why}",
                crate::units::Bytes(asked),
                crate::units::Bytes(s.sndbuf_bytes),
                crate::units::Bytes(s.rcvbuf_bytes),
                crate::units::Bytes(window)
            ));
        }
    }
    out
}

/// A receiver whose advertised window stayed under this share of the window its buffers
/// allow, while its sender waited for it, did not open its window.
pub const UNOPENED: f64 = 0.5;

/// Directions whose receivers never advertised the window their buffers allow while the
/// senders waited for it: the buffers were set after the handshake on a kernel that keeps the
/// window where the default buffer put it (Linux 6.1, measured in the VM labs' guests), so the
/// test measured a smaller window than it asked. netsweep's own servers set a test's buffers on
/// the listener before the handshake; other servers may not.
pub fn unopened_windows(
    spec: &TestSpec,
    start: &super::StartInfo,
    directions: &[super::DirectionResult],
) -> Vec<String> {
    if spec.protocol != Protocol::Tcp || spec.window_bytes.is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for d in directions {
        let (end, sockets) = match d.flow {
            crate::traffic::spec::Flow::ClientToServer => ("server", &start.server_sockets),
            crate::traffic::spec::Flow::ServerToClient => ("client", &start.client_sockets),
        };
        let granted: u64 = sockets.iter().filter_map(|s| s.window_bytes).sum();
        let (Some(seen), Some(waited)) =
            (d.summary.snd_wnd_max_bytes, d.summary.rwnd_limited_percent)
        else {
            continue;
        };
        if granted == 0 || seen == 0 || waited < 20.0 || seen as f64 >= UNOPENED * granted as f64 {
            continue;
        }
        out.push(format!(
            "the {end}'s largest advertised window was {} of the {} its buffers allow, and the \
             senders waited for it {waited:.0}% of the time: its buffers were set after the \
             connection's handshake on a kernel that keeps the window the default buffer gave \
             (Linux 6.1 does), so this test measured a window of about {}, not -w's",
            crate::units::Bytes(seen),
            crate::units::Bytes(granted),
            crate::units::Bytes(seen)
        ));
    }
    out
}

/// UDP directions whose senders fell short of the asked rate: the loss figure is then for the
/// rate that was sent, and the limit was on the sending host (CPU, a local rate limit, a
/// qdisc), since nothing on the path pushes back on UDP.
pub fn shortfalls(spec: &TestSpec, directions: &[super::DirectionResult]) -> Vec<String> {
    if spec.protocol != Protocol::Udp || spec.bitrate_bps <= 0.0 {
        return Vec::new();
    }
    let asked = crate::units::BitRate(spec.bitrate_bps);
    directions
        .iter()
        .filter(|d| {
            d.summary.seconds > 0.0 && d.summary.sent_bits_per_second < spec.bitrate_bps * SHORTFALL
        })
        .map(|d| {
            let sent = crate::units::BitRate(d.summary.sent_bits_per_second);
            let who = match d.flow {
                crate::traffic::spec::Flow::ClientToServer => "sender (client)",
                crate::traffic::spec::Flow::ServerToClient => "sender (server)",
            };
            format!(
                "{who} reached {sent} of the {asked} asked: limited on the sending host (CPU, a \
                 local rate limit or qdisc), so the loss figure is for {sent}"
            )
        })
        .collect()
}

/// No single stream of any link in use carries 10 Tbit/s; a figure above it is damage.
pub const MAX_RATE_BPS: f64 = 1e13;

fn total(r: &StreamReport, f: impl Fn(&IntervalReport) -> u64) -> u64 {
    saturating_sum(r.intervals.iter().map(f))
}

/// The contradictions found, one sentence each; empty when the reports agree.
pub fn inconsistencies(
    spec: &TestSpec,
    pairs: &[super::StreamPair],
    timeline: &Timeline,
) -> Vec<String> {
    let mut out = Vec::new();
    for p in pairs {
        let (s, r) = (p.sender, p.receiver);
        if s.error.is_some() || r.error.is_some() {
            continue;
        }
        let id = s.stream;
        let sent = total(s, |i| i.bytes);
        let got = total(r, |i| i.bytes).saturating_add(r.tail_bytes);
        if sent == u64::MAX || got == u64::MAX {
            out.push(format!("stream {id}: a byte count reaches 2^64"));
            continue;
        }
        if spec.protocol == Protocol::Tcp {
            if got > sent {
                out.push(format!(
                    "stream {id}: the receiver counted {got} bytes, but the sender sent only {sent}"
                ));
            } else if r.saw_end && got != sent {
                out.push(format!(
                    "stream {id}: the receiver read to the end of the data but counted {got} of the {sent} bytes sent"
                ));
            }
        }
        if spec.protocol == Protocol::Udp {
            let over = s
                .intervals
                .iter()
                .zip(&r.intervals)
                .find(|(a, b)| b.packets > a.packets);
            if let Some((a, b)) = over {
                out.push(format!(
                    "stream {id}, interval {}: {} datagrams received of {} sent",
                    a.index, b.packets, a.packets
                ));
            }
        }
        for (rep, who) in [(s, "sender"), (r, "receiver")] {
            let too_fast = rep.intervals.iter().find(|i| {
                let secs = timeline
                    .slots()
                    .get(i.index as usize)
                    .map_or(0.0, |slot| (slot.end - slot.start).as_secs_f64());
                secs > 0.0 && i.bytes as f64 * 8.0 / secs > MAX_RATE_BPS
            });
            if let Some(i) = too_fast {
                out.push(format!(
                    "stream {id}: the {who} counted {} bytes in interval {}, faster than any link",
                    i.bytes, i.index
                ));
            }
        }
    }
    out
}

/// Slack on the test's wall time for a peer's measured seconds: a server counts until it reads
/// the end of the test, some control round trips after the grid ends. 2 s plus 10%.
pub fn time_slack(wall: std::time::Duration) -> f64 {
    2.0 + wall.as_secs_f64() * 0.1
}

/// Threads that can have used CPU at one end: one per stream (both directions) plus two (control and timer). A
/// process cannot use more than 100% of a core per thread, whatever the host's core count.
pub fn max_cpu_percent(spec: &TestSpec) -> f64 {
    100.0 * (spec.flows().len() as f64 + 2.0)
}

/// Figures of a finished result that no test could have produced: rates above `MAX_RATE_BPS`
/// per stream, loss outside 0-100%, negative or non-finite jitter (or more than the test
/// lasted), CPU outside 0..`max_cpu_percent`, seconds beyond the test. One sentence each.
pub fn implausible(r: &super::TestResult) -> Vec<String> {
    let spec = &r.spec;
    let wall = spec.wall_time().as_secs_f64();
    let mut out = Vec::new();
    let mut summary = |what: &str, s: &super::Summary, streams: f64| {
        for (name, rate) in [
            ("goodput", s.bits_per_second),
            ("send rate", s.sent_bits_per_second),
        ] {
            if !rate.is_finite() || rate < 0.0 || rate > MAX_RATE_BPS * streams.max(1.0) {
                out.push(format!(
                    "{what}: a {name} of {rate:e} bit/s is beyond any link (at most {MAX_RATE_BPS:e} \
                     bit/s per stream)"
                ));
            }
        }
        if !s.seconds.is_finite()
            || s.seconds < 0.0
            || s.seconds > wall + time_slack(spec.wall_time())
        {
            out.push(format!(
                "{what}: {} seconds measured in a test of {wall:.1} s",
                s.seconds
            ));
        }
        if let Some(l) = s.lost_percent.filter(|l| !(0.0..=100.0).contains(l)) {
            out.push(format!("{what}: a loss of {l}%, outside 0-100%"));
        }
        if let Some(j) = s.jitter_ms.filter(|j| !plausible_jitter_ms(*j, wall)) {
            out.push(format!(
                "{what}: a jitter of {j} ms (it must be finite, at least 0 and under the test's \
                 {wall:.1} s)"
            ));
        }
    };
    summary("the test's summary", &r.summary, spec.flows().len() as f64);
    for d in &r.directions {
        for st in &d.streams {
            summary(&format!("stream {}", st.stream), &st.summary, 1.0);
        }
    }
    for iv in &r.intervals {
        let bad = iv
            .streams
            .iter()
            .find(|row| row.jitter_ms.is_some_and(|j| !plausible_jitter_ms(j, wall)));
        if let Some(row) = bad {
            out.push(format!(
                "stream {}, interval {}: a jitter of {} ms",
                row.stream,
                iv.index,
                row.jitter_ms.unwrap_or_default()
            ));
            break;
        }
    }
    let most = max_cpu_percent(spec);
    let c = &r.cpu;
    let cpu_ok = |p: f64| p.is_finite() && (0.0..=most).contains(&p);
    let seconds_ok = |s: f64| s.is_finite() && s >= 0.0;
    if !cpu_ok(c.remote_percent) || !seconds_ok(c.remote.user_s) || !seconds_ok(c.remote.system_s) {
        out.push(format!(
            "the server's CPU use of {}% (user {} s, system {} s) is outside 0-{most}% ({} threads \
             at most 100% each)",
            c.remote_percent,
            c.remote.user_s,
            c.remote.system_s,
            most / 100.0
        ));
    }
    out
}

/// Jitter, milliseconds: finite, not negative, and no longer than the test.
fn plausible_jitter_ms(j: f64, wall_s: f64) -> bool {
    j.is_finite() && j >= 0.0 && j <= wall_s * 1000.0
}
