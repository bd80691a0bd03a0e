//! Pieces both ends of a test share: applying the spec's socket options, describing sockets,
//! and running a set of stream threads while pumping their events.

use crate::platform::cputime::CpuUsage;
use crate::platform::sockopt;
use crate::traffic::engine::{self, Arrivals, EngineEvent, Quota, StreamCtx, StreamSocket};
use crate::traffic::measure::{Role, SocketInfo, StreamReport};
use crate::traffic::spec::{Flow, Protocol, TestSpec};
use crate::traffic::timeline::Cut;
use std::net::{TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Receive buffer a UDP receiver asks for when the user set no window: bursts of a paced
/// sender and scheduling hiccups of a 2-core host must not overflow it.
pub const UDP_RCVBUF_DEFAULT: u64 = 32 << 20;

/// Applies window, congestion control, type of service, pacing cap and TCP_NODELAY to a TCP data socket
/// (either end; both ends set the TOS, as iperf3's do, so replies carry it too).
pub fn prepare_tcp(sock: &TcpStream, spec: &TestSpec) -> std::io::Result<()> {
    if let Some(w) = spec.window_bytes {
        let m = spec.window_mode;
        sockopt::set_buffers(sock, m.buffer_for(w), m.forced())?;
    }
    if let Some(w) = spec.window_clamp() {
        sockopt::hold_window_clamp(sock, w).map_err(|e| annotate(e, "TCP_WINDOW_CLAMP"))?;
    }
    if let Some(cc) = &spec.congestion {
        sockopt::set_congestion(sock, cc)?;
    }
    if let Some(tos) = spec.tos {
        sockopt::set_tos(sock, tos, is_v6(sock.local_addr()))
            .map_err(|e| annotate(e, &format!("-S/--tos {tos:#04x}")))?;
    }
    if let Some(bps) = spec.fq_rate_bps {
        sockopt::set_max_pacing_rate(sock, bps / 8)
            .map_err(|e| annotate(e, "--fq-rate (SO_MAX_PACING_RATE)"))?;
    }
    if spec.no_delay {
        // iperf3's -N: both ends, so a -R test's sender (the server) sends without Nagle too.
        sock.set_nodelay(true)
            .map_err(|e| annotate(e, "-N/--no-delay (TCP_NODELAY)"))?;
    }
    Ok(())
}

/// What a UDP data socket does in its test, for its receive buffer when `-w` sets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpEnd {
    Sender,
    /// A receiver of netsweep's protocol: `UDP_RCVBUF_DEFAULT`.
    Receiver,
    /// A receiver of iperf3's protocol keeps the kernel's default buffer, as iperf3's does: an
    /// iperf3 test's loss then counts what that buffer drops, as iperf3's own figures on the
    /// same host do (a trial's iperf3 client at 1.5 Gbit/s lost 1.6-2% to iperf3's server and
    /// none to netsweep's 64 MiB one: a perfSONAR history would have stepped down).
    Iperf3Receiver,
}

impl UdpEnd {
    /// A receiver of netsweep's protocol when `receiving`, else a sender.
    pub fn netsweep(receiving: bool) -> UdpEnd {
        match receiving {
            true => UdpEnd::Receiver,
            false => UdpEnd::Sender,
        }
    }

    /// A receiver of iperf3's protocol when `receiving`, else a sender.
    pub fn iperf3(receiving: bool) -> UdpEnd {
        match receiving {
            true => UdpEnd::Iperf3Receiver,
            false => UdpEnd::Sender,
        }
    }
}

/// Applies the window (or netsweep's UDP receive default), type of service, Don't Fragment and
/// the pacing cap to a UDP data socket.
pub fn prepare_udp(sock: &UdpSocket, spec: &TestSpec, end: UdpEnd) -> std::io::Result<()> {
    match spec.window_bytes {
        Some(w) => sockopt::set_buffers(sock, w, spec.window_mode.forced())?,
        None if end == UdpEnd::Receiver => sockopt::raise_rcvbuf(sock, UDP_RCVBUF_DEFAULT),
        None => {}
    }
    let v6 = is_v6(sock.local_addr());
    if let Some(tos) = spec.tos {
        sockopt::set_tos(sock, tos, v6)
            .map_err(|e| annotate(e, &format!("-S/--tos {tos:#04x}")))?;
    }
    if spec.dont_fragment {
        sockopt::set_dont_fragment(sock, v6).map_err(|e| annotate(e, "--dont-fragment"))?;
    }
    if let Some(bps) = spec.fq_rate_bps {
        // As iperf3's UDP sockets: the fq qdisc paces them too (beside -b's own pacing).
        sockopt::set_max_pacing_rate(sock, bps / 8)
            .map_err(|e| annotate(e, "--fq-rate (SO_MAX_PACING_RATE)"))?;
    }
    Ok(())
}

fn is_v6(addr: std::io::Result<std::net::SocketAddr>) -> bool {
    addr.is_ok_and(|a| a.is_ipv6())
}

/// An error of setting an option, naming the option the user gave.
fn annotate(e: std::io::Error, option: &str) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{option}: {e}"))
}

/// Asks the kernel to coalesce what arrives on the UDP data sockets (UDP_GRO) as soon as they
/// are connected, before any data is sent: a receiving thread asks again when it starts (and
/// learns whether the kernel agreed), but what arrived before that came uncoalesced, one
/// datagram a read (thousands of reads in a 1 s unlimited test on a loaded 2-core host,
/// measured against the kernel's `InDatagrams`).
pub fn coalesce_udp(sockets: &[(u16, Flow, StreamSocket)], spec: &TestSpec) {
    if spec.protocol != Protocol::Udp || !spec.udp_offload {
        return;
    }
    for (_, _, s) in sockets {
        if let StreamSocket::Udp(u) = s {
            let _ = crate::platform::udpbatch::enable_udp_gro(u);
        }
    }
}

/// What one end knows about a data socket.
pub fn describe(stream: u16, socket: &StreamSocket, spec: &TestSpec) -> SocketInfo {
    let (local, remote, (snd, rcv), mss, cc) = match socket {
        StreamSocket::Tcp(s) => (
            s.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            s.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
            sockopt::buffer_sizes(s),
            sockopt::tcp_info(s).ok().map(|i| i.snd_mss),
            sockopt::congestion(s),
        ),
        StreamSocket::Udp(s) => (
            s.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            s.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
            sockopt::buffer_sizes(s),
            None,
            None,
        ),
    };
    SocketInfo {
        stream,
        local,
        remote,
        sndbuf_bytes: snd,
        rcvbuf_bytes: rcv,
        mss_bytes: mss,
        congestion: cc,
        udp_offload: (spec.protocol == Protocol::Udp).then_some(spec.udp_offload),
        // A clamped window is the clamp, whatever the buffers beneath it allow.
        window_bytes: spec.window_bytes.map(|w| {
            let granted = sockopt::window_of((snd, rcv));
            match spec.window_clamp() {
                Some(_) => granted.min(w),
                None => granted,
            }
        }),
    }
}

/// This end's role on a stream of the given flow.
pub fn role(flow: Flow, is_client: bool) -> Role {
    match (flow, is_client) {
        (Flow::ClientToServer, true) | (Flow::ServerToClient, false) => Role::Sender,
        _ => Role::Receiver,
    }
}

/// Stream threads of one end, running.
pub struct Streams {
    pub events: Receiver<EngineEvent>,
    pub count: usize,
    pub stop: Arc<AtomicBool>,
    /// Where the streams' grid stops: cut short when a `duration = "auto"` test is steady.
    pub cut: Arc<Cut>,
    /// A test with a count (`-n`/`-k`): the bytes this end sends, then the bytes it receives
    /// (one quota per direction, whether or not this end has streams of it).
    pub quotas: Option<[Arc<Quota>; 2]>,
    /// When this end's receiving streams last had data; `None` when it has none.
    pub arrivals: Option<Arc<Arrivals>>,
    /// With `Wire::drain_senders` and TCP senders: shut right before the owner ends the test.
    pub end_gate: Option<Arc<engine::drain::EndGate>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

pub use crate::traffic::spec::{DEFAULT_RCV_TIMEOUT, MIN_RCV_TIMEOUT};

/// iperf3's words for a test whose data stopped (`IENOMSG`), with how long and the flag.
pub fn rcv_timeout_words(timeout: Duration) -> String {
    format!(
        "idle timeout for receiving data: nothing arrived for {:.1} s (--rcv-timeout {})",
        timeout.as_secs_f64(),
        timeout.as_millis()
    )
}

/// How long an end whose stream failed while the test ran waits for the peer's own word (its
/// error, abort or end, which says more than a broken pipe) before it ends the test with the
/// stream's error.
pub const STREAM_FAILURE_GRACE: Duration = Duration::from_secs(1);

/// The first of this end's streams that failed while the test ran (a write or read error:
/// `--snd-timeout`'s ETIMEDOUT, a reset), as iperf3 ends a test on one ("unable to write to
/// stream socket").
#[derive(Debug, Default)]
pub struct StreamFailure(Option<(String, Role, Instant)>);

impl StreamFailure {
    /// Notes `report`'s error if the test is `running`; errors at its end are the peer closing
    /// (kept in the stream's result only).
    pub fn note(&mut self, report: &StreamReport, running: bool) {
        if self.0.is_some() || !running {
            return;
        }
        if let Some(e) = &report.error {
            self.0 = Some((
                format!("stream {}: {e}", report.stream),
                report.role,
                Instant::now(),
            ));
        }
    }

    /// Whether a test `elapsed` into its `total` time still runs for `note`: more than the
    /// grace is left, so the two ends' grids a moment apart (a UDP receiver closed a
    /// millisecond before the far sender's end) never make a failure of the end.
    pub fn running(elapsed: Duration, total: Duration) -> bool {
        elapsed + STREAM_FAILURE_GRACE < total
    }

    /// Whether a stream failed (the peer's grace may still run).
    pub fn noted(&self) -> bool {
        self.0.is_some()
    }

    /// The failure, once the peer has had `STREAM_FAILURE_GRACE` to say why.
    pub fn due(&self) -> Option<&str> {
        self.0
            .as_ref()
            .filter(|(_, _, at)| at.elapsed() >= STREAM_FAILURE_GRACE)
            .map(|(why, _, _)| why.as_str())
    }

    /// Whether the failed stream sent (a write failed) or received (a read failed).
    pub fn role(&self) -> Option<Role> {
        self.0.as_ref().map(|(_, role, _)| *role)
    }
}

/// A server's pinning for `spec`: the client's `-A ,M` for this test, else the server's own
/// `-A`; and why this host cannot pin there, if it cannot (a CPU this process may not use).
pub fn server_pinning(
    affinity: &mut crate::traffic::affinity::Affinity,
    own: Option<crate::traffic::affinity::Cpus>,
) -> Result<(), String> {
    affinity.server = affinity.server.or(own);
    match affinity.server.and_then(unusable_cpus) {
        Some(why) => Err(format!("-A: this server cannot pin its streams: {why}")),
        None => Ok(()),
    }
}

/// Why this process cannot pin threads to `cpus` (one it may not use), if it cannot.
pub fn unusable_cpus(cpus: crate::traffic::affinity::Cpus) -> Option<String> {
    match crate::platform::sched::allowed_cpus() {
        Ok(allowed) => cpus.unavailable(&allowed),
        Err(e) => Some(format!("cannot read the CPUs this process may use: {e}")),
    }
}

/// How the peer at the other end speaks: netsweep (the default) or iperf3.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wire {
    pub datagrams: engine::Datagrams,
    /// Streams run until stopped and keep their last, partial interval (`StreamCtx::open_ended`).
    pub open_ended: bool,
    /// TCP senders let the far end settle before the owner ends the test (an iperf3 client:
    /// `engine::drain`), through `Streams::end_gate`.
    pub drain_senders: bool,
    /// The far end's TCP receivers read as each segment arrives (iperf3's): this end's senders
    /// keep a thread each, never sharing one (`engine::sendgroup`). Against such receivers,
    /// which hold a thread per stream, two sending threads carried less (docs/performance.md,
    /// "Standing in for iperf3"); the likeliest reason is the scheduler's share per thread.
    pub eager_receivers: bool,
    /// This end's receivers start their grid when their first data arrives, at most this long
    /// after `receiver_start` (a netsweep client: `StreamCtx::starts_at_data`).
    pub receivers_start_at_data: Option<Duration>,
}

/// Starts one thread per socket. `receiver_start` and `Wire::receivers_start_at_data` let the
/// client start its receiving grids when the server's first bytes arrive.
pub fn start_streams(
    spec: &TestSpec,
    is_client: bool,
    sockets: Vec<(u16, Flow, StreamSocket)>,
    (sender_start, receiver_start): (Instant, Instant),
    wire: Wire,
) -> std::io::Result<Streams> {
    let timeline = Arc::new(spec.timeline());
    let cut = Arc::new(Cut::new(timeline.len()));
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let count = sockets.len();
    let mut handles = Vec::with_capacity(count);
    let roles: Vec<Role> = sockets
        .iter()
        .map(|(_, f, _)| role(*f, is_client))
        .collect();
    let tcp = spec.protocol == Protocol::Tcp;
    let calibrate = spec.chooses_send_path();
    // Who receives: the paths the senders choose among (against iperf3's receivers, iperf3's
    // block too) and the host's record of them follow it.
    let receivers = if wire.eager_receivers {
        engine::sendpath::memory::Receivers::Iperf3
    } else {
        engine::sendpath::memory::Receivers::Netsweep {
            skip_rx_copy: spec.skip_rx_copy,
        }
    };
    let candidates = engine::sendpath::candidates(receivers);
    let source = (tcp && roles.contains(&Role::Sender)).then(|| {
        Arc::new(engine::SendSource::new(
            spec.length_bytes as usize,
            spec.zerocopy,
            calibrate.then_some(candidates),
            spec.repeating_payload,
        ))
    });
    // One calibration for all sending streams of the test on this end (`sendpath::Pool`).
    // Its choice also rests on what this host remembers of earlier tests to the same peer
    // (`sendpath::memory`), when the process remembers at all.
    let senders = roles.iter().filter(|r| **r == Role::Sender).count();
    let peer = sockets.iter().find_map(|(_, _, s)| match s {
        StreamSocket::Tcp(t) => t.peer_addr().ok(),
        StreamSocket::Udp(_) => None,
    });
    let send_pool = source.as_ref().map(|_| {
        Arc::new(match peer {
            Some(p) => engine::sendpath::Pool::remembering(
                candidates,
                engine::sendpath::memory::key(
                    p.ip(),
                    crate::platform::netns::this_threads().as_deref(),
                    senders,
                    receivers,
                ),
            ),
            None => engine::sendpath::Pool::new(candidates),
        })
    });
    let quotas = spec.count.map(|c| {
        let bytes = c.bytes(spec.length_bytes);
        [Arc::new(Quota::new(bytes)), Arc::new(Quota::new(bytes))]
    });
    let receivers = roles.iter().filter(|r| **r == Role::Receiver).count();
    let arrivals = Arc::new(Arrivals::new(receiver_start));
    let read_bytes = engine::read_size(receivers);
    // One low-water mark probe for all receiving streams of the test on this end, when the
    // test lasts past it, runs unpaced (a pacer holds the rate whatever the mark), and its
    // path answers within `PROBE_MAX_RTT` (`lowater`).
    let mark_probe = {
        let probe = engine::lowater::MarkProbe::new(
            engine::lowater::probe_start(spec.effective_calibration()),
            engine::lowater::incumbent(
                receivers,
                spec.skip_rx_copy && sockopt::RECV_TRUNC_DISCARDS,
            ),
        );
        let ends = timeline.slots().last().map(|s| s.end).unwrap_or_default();
        // Asked of the kernel only when everything else allows a probe.
        let rtt = || {
            sockets
                .iter()
                .filter(|(_, f, _)| role(*f, is_client) == Role::Receiver)
                .filter_map(|(_, _, s)| match s {
                    StreamSocket::Tcp(t) => sockopt::tcp_info(t).ok(),
                    StreamSocket::Udp(_) => None,
                })
                .map(|i| Duration::from_micros(u64::from(i.rtt_us)))
                .max()
                .unwrap_or_default()
        };
        (engine::lowater::ENABLED
            && tcp
            && receivers > 0
            && spec.bitrate_bps <= 0.0
            && probe.end() + engine::lowater::PROBE_DECIDES_AFTER < ends
            && rtt() <= engine::lowater::PROBE_MAX_RTT)
            .then(|| Arc::new(probe))
    };
    // A same-host receiver's and sender's buffers (`engine::rcvbuf`, `engine::sndbuf`).
    let same_host = |socket: &StreamSocket| match socket {
        StreamSocket::Tcp(t) => match (t.local_addr(), t.peer_addr()) {
            (Ok(l), Ok(p)) => engine::rcvbuf::same_host(l.ip(), p.ip()),
            _ => false,
        },
        StreamSocket::Udp(_) => false,
    };
    let window_set = spec.window_bytes.is_some();
    let cpus = spec.affinity.of(is_client);
    let end_gate = (wire.drain_senders && tcp && roles.contains(&Role::Sender))
        .then(|| Arc::new(engine::drain::EndGate::default()));
    let mut streams = Vec::with_capacity(count);
    for (i, (stream, flow, socket)) in sockets.into_iter().enumerate() {
        let role = role(flow, is_client);
        let ctx = StreamCtx {
            stream,
            flow,
            role,
            timeline: timeline.clone(),
            start: if role == Role::Sender {
                sender_start
            } else {
                receiver_start
            },
            stop: stop.clone(),
            events: tx.clone(),
            rate: spec.stream_rate(),
            length: spec.length_bytes as usize,
            udp_offload: spec.udp_offload,
            zerocopy: spec.zerocopy,
            repeating_payload: spec.repeating_payload,
            source: source.clone(),
            send_pool: send_pool.clone(),
            read_bytes,
            mark_target: engine::lowater::target(receivers),
            mark_probe: mark_probe.clone().filter(|_| role == Role::Receiver),
            calibration: spec.effective_calibration(),
            live_path_choice: spec.effective_live_path_choice(),
            datagrams: wire.datagrams,
            // A count ends the test anywhere in a slot: the slot under way is kept.
            open_ended: wire.open_ended || quotas.is_some(),
            cut: cut.clone(),
            quota: quotas.as_ref().map(|[sent, received]| match role {
                Role::Sender => sent.clone(),
                Role::Receiver => received.clone(),
            }),
            arrivals: arrivals.clone(),
            skip_rx_copy: spec.skip_rx_copy && sockopt::RECV_TRUNC_DISCARDS,
            window_clamp: spec.window_clamp(),
            receive_buffer: (role == Role::Receiver)
                .then(|| engine::rcvbuf::ask(window_set, same_host(&socket), receivers))
                .flatten(),
            send_buffer: (role == Role::Sender)
                .then(|| {
                    let iperf3_receiver = wire.eager_receivers;
                    engine::sndbuf::ask(
                        window_set,
                        same_host(&socket),
                        senders,
                        receivers,
                        iperf3_receiver,
                    )
                })
                .flatten(),
            cpu: cpus.map(|c| c.for_thread(i)),
            end_gate: end_gate.clone().filter(|_| role == Role::Sender),
            starts_at_data: wire
                .receivers_start_at_data
                .filter(|_| role == Role::Receiver),
        };
        streams.push((ctx, socket));
    }
    // Senders beyond one per CPU this process may run on share threads (`engine::sendgroup`).
    let usable_cpus = crate::platform::sched::allowed_cpus().map_or(1, |c| c.len());
    let sending_threads = if wire.eager_receivers {
        usize::MAX
    } else {
        usable_cpus
    };
    handles.extend(engine::spawn_streams(streams, sending_threads)?);
    Ok(Streams {
        events: rx,
        count,
        stop,
        cut,
        quotas,
        arrivals: (receivers > 0).then_some(arrivals),
        end_gate,
        handles,
    })
}

impl Streams {
    /// Why the test ends for lack of data: this end receives, and nothing has arrived on any of
    /// its receiving streams for `timeout` (iperf3's `--rcv-timeout`).
    pub fn receive_timed_out(&self, timeout: Duration) -> Option<String> {
        self.arrivals
            .as_ref()
            .filter(|a| a.idle() >= timeout)
            .map(|_| rcv_timeout_words(timeout))
    }

    /// Raises the stop flag, waits for every thread, and adds the final reports that `done`
    /// does not hold yet.
    pub fn stop_and_collect(mut self, done: &mut Finished) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        while let Ok(ev) = self.events.try_recv() {
            if let EngineEvent::StreamDone(r, cpu) = ev
                && !done.reports.iter().any(|d| d.stream == r.stream)
            {
                done.add(*r, cpu);
            }
        }
    }

    /// Raises the stop flag and gathers the reports of the streams not yet in `done`, for at
    /// most `within` (what they measured before they stop), leaving the threads to the owner.
    pub fn stop_and_gather(&self, done: &mut Finished, within: Duration) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let until = Instant::now() + within;
        while done.reports.len() < self.count && Instant::now() < until {
            match self.events.recv_timeout(Duration::from_millis(50)) {
                Ok(EngineEvent::StreamDone(report, cpu)) => done.add(*report, cpu),
                Ok(EngineEvent::Interval(_)) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Raises the stop flag and waits for every thread.
    pub fn stop_and_join(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Collected stream ends and their CPU time.
#[derive(Debug, Default)]
pub struct Finished {
    pub reports: Vec<StreamReport>,
    pub cpu: CpuUsage,
}

impl Finished {
    pub fn add(&mut self, report: StreamReport, cpu: CpuUsage) {
        self.reports.push(report);
        self.cpu.add(&cpu);
    }

    /// The intervals the streams closed: the longest report's.
    pub fn closed(&self) -> usize {
        self.reports
            .iter()
            .map(|r| r.intervals.len())
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without `-w` an iperf3 receiver keeps the kernel's default buffer (iperf3's loss
    /// figures), netsweep's is raised, and a sender's is left alone; `-w` is set for all.
    #[test]
    fn a_udp_receivers_buffer_is_its_protocols() {
        let rcvbuf = |end: UdpEnd, spec: &TestSpec| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            let before = socket2::SockRef::from(&s).recv_buffer_size().unwrap();
            prepare_udp(&s, spec, end).unwrap();
            (
                before,
                socket2::SockRef::from(&s).recv_buffer_size().unwrap(),
            )
        };
        let spec = TestSpec::udp(std::time::Duration::from_secs(1));
        let (default, iperf3) = rcvbuf(UdpEnd::Iperf3Receiver, &spec);
        assert_eq!(iperf3, default);
        assert_eq!(rcvbuf(UdpEnd::Sender, &spec).1, default);
        // Raised as far as this host lets (root passes rmem_max).
        let (_, ours) = rcvbuf(UdpEnd::Receiver, &spec);
        assert!(
            ours > default || ours >= 2 * UDP_RCVBUF_DEFAULT as usize,
            "{ours} {default}"
        );
        let windowed = TestSpec {
            window_bytes: Some(100_000),
            ..spec
        };
        for end in [UdpEnd::Iperf3Receiver, UdpEnd::Receiver] {
            assert_eq!(rcvbuf(end, &windowed).1, 200_000, "{end:?}");
        }
    }

    #[test]
    fn a_stream_failure_is_noted_while_the_test_runs_and_due_after_the_grace() {
        let failed = StreamReport::empty(
            3,
            Flow::ClientToServer,
            Role::Sender,
            Some("write failed: Connection timed out (os error 110)".into()),
        );
        let fine = StreamReport::empty(1, Flow::ClientToServer, Role::Sender, None);
        let mut f = StreamFailure::default();
        f.note(&fine, true);
        assert!(!f.noted());
        // Within the last second of the test: the far end closing, not a failure.
        let total = Duration::from_secs(10);
        assert!(!StreamFailure::running(Duration::from_millis(9_200), total));
        f.note(
            &failed,
            StreamFailure::running(Duration::from_millis(9_200), total),
        );
        assert!(!f.noted());
        assert!(StreamFailure::running(Duration::from_secs(3), total));
        f.note(&failed, true);
        assert!(f.noted());
        assert_eq!(f.due(), None, "the peer has a second to say why");
        assert_eq!(f.role(), Some(Role::Sender));
        let f = StreamFailure(f.0.map(|(why, role, at)| (why, role, at - STREAM_FAILURE_GRACE)));
        assert_eq!(
            f.due(),
            Some("stream 3: write failed: Connection timed out (os error 110)")
        );
    }

    /// iperf3's -N reaches the socket: TCP_NODELAY on, and off without it.
    #[test]
    fn no_delay_sets_tcp_nodelay_on_a_data_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let mut spec = TestSpec::tcp(std::time::Duration::from_secs(1));
        prepare_tcp(&client, &spec).unwrap();
        assert!(!client.nodelay().unwrap());
        spec.no_delay = true;
        prepare_tcp(&server, &spec).unwrap();
        assert!(server.nodelay().unwrap());
    }
}
