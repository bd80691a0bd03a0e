//! What a test's result records of its start: who connected with which sockets, and how its
//! senders chose to send.

use super::OtherSend;
use crate::traffic::measure::SocketInfo;
use crate::traffic::spec::Flow;
use serde::{Deserialize, Serialize};

/// Connection facts recorded at the start of a test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StartInfo {
    pub timestamp_unix_s: f64,
    /// The test's cookie as iperf3's JSON names it, so a client's document and its server's
    /// can be matched: an iperf3-protocol test's 36 characters, a netsweep-protocol test's
    /// token in hex (as iperf3's, it was the test's only while the test ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    pub server: String,
    pub control_rtt_us: u64,
    /// The control connection's MSS, as iperf3's `start.tcp_mss_default` gives it (its
    /// client's `ctrl_sck_mss`): the path's MSS before any data socket's buffers moved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_mss_bytes: Option<u32>,
    pub client_sockets: Vec<SocketInfo>,
    pub server_sockets: Vec<SocketInfo>,
    /// TCP: how the senders of the first stream's direction sent ("sendfile" or "write"),
    /// bytes per call, and the calibration trials that chose it (empty when
    /// `-l`/`--no-zerocopy`/`-b` fixed it). All sending streams of a direction share one
    /// calibration, so they all keep this path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<crate::traffic::engine::sendpath::Trial>,
    /// The calibrated path re-checked against its rival on the warm connection while the test
    /// ran (in the results: both sides' turns are part of what the test carried).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rechecks: Vec<crate::traffic::engine::sendpath::Recheck>,
    /// When this host's record of earlier tests to the peer chose the path after the
    /// calibration (`sendpath::memory`): how many tests' re-checks it rests on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_path_remembered_tests: Option<u64>,
    /// Those senders' send calls after the choice, and the bytes they moved (so bytes per call
    /// can be checked against `chunk_bytes`), and how many streams used the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_calls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_call_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_streams: Option<u64>,
    /// The direction whose senders and receivers `send_path`, `receive_mode` and the
    /// `receive_*` fields describe: the first stream's (under `-R` the server's senders,
    /// chosen by the server's record, and this end's receivers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_flow: Option<Flow>,
    /// Under `--bidir`, the senders of the other direction (their end chose on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_send: Option<OtherSend>,
    /// Under `--bidir`, the other direction's receivers (their end probed on its own): as
    /// `receive_low_water_probe` and `receive_low_water_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_low_water_probe: Option<crate::traffic::measure::LowWaterProbe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_low_water_bytes: Option<u64>,
    /// Under `--bidir`, the other direction's receivers' reads that returned data, as
    /// `receive_reads`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_receive_reads: Option<u64>,
    /// Under `--bidir`, the receive buffer the other direction's receivers set, as
    /// `receive_buffer_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_receive_buffer_bytes: Option<u64>,
    /// TCP: the receivers of that direction: their reads that returned data (so bytes per read
    /// can be computed), and the largest low-water mark (`SO_RCVLOWAT`) any of them set to
    /// batch its reads (`engine::lowater`; 1 is the kernel's default, FreeBSD keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_reads: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_low_water_bytes: Option<u64>,
    /// The send buffer the first direction's senders set instead of the kernel's autotuning,
    /// bytes as the kernel reports it (the largest; `engine::sndbuf`: a lone stream on a
    /// same-host path without `-w`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_buffer_bytes: Option<u64>,
    /// The receive buffer those receivers set instead of the kernel's autotuning, bytes as the
    /// kernel reports it (the largest; `engine::rcvbuf`: a same-host path without `-w`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_buffer_bytes: Option<u64>,
    /// The receivers' probe of that mark (`engine::lowater::MarkProbe`): what they read in its
    /// settled turns with the mark, without, and napping between drains, and which they kept;
    /// absent when the test ended before the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_low_water_probe: Option<crate::traffic::measure::LowWaterProbe>,
    /// How the receivers of that direction received: "copy", or "skip-rx-copy" when they
    /// dropped the data in the kernel (`--skip-rx-copy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_mode: Option<String>,
    /// The congestion control the far end used when it is an iperf3 server (its
    /// `congestion_used`; a netsweep server's is in `server_sockets`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_congestion: Option<String>,
}
