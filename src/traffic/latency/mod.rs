//! Latency under load: small timestamped UDP probes sent beside a test and echoed by the
//! server, in the spirit of flent's RRUL. `probe` is the datagram format (token-protected like
//! every data flow), `echo` the server's echo loop, `prober` the client's send/receive loop, and
//! `summary` the pure part that turns probe records into idle and loaded percentiles, the
//! latency the load added, probe loss and one-way delay variation per direction.
//!
//! One-way delays are measured between two clocks that are not synchronised; only their
//! variation relative to their minimum is reported, which needs no synchronisation (the clocks'
//! drift over a test, parts per million, is the error).

pub mod echo;
pub mod probe;
pub mod prober;
pub mod summary;

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the client asks for: the probe rate and the idle baseline before the load starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySpec {
    /// Probes per second.
    pub probe_rate_hz: u32,
    /// Probing before the load starts, for the idle baseline.
    #[serde(with = "crate::traffic::spec::micros", rename = "idle_us")]
    pub idle: Duration,
}

/// Default probe rate (`--probe-rate`).
pub const DEFAULT_PROBE_RATE: u32 = 100;
/// Default idle baseline (`--latency-idle`).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(2);
/// Highest probe rate accepted: a probe every millisecond.
pub const MAX_PROBE_RATE: u32 = 1000;
/// Longest idle baseline accepted.
pub const MAX_IDLE: Duration = Duration::from_secs(60);

impl Default for LatencySpec {
    fn default() -> Self {
        LatencySpec {
            probe_rate_hz: DEFAULT_PROBE_RATE,
            idle: DEFAULT_IDLE,
        }
    }
}

impl LatencySpec {
    /// Why this is not runnable, if it is not.
    pub fn problem(&self) -> Option<String> {
        if self.probe_rate_hz == 0 || self.probe_rate_hz > MAX_PROBE_RATE {
            return Some(format!(
                "probe rate must be between 1 and {MAX_PROBE_RATE} per second (--probe-rate), got {}",
                self.probe_rate_hz
            ));
        }
        if self.idle > MAX_IDLE {
            return Some(format!(
                "idle baseline must be at most {}s (--latency-idle), got {:.1}s",
                MAX_IDLE.as_secs(),
                self.idle.as_secs_f64()
            ));
        }
        None
    }
}
