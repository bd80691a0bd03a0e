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
            let (packets, errors, omitted, omitted_errors) = if sender {
                (packets + omitted_packets, 0, omitted_packets, 0)
            } else {
                // iperf3's receiver reports the highest sequence number (from 1) and the gaps,
                // and both as they stood when the warm-up ended: the sequence numbers its
                // intervals covered and those of them that did not arrive. Regression: the
                // warm-up's arrivals stood for its count and its losses for none, so a lossy
                // warm-up's losses were the test's (79% for 53%).
                let highest = r.highest_seq.map_or(0, |h| h + 1);
                let received = packets + omitted_packets;
                let covered = sum(false, &|i| i.udp.and_then(|u| u.sequences).unwrap_or(0));
                (
                    highest,
                    highest.saturating_sub(received),
                    covered,
                    covered.saturating_sub(omitted_packets),
                )
            };
            // The estimate where datagrams last arrived (a server's grid runs on past the
            // test: regression, its jitter read 0.000 ms from an empty interval).
            let jitter_ms = r
                .intervals
                .iter()
                .rev()
                .filter(|i| i.packets > 0)
                .find_map(|i| i.udp.map(|u| u.jitter_ms))
                .unwrap_or(0.0);
            StreamResult {
                id: wire::stream_id(usize::from(r.stream)),
                bytes,
                retransmits: (sender && spec.protocol == Protocol::Tcp)
                    .then(|| sum(true, &|i| i.tcp.map_or(0, |t| t.retransmits))),
                jitter_s: jitter_ms / 1000.0,
                errors: i64::try_from(errors).unwrap_or(i64::MAX),
                omitted_errors: Some(i64::try_from(omitted_errors).unwrap_or(i64::MAX)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::measure::UdpReceived;
    use crate::traffic::spec::Flow;

    /// Interval `index` of a receiver: `got` datagrams of 1400 bytes, and its UDP figures.
    fn received(index: u32, got: u64, udp: Option<UdpReceived>) -> IntervalReport {
        IntervalReport {
            stream: 0,
            index,
            role: Role::Receiver,
            bytes: got * 1400,
            packets: got,
            tcp: None,
            udp,
        }
    }

    /// The results of one receiving stream's `intervals`, the highest sequence `highest`.
    fn results_of(spec: &TestSpec, intervals: Vec<IntervalReport>, highest: u64) -> StreamResult {
        let mut report = StreamReport::empty(0, Flow::ClientToServer, Role::Receiver, None);
        report.intervals = intervals;
        report.highest_seq = Some(highest);
        let finished = Finished {
            reports: vec![report],
            ..Finished::default()
        };
        results(spec, &finished, None).streams.remove(0)
    }

    /// Regression (a trial's finding): a server's UDP jitter read 0.000 ms for iperf3 clients,
    /// taken from the empty intervals of the grid it keeps past the client's end. The
    /// estimate is the one where datagrams last arrived.
    #[test]
    fn a_receivers_jitter_is_where_datagrams_last_arrived() {
        let spec = TestSpec::udp(Duration::from_secs(3));
        let with = |jitter_ms: f64, highest: u64| UdpReceived {
            jitter_ms,
            highest_seq: Some(highest),
            ..UdpReceived::default()
        };
        let s = results_of(
            &spec,
            vec![
                received(0, 10, Some(with(0.25, 9))),
                received(1, 10, Some(with(0.5, 19))),
                received(2, 0, None),
                // An empty interval that still carries a UDP record (as receivers once wrote).
                received(3, 0, Some(UdpReceived::default())),
            ],
            19,
        );
        assert_eq!(s.jitter_s, 0.5 / 1000.0);
        assert_eq!((s.packets, s.errors), (20, 0));
    }

    /// As iperf3's receiver: `packets` and `errors` from the start, and as they stood when
    /// the warm-up ended in `omitted_packets` and `omitted_errors`, so the test's figures
    /// leave the warm-up's losses out. Regression: the warm-up's arrivals stood for its count
    /// and none of its losses, so they were the test's.
    #[test]
    fn a_warm_ups_losses_are_not_the_tests() {
        let mut spec = TestSpec::udp(Duration::from_secs(2));
        spec.omit = Duration::from_secs(1);
        // Sequence numbers 0-99 in the warm-up (10 lost), 100-199 after it (5 lost).
        let covered = |sequences: u64, highest: u64| {
            Some(UdpReceived {
                highest_seq: Some(highest),
                sequences: Some(sequences),
                ..UdpReceived::default()
            })
        };
        let s = results_of(
            &spec,
            vec![
                received(0, 90, covered(100, 99)),
                received(1, 50, covered(50, 149)),
                received(2, 45, covered(50, 199)),
            ],
            199,
        );
        assert_eq!((s.packets, s.errors), (200, 15));
        assert_eq!((s.omitted_packets, s.omitted_errors), (Some(100), Some(10)));
        assert_eq!((s.measured_packets(), s.measured_errors()), (100, 5));
    }
}
