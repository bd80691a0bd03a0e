//! A request/response test (`traffic::rr`) on the server: its admission (the spec's own caps,
//! `--max-duration`, `--max-streams`, a slot and the descriptors of its connections), its
//! connections (rr: TCP data connections with the test's token, or UDP sockets greeted with
//! it; crr: a listener of the test's own that answers the control peer's address only), one
//! `rr::engine` loop per connection, and the counts sent back when the client is done.

use super::*;
use crate::traffic::rr::{RrMode, RrSpec, ServerCounts, engine};

/// Longest a test may outlive its duration before the server stops it (the client's `Done`
/// is late or never comes).
const OVERRUN: Duration = Duration::from_secs(30);

/// The connections of a test, collected before the start.
enum Conns {
    Tcp(Vec<TcpStream>),
    Udp(Vec<UdpSocket>),
    Crr(TcpListener),
}

pub(super) fn rr_session(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    mut pending: Pending<'_>,
    mut spec: RrSpec,
) -> anyhow::Result<()> {
    if shared.auth.is_some() {
        return refuse(
            &mut ctrl,
            Refusal::Limit {
                reason: iperf3::login::NETSWEEP_CLIENT_REFUSED.to_string(),
            },
        );
    }
    if let Some(reason) = spec.refusal(&shared.limits) {
        return refuse(&mut ctrl, Refusal::Limit { reason });
    }
    if let Err(reason) =
        crate::traffic::session::server_pinning(&mut spec.affinity, shared.limits.affinity)
    {
        return refuse(&mut ctrl, Refusal::Limit { reason });
    }
    let mut slot = match shared.admission.slot(peer) {
        Ok(s) => s,
        Err(running) => return refuse(&mut ctrl, Refusal::Busy { running }),
    };
    let mut ending = Ending::new(&shared.served);
    let n = usize::from(spec.concurrency);
    if let Err(reason) = slot.reserve_streams(n) {
        return refuse(&mut ctrl, Refusal::Limit { reason });
    }
    slot.describe(format!("{}, set up", spec.words()));
    pending.release();
    let conns = connections(&mut ctrl, peer, shared, &spec)?;
    write_frame(
        &mut ctrl,
        &ServerMsg::Ready {
            sockets: Vec::new(),
        },
    )?;
    match read_frame::<ClientMsg>(&mut ctrl, Some(Instant::now() + STAGE_DEADLINE))? {
        ClientMsg::Start => {}
        ClientMsg::Abort { reason } => anyhow::bail!("client aborted before the start: {reason}"),
        _ => anyhow::bail!("expected start"),
    }
    slot.describe(spec.words());
    (shared.log)(&format!("{peer}: {} test", spec.words()));
    let outcome = run(&mut ctrl, &spec, conns, peer.ip());
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    ending.outcome = match &outcome {
        Ok(counts) => {
            ending.document = Some(serde_json::json!({ "rr_server": counts }));
            Outcome::Ok
        }
        Err(e) => {
            ending.document = Some(serde_json::json!({ "error": format!("{e:#}") }));
            Outcome::Failed
        }
    };
    drop(slot);
    outcome.map(|_| ())
}

/// Tells the client where its connections go (`RrAccepted`) and collects them: rr's TCP
/// connections by the test's token, its UDP sockets by their hellos, or crr's listener.
fn connections(
    ctrl: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    spec: &RrSpec,
) -> anyhow::Result<Conns> {
    let n = usize::from(spec.concurrency);
    let mut clock = StreamClock::new(n, Duration::from_millis(100));
    let token = Token::random();
    let local_ip = ctrl.local_addr()?.ip();
    let flows = vec![Flow::ClientToServer; n];
    Ok(match (spec.mode, spec.protocol) {
        (RrMode::Crr, _) => {
            let l = TcpListener::bind(SocketAddr::new(local_ip, 0))?;
            l.set_nonblocking(true)?;
            accepted(ctrl, token, Vec::new(), Some(l.local_addr()?.port()))?;
            Conns::Crr(l)
        }
        (RrMode::Rr, Protocol::Tcp) => {
            let (tx, rx) = mpsc::channel();
            let _registration = Registration::new(&shared.registry, token, tx);
            let mut expecting = Expecting::new(&shared.admission, peer.ip(), n);
            accepted(ctrl, token, Vec::new(), None)?;
            let mut got: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
            admission::collect_connections(
                &rx,
                (&*ctrl, peer.ip(), n),
                &mut clock,
                Some(&mut expecting),
                |id, sock| match got.get_mut(usize::from(id)) {
                    Some(slot @ None) => {
                        *slot = Some(sock);
                        Ok(true)
                    }
                    _ => Ok(false),
                },
            )?;
            Conns::Tcp(got.into_iter().flatten().collect())
        }
        (RrMode::Rr, Protocol::Udp) => {
            let udp = UdpStreams::open(shared, ctrl, token, |ip| {
                (0..n)
                    .map(|_| Ok(UdpSocket::bind(SocketAddr::new(ip, 0))?))
                    .collect()
            })?;
            accepted(ctrl, token, udp.ports(n)?, None)?;
            let setup = Setup {
                ctrl: &*ctrl,
                flows: &flows,
                peer_ip: peer.ip(),
            };
            let streams = udp.collect(&token, &setup, &mut clock, &|_, _| Ok(()))?;
            Conns::Udp(
                streams
                    .into_iter()
                    .filter_map(|(_, _, s)| match s {
                        StreamSocket::Udp(u) => Some(u),
                        _ => None,
                    })
                    .collect(),
            )
        }
    })
}

fn accepted(
    ctrl: &mut TcpStream,
    token: Token,
    udp_ports: Vec<u16>,
    crr_port: Option<u16>,
) -> Result<(), ProtocolError> {
    write_frame(
        ctrl,
        &ServerMsg::RrAccepted {
            token,
            udp_ports,
            crr_port,
        },
    )
}

/// Runs the loops until the client says it is done (or is gone, or the test overran), then
/// stops them and sends their counts.
fn run(
    ctrl: &mut TcpStream,
    spec: &RrSpec,
    conns: Conns,
    peer: IpAddr,
) -> anyhow::Result<ServerCounts> {
    let stop = AtomicBool::new(false);
    let sizes = (spec.request_bytes as usize, spec.response_bytes as usize);
    let spin = spec.spin();
    let give_up = Instant::now() + spec.duration + OVERRUN;
    let (tcp, udp, crr) = match conns {
        Conns::Tcp(t) => (t, Vec::new(), None),
        Conns::Udp(u) => (Vec::new(), u, None),
        Conns::Crr(l) => (Vec::new(), Vec::new(), Some(l)),
    };
    let (counts, said) = std::thread::scope(|s| {
        let stop = &stop;
        // One clone of each TCP connection, to unblock its loop at the end.
        let mut closers = Vec::new();
        let mut handles = Vec::new();
        let cpu = |i: usize| spec.affinity.server.map(|c| c.for_thread(i));
        for (i, sock) in tcp.into_iter().enumerate() {
            if let Ok(c) = sock.try_clone() {
                closers.push(c);
            }
            handles.extend(spawn(s, cpu(i), move || {
                engine::serve_tcp(sock, sizes, stop, spin)
            }));
        }
        for (i, sock) in udp.into_iter().enumerate() {
            handles.extend(spawn(s, cpu(i), move || {
                engine::serve_udp(&sock, sizes, stop, spin)
            }));
        }
        if let Some(l) = &crr {
            for i in 0..usize::from(spec.concurrency) {
                handles.extend(spawn(s, cpu(i), move || {
                    engine::serve_crr(l, peer, sizes, stop)
                }));
            }
        }
        let said = wait_done(ctrl, give_up);
        stop.store(true, Ordering::Relaxed);
        for c in &closers {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        let mut counts = ServerCounts::default();
        for h in handles {
            if let Ok(c) = h.join() {
                counts.add(&c);
            }
        }
        (counts, said)
    });
    said?;
    write_frame(ctrl, &ServerMsg::RrDone { counts })?;
    // The client reads the counts and hangs up; the slot is held until then, briefly.
    let _ = read_frame::<ClientMsg>(ctrl, Some(Instant::now() + STAGE_DEADLINE));
    Ok(counts)
}

/// A loop's thread, or none when the system has no thread to give (the client then sees
/// that connection unanswered); pinned to `cpu` if given (checked at admission: a CPU gone
/// since leaves the thread where the scheduler puts it).
fn spawn<'s, 'e>(
    s: &'s std::thread::Scope<'s, 'e>,
    cpu: Option<usize>,
    f: impl FnOnce() -> ServerCounts + Send + 's,
) -> Option<std::thread::ScopedJoinHandle<'s, ServerCounts>> {
    std::thread::Builder::new()
        .name("rr".into())
        .spawn_scoped(s, move || {
            if let Some(cpu) = cpu {
                let _ = crate::platform::sched::pin_current_thread(cpu);
            }
            f()
        })
        .ok()
}

/// Waits for the client's `Done` until `give_up`.
fn wait_done(ctrl: &mut TcpStream, give_up: Instant) -> anyhow::Result<()> {
    match read_frame::<ClientMsg>(ctrl, Some(give_up)) {
        Ok(ClientMsg::Done) => Ok(()),
        Ok(ClientMsg::Abort { reason }) => anyhow::bail!("client aborted: {reason}"),
        Ok(_) => anyhow::bail!("unexpected message during the test"),
        Err(e) if e.is_timeout() => {
            anyhow::bail!(
                "the client did not end the test {} s after its end",
                OVERRUN.as_secs()
            )
        }
        Err(e) => anyhow::bail!("client gone mid-test: {e}"),
    }
}
