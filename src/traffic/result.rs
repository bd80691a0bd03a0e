//! The result of one test, built by merging both ends' stream reports: receiver bytes (what was
//! delivered) with the sender's TCP_INFO samples and UDP send counts. Pure calculation; this is
//! also the JSON document `netsweep client --json` prints and the campaign store keeps.
//!
//! Invariants (tested): the sum of `intervals[].bytes` over measured intervals equals
//! `summary.bytes`; `summary.bits_per_second` is `summary.bytes * 8 / summary.seconds`.

use crate::platform::cputime::CpuUsage;
use crate::traffic::measure::{IntervalReport, StreamReport};
use crate::traffic::spec::{Flow, Protocol, TestSpec};
use crate::traffic::timeline::Slot;
use serde::{Deserialize, Serialize};

/// One stream in one interval, both ends merged.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StreamInterval {
    pub stream: u16,
    pub flow: Option<Flow>,
    /// Bytes delivered to the receiver.
    pub bytes: u64,
    pub bits_per_second: f64,
    /// Bytes the sender wrote.
    pub sent_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// Receiver's advertised window seen by the sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd_bytes: Option<u64>,
    /// Share of the interval the sender waited for the receiver's window / its own buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
}

/// One interval over all streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub index: u32,
    pub start_s: f64,
    pub end_s: f64,
    /// In the warm-up (`-O`): shown, but not in the summary.
    pub omitted: bool,
    #[serde(flatten)]
    pub total: StreamInterval,
    pub streams: Vec<StreamInterval>,
    /// The latency probes sent in this interval (`--latency`): `rtt_p50_ms`, `rtt_p99_ms`,
    /// `probes`, `probes_lost`.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::traffic::latency::summary::IntervalLatency>,
}

impl Interval {
    /// Grid slot `index` carrying `streams`, with their total over the slot's length.
    pub fn of_slot(index: u32, slot: &Slot, streams: Vec<StreamInterval>) -> Interval {
        let secs = slot.end.saturating_sub(slot.start).as_secs_f64();
        Interval {
            index,
            start_s: slot.start.as_secs_f64(),
            end_s: slot.end.as_secs_f64(),
            omitted: slot.omitted,
            total: total_of(&streams, secs),
            streams,
            latency: None,
        }
    }
}

/// Totals over the measured intervals.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Measured seconds (warm-up excluded).
    pub seconds: f64,
    /// Bytes delivered to the receivers in the measured period.
    pub bytes: u64,
    /// Receiver goodput over the measured period.
    pub bits_per_second: f64,
    pub sent_bytes: u64,
    pub sent_bits_per_second: f64,
    /// The seconds the senders' bytes were counted over, when not `seconds`: a far end that is
    /// not netsweep counts what it sends or receives by its own clock, so each rate divides
    /// bytes by the time of the end that counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_seconds: Option<f64>,
    /// Bytes delivered after the measured window (the pipe draining); in no rate.
    pub tail_bytes: u64,
    /// TCP: segments the senders' kernels retransmitted after their last interval (of the
    /// tail; in no row and not in `retransmits`), when every sender's final count is known and
    /// some were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_retransmits: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_mean_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_min_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_max_us: Option<u32>,
    /// The senders' kernels' bytes sent over their connections (retransmissions included),
    /// bytes retransmitted, and the smallest RTT any of them saw (TCP_INFO at the end; the
    /// whole connection, warm-up included; Linux 4.19+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes_retrans: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_min_rtt_us: Option<u32>,
    /// Of the senders' retransmitted segments, those the receivers said they already had
    /// (D-SACK, RFC 2883; Linux 4.19+): spurious, resent after reordering or a late ACK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_dsack_dups: Option<u64>,
    /// Largest advertised window the senders saw, bytes (summed over streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd_max_bytes: Option<u64>,
    /// Mean share of time the senders were held back by the receiver's window / send buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
}

/// One direction of the test (two with `--bidir`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionResult {
    pub flow: Flow,
    pub summary: Summary,
    /// Per-stream summaries.
    pub streams: Vec<StreamSummary>,
    /// UDP: the receiver's arrival gaps and delay variation over this direction's streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_timing: Option<crate::traffic::histogram::UdpTiming>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub stream: u16,
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// CPU use of both ends.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuResult {
    /// Percent of one core used by the client's test threads.
    pub local_percent: f64,
    pub remote_percent: f64,
    pub local: CpuUsage,
    pub remote: CpuUsage,
}

/// The result of one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub netsweep_version: String,
    pub spec: TestSpec,
    pub start: StartInfo,
    pub intervals: Vec<Interval>,
    /// Over all streams and directions.
    pub summary: Summary,
    pub directions: Vec<DirectionResult>,
    pub cpu: CpuResult,
    /// Set when the test ended early; the numbers above cover what was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Figures that contradict each other or physics (see `checks`): the numbers above are
    /// not to be trusted, and the client exits with an error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inconsistencies: Vec<String>,
    /// Things the figures above do not say by themselves (a UDP sender that could not reach
    /// the asked rate), one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The far end of a test in iperf3's protocol: "iperf3 3.12", "iperf3" when it did not say,
    /// or "netsweep 0.1.0, in iperf3's protocol" for netsweep's own server. None in netsweep's
    /// protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Which figures this end measured, which the peer reported, and which no end had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// Latency under load (`--latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::traffic::latency::summary::LatencyResult>,
    /// How a `duration = "auto"` test ended: steady, or at its ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<crate::traffic::steady::Ending>,
    /// A test a first interrupt ended at an interval's end (`spec` holds the time that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<interrupted::Interrupted>,
    /// RFC 6349's TCP throughput metrics, where the path's rate or baseline RTT is known (a lab,
    /// `--path-rate`/`--baseline-rtt`, or measured): see `result::rfc6349`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rfc6349: Option<crate::analysis::rfc6349::Rfc6349>,
    /// The far end's own account of the test, asked for with `--get-server-output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output: Option<ServerOutput>,
    /// A request/response test's own result (a campaign's `test = "rr"`/`"crr"`); the summary
    /// above then counts its payload bytes both ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<crate::traffic::rr::result::RrResult>,
}

/// A far end's own account of a test: an iperf3 server's text, or its JSON document when it
/// runs with `-J`; a netsweep server's stream reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerOutput {
    Text(String),
    Json(serde_json::Value),
}

/// Where a result's figures come from when the far end is not netsweep.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Provenance {
    pub measured_here: Vec<String>,
    pub from_peer: Vec<String>,
    pub unavailable: Vec<String>,
}

/// Both ends' reports of one stream.
pub struct StreamPair<'a> {
    pub flow: Flow,
    pub sender: &'a StreamReport,
    pub receiver: &'a StreamReport,
}

/// Merges one stream's interval from both ends.
pub fn merge_interval(
    proto: Protocol,
    flow: Flow,
    slot: &Slot,
    sender: Option<&IntervalReport>,
    receiver: Option<&IntervalReport>,
) -> StreamInterval {
    let secs = (slot.end - slot.start).as_secs_f64();
    let bytes = receiver.map_or(0, |r| r.bytes);
    let mut row = StreamInterval {
        stream: sender.or(receiver).map_or(0, |r| r.stream),
        flow: Some(flow),
        bytes,
        bits_per_second: if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
        sent_bytes: sender.map_or(0, |s| s.bytes),
        ..StreamInterval::default()
    };
    match proto {
        Protocol::Tcp => {
            if let Some(t) = sender.and_then(|s| s.tcp) {
                row.retransmits = Some(t.retransmits);
                row.rtt_us = Some(t.rtt_us);
                row.rttvar_us = Some(t.rttvar_us);
                row.cwnd_bytes = Some(t.cwnd_bytes);
                row.snd_wnd_bytes = Some(t.snd_wnd_bytes);
                row.rwnd_limited_percent = t.rwnd_limited_percent;
                row.sndbuf_limited_percent = t.sndbuf_limited_percent;
            }
        }
        Protocol::Udp => {
            let sent = sender.map_or(0, |s| s.packets);
            let got = receiver.map_or(0, |r| r.packets);
            let lost = sent.saturating_sub(got);
            row.packets = Some(sent);
            row.lost_packets = Some(lost);
            row.lost_percent = Some(percent(lost, sent));
            let udp = receiver.and_then(|r| r.udp).unwrap_or_default();
            row.jitter_ms = Some(udp.jitter_ms);
            row.out_of_order = Some(udp.out_of_order);
        }
    }
    row
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

pub(crate) fn sum_opt(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values.fold(None, |acc, v| match (acc, v) {
        (a, None) => a,
        (None, Some(x)) => Some(x),
        (Some(a), Some(x)) => Some(a.saturating_add(x)),
    })
}

/// Sum of counts that a peer reported: saturates instead of wrapping (a hostile peer's
/// `u64::MAX` must not turn into a small total); `checks` flags the saturation.
pub(crate) fn saturating_sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::saturating_add)
}

/// The sum of counts every item has; `None` when any lacks it (a partial sum would read as a
/// total).
pub(crate) fn all_or_none(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let v: Option<Vec<u64>> = values.collect();
    v.map(|v| saturating_sum(v.into_iter()))
}

fn mean_opt(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| crate::units::total(v.iter().copied()) / v.len() as f64)
}

/// Adds up stream rows of one interval (goodput sums; RTT and jitter average).
pub fn total_of(rows: &[StreamInterval], secs: f64) -> StreamInterval {
    let bytes = saturating_sum(rows.iter().map(|r| r.bytes));
    let lost = sum_opt(rows.iter().map(|r| r.lost_packets));
    let packets = sum_opt(rows.iter().map(|r| r.packets));
    StreamInterval {
        stream: 0,
        flow: None,
        bytes,
        bits_per_second: if secs > 0.0 {
            bytes as f64 * 8.0 / secs
        } else {
            0.0
        },
        sent_bytes: saturating_sum(rows.iter().map(|r| r.sent_bytes)),
        retransmits: sum_opt(rows.iter().map(|r| r.retransmits)),
        rtt_us: mean_opt(rows.iter().map(|r| r.rtt_us.map(f64::from))).map(|v| v.round() as u32),
        rttvar_us: mean_opt(rows.iter().map(|r| r.rttvar_us.map(f64::from)))
            .map(|v| v.round() as u32),
        cwnd_bytes: sum_opt(rows.iter().map(|r| r.cwnd_bytes)),
        snd_wnd_bytes: sum_opt(rows.iter().map(|r| r.snd_wnd_bytes)),
        rwnd_limited_percent: mean_opt(rows.iter().map(|r| r.rwnd_limited_percent)),
        sndbuf_limited_percent: mean_opt(rows.iter().map(|r| r.sndbuf_limited_percent)),
        packets,
        lost_packets: lost,
        lost_percent: lost.map(|l| percent(l, packets.unwrap_or(0))),
        jitter_ms: mean_opt(rows.iter().map(|r| r.jitter_ms)),
        out_of_order: sum_opt(rows.iter().map(|r| r.out_of_order)),
    }
}

/// Summarises the measured (not omitted) intervals of some rows.
fn summarize(
    proto: Protocol,
    measured: &[(&Slot, &StreamInterval)],
    pairs: &[&StreamPair],
) -> Summary {
    let seconds = crate::units::total(
        measured
            .iter()
            .map(|(s, _)| (s.end - s.start).as_secs_f64()),
    );
    let rows: Vec<StreamInterval> = measured.iter().map(|(_, r)| (*r).clone()).collect();
    let t = total_of(&rows, seconds);
    let mut s = Summary {
        seconds,
        bytes: t.bytes,
        bits_per_second: t.bits_per_second,
        sent_bytes: t.sent_bytes,
        sent_bits_per_second: if seconds > 0.0 {
            t.sent_bytes as f64 * 8.0 / seconds
        } else {
            0.0
        },
        tail_bytes: saturating_sum(pairs.iter().map(|p| p.receiver.tail_bytes)),
        ..Summary::default()
    };
    match proto {
        Protocol::Tcp => {
            s.retransmits = Some(t.retransmits.unwrap_or(0));
            s.rtt_mean_us = mean_opt(
                rows.iter()
                    .map(|r| r.rtt_us.filter(|v| *v > 0).map(f64::from)),
            );
            s.rtt_min_us = pairs.iter().filter_map(|p| p.sender.rtt_min_us).min();
            s.rtt_max_us = pairs.iter().filter_map(|p| p.sender.rtt_max_us).max();
            // Every sender's kernel figure, or none: a partial sum would read as a total.
            s.tcp_bytes_sent = all_or_none(pairs.iter().map(|p| p.sender.tcp_bytes_sent));
            s.tcp_bytes_retrans = all_or_none(pairs.iter().map(|p| p.sender.tcp_bytes_retrans));
            s.tcp_dsack_dups = all_or_none(pairs.iter().map(|p| p.sender.tcp_dsack_dups));
            s.tail_retransmits = all_or_none(pairs.iter().map(|p| {
                let rows: u64 = p
                    .sender
                    .intervals
                    .iter()
                    .filter_map(|i| i.tcp.map(|t| t.retransmits))
                    .sum();
                Some(p.sender.tcp_total_retransmits?.saturating_sub(rows))
            }))
            .filter(|n| *n > 0);
            s.tcp_min_rtt_us = pairs.iter().filter_map(|p| p.sender.tcp_min_rtt_us).min();
            s.snd_wnd_max_bytes = Some(
                pairs
                    .iter()
                    .map(|p| {
                        p.sender
                            .intervals
                            .iter()
                            .filter_map(|i| i.tcp.map(|t| t.snd_wnd_bytes))
                            .max()
                            .unwrap_or(0)
                    })
                    .fold(0, u64::saturating_add),
            );
            s.rwnd_limited_percent = mean_opt(rows.iter().map(|r| r.rwnd_limited_percent));
            s.sndbuf_limited_percent = mean_opt(rows.iter().map(|r| r.sndbuf_limited_percent));
        }
        Protocol::Udp => {
            s.packets = t.packets;
            s.lost_packets = t.lost_packets;
            s.lost_percent = t.lost_percent;
            // The jitter estimate at the end of the last measured interval, averaged over streams.
            let last = measured.iter().map(|(slot, _)| slot.end).max();
            s.jitter_ms = mean_opt(
                measured
                    .iter()
                    .filter(|(slot, _)| Some(slot.end) == last)
                    .map(|(_, r)| r.jitter_ms),
            );
            s.out_of_order = t.out_of_order;
            s.duplicates = Some(saturating_sum(
                pairs
                    .iter()
                    .flat_map(|p| p.receiver.intervals.iter())
                    .filter_map(|i| i.udp.map(|u| u.duplicates)),
            ));
        }
    }
    s
}

/// A test's result with nothing measured, for tests of what reads results.
#[cfg(test)]
pub fn unmeasured(spec: &TestSpec) -> TestResult {
    build(spec, StartInfo::default(), &[], CpuResult::default(), None)
}

/// Builds the full result from both ends' reports. `pairs` is in stream-id order. Intervals
/// that only one end reported (a test cut short) are left out.
pub fn build(
    spec: &TestSpec,
    start: StartInfo,
    pairs: &[StreamPair],
    cpu: CpuResult,
    error: Option<String>,
) -> TestResult {
    let timeline = spec.timeline();
    let complete = pairs
        .iter()
        .map(|p| p.sender.intervals.len().min(p.receiver.intervals.len()))
        .min()
        .unwrap_or(0)
        .min(timeline.len());
    let slots = &timeline.slots()[..complete];
    // rows[i][k]: stream i, interval k.
    let rows: Vec<Vec<StreamInterval>> = pairs
        .iter()
        .map(|p| {
            slots
                .iter()
                .enumerate()
                .map(|(k, slot)| {
                    merge_interval(
                        spec.protocol,
                        p.flow,
                        slot,
                        p.sender.intervals.get(k),
                        p.receiver.intervals.get(k),
                    )
                })
                .collect()
        })
        .collect();
    let intervals = slots
        .iter()
        .enumerate()
        .map(|(k, slot)| {
            let streams: Vec<StreamInterval> = rows.iter().map(|r| r[k].clone()).collect();
            Interval {
                index: k as u32,
                start_s: slot.start.as_secs_f64(),
                end_s: slot.end.as_secs_f64(),
                omitted: slot.omitted,
                total: total_of(&streams, (slot.end - slot.start).as_secs_f64()),
                streams,
                latency: None,
            }
        })
        .collect();
    let measured_of = |idx: &[usize]| -> Vec<(&Slot, &StreamInterval)> {
        idx.iter()
            .flat_map(|&i| slots.iter().zip(rows[i].iter()).filter(|(s, _)| !s.omitted))
            .collect()
    };
    let all: Vec<usize> = (0..pairs.len()).collect();
    let all_pairs: Vec<&StreamPair> = pairs.iter().collect();
    let mut summary = summarize(spec.protocol, &measured_of(&all), &all_pairs);
    // Streams run side by side: the period is the grid's, not the sum over streams.
    let period = crate::units::total(
        slots
            .iter()
            .filter(|s| !s.omitted)
            .map(|s| (s.end - s.start).as_secs_f64()),
    );
    rescale(&mut summary, period);
    let mut directions = Vec::new();
    for flow in [Flow::ClientToServer, Flow::ServerToClient] {
        let idx: Vec<usize> = (0..pairs.len())
            .filter(|&i| pairs[i].flow == flow)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let dir_pairs: Vec<&StreamPair> = idx.iter().map(|&i| &pairs[i]).collect();
        let mut dsum = summarize(spec.protocol, &measured_of(&idx), &dir_pairs);
        rescale(&mut dsum, period);
        let streams = idx
            .iter()
            .map(|&i| StreamSummary {
                stream: pairs[i].sender.stream,
                summary: summarize(spec.protocol, &measured_of(&[i]), &[&pairs[i]]),
                error: pairs[i]
                    .sender
                    .error
                    .clone()
                    .or_else(|| pairs[i].receiver.error.clone()),
            })
            .collect();
        let udp_timing = dir_pairs
            .iter()
            .filter_map(|p| p.receiver.udp_timing.as_ref())
            .fold(
                None,
                |acc: Option<crate::traffic::histogram::UdpTiming>, t| {
                    let mut m = acc.unwrap_or_default();
                    m.merge(t);
                    Some(m)
                },
            );
        directions.push(DirectionResult {
            flow,
            summary: dsum,
            streams,
            udp_timing,
        });
    }
    let mut start = start;
    engine_facts::describe(&mut start, spec, pairs);
    let inconsistencies = if error.is_none() {
        checks::inconsistencies(spec, pairs, &timeline)
    } else {
        // A test cut short leaves the ends' counts legitimately apart.
        Vec::new()
    };
    // A test cut short (its far end gone, a stream failed) fell short of its rate for that
    // reason, not for a limit on the sending host.
    let mut warnings = if error.is_none() {
        checks::shortfalls(spec, &directions)
    } else {
        Vec::new()
    };
    warnings.extend(checks::window_grants(spec, &start));
    warnings.extend(checks::unopened_windows(spec, &start, &directions));
    TestResult {
        netsweep_version: env!("CARGO_PKG_VERSION").to_string(),
        spec: spec.clone(),
        start,
        intervals,
        summary,
        directions,
        cpu,
        error,
        inconsistencies,
        warnings,
        peer: None,
        provenance: None,
        latency: None,
        ending: None,
        interrupted: None,
        rfc6349: None,
        server_output: None,
        rr: None,
    }
}

/// Sets a multi-stream summary's period to the wall-clock period and recomputes its rates.
fn rescale(s: &mut Summary, period: f64) {
    s.seconds = period;
    let rate = |b: u64| {
        if period > 0.0 {
            b as f64 * 8.0 / period
        } else {
            0.0
        }
    };
    s.bits_per_second = rate(s.bytes);
    s.sent_bits_per_second = rate(s.sent_bytes);
}

pub mod checks;
mod engine_facts;
mod start_info;
pub use engine_facts::OtherSend;
pub use start_info::StartInfo;
pub mod interrupted;
pub mod rfc6349;
#[cfg(test)]
mod tests;
