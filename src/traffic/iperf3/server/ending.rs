//! How an iperf3 test ends on the server: waiting for the client's end, the log line of a finished test and the text `--get-server-output` returns.

use super::*;

/// A test in words for the log: "TCP reverse test, 4 streams, 10 s", or with the count that
/// ends it: "..., until 1048576 bytes".
pub(super) fn test_words(spec: &TestSpec, params: &Params) -> String {
    let end = match (params.bytes, params.blocks) {
        (0, 0) if params.time_s == 0 => "until the client ends it (-t 0)".to_string(),
        (0, 0) => format!("{} s", params.time_s + params.omit_s),
        (0, k) => format!("until {k} blocks"),
        (b, _) => format!("until {b} bytes"),
    };
    format!("{}, {end}", spec.kind_words())
}

/// The text an iperf3 client asked for with `--get-server-output`: the test as this server
/// writes it on stdout (`output::served_test`, from the test's `document`); the log's one line
/// if the document has no test's figures.
pub(super) fn server_output(
    document: &serde_json::Value,
    (peer, spec): (SocketAddr, &TestSpec),
    (ours, theirs): (&Results, &Results),
) -> String {
    crate::traffic::output::served_test(document, crate::units::RateFormat::Auto)
        .unwrap_or_else(|| format!("{}\n", summary_line(peer, spec, ours, theirs)))
}

/// One log line per finished test: what each direction's sender sent, and what its receiver
/// counted, over the receiver's seconds: "server to client 12.5 MBytes sent, 12.4 MBytes
/// received at 15.6 Gbits/sec (13034425 bytes in 0.006682 s)".
pub(super) fn summary_line(
    peer: SocketAddr,
    spec: &TestSpec,
    ours: &Results,
    theirs: &Results,
) -> String {
    let flows = spec.flows();
    let mut parts = Vec::new();
    for flow in [Flow::ClientToServer, Flow::ServerToClient] {
        let name = flow.words();
        let (sender, receiver) = if flow == Flow::ClientToServer {
            (theirs, ours)
        } else {
            (ours, theirs)
        };
        let (bytes, secs) = direction_total(&flows, flow, receiver);
        let (sent, _) = direction_total(&flows, flow, sender);
        if flows.contains(&flow) && secs > 0.0 {
            parts.push(format!(
                "{name} {} sent, {} received at {} ({bytes} bytes in {secs:.6} s)",
                crate::units::Bytes(sent),
                crate::units::Bytes(bytes),
                crate::units::BitRate(bytes as f64 * 8.0 / secs)
            ));
        }
    }
    format!("{peer}: iperf3 test done: {}", parts.join(", "))
}

/// One end's account of one direction: the bytes of its streams in `results`, and the longest
/// seconds any of them counted over.
fn direction_total(flows: &[Flow], flow: Flow, results: &Results) -> (u64, f64) {
    let (mut bytes, mut secs) = (0u64, 0f64);
    for (i, _) in flows.iter().enumerate().filter(|(_, f)| **f == flow) {
        if let Some(s) = results.stream(wire::stream_id(i)) {
            bytes = bytes.saturating_add(s.bytes);
            secs = secs.max(s.seconds().unwrap_or(0.0));
        }
    }
    (bytes, secs)
}

/// When a test must have ended, and the words for one that had not.
pub(super) struct Deadline {
    pub at: Instant,
    pub why: String,
    /// iperf3's error code for it, one the client knows.
    pub code: i32,
}

impl Deadline {
    /// The grid's end: the asked time plus `END_GRACE`. Without a time (`-t 0`, `-n`, `-k`)
    /// the grid is the longest test this server serves plus `END_GRACE`, and the test ends
    /// at that longest, the grace left for a client that asked a time.
    pub(super) fn of(start: Instant, spec: &TestSpec, params: &Params) -> Deadline {
        if params.time_s > 0 {
            return Deadline {
                at: start + spec.total_time(),
                why: format!(
                    "the client did not say TEST_END {} s after the test's time",
                    END_GRACE.as_secs()
                ),
                code: super::spec::expired_code(params.client_version.as_deref()),
            };
        }
        let longest = spec.total_time().saturating_sub(END_GRACE);
        Deadline {
            at: start + longest,
            why: format!(
                "the test reached the longest this server serves ({} s)",
                longest.as_secs()
            ),
            code: super::spec::expired_code(params.client_version.as_deref()),
        }
    }
}

/// What this end counted of a test that ended early, for the log: "client to server 3.62
/// GBytes received at 12.5 Gbits/sec (3886512128 bytes in 2.490 s)" (its receivers, or "sent"
/// for its senders),
/// each direction; `None` when it counted nothing.
pub(super) fn counted_words(spec: &TestSpec, ours: &Results) -> Option<String> {
    let flows = spec.flows();
    let parts: Vec<String> = [Flow::ClientToServer, Flow::ServerToClient]
        .into_iter()
        .filter_map(|flow| {
            let (bytes, secs) = direction_total(&flows, flow, ours);
            let verb = if flow == Flow::ClientToServer {
                "received"
            } else {
                "sent"
            };
            (secs > 0.0).then(|| {
                format!(
                    "{} {} {verb} at {} ({bytes} bytes in {secs:.3} s)",
                    flow.words(),
                    crate::units::Bytes(bytes),
                    crate::units::BitRate(bytes as f64 * 8.0 / secs)
                )
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Why a test ended when the client said CLIENT_TERMINATE (iperf3's client interrupted, a
/// `-t 0` test stopped): the client's own end, as iperf3's server takes it.
pub(super) const CLIENT_TERMINATED: &str = "the client terminated the test";
/// The server was stopped (a signal) while the test ran: the client is told SERVER_TERMINATE.
pub(super) const SERVER_TERMINATED: &str = "the server was stopped while the test ran";

/// Why a test ended when the client's control connection closed mid-test.
pub(super) const CLIENT_GONE: &str = "the client went away mid-test";

/// iperf3's server's words for a test its client ended (IECLIENTTERM, IECTRLCLOSE), what its
/// `-J` document's `error` says and scripts look for; `None` for other ends.
pub(super) fn iperf3_words(why: &str) -> Option<&'static str> {
    match why {
        CLIENT_TERMINATED => Some("the client has terminated"),
        SERVER_TERMINATED => Some("the server has terminated"),
        CLIENT_GONE => Some("the client has unexpectedly closed the connection"),
        _ => None,
    }
}

/// Why a test ended before the client's TEST_END: the words for the log, and the iperf3
/// error the client is told (none when the client itself ended it or went away).
#[derive(Debug)]
pub(super) struct Ended {
    pub why: String,
    pub code: Option<i32>,
}

impl Ended {
    fn told(code: i32, why: String) -> Ended {
        Ended {
            why,
            code: Some(code),
        }
    }

    fn untold(why: impl Into<String>) -> Ended {
        Ended {
            why: why.into(),
            code: None,
        }
    }
}

/// Waits for the client's TEST_END, giving `live` each interval report. A client that goes
/// away, terminates, or never says it is an error (and the streams stop at once either way),
/// and so is a test whose streams this end receives that brings nothing for `rcv_timeout`
/// (iperf3's server: IENOMSG), and one whose rate passes the server's
/// `--server-bitrate-limit` (`watch`; IETOTALRATE). A server stopped (`stopping`) ends it
/// at once.
pub(super) fn wait_for_end(
    ctrl: &mut TcpStream,
    streams: &session::Streams,
    (deadline, rcv_timeout, stopping): (&Deadline, Duration, &AtomicBool),
    (finished, mut watch, mut live): (&mut Finished, Option<RateWatch>, Option<&mut LiveTest>),
    contested: impl Fn() -> Option<SocketAddr>,
) -> Result<(), Ended> {
    let mut failure = session::StreamFailure::default();
    loop {
        if stopping.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Ended::untold(SERVER_TERMINATED));
        }
        if let Some(other) = contested() {
            return Err(Ended::told(
                code::STREAM_ACCEPT,
                format!(
                    "{other} raced the client for one of its UDP streams: the test is ended so \
                     no stream goes to the wrong peer"
                ),
            ));
        }
        if Instant::now() > deadline.at {
            return Err(Ended::told(deadline.code, deadline.why.clone()));
        }
        if let Some(why) = streams.receive_timed_out(rcv_timeout) {
            return Err(Ended::told(code::NO_MSG, why));
        }
        // Interval reports count only against the rate limit (the final reports hold them); a
        // stream that ends before TEST_END (its sender shut down its side, as netsweep's does)
        // is kept.
        while let Ok(ev) = streams.events.try_recv() {
            match ev {
                EngineEvent::StreamDone(r, cpu) => {
                    // Before TEST_END the test runs, however long the client takes.
                    failure.note(&r, true);
                    finished.add(*r, cpu);
                }
                EngineEvent::Interval(iv) => {
                    if let Some(live) = live.as_mut() {
                        live.interval(&iv);
                    }
                    if let Some(why) = watch.as_mut().and_then(|w| w.record(iv.index, iv.bytes)) {
                        return Err(Ended::told(code::TOTAL_RATE, why));
                    }
                }
            }
        }
        if !crate::platform::sockopt::wait_readable(ctrl, Duration::from_millis(50))
            .unwrap_or(false)
        {
            // A stream that failed while the test ran, and no word from the client: iperf3's
            // server ends the test so (IESTREAMWRITE, IESTREAMREAD).
            if let Some(why) = failure.due() {
                let code = match failure.role() {
                    Some(crate::traffic::measure::Role::Sender) => code::STREAM_WRITE,
                    _ => code::STREAM_READ,
                };
                return Err(Ended::told(code, why.to_string()));
            }
            continue;
        }
        return match control::read_state(ctrl, Instant::now() + STAGE_DEADLINE) {
            Ok(State::TestEnd) => Ok(()),
            Ok(State::ClientTerminate) => Err(Ended::untold(CLIENT_TERMINATED)),
            Ok(s) => Err(Ended::untold(format!(
                "the client {} during the test",
                s.as_peer_act()
            ))),
            Err(ControlError::Io(crate::traffic::protocol::ProtocolError::Closed)) => {
                Err(Ended::untold(CLIENT_GONE))
            }
            Err(e) => Err(Ended::untold(format!("control connection: {e}"))),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::iperf3::wire::StreamResult;

    fn one(bytes: u64) -> Results {
        Results {
            streams: vec![StreamResult {
                id: wire::stream_id(0),
                bytes,
                start_time: Some(0.0),
                end_time: Some(0.5),
                ..StreamResult::default()
            }],
            ..Results::default()
        }
    }

    /// A reverse test's line says what the server sent and what the client received (it
    /// said "server to client 12.4 MBytes": the client's count alone, read as the server's).
    #[test]
    fn the_log_line_says_what_was_sent_and_what_was_received() {
        let mut spec = TestSpec::tcp(Duration::from_secs(1));
        spec.direction = Direction::Reverse;
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let line = summary_line(peer, &spec, &one(13_107_200), &one(13_034_425));
        assert!(
            line.contains("server to client 12.5 MBytes sent, 12.4 MBytes received at"),
            "{line}"
        );
        assert!(line.contains("(13034425 bytes in 0.500000 s)"), "{line}");
        spec.direction = Direction::Forward;
        let line = summary_line(peer, &spec, &one(990), &one(1000));
        assert!(
            line.contains("client to server 1000 Bytes sent, 990 Bytes"),
            "{line}"
        );
    }
}
