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
use crate::traffic::measure::{IntervalReport, Role, StreamReport};
use crate::traffic::result::{self, Interval};
use crate::traffic::session::{self, Finished};
use crate::traffic::spec::TestSpec;
use crate::traffic::timeline::Slot;
use std::time::Duration;

/// This end's intervals, in grid order. `stopped`: when the streams were stopped, measured
/// from the test's start.
pub(super) fn intervals(spec: &TestSpec, local: &Finished, stopped: Duration) -> Vec<Interval> {
    let flows = spec.flows();
    // One report per stream, in stream order; a stream without one leaves no interval whole.
    let mine: Option<Vec<&StreamReport>> = (0..flows.len())
        .map(|i| local.reports.iter().find(|r| usize::from(r.stream) == i))
        .collect();
    let Some(mine) = mine else {
        return Vec::new();
    };
    let reported = mine.iter().map(|r| r.intervals.len()).min().unwrap_or(0);
    let grid = Grid::of(spec);
    (0..reported)
        .map_while(|k| {
            let own: Vec<&IntervalReport> =
                mine.iter().filter_map(|r| r.intervals.get(k)).collect();
            grid.at(k, &own, stopped)
        })
        .flatten()
        .collect()
}

/// What each interval of a test is built with: its slots, and each stream's flow and this
/// end's role in it.
struct Grid {
    spec: TestSpec,
    slots: Vec<Slot>,
    flows: Vec<crate::traffic::spec::Flow>,
    roles: Vec<Role>,
}

impl Grid {
    fn of(spec: &TestSpec) -> Grid {
        let flows = spec.flows();
        Grid {
            spec: spec.clone(),
            slots: spec.timeline().slots().to_vec(),
            roles: flows.iter().map(|f| session::role(*f, false)).collect(),
            flows,
        }
    }

    /// Interval `k` from each stream's report of it (`own`, in stream order): `None` past the
    /// grid or past `stopped` (no more intervals), `Some(None)` for a stub under a tenth of an
    /// interval that moved nothing (iperf3 drops it).
    fn at(&self, k: usize, own: &[&IntervalReport], stopped: Duration) -> Option<Option<Interval>> {
        let slot = self.slots.get(k)?;
        if slot.start >= stopped {
            return None;
        }
        let slot = Slot {
            end: slot.end.min(stopped),
            ..*slot
        };
        let streams: Vec<result::StreamInterval> = own
            .iter()
            .zip(&self.flows)
            .zip(&self.roles)
            .map(|((own, flow), role)| {
                let other = mirror(own);
                let (sender, receiver) = match role {
                    Role::Sender => (Some(*own), Some(&other)),
                    Role::Receiver => (Some(&other), Some(*own)),
                };
                result::merge_interval(self.spec.protocol, *flow, &slot, sender, receiver)
            })
            .collect();
        let length = slot.end.saturating_sub(slot.start);
        let moved = streams.iter().any(|s| s.bytes > 0 || s.sent_bytes > 0);
        // iperf3 keeps a last interval shorter than a tenth of its length only with data.
        if length < self.spec.interval / 10 && !moved {
            return Some(None);
        }
        let mut iv = Interval::of_slot(k as u32, &slot, streams);
        blank_peer_figures(&mut iv, &self.roles, self.spec.protocol);
        Some(Some(iv))
    }
}

/// A test's intervals as its streams report them (`Live::add`), each once every stream has
/// reported it: what a server writes while the test runs. The last, cut where the client
/// ended the test, is the document's (`intervals`).
pub struct Live {
    grid: Grid,
    /// Each stream's reports so far, in stream order.
    reports: Vec<Vec<IntervalReport>>,
    /// Intervals given so far.
    given: usize,
}

impl Live {
    pub fn new(spec: &TestSpec) -> Live {
        let grid = Grid::of(spec);
        Live {
            reports: vec![Vec::new(); grid.flows.len()],
            grid,
            given: 0,
        }
    }

    /// Takes one stream's report, `elapsed` into the test by the streams' clock; returns the
    /// intervals it completed (none, or one). An interval whose slot has not ended by then is
    /// a stream's last, cut short where it stopped: it is left to the document, which knows
    /// where the test stopped.
    pub fn add(&mut self, report: &IntervalReport, elapsed: Duration) -> Vec<Interval> {
        let Some(mine) = self.reports.get_mut(usize::from(report.stream)) else {
            return Vec::new();
        };
        // A stream's reports come in grid order; one out of order is not shown live.
        if usize::try_from(report.index).is_ok_and(|i| i == mine.len()) {
            mine.push(report.clone());
        }
        let mut out = Vec::new();
        while self.reports.iter().all(|r| r.len() > self.given) {
            let k = self.given;
            if self.grid.slots.get(k).is_some_and(|s| s.end > elapsed) {
                break;
            }
            let own: Vec<&IntervalReport> = self.reports.iter().map(|r| &r[k]).collect();
            self.given += 1;
            match self.grid.at(k, &own, Duration::MAX) {
                Some(Some(iv)) => out.push(iv),
                Some(None) => {}
                None => break,
            }
        }
        out
    }

    /// The test whose intervals these are.
    pub fn spec(&self) -> &TestSpec {
        &self.grid.spec
    }
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

    #[test]
    fn live_intervals_come_once_every_stream_reported_them_and_match_the_documents() {
        let mut spec = TestSpec::tcp(Duration::from_secs(12));
        spec.direction = Direction::Reverse;
        spec.streams = 2;
        spec.calibration = Duration::ZERO;
        let local = finished(vec![
            report(0, Role::Sender, &[100, 200, 300]),
            report(1, Role::Sender, &[10, 20, 30]),
        ]);
        let mut live = Live::new(&spec);
        let at = |s: u64| Duration::from_secs(s);
        let (a, b) = (&local.reports[0].intervals, &local.reports[1].intervals);
        // Stream 0 runs ahead: nothing until stream 1 has reported the same interval.
        assert!(live.add(&a[0], at(1)).is_empty());
        assert!(live.add(&a[1], at(2)).is_empty());
        let first = live.add(&b[0], at(2));
        assert_eq!(first.len(), 1);
        let second = live.add(&b[1], at(2));
        // A report out of order is not shown (it would shift every later interval).
        assert!(live.add(&b[0], at(3)).is_empty());
        let whole = intervals(&spec, &local, Duration::MAX);
        assert_eq!(first[0], whole[0]);
        assert_eq!(second[0], whole[1]);
        assert_eq!(second[0].total.sent_bytes, 220);
        // A third interval both streams reported before its slot ended: their last, cut short
        // where they stopped; the document has it, from where the test stopped.
        let (a2, b2) = (
            &local.reports[0].intervals[2],
            &local.reports[1].intervals[2],
        );
        assert!(live.add(a2, Duration::from_millis(2400)).is_empty());
        assert!(live.add(b2, Duration::from_millis(2400)).is_empty());
    }
}
