//! Putting a test's two accounts together as they arrive: whole intervals released in order
//! once both ends reported them (`LiveMerger`), and the outcome of a finished test (`finish`).
//! Shared by netsweep's session and iperf3's.

use super::socket::TestError;
use crate::traffic::measure::{IntervalReport, Role};
use crate::traffic::result::{self, Interval, TestResult};
use crate::traffic::spec::{Flow, TestSpec};
use crate::traffic::timeline::Timeline;
use std::collections::HashMap;

/// The test's outcome: the result, or the error that ended it (or `contradiction` and the
/// inconsistencies found, including the implausible figures of `checks::implausible`)
/// carrying the result as measured.
pub(crate) fn finish(
    mut result: TestResult,
    error: Option<String>,
    contradiction: &str,
) -> Result<TestResult, TestError> {
    if error.is_none() {
        // Whoever measured them, figures no test can produce are not believed.
        for problem in crate::traffic::result::checks::implausible(&result) {
            if !result.inconsistencies.contains(&problem) {
                result.inconsistencies.push(problem);
            }
        }
    }
    let error = error.or_else(|| {
        (!result.inconsistencies.is_empty())
            .then(|| format!("{contradiction}: {}", result.inconsistencies.join("; ")))
    });
    match error {
        None => Ok(result),
        Some(message) => Err(TestError {
            message,
            partial: Some(Box::new(result)),
            refused: false,
        }),
    }
}

/// Pairs each stream's local and remote interval reports and releases whole intervals in order.
pub(crate) struct LiveMerger {
    spec: TestSpec,
    timeline: Timeline,
    flows: Vec<Flow>,
    /// (stream, index) -> (sender, receiver)
    pending: HashMap<(u16, u32), [Option<IntervalReport>; 2]>,
    next: u32,
}

impl LiveMerger {
    pub(crate) fn new(spec: &TestSpec) -> LiveMerger {
        LiveMerger {
            spec: spec.clone(),
            timeline: spec.timeline(),
            flows: spec.flows(),
            pending: HashMap::new(),
            next: 0,
        }
    }

    pub(crate) fn add(&mut self, report: IntervalReport, out: &mut dyn FnMut(&Interval)) {
        let side = usize::from(report.role == Role::Receiver);
        let key = (report.stream, report.index);
        if usize::from(report.stream) >= self.flows.len() {
            return;
        }
        self.pending.entry(key).or_default()[side] = Some(report);
        loop {
            let k = self.next;
            let Some(slot) = self.timeline.slots().get(k as usize).copied() else {
                return;
            };
            let ready = (0..self.flows.len() as u16).all(|s| {
                self.pending
                    .get(&(s, k))
                    .is_some_and(|p| p[0].is_some() && p[1].is_some())
            });
            if !ready {
                return;
            }
            let streams: Vec<_> = (0..self.flows.len())
                .map(|s| {
                    let p = self.pending.remove(&(s as u16, k)).unwrap_or_default();
                    result::merge_interval(
                        self.spec.protocol,
                        self.flows[s],
                        &slot,
                        p[0].as_ref(),
                        p[1].as_ref(),
                    )
                })
                .collect();
            out(&Interval::of_slot(k, &slot, streams));
            self.next += 1;
        }
    }
}
