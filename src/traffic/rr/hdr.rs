//! Transaction latencies with bounded relative error, after HdrHistogram (Gil Tene,
//! <http://hdrhistogram.org>, "High Dynamic Range Histogram"): values below 256 ns are kept
//! exactly; above, each power of two is split into 128 linear sub-buckets, so a bucket is less
//! than 1/128 (0.78%) of its lower edge wide. Every transaction is recorded (no sampling), in
//! fixed memory (7,424 counters, 58 KiB) at any rate and duration.
//!
//! A percentile is nearest-rank over all recorded values (the smallest value with at least
//! `ceil(q * n)` values at or below it), reported as the highest value of its bucket clamped to
//! the exact maximum, as HdrHistogram's `valueAtPercentile` does: never below the true
//! percentile, and above it by less than 0.78%. Minimum, maximum, mean and count are exact.
//! Tested against percentiles computed from the sorted samples.

use crate::traffic::histogram::LogHistogram;

/// Linear sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Values below this are their own bucket.
const EXACT: u64 = 2 * SUB;
/// Exact buckets, then 128 for each power of two from 2^8 to 2^63.
const BUCKETS: usize = EXACT as usize + (64 - SUB_BITS as usize - 1) * SUB as usize;
/// The bound on a reported percentile's relative error.
pub const RELATIVE_ERROR: f64 = 1.0 / SUB as f64;

/// Latencies in nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    n: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: vec![0; BUCKETS],
            n: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }
}

fn index(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    let shift = e - SUB_BITS;
    let m = v >> shift;
    (EXACT + u64::from(shift - 1) * SUB + (m - SUB)) as usize
}

/// The lowest and highest value of bucket `i`.
fn bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < EXACT {
        return (i, i);
    }
    let j = i - EXACT;
    let shift = j / SUB + 1;
    let m = j % SUB + SUB;
    let low = m << shift;
    let high = ((u128::from(m) + 1) << shift) - 1;
    (low, u64::try_from(high).unwrap_or(u64::MAX))
}

impl LatencyHistogram {
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.n += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, o: &LatencyHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += *b;
        }
        self.n += o.n;
        self.sum_ns += o.sum_ns;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    pub fn min_ns(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min_ns)
    }

    pub fn max_ns(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max_ns)
    }

    pub fn mean_ns(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_ns as f64 / self.n as f64)
    }

    /// The `q`-th percentile (0 < q <= 100), nearest rank; `None` when empty.
    pub fn percentile_ns(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q / 100.0 * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(bounds(i).1.clamp(self.min_ns, self.max_ns));
            }
        }
        Some(self.max_ns)
    }

    /// The same values in the report's coarser logarithmic bins (each bucket's middle goes to
    /// the bin that holds it).
    pub fn to_log(&self) -> LogHistogram {
        let mut h = LogHistogram::default();
        for (i, c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (lo, hi) = bounds(i);
            h.record_ns_n(lo / 2 + hi / 2, *c);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest-rank percentile of sorted values (the reference).
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn buckets_tile_the_range_and_stay_narrow() {
        assert_eq!(index(0), 0);
        assert_eq!(index(255), 255);
        assert_eq!(index(256), 256);
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        for i in 1..BUCKETS {
            let (lo, hi) = bounds(i);
            assert_eq!(
                bounds(i - 1).1 + 1,
                lo,
                "bucket {i} starts where {} ends",
                i - 1
            );
            assert_eq!((index(lo), index(hi)), (i, i));
            assert!((hi - lo) as f64 <= lo as f64 * RELATIVE_ERROR, "bucket {i}");
        }
    }

    #[test]
    fn percentiles_of_one_to_a_thousand_microseconds_match_the_reference() {
        let mut h = LatencyHistogram::default();
        for us in 1..=1000u64 {
            h.record_ns(us * 1000);
        }
        // Nearest rank over 1..=1000 µs: p50 = 500, p90 = 900, p99 = 990, p99.9 = 999.
        for (q, want_us) in [(50.0, 500.0), (90.0, 900.0), (99.0, 990.0), (99.9, 999.0)] {
            let got = h.percentile_ns(q).unwrap() as f64 / 1000.0;
            assert!(
                got >= want_us && got <= want_us * (1.0 + RELATIVE_ERROR),
                "p{q}: {got} µs, want {want_us}"
            );
        }
        assert_eq!(h.percentile_ns(100.0), Some(1_000_000));
        assert_eq!(
            (h.min_ns(), h.max_ns(), h.count()),
            (Some(1000), Some(1_000_000), 1000)
        );
        assert_eq!(h.mean_ns(), Some(500_500.0));
    }

    #[test]
    fn percentiles_of_random_latencies_are_within_the_bound_of_the_sorted_samples() {
        // A long-tailed mix: most near 20 µs, some near 2 ms, a few near 50 ms.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut values = Vec::new();
        let mut h = LatencyHistogram::default();
        for _ in 0..100_000 {
            let r = next();
            let v = match r % 1000 {
                0..=949 => 15_000 + r % 10_000,
                950..=997 => 1_500_000 + r % 1_000_000,
                _ => 40_000_000 + r % 20_000_000,
            };
            values.push(v);
            h.record_ns(v);
        }
        values.sort_unstable();
        for q in [1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0] {
            let want = exact(&values, q);
            let got = h.percentile_ns(q).unwrap();
            assert!(
                got >= want && (got - want) as f64 <= want as f64 * RELATIVE_ERROR,
                "p{q}: {got} vs {want}"
            );
        }
        // Merging two halves gives the same as recording all.
        let (mut a, mut b) = (LatencyHistogram::default(), LatencyHistogram::default());
        for (i, v) in values.iter().enumerate() {
            if i % 2 == 0 { &mut a } else { &mut b }.record_ns(*v);
        }
        a.merge(&b);
        assert_eq!(a.percentile_ns(99.0), h.percentile_ns(99.0));
        assert_eq!(a.count(), 100_000);
        assert_eq!(h.to_log().total(), 100_000);
    }

    #[test]
    fn an_empty_histogram_has_no_percentiles() {
        let h = LatencyHistogram::default();
        assert_eq!(
            (h.percentile_ns(50.0), h.max_ns(), h.mean_ns()),
            (None, None, None)
        );
        let mut one = LatencyHistogram::default();
        one.record_ns(123);
        assert_eq!(one.percentile_ns(99.9), Some(123));
    }
}
