//! Histograms of times with fixed logarithmic bins: `BINS_PER_DECADE` bins per decade from
//! 1 µs to 10 s, plus a count below and above. Memory is fixed at any packet rate; a bin is
//! about 12% wide, so a peak is located to within that. In JSON only the bins that counted
//! something appear, as `[low_us, high_us, count]`.

use serde::{Deserialize, Serialize};

/// Bins per decade of time.
pub const BINS_PER_DECADE: u32 = 20;
/// Lowest bin edge, ns.
pub const MIN_NS: u64 = 1_000;
/// Decades covered: 1 µs to 10 s.
pub const DECADES: u32 = 7;
const BINS: usize = (BINS_PER_DECADE * DECADES) as usize;

/// A histogram of durations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Sparse", try_from = "Sparse")]
pub struct LogHistogram {
    counts: Vec<u64>,
    /// Below 1 µs (for arrival gaps: datagrams that came in one receive batch).
    below: u64,
    /// At or above 10 s.
    above: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: vec![0; BINS],
            below: 0,
            above: 0,
        }
    }
}

/// The lower edge of bin `i`, µs.
fn edge_us(i: usize) -> f64 {
    MIN_NS as f64 / 1e3 * 10f64.powf(i as f64 / f64::from(BINS_PER_DECADE))
}

impl LogHistogram {
    pub fn record_ns(&mut self, ns: u64) {
        self.record_ns_n(ns, 1);
    }

    /// Records `n` values of `ns` at once.
    pub fn record_ns_n(&mut self, ns: u64, n: u64) {
        if ns < MIN_NS {
            self.below = self.below.saturating_add(n);
            return;
        }
        let i = ((ns as f64 / MIN_NS as f64).log10() * f64::from(BINS_PER_DECADE)).floor();
        match self.counts.get_mut(i as usize) {
            Some(c) => *c = c.saturating_add(n),
            None => self.above = self.above.saturating_add(n),
        }
    }

    pub fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
        self.below = self.below.saturating_add(other.below);
        self.above = self.above.saturating_add(other.above);
    }

    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .fold(self.below.saturating_add(self.above), |a, b| {
                a.saturating_add(*b)
            })
    }

    /// The fullest bin as `(low_us, high_us, count)`, if any bin counted something.
    pub fn mode(&self) -> Option<(f64, f64, u64)> {
        let (i, c) = self
            .counts
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))?;
        (*c > 0).then(|| (edge_us(i), edge_us(i + 1), *c))
    }

    /// Non-empty bins as `(low_us, high_us, count)`.
    pub fn bins(&self) -> impl Iterator<Item = (f64, f64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (edge_us(i), edge_us(i + 1), *c))
    }

    pub fn below(&self) -> u64 {
        self.below
    }

    pub fn above(&self) -> u64 {
        self.above
    }
}

/// The JSON form.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sparse {
    bins_per_decade: u32,
    min_us: f64,
    below: u64,
    above: u64,
    bins: Vec<(f64, f64, u64)>,
}

impl From<LogHistogram> for Sparse {
    fn from(h: LogHistogram) -> Sparse {
        Sparse {
            bins_per_decade: BINS_PER_DECADE,
            min_us: MIN_NS as f64 / 1e3,
            below: h.below,
            above: h.above,
            bins: h.bins().collect(),
        }
    }
}

impl TryFrom<Sparse> for LogHistogram {
    type Error = String;

    fn try_from(s: Sparse) -> Result<LogHistogram, String> {
        if s.bins_per_decade != BINS_PER_DECADE || s.min_us != MIN_NS as f64 / 1e3 {
            return Err(format!(
                "a histogram of {} bins per decade from {} us: this build reads {BINS_PER_DECADE} from 1",
                s.bins_per_decade, s.min_us
            ));
        }
        if s.bins.len() > BINS {
            return Err(format!("{} bins, at most {BINS}", s.bins.len()));
        }
        let mut h = LogHistogram {
            below: s.below,
            above: s.above,
            ..LogHistogram::default()
        };
        for (lo, _, count) in s.bins {
            let i = ((lo / edge_us(0)).log10() * f64::from(BINS_PER_DECADE)).round();
            if !(0.0..BINS as f64).contains(&i) || (edge_us(i as usize) - lo).abs() > lo * 1e-6 {
                return Err(format!("no bin starts at {lo} us"));
            }
            h.counts[i as usize] = h.counts[i as usize].saturating_add(count);
        }
        Ok(h)
    }
}

/// What a UDP receiver saw of the timing of its datagrams (JSON `udp_timing`, per direction).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UdpTiming {
    /// Gaps between datagrams arriving in order, as the receiver read them (datagrams of one
    /// receive batch count below 1 µs).
    pub inter_arrival: LogHistogram,
    /// Each datagram's one-way delay above the lowest one seen before it on its stream
    /// (sender and receiver clocks need no synchronisation; the first datagrams set the floor).
    pub delay_above_min: LogHistogram,
    /// The longest nap the receiver took between drains at a high rate, µs (`udpnap`): gaps
    /// and delays shorter than it are the reads' timing, not the arrivals'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_nap_us: Option<u64>,
}

impl UdpTiming {
    pub fn merge(&mut self, other: &UdpTiming) {
        self.inter_arrival.merge(&other.inter_arrival);
        self.delay_above_min.merge(&other.delay_above_min);
        self.read_nap_us = self.read_nap_us.max(other.read_nap_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_their_bin_and_the_mode_is_the_fullest() {
        let mut h = LogHistogram::default();
        for _ in 0..100 {
            h.record_ns(112_000); // 112 µs: the gap of 1400 B at 100 Mbit/s
        }
        h.record_ns(500);
        h.record_ns(20_000_000_000);
        h.record_ns(5_000);
        let (lo, hi, c) = h.mode().unwrap();
        assert!(lo <= 112.0 && 112.0 < hi, "{lo}..{hi}");
        assert!(hi / lo < 1.13, "bins about 12% wide");
        assert_eq!(c, 100);
        assert_eq!((h.below(), h.above(), h.total()), (1, 1, 103));
        // Every value goes somewhere: edges of the range included.
        let mut e = LogHistogram::default();
        for ns in [999, 1_000, 9_999_999_999, 10_000_000_000, u64::MAX] {
            e.record_ns(ns);
        }
        assert_eq!((e.below(), e.above(), e.total()), (1, 2, 5));
    }

    #[test]
    fn json_is_sparse_round_trips_and_refuses_forged_bins() {
        let mut h = LogHistogram::default();
        for ns in [1_500, 1_500, 40_000, 7_000_000] {
            h.record_ns(ns);
        }
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json["bins"].as_array().unwrap().len(), 3);
        let back: LogHistogram = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, h);
        let mut forged = json.clone();
        forged["bins"][0][0] = serde_json::json!(1.2345);
        assert!(serde_json::from_value::<LogHistogram>(forged).is_err());
        let mut far = json;
        far["bins"][0][0] = serde_json::json!(1e12);
        assert!(serde_json::from_value::<LogHistogram>(far).is_err());
        let mut m = h.clone();
        m.merge(&h);
        assert_eq!(m.total(), 8);
    }
}
