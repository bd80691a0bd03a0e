//! netsweep's own result document (`client --json`, and each run the campaign store keeps) as
//! a `TestTimeline`: the merged per-interval figures of both ends, TCP_INFO's RTT, cwnd and
//! retransmits per stream, and the latency probe's CDF when the test had `--latency`.

use super::{LatencyCdf, Point, StreamLine, TestFacts, TestTimeline};
use crate::traffic::result::{Interval, StreamInterval, TestResult};
use crate::traffic::spec::{Direction, Flow, Protocol};
use serde_json::Value;

/// Reads a netsweep result document.
pub fn read(source: &str, doc: Value) -> Result<TestTimeline, String> {
    let r: TestResult = serde_json::from_value(doc).map_err(|e| {
        format!("is not a result this netsweep reads ({e}): was it written by another version?")
    })?;
    Ok(from_result(source, &r))
}

/// A result already in memory as a `TestTimeline`.
pub fn from_result(source: &str, r: &TestResult) -> TestTimeline {
    let spec = &r.spec;
    let test = TestFacts {
        host: Some(r.start.server.clone()).filter(|s| !s.is_empty()),
        protocol: match spec.protocol {
            Protocol::Tcp => "TCP".into(),
            Protocol::Udp => "UDP".into(),
        },
        direction: match spec.direction {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
            Direction::Bidir => "bidir",
        }
        .into(),
        duration_s: spec.duration.as_secs_f64(),
        streams: u32::from(spec.streams),
        tool: Some(format!("netsweep {}", r.netsweep_version)),
        started_unix: Some(r.start.timestamp_unix_s).filter(|t| *t > 0.0),
    };
    let total = StreamLine {
        name: "total".into(),
        points: r
            .intervals
            .iter()
            .map(|iv| point(iv, &iv.total, true))
            .collect(),
    };
    let mut streams: Vec<(u16, Option<Flow>, StreamLine)> = Vec::new();
    for iv in &r.intervals {
        for s in &iv.streams {
            let i = match streams
                .iter()
                .position(|(id, f, _)| *id == s.stream && *f == s.flow)
            {
                Some(i) => i,
                None => {
                    let reverse =
                        spec.direction == Direction::Bidir && s.flow == Some(Flow::ServerToClient);
                    let name = format!(
                        "stream {}{}",
                        s.stream,
                        if reverse { " (reverse)" } else { "" }
                    );
                    streams.push((
                        s.stream,
                        s.flow,
                        StreamLine {
                            name,
                            points: Vec::new(),
                        },
                    ));
                    streams.len() - 1
                }
            };
            streams[i].2.points.push(point(iv, s, false));
        }
    }
    let latency = r.latency.as_ref().and_then(|l| {
        let cdf = |q: &[[f64; 2]]| q.iter().map(|[q, ms]| (*ms, q * 100.0)).collect::<Vec<_>>();
        let c = LatencyCdf {
            loaded: cdf(&l.loaded_cdf),
            idle: cdf(&l.idle_cdf),
        };
        (!c.loaded.is_empty() || !c.idle.is_empty()).then_some(c)
    });
    TestTimeline {
        source: source.to_string(),
        format: super::Format::Netsweep,
        test,
        totals: vec![total],
        streams: streams.into_iter().map(|(_, _, l)| l).collect(),
        latency,
        error: r.error.clone(),
        transactions: r.rr.as_ref().map(super::rr::Transactions::of),
    }
}

/// One row of an interval; the probe's figures belong to the total.
fn point(iv: &Interval, row: &StreamInterval, total: bool) -> Point {
    let probe = iv.latency.filter(|_| total);
    Point {
        start_s: iv.start_s,
        end_s: iv.end_s,
        omitted: iv.omitted,
        bits_per_second: row.bits_per_second,
        retransmits: row.retransmits,
        rtt_ms: row.rtt_us.map(|us| f64::from(us) / 1000.0),
        cwnd_bytes: row.cwnd_bytes,
        lost_percent: row.lost_percent,
        probe_p50_ms: probe.and_then(|l| l.rtt_p50_ms),
        probe_p99_ms: probe.and_then(|l| l.rtt_p99_ms),
    }
}

#[cfg(test)]
mod tests {
    use crate::traffic::over_time::{Format, read};

    /// `netsweep client 127.0.0.1 -t 2 -P 2 --latency --json`, as this netsweep wrote it.
    const DOC: &str =
        include_str!("../../../tests/fixtures/plot/netsweep-tcp-2-streams-latency.json");

    #[test]
    fn a_netsweep_document_gives_intervals_streams_tcp_info_and_the_latency_cdf() {
        let t = read("ns.json", DOC).unwrap();
        assert_eq!(t.format, Format::Netsweep);
        assert_eq!(t.test.host.as_deref(), Some("127.0.0.1:5398"));
        assert_eq!((t.test.protocol.as_str(), t.test.streams), ("TCP", 2));
        assert_eq!(
            (t.test.duration_s, t.test.direction.as_str()),
            (2.0, "forward")
        );
        let total = &t.totals[0].points;
        assert_eq!(total.len(), 3);
        // The calibration interval is the warm-up; values as the file has them.
        assert_eq!(
            (total[0].omitted, total[1].start_s, total[1].end_s),
            (true, 0.3, 1.3)
        );
        assert_eq!(total[1].bits_per_second, 17464511352.0);
        assert_eq!(total[0].probe_p50_ms, Some(0.255399));
        let names: Vec<&str> = t.streams.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["stream 0", "stream 1"]);
        let s0 = &t.streams[0].points[0];
        assert_eq!(
            (s0.rtt_ms, s0.cwnd_bytes, s0.retransmits),
            (Some(0.119), Some(785796), Some(0))
        );
        assert_eq!(
            s0.probe_p50_ms, None,
            "the probe's figures belong to the total"
        );
        let cdf = t.latency.unwrap();
        assert_eq!(cdf.loaded[0], (0.055604, 0.0));
        assert_eq!(cdf.loaded.last().map(|p| p.1), Some(100.0));
        assert!(!cdf.idle.is_empty());
    }

    #[test]
    fn a_document_of_another_shape_is_refused_as_damaged_netsweep_output() {
        let e = read("old.json", r#"{"netsweep_version":"0.0.1","intervals":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("old.json") && e.contains("netsweep --json"),
            "{e}"
        );
    }
}
