//! What one end measures: per-stream interval reports, stream totals, socket facts and CPU use.
//!
//! The engine produces these on both ends; the server sends its own to the client, and
//! `result` merges the two views (receiver bytes with sender TCP_INFO and sender packet counts).
//! Field names carry units because these types are also the wire format.

use crate::traffic::spec::Flow;
use serde::{Deserialize, Serialize};

/// Which end of a stream a report comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Sender,
    Receiver,
}

/// Sender-side TCP state from TCP_INFO, sampled at the end of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TcpSample {
    /// Segments retransmitted during the interval.
    pub retransmits: u64,
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// RTT variance, microseconds.
    pub rttvar_us: u32,
    /// Congestion window, bytes (Linux: snd_cwnd x MSS; FreeBSD: snd_cwnd, already bytes).
    pub cwnd_bytes: u64,
    /// The receiver's advertised window as the sender saw it, bytes (0 if the kernel is too old).
    #[serde(default)]
    pub snd_wnd_bytes: u64,
    /// Share of the interval the sender was held back by the receiver's window, percent;
    /// `None` where the kernel does not say (FreeBSD, Linux before 4.9).
    #[serde(default)]
    pub rwnd_limited_percent: Option<f64>,
    /// Share of the interval the sender was held back by its own send buffer, percent.
    #[serde(default)]
    pub sndbuf_limited_percent: Option<f64>,
}

/// Receiver-side UDP quality for one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UdpReceived {
    /// RFC 3550 interarrival jitter at the end of the interval, milliseconds.
    pub jitter_ms: f64,
    /// Datagrams that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams seen twice.
    pub duplicates: u64,
    /// The highest sequence number (from 0) among the datagrams counted in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_seq: Option<u64>,
    /// How far this interval took the sequence numbers seen (the highest so far, plus one,
    /// less that of the intervals before): the datagrams sent as far as the receiver alone can
    /// tell, iperf3's per-interval packet count (`iperf_udp_recv`'s `packet_count`), so a
    /// loss at an interval's end is counted in the next. Set by the receiver for each interval
    /// it reports where datagrams arrived (`count_sequences`); none arrived, none advanced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<u64>,
}

/// Sets `sequences` on one UDP receiver's intervals in turn from their `highest_seq`: each
/// interval's advance of the highest sequence number seen so far. An interval where nothing
/// arrived keeps no UDP figures (its jitter is not a measured 0).
#[derive(Debug, Default)]
pub struct SequenceCount {
    /// Sequence numbers covered so far: the highest seen plus one.
    through: u64,
}

impl SequenceCount {
    /// Counts the interval after the ones counted so far.
    pub fn count(&mut self, r: &mut IntervalReport) {
        let Some(udp) = r.udp.as_mut() else {
            return;
        };
        let now = self
            .through
            .max(udp.highest_seq.map_or(0, |h| h.saturating_add(1)));
        udp.sequences = Some(now - self.through);
        self.through = now;
    }
}

/// `SequenceCount` over the first `upto` intervals of one UDP receiver, from the first.
pub fn count_sequences(intervals: &mut [IntervalReport], upto: usize) {
    let mut count = SequenceCount::default();
    for r in intervals.iter_mut().take(upto) {
        count.count(r);
    }
}

/// One stream's interval on one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    pub stream: u16,
    pub index: u32,
    pub role: Role,
    /// Bytes written (sender) or read (receiver) in this interval. For UDP, payload bytes of the
    /// datagrams *sent* in this interval (the receiver attributes by the sender's timestamp).
    pub bytes: u64,
    /// UDP datagrams sent (sender) or received once (receiver), attributed as `bytes` is.
    pub packets: u64,
    pub tcp: Option<TcpSample>,
    pub udp: Option<UdpReceived>,
}

/// Buffer sizes one end asked for and got.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SocketInfo {
    pub stream: u16,
    #[serde(deserialize_with = "crate::inputs::de_peer_text")]
    pub local: String,
    #[serde(deserialize_with = "crate::inputs::de_peer_text")]
    pub remote: String,
    /// SO_SNDBUF as the kernel reports it after setting (Linux doubles the request).
    pub sndbuf_bytes: u64,
    pub rcvbuf_bytes: u64,
    /// MSS in use (TCP).
    pub mss_bytes: Option<u32>,
    /// Congestion control in use (TCP).
    #[serde(default, deserialize_with = "crate::inputs::de_peer_text_opt")]
    pub congestion: Option<String>,
    /// UDP segmentation offload used by the sender, or GRO by the receiver.
    pub udp_offload: Option<bool>,
    /// With `-w`: the window these buffers allow, in `-w`'s terms (the smaller of send and
    /// receive, as this end's kernel counts them: Linux reports twice what `-w` asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_bytes: Option<u64>,
}

/// Everything one end measured on one stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    pub stream: u16,
    pub flow: Flow,
    pub role: Role,
    /// Every interval of the grid, in order (intervals with no traffic have zero bytes).
    pub intervals: Vec<IntervalReport>,
    /// Bytes moved after the grid ended (receiver draining the pipe); not in any summary.
    pub tail_bytes: u64,
    /// Final TCP_INFO totals on the sender: retransmits over the whole connection.
    pub tcp_total_retransmits: Option<u64>,
    /// TCP sender: the bytes the receiver's kernel acknowledged over the connection (TCP_INFO
    /// at the end), what a far end's own count is checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_acked: Option<u64>,
    /// TCP sender, from TCP_INFO at the end (Linux 4.19+): bytes its kernel sent over the
    /// connection, retransmissions included, and bytes it retransmitted (RFC 6349's TCP
    /// Efficiency), and the smallest RTT it saw (`tcpi_min_rtt`, microseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes_sent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes_retrans: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_min_rtt_us: Option<u32>,
    /// TCP sender: the retransmitted segments the receiver said it already had (D-SACK,
    /// `tcpi_dsack_dups`, Linux 4.19+): resent after reordering or a late ACK, not a loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_dsack_dups: Option<u64>,
    /// TCP receiver: the bytes its kernel received over the connection (TCP_INFO at the end,
    /// Linux 4.1+; for an iperf3 client, right before it said TEST_END), what a far sender's
    /// own count is checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes_received: Option<u64>,
    /// TCP sender to an iperf3 server: the far end's window as it settled before TEST_END
    /// (`engine::drain`), what bounds the bytes that server may have left unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained: Option<Drained>,
    /// Smallest and largest smoothed RTT sampled, microseconds.
    pub rtt_min_us: Option<u32>,
    pub rtt_max_us: Option<u32>,
    /// A local fault that ended the stream early.
    #[serde(default, deserialize_with = "crate::inputs::de_peer_text_opt")]
    pub error: Option<String>,
    /// TCP receiver: the sender's end of data (EOF) was read, so every byte sent arrived.
    #[serde(default)]
    pub saw_end: bool,
    /// UDP receiver: the highest sequence number that arrived (an iperf3 peer is told it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_seq: Option<u64>,
    /// TCP sender: the send path used, how it was chosen, and its calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<crate::traffic::engine::sendpath::SendReport>,
    /// Receiver: it dropped the data in the kernel instead of copying it (`--skip-rx-copy`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped_rx_copy: bool,
    /// TCP receiver: its reads and the largest low-water mark it set (`engine::lowater`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveReport>,
    /// UDP receiver: arrival gaps and delay variation. A server sends one merged over all its
    /// receiving streams (on the first of them), so the frame stays small at any stream count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_timing: Option<crate::traffic::histogram::UdpTiming>,
}

/// The far end's advertised receive window when it settled (`engine::drain`): every byte
/// written acknowledged and the window back to at least half its largest, before TEST_END.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drained {
    pub window_bytes: u64,
    /// The largest window sampled over the test (every millisecond while writing).
    pub window_max_bytes: u64,
}

/// How a TCP receiver read: `reads` calls that returned data, the largest low-water mark
/// (`SO_RCVLOWAT`) in force after its probe decided, or the largest it set when there was no
/// decision (1 is the kernel's default), and the probe's outcome when it saw one
/// (`engine::lowater::ReceiverMark`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReceiveReport {
    pub reads: u64,
    pub low_water_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_water_probe: Option<LowWaterProbe>,
    /// The receive buffer it set instead of the kernel's autotuning, as the kernel reports it
    /// (`engine::rcvbuf`: a same-host path); absent when it kept the autotuning or `-w` set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
}

/// What the receivers of one test on one end read in the probe's settled turns with their
/// low-water mark, without one, and napping between drains (`engine::lowater::Batching`), and
/// which they kept: the mark, napping, or neither (results written before receivers could
/// nap lack the napping fields, which read as none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LowWaterProbe {
    pub marked_bytes: u64,
    pub unmarked_bytes: u64,
    #[serde(default)]
    pub napped_bytes: u64,
    pub kept_mark: bool,
    #[serde(default)]
    pub napped: bool,
    /// The turns the sums are of: all of the probe's, or its first half's when that was
    /// decisive (`lowater::PROBE_EARLY_TURNS`). 0 in results written before the probe could
    /// decide early.
    #[serde(default)]
    pub turns: u32,
    /// The receiving threads' CPU time in the counted turns, nanoseconds: with the mark,
    /// without it, napping (zero where unmeasured: other systems, older results).
    #[serde(default)]
    pub cpu_ns: [u64; 3],
    /// Whether the kept setting was chosen for costing the receivers less CPU per byte than
    /// the one that carried the most, which it carried about as much as
    /// (`lowater::PROBE_CPU_MARGIN`).
    #[serde(default)]
    pub for_cpu: bool,
}

impl StreamReport {
    /// A report with no intervals yet (or none at all, with `error` saying why).
    pub fn empty(stream: u16, flow: Flow, role: Role, error: Option<String>) -> StreamReport {
        StreamReport {
            stream,
            flow,
            role,
            intervals: Vec::new(),
            tail_bytes: 0,
            tcp_total_retransmits: None,
            bytes_acked: None,
            tcp_bytes_sent: None,
            tcp_bytes_retrans: None,
            tcp_dsack_dups: None,
            tcp_min_rtt_us: None,
            tcp_bytes_received: None,
            drained: None,
            skipped_rx_copy: false,
            rtt_min_us: None,
            rtt_max_us: None,
            error,
            saw_end: false,
            highest_seq: None,
            send: None,
            receive: None,
            udp_timing: None,
        }
    }
}
