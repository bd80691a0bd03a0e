//! What the engine did on the streams of a test's first direction, for its `StartInfo`: the
//! send path the senders kept and their calls, how the receivers received (copy or not), how
//! they batched their reads, and the send and receive buffers they set; under `--bidir` the
//! other direction's too (`OtherSend` for its senders).

use super::{StartInfo, StreamPair, saturating_sum};
use crate::traffic::engine::sendpath::{SendPath, SendReport};
use crate::traffic::measure::{LowWaterProbe, ReceiveReport};
use crate::traffic::spec::{Flow, TestSpec};
use serde::{Deserialize, Serialize};

/// How the senders of a `--bidir` test's other direction sent (`StartInfo::other_send`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherSend {
    pub flow: Flow,
    pub send_path: String,
    pub chunk_bytes: u64,
    /// Whether their end calibrated (or re-checked) rather than sending as given.
    pub chosen: bool,
    /// When their end's record of earlier tests chose the path: how many tests it rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered_tests: Option<u64>,
    /// Their re-checks on the warm connection, as `StartInfo::rechecks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rechecks: Vec<crate::traffic::engine::sendpath::Recheck>,
    /// Their send calls after the choice, the bytes those moved and how many streams used the
    /// path, as `StartInfo::send_calls`, `send_call_bytes` and `send_streams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u64>,
}

/// Fills `start` with what the streams of the first direction in `pairs` report.
pub(super) fn describe(start: &mut StartInfo, spec: &TestSpec, pairs: &[StreamPair]) {
    // `start` describes the streams of the first direction.
    let first_flow = pairs.first().map(|p| p.flow);
    let first_direction = || pairs.iter().filter(|p| Some(p.flow) == first_flow);
    // Under `--bidir` the other direction's streams are the other end's, with their own choices.
    let other_direction = || pairs.iter().filter(|p| Some(p.flow) != first_flow);
    if first_flow.is_some() {
        start.first_flow = first_flow;
    }
    if let Some(first) = pairs.first()
        && let Some(send) = first.sender.send.as_ref()
        && let Some(path) = send.path
    {
        let calls = calls_on(path, first_direction());
        start.send_path = Some(path.call.name().to_string());
        start.chunk_bytes = Some(path.chunk_bytes as u64);
        start.calibration = send.trials.clone();
        start.rechecks = send.rechecks.clone();
        start.send_path_remembered_tests = send.remembered_tests;
        start.send_calls = Some(calls.calls);
        start.send_call_bytes = Some(calls.bytes);
        start.send_streams = Some(calls.streams);
    }
    start.send_buffer_bytes = first_direction()
        .filter_map(|p| p.sender.send.as_ref()?.buffer_bytes)
        .max();
    if let Some(other) = other_direction().find_map(|p| {
        let send = p.sender.send.as_ref()?;
        let path = send.path?;
        let calls = calls_on(path, other_direction());
        Some(OtherSend {
            flow: p.flow,
            send_path: path.call.name().to_string(),
            chunk_bytes: path.chunk_bytes as u64,
            chosen: !send.trials.is_empty()
                || !send.rechecks.is_empty()
                || send.remembered_tests.is_some(),
            remembered_tests: send.remembered_tests,
            rechecks: send.rechecks.clone(),
            calls: Some(calls.calls),
            call_bytes: Some(calls.bytes),
            streams: Some(calls.streams),
        })
    }) {
        start.other_send = Some(other);
    }
    let skipped =
        first_direction().count() > 0 && first_direction().all(|p| p.receiver.skipped_rx_copy);
    start.receive_mode = Some(
        match (spec.skip_rx_copy, skipped) {
            (_, true) => "skip-rx-copy",
            (false, false) => "copy",
            (true, false) => {
                "skip-rx-copy asked, not confirmed: no receiver said it skipped the copy (an \
                 iperf3 receiver does not say, and copies before 3.19; a receiver on FreeBSD or \
                 after a UDP batch out of order copies; a far end stopped before its account \
                 says nothing)"
            }
        }
        .to_string(),
    );
    let received: Vec<ReceiveReport> = first_direction()
        .filter_map(|p| p.receiver.receive)
        .collect();
    if !received.is_empty() {
        start.receive_reads = Some(saturating_sum(received.iter().map(|r| r.reads)));
        let (probe, bytes) = batching_of(&received);
        start.receive_low_water_probe = probe;
        start.receive_low_water_bytes = bytes;
        start.receive_buffer_bytes = received.iter().filter_map(|r| r.buffer_bytes).max();
    }
    let other: Vec<ReceiveReport> = other_direction()
        .filter_map(|p| p.receiver.receive)
        .collect();
    if !other.is_empty() {
        start.other_receive_reads = Some(saturating_sum(other.iter().map(|r| r.reads)));
        start.other_receive_buffer_bytes = other.iter().filter_map(|r| r.buffer_bytes).max();
    }
    if let (Some(probe), bytes) = batching_of(&other) {
        start.other_low_water_probe = Some(probe);
        start.other_low_water_bytes = bytes;
    }
}

/// The send calls of one direction's streams that kept `path`.
struct Calls {
    calls: u64,
    bytes: u64,
    streams: u64,
}

/// Every sending stream of a direction keeps the path of one shared calibration
/// (`sendpath::Pool`): the calls of all of them on `path` are counted.
fn calls_on<'a, 'r: 'a>(
    path: SendPath,
    direction: impl Iterator<Item = &'a StreamPair<'r>>,
) -> Calls {
    let same: Vec<&SendReport> = direction
        .filter_map(|p| p.sender.send.as_ref())
        .filter(|s| s.path == Some(path))
        .collect();
    Calls {
        calls: saturating_sum(same.iter().map(|s| s.calls)),
        bytes: saturating_sum(same.iter().map(|s| s.bytes)),
        streams: same.len() as u64,
    }
}

/// How one direction's receivers batched their reads: their probe's outcome and the largest
/// mark in force. Once the probe decided, the marks in force after it; a receiver that ended
/// before the decision would speak of the time before it.
fn batching_of(received: &[ReceiveReport]) -> (Option<LowWaterProbe>, Option<u64>) {
    let probe = received.iter().find_map(|r| r.low_water_probe);
    let decided = probe.is_some();
    let bytes = received
        .iter()
        .filter(|r| !decided || r.low_water_probe.is_some())
        .map(|r| r.low_water_bytes)
        .max();
    (probe, bytes)
}
