//! One netsweep test on its control connection: the request, admission, the arrival of the
//! data streams, the test itself and the result sent back (`control_session`), with the words of
//! the server's log.

use super::*;
use crate::traffic::bitrate_limit::RateWatch;

pub(super) fn control_session(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    (shared, buffers): (&Shared, &ListenerBuffers),
    mut pending: Pending<'_>,
) -> anyhow::Result<()> {
    let request = match read_frame::<ClientMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE)) {
        Ok(request) => request,
        Err(ProtocolError::Malformed(what)) => {
            // A newer client's option (a window mode, a test kind) this server does not know:
            // say so, rather than close the connection without a word.
            return refuse(
                &mut ctrl,
                Refusal::Limit {
                    reason: unreadable_request(&what),
                },
            );
        }
        Err(e) => return Err(e.into()),
    };
    let (mut spec, ticket, check) = match request {
        ClientMsg::Request { spec, ticket } => (spec, ticket, false),
        ClientMsg::Check { spec, ticket } => (spec, ticket, true),
        ClientMsg::Transactions { spec, ticket } => {
            if let Some(why) = shared
                .scheduled
                .as_ref()
                .and_then(|s| s.stranger(peer.ip(), ticket.as_deref()))
            {
                return refuse(&mut ctrl, Refusal::Limit { reason: why });
            }
            return super::rr::rr_session(ctrl, peer, shared, pending, spec);
        }
        other => anyhow::bail!("expected a test request, got {}", client_words(&other)),
    };
    if let Some(why) = shared
        .scheduled
        .as_ref()
        .and_then(|s| s.stranger(peer.ip(), ticket.as_deref()))
    {
        return refuse(&mut ctrl, Refusal::Limit { reason: why });
    }
    if check {
        return match admission(&mut spec, shared) {
            Some(reason) => {
                if shared.scheduled.is_some() {
                    // The scheduled test refused at its check will not come: it has ended.
                    let mut ending = Ending::new(&shared.served);
                    ending.document = Some(refused_document(&reason));
                }
                refuse(&mut ctrl, Refusal::Limit { reason })
            }
            None => Ok(write_frame(&mut ctrl, &ServerMsg::Admissible)?),
        };
    }
    if let Some(reason) = admission(&mut spec, shared) {
        if shared.scheduled.is_some() {
            // The scheduled test, refused: it has ended (a general server counts only the
            // tests it admits, as a client may ask again).
            let mut ending = Ending::new(&shared.served);
            ending.document = Some(refused_document(&reason));
        }
        return refuse(&mut ctrl, Refusal::Limit { reason });
    }
    let mut slot = match shared.admission.slot(peer) {
        Ok(s) => s,
        Err(running) => return refuse(&mut ctrl, Refusal::Busy { running }),
    };
    let _running = Running::new(&shared.tests_running);
    let mut ending = Ending::new(&shared.served);
    let flows = spec.flows();
    if let Err(reason) = slot.reserve_streams(flows.len()) {
        return refuse(&mut ctrl, Refusal::Limit { reason });
    }
    slot.describe(format!("{}, set up", test_words(&spec)));
    pending.release();
    // The slot is held only as long as an honest client needs to open its data connections,
    // and not a moment after its control connection closes.
    let mut clock = StreamClock::new(flows.len(), control_rtt(&ctrl));
    let token = Token::random();
    let (tx, rx) = mpsc::channel();
    let registration = Registration::new(&shared.registry, token, tx);
    let mut expecting = (spec.protocol == Protocol::Tcp)
        .then(|| Expecting::new(&shared.admission, peer.ip(), flows.len()));
    let local_ip = ctrl.local_addr()?.ip();
    let udp = match spec.protocol {
        Protocol::Tcp => None,
        Protocol::Udp => Some(UdpStreams::open(shared, &ctrl, token, |ip| {
            bind_udp(&spec, &flows, ip)
        })?),
    };
    let udp_ports = match &udp {
        Some(u) => u.ports(flows.len())?,
        None => Vec::new(),
    };
    // The echo lives as long as this session, and never past the test's own time: on the
    // server's port where it takes datagrams there (the prober's hello reaches it through
    // `latency_hellos` while this registration lives), else on a port of its own.
    let mut _echo_registration = None;
    let echo = match spec.latency {
        Some(l) => {
            let until = clock.latest() + STAGE_DEADLINE + spec.wall_time() + IO_DEADLINE;
            let (peer_ip, rate) = (peer.ip(), l.probe_rate_hz);
            Some(match shared.iperf3.udp_addr(ctrl.local_addr()?.port()) {
                Some(at) => {
                    let (tx, hellos) = mpsc::channel();
                    _echo_registration = Some(Registration::new(&shared.latency_hellos, token, tx));
                    let on = echo::OnPort {
                        at,
                        hellos,
                        bind: iperf3::server::bind_udp,
                    };
                    EchoServer::on_port(on, token, peer_ip, rate, until)?
                }
                None => EchoServer::spawn(local_ip, token, peer_ip, rate, until)?,
            })
        }
        None => None,
    };
    // The data connections are born with the test's buffers (or the kernel's defaults).
    let lease = buffers.lease_for(&spec, |why| (shared.log)(&format!("{peer}: {why}")));
    write_frame(
        &mut ctrl,
        &ServerMsg::Accepted {
            token,
            udp_ports,
            echo_port: echo.as_ref().map(EchoServer::port),
            ends_early: true,
        },
    )?;
    let setup = Setup {
        ctrl: &ctrl,
        flows: &flows,
        peer_ip: peer.ip(),
    };
    let prepare = |s: &UdpSocket, flow: Flow| {
        session::prepare_udp(
            s,
            &spec,
            session::UdpEnd::netsweep(flow == Flow::ClientToServer),
        )
    };
    let sockets = match udp {
        None => collect_tcp(&rx, &spec, &setup, &mut clock, expecting.as_mut())?,
        Some(u) => u.collect(&token, &setup, &mut clock, &prepare)?,
    };
    session::coalesce_udp(&sockets, &spec);
    drop(expecting);
    drop(lease);
    drop(registration);
    let infos = sockets
        .iter()
        .map(|(i, _, s)| session::describe(*i, s, &spec))
        .collect();
    write_frame(&mut ctrl, &ServerMsg::Ready { sockets: infos })?;
    // With latency probes the client measures its idle baseline before it says start.
    let idle = spec.latency.map(|l| l.idle).unwrap_or_default();
    match read_frame::<ClientMsg>(&mut ctrl, Some(Instant::now() + STAGE_DEADLINE + idle))? {
        ClientMsg::Start => {}
        ClientMsg::Abort { reason } => anyhow::bail!("client aborted before the start: {reason}"),
        other => anyhow::bail!("expected start, got {}", client_words(&other)),
    }
    let start = Instant::now();
    slot.describe(test_words(&spec));
    (shared.log)(&format!("{peer}: {} test", test_words(&spec)));
    let ends = iperf3::server::Ends::of(peer, ctrl.local_addr().ok(), &sockets, &spec)
        .with_cookie(token.hex())
        .with_control(&ctrl);
    let streams = session::start_streams(
        &spec,
        false,
        sockets,
        (start, start),
        session::Wire::default(),
    )?;
    ending.live = shared
        .served
        .live
        .as_ref()
        .map(|s| iperf3::server::LiveTest::start(s, &ends, (&spec, start)));
    let outcome = forward_reports(
        &mut ctrl,
        (&spec, &shared.limits),
        (&streams, &shared.stopping),
        ending.live.as_mut(),
    );
    // A grid the client cut (an auto test's steady end, an interrupt's): the log says so.
    let timeline = spec.timeline();
    let cut = (streams.cut.slots() < timeline.len())
        .then(|| {
            timeline
                .slots()
                .get(streams.cut.slots().checked_sub(1)?)
                .copied()
        })
        .flatten()
        .map(|last| {
            format!(
                " (ended early by the client at {:.1} s of {:.1} s)",
                last.end.saturating_sub(spec.warmup()).as_secs_f64(),
                spec.duration.as_secs_f64()
            )
        });
    streams.stop_and_join();
    // The slot (and the result it holds) is kept until the client has read the result and
    // hung up, within STAGE_DEADLINE of the result's last frame; a client that starts its next
    // test at once waits for the slot briefly instead of being told "busy".
    let outcome = outcome.and_then(|(done, peer_rx)| {
        let said = done_words(&spec, &done, None);
        // This end's account, as iperf3's server writes it (`-J`, and the text from it).
        ending.document = Some(iperf3::server::own_document(&ends, &spec, &done, None));
        if let Err(e) = send_result(&mut ctrl, done) {
            // A client that said Abort late, and exited, resets the connection.
            let reason = match abort_word(&peer_rx) {
                PeerWord::Abort(reason) => reason,
                PeerWord::Gone(why) => anyhow::bail!("client gone: {why}"),
                PeerWord::Silent => return Err(e.into()),
            };
            let counted = said.map(|c| format!("; this end counted {c}"));
            anyhow::bail!("client aborted ({reason}){}", counted.unwrap_or_default());
        }
        if let Some(said) = said {
            // The test's text first (its last interval and summary), then the log's line.
            ending.write_live();
            let cut = cut.unwrap_or_default();
            (shared.log)(&format!("{peer}: test done{cut}: {said}"));
        }
        let _ = peer_rx.recv_timeout(STAGE_DEADLINE);
        Ok(())
    });
    // Unblocks the control reader thread, whatever the client does.
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    ending.outcome = match &outcome {
        Ok(()) => Outcome::Ok,
        Err(e) => {
            let mut doc = match e.downcast_ref::<Aborted>() {
                Some(a) => iperf3::server::own_document(&ends, &spec, &a.finished, Some(a.ended)),
                None => serde_json::json!({}),
            };
            doc["error"] = serde_json::json!(format!("{e:#}"));
            ending.document = Some(doc);
            Outcome::Failed
        }
    };
    drop(slot);
    outcome
}

/// What a refused test leaves in `Served`: `{"error": "refused: ...", "refused": true}`.
fn refused_document(reason: &str) -> serde_json::Value {
    serde_json::json!({ "error": format!("refused: {reason}"), "refused": true })
}

/// A test in words for the log: "TCP forward test, 4 streams, 10.0 s".
fn test_words(spec: &TestSpec) -> String {
    let until = if spec.steady.is_some() {
        "until steady, at most "
    } else {
        ""
    };
    format!(
        "{}, {until}{:.1} s",
        spec.kind_words(),
        spec.total_time().as_secs_f64()
    )
}

/// What this end counted over the measured intervals, for the log: "client to server 2.36
/// GBytes received at 20.3 Gbits/sec (2534023168 bytes) over 1.0 s" (this end's receivers) or
/// "... sent ..." (its senders), each direction of the test, the seconds cut at `stopped`;
/// `None` when no measured interval closed.
fn done_words(
    spec: &TestSpec,
    done: &crate::traffic::session::Finished,
    stopped: Option<Duration>,
) -> Option<String> {
    let timeline = spec.timeline();
    let measured = |i: usize| timeline.slots().get(i).is_some_and(|s| !s.omitted);
    let secs = timeline.measured_of(done.closed(), stopped);
    if secs <= 0.0 {
        return None;
    }
    let parts: Vec<String> = [Flow::ClientToServer, Flow::ServerToClient]
        .into_iter()
        .filter_map(|flow| {
            let ours: Vec<_> = done.reports.iter().filter(|r| r.flow == flow).collect();
            let role = ours.first()?.role;
            let bytes: u64 = ours
                .iter()
                .flat_map(|r| r.intervals.iter().enumerate())
                .filter(|(i, _)| measured(*i))
                .map(|(_, iv)| iv.bytes)
                .sum();
            Some(format!(
                "{} {} {} at {} ({bytes} bytes)",
                flow.words(),
                crate::units::Bytes(bytes),
                match role {
                    crate::traffic::measure::Role::Sender => "sent",
                    crate::traffic::measure::Role::Receiver => "received",
                },
                crate::units::BitRate(bytes as f64 * 8.0 / secs)
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("{} over {secs:.1} s", parts.join(", ")))
}

/// A client message named in the protocol's words, not Rust's.
fn client_words(msg: &ClientMsg) -> &'static str {
    match msg {
        ClientMsg::Request { .. } => "a test request",
        ClientMsg::Check { .. } => "an admission check",
        ClientMsg::Transactions { .. } => "a request/response test request",
        ClientMsg::Start => "start",
        ClientMsg::End { .. } => "end",
        ClientMsg::Done => "done",
        ClientMsg::Abort { .. } => "abort",
    }
}

/// The control connection's smoothed round trip (100 ms when the kernel does not say).
fn control_rtt(ctrl: &TcpStream) -> Duration {
    sockopt::tcp_info(ctrl)
        .map(|i| Duration::from_micros(u64::from(i.rtt_us)))
        .unwrap_or(Duration::from_millis(100))
}

/// Sends the final reports: every stream's intervals in frames of `INTERVALS_PER_FRAME`, then
/// `Done` with the reports emptied of intervals, so no frame outgrows `MAX_FRAME` whatever the
/// test's length, interval or stream count.
fn send_result(ctrl: &mut TcpStream, mut done: Finished) -> Result<(), ProtocolError> {
    let mut merged: Option<crate::traffic::histogram::UdpTiming> = None;
    for report in &mut done.reports {
        if let Some(t) = report.udp_timing.take() {
            merged.get_or_insert_with(Default::default).merge(&t);
        }
    }
    if let Some(first) = done
        .reports
        .iter_mut()
        .find(|r| r.role == crate::traffic::measure::Role::Receiver)
    {
        first.udp_timing = merged;
    }
    for report in &mut done.reports {
        let intervals = std::mem::take(&mut report.intervals);
        for chunk in intervals.chunks(protocol::INTERVALS_PER_FRAME) {
            write_frame(
                ctrl,
                &ServerMsg::Intervals {
                    stream: report.stream,
                    intervals: chunk.to_vec(),
                },
            )?;
        }
    }
    write_frame(
        ctrl,
        &ServerMsg::Done {
            streams: done.reports,
            cpu: done.cpu,
        },
    )
}

/// Ends a running test for `why`, which the client is told.
fn told(ctrl: &mut TcpStream, why: String) -> anyhow::Error {
    let _ = write_frame(
        ctrl,
        &ServerMsg::Error {
            message: why.clone(),
        },
    );
    anyhow::anyhow!("{why}")
}

/// The client's messages, read on a clone of the control socket.
type PeerRx = Receiver<Result<ClientMsg, ProtocolError>>;

/// Forwards interval reports until every stream is done; returns the final reports for the
/// client and the reader of its messages. A test whose data stops for `--rcv-timeout`, or whose
/// rate passes `--server-bitrate-limit`, ends with the reason told to the client; so does one
/// whose server stops (`stopping`), keeping what this end counted.
fn forward_reports(
    ctrl: &mut TcpStream,
    (spec, limits): (&TestSpec, &ServerLimits),
    (streams, stopping): (&session::Streams, &AtomicBool),
    mut live: Option<&mut iperf3::server::LiveTest>,
) -> anyhow::Result<(Finished, PeerRx)> {
    let rcv_timeout = limits.rcv_timeout;
    let mut watch = limits
        .bitrate_limit
        .map(|l| RateWatch::new(l, spec.interval, streams.count));
    let peer_rx = crate::traffic::protocol::spawn_reader(ctrl.try_clone()?);
    let start = Instant::now();
    let give_up = start + spec.total_time() + Duration::from_secs(30);
    let mut finished = Finished::default();
    let mut failure = session::StreamFailure::default();
    let mut aborted = None;
    while finished.reports.len() < streams.count || failure.noted() {
        if let Ok(msg) = peer_rx.try_recv() {
            match msg {
                Ok(ClientMsg::Abort { reason }) => {
                    aborted = Some(reason);
                    break;
                }
                Ok(ClientMsg::End { slots }) => {
                    let timeline = spec.timeline();
                    if slots == 0 || slots as usize > timeline.len() {
                        anyhow::bail!(
                            "the client asked to end after slot {slots} of a {}-slot test",
                            timeline.len()
                        );
                    }
                    // A cut this end has already passed ends at the end of its current slot.
                    let now = timeline
                        .index_at(start.elapsed())
                        .map_or(timeline.len(), |i| i + 1);
                    streams.cut.at((slots as usize).max(now));
                }
                Ok(other) => anyhow::bail!(
                    "unexpected message during the test: {}",
                    client_words(&other)
                ),
                Err(e) => anyhow::bail!("client gone mid-test: {e}"),
            }
        }
        if Instant::now() > give_up {
            anyhow::bail!("streams did not finish 30 s after the test's end");
        }
        if stopping.load(Ordering::Relaxed) {
            let ended = start.elapsed();
            let why = format!(
                "the server has terminated (it was stopped {:.1} s into the test)",
                ended.as_secs_f64()
            );
            let _ = write_frame(
                ctrl,
                &ServerMsg::Error {
                    message: why.clone(),
                },
            );
            return Err(Aborted::gathered(why, (spec, streams), finished, ended).into());
        }
        // The client's data stopped mid-test (--rcv-timeout): it hears why, in iperf3's words.
        if start.elapsed() < spec.total_time()
            && let Some(why) = streams.receive_timed_out(rcv_timeout)
        {
            return Err(told(ctrl, why));
        }
        match streams.events.recv_timeout(Duration::from_millis(50)) {
            Ok(EngineEvent::Interval(report)) => {
                if let Some(live) = live.as_mut() {
                    live.interval(&report);
                }
                let over = watch
                    .as_mut()
                    .and_then(|w| w.record(report.index, report.bytes));
                if let Err(e) = write_frame(ctrl, &ServerMsg::Interval { report }) {
                    // A client that said Abort and exited resets the connection when a
                    // report reaches it: the word may be read after the write failed. A
                    // connection the kernel gave up on (--snd-timeout) tells its reason once:
                    // the reader may have taken it, leaving this write "Broken pipe".
                    match abort_word(&peer_rx) {
                        PeerWord::Abort(reason) => aborted = Some(reason),
                        PeerWord::Gone(why) => anyhow::bail!("client gone mid-test: {why}"),
                        PeerWord::Silent => return Err(e.into()),
                    }
                    break;
                }
                if let Some(why) = over {
                    return Err(told(ctrl, why));
                }
            }
            Ok(EngineEvent::StreamDone(report, cpu)) => {
                failure.note(
                    &report,
                    session::StreamFailure::running(start.elapsed(), spec.total_time()),
                );
                finished.add(*report, cpu);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) if failure.noted() => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // One of this end's streams failed while the test ran (a client gone for good:
        // --snd-timeout's ETIMEDOUT), and the client did not say why: the test ends so.
        if let Some(why) = failure.due() {
            return Err(told(ctrl, why.to_string()));
        }
    }
    let ended = start.elapsed();
    // An interrupted client says Abort as its streams end, and this end's receivers may see
    // the end of its data first: a test whose streams all ended before the grid's end (by an
    // interval, at most a second: a grid a first interrupt cut at the end of a long `-i` ends
    // seconds after a second interrupt) waits a moment for the word.
    let timeline = spec.timeline();
    let grid_end = timeline
        .slots()
        .get(streams.cut.slots().saturating_sub(1))
        .map_or(Duration::ZERO, |s| s.end);
    if aborted.is_none()
        && ended + spec.interval.min(Duration::from_secs(1)) < grid_end
        && let PeerWord::Abort(reason) = abort_word(&peer_rx)
    {
        aborted = Some(reason);
    }
    if let Some(reason) = aborted {
        let why = format!(
            "client aborted ({reason}) after {:.1} s",
            ended.as_secs_f64()
        );
        return Err(Aborted::gathered(why, (spec, streams), finished, ended).into());
    }
    finished.reports.sort_by_key(|r| r.stream);
    finished.cpu.wall_s = ended.as_secs_f64();
    Ok((finished, peer_rx))
}

/// A test its client aborted mid-way, with what this end counted until then (`ended` into
/// the test): the test's document keeps the figures beside the error.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
struct Aborted {
    why: String,
    finished: Finished,
    ended: Duration,
}

impl Aborted {
    /// A test ended `ended` into it for `why`: its streams stopped and what they counted
    /// gathered (not lost with the test), and said after `why`.
    fn gathered(
        why: String,
        (spec, streams): (&TestSpec, &session::Streams),
        mut finished: Finished,
        ended: Duration,
    ) -> Aborted {
        streams.stop_and_gather(&mut finished, Duration::from_secs(2));
        let counted = done_words(spec, &finished, Some(ended))
            .map(|c| format!("; this end counted {c}"))
            .unwrap_or_default();
        Aborted {
            why: format!("{why}{counted}"),
            finished,
            ended,
        }
    }
}

/// How long a test whose streams ended early, or whose client hung up, waits for the
/// client's Abort. An interrupted client's streams stop on the signal and its control loop
/// says Abort at its next turn: a CI run on shared cores once saw that word come later than
/// 500 ms. The wait ends at once when the client closes.
const ABORT_WAIT: Duration = Duration::from_secs(2);

/// The reason of the client's Abort if it comes within `ABORT_WAIT` (other messages before it
/// are passed over); `None` when the client is gone without it or does not say it in time.
fn abort_word(peer_rx: &PeerRx) -> PeerWord {
    let until = Instant::now() + ABORT_WAIT;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match peer_rx.recv_timeout(left) {
            Ok(Ok(ClientMsg::Abort { reason })) => return PeerWord::Abort(reason),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return PeerWord::Gone(e.to_string()),
            Err(_) => return PeerWord::Silent,
        }
    }
    PeerWord::Silent
}

/// What the control connection's reader heard last, when a write to the client failed.
#[derive(Debug, PartialEq)]
enum PeerWord {
    /// The client said Abort, with its reason.
    Abort(String),
    /// The reader's own error: the connection's reason (a timeout, a reset).
    Gone(String),
    /// Nothing in time, or the reader ended without a word.
    Silent,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn the_abort_word_is_found_behind_other_messages() {
        let (tx, rx) = sync_channel(4);
        tx.send(Ok(ClientMsg::End { slots: 3 })).unwrap();
        tx.send(Ok(ClientMsg::Abort {
            reason: "interrupted".into(),
        }))
        .unwrap();
        assert_eq!(abort_word(&rx), PeerWord::Abort("interrupted".into()));
    }

    #[test]
    fn a_client_gone_without_the_word_is_not_aborted() {
        let (tx, rx) = sync_channel(4);
        tx.send(Err(ProtocolError::Malformed("reset".into())))
            .unwrap();
        assert_eq!(
            abort_word(&rx),
            PeerWord::Gone("peer sent a malformed message: reset".into())
        );
        drop(tx);
        let (tx, rx) = sync_channel::<Result<ClientMsg, ProtocolError>>(1);
        drop(tx);
        assert_eq!(abort_word(&rx), PeerWord::Silent);
        // Silence for the whole wait is no word either, and the wait is bounded.
        let (_tx, rx) = sync_channel::<Result<ClientMsg, ProtocolError>>(1);
        let t0 = Instant::now();
        assert_eq!(abort_word(&rx), PeerWord::Silent);
        assert!(t0.elapsed() < ABORT_WAIT * 4);
    }

    /// The kernel tells a timed-out connection's reason once: when the reader took it, the
    /// reason the test ends with is the reader's, not the writer's later "Broken pipe".
    #[test]
    fn a_connection_timed_out_under_the_reader_keeps_its_reason() {
        let (tx, rx) = sync_channel(4);
        tx.send(Ok(ClientMsg::End { slots: 3 })).unwrap();
        tx.send(Err(ProtocolError::Io(std::io::Error::from_raw_os_error(
            110,
        ))))
        .unwrap();
        match abort_word(&rx) {
            PeerWord::Gone(why) => assert!(why.contains("Connection timed out"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
