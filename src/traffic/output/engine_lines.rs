//! The summary's lines about what the engine did: how the senders sent (`Send path`) and how
//! the receivers batched their reads (`Reads`), each direction's under `--bidir`, naming whose
//! senders and receivers they are, seen from the client that prints them.

use crate::traffic::result::TestResult;
use crate::traffic::spec::Flow;
use crate::units::Bytes;
use std::fmt::Write;

/// What the receivers' low-water mark probe found (`engine::lowater`), when it ran: the first
/// direction's receivers, and under `--bidir` each direction's, each labelled.
pub(super) fn low_water_line(start: &crate::traffic::result::StartInfo) -> Option<String> {
    let bidir = |flow: Option<Flow>| match (&start.other_send, start.other_low_water_probe, flow) {
        (None, None, _) | (_, _, None) => String::new(),
        (_, _, Some(flow)) => format!(", {}{}", flow.words(), receivers_of(flow)),
    };
    let mut out = String::new();
    if let Some(p) = start.receive_low_water_probe {
        out.push_str(&reads_line(
            &bidir(start.first_flow),
            p,
            start.receive_low_water_bytes,
        ));
    }
    if let Some(p) = start.other_low_water_probe {
        let other = start.first_flow.map(Flow::other);
        out.push_str(&reads_line(&bidir(other), p, start.other_low_water_bytes));
    }
    (!out.is_empty()).then_some(out)
}

/// The receive buffer receivers set instead of the kernel's autotuning on a same-host path
/// (`engine::rcvbuf`): the first direction's, and under `--bidir` each direction's, labelled.
pub(super) fn receive_buffer_line(start: &crate::traffic::result::StartInfo) -> Option<String> {
    let bidir = start.other_send.is_some() || start.other_receive_reads.is_some();
    let label = |flow: Option<Flow>| match flow.filter(|_| bidir) {
        Some(f) => format!("{}{}: ", f.words(), receivers_of(f)),
        None => String::new(),
    };
    let set: Vec<String> = [
        (start.first_flow, start.receive_buffer_bytes),
        (
            start.first_flow.map(Flow::other),
            start.other_receive_buffer_bytes,
        ),
    ]
    .into_iter()
    .filter_map(|(flow, bytes)| Some(format!("{}{} a stream", label(flow), Bytes(bytes?))))
    .collect();
    (!set.is_empty()).then(|| {
        format!(
            "Receive buffer: {}, set instead of the kernel's autotuning (a same-host path: the \
             window holds only memory; -w sets your own).\n",
            set.join("; ")
        )
    })
}

/// The send buffer a lone sender set instead of the kernel's autotuning on a same-host path
/// (`engine::sndbuf`), named with the end whose sender it is.
pub(super) fn send_buffer_line(start: &crate::traffic::result::StartInfo) -> Option<String> {
    let bytes = start.send_buffer_bytes?;
    let (senders, _, _) = senders_of(start.first_flow);
    Some(format!(
        "Send buffer{senders}: {}, set instead of the kernel's autotuning (one stream on a \
         same-host path: the window holds only memory; -w sets your own).\n",
        Bytes(bytes)
    ))
}

/// One direction's `Reads` line; `which` labels the direction under `--bidir`.
fn reads_line(
    which: &str,
    p: crate::traffic::measure::LowWaterProbe,
    mark_bytes: Option<u64>,
) -> String {
    let ratio = |a: u64, b: u64| a as f64 / (b as f64).max(1.0);
    // Results written before receivers could nap have no napping figure.
    let tried_nap = p.napped_bytes > 0 || p.napped;
    // Each setting: what it carried in the probe and what its receivers spent (ns).
    let [mark_cpu, off_cpu, nap_cpu] = p.cpu_ns;
    let marked = (p.marked_bytes, mark_cpu);
    let (unmarked, napped) = ((p.unmarked_bytes, off_cpu), (p.napped_bytes, nap_cpu));
    let (kept, carried, others) = if p.napped {
        (
            format!(
                "napping up to {} us between drains (no low-water mark)",
                crate::traffic::engine::lowater::NAP_MAX.as_micros()
            ),
            napped,
            [("with the mark", marked), ("with neither", unmarked)],
        )
    } else if p.kept_mark {
        (
            format!(
                "batched (low-water mark up to {})",
                crate::units::Bytes(mark_bytes.unwrap_or(1))
            ),
            marked,
            [("without it", unmarked), ("napping", napped)],
        )
    } else {
        (
            "one per wake-up (no low-water mark)".to_string(),
            unmarked,
            [("with one", marked), ("napping", napped)],
        )
    };
    let compared: Vec<String> = others
        .iter()
        .filter(|(name, _)| tried_nap || *name != "napping")
        .map(|(name, (bytes, _))| {
            format!("{:.2}x what they carried {name}", ratio(carried.0, *bytes))
        })
        .collect();
    let early = crate::traffic::engine::lowater::PROBE_EARLY_TURNS;
    let probe = if p.turns as usize == early {
        format!(
            "the receivers' probe (decided after {early} of its {} turns)",
            crate::traffic::engine::lowater::PROBE_TURNS.len()
        )
    } else {
        "the receivers' probe".to_string()
    };
    format!(
        "Reads{which}: {kept}; in {probe} they carried {}{}.\n",
        compared.join(" and "),
        if p.for_cpu {
            cheaper_words(carried, &others)
        } else {
            String::new()
        }
    )
}

/// For a probe that kept a setting for its CPU (`lowater::PROBE_CPU_MARGIN`): what the kept
/// setting (`kept`: bytes carried, receivers' CPU) cost per byte against the one of `others`
/// that carried the most.
fn cheaper_words(kept: (u64, u64), others: &[(&str, (u64, u64)); 2]) -> String {
    let per_byte = |(bytes, cpu): (u64, u64)| cpu as f64 / (bytes as f64).max(1.0);
    match others.iter().max_by_key(|(_, (bytes, _))| *bytes) {
        Some(&(name, other)) if other.1 > 0 => format!(
            ", at {:.2}x their CPU per byte {name} (the cheaper is kept where both carried \
             within {:.0}%)",
            per_byte(kept) / per_byte(other),
            crate::traffic::engine::lowater::PROBE_MARGIN * 100.0,
        ),
        _ => String::new(),
    }
}

/// A path no calibration chose: the one `-l`, `-Z` or `--no-zerocopy` asked, or the default of
/// a test that does not calibrate (paced, by count, or too short). Regression: "as given" was
/// printed for the default too, when nothing had been given.
const NOT_CALIBRATED: &str =
    "fixed, not calibrated (-l, --no-zerocopy, -b, a count or a short test)";

/// How the senders sent, and the calibration that chose it (TCP).
/// Why a TCP stream's receiver read more bytes in its measured seconds than its sender wrote in
/// its own, when one did: each end counts its own seconds, and what the sender wrote in the
/// warm-up (calibration, `-O`) was still queued in the sockets when the receiver began, so it
/// arrived in the receiver's first measured seconds (up to 19 MB of one stream on loopback; a
/// slow path's sender queues seconds of data). Goodput is what the receiver read in its
/// seconds; moving those bytes out of it read a 50 Mbit/s path 7% below the wire.
pub(super) fn queued_warmup_line(result: &TestResult) -> Option<String> {
    if result.spec.protocol != crate::traffic::spec::Protocol::Tcp {
        return None;
    }
    let (stream, more) = result
        .directions
        .iter()
        .flat_map(|d| &d.streams)
        .map(|s| {
            (
                s.stream,
                s.summary.bytes.saturating_sub(s.summary.sent_bytes),
            )
        })
        .max_by_key(|(_, more)| *more)
        .filter(|(_, more)| *more > 0)?;
    Some(format!(
        "The receivers' measured seconds include {} their senders wrote in the warm-up \
         (stream {stream}), still queued when those seconds began: normal, as each end counts \
         its own seconds; goodput is what the receiver read in its own.\n",
        crate::units::Bytes(more)
    ))
}

pub(super) fn spurious_line(s: &crate::traffic::result::Summary) -> Option<String> {
    let dups = s.tcp_dsack_dups.filter(|d| *d > 0)?;
    Some(format!(
        "Spurious retransmits: {dups} of the connections' retransmitted segments were already at \
         the receiver (D-SACK): resent after reordering or a late ACK, not lost.\n"
    ))
}

/// The segments the senders' kernels retransmitted after the last interval, in no row.
pub(super) fn tail_retransmits_line(s: &crate::traffic::result::Summary) -> Option<String> {
    let n = s.tail_retransmits?;
    Some(format!(
        "Retransmits after the last interval: {n} more segments, of the tail the receivers read \
         after the measured seconds (in no row).\n"
    ))
}

pub(super) fn send_path_line(result: &TestResult) -> Option<String> {
    let mut line = first_send_path_line(result)?;
    if let Some(o) = &result.start.other_send {
        let (senders, record, peer) = senders_of(Some(o.flow));
        let how = match (o.remembered_tests, o.chosen) {
            (Some(n), _) => {
                format!("chosen by {record} record of the re-checks of {n} earlier tests to {peer}")
            }
            (None, true) => "calibrated".to_string(),
            (None, false) => NOT_CALIBRATED.to_string(),
        };
        let rechecked = match o.rechecks.len() {
            0 => String::new(),
            n => format!(
                "; re-checked {n} time{} on the warm connection{}",
                if n == 1 { "" } else { "s" },
                if o.rechecks.iter().any(|r| r.switched) {
                    ", which switched to it"
                } else {
                    ""
                }
            ),
        };
        let _ = writeln!(
            line,
            "Send path, {}{senders}: {} in {} per call, {how}{rechecked}",
            o.flow.words(),
            o.send_path,
            Bytes(o.chunk_bytes)
        );
    }
    Some(line)
}

/// Whose receivers a direction has, seen from the client.
fn receivers_of(flow: Flow) -> &'static str {
    match flow {
        Flow::ClientToServer => " (the server's receivers)",
        Flow::ServerToClient => " (this end's receivers)",
    }
}

/// Whose senders a send path line describes, seen from the client that prints it: the words
/// after "Send path", whose record chose, and the record's peer.
fn senders_of(flow: Option<Flow>) -> (&'static str, &'static str, &'static str) {
    match flow {
        None | Some(Flow::ClientToServer) => ("", "this host's", "this peer"),
        Some(Flow::ServerToClient) => (" (the server's senders)", "the server's", "this client"),
    }
}

/// The send path of the first stream's direction.
fn first_send_path_line(result: &TestResult) -> Option<String> {
    let (path, chunk) = (result.start.send_path.as_ref()?, result.start.chunk_bytes?);
    let (senders, record_owner, peer) = senders_of(result.start.first_flow);
    // Chosen live (against an iperf3 server): no calibration, yet re-checked.
    // What happened, not what was asked: a paced sender never calibrates (nor chooses live).
    let calibration = result.spec.effective_calibration();
    let live = calibration.is_zero() && result.spec.effective_live_path_choice();
    let how = if calibration.is_zero() && !live {
        NOT_CALIBRATED.to_string()
    } else {
        let tried: Vec<String> = result
            .start
            .calibration
            .iter()
            .map(|t| match t.bits_per_second {
                Some(r) => format!("{} {}", t.path, crate::units::BitRate(r)),
                None => format!(
                    "{} not measured ({} calls: each outlasts a turn)",
                    t.path, t.calls
                ),
            })
            .collect();
        let calibrated = format!(
            "{:.1} s calibration left out of the results: {}",
            calibration.as_secs_f64(),
            tried.join(", ")
        );
        // A confident record sends on its pick from the start (`sendpath::Pool::remembered_best`):
        // no calibration turns, the calibration's time still left out of the results.
        let record = result.start.send_path_remembered_tests.map(|n| {
            let instead = if live {
                "used from the start".to_string()
            } else if tried.is_empty() {
                format!(
                    "used from the start; the {:.1} s a calibration takes is left out of the \
                     results",
                    calibration.as_secs_f64()
                )
            } else {
                format!("not this test's {calibrated}")
            };
            format!(
                "{record_owner} record of the re-checks of {n} earlier tests to {peer} ({instead})"
            )
        });
        // A live choice (against an iperf3 server) starts on the record's pick or as given.
        let first = match (record, live) {
            (Some(r), _) => format!("chosen by {r}"),
            (None, true) => "fixed at the start (no calibration in iperf3's protocol)".to_string(),
            (None, false) => format!("chosen by a {calibrated}"),
        };
        if result.start.rechecks.is_empty() {
            if live || result.start.send_path_remembered_tests.is_some() {
                first
            } else {
                format!("the fastest of a {calibrated}")
            }
        } else {
            let rate = |t: &crate::traffic::engine::sendpath::Trial| match t.bits_per_second {
                Some(r) => format!("{} {}", t.path, crate::units::BitRate(r)),
                None => format!("{} not measured", t.path),
            };
            let checks: Vec<String> = result
                .start
                .rechecks
                .iter()
                .map(|r| {
                    let tried: Vec<String> = r.trials.iter().map(rate).collect();
                    format!(
                        "at {:.1} s {}{}",
                        calibration.as_secs_f64() + r.after_s,
                        tried.join(", "),
                        match (r.switched, r.by_record) {
                            (true, false) => format!(": {} took over", r.kept),
                            (true, true) => format!(
                                ": {} took over on the host's record with these turns",
                                r.kept
                            ),
                            (false, _) => String::new(),
                        }
                    )
                })
                .collect();
            format!(
                "re-checked on the warm connection, in the results (each option's rate written \
                 into its socket over its turn, which a socket buffer can hold above the path's \
                 rate: {}); first {first}",
                checks.join("; "),
            )
        }
    };
    // Under `--bidir` each direction's line names its direction.
    let which = match (&result.start.other_send, result.start.first_flow) {
        (Some(_), Some(flow)) => format!(", {}", flow.words()),
        _ => String::new(),
    };
    Some(format!(
        "Send path{which}{senders}: {path} in {} per call, {how}\n",
        Bytes(chunk)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::measure::LowWaterProbe;
    use crate::traffic::result::StartInfo;
    use crate::traffic::spec::TestSpec;

    #[test]
    fn the_receive_buffer_line_names_each_directions_receivers_under_bidir() {
        let mut start = StartInfo::default();
        assert_eq!(receive_buffer_line(&start), None, "autotuned: no line");
        start.first_flow = Some(Flow::ClientToServer);
        start.receive_buffer_bytes = Some(4 << 20);
        let one = receive_buffer_line(&start).unwrap();
        assert!(
            one.starts_with("Receive buffer: 4.00 MBytes a stream, set instead"),
            "{one}"
        );
        start.other_receive_reads = Some(10);
        start.other_receive_buffer_bytes = Some(4 << 20);
        let both = receive_buffer_line(&start).unwrap();
        assert!(
            both.starts_with(
                "Receive buffer: client to server (the server's receivers): 4.00 MBytes a \
                 stream; server to client (this end's receivers): 4.00 MBytes a stream, set"
            ),
            "{both}"
        );
        start.receive_buffer_bytes = None;
        let other = receive_buffer_line(&start).unwrap();
        assert!(
            other.starts_with("Receive buffer: server to client (this end's receivers): 4.00"),
            "{other}"
        );
    }

    #[test]
    fn the_send_buffer_line_names_the_sending_end() {
        let mut start = StartInfo::default();
        assert_eq!(send_buffer_line(&start), None, "autotuned: no line");
        start.first_flow = Some(Flow::ServerToClient);
        start.send_buffer_bytes = Some(512 << 10);
        let line = send_buffer_line(&start).unwrap();
        assert!(
            line.starts_with("Send buffer (the server's senders): 512 KBytes, set instead"),
            "{line}"
        );
    }

    /// A probe's outcome: bytes with the mark, without, napping; whether it kept the mark, napped.
    fn probe(
        [marked, unmarked, napped_bytes]: [u64; 3],
        kept_mark: bool,
        napped: bool,
    ) -> LowWaterProbe {
        LowWaterProbe {
            marked_bytes: marked,
            unmarked_bytes: unmarked,
            napped_bytes,
            kept_mark,
            napped,
            turns: 12,
            cpu_ns: [0; 3],
            for_cpu: false,
        }
    }

    #[test]
    fn the_reads_line_says_what_the_probe_kept_and_by_how_much() {
        let mut start = StartInfo::default();
        assert_eq!(low_water_line(&start), None, "no probe, no line");
        start.receive_low_water_bytes = Some(1 << 20);
        start.receive_low_water_probe = Some(probe([1250, 1000, 0], true, false));
        let line = low_water_line(&start).unwrap();
        assert!(
            line.contains("batched (low-water mark up to 1.00 MBytes)"),
            "{line}"
        );
        assert!(
            line.contains("1.25x what they carried without it"),
            "{line}"
        );
        start.receive_low_water_bytes = Some(1);
        start.receive_low_water_probe = Some(probe([1000, 1400, 1200], false, false));
        let line = low_water_line(&start).unwrap();
        assert!(line.contains("no low-water mark"), "{line}");
        assert!(
            line.contains("1.40x what they carried with one and 1.17x what they carried napping"),
            "{line}"
        );
        start.receive_low_water_probe = Some(probe([1000, 800, 1200], false, true));
        let line = low_water_line(&start).unwrap();
        assert!(
            line.contains(&format!(
                "napping up to {} us between drains",
                crate::traffic::engine::lowater::NAP_MAX.as_micros()
            )),
            "{line}"
        );
        assert!(
            line.contains(
                "1.20x what they carried with the mark and 1.50x what they carried with neither"
            ),
            "{line}"
        );
        assert!(line.contains("; in the receivers' probe they"), "{line}");
        // A probe that decided after its first half says so.
        let mut early = probe([1000, 500, 1800], false, true);
        early.turns = crate::traffic::engine::lowater::PROBE_EARLY_TURNS as u32;
        start.receive_low_water_probe = Some(early);
        let line = low_water_line(&start).unwrap();
        assert!(
            line.contains("in the receivers' probe (decided after 6 of its 12 turns) they carried"),
            "{line}"
        );
        // A probe that kept the mark for its CPU says what it saved.
        let mut cheaper = probe([1000, 990, 1020], true, false);
        (cheaper.cpu_ns, cheaper.for_cpu) = ([100, 400, 500], true);
        start.receive_low_water_bytes = Some(1 << 20);
        start.receive_low_water_probe = Some(cheaper);
        let line = low_water_line(&start).unwrap();
        assert!(
            line.contains(
                "0.98x what they carried napping, at 0.20x their CPU per byte napping (the \
                 cheaper is kept where both carried within 5%)."
            ),
            "{line}"
        );
    }

    /// A 5 s TCP result with a 0.3 s calibration whose senders wrote 1 MiB per call on the
    /// pick of a record of 6 tests, sending in `flow`.
    fn result_sent_on_the_records_pick(flow: Option<Flow>) -> TestResult {
        use crate::traffic::result::CpuResult;
        let mut spec = TestSpec::tcp(std::time::Duration::from_secs(5));
        spec.calibration = std::time::Duration::from_millis(300);
        let start = StartInfo {
            send_path: Some("write".into()),
            chunk_bytes: Some(1 << 20),
            send_path_remembered_tests: Some(6),
            first_flow: flow,
            ..StartInfo::default()
        };
        crate::traffic::result::build(&spec, start, &[], CpuResult::default(), None)
    }

    #[test]
    fn the_send_path_line_says_whether_it_was_given_calibrated_or_the_records_from_the_start() {
        use crate::traffic::engine::sendpath::Trial;
        let mut r = result_sent_on_the_records_pick(None);
        let line = send_path_line(&r).unwrap();
        assert!(
            line.contains(
                "chosen by this host's record of the re-checks of 6 earlier tests to this peer \
                 (used from the start; the 0.3 s a calibration takes is left out of the results)"
            ),
            "{line}"
        );
        r.start.calibration = crate::traffic::engine::sendpath::CANDIDATES
            .iter()
            .map(|p| Trial {
                path: *p,
                bits_per_second: Some(1e9),
                calls: 10,
            })
            .collect();
        let line = send_path_line(&r).unwrap();
        assert!(
            line.contains("(not this test's 0.3 s calibration left out of the results: "),
            "{line}"
        );
        // A paced sender does not calibrate, whatever the spec's calibration says.
        r.spec.bitrate_bps = 2e9;
        assert!(
            send_path_line(&r)
                .unwrap()
                .ends_with("not calibrated (-l, --no-zerocopy, -b, a count or a short test)\n")
        );
        r.spec.bitrate_bps = 0.0;
        r.spec.calibration = std::time::Duration::ZERO;
        assert!(
            send_path_line(&r)
                .unwrap()
                .ends_with("not calibrated (-l, --no-zerocopy, -b, a count or a short test)\n")
        );
    }

    #[test]
    fn the_send_path_lines_name_the_servers_senders_and_each_direction_of_bidir() {
        use crate::traffic::result::OtherSend;
        let mut r = result_sent_on_the_records_pick(Some(Flow::ServerToClient));
        // -R: the server's senders, chosen by the server's record.
        let line = send_path_line(&r).unwrap();
        assert!(
            line.starts_with("Send path (the server's senders): write in 1.00 MBytes"),
            "{line}"
        );
        assert!(
            line.contains("the server's record of the re-checks of 6 earlier tests to this client"),
            "{line}"
        );
        assert!(!line.contains("this host"), "{line}");
        // --bidir: a line for each direction, each naming it.
        r.start.first_flow = Some(Flow::ClientToServer);
        r.start.other_send = Some(OtherSend {
            flow: Flow::ServerToClient,
            send_path: "sendfile".into(),
            chunk_bytes: 64 << 10,
            chosen: true,
            remembered_tests: None,
            rechecks: Vec::new(),
            calls: Some(40),
            call_bytes: Some(40 << 16),
            streams: Some(2),
        });
        let text = send_path_line(&r).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("Send path, client to server: write in 1.00 MBytes"),
            "{text}"
        );
        assert!(lines[0].contains("this host's record"), "{text}");
        // The reads line is the first direction's receivers', and says so under --bidir.
        r.start.receive_low_water_bytes = Some(4 << 20);
        r.start.receive_low_water_probe = Some(probe([300, 200, 250], true, false));
        let reads = low_water_line(&r.start).unwrap();
        assert!(
            reads.starts_with(
                "Reads, client to server (the server's receivers): batched (low-water mark up to \
                 4.00 MBytes); in the receivers' probe they carried 1.50x what they carried \
                 without it and 1.20x what they carried napping."
            ),
            "{reads}"
        );
        // And the other direction's receivers, probed on their own end.
        r.start.other_low_water_probe = Some(probe([100, 100, 200], false, true));
        let reads = low_water_line(&r.start).unwrap();
        let second = reads.lines().nth(1).unwrap_or_default();
        assert!(
            second.starts_with(
                "Reads, server to client (this end's receivers): napping up to 100 us between \
                 drains (no low-water mark); in the receivers' probe they carried 2.00x what \
                 they carried with the mark"
            ),
            "{reads}"
        );
        r.start.other_low_water_probe = None;
        assert_eq!(
            lines[1],
            "Send path, server to client (the server's senders): sendfile in 64.0 KBytes per \
             call, calibrated"
        );
        let given = OtherSend {
            chosen: false,
            ..r.start.other_send.clone().unwrap()
        };
        r.start.other_send = Some(given);
        let other = r.start.other_send.take();
        assert!(
            low_water_line(&r.start)
                .unwrap()
                .starts_with("Reads: batched"),
            "no label without --bidir"
        );
        r.start.other_send = other;
        assert!(send_path_line(&r).unwrap().ends_with(
            "per call, fixed, not calibrated (-l, --no-zerocopy, -b, a count or a short test)\n"
        ));
        // The other direction's re-checks, and whether one of them chose its path.
        let sendfile = crate::traffic::engine::sendpath::CANDIDATES[0];
        let recheck = |switched| crate::traffic::engine::sendpath::Recheck {
            after_s: 0.7,
            trials: Vec::new(),
            kept: sendfile,
            switched,
            by_record: false,
        };
        if let Some(o) = r.start.other_send.as_mut() {
            o.chosen = true;
            o.rechecks = vec![recheck(false), recheck(true)];
        }
        assert!(
            send_path_line(&r).unwrap().ends_with(
                "per call, calibrated; re-checked 2 times on the warm connection, which \
                 switched to it\n"
            ),
            "{}",
            send_path_line(&r).unwrap_or_default()
        );
    }
}
