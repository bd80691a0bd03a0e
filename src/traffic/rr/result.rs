//! The result of a request/response test (`RrResult`, JSON `rr`): transactions and their
//! rate, the latency distribution (`LatencySummary`, from every transaction: `hdr`) with its
//! histogram, bytes moved each way and the server's own counts. Built from the client's
//! per-connection `Outcome`s; rendered by `rr::output` and printed as JSON by the app.

use crate::traffic::histogram::LogHistogram;
use crate::traffic::result::{Summary, TestResult};
use crate::traffic::rr::engine::Outcome;
use crate::traffic::rr::hdr::LatencyHistogram;
use crate::traffic::rr::{RrMode, RrSpec, ServerCounts};
use crate::traffic::spec::{Protocol, TestSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How the percentiles are computed, as the JSON says it.
pub const LATENCY_METHOD: &str = "every transaction, nearest rank, HdrHistogram-style buckets: \
     reported values are at most 0.78% above the true percentile";

/// Transaction latencies, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl LatencySummary {
    pub fn of(h: &LatencyHistogram) -> LatencySummary {
        let us = |ns: Option<u64>| ns.map_or(0.0, |v| v as f64 / 1e3);
        LatencySummary {
            min: us(h.min_ns()),
            mean: h.mean_ns().map_or(0.0, |v| v / 1e3),
            p50: us(h.percentile_ns(50.0)),
            p90: us(h.percentile_ns(90.0)),
            p99: us(h.percentile_ns(99.0)),
            p99_9: us(h.percentile_ns(99.9)),
            max: us(h.max_ns()),
        }
    }
}

/// One request/response test's result (netsweep's JSON: `{"rr": ...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RrResult {
    /// `rr` or `crr`.
    pub test: RrMode,
    pub protocol: Protocol,
    pub request_bytes: u32,
    pub response_bytes: u32,
    pub concurrency: u16,
    /// From the start to the last connection's last transaction, seconds.
    pub duration_s: f64,
    pub transactions: u64,
    pub transactions_per_second: f64,
    /// crr: connections opened, answered and closed per second (one per transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_second: Option<f64>,
    /// Payload bytes of complete transactions, client to server and back.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// UDP: requests sent again after no response within `UDP_RESPONSE_WAIT`.
    pub lost: u64,
    pub latency_us: LatencySummary,
    pub latency_method: String,
    /// Every transaction's latency in logarithmic bins (20 a decade), as `[low_us, high_us,
    /// count]`.
    pub histogram: LogHistogram,
    /// What the server counted: responses, connections accepted, bytes.
    pub server: ServerCounts,
    /// What ended connections early, if anything did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Where each end pinned its connections' threads (`-A`), if it did.
    #[serde(
        default,
        skip_serializing_if = "crate::traffic::affinity::Affinity::is_unset"
    )]
    pub affinity: crate::traffic::affinity::Affinity,
    /// Microseconds each wait polled before it blocked (`--spin`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spin_us: Option<u64>,
}

impl RrResult {
    /// Merges the connections' outcomes of a test that ran for `elapsed`.
    pub fn new(
        spec: &RrSpec,
        outcomes: &[Outcome],
        elapsed: Duration,
        server: ServerCounts,
    ) -> RrResult {
        let mut latency = LatencyHistogram::default();
        let (mut transactions, mut sent, mut received, mut lost) = (0, 0, 0, 0);
        let mut errors = Vec::new();
        for o in outcomes {
            latency.merge(&o.latency);
            transactions += o.transactions;
            sent += o.bytes_sent;
            received += o.bytes_received;
            lost += o.lost;
            if let Some(e) = &o.error
                && !errors.contains(e)
            {
                errors.push(e.clone());
            }
        }
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            transactions as f64 / secs
        } else {
            0.0
        };
        RrResult {
            test: spec.mode,
            protocol: spec.protocol,
            request_bytes: spec.request_bytes,
            response_bytes: spec.response_bytes,
            concurrency: spec.concurrency,
            duration_s: secs,
            transactions,
            transactions_per_second: rate,
            connections_per_second: (spec.mode == RrMode::Crr).then_some(rate),
            bytes_sent: sent,
            bytes_received: received,
            lost,
            latency_us: LatencySummary::of(&latency),
            latency_method: LATENCY_METHOD.into(),
            histogram: latency.to_log(),
            server,
            errors,
            affinity: spec.affinity,
            spin_us: spec.spin_us,
        }
    }

    /// This result as a throughput test's document (a campaign stores runs so): the summary
    /// counts the payload both ways over the test, and `rr` holds the result itself.
    pub fn into_test_result(self, spec: &TestSpec) -> TestResult {
        let bytes = self.bytes_sent + self.bytes_received;
        let rate = |b: u64| {
            if self.duration_s > 0.0 {
                b as f64 * 8.0 / self.duration_s
            } else {
                0.0
            }
        };
        TestResult {
            netsweep_version: env!("CARGO_PKG_VERSION").to_string(),
            spec: spec.clone(),
            start: Default::default(),
            intervals: Vec::new(),
            summary: Summary {
                seconds: self.duration_s,
                bytes,
                bits_per_second: rate(bytes),
                sent_bytes: bytes,
                sent_bits_per_second: rate(bytes),
                ..Summary::default()
            },
            directions: Vec::new(),
            cpu: Default::default(),
            error: self.errors.first().cloned(),
            inconsistencies: Vec::new(),
            warnings: Vec::new(),
            peer: None,
            provenance: None,
            latency: None,
            ending: None,
            interrupted: None,
            rfc6349: None,
            server_output: None,
            rr: Some(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_merge_into_rates_and_ordered_percentiles() {
        let spec = RrSpec::tcp(RrMode::Crr, Duration::from_secs(2));
        let mut a = Outcome::default();
        let mut b = Outcome::default();
        for i in 1..=1000u64 {
            let o = if i % 2 == 0 { &mut a } else { &mut b };
            o.latency.record_ns(i * 1_000);
            o.transactions += 1;
            o.bytes_sent += 1;
            o.bytes_received += 1;
        }
        b.error = Some("gone".into());
        let r = RrResult::new(
            &spec,
            &[a, b],
            Duration::from_secs(2),
            ServerCounts::default(),
        );
        assert_eq!(r.transactions, 1000);
        assert_eq!(r.transactions_per_second, 500.0);
        assert_eq!(r.connections_per_second, Some(500.0));
        let l = r.latency_us;
        assert!(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p99_9);
        assert!(l.p99_9 <= l.max && l.max == 1000.0 && l.mean == 500.5);
        assert_eq!(r.errors, vec!["gone".to_string()]);
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["latency_us"]["p99_9"], l.p99_9);
        assert_eq!(j["test"], "crr");
        assert!(
            j["histogram"]["bins"]
                .as_array()
                .is_some_and(|b| !b.is_empty())
        );
    }
}
