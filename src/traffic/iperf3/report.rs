//! This end's figures as an iperf3 results document (what an iperf3 peer is told after
//! EXCHANGE_RESULTS), for both roles.

use super::wire::{self, Results, StreamResult};
use crate::traffic::measure::{IntervalReport, Role, StreamReport};
use crate::traffic::result;
use crate::traffic::session::Finished;
use crate::traffic::spec::{Protocol, TestSpec};
use crate::traffic::timeline::Slot;
use std::time::Duration;

/// A stream's intervals with their slots.
fn slotted<'a>(
    r: &'a StreamReport,
    slots: &'a [Slot],
) -> impl Iterator<Item = (&'a Slot, &'a IntervalReport)> {
    slots.iter().zip(&r.intervals)
}

/// This end's results as an iperf3 results document. `stopped` is when open-ended streams were
/// stopped (their last interval ends there); `None` for streams that ran their whole grid.
pub fn results(spec: &TestSpec, local: &Finished, stopped: Option<Duration>) -> Results {
    let timeline = spec.timeline();
    let slots = timeline.slots();
    let measured_s = timeline.measured_of(local.closed(), stopped);
    let sends = local.reports.iter().any(|r| r.role == Role::Sender);
    let streams = local
        .reports
        .iter()
        .map(|r| {
            let sum = |measured: bool, f: &dyn Fn(&IntervalReport) -> u64| -> u64 {
                result::saturating_sum(
                    slotted(r, slots)
                        .filter(|(s, _)| s.omitted != measured)
                        .map(|(_, i)| f(i)),
                )
            };
            let bytes = sum(true, &|i| i.bytes);
            let packets = sum(true, &|i| i.packets);
            let omitted_packets = sum(false, &|i| i.packets);
            let sender = r.role == Role::Sender;
            let (packets, errors, omitted) = if sender {
                (packets + omitted_packets, 0, omitted_packets)
            } else {
                // iperf3's receiver reports the highest sequence number (from 1) and the gaps.
                let highest = r.highest_seq.map_or(0, |h| h + 1);
                let received = packets + omitted_packets;
                (highest, highest.saturating_sub(received), omitted_packets)
            };
            let jitter_ms = r
                .intervals
                .iter()
                .rev()
                .find_map(|i| i.udp.map(|u| u.jitter_ms))
                .unwrap_or(0.0);
            StreamResult {
                id: wire::stream_id(usize::from(r.stream)),
                bytes,
                retransmits: (sender && spec.protocol == Protocol::Tcp)
                    .then(|| sum(true, &|i| i.tcp.map_or(0, |t| t.retransmits))),
                jitter_s: jitter_ms / 1000.0,
                errors: i64::try_from(errors).unwrap_or(i64::MAX),
                omitted_errors: Some(0),
                packets: i64::try_from(packets).unwrap_or(i64::MAX),
                omitted_packets: Some(i64::try_from(omitted).unwrap_or(i64::MAX)),
                start_time: Some(0.0),
                end_time: Some(measured_s),
            }
        })
        .collect();
    let pct = |s: f64| {
        if local.cpu.wall_s > 0.0 {
            s / local.cpu.wall_s * 100.0
        } else {
            0.0
        }
    };
    Results {
        cpu_total: local.cpu.percent(),
        cpu_user: pct(local.cpu.user_s),
        cpu_system: pct(local.cpu.system_s),
        sender_has_retransmits: match (sends, spec.protocol) {
            (false, _) => -1,
            (true, Protocol::Tcp) => 1,
            (true, Protocol::Udp) => 0,
        },
        congestion_used: spec.congestion.clone(),
        streams,
        version: None,
        server_software: None,
        skipped_rx_copy: None,
        server_output: None,
    }
}
