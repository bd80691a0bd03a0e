//! The server's own intervals of an iperf3 client's test, for its `--json` document: this
//! end's interval reports on the test's grid (1 s, as iperf3's server without `-i`), each
//! stream's row merged with its mirror (an iperf3 client reports no intervals to the server),
//! so a receiving stream shows what arrived and a sending one what left with its TCP_INFO.
//! The last interval ends when the streams were stopped (the client's TEST_END), and a
//! stub of it with no data under a tenth of an interval is dropped, as iperf3 does.
//!
//! Pure calculation from `session::Finished`; `document` renders the result with
//! `json::interval_of`.

use crate::traffic::iperf3::peer_result::{blank_peer_figures, mirror};
use crate::traffic::measure::{Role, StreamReport};
use crate::traffic::result::{self, Interval};
use crate::traffic::session::{self, Finished};
use crate::traffic::spec::TestSpec;
use crate::traffic::timeline::Slot;
use std::time::Duration;

/// This end's intervals, in grid order. `stopped`: when the streams were stopped, measured
/// from the test's start.
pub(super) fn intervals(spec: &TestSpec, local: &Finished, stopped: Duration) -> Vec<Interval> {
    let timeline = spec.timeline();
    let flows = spec.flows();
    let roles: Vec<Role> = flows.iter().map(|f| session::role(*f, false)).collect();
    // One report per stream, in stream order; a stream without one leaves no interval whole.
    let mine: Option<Vec<&StreamReport>> = (0..flows.len())
        .map(|i| local.reports.iter().find(|r| usize::from(r.stream) == i))
        .collect();
    let Some(mine) = mine else {
        return Vec::new();
    };
    let reported = mine.iter().map(|r| r.intervals.len()).min().unwrap_or(0);
    let mut out = Vec::new();
    for (k, slot) in timeline.slots().iter().take(reported).enumerate() {
        if slot.start >= stopped {
            break;
        }
        let slot = Slot {
            end: slot.end.min(stopped),
            ..*slot
        };
        let streams: Vec<result::StreamInterval> = mine
            .iter()
            .zip(&flows)
            .zip(&roles)
            .map(|((r, flow), role)| {
                let own = r.intervals.get(k);
                let other = own.map(mirror);
                let (sender, receiver) = match role {
                    Role::Sender => (own, other.as_ref()),
                    Role::Receiver => (other.as_ref(), own),
                };
                result::merge_interval(spec.protocol, *flow, &slot, sender, receiver)
            })
            .collect();
        let length = slot.end.saturating_sub(slot.start);
        let moved = streams.iter().any(|s| s.bytes > 0 || s.sent_bytes > 0);
        // iperf3 keeps a last interval shorter than a tenth of its length only with data.
        if length < spec.interval / 10 && !moved {
            continue;
        }
        let mut iv = Interval::of_slot(k as u32, &slot, streams);
        blank_peer_figures(&mut iv, &roles, spec.protocol);
        out.push(iv);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::measure::{IntervalReport, TcpSample};
    use crate::traffic::spec::{Direction, Flow};

    fn report(stream: u16, role: Role, bytes: &[u64]) -> StreamReport {
        let flow = match role {
            Role::Sender => Flow::ServerToClient,
            Role::Receiver => Flow::ClientToServer,
        };
        StreamReport {
            intervals: bytes
                .iter()
                .enumerate()
                .map(|(k, b)| IntervalReport {
                    stream,
                    index: k as u32,
                    role,
                    bytes: *b,
                    packets: 0,
                    tcp: (role == Role::Sender).then_some(TcpSample {
                        retransmits: 2,
                        cwnd_bytes: 1000,
                        ..TcpSample::default()
                    }),
                    udp: None,
                })
                .collect(),
            ..StreamReport::empty(stream, flow, role, None)
        }
    }

    fn finished(reports: Vec<StreamReport>) -> Finished {
        Finished {
            reports,
            ..Finished::default()
        }
    }

    #[test]
    fn a_reverse_test_shows_what_the_server_sent_each_second_with_its_tcp_figures() {
        let mut spec = TestSpec::tcp(Duration::from_secs(12));
        spec.direction = Direction::Reverse;
        spec.streams = 2;
        spec.calibration = Duration::ZERO;
        let local = finished(vec![
            report(0, Role::Sender, &[100, 200, 30]),
            report(1, Role::Sender, &[10, 20, 3]),
        ]);
        let ivs = intervals(&spec, &local, Duration::from_millis(2500));
        assert_eq!(ivs.len(), 3);
        assert_eq!(ivs[2].end_s, 2.5);
        assert_eq!(ivs[1].total.sent_bytes, 220);
        assert_eq!(ivs[0].streams[0].retransmits, Some(2));
        assert_eq!(ivs[0].streams[1].cwnd_bytes, Some(1000));
    }

    #[test]
    fn a_stub_without_data_after_the_clients_end_is_no_interval() {
        let mut spec = TestSpec::tcp(Duration::from_secs(12));
        spec.calibration = Duration::ZERO;
        let local = finished(vec![report(0, Role::Receiver, &[100, 200, 0])]);
        let ivs = intervals(&spec, &local, Duration::from_millis(2050));
        assert_eq!(ivs.len(), 2, "{ivs:?}");
        assert_eq!(ivs[1].total.bytes, 200);
        // The same stub with data is kept.
        let local = finished(vec![report(0, Role::Receiver, &[100, 200, 5])]);
        assert_eq!(
            intervals(&spec, &local, Duration::from_millis(2050)).len(),
            3
        );
    }
}
