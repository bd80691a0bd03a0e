//! Human output of `netsweep client`, in iperf3's layout: one line per stream per interval, a
//! `[SUM]` line with several streams, then sender and receiver summaries and CPU use. Renders
//! values from `result`; computes nothing itself.

use crate::traffic::histogram::{LogHistogram, UdpTiming};
use crate::traffic::latency::summary::LatencyResult;
use crate::traffic::result::{Interval, StreamInterval, Summary, TestResult};
use crate::traffic::spec::{Direction, Flow, Protocol, TestSpec};
use crate::units::{Bytes, RateFormat};
use std::fmt::Write;

mod buffers;
mod engine_lines;
mod served_test;
use engine_lines::{
    low_water_line, queued_warmup_line, receive_buffer_line, send_buffer_line, send_path_line,
    spurious_line, tail_retransmits_line,
};
pub use served_test::{ServedText, served_test};

/// The test asked for, in one line (`-V`).
pub fn spec_line(spec: &TestSpec) -> String {
    format!(
        "Test: {}, {}, {} {} per direction, {} measured after {:.1} s omitted, \
         {} s intervals, {} per {}, rate {}, window {}, congestion control {}",
        match spec.protocol {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        },
        match spec.direction {
            Direction::Forward => "client to server",
            Direction::Reverse => "server to client (-R)",
            Direction::Bidir => "both ways (--bidir)",
        },
        spec.streams,
        if spec.streams == 1 {
            "stream"
        } else {
            "streams"
        },
        match spec.count {
            Some(c) => format!(
                "{} (at most {:.0} s)",
                c.words(),
                spec.duration.as_secs_f64()
            ),
            None => format!("{:.1} s", spec.duration.as_secs_f64()),
        },
        spec.omit.as_secs_f64(),
        spec.interval.as_secs_f64(),
        Bytes(u64::from(spec.length_bytes)),
        if spec.protocol == Protocol::Udp {
            "datagram"
        } else {
            "write"
        },
        if spec.bitrate_bps > 0.0 {
            crate::units::BitRate(spec.bitrate_bps).to_string()
        } else {
            "unlimited".into()
        },
        spec.window_bytes
            .map_or("kernel autotuning".into(), |w| format!(
                "{} ({})",
                Bytes(w),
                spec.window_mode.name()
            )),
        spec.congestion.as_deref().unwrap_or("the host's default")
    )
}

/// Every socket of both ends with what the kernel granted (`-V`).
pub fn sockets(result: &TestResult) -> String {
    let mut out = String::new();
    for (side, socks) in [
        ("client", &result.start.client_sockets),
        ("server", &result.start.server_sockets),
    ] {
        for s in socks.iter() {
            let _ = writeln!(
                out,
                "{side} stream {}: {} -> {}, sndbuf {}, rcvbuf {}{}{}",
                s.stream,
                s.local,
                s.remote,
                Bytes(s.sndbuf_bytes),
                Bytes(s.rcvbuf_bytes),
                s.mss_bytes
                    .map(|m| format!(", MSS {m}"))
                    .unwrap_or_default(),
                s.congestion
                    .as_ref()
                    .map(|c| format!(", congestion control {c}"))
                    .unwrap_or_default()
            );
        }
    }
    out
}

/// The column header printed before the first interval.
/// iperf3's line for each data connection once it is up: "[  0] local 127.0.0.1 port 52314
/// connected to 127.0.0.1 port 5201" (the stream's number as the interval lines give it).
pub fn connected_lines(sockets: &[crate::traffic::measure::SocketInfo]) -> String {
    let mut s = String::new();
    for sock in sockets {
        let (Ok(local), Ok(remote)) = (
            sock.local.parse::<std::net::SocketAddr>(),
            sock.remote.parse::<std::net::SocketAddr>(),
        ) else {
            continue;
        };
        let _ = writeln!(
            s,
            "[{:>3}] local {} port {} connected to {} port {}",
            sock.stream,
            local.ip().to_canonical(),
            local.port(),
            remote.ip().to_canonical(),
            remote.port()
        );
    }
    s
}

pub fn header(spec: &TestSpec) -> String {
    header_of(spec.protocol, spec.direction == Direction::Bidir)
}

/// The client's column header of its intervals: `far_intervals`, whether the far end reports
/// its figures each interval (a netsweep server does; iperf3's does not, so a UDP sender has
/// only its datagrams sent, under iperf3's sender's header).
pub fn client_header(spec: &TestSpec, far_intervals: bool) -> String {
    if spec.protocol == Protocol::Udp && spec.direction == Direction::Forward && !far_intervals {
        UDP_SENT_HEADER.to_string()
    } else {
        header(spec)
    }
}

fn header_of(protocol: Protocol, bidir: bool) -> String {
    // As iperf3: `[ ID][Role]` with `--bidir`, whose lines carry their direction there.
    let id = if bidir { "[ ID][Role]" } else { "[ ID]" };
    match protocol {
        Protocol::Tcp => {
            format!("{id} Interval           Transfer     Bitrate           Retr   Cwnd        RTT")
        }
        Protocol::Udp => format!(
            "{id} Interval           Transfer     Bitrate           Jitter     Lost/Total Datagrams"
        ),
    }
}

/// The direction of a `--bidir` line, right after its id as iperf3 writes it: `[  5][TX-C]`,
/// `[SUM][RX-C]`; empty otherwise.
fn role(flow: Option<Flow>, bidir: bool) -> &'static str {
    match (bidir, flow) {
        (false, _) | (true, None) => "",
        (true, Some(Flow::ClientToServer)) => "[TX-C]",
        (true, Some(Flow::ServerToClient)) => "[RX-C]",
    }
}

/// How numbers are written: the unit of `-f`.
struct Line<'a> {
    id: &'a str,
    /// `role`'s tag, or empty.
    role: &'a str,
    start: f64,
    end: f64,
    proto: Protocol,
    units: RateFormat,
}

/// The column header of iperf3's UDP sender's intervals, when the far end does not report
/// its own (an iperf3 server's to its client; a server's with `-R`).
const UDP_SENT_HEADER: &str =
    "[ ID] Interval           Transfer     Bitrate           Total Datagrams";

fn line(l: &Line, row: &StreamInterval, suffix: &str) -> String {
    let Line {
        id,
        role,
        start,
        end,
        proto,
        units,
    } = *l;
    let mut s = format!(
        "[{id:>3}]{role} {start:6.2}-{end:<6.2} sec  {:>12}  {:>16}",
        crate::units::Bytes(row.bytes).to_string(),
        units.rate(row.bits_per_second)
    );
    match proto {
        Protocol::Tcp => {
            if let Some(r) = row.retransmits {
                let _ = write!(s, "  {r:>5}");
            }
            if let Some(c) = row.cwnd_bytes {
                let _ = write!(s, "  {:>10}", Bytes(c).to_string());
            }
            if let Some(rtt) = row.rtt_us {
                let _ = write!(s, "  {:>6} us", rtt);
            }
        }
        Protocol::Udp if row.jitter_ms.is_none() && row.lost_packets.is_none() => {
            // A sender's interval that only its own end counted (an iperf3 peer's, or a
            // server's for its netsweep client): the datagrams sent, as iperf3's sender writes
            // them, under `UDP_SENT_HEADER` or, with --bidir, beside an empty jitter column.
            let blank = if role.is_empty() {
                ""
            } else {
                "              "
            };
            let _ = write!(s, "{blank}  {}", row.packets.unwrap_or(0));
        }
        Protocol::Udp => {
            // Figures only the far end has (an iperf3 peer's, per interval) are shown as "-".
            let jitter = row
                .jitter_ms
                .map_or("      -".to_string(), |j| format!("{j:>7.3}"));
            let loss = match (row.lost_packets, row.packets, row.lost_percent) {
                (Some(l), Some(p), Some(pc)) => format!("{l}/{p} ({}%)", crate::units::c_g2(pc)),
                (None, Some(p), _) => format!("-/{p}"),
                _ => "-".to_string(),
            };
            let _ = write!(s, "  {jitter} ms  {loss}");
        }
    }
    s.push_str(suffix);
    s
}

/// Lines for one interval: each stream, then `[SUM]` lines (one per direction with `--bidir`).
///
/// As iperf3 labels them: warm-up (omitted) intervals from the test's start, measured ones
/// from the end of the warm-up, `origin`: the start of the first measured interval (iperf3
/// restarts its clock after `-O`; netsweep's send path calibration is warm-up too).
pub fn interval_lines(spec: &TestSpec, iv: &Interval, units: RateFormat, origin: f64) -> String {
    let bidir = spec.direction == crate::traffic::spec::Direction::Bidir;
    let omitted = if iv.omitted { "  (omitted)" } else { "" };
    let shift = if iv.omitted { 0.0 } else { origin };
    let (start, end) = (iv.start_s - shift, iv.end_s - shift);
    let mut out = String::new();
    for row in &iv.streams {
        let id = format!("{}", row.stream);
        let l = Line {
            id: &id,
            role: role(row.flow, bidir),
            start,
            end,
            proto: spec.protocol,
            units,
        };
        out.push_str(&line(&l, row, omitted));
        out.push('\n');
    }
    if iv.streams.len() > 1 {
        let secs = iv.end_s - iv.start_s;
        for flow in [Flow::ClientToServer, Flow::ServerToClient] {
            let rows: Vec<StreamInterval> = iv
                .streams
                .iter()
                .filter(|r| r.flow == Some(flow))
                .cloned()
                .collect();
            // As iperf3: a direction's sum only over several streams (none with --bidir -P 1).
            if rows.len() > 1 {
                let total = crate::traffic::result::total_of(&rows, secs);
                let l = Line {
                    id: "SUM",
                    role: role(Some(flow), bidir),
                    start,
                    end,
                    proto: spec.protocol,
                    units,
                };
                out.push_str(&line(&l, &total, omitted));
                out.push('\n');
            }
        }
    }
    // As iperf3 with -P: each interval ends with its separator (the summary's then).
    if spec.streams > 1 {
        out.push_str(SEPARATOR);
    }
    out
}

/// iperf3's line between intervals with several streams, and before the summary.
pub(crate) const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";

fn summary_row(s: &Summary) -> StreamInterval {
    StreamInterval {
        bytes: s.bytes,
        bits_per_second: s.bits_per_second,
        sent_bytes: s.sent_bytes,
        retransmits: s.retransmits,
        packets: s.packets,
        lost_packets: s.lost_packets,
        lost_percent: s.lost_percent,
        jitter_ms: s.jitter_ms,
        ..StreamInterval::default()
    }
}

/// Sender and receiver lines per stream and per direction, then CPU use.
pub fn summary(result: &TestResult, units: RateFormat) -> String {
    let mut out = summary_rows(result, units);
    out.push_str(&summary_notes(result));
    out
}

/// The summary's sender and receiver rows, as iperf3 prints them.
pub fn summary_rows(result: &TestResult, units: RateFormat) -> String {
    let spec = &result.spec;
    let bidir = spec.direction == crate::traffic::spec::Direction::Bidir;
    // The summary covers the measured intervals (after the warm-up, and after the initial
    // transient a `duration = "auto"` test left out), labelled from their start as iperf3
    // labels them: 0.00-2.00 for `-O 1 -t 2`.
    let start = 0.0;
    let end = result.summary.seconds;
    // With -P the last interval's separator came before it.
    let mut out = String::from(if spec.streams > 1 { "" } else { SEPARATOR });
    // A test that ended in error before its first interval closed has no figures: rows of 0
    // bytes over 0 s would read as a measurement to a script (iperf3 prints only its error).
    if result.error.is_some() && end <= 0.0 {
        out.push_str(
            "No interval closed before the test ended: no sender or receiver figures (the \
             error follows).\n",
        );
        return out;
    }
    out.push_str(&header(spec));
    out.push('\n');
    for dir in &result.directions {
        let mut rows: Vec<(String, &Summary)> = dir
            .streams
            .iter()
            .map(|s| (s.stream.to_string(), &s.summary))
            .collect();
        if dir.streams.len() > 1 {
            rows.push(("SUM".to_string(), &dir.summary));
        }
        for (id, s) in rows {
            let l = Line {
                id: &id,
                role: role(Some(dir.flow), bidir),
                start,
                end,
                proto: spec.protocol,
                units,
            };
            // The sender's line over the sender's own counted seconds (a far end that is not
            // netsweep counts the other side by its clock).
            let sent = Line {
                end: s.sent_seconds.map_or(end, |secs| start + secs),
                ..l
            };
            match spec.protocol {
                Protocol::Tcp => {
                    let sender = StreamInterval {
                        bytes: s.sent_bytes,
                        bits_per_second: s.sent_bits_per_second,
                        retransmits: s.retransmits,
                        ..StreamInterval::default()
                    };
                    out.push_str(&line(&sent, &sender, "  sender\n"));
                    let receiver = StreamInterval {
                        retransmits: None,
                        ..summary_row(s)
                    };
                    out.push_str(&line(&l, &receiver, "         receiver\n"));
                }
                Protocol::Udp => {
                    // As iperf3: what the sender sent, then what arrived.
                    let sender = StreamInterval {
                        bytes: s.sent_bytes,
                        bits_per_second: s.sent_bits_per_second,
                        packets: s.packets,
                        lost_packets: Some(0),
                        lost_percent: Some(0.0),
                        jitter_ms: Some(0.0),
                        ..StreamInterval::default()
                    };
                    out.push_str(&line(&sent, &sender, "  sender\n"));
                    out.push_str(&line(&l, &summary_row(s), "  receiver\n"));
                }
            }
        }
    }
    out
}

/// What netsweep says beyond iperf3's rows: the window and buffer limits, CPU, buffers, send
/// path and reads, the far end, warnings and contradictions, one line each.
pub fn summary_notes(result: &TestResult) -> String {
    let mut out = String::new();
    if let (Some(rw), Some(sb)) = (
        result.summary.rwnd_limited_percent,
        result.summary.sndbuf_limited_percent,
    ) && (rw >= 1.0 || sb >= 1.0)
    {
        let _ = writeln!(
            out,
            "Senders held back by the receiver's window {rw:.0}% and by their send buffer {sb:.0}% of the time (TCP_INFO); largest advertised window {}",
            Bytes(result.summary.snd_wnd_max_bytes.unwrap_or(0))
        );
    }
    out.push_str(&cpu_line(&result.cpu));
    if let Some(line) = buffers::buffers_line(result) {
        out.push_str(&line);
    }
    for dir in &result.directions {
        if let Some(t) = &dir.udp_timing {
            out.push_str(&timing_line(t, &format!(" {}", role(Some(dir.flow), true))));
        }
    }
    if let Some(l) = &result.latency {
        out.push_str(&latency_lines(l));
    }
    // The line when the path's rate is known (given or a lab's): without it the ratio is
    // unknown and a loopback's microsecond baseline makes the buffer delay a curiosity; the
    // JSON has the figures either way.
    if let Some(m) = result
        .rfc6349
        .as_ref()
        .filter(|m| m.bottleneck_bits_per_second.is_some())
    {
        out.push_str(&rfc6349_line(m));
    }
    for line in [
        spurious_line(&result.summary),
        tail_retransmits_line(&result.summary),
        queued_warmup_line(result),
    ]
    .into_iter()
    .flatten()
    {
        out.push_str(&line);
    }
    if let Some(line) = send_path_line(result) {
        out.push_str(&line);
    }
    match result.start.receive_mode.as_deref() {
        None | Some("copy") => {}
        Some(mode @ "skip-rx-copy") => {
            let _ = writeln!(
                out,
                "Receive: {mode} (MSG_TRUNC: the data is dropped in the receiver's kernel, not \
                 copied; --rx-copy copies it as applications do)"
            );
        }
        Some(mode) => {
            let _ = writeln!(out, "Receive: {mode}.");
        }
    }
    if let Some(line) = low_water_line(&result.start) {
        out.push_str(&line);
    }
    for line in [
        send_buffer_line(&result.start),
        receive_buffer_line(&result.start),
    ]
    .into_iter()
    .flatten()
    {
        out.push_str(&line);
    }
    if let Some(words) = result.spec.affinity.words() {
        let _ = writeln!(out, "CPU affinity (-A): {words}.");
    }
    if let Some(e) = &result.ending {
        let _ = writeln!(out, "Duration auto: {}.", e.sentence());
    }
    if let (Some(peer), Some(p)) = (&result.peer, &result.provenance) {
        let _ = writeln!(
            out,
            "Far end: {peer}. Measured here: {}. From the far end: {}. Not available: {}.",
            p.measured_here.join("; "),
            p.from_peer.join("; "),
            p.unavailable.join("; ")
        );
    }
    for warning in &result.warnings {
        let _ = writeln!(out, "WARNING: {warning}");
    }
    for problem in &result.inconsistencies {
        let _ = writeln!(out, "INCONSISTENT: {problem}");
    }
    out
}

/// How many of the retransmissions were spurious, when any were: the receiver already had them
/// (D-SACK). On loopback and between cores nearly all are: a sender's segments leave from two
/// cores' queues (its own and the one handling ACKs) and arrive out of order, and TCP resends
/// what it takes for lost. The Retr figures above count them all, as iperf3's do.
/// Both ends' CPU. A far end that never sent its account (gone, or the test stopped first)
/// measured no CPU of its own: not reported, rather than zero.
fn cpu_line(c: &crate::traffic::result::CpuResult) -> String {
    let remote = if c.remote.wall_s > 0.0 {
        format!(
            "remote {:.1}% (user {:.2}s, system {:.2}s)",
            c.remote_percent, c.remote.user_s, c.remote.system_s
        )
    } else {
        "remote not reported".to_string()
    };
    format!(
        "CPU: local {:.1}% (user {:.2}s, system {:.2}s), {remote}, 100% = one core\n",
        c.local_percent, c.local.user_s, c.local.system_s,
    )
}

/// The far end's own output (`--get-server-output`), under iperf3's headings.
pub fn server_output(result: &TestResult) -> Option<String> {
    use crate::traffic::result::ServerOutput;
    Some(match result.server_output.as_ref()? {
        ServerOutput::Json(j) => format!(
            "\nServer JSON output:\n{}\n",
            serde_json::to_string_pretty(j).unwrap_or_default()
        ),
        ServerOutput::Text(t) => format!("\nServer output:\n{t}\n"),
    })
}

/// RFC 6349's three metrics of a TCP result, each with the figures it rests on, or what is
/// missing for it.
pub fn rfc6349_line(m: &crate::analysis::rfc6349::Rfc6349) -> String {
    use crate::units::BitRate;
    let ratio = match (m.transfer_time_ratio, m.max_achievable_bits_per_second) {
        (Some(r), Some(max)) => format!(
            "transfer time ratio {r:.4} ({:.2} s against the ideal {:.2} s at {}: {} {}, MTU {}, \
             {} framing){}",
            m.actual_transfer_seconds,
            m.ideal_transfer_seconds.unwrap_or(0.0),
            BitRate(max),
            BitRate(m.bottleneck_bits_per_second.unwrap_or(0.0)),
            m.bottleneck_source.as_deref().unwrap_or("?"),
            m.mtu_bytes.unwrap_or(0),
            m.framing.map_or("ethernet", |f| f.name()),
            segments_words(m),
        ),
        _ => "transfer time ratio unknown (no path rate: give --path-rate)".to_string(),
    };
    let efficiency = match (m.tcp_efficiency_percent, m.retransmitted_bytes) {
        (Some(e), Some(re)) => format!(
            "TCP efficiency {e:.3}% ({} retransmitted of {} sent)",
            Bytes(re),
            Bytes(m.transmitted_bytes.unwrap_or(0))
        ),
        _ => "TCP efficiency unknown (no byte counts from the sender's kernel)".to_string(),
    };
    let delay = match (m.buffer_delay_percent, m.baseline_rtt_ms, m.rtt_during_ms) {
        (Some(d), Some(b), Some(r)) => format!(
            "buffer delay {d:.1}% ({r:.2} ms during the transfer, baseline {b:.2} ms from {})",
            m.baseline_source.as_deref().unwrap_or("?")
        ),
        _ => "buffer delay unknown (no baseline RTT: give --baseline-rtt)".to_string(),
    };
    format!("RFC 6349: {ratio}; {efficiency}; {delay}.\n")
}

/// What the connection's segments carry when TCP options make them smaller than the RFC's
/// payload: ", its 1448-byte segments carry at most X: a ratio of 1.0083 at best".
pub fn segments_words(m: &crate::analysis::rfc6349::Rfc6349) -> String {
    // The RFC's payload over the segment's: 1460 / 1448.
    let best = crate::analysis::rfc6349::best_ratio(m);
    match (m.segment_bytes, m.segments_max_bits_per_second) {
        (Some(s), Some(seg)) => format!(
            ", its {s}-byte segments (TCP options beside the RFC's {} bytes) carry at most {}: a \
             ratio of {:.4} at best",
            (f64::from(s) * best).round(),
            crate::units::BitRate(seg),
            best
        ),
        _ => String::new(),
    }
}

/// The latency probe's summary: idle and loaded round trips, what the load added, probe loss
/// and one-way delay variation.
pub fn latency_lines(l: &LatencyResult) -> String {
    let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let mut out = String::new();
    let mut phase = |name: &str, n: u64, p: [Option<f64>; 4]| {
        let _ = writeln!(
            out,
            "Latency {name:<6} p50 {} ms  p90 {}  p99 {}  max {}  ({n} probes)",
            v(p[0]),
            v(p[1]),
            v(p[2]),
            v(p[3])
        );
    };
    phase(
        "idle",
        l.idle_probes,
        [l.idle_p50_ms, l.idle_p90_ms, l.idle_p99_ms, l.idle_max_ms],
    );
    phase(
        "loaded",
        l.loaded_probes,
        [
            l.loaded_p50_ms,
            l.loaded_p90_ms,
            l.loaded_p99_ms,
            l.loaded_max_ms,
        ],
    );
    let _ = writeln!(
        out,
        "Latency added by the load {} ms (loaded p50 - idle p50); probes lost {}% ({} of {}, {}/s)",
        v(l.added_ms),
        l.probe_loss_percent
            .map_or("-".to_string(), |p| format!("{p:.1}")),
        l.probes_lost,
        l.idle_probes + l.loaded_probes,
        l.probe_rate_hz
    );
    let _ = writeln!(
        out,
        "One-way delay above its minimum under load: client->server p50 {} p99 {} ms, server->client p50 {} p99 {} ms",
        v(l.forward.p50_ms),
        v(l.forward.p99_ms),
        v(l.reverse.p50_ms),
        v(l.reverse.p99_ms)
    );
    out
}

/// Where a UDP receiver's arrival gaps and delay variation peaked.
fn timing_line(t: &UdpTiming, flow: &str) -> String {
    // Bins are about 12% wide: under 10 µs whole microseconds would print 2-2.
    let us = |v: f64| {
        if v < 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.0}")
        }
    };
    let peak = |h: &LogHistogram| match h.mode() {
        Some((lo, hi, c)) if h.total() > 0 => format!(
            "{}-{} us ({:.0}% of {})",
            us(lo),
            us(hi),
            100.0 * c as f64 / h.total() as f64,
            h.total()
        ),
        _ => "-".to_string(),
    };
    let napped = t.read_nap_us.map_or(String::new(), |us| {
        format!("; the receiver read in naps of up to {us} us at this rate, so shorter gaps and delays are its reads'")
    });
    format!(
        "Receiver timing{flow}: arrival gaps peak at {}, delay above its minimum peaks at {}{napped} (JSON udp_timing has the histograms)\n",
        peak(&t.inter_arrival),
        peak(&t.delay_above_min)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iperf3's words, with v4-mapped addresses (a dual-stack server's view) as plain IPv4
    /// and IPv6 without brackets; a socket whose addresses do not parse is left out.
    #[test]
    fn connected_lines_are_iperf3s() {
        let sock = |stream: u16, local: &str, remote: &str| crate::traffic::measure::SocketInfo {
            stream,
            local: local.into(),
            remote: remote.into(),
            ..Default::default()
        };
        let text = connected_lines(&[
            sock(0, "127.0.0.1:52314", "127.0.0.1:5201"),
            sock(1, "[::ffff:10.0.0.1]:40000", "[::1]:5310"),
            sock(12, "?", "127.0.0.1:5201"),
        ]);
        assert_eq!(
            text,
            "[  0] local 127.0.0.1 port 52314 connected to 127.0.0.1 port 5201\n\
             [  1] local 10.0.0.1 port 40000 connected to ::1 port 5310\n"
        );
    }

    #[test]
    fn a_far_end_that_sent_no_account_has_its_cpu_not_reported_rather_than_zero() {
        let mut c = crate::traffic::result::CpuResult::default();
        c.local.user_s = 0.5;
        c.local.system_s = 1.5;
        c.local.wall_s = 4.0;
        c.local_percent = 50.0;
        let line = cpu_line(&c);
        assert_eq!(
            line,
            "CPU: local 50.0% (user 0.50s, system 1.50s), remote not reported, 100% = one core\n"
        );
        c.remote = c.local;
        c.remote_percent = 50.0;
        assert!(
            cpu_line(&c).contains("remote 50.0% (user 0.50s, system 1.50s),"),
            "{}",
            cpu_line(&c)
        );
    }

    /// The buffers line says which of the buffers read at the start were then set instead of
    /// autotuned, and the line naming the set one follows.
    #[test]
    fn buffers_set_on_a_same_host_path_are_not_called_autotuned() {
        use crate::traffic::result::{CpuResult, StartInfo};
        let spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(5));
        let sock = crate::traffic::measure::SocketInfo {
            sndbuf_bytes: 16384,
            rcvbuf_bytes: 131072,
            ..Default::default()
        };
        let start = StartInfo {
            client_sockets: vec![sock.clone()],
            server_sockets: vec![sock],
            ..StartInfo::default()
        };
        let mut r = crate::traffic::result::build(&spec, start, &[], CpuResult::default(), None);
        let text = summary(&r, RateFormat::default());
        assert!(
            text.contains("Buffers at the start (autotuned as the test runs): client sndbuf"),
            "{text}"
        );
        assert!(!text.contains("Send buffer"), "{text}");
        r.start.send_buffer_bytes = Some(512 << 10);
        let text = summary(&r, RateFormat::default());
        let at = text
            .find("Buffers at the start (autotuned as the test runs, except those set below):")
            .unwrap_or_else(|| panic!("{text}"));
        let set = text
            .find("Send buffer: 512 KBytes, set instead")
            .unwrap_or_else(|| panic!("{text}"));
        assert!(at < set, "{text}");
    }

    /// Regression (a trial's finding): a test the server ended before its first interval
    /// closed printed "0.00--0.00 sec 0.00 Bytes 0.00 bits/sec receiver", which a script reads
    /// as a measurement.
    #[test]
    fn a_test_that_failed_before_its_first_interval_has_no_rows() {
        use crate::traffic::result::{CpuResult, StartInfo};
        let spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(3));
        let mut r = crate::traffic::result::build(
            &spec,
            StartInfo::default(),
            &[],
            CpuResult::default(),
            None,
        );
        assert!(
            !r.summary.seconds.is_sign_negative(),
            "{}",
            r.summary.seconds
        );
        r.error = Some("server error: above --server-bitrate-limit".into());
        let text = summary(&r, RateFormat::default());
        assert!(
            text.contains("No interval closed before the test ended") && !text.contains("bits/sec"),
            "{text}"
        );
        assert!(!text.contains("-0.00"), "{text}");
    }

    #[test]
    fn spurious_retransmits_get_a_line_only_when_the_kernel_counted_some() {
        use crate::traffic::result::Summary;
        let mut s = Summary::default();
        assert_eq!(spurious_line(&s), None, "no count (FreeBSD, an old kernel)");
        s.tcp_dsack_dups = Some(0);
        assert_eq!(spurious_line(&s), None, "none spurious");
        s.tcp_dsack_dups = Some(7438);
        let line = spurious_line(&s).unwrap();
        assert!(line.starts_with("Spurious retransmits: 7438 "), "{line}");
        assert!(line.contains("D-SACK") && line.ends_with(".\n"), "{line}");
    }

    #[test]
    fn timing_names_short_peaks_to_a_tenth_and_says_when_the_receiver_napped() {
        let mut t = UdpTiming::default();
        for _ in 0..3 {
            t.inter_arrival.record_ns(1_900);
            t.delay_above_min.record_ns(120_000);
        }
        let line = timing_line(&t, "");
        assert!(
            line.contains("gaps peak at 1.8-2.0 us (100% of 3)"),
            "{line}"
        );
        assert!(line.contains("peaks at 112-126 us"), "{line}");
        assert!(!line.contains("naps"), "{line}");
        t.read_nap_us = Some(100);
        let line = timing_line(&t, "");
        assert!(line.contains("naps of up to 100 us"), "{line}");
    }
}
