//! UDP receive bookkeeping, pure: which sequence numbers were seen (duplicates, reordering) and
//! the RFC 3550 interarrival jitter estimate.

/// How far back (in sequence numbers) duplicates are recognised.
const WINDOW: u64 = 1 << 18;

/// What a datagram's sequence number says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// First time seen, in order.
    InOrder,
    /// First time seen, after a higher number.
    OutOfOrder,
    /// Seen before.
    Duplicate,
}

/// Tracks seen sequence numbers in a sliding bitmap of `WINDOW` entries.
#[derive(Debug, Clone)]
pub struct SequenceTracker {
    highest: Option<u64>,
    bits: Vec<u64>,
}

impl Default for SequenceTracker {
    fn default() -> Self {
        SequenceTracker {
            highest: None,
            bits: vec![0; (WINDOW / 64) as usize],
        }
    }
}

impl SequenceTracker {
    fn slot(seq: u64) -> (usize, u64) {
        let i = seq % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// The highest sequence number seen so far.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    pub fn record(&mut self, seq: u64) -> Arrival {
        match self.highest {
            Some(h) if seq <= h => {
                if h - seq >= WINDOW {
                    // Too old to tell; count it as new rather than hide a datagram.
                    return Arrival::OutOfOrder;
                }
                let (w, b) = Self::slot(seq);
                if self.bits[w] & b != 0 {
                    return Arrival::Duplicate;
                }
                self.bits[w] |= b;
                Arrival::OutOfOrder
            }
            _ => {
                let from = self.highest.map(|h| h + 1).unwrap_or(seq);
                // Clear the bits of numbers skipped over, so old marks do not read as duplicates.
                if seq - from >= WINDOW {
                    self.bits.iter_mut().for_each(|w| *w = 0);
                } else {
                    for s in from..seq {
                        let (w, b) = Self::slot(s);
                        self.bits[w] &= !b;
                    }
                }
                let (w, b) = Self::slot(seq);
                self.bits[w] |= b;
                self.highest = Some(seq);
                Arrival::InOrder
            }
        }
    }
}

/// RFC 3550 section 6.4.1 interarrival jitter, in nanoseconds.
///
/// `transit = arrival - send`; both clocks may have any constant offset, which cancels.
#[derive(Debug, Clone, Default)]
pub struct Jitter {
    last_transit: Option<i128>,
    estimate_ns: f64,
}

impl Jitter {
    pub fn update(&mut self, send_ns: u64, arrival_ns: u64) {
        let transit = i128::from(arrival_ns) - i128::from(send_ns);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.estimate_ns += (d - self.estimate_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    pub fn millis(&self) -> f64 {
        self.estimate_ns / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_order_and_duplicates() {
        let mut t = SequenceTracker::default();
        assert_eq!(t.record(0), Arrival::InOrder);
        assert_eq!(t.record(2), Arrival::InOrder);
        assert_eq!(t.record(1), Arrival::OutOfOrder);
        assert_eq!(t.record(1), Arrival::Duplicate);
        assert_eq!(t.record(2), Arrival::Duplicate);
        assert_eq!(t.record(3), Arrival::InOrder);
    }

    #[test]
    fn skipped_numbers_are_not_mistaken_for_duplicates_after_wrapping() {
        let mut t = SequenceTracker::default();
        t.record(5);
        t.record(5 + WINDOW + 10);
        // 5 + WINDOW shares a bitmap slot with 5 but was never seen.
        assert_eq!(t.record(5 + WINDOW), Arrival::OutOfOrder);
        assert_eq!(t.record(1), Arrival::OutOfOrder);
    }

    #[test]
    fn constant_delay_has_no_jitter() {
        let mut j = Jitter::default();
        for i in 0..100u64 {
            j.update(i * 1000, i * 1000 + 5_000_000);
        }
        assert_eq!(j.millis(), 0.0);
    }

    #[test]
    fn alternating_delay_converges_to_its_swing() {
        // Transit alternates 1 ms and 3 ms: |D| = 2 ms every packet, so J -> 2 ms.
        let mut j = Jitter::default();
        for i in 0..1000u64 {
            let delay = if i % 2 == 0 { 1_000_000 } else { 3_000_000 };
            j.update(i * 10_000_000, i * 10_000_000 + delay);
        }
        assert!((j.millis() - 2.0).abs() < 1e-6, "{}", j.millis());
    }
}
