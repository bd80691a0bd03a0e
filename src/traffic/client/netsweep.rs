//! One test against a netsweep server once it has answered netsweep's greeting: the request
//! and the server's answer, the data connections, the test with its live intervals, and the
//! result merged from both ends' reports.

use super::*;
use crate::traffic::client::socket::control_failed;

/// The rest of `run_test` on a control connection `ctrl` whose greeting was answered.
pub(super) fn session(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    mut ctrl: TcpStream,
    control_rtt: Duration,
) -> Result<TestResult, TestError> {
    let spec = &*cfg.path_datagrams(spec, &ctrl);
    let server = cfg.server;
    let asking = "before answering the test request";
    write_frame(
        &mut ctrl,
        &ClientMsg::Request {
            spec: spec.clone(),
            ticket: cfg.ticket.clone(),
        },
    )
    .map_err(|e| control_failed(server, asking, e))?;
    let (token, udp_ports, echo_port, ends_early) =
        match read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE))
            .map_err(|e| control_failed(server, asking, e))?
        {
            ServerMsg::Accepted {
                token,
                udp_ports,
                echo_port,
                ends_early,
            } => (token, udp_ports, echo_port, ends_early),
            ServerMsg::Refused { refusal } => {
                return Err(TestError::new(format!("{server}: {refusal}")));
            }
            ServerMsg::Error { message } => {
                return Err(TestError::new(format!("{server}: {message}")));
            }
            other => {
                return Err(TestError::new(format!(
                    "{server} answered {other:?} to a test request"
                )));
            }
        };
    let flows = spec.flows();
    let sockets = open_data(cfg, spec, &flows, &token, &udp_ports, &ctrl)
        .map_err(|e| TestError::new(format!("opening data connections to {server}: {e}")))?;
    let server_sockets =
        match read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE))
            .map_err(|e| control_failed(server, "while the data connections were set up", e))?
        {
            ServerMsg::Ready { sockets } => sockets,
            ServerMsg::Error { message } => {
                return Err(TestError::new(format!("{server}: {message}")));
            }
            other => {
                return Err(TestError::new(format!(
                    "{server}: expected ready, got {other:?}"
                )));
            }
        };
    let client_sockets: Vec<_> = sockets
        .iter()
        .map(|(i, _, s)| session::describe(*i, s, spec))
        .collect();
    cfg.tell_connected(&client_sockets, true);
    let timestamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let prober = match spec.latency {
        Some(l) => {
            let port = echo_port.ok_or_else(|| {
                TestError::new(format!(
                    "{server} does not answer latency probes (--latency): upgrade its netsweep"
                ))
            })?;
            let p = start_prober(cfg, (spec, l), (token, port), &ctrl)
                .map_err(|e| TestError::new(format!("latency probe: {e}")))?;
            // The idle baseline: probes only, before any load.
            let until = Instant::now() + l.idle;
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(until.saturating_duration_since(Instant::now()).min(POLL));
            }
            // Interrupted before the load: no test runs (not an interval of it).
            if stop.load(Ordering::Relaxed) {
                let _ = write_frame(
                    &mut ctrl,
                    &ClientMsg::Abort {
                        reason: "interrupted".into(),
                    },
                );
                return Err(TestError::new(
                    "interrupted during the idle baseline, before the load started: no test ran",
                ));
            }
            Some(p)
        }
        None => None,
    };
    write_frame(&mut ctrl, &ClientMsg::Start)?;
    let start = Instant::now();
    // The receivers' grids start with the server's first data (its senders start when Start
    // reaches it): within twice the control round trip and a second, whatever the server's
    // first answers took.
    let wire = session::Wire {
        receivers_start_at_data: Some(control_rtt * 2 + Duration::from_secs(1)),
        ..session::Wire::default()
    };
    let streams = session::start_streams(spec, true, sockets, (start, start), wire)
        .map_err(|e| TestError::new(format!("cannot start stream threads: {e}")))?;
    let info = StartInfo {
        timestamp_unix_s: timestamp.as_secs_f64(),
        server: server.to_string(),
        control_rtt_us: control_rtt.as_micros() as u64,
        control_mss_bytes: crate::platform::sockopt::tcp_info(&ctrl)
            .ok()
            .map(|i| i.snd_mss),
        client_sockets,
        server_sockets,
        cookie: Some(token.hex()),
        ..StartInfo::default()
    };
    let auto = AutoEnd::new(spec).filter(|_| ends_early);
    // A server that cannot end a test early, or an auto test's own cut: an interrupt stops
    // the test at once.
    let interrupt = cfg
        .interrupt
        .as_ref()
        .filter(|_| ends_early && auto.is_none() && spec.steady.is_none());
    let pace = Pace {
        start,
        rtt: control_rtt,
    };
    let Driven {
        local,
        remote,
        error,
        auto,
        interrupted,
    } = drive(
        &mut ctrl,
        (spec, cfg.rcv_timeout, interrupt),
        &streams,
        stop,
        on_interval,
        pace,
        auto,
    );
    streams.stop_and_join();
    let probes = prober.map(|p| {
        let start_ns = u64::try_from(start.duration_since(p.base()).as_nanos()).unwrap_or(0);
        (p.finish(), start_ns)
    });
    let _ = write_frame(&mut ctrl, &ClientMsg::Done);
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    // --get-server-output: a netsweep server's own account is its stream reports, as sent.
    let server_output = remote.as_ref().filter(|_| cfg.server_output).map(|r| {
        crate::traffic::result::ServerOutput::Json(serde_json::json!({
            "netsweep_server_reports": r.reports,
            "cpu": r.cpu,
        }))
    });
    // A test cut by a first interrupt and then stopped by a second is an interrupted test
    // of the grid asked (the intervals both ends closed), not one of the cut grid.
    let interrupted = interrupted.filter(|_| error.is_none());
    let ran = match (&auto, interrupted) {
        (Some(a), _) => Some(a.as_run(spec)),
        (None, Some(slots)) => Some(ending::cut_at(spec, &spec.timeline(), slots)),
        (None, None) => None,
    };
    let mut result = assemble(
        ran.as_ref().unwrap_or(spec),
        info,
        local,
        remote,
        start,
        error.clone(),
    );
    if let Some(ran) = ran.as_ref().filter(|_| interrupted.is_some()) {
        let cut = crate::traffic::result::interrupted::Interrupted {
            asked_s: spec.duration.as_secs_f64(),
        };
        result
            .warnings
            .push(cut.sentence(ran.duration.as_secs_f64()));
        result.interrupted = Some(cut);
    }
    if let Some(auto) = &auto {
        result.ending = Some(auto.ending(&result.spec, result.summary.seconds, spec.duration));
    } else if spec.steady.is_some() {
        result.warnings.push(format!(
            "{server} does not end tests early (a netsweep before duration = \"auto\"): this \
             test ran to its ceiling"
        ));
    }
    if let (Some((records, start_ns)), Some(l)) = (probes, spec.latency) {
        attach_latency(&mut result, &records, start_ns, l.probe_rate_hz);
    }
    result.server_output = server_output;
    finish(
        result,
        error,
        "the two ends' reports contradict each other, so no figure of this test can be trusted",
    )
}

/// How often waits look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// When the client's grid started, and the control connection's round trip.
#[derive(Clone, Copy)]
struct Pace {
    start: Instant,
    rtt: Duration,
}

/// Starts the latency prober on a UDP socket bound like the data sockets and connected to the
/// server's echo on `port` (the server's own port, or one the echo has to itself), once the
/// echo answered its hello (repeated until it is, as a UDP stream's): a blocked path is said
/// before the idle baseline rather than read as probes lost.
fn start_prober(
    cfg: &ClientConfig,
    (spec, l): (&TestSpec, crate::traffic::latency::LatencySpec),
    (token, port): (Token, u16),
    ctrl: &TcpStream,
) -> std::io::Result<Prober> {
    let sock = new_socket(cfg, Type::DGRAM, socket2::Protocol::UDP, None)?;
    if cfg.bind.is_none() {
        sock.bind(&SockAddr::from(SocketAddr::new(
            match cfg.server {
                SocketAddr::V4(_) => IpAddr::from([0u8; 4]),
                SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
            },
            0,
        )))?;
    }
    sock.connect(&SockAddr::from(SocketAddr::new(cfg.server.ip(), port)))?;
    let sock: UdpSocket = sock.into();
    let hello = protocol::udp_hello(&token, protocol::LATENCY_STREAM);
    confirm_udp(
        std::slice::from_ref(&sock),
        &[hello],
        ctrl,
        Instant::now() + UDP_HELLO_DEADLINE,
    )?;
    let span = spec.wall_time() + Duration::from_secs(10);
    let max = (span.as_secs_f64() * f64::from(l.probe_rate_hz)).ceil() as usize;
    Prober::start(sock, token, l.probe_rate_hz, max)
}

/// Puts the probes' figures into the result and its intervals.
fn attach_latency(result: &mut TestResult, records: &[ProbeRecord], start_ns: u64, rate_hz: u32) {
    let (summary, per_slot) = summarize(records, start_ns, &result.spec.timeline(), rate_hz);
    for iv in &mut result.intervals {
        iv.latency = per_slot.get(iv.index as usize).copied();
    }
    // A dropped echo or a phase without percentiles is said where warnings are.
    result.warnings.extend(summary.notes.iter().cloned());
    result.latency = Some(summary);
}

/// Opens every data connection (TCP) or UDP socket, in stream-id order.
fn open_data(
    cfg: &ClientConfig,
    spec: &TestSpec,
    flows: &[Flow],
    token: &Token,
    udp_ports: &[u16],
    ctrl: &TcpStream,
) -> std::io::Result<Vec<(u16, Flow, StreamSocket)>> {
    if spec.protocol == Protocol::Udp {
        let mut socks = Vec::with_capacity(flows.len());
        for (i, flow) in flows.iter().enumerate() {
            let port = udp_ports.get(i).copied().ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "server sent too few UDP ports",
                )
            })?;
            let end = crate::traffic::session::UdpEnd::netsweep;
            socks.push(udp_socket(cfg, spec, (*flow, i as u16), port, end)?);
        }
        let hellos: Vec<_> = (0..socks.len())
            .map(|i| protocol::udp_hello(token, i as u16))
            .collect();
        confirm_udp(&socks, &hellos, ctrl, Instant::now() + UDP_HELLO_DEADLINE)?;
        let socks: Vec<_> = socks
            .into_iter()
            .zip(flows)
            .enumerate()
            .map(|(i, (s, f))| (i as u16, *f, StreamSocket::Udp(s)))
            .collect();
        session::coalesce_udp(&socks, spec);
        return Ok(socks);
    }
    let mut out = Vec::with_capacity(flows.len());
    for (i, flow) in flows.iter().enumerate() {
        let mut s = connect_tcp(cfg, Some((spec, i as u16)))?;
        s.write_all(&protocol::data_preamble(token, i as u16))?;
        out.push((i as u16, *flow, StreamSocket::Tcp(s)));
    }
    Ok(out)
}

/// How long the client repeats its UDP hellos before it calls UDP blocked.
const UDP_HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// How often an unanswered hello is repeated.
pub(super) const UDP_HELLO_REPEAT: Duration = Duration::from_millis(200);

/// Repeats every stream's hello until the server echoes it, or until the server speaks on the
/// control connection: it sends `Ready` only after every hello arrived, so a lost echo (on a
/// lossy path) does not fail the test. All streams are greeted at once, because the server
/// takes them in order and a stream stuck on a lost echo would hold up the next one.
pub(crate) fn confirm_udp(
    socks: &[UdpSocket],
    hellos: &[[u8; protocol::UDP_HELLO_LEN]],
    ctrl: &impl std::os::fd::AsRawFd,
    deadline: Instant,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut confirmed = vec![false; socks.len()];
    let mut buf = [0u8; 64];
    while confirmed.contains(&false) {
        let now = Instant::now();
        if now >= deadline {
            let port = confirmed
                .iter()
                .position(|c| !c)
                .and_then(|i| socks[i].peer_addr().ok())
                .map_or(0, |a| a.port());
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer to the UDP hello on port {port}: is UDP blocked on the path?"),
            ));
        }
        let waiting: Vec<usize> = (0..socks.len()).filter(|&i| !confirmed[i]).collect();
        for &i in &waiting {
            socks[i].send(&hellos[i])?;
        }
        let round_end = (now + UDP_HELLO_REPEAT).min(deadline);
        let mut fds = vec![ctrl.as_raw_fd()];
        fds.extend(waiting.iter().map(|&i| socks[i].as_raw_fd()));
        while confirmed.contains(&false) {
            let left = round_end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let ready = crate::platform::sockopt::poll_readable(&fds, left)?;
            if ready.first() == Some(&true) {
                return Ok(());
            }
            for (&i, _) in waiting.iter().zip(&ready[1..]).filter(|(_, r)| **r) {
                if let Ok(n) = socks[i].recv(&mut buf)
                    && buf[..n] == hellos[i]
                {
                    confirmed[i] = true;
                }
            }
        }
    }
    Ok(())
}

/// What `drive` gathered: this end's reports, the server's, the error that ended the test
/// early, and the steadiness rule of an auto test with its reading and cut.
struct Driven {
    local: Finished,
    remote: Option<Finished>,
    error: Option<String>,
    auto: Option<AutoEnd>,
    /// The slots kept when a first interrupt cut the grid short (`drive`'s `interrupt`).
    interrupted: Option<usize>,
}

/// Pumps local and remote events until both ends are done, the server is gone, or `stop`;
/// cuts an auto test's grid once its rates are steady. With `interrupt` (the command line's),
/// a first stop cuts the grid at the end of the interval running instead, told to the server
/// as an early end and to `interrupt`; a second stops the test at once.
fn drive(
    ctrl: &mut TcpStream,
    (spec, rcv_timeout, interrupt): (&TestSpec, Duration, Option<&OnInterrupt>),
    streams: &session::Streams,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    pace: Pace,
    auto: Option<AutoEnd>,
) -> Driven {
    let server_rx = match ctrl.try_clone() {
        Ok(c) => spawn_reader::<ServerMsg>(c),
        Err(e) => {
            return Driven {
                local: Finished::default(),
                remote: None,
                error: Some(format!("control connection: {e}")),
                auto,
                interrupted: None,
            };
        }
    };
    // Every merged interval goes to the caller, and to the steadiness rule of an auto test.
    let auto = std::cell::RefCell::new(auto);
    let mut forward = |iv: &Interval| {
        if let Some(a) = auto.borrow_mut().as_mut() {
            a.take(iv);
        }
        on_interval(iv);
    };
    let on_interval: &mut dyn FnMut(&Interval) = &mut forward;
    let mut merger = LiveMerger::new(spec);
    let mut remote = Remote::new(spec);
    let mut local = Finished::default();
    let give_up = Instant::now() + spec.total_time() + Duration::from_secs(20);
    let mut error = None;
    let mut failure = session::StreamFailure::default();
    let mut interrupted = None;
    let mut heard = false;
    let presses = crate::platform::signals::Presses::from_now();
    while local.reports.len() < streams.count || remote.done.is_none() {
        // The command line's first Ctrl-C: the test ends with the interval running, both
        // ends' counts whole. The flag is taken down, so a second one stops it at once.
        if stop.load(Ordering::Relaxed)
            && let Some(told) = interrupt.filter(|_| !heard)
            && presses.take_first(stop)
        {
            heard = true;
            let timeline = spec.timeline();
            let slots = ending::interrupt_cut(&timeline, pace.start.elapsed(), pace.rtt)
                .unwrap_or(timeline.len());
            if slots < streams.cut.slots() {
                streams.cut.at(slots);
                let end = ClientMsg::End {
                    slots: u32::try_from(slots).unwrap_or(u32::MAX),
                };
                if let Err(e) = write_frame(ctrl, &end) {
                    error = Some(format!("control connection: {e}"));
                    break;
                }
            }
            // In the last interval the test ends as asked: nothing is cut.
            interrupted = (streams.cut.slots() < timeline.len()).then(|| streams.cut.slots());
            let ran = ending::cut_at(spec, &timeline, streams.cut.slots());
            (told.0)(ran.duration);
        }
        if stop.load(Ordering::Relaxed) {
            let _ = write_frame(
                ctrl,
                &ClientMsg::Abort {
                    reason: "interrupted".into(),
                },
            );
            error = Some("interrupted: results cover the intervals measured so far".to_string());
            break;
        }
        if Instant::now() > give_up {
            error = Some("the server sent no final result 20 s after the test's end".to_string());
            break;
        }
        // Data stopped while this end's streams still run their grid: iperf3's receive
        // timeout ends the test, and the server hears why.
        if local.reports.len() < streams.count
            && pace.start.elapsed() < spec.total_time()
            && let Some(why) = streams.receive_timed_out(rcv_timeout)
        {
            let _ = write_frame(
                ctrl,
                &ClientMsg::Abort {
                    reason: why.clone(),
                },
            );
            error = Some(why);
            break;
        }
        // Everything queued, but a bounded batch, so local events are served too; nothing
        // after the final report (the server may hang up then).
        for _ in 0..256 {
            if remote.done.is_some() {
                break;
            }
            let Ok(msg) = server_rx.try_recv() else {
                break;
            };
            if let Err(e) = remote.take(msg, &mut merger, on_interval) {
                error = Some(e);
                break;
            }
        }
        if error.is_some() {
            break;
        }
        match streams.events.recv_timeout(Duration::from_millis(20)) {
            Ok(EngineEvent::Interval(report)) => merger.add(report, on_interval),
            Ok(EngineEvent::StreamDone(report, cpu)) => {
                failure.note(
                    &report,
                    session::StreamFailure::running(pace.start.elapsed(), spec.total_time()),
                );
                local.add(*report, cpu);
            }
            Err(RecvTimeoutError::Timeout) => {}
            // Every stream thread has ended: wait for the server without spinning.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(Duration::from_millis(20)),
        }
        // A stream that failed while the test ran ends it, as iperf3's client does, once
        // the server had its moment to say why: a server gone for good (--snd-timeout's
        // case) is not waited for.
        if let Some(why) = failure.due() {
            let _ = write_frame(
                ctrl,
                &ClientMsg::Abort {
                    reason: why.to_string(),
                },
            );
            error = Some(why.to_string());
            break;
        }
        let cut = auto
            .borrow_mut()
            .as_mut()
            .and_then(|a| a.due(pace.start.elapsed(), pace.rtt));
        if let Some(slots) = cut {
            streams.cut.at(slots);
            let slots = u32::try_from(slots).unwrap_or(u32::MAX);
            if let Err(e) = write_frame(ctrl, &ClientMsg::End { slots }) {
                error = Some(format!("control connection: {e}"));
                break;
            }
        }
    }
    if error.is_some() {
        // Collect what the stream threads measured before they stop.
        streams.stop_and_gather(&mut local, Duration::from_secs(2));
    }
    Driven {
        local,
        remote: remote.into_finished(spec),
        error,
        auto: auto.into_inner(),
        interrupted,
    }
}
