//! A request/response test (`--test rr` or `crr`, netsweep's JSON `rr`) as the figures its
//! picture draws. The engine keeps no intervals for these tests, so the picture is the
//! distribution of every transaction's latency: the histogram's bins and the percentiles the
//! result reports (`traffic::rr::result`, HdrHistogram-style buckets).

use super::{Format, TestFacts, TestTimeline};
use crate::traffic::rr::result::RrResult;
use crate::traffic::spec::Protocol;
use serde_json::Value;

/// What a request/response test's picture shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transactions {
    /// "TCP rr", "UDP rr", "TCP crr".
    pub test: String,
    pub transactions: u64,
    pub per_second: f64,
    pub request_bytes: u32,
    pub response_bytes: u32,
    /// Connections (or UDP sockets) side by side.
    pub concurrency: u16,
    /// UDP: requests sent again after no response.
    pub lost: u64,
    /// p50, p90, p99, p99.9 and max, µs, as the result reports them.
    pub percentiles_us: Vec<(&'static str, f64)>,
    /// The histogram's non-empty bins: (low µs, high µs, transactions).
    pub bins_us: Vec<(f64, f64, u64)>,
    /// Transactions below the histogram's first bin and at or above its last.
    pub outside: (u64, u64),
}

impl Transactions {
    pub fn of(r: &RrResult) -> Transactions {
        let l = &r.latency_us;
        Transactions {
            test: format!(
                "{} {}",
                match r.protocol {
                    Protocol::Tcp => "TCP",
                    Protocol::Udp => "UDP",
                },
                r.test.name()
            ),
            transactions: r.transactions,
            per_second: r.transactions_per_second,
            request_bytes: r.request_bytes,
            response_bytes: r.response_bytes,
            concurrency: r.concurrency,
            lost: r.lost,
            percentiles_us: vec![
                ("p50", l.p50),
                ("p90", l.p90),
                ("p99", l.p99),
                ("p99.9", l.p99_9),
                ("max", l.max),
            ],
            bins_us: r.histogram.bins().collect(),
            outside: (r.histogram.below(), r.histogram.above()),
        }
    }

    /// The share of transactions at or below each bin's upper edge, percent: (µs, percent).
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let total = self
            .bins_us
            .iter()
            .fold(self.outside.0.saturating_add(self.outside.1), |a, b| {
                a.saturating_add(b.2)
            });
        if total == 0 {
            return Vec::new();
        }
        let mut below = self.outside.0;
        self.bins_us
            .iter()
            .map(|(_, high, n)| {
                below = below.saturating_add(*n);
                (*high, below as f64 * 100.0 / total as f64)
            })
            .collect()
    }
}

/// The `rr` object of `client --test rr --json` (or of a stored run) as a picture's input.
pub fn read(source: &str, rr: &Value) -> Result<TestTimeline, String> {
    let r: RrResult = serde_json::from_value(rr.clone()).map_err(|e| {
        format!("is not a request/response result this netsweep reads ({e}): was it written by another version?")
    })?;
    let l = &r.latency_us;
    let figures = [l.min, l.mean, l.p50, l.p90, l.p99, l.p99_9, l.max];
    if figures.iter().any(|v| !v.is_finite() || *v < 0.0)
        || !r.transactions_per_second.is_finite()
        || r.transactions_per_second < 0.0
    {
        return Err(
            "has a latency or rate that is negative or not a number (rr.latency_us, \
             rr.transactions_per_second)"
                .into(),
        );
    }
    Ok(TestTimeline {
        source: source.to_string(),
        format: Format::Netsweep,
        test: TestFacts {
            host: None,
            protocol: match r.protocol {
                Protocol::Tcp => "TCP".into(),
                Protocol::Udp => "UDP".into(),
            },
            direction: r.test.name().into(),
            duration_s: r.duration_s,
            streams: u32::from(r.concurrency),
            tool: None,
            started_unix: None,
        },
        totals: Vec::new(),
        streams: Vec::new(),
        latency: None,
        error: r.errors.first().cloned(),
        transactions: Some(Transactions::of(&r)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 transaction below the first bin, 2 + 5 in two bins, 2 at or above 10 s: the CDF is the
    /// share at or below each bin's upper edge of all 10.
    #[test]
    fn the_cdf_counts_every_transaction_to_each_bins_upper_edge() {
        let x = Transactions {
            bins_us: vec![(10.0, 11.2, 2), (50.1, 56.2, 5)],
            outside: (1, 2),
            ..Transactions::default()
        };
        assert_eq!(x.cdf(), vec![(11.2, 30.0), (56.2, 80.0)]);
        assert!(Transactions::default().cdf().is_empty());
    }

    #[test]
    fn a_damaged_result_is_refused_by_its_field() {
        let good = serde_json::json!({
            "test": "rr", "protocol": "udp", "request_bytes": 1, "response_bytes": 1,
            "concurrency": 2, "duration_s": 1.0, "transactions": 10,
            "transactions_per_second": 10.0, "bytes_sent": 10, "bytes_received": 10, "lost": 0,
            "latency_us": {"min": 1.0, "mean": 2.0, "p50": 2.0, "p90": 3.0, "p99": 3.0,
                           "p99_9": 3.0, "max": 3.0},
            "latency_method": "m",
            "histogram": {"bins_per_decade": 20, "min_us": 1.0, "below": 0, "above": 0,
                          "bins": []},
            "server": {"transactions": 10, "accepted_connections": 2, "bytes_received": 10,
                       "bytes_sent": 10}
        });
        let t = read("f", &good).unwrap();
        let x = t.transactions.unwrap();
        assert_eq!((x.test.as_str(), x.concurrency), ("UDP rr", 2));
        assert_eq!(x.percentiles_us[0], ("p50", 2.0));
        let mut bad = good.clone();
        bad["latency_us"]["p99"] = serde_json::json!(-1.0);
        assert!(read("f", &bad).unwrap_err().contains("rr.latency_us"));
        bad["transactions"] = serde_json::json!("many");
        assert!(read("f", &bad).unwrap_err().contains("another version"));
    }
}
