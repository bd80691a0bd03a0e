//! iperf3's `--server-bitrate-limit RATE[/SECONDS]`: a server's cap on what one test moves, all
//! its streams and both directions together. As iperf3's server (iperf_server_api.c,
//! `iperf_check_total_rate` in iperf_api.c, 3.21): a test that asks for more in total
//! (streams x `-b`, twice with `--bidir`) is refused at its start; one that asks for no rate
//! (`-b 0`, TCP's default) runs, and is ended with iperf3's error 27 ("total required bandwidth
//! is larger than server limit") once the average of its last SECONDS (5 by default) of
//! intervals passes the limit. The average runs over whole intervals, as many as make SECONDS
//! (at least one), each counted once every stream has reported it and as a whole interval's
//! time (the grid's shorter slots, the end of a warm-up or of the test, count as more time than
//! they took: the average can come out low there, never high).
//!
//! Calculation only: the servers feed it each interval report as it arrives.

use crate::units::BitRate;
use std::collections::BTreeMap;
use std::time::Duration;

/// iperf3's default averaging time.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(5);

/// The averaging times iperf3 accepts (its `MIN_INTERVAL` and `MAX_INTERVAL`), or 0.
const WINDOW_RANGE: (f64, f64) = (0.1, 60.0);

/// A server's limit on one test's total rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BitrateLimit {
    pub bits_per_second: f64,
    /// How long a time the measured rate is averaged over before it is compared.
    pub window: Duration,
}

impl std::str::FromStr for BitrateLimit {
    type Err = String;

    /// `RATE[/SECONDS]`, as iperf3 reads it: `1G`, `500M/10`.
    fn from_str(text: &str) -> Result<BitrateLimit, String> {
        let (rate, window) = match text.split_once('/') {
            Some((rate, secs)) => {
                let s: f64 = secs
                    .trim()
                    .parse()
                    .map_err(|_| format!("{secs:?} after the slash is not a number of seconds"))?;
                if s != 0.0 && !(WINDOW_RANGE.0..=WINDOW_RANGE.1).contains(&s) {
                    return Err(format!(
                        "the averaging time is {} to {} seconds (or 0: one interval), not {s}",
                        WINDOW_RANGE.0, WINDOW_RANGE.1
                    ));
                }
                (rate, Duration::from_secs_f64(s))
            }
            None => (text, DEFAULT_WINDOW),
        };
        let bps = rate
            .parse::<BitRate>()
            .map_err(|e| e.to_string())?
            .bits_per_second();
        if bps < 1.0 {
            return Err("give the limit in bit/s, e.g. 1G or 500M/10".into());
        }
        Ok(BitrateLimit {
            bits_per_second: bps,
            window,
        })
    }
}

impl BitrateLimit {
    /// Why a test asking `total` bit/s over all its `flows` streams (0: unlimited) is refused
    /// at its start, if it is.
    pub fn refusal(&self, total: f64, flows: usize) -> Option<String> {
        (total > self.bits_per_second).then(|| {
            format!(
                "the total asked ({} on {flows} streams) is above this server's \
                 --server-bitrate-limit of {}",
                BitRate(total),
                BitRate(self.bits_per_second)
            )
        })
    }
}

/// One running test's rate against the limit, fed every interval report this end makes.
#[derive(Debug)]
pub struct RateWatch {
    limit: BitrateLimit,
    interval: Duration,
    /// Whole intervals averaged (iperf3's `bitrate_limit_stats_per_interval`).
    span: u32,
    flows: usize,
    /// Per interval index: bytes so far and how many streams reported it.
    open: BTreeMap<u32, (u64, usize)>,
    /// Bytes of the last complete intervals, by index.
    done: BTreeMap<u32, u64>,
}

impl RateWatch {
    /// A watch for a test of `flows` streams with intervals of `interval`.
    pub fn new(limit: BitrateLimit, interval: Duration, flows: usize) -> RateWatch {
        let per = interval.as_secs_f64().max(1e-3);
        let w = limit.window.as_secs_f64();
        // iperf3: one interval when the window is no longer than one, else the rounded ratio.
        let span = if w <= per {
            1
        } else {
            (w / per).round() as u32
        };
        RateWatch {
            limit,
            interval,
            span: span.max(1),
            flows: flows.max(1),
            open: BTreeMap::new(),
            done: BTreeMap::new(),
        }
    }

    /// Counts one stream's report of interval `index`; once every stream has reported it,
    /// compares the average of the last `span` complete intervals with the limit, and says why
    /// the test must end when it is above.
    pub fn record(&mut self, index: u32, bytes: u64) -> Option<String> {
        let entry = self.open.entry(index).or_insert((0, 0));
        entry.0 += bytes;
        entry.1 += 1;
        if entry.1 < self.flows {
            return None;
        }
        let (total, _) = self.open.remove(&index)?;
        self.done.insert(index, total);
        while self.done.len() > self.span as usize {
            self.done.pop_first();
        }
        let (first, last) = (*self.done.keys().next()?, *self.done.keys().next_back()?);
        // Only a run of `span` consecutive intervals ending here is an average of the window.
        if self.done.len() < self.span as usize || last != index || last - first + 1 != self.span {
            return None;
        }
        let bytes: u64 = self.done.values().sum();
        let secs = self.interval.as_secs_f64() * f64::from(self.span);
        let bps = bytes as f64 * 8.0 / secs;
        (bps > self.limit.bits_per_second).then(|| {
            format!(
                "the test carried {} on average over its last {:.1} s, above this server's \
                 --server-bitrate-limit of {}: ended (iperf3's error 27, total required \
                 bandwidth is larger than server limit)",
                BitRate(bps),
                secs,
                BitRate(self.limit.bits_per_second)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(text: &str) -> BitrateLimit {
        text.parse().unwrap()
    }

    #[test]
    fn the_limit_reads_as_iperf3s_rate_and_averaging_time() {
        assert_eq!(
            limit("1G"),
            BitrateLimit {
                bits_per_second: 1e9,
                window: DEFAULT_WINDOW
            }
        );
        assert_eq!(limit("500M/10").window, Duration::from_secs(10));
        assert_eq!(limit("2G/0").window, Duration::ZERO);
        for bad in ["fast", "1G/x", "1G/0.05", "1G/61", "0"] {
            assert!(bad.parse::<BitrateLimit>().is_err(), "{bad}");
        }
    }

    /// iperf3 refuses a test asking more in total at its start, and lets an unlimited one run.
    #[test]
    fn asking_more_in_total_is_refused_and_asking_nothing_is_not() {
        let l = limit("1G");
        assert!(l.refusal(800e6, 2).is_none());
        let why = l.refusal(1.2e9, 3).expect("1.2 Gbit/s asked");
        assert!(why.contains("1.20 Gbits/sec on 3 streams"), "{why}");
        assert!(l.refusal(0.0, 8).is_none());
    }

    /// The average runs over the last window of whole intervals, each counted once every
    /// stream reported it: 5 s of 1 s intervals at 100 Mbit/s on two streams against 150 Mbit/s
    /// pass; a burst to 300 Mbit/s ends the test only once it lifts the 5 s average above.
    #[test]
    fn the_average_of_the_last_window_decides() {
        let mut w = RateWatch::new(limit("150M"), Duration::from_secs(1), 2);
        let per_stream = |mbps: u64| mbps * 1_000_000 / 8 / 2;
        for i in 0..5 {
            assert_eq!(w.record(i, per_stream(100)), None);
            assert_eq!(w.record(i, per_stream(100)), None, "interval {i}");
        }
        // 100,100,100,100,300: 140 Mbit/s on average: runs on.
        assert_eq!(w.record(5, per_stream(300)), None, "half of the interval");
        assert_eq!(w.record(5, per_stream(300)), None);
        // 100,100,100,300,300: 180: ended.
        assert_eq!(w.record(6, per_stream(300)), None);
        let why = w.record(6, per_stream(300)).expect("above the limit");
        assert!(
            why.contains("180 Mbits/sec") && why.contains("5.0 s"),
            "{why}"
        );
    }

    /// No verdict before a whole window, and one interval when the window is shorter than
    /// an interval (iperf3's `/0`).
    #[test]
    fn no_verdict_before_a_whole_window_and_one_interval_for_a_short_one() {
        let mut w = RateWatch::new(limit("1M/2"), Duration::from_millis(500), 1);
        for i in 0..3 {
            assert_eq!(
                w.record(i, 1_000_000),
                None,
                "interval {i} of a 4-interval window"
            );
        }
        assert!(w.record(3, 1_000_000).is_some());
        let mut w = RateWatch::new(limit("1M/0"), Duration::from_secs(1), 1);
        assert!(w.record(0, 1_000_000).is_some());
    }
}
