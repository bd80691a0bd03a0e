//! Checks of both ends' reports against each other and against physics, before any of their
//! numbers are believed: a receiver cannot count more than its sender sent, a TCP receiver that
//! read to the end of the data has every byte sent, a UDP receiver cannot get more datagrams of
//! an interval than were sent in it, no count reaches 2^64, and no stream moves more than
//! `MAX_RATE_BPS`. Pure; `result::build` calls it for tests that ended normally.

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
        let least = s.sndbuf_bytes.min(s.rcvbuf_bytes);
        if least > 0 && least < asked {
            let why = match spec.window_mode {
                crate::traffic::spec::WindowMode::Ask => {
                    "the window was asked (--window-mode ask) and capped by that host's maxima \
                     (FreeBSD: kern.ipc.maxsockbuf; Linux: net.core.wmem_max/rmem_max); a profile \
                     raising them lets a larger window through"
                }
                crate::traffic::spec::WindowMode::Force => {
                    "the window was capped by that host's limit (FreeBSD: kern.ipc.maxsockbuf; \
                     Linux: net.core.wmem_max/rmem_max, which only root lifts); raise it to \
                     compare windows"
                }
            };
            out.push(format!(
                "-w asked {} but the {end}'s kernel granted send {} / receive {}: {why}",
                crate::units::Bytes(asked),
                crate::units::Bytes(s.sndbuf_bytes),
                crate::units::Bytes(s.rcvbuf_bytes)
            ));
        }
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
