//! `netsweep client --iperf3`: one test against an unmodified iperf3 server (3.1 to 3.21).
//!
//! netsweep's engine sends and receives; the iperf3 server has no live intervals and reports
//! one total per stream at the end, by its own clock. So a result against iperf3 holds:
//! - measured here: every interval (bytes this end sent or received), TCP_INFO of the streams
//!   this end sends, goodput, UDP jitter and arrivals of the streams this end receives, this
//!   end's CPU;
//! - from the peer: goodput of the streams the server receives (its bytes over its seconds), UDP
//!   loss and jitter it measured, the bytes, datagrams and TCP retransmits of the streams it sent,
//!   its CPU;
//! - unavailable: the server's per-interval figures, RTT and cwnd of the streams it sends, its
//!   out-of-order counts, socket buffers and kernel counters.
//!
//! `TestResult::peer` names the far end and `TestResult::provenance` lists the three.
//! iperf3 takes whole seconds for `-t` and `-O`, and its server counts every byte from its start,
//! so the send path is not calibrated in this mode: unless `-l` or `--no-zerocopy` fixes it,
//! the senders start on the host's record's pick (else the path as given) and re-check it
//! while the test runs, in the results (`TestSpec::live_path_choice`).

use super::auth::Padding;
use super::control::{self, ControlError};
use super::login::ClientAuth;
use super::peer_result::{assemble, blank_peer_figures, local_roles, mirror};
use super::wire::{self, Cookie, Results, State};
use crate::traffic::client::merge::{LiveMerger, finish};
use crate::traffic::client::socket::{
    ClientConfig, OnInterrupt, TestError, connect_tcp, udp_socket,
};
use crate::traffic::engine::{Datagrams, EngineEvent, StreamSocket};
use crate::traffic::measure::Role;
use crate::traffic::result::{Interval, StartInfo, TestResult};
use crate::traffic::session::{self, Finished, Wire};
use crate::traffic::spec::{Flow, Protocol, TestSpec};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long to wait for the reply to a UDP connect datagram before sending it again.
const UDP_CONNECT_WAIT: Duration = Duration::from_secs(1);
const UDP_CONNECT_TRIES: u32 = 5;
/// How long receiving streams may take after TEST_END to close their last interval.
const RECEIVE_GRACE: Duration = Duration::from_secs(2);
/// How long past the grid's end TEST_END waits for the sending streams' last intervals. The
/// server's seconds run until it reads TEST_END, so waiting longer for a sender held in a
/// write (128 streams on a busy host take seconds) would stretch the server's count with idle
/// time; the senders stop at the grid's end all the same.
pub const SENDERS_GRACE: Duration = Duration::from_millis(150);
/// How long the steps before the test may take each (iperf3 servers answer at once).
const STEP_DEADLINE: Duration = Duration::from_secs(10);

mod exchange;
mod opening;
mod params;
mod refusal;
use exchange::exchange;
use opening::Opened;
pub use opening::{run_after_cookie, run_session};
pub use params::{NO_AUTO, params_for};
use refusal::{control_error, expect, next_state, refused_after_params, refused_silently};

/// The spec as run against iperf3: no calibration (see the module documentation); senders
/// that would have calibrated choose their path live instead.
pub fn adapt(spec: &TestSpec) -> TestSpec {
    let mut spec = spec.clone();
    spec.live_path_choice = !spec.effective_calibration().is_zero();
    spec.calibration = Duration::ZERO;
    spec
}

/// The test, once the server asked for its parameters.
fn run_on(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    opened: Opened,
) -> Result<TestResult, TestError> {
    let Opened {
        mut ctrl,
        cookie,
        control_rtt,
    } = opened;
    let mut spec = adapt(&cfg.path_datagrams(spec, &ctrl));
    if cfg.iperf3_blocks && spec.direction == crate::traffic::spec::Direction::Reverse {
        spec.length_bytes = crate::traffic::spec::IPERF3_TCP_LENGTH;
    }
    spec.validate().map_err(|e| TestError::new(e.to_string()))?;
    let mut params = params_for(&spec).map_err(TestError::new)?;
    params.mptcp = cfg.mptcp;
    params.zerocopy = cfg.far_zerocopy;
    // 32-bit sequence numbers, which every server version reads, unless the user asks.
    params.udp_counters_64bit = cfg.udp_counters_64bit;
    params.flowlabel = cfg.flowlabel;
    params.title.clone_from(&cfg.title);
    params.extra_data.clone_from(&cfg.extra_data);
    // Asked for by the user, it is asked for whatever the test's size.
    params.get_server_output |= cfg.server_output;
    let server = cfg.server;
    let auth = cfg.auth.as_deref();
    if let Some(a) = auth {
        // Made now: the server checks the time in it against its clock.
        let token = a
            .token()
            .map_err(|e| TestError::new(format!("--username {}: {e}", a.user)))?;
        params.authtoken = Some(token);
    }
    control::write_json(&mut ctrl, &params.to_json())
        .map_err(|e| TestError::new(format!("{server}: {e}")))?;
    expect(
        &mut ctrl,
        server,
        State::CreateStreams,
        Instant::now() + STEP_DEADLINE,
    )
    .map_err(|e| refused_after_params(e, auth))?;
    let sockets = open_streams(cfg, &spec, &cookie, &ctrl)
        .map_err(|e| TestError::new(format!("opening data streams to {server}: {e}")))?;
    for state in [State::TestStart, State::TestRunning] {
        expect(&mut ctrl, server, state, Instant::now() + STEP_DEADLINE)
            .map_err(refused_silently)?;
    }
    let client_sockets: Vec<_> = sockets
        .iter()
        .map(|(i, _, s)| session::describe(*i, s, &spec))
        .collect();
    cfg.tell_connected(&client_sockets, false);
    let fell_back = cfg.mptcp
        && sockets.iter().any(|(_, _, s)| match s {
            StreamSocket::Tcp(t) => !crate::platform::sockopt::is_mptcp(t),
            StreamSocket::Udp(_) => false,
        });
    // Held until the results are exchanged: a receiving stream that closed its socket while the
    // server still writes would reset the connection, and iperf3 servers abort the test then.
    // Its kernel's count of what arrived is read through it right before TEST_END.
    let held: Vec<(u16, StreamSocket)> = sockets
        .iter()
        .filter_map(|(i, _, s)| Some((*i, s.try_clone().ok()?)))
        .collect();
    let timestamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let start = Instant::now();
    let wire = Wire {
        datagrams: Datagrams::Iperf3 {
            seq64: params.udp_counters_64bit,
        },
        // -t 0: a second interrupt stops the streams at once, and the interval under way
        // is kept (it is the test's last).
        open_ended: spec.until_stopped,
        drain_senders: true,
        eager_receivers: true,
        receivers_start_at_data: None,
    };
    let streams = session::start_streams(&spec, true, sockets, (start, start), wire)
        .map_err(|e| TestError::new(format!("cannot start stream threads: {e}")))?;
    let Drove {
        mut local,
        mut error,
        cut_by_interrupt,
        counted_until,
        shown,
        received_at_end,
    } = drive(
        &mut ctrl,
        (server, cfg.rcv_timeout, cfg.interrupt.as_ref()),
        &spec,
        (streams, start, &held),
        stop,
        on_interval,
    );
    // What a server sending to this end must have counted: what arrived before it was told
    // to stop, not what its threads still wrote afterwards.
    for r in local
        .reports
        .iter_mut()
        .filter(|r| r.role == Role::Receiver)
    {
        r.tcp_bytes_received = received_at_end
            .iter()
            .find(|(i, _)| *i == r.stream)
            .map(|(_, b)| *b);
    }
    let asked = spec.duration;
    // A count's test, as it ran: its grid ends where the count was reached (or the test
    // stopped), in the slot under way, which every stream kept.
    let spec = match counted_until {
        Some(at) => {
            let ran = as_counted(&spec, at);
            let slots = ran.timeline().len();
            for r in &mut local.reports {
                r.intervals.truncate(slots);
            }
            ran
        }
        None => spec,
    };
    let peer = if error.is_none() {
        match exchange(&mut ctrl, server, &spec, &local) {
            Ok(r) => Some(r),
            Err(e) => {
                error = Some(e.message);
                None
            }
        }
    } else {
        // Tell the server the test is over (iperf3 clients send CLIENT_TERMINATE on Ctrl-C).
        let _ = control::write_state(&mut ctrl, State::ClientTerminate);
        None
    };
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    drop(held);
    let info = StartInfo {
        timestamp_unix_s: timestamp.as_secs_f64(),
        server: server.to_string(),
        control_rtt_us: control_rtt.as_micros() as u64,
        control_mss_bytes: crate::platform::sockopt::tcp_info(&ctrl)
            .ok()
            .map(|i| i.snd_mss),
        client_sockets,
        cookie: Some(format!("{cookie:?}")),
        ..StartInfo::default()
    };
    local.cpu.wall_s = start.elapsed().as_secs_f64();
    let mut info = info;
    info.peer_congestion = peer.as_ref().and_then(|p| p.congestion_used.clone());
    let far_buffer = super::peer_checks::far_receive_buffer(
        &spec,
        crate::platform::sysctl::receive_buffer_max().unwrap_or(0),
    );
    let mut result = assemble(
        &spec,
        info,
        &local,
        peer.as_ref(),
        error.clone(),
        far_buffer,
    );
    if cfg.server_output {
        result.server_output = peer.and_then(|p| p.server_output);
    }
    if counted_until.is_some() {
        // The slot under way when the count was reached was not shown live.
        let roles = local_roles(&spec);
        for iv in result.intervals.iter().skip(shown) {
            let mut iv = iv.clone();
            blank_peer_figures(&mut iv, &roles, spec.protocol);
            on_interval(&iv);
        }
    }
    if cut_by_interrupt && result.error.is_none() {
        let cut = crate::traffic::result::interrupted::Interrupted {
            asked_s: asked.as_secs_f64(),
        };
        result
            .warnings
            .push(cut.sentence(spec.duration.as_secs_f64()));
        result.interrupted = Some(cut);
    }
    if fell_back {
        result.warnings.push(format!(
            "-m/--mptcp: {server} did not accept MPTCP (iperf3 servers before 3.16, or \
             built without MPTCP, listen for plain TCP only), so the streams fell back to TCP \
             and these figures are TCP's"
        ));
    }
    finish(
        result,
        error,
        "the iperf3 server's report contradicts this end's",
    )
}

/// Opens the data streams in iperf3's order (the client's sending streams first).
fn open_streams(
    cfg: &ClientConfig,
    spec: &TestSpec,
    cookie: &Cookie,
    ctrl: &TcpStream,
) -> std::io::Result<Vec<(u16, Flow, StreamSocket)>> {
    let mut out = Vec::new();
    for (i, flow) in spec.flows().into_iter().enumerate() {
        let socket = match spec.protocol {
            Protocol::Tcp => {
                let mut s = connect_tcp(cfg, Some((spec, i as u16)))?;
                s.write_all(&cookie.0)?;
                StreamSocket::Tcp(s)
            }
            Protocol::Udp => {
                let end = crate::traffic::session::UdpEnd::iperf3;
                let s = udp_socket(cfg, spec, (flow, i as u16), cfg.server.port(), end)?;
                udp_connect(&s, flow == Flow::ServerToClient, UDP_CONNECT_WAIT, ctrl)?;
                StreamSocket::Udp(s)
            }
        };
        out.push((i as u16, flow, socket));
    }
    Ok(out)
}

/// iperf3's UDP "connect": a 4-byte datagram, answered with 4 bytes (any value: versions
/// differ). Repeated if nothing comes back within `wait`. An iperf3 server answers the first
/// that reaches it and ignores repeats, so on a lossy path a lost answer would leave the client
/// asking in vain (iperf3's own client then fails with "unable to read from stream socket").
/// Two other signs also tell that the server has the stream:
/// - when the server sends on this stream (`data_answers`), its first data datagram (which
///   stays queued for the receiver);
/// - any word on the control connection `ctrl`: the server says TEST_START once it has every
///   stream, or an error, which the caller then reads.
fn udp_connect(
    s: &UdpSocket,
    data_answers: bool,
    wait: Duration,
    ctrl: &TcpStream,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 64];
    s.set_nonblocking(true)?;
    let answered = (|| {
        for _ in 0..UDP_CONNECT_TRIES {
            s.send(&wire::UDP_CONNECT_MSG)?;
            let until = Instant::now() + wait;
            loop {
                match s.peek(&mut buf) {
                    Ok(n) if n == wire::UDP_CONNECT_REPLY.len() => {
                        let _ = s.recv(&mut buf)?;
                        return Ok(true);
                    }
                    Ok(_) if data_answers => return Ok(true),
                    // A stray datagram that is no answer.
                    Ok(_) => {
                        let _ = s.recv(&mut buf)?;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let ready = crate::platform::sockopt::poll_readable(
                    &[s.as_raw_fd(), ctrl.as_raw_fd()],
                    left,
                )?;
                if ready[1] {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    })();
    s.set_nonblocking(false)?;
    if answered? {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer to iperf3's UDP connect datagram: is UDP blocked on the path?",
        ))
    }
}

/// A test with a count, as it ran until `at` on this end's grid: the measured part ends there.
fn as_counted(spec: &TestSpec, at: Duration) -> TestSpec {
    let mut ran = spec.clone();
    ran.duration = at
        .saturating_sub(spec.warmup())
        .clamp(Duration::from_micros(1), spec.duration);
    ran
}

/// What `drive` hands back: this end's reports, the error that ended the test early, where a
/// count's test (or an interrupted `-t 0` test) ended on this end's grid, and how many merged
/// intervals were shown live.
struct Drove {
    local: Finished,
    error: Option<String>,
    counted_until: Option<Duration>,
    /// A timed test the command line's first interrupt ended early (`-t 0`'s end is no cut).
    cut_by_interrupt: bool,
    shown: usize,
    /// Each TCP stream's bytes received, in its kernel's count, right before TEST_END.
    received_at_end: Vec<(u16, u64)>,
}

/// Pumps the stream threads until every stream has reported every interval (or, with a count,
/// until it is reached), then says TEST_END and stops them.
fn drive(
    ctrl: &mut TcpStream,
    (server, rcv_timeout, interrupt): (SocketAddr, Duration, Option<&OnInterrupt>),
    spec: &TestSpec,
    (streams, start, held): (session::Streams, Instant, &[(u16, StreamSocket)]),
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
) -> Drove {
    let roles = local_roles(spec);
    let timeline = spec.timeline();
    let cut = streams.cut.clone();
    let mut merger = LiveMerger::new(spec);
    let mut emitted = vec![0usize; roles.len()];
    let mut local = Finished::default();
    let mut grid_end = start + spec.total_time();
    let mut give_up = grid_end + Duration::from_secs(10);
    let mut error = None;
    let mut failure = session::StreamFailure::default();
    // When TEST_END went out: the server stops sending then, and the receiving streams get
    // what is still on its way before they stop.
    let mut ended: Option<Instant> = None;
    let done = |emitted: &[usize], role: Role| {
        roles
            .iter()
            .zip(emitted)
            .all(|(r, &n)| *r != role || n >= cut.slots())
    };
    // With a count: when either direction reached it on this end's grid. Intervals that end
    // after it are shown from the result, on the grid as it ran.
    let quotas = streams.quotas.clone();
    let reached = || {
        let [sent, received] = quotas.as_ref()?;
        match (sent.reached(), received.reached()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    };
    let mut cut_at = None::<Duration>;
    let mut stopped = false;
    let mut heard = false;
    let presses = crate::platform::signals::Presses::from_now();
    // TCP senders settle before TEST_END (`engine::drain`): it waits for their final reports,
    // within `SENDERS_GRACE` of their end.
    let gate = streams.end_gate.clone();
    let senders = roles.iter().filter(|r| **r == Role::Sender).count();
    let settled = |local: &Finished| {
        gate.is_none()
            || local
                .reports
                .iter()
                .filter(|r| r.role == Role::Sender)
                .count()
                >= senders
    };
    let mut received_at_end = Vec::new();
    let mut say_end = |ctrl: &mut TcpStream| {
        if let Some(g) = &gate {
            g.shut();
        }
        received_at_end = held
            .iter()
            .filter_map(|(i, s)| match s {
                StreamSocket::Tcp(t) => {
                    let info = crate::platform::sockopt::tcp_info(t).ok()?;
                    Some((*i, info.bytes_received?))
                }
                StreamSocket::Udp(_) => None,
            })
            .collect();
        control::write_state(ctrl, State::TestEnd)
    };
    let mut shown = 0;
    let mut show = |iv: &Interval| {
        // An interval that closed after the count was reached ends earlier on the grid as it
        // ran: it is shown from the result.
        if reached().is_some_and(|at| iv.end_s > at.as_secs_f64()) {
            return;
        }
        let mut iv = iv.clone();
        blank_peer_figures(&mut iv, &roles, spec.protocol);
        on_interval(&iv);
        shown += 1;
    };
    loop {
        let now = Instant::now();
        // The count is in: TEST_END as iperf3's client says it, at once, once this end's
        // senders settled if it was theirs.
        if ended.is_none()
            && let Some(at) = reached()
            && (settled(&local)
                || quotas
                    .as_ref()
                    .is_some_and(|[sent, _]| sent.reached().is_none())
                || now >= start + at + SENDERS_GRACE)
        {
            cut_at = Some(at);
            if let Err(e) = say_end(ctrl) {
                error = Some(format!("{server}: {e}"));
            }
            break;
        }
        if ended.is_none()
            && now >= grid_end
            && ((done(&emitted, Role::Sender) && settled(&local))
                || now >= grid_end + SENDERS_GRACE)
        {
            // The end of the test, as an iperf3 client says it, at once: the server's
            // seconds run until it reads this.
            if let Err(e) = say_end(ctrl) {
                error = Some(format!("{server}: {e}"));
                break;
            }
            ended = Some(now);
        }
        if let Some(at) = ended
            && (done(&emitted, Role::Receiver) || now > at + RECEIVE_GRACE)
        {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            // -t 0 (and a timed test on the command line, not a count's): the interrupt is
            // the test's end, at the end of the interval running, as a time's would be; once.
            // The flag is taken down, so a second interrupt stops the test at once (a long -i
            // is not waited out).
            let ends_here = spec.until_stopped || (interrupt.is_some() && spec.count.is_none());
            if ends_here && ended.is_none() && !heard && presses.take_first(stop) {
                heard = true;
                let slots = timeline
                    .index_at(now.saturating_duration_since(start))
                    .map_or(timeline.len(), |i| i + 1)
                    .max(timeline.least_kept())
                    .min(timeline.len());
                cut.at(slots);
                if let Some(last) = timeline.slots().get(slots.saturating_sub(1)) {
                    grid_end = start + last.end;
                    give_up = grid_end + Duration::from_secs(10);
                    if let Some(told) = interrupt {
                        (told.0)(last.end.saturating_sub(spec.warmup()));
                    }
                }
            } else {
                error = Some(if spec.until_stopped {
                    "interrupted: results cover this end's counts until the interrupt (the far \
                     end's did not arrive)"
                        .to_string()
                } else {
                    "interrupted: results cover the intervals measured so far".to_string()
                });
                stopped = spec.until_stopped;
                break;
            }
        }
        if Instant::now() > give_up {
            error = Some("the streams did not finish 10 s after the test's end".to_string());
            break;
        }
        // Nothing arrived for --rcv-timeout while the test runs: iperf3's client ends it so
        // (IENOMSG), where a count's test would otherwise wait for its ceiling of a day.
        if ended.is_none()
            && let Some(why) = streams.receive_timed_out(rcv_timeout)
        {
            error = Some(format!("{server}: {why}"));
            break;
        }
        if ended.is_none()
            && crate::platform::sockopt::wait_readable(ctrl, Duration::ZERO).unwrap_or(false)
        {
            error = Some(
                match next_state(ctrl, server, Instant::now() + STEP_DEADLINE) {
                    Err(e) => e.message,
                    Ok(s) => format!(
                        "{server}: the iperf3 server {} during the test",
                        s.as_peer_act()
                    ),
                },
            );
            break;
        }
        // A stream that failed before the end ends the test, as iperf3's client does, once
        // the server had its moment to say why (above).
        if let Some(why) = failure.due() {
            error = Some(why.to_string());
            break;
        }
        let wait = if ended.is_none() && now < grid_end {
            (grid_end - now).min(Duration::from_millis(20))
        } else {
            Duration::from_millis(20)
        };
        match streams.events.recv_timeout(wait) {
            Ok(EngineEvent::Interval(r)) => {
                if let Some(n) = emitted.get_mut(usize::from(r.stream)) {
                    *n += 1;
                }
                let m = mirror(&r);
                merger.add(r, &mut show);
                merger.add(m, &mut show);
            }
            Ok(EngineEvent::StreamDone(r, cpu)) => {
                if r.error.is_some() && error.is_none() {
                    error = r.error.clone();
                }
                failure.note(&r, ended.is_none());
                local.add(*r, cpu);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    // A -t 0 test interrupted ends where its grid was cut, as a count's where it was reached.
    let interrupted_at = (cut.slots() < timeline.len())
        .then(|| {
            timeline
                .slots()
                .get(cut.slots().saturating_sub(1))
                .map(|s| s.end)
        })
        .flatten();
    // Stopped at once (a second interrupt): the slot under way, which every open-ended stream
    // keeps, ends now, as a count's does where it was reached.
    let counted_until = quotas
        .is_some()
        .then(|| cut_at.unwrap_or_else(|| start.elapsed()))
        .or(stopped.then(|| start.elapsed()))
        // A timed test cut by a first interrupt and stopped by a second: the grid asked, with
        // the intervals closed (its streams keep no interval under way).
        .or(interrupted_at.filter(|_| error.is_none() || spec.until_stopped));
    streams.stop_and_collect(&mut local);
    local.reports.sort_by_key(|r| r.stream);
    Drove {
        local,
        error,
        cut_by_interrupt: heard && !spec.until_stopped && cut.slots() < timeline.len(),
        counted_until,
        shown,
        received_at_end,
    }
}

#[cfg(test)]
mod tests;
