//! Why a server refuses a test under its limits, typed: each caller words it in its user's
//! terms (the command line's `--max-rate` and `-b` for a server's client, the tool
//! configuration's `max_rate` and the spec's `bandwidth` for pScheduler's `can-run`).

use super::{ServerLimits, TestSpec};
use crate::units::BitRate;
use std::fmt;
use std::time::Duration;

/// A limit a test exceeds.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The time asked (idle baseline, warm-up, duration) beyond `max`.
    Duration { asked: Duration, max: Duration },
    /// More streams than `max`.
    Streams { asked: u16, max: u16 },
    /// More interval reports (`flows` x `intervals`) than `max`.
    Intervals {
        flows: usize,
        intervals: u64,
        max: u64,
    },
    /// The total rate asked of one direction (0: unlimited) above `max_bps`, over `streams`.
    Rate {
        asked_bps: f64,
        max_bps: f64,
        streams: u16,
    },
    /// `--server-bitrate-limit`'s own refusal, in its words.
    BitrateLimit(String),
}

impl Refusal {
    /// The rate asked in words: "unlimited" for none.
    pub fn rate_words(asked_bps: f64) -> String {
        if asked_bps == 0.0 {
            "unlimited".to_string()
        } else {
            BitRate(asked_bps).to_string()
        }
    }
}

/// In the command line's words, to a server's client.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Duration { asked, max } => write!(
                f,
                "test of {:.1}s exceeds this server's --max-duration of {:.1}s",
                asked.as_secs_f64(),
                max.as_secs_f64()
            ),
            Refusal::Streams { asked, max } => write!(
                f,
                "{asked} streams exceed this server's --max-streams of {max}"
            ),
            Refusal::Intervals {
                flows,
                intervals,
                max,
            } => write!(
                f,
                "{flows} streams x {intervals} intervals make {} interval reports, more than \
                 this server's --max-intervals of {max}: use a longer -i",
                intervals.saturating_mul(*flows as u64)
            ),
            Refusal::Rate {
                asked_bps,
                max_bps,
                streams,
            } => {
                // -b is each stream's rate: the advice divides the limit among them (a trial's
                // `-P 2 -b 300M` was told "-b 500 Mbits/sec or less", which asks 1 Gbit/s).
                write!(
                    f,
                    "rate {} exceeds this server's --max-rate of {}: ask for -b {} or less",
                    Refusal::rate_words(*asked_bps),
                    BitRate(*max_bps),
                    BitRate(max_bps / f64::from(*streams))
                )?;
                if *streams > 1 {
                    write!(f, " (-b is each stream's rate: {streams} streams)")?;
                }
                Ok(())
            }
            Refusal::BitrateLimit(why) => f.write_str(why),
        }
    }
}

impl ServerLimits {
    /// Why this server refuses `spec`, if it does.
    pub fn refusal(&self, spec: &TestSpec) -> Option<Refusal> {
        // The asked time (idle baseline, warm-up, duration): the send path calibration is
        // netsweep's own and not the user's to count (`-t 2` under `--max-duration 2`).
        let asked = spec
            .wall_time()
            .saturating_sub(spec.effective_calibration());
        if asked > self.max_duration {
            return Some(Refusal::Duration {
                asked,
                max: self.max_duration,
            });
        }
        if spec.streams > self.max_streams {
            return Some(Refusal::Streams {
                asked: spec.streams,
                max: self.max_streams,
            });
        }
        if spec.interval_records() > self.max_interval_records {
            return Some(Refusal::Intervals {
                flows: spec.flows().len(),
                intervals: spec.interval_count(),
                max: self.max_interval_records,
            });
        }
        // `bitrate_bps` is one direction's total; --bidir asks it of both.
        let directions = spec.flows().len() / usize::from(spec.streams.max(1));
        if let Some(why) = self
            .bitrate_limit
            .and_then(|l| l.refusal(spec.bitrate_bps * directions as f64, spec.flows().len()))
        {
            return Some(Refusal::BitrateLimit(why));
        }
        if self.max_rate_bps > 0.0
            && (spec.bitrate_bps == 0.0 || spec.bitrate_bps > self.max_rate_bps)
        {
            return Some(Refusal::Rate {
                asked_bps: spec.bitrate_bps,
                max_bps: self.max_rate_bps,
                streams: spec.streams.max(1),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(limits: &ServerLimits, spec: &TestSpec) -> Option<String> {
        limits.refusal(spec).map(|r| r.to_string())
    }

    #[test]
    fn limits_refuse_before_traffic() {
        let limits = ServerLimits {
            max_rate_bps: 1e9,
            ..ServerLimits::default()
        };
        let spec = TestSpec::udp(Duration::from_secs(1));
        assert!(limits.refusal(&spec).is_none());
        let fast = TestSpec {
            bitrate_bps: 0.0,
            ..spec.clone()
        };
        assert!(words(&limits, &fast).unwrap().contains("--max-rate"));
        // -P 2 -b 600M: the advice is per stream, as -b is (a trial read "-b 1.00 Gbits/sec").
        let two_streams = TestSpec {
            streams: 2,
            bitrate_bps: 1.2e9,
            ..spec.clone()
        };
        let why = words(&limits, &two_streams).unwrap();
        assert!(
            why.contains("ask for -b 500 Mbits/sec or less (-b is each stream's rate: 2 streams)"),
            "{why}"
        );
        let long = TestSpec {
            duration: Duration::from_secs(7200),
            ..spec.clone()
        };
        assert!(words(&limits, &long).unwrap().contains("--max-duration"));
        // The 0.3 s send path calibration is not the user's: -t 2 fits --max-duration 2.
        let two = ServerLimits {
            max_duration: Duration::from_secs(2),
            ..ServerLimits::default()
        };
        let t2 = TestSpec::tcp(Duration::from_secs(2));
        assert!(!t2.effective_calibration().is_zero());
        assert_eq!(two.refusal(&t2), None);
        let t3 = TestSpec::tcp(Duration::from_secs(3));
        assert!(words(&two, &t3).unwrap().contains("test of 3.0s"));
        // Regression: UDP, an hour at 10 ms with 32 streams made the server commit 1.27 GB.
        let many = TestSpec {
            duration: Duration::from_secs(3600),
            interval: Duration::from_millis(10),
            streams: 32,
            ..spec
        };
        assert_eq!(many.interval_records(), 360_000 * 32);
        assert!(words(&limits, &many).unwrap().contains("--max-intervals"));
    }
}
