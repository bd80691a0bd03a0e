//! The interval grid of a test: omitted warm-up intervals, then measured intervals, ending at
//! `omit + duration`. Both ends build the same grid from the same `TestSpec`, so interval `k` on
//! the client and interval `k` on the server cover the same part of the test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Where one end's grid stops: after every slot of the timeline, or earlier once a
/// `duration = "auto"` test's rates are steady. Shared by the stream threads of one end, which
/// read it on every turn; it only ever moves earlier.
#[derive(Debug)]
pub struct Cut(AtomicUsize);

impl Cut {
    pub fn new(slots: usize) -> Cut {
        Cut(AtomicUsize::new(slots))
    }

    /// Ends the grid after `slots` slots; a later cut is ignored.
    pub fn at(&self, slots: usize) {
        self.0.fetch_min(slots, Ordering::Relaxed);
    }

    pub fn slots(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One cell of the grid, in time since the start of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub start: Duration,
    pub end: Duration,
    /// Part of the warm-up (`-O`), excluded from the summary.
    pub omitted: bool,
}

/// The grid. Warm-up slots first; the warm-up always ends on a slot boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    slots: Vec<Slot>,
}

impl Timeline {
    /// Builds the grid; `interval` must be non-zero.
    pub fn new(omit: Duration, interval: Duration, duration: Duration) -> Timeline {
        let interval = interval.max(Duration::from_millis(1));
        let mut slots = Vec::new();
        let mut push_phase = |from: Duration, len: Duration, omitted: bool| {
            let mut t = Duration::ZERO;
            while t < len {
                let end = (t + interval).min(len);
                slots.push(Slot {
                    start: from + t,
                    end: from + end,
                    omitted,
                });
                t = end;
            }
        };
        push_phase(Duration::ZERO, omit, true);
        push_phase(omit, duration, false);
        Timeline { slots }
    }

    /// Marks the first `n` measured slots omitted too (the initial transient a
    /// `duration = "auto"` test found); the grid itself is unchanged.
    pub fn omit_leading(mut self, n: usize) -> Timeline {
        for slot in self.slots.iter_mut().filter(|s| !s.omitted).take(n) {
            slot.omitted = true;
        }
        self
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// When the senders stop.
    pub fn end(&self) -> Duration {
        self.slots.last().map(|s| s.end).unwrap_or_default()
    }

    /// The fewest slots a grid cut early keeps: through the first measured one, so a cut
    /// during the warm-up still measures an interval.
    pub fn least_kept(&self) -> usize {
        self.slots
            .iter()
            .position(|s| !s.omitted)
            .map_or(self.slots.len(), |i| i + 1)
    }

    /// The slot containing `elapsed`, or `None` at or after the end.
    pub fn index_at(&self, elapsed: Duration) -> Option<usize> {
        if elapsed >= self.end() {
            return None;
        }
        // Slots are sorted and contiguous: binary search on the end times.
        let i = self.slots.partition_point(|s| s.end <= elapsed);
        (i < self.slots.len()).then_some(i)
    }

    /// The measured seconds of the first `closed` slots (warm-up excluded), each cut at
    /// `stopped` when streams were stopped early.
    pub fn measured_of(&self, closed: usize, stopped: Option<Duration>) -> f64 {
        self.slots[..closed.min(self.slots.len())]
            .iter()
            .filter(|s| !s.omitted)
            .map(|s| {
                let end = stopped.map_or(s.end, |t| s.end.min(t));
                end.saturating_sub(s.start).as_secs_f64()
            })
            .sum()
    }

    /// The measured span (excluding warm-up).
    pub fn measured(&self) -> Duration {
        self.slots
            .iter()
            .filter(|s| !s.omitted)
            .map(|s| s.end - s.start)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn a_transient_is_omitted_on_the_same_grid_and_a_cut_only_moves_earlier() {
        let plain = Timeline::new(ms(300), ms(250), ms(2000));
        let t = plain.clone().omit_leading(3);
        assert_eq!(t.len(), plain.len());
        assert_eq!(t.end(), plain.end());
        let omitted: Vec<bool> = t.slots().iter().map(|s| s.omitted).collect();
        // Two warm-up slots (0-250, 250-300), then three of the transient.
        assert_eq!(omitted[..6], [true, true, true, true, true, false]);
        assert_eq!(t.measured(), ms(2000 - 750));
        let cut = Cut::new(t.len());
        cut.at(6);
        cut.at(9);
        assert_eq!(cut.slots(), 6);
    }

    #[test]
    fn grid_without_warmup() {
        let t = Timeline::new(Duration::ZERO, ms(1000), ms(2500));
        let ends: Vec<_> = t.slots().iter().map(|s| s.end).collect();
        assert_eq!(ends, vec![ms(1000), ms(2000), ms(2500)]);
        assert!(t.slots().iter().all(|s| !s.omitted));
        assert_eq!(t.measured(), ms(2500));
    }

    #[test]
    fn warmup_ends_on_a_boundary() {
        let t = Timeline::new(ms(1500), ms(1000), ms(2000));
        let cells: Vec<_> = t
            .slots()
            .iter()
            .map(|s| (s.start, s.end, s.omitted))
            .collect();
        assert_eq!(
            cells,
            vec![
                (ms(0), ms(1000), true),
                (ms(1000), ms(1500), true),
                (ms(1500), ms(2500), false),
                (ms(2500), ms(3500), false)
            ]
        );
        assert_eq!(t.measured(), ms(2000));
        assert_eq!(t.end(), ms(3500));
    }

    #[test]
    fn index_lookup_covers_every_instant() {
        let t = Timeline::new(ms(500), ms(1000), ms(2000));
        assert_eq!(t.index_at(ms(0)), Some(0));
        assert_eq!(t.index_at(ms(499)), Some(0));
        assert_eq!(t.index_at(ms(500)), Some(1));
        assert_eq!(t.index_at(ms(1499)), Some(1));
        assert_eq!(t.index_at(ms(2499)), Some(2));
        assert_eq!(t.index_at(ms(2500)), None);
    }
}
