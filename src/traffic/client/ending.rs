//! The client's side of `duration = "auto"`: it reads the merged interval rates as they are
//! released, and once they are steady (`steady::read`) cuts its grid at a slot boundary far
//! enough ahead for the server to hear of it, and tells the server where (`ClientMsg::End`).

use crate::traffic::result::Interval;
use crate::traffic::spec::TestSpec;
use crate::traffic::steady::{self, Ending, Reading, Steady};
use crate::traffic::timeline::Timeline;
use std::time::Duration;

/// Least time left in the current slot for a cut at its end: the `End` message must reach the
/// server before its grid passes the boundary.
const MARGIN: Duration = Duration::from_millis(50);

pub(super) struct AutoEnd {
    rule: Steady,
    interval: Duration,
    timeline: Timeline,
    rates: Vec<f64>,
    reading: Option<Reading>,
    /// Slots kept, once the cut is decided.
    cut: Option<usize>,
}

impl AutoEnd {
    /// For a spec with `duration = "auto"`.
    pub(super) fn new(spec: &TestSpec) -> Option<AutoEnd> {
        spec.steady.map(|rule| AutoEnd {
            rule,
            interval: spec.interval,
            timeline: spec.timeline(),
            rates: Vec::new(),
            reading: None,
            cut: None,
        })
    }

    /// Takes one merged interval (in order).
    pub(super) fn take(&mut self, iv: &Interval) {
        if iv.omitted || self.cut.is_some() {
            return;
        }
        self.rates.push(iv.total.bits_per_second);
        self.reading = steady::read(&self.rule, self.interval, &self.rates);
    }

    /// Where to cut, once: when the rates are steady, `elapsed` into the grid, with the
    /// control connection's round trip `rtt`.
    pub(super) fn due(&mut self, elapsed: Duration, rtt: Duration) -> Option<usize> {
        if self.cut.is_some() || !self.reading.is_some_and(|r| r.steady) {
            return None;
        }
        let at = cut_slot(&self.timeline, elapsed, MARGIN.max(rtt * 2))?;
        self.cut = Some(at);
        Some(at)
    }

    /// The test as it ran: its duration up to the cut, and the initial transient MSER found
    /// (when the rates were steady) left out like `omit`.
    pub(super) fn as_run(&self, spec: &TestSpec) -> TestSpec {
        let mut ran = match self.cut {
            Some(slots) => cut_at(spec, &self.timeline, slots),
            None => spec.clone(),
        };
        if let Some(r) = self.reading.filter(|r| r.steady) {
            ran.transient = u32::try_from(r.intervals - r.used).unwrap_or(0);
        }
        ran
    }

    /// How the test ended, given its result's measured seconds.
    pub(super) fn ending(&self, spec: &TestSpec, measured_s: f64, ceiling: Duration) -> Ending {
        Ending {
            rule: self.rule,
            measured_s,
            transient_s: spec.transient as f64 * self.interval.as_secs_f64(),
            ceiling_s: ceiling.as_secs_f64(),
            reading: self.reading,
        }
    }
}

/// `spec` as it ran when its grid was cut after `slots`: its measured part ends there.
pub(super) fn cut_at(spec: &TestSpec, timeline: &Timeline, slots: usize) -> TestSpec {
    let mut ran = spec.clone();
    if let Some(end) = slots
        .checked_sub(1)
        .and_then(|last| timeline.slots().get(last))
    {
        let run = end.end.saturating_sub(spec.warmup());
        if !run.is_zero() {
            ran.duration = run.min(spec.duration);
        }
    }
    ran
}

/// Where the command line's first interrupt, `elapsed` into the grid, ends a timed test: the
/// end of the interval running, or of the next when the server could not hear of it in time
/// (`cut_slot`), and never inside the warm-up (the first measured interval is kept). `None`
/// once the grid is over: the test is ending anyway.
pub(super) fn interrupt_cut(
    timeline: &Timeline,
    elapsed: Duration,
    rtt: Duration,
) -> Option<usize> {
    let slots = cut_slot(timeline, elapsed, MARGIN.max(rtt * 2))?;
    Some(slots.max(timeline.least_kept()).min(timeline.len()))
}

/// The slot count to cut the grid at, `elapsed` into it: the end of the current slot when at
/// least `margin` of it is left, else the end of the next one; `None` once the grid is over.
pub(super) fn cut_slot(timeline: &Timeline, elapsed: Duration, margin: Duration) -> Option<usize> {
    let cur = timeline.index_at(elapsed)?;
    let left = timeline.slots()[cur].end.saturating_sub(elapsed);
    Some(if left >= margin {
        cur + 1
    } else {
        (cur + 2).min(timeline.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Timeline {
        Timeline::new(
            Duration::from_secs(1),
            Duration::from_millis(500),
            Duration::from_secs(5),
        )
    }

    #[test]
    fn an_interrupt_cuts_at_the_interval_running_and_never_inside_the_warm_up() {
        let ms = Duration::from_millis;
        // 1 s warm-up, 0.5 s slots, 5 s measured: slot 2 is the first measured one.
        assert_eq!(interrupt_cut(&grid(), ms(300), ms(1)), Some(3));
        assert_eq!(interrupt_cut(&grid(), ms(2100), ms(1)), Some(5));
        // Too close to the boundary for the server to hear: the next one.
        assert_eq!(interrupt_cut(&grid(), ms(2480), ms(1)), Some(6));
        // A long round trip widens the margin.
        assert_eq!(interrupt_cut(&grid(), ms(2300), ms(150)), Some(6));
        assert_eq!(interrupt_cut(&grid(), ms(5990), ms(1)), Some(12));
        assert_eq!(interrupt_cut(&grid(), ms(6000), ms(1)), None);
        // The test as it ran: 2.5 s into the grid is 1.5 s measured.
        let spec = TestSpec {
            omit: Duration::from_secs(1),
            calibration: Duration::ZERO,
            interval: ms(500),
            ..TestSpec::tcp(Duration::from_secs(5))
        };
        assert_eq!(cut_at(&spec, &grid(), 5).duration, ms(1500));
        assert_eq!(cut_at(&spec, &grid(), 12).duration, Duration::from_secs(5));
    }

    #[test]
    fn the_cut_is_the_current_slots_end_with_time_to_spare_else_the_next() {
        let ms = Duration::from_millis;
        // Slots of 0.5 s; at 2.1 s the fifth (index 4) runs until 2.5 s.
        assert_eq!(cut_slot(&grid(), ms(2100), ms(50)), Some(5));
        assert_eq!(cut_slot(&grid(), ms(2480), ms(50)), Some(6));
        // In the last slot, the grid ends there anyway.
        assert_eq!(cut_slot(&grid(), ms(5990), ms(50)), Some(12));
        assert_eq!(cut_slot(&grid(), ms(6000), ms(50)), None);
    }
}
