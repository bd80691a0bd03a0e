//! Latency under load: small timestamped UDP probes sent beside a test and echoed by the
//! server, in the spirit of flent's RRUL. `probe` is the datagram format (token-protected like
//! every data flow), `echo` the server's echo loop, `prober` the client's send/receive loop, and
//! `summary` the pure part that turns probe records into idle and loaded percentiles, the
//! latency the load added, probe loss and one-way delay variation per direction.
//!
//! One-way delays are measured between two clocks that are not synchronised; only their
//! variation relative to their minimum is reported, which needs no synchronisation (the clocks'
//! drift over a test, parts per million, is the error).
//!
//! # The probe's own cost
//! On a host whose cores are all busy with the test (loopback on 2 cores: one sender and one
//! receiver each keep a core full), every wake-up of another thread costs throughput well
//! beyond its few microseconds of CPU: measured on a 2-vCPU VM, a bare thread sleeping 10 ms in
//! a loop cost 2-5% of a 40 Gbit/s loopback stream, `ping -i 0.01` 7-8%, and the first prober
//! (three wake-ups per probe: send timer, echo, answer) 9-15%. So the prober wakes once per
//! probe: it sends, takes every echo queued since the previous probe with the kernel's arrival
//! stamp (SO_TIMESTAMPNS, so the time the echo waited for the thread is not in the round trip),
//! and sleeps to the next probe; the echo wakes once per probe. Both run at the lowest
//! real-time priority where allowed (`platform::sched`), so they neither queue behind the busy
//! threads (their timestamps would carry the host's CPU load) nor disturb their placement. With
//! that, the cost on loopback is within the run-to-run noise (`bench/latency.py`).

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
