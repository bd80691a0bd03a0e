//! The server's side of a test as the client receives it: live interval reports, the final
//! `Intervals` frames and `Done`, each checked against the test's own shape before it is kept,
//! and the fallback to the live reports when the final ones never come.

use super::{Finished, LiveMerger};
use crate::traffic::measure::{IntervalReport, StreamReport};
use crate::traffic::protocol::{self, ServerMsg};
use crate::traffic::result::Interval;
use crate::traffic::session;
use crate::traffic::spec::{Flow, TestSpec};
use std::collections::HashMap;

/// What the server sends during and after a test, checked against the test's own shape: a
/// report of a stream, role or interval this test does not have ends the test (a broken or
/// hostile server), and nothing kept grows beyond streams x intervals, however much is sent.
pub(super) struct Remote {
    flows: Vec<Flow>,
    slots: usize,
    /// The server's intervals as they arrived, one per (stream, index): what we keep if its
    /// final report never comes.
    live: HashMap<(u16, u32), IntervalReport>,
    /// Final intervals per stream, from `Intervals` frames.
    finals: Vec<Vec<IntervalReport>>,
    pub(super) done: Option<Finished>,
}

impl Remote {
    pub(super) fn new(spec: &TestSpec) -> Remote {
        let flows = spec.flows();
        Remote {
            slots: usize::try_from(spec.interval_count()).unwrap_or(usize::MAX),
            finals: vec![Vec::new(); flows.len()],
            flows,
            live: HashMap::new(),
            done: None,
        }
    }

    /// Checks that an interval report belongs to this test and comes from the server's side.
    fn check(&self, r: &IntervalReport) -> Result<(), String> {
        let Some(flow) = self.flows.get(usize::from(r.stream)) else {
            return Err(format!(
                "the server reported stream {}, but this test has {} streams",
                r.stream,
                self.flows.len()
            ));
        };
        if r.index as usize >= self.slots {
            return Err(format!(
                "the server reported interval {}, but this test has {}",
                r.index, self.slots
            ));
        }
        if r.role != session::role(*flow, false) {
            return Err(format!(
                "the server reported stream {} as its {:?}, but it is the other end",
                r.stream, r.role
            ));
        }
        Ok(())
    }

    /// Takes one message of the server's; an error ends the test.
    pub(super) fn take(
        &mut self,
        msg: Result<ServerMsg, protocol::ProtocolError>,
        merger: &mut LiveMerger,
        on_interval: &mut dyn FnMut(&Interval),
    ) -> Result<(), String> {
        match msg {
            Ok(ServerMsg::Interval { report }) => {
                self.check(&report)?;
                self.live
                    .insert((report.stream, report.index), report.clone());
                merger.add(report, on_interval);
            }
            Ok(ServerMsg::Intervals { stream, intervals }) => {
                for r in &intervals {
                    self.check(r)?;
                    if r.stream != stream {
                        return Err("the server mixed streams in one result frame".into());
                    }
                }
                let kept = &mut self.finals[usize::from(stream)];
                if kept.len() + intervals.len() > self.slots {
                    return Err(format!(
                        "the server sent more than {} final intervals for stream {stream}",
                        self.slots
                    ));
                }
                kept.extend(intervals);
            }
            Ok(ServerMsg::Done { streams, cpu }) => {
                if streams.len() > self.flows.len() {
                    return Err(format!(
                        "the server sent {} stream reports for {} streams",
                        streams.len(),
                        self.flows.len()
                    ));
                }
                let mut reports = Vec::with_capacity(streams.len());
                for mut r in streams {
                    let Some(finals) = self.finals.get_mut(usize::from(r.stream)) else {
                        return Err(format!("the server reported unknown stream {}", r.stream));
                    };
                    r.intervals = std::mem::take(finals);
                    reports.push(r);
                }
                self.done = Some(Finished { reports, cpu });
            }
            Ok(ServerMsg::Error { message }) => return Err(format!("server error: {message}")),
            Ok(other) => return Err(format!("unexpected message from the server: {other:?}")),
            Err(e) => {
                return Err(format!(
                    "server gone mid-test ({e}): results cover the intervals measured so far"
                ));
            }
        }
        Ok(())
    }

    /// The server's final reports, or what it sent live if they never came.
    pub(super) fn into_finished(self, spec: &TestSpec) -> Option<Finished> {
        if self.done.is_some() {
            return self.done;
        }
        (!self.live.is_empty()).then(|| reports_from_live(spec, self.live.into_values().collect()))
    }
}

/// Rebuilds the server's stream reports from the intervals it sent live, up to the first gap.
fn reports_from_live(spec: &TestSpec, mut live: Vec<IntervalReport>) -> Finished {
    live.sort_by_key(|r| (r.stream, r.index));
    let reports = spec
        .flows()
        .iter()
        .enumerate()
        .map(|(i, flow)| {
            let intervals: Vec<IntervalReport> = live
                .iter()
                .filter(|r| usize::from(r.stream) == i)
                .enumerate()
                .take_while(|(k, r)| r.index as usize == *k)
                .map(|(_, r)| r.clone())
                .collect();
            StreamReport {
                intervals,
                ..StreamReport::empty(
                    i as u16,
                    *flow,
                    session::role(*flow, false),
                    Some("the server sent no final report".into()),
                )
            }
        })
        .collect();
    Finished {
        reports,
        cpu: Default::default(),
    }
}
