//! `netsweep server`: accepts control and data connections on one TCP port, admits up to
//! `max_tests` tests at once (a client over the cap is told "busy" at once), and runs each test
//! in its own threads.
//!
//! `run` takes a bound listener and a shutdown flag, so tests start it on `127.0.0.1:0` and stop
//! it. The server never changes kernel settings.

use crate::platform::sockopt;
use crate::traffic::admission::{self, Admission, Expecting, Pending, STAGE_DEADLINE, StreamClock};
use crate::traffic::engine::{EngineEvent, StreamSocket};
use crate::traffic::iperf3;
use crate::traffic::latency::echo::{self, EchoServer};
use crate::traffic::listener::ListenerBuffers;
use crate::traffic::protocol::{
    self, ClientMsg, IO_DEADLINE, ProtocolError, Refusal, ServerMsg, Token, read_exact_by,
    read_frame, write_frame,
};
use crate::traffic::session::{self, Finished};
use crate::traffic::spec::{Flow, Protocol, ServerLimits, TestSpec};
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod scheduled;
mod served;
pub use scheduled::{Scheduled, new_ticket};
pub use served::{DocumentSink, Served};
use served::{Ending, Outcome};
mod streams;
use streams::*;
mod refusal;
use refusal::{admission, refuse, unreadable_request};
mod control;
use control::control_session;
mod rr;

/// Where the server writes one line per event (stderr in the binary, a buffer in tests).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

type Registry = Arc<Mutex<HashMap<Token, Sender<(u16, TcpStream)>>>>;
/// UDP tests of netsweep's clients waiting for their streams' hellos on the server's port:
/// each hello (the stream's number and its sender) goes to the test of its token.
type UdpHellos = Mutex<HashMap<Token, Sender<(u16, SocketAddr)>>>;

/// A test's place in a registry (data connections', UDP hellos'), removed on drop.
struct Registration<'a, V>(&'a Mutex<HashMap<Token, V>>, Token);

impl<'a, V> Registration<'a, V> {
    /// Puts `value` under `token` in `registry` until the registration drops.
    fn new(registry: &'a Mutex<HashMap<Token, V>>, token: Token, value: V) -> Self {
        if let Ok(mut r) = registry.lock() {
            r.insert(token, value);
        }
        Registration(registry, token)
    }
}

impl<V> Drop for Registration<'_, V> {
    fn drop(&mut self) {
        if let Ok(mut r) = self.0.lock() {
            r.remove(&self.1);
        }
    }
}

struct Shared {
    limits: ServerLimits,
    /// Slots, pending connections, expected data connections, descriptors, running tests.
    admission: Admission,
    registry: Registry,
    udp_hellos: UdpHellos,
    /// The same for latency probers' hellos (`protocol::LATENCY_STREAM`), by test.
    latency_hellos: UdpHellos,
    log: Log,
    /// Repeated complaints (accept errors, dropped connections) at most once a second each.
    throttled: Mutex<HashMap<&'static str, Throttle>>,
    /// iperf3 tests waiting for their data connections and UDP streams.
    iperf3: iperf3::server::Hub,
    /// Connections accepted so far, over every listener (each one's place in accept order).
    accepted: std::sync::atomic::AtomicU64,
    /// Admitted tests (netsweep's and iperf3's) that have ended, for callers that serve a set
    /// number of tests.
    served: Arc<Served>,
    /// iperf3 authentication: iperf3 clients log in, netsweep's own clients are refused.
    auth: Option<Arc<iperf3::login::ServerAuth>>,
    /// The one scheduled test this server waits for, when it serves no one else.
    scheduled: Option<Scheduled>,
    /// Raised once the server stops: its tests end, their clients told (an iperf3 client
    /// SERVER_TERMINATE, `iperf3::server::Context::stopping`; a netsweep client an error).
    stopping: AtomicBool,
    /// Tests under way (either protocol's), which the server waits for (`STOP_WAIT`) once it
    /// stops.
    tests_running: std::sync::atomic::AtomicUsize,
}

/// How long a stopping server waits for its tests to tell their clients and write what they
/// counted.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// When a repeated log line was last written, and how many were held back since.
struct Throttle {
    last: Option<Instant>,
    held: u64,
}

impl Shared {
    /// Hands a netsweep client's UDP hello that reached the server's port to the test of its
    /// token (a UDP stream's, or the latency prober's); anything else is dropped.
    fn udp_hello(&self, d: &[u8], from: SocketAddr) {
        let Some((token, stream)) = crate::traffic::protocol::parse_udp_hello(d) else {
            return;
        };
        let registry = if stream == crate::traffic::protocol::LATENCY_STREAM {
            &self.latency_hellos
        } else {
            &self.udp_hellos
        };
        if let Ok(tests) = registry.lock()
            && let Some(tx) = tests.get(&token)
        {
            let _ = tx.send((stream, from));
        }
    }

    /// Logs `line` under `kind` at most once a second, saying how many were held back.
    fn log_throttled(&self, kind: &'static str, line: &str) {
        let Ok(mut map) = self.throttled.lock() else {
            return;
        };
        let now = Instant::now();
        let t = map.entry(kind).or_insert(Throttle {
            last: None,
            held: 0,
        });
        if t.last
            .is_some_and(|last| now.duration_since(last) < Duration::from_secs(1))
        {
            t.held += 1;
            return;
        }
        let held = std::mem::take(&mut t.held);
        t.last = Some(now);
        drop(map);
        if held > 0 {
            (self.log)(&format!(
                "{line} (and {held} more like it in the last second)"
            ));
        } else {
            (self.log)(line);
        }
    }
}

/// Longest pause between accept attempts after errors (EMFILE and the like).
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Serves tests on `listener` until `shutdown` is raised.
pub fn run(
    listener: TcpListener,
    limits: ServerLimits,
    shutdown: &AtomicBool,
    log: Log,
) -> std::io::Result<()> {
    run_all(vec![listener], limits, shutdown, log)
}

/// Serves tests on every listener (netsweep's port and iperf3's, say) until `shutdown`, with
/// one set of limits over all of them. Each port also takes iperf3's UDP connect datagrams.
pub fn run_all(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    shutdown: &AtomicBool,
    log: Log,
) -> std::io::Result<()> {
    run_observed(listeners, limits, shutdown, log, Arc::default())
}

/// `run_all` for iperf3 clients that log in with `auth`'s users (netsweep's clients, which
/// have no login, are refused).
pub fn run_authenticated(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    auth: Arc<iperf3::login::ServerAuth>,
    shutdown: &AtomicBool,
    log: Log,
) -> std::io::Result<()> {
    serve_all(listeners, limits, Some(auth), shutdown, log, Arc::default())
}

/// `run_all`, counting the admitted tests that end in `served`.
pub fn run_observed(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    shutdown: &AtomicBool,
    log: Log,
    served: Arc<Served>,
) -> std::io::Result<()> {
    serve_all(listeners, limits, None, shutdown, log, served)
}

/// Serves until `shutdown` with iperf3 logins when `auth` is given, counting ended tests in
/// `served`: every other `run_*` but `run_scheduled` is this one with fewer choices.
pub fn serve_all(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    auth: Option<Arc<iperf3::login::ServerAuth>>,
    shutdown: &AtomicBool,
    log: Log,
    served: Arc<Served>,
) -> std::io::Result<()> {
    serve_with(listeners, limits, (auth, None), shutdown, log, served)
}

/// Serves the `scheduled` test only (pScheduler's server participant): a client without its
/// ticket, or from another address, is refused and neither takes the slot nor counts in
/// `served`; the scheduled test counts whether it ran or was refused (at its check too).
pub fn run_scheduled(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    scheduled: Scheduled,
    shutdown: &AtomicBool,
    log: Log,
    served: Arc<Served>,
) -> std::io::Result<()> {
    serve_with(
        listeners,
        limits,
        (None, Some(scheduled)),
        shutdown,
        log,
        served,
    )
}

fn serve_with(
    listeners: Vec<TcpListener>,
    limits: ServerLimits,
    (auth, scheduled): (Option<Arc<iperf3::login::ServerAuth>>, Option<Scheduled>),
    shutdown: &AtomicBool,
    log: Log,
    served: Arc<Served>,
) -> std::io::Result<()> {
    let shared = Arc::new(Shared {
        auth,
        scheduled,
        admission: Admission::new(&limits, crate::platform::fdlimit::soft()),
        limits,
        registry: Registry::default(),
        udp_hellos: UdpHellos::default(),
        latency_hellos: UdpHellos::default(),
        log,
        throttled: Mutex::new(HashMap::new()),
        iperf3: iperf3::server::Hub::default(),
        accepted: std::sync::atomic::AtomicU64::new(0),
        served,
        stopping: AtomicBool::new(false),
        tests_running: std::sync::atomic::AtomicUsize::new(0),
    });
    std::thread::scope(|scope| {
        let mut loops = Vec::new();
        for listener in listeners {
            let addr = listener.local_addr()?;
            match iperf3::server::bind_udp(addr) {
                Ok(udp) => {
                    if let Ok(a) = udp.local_addr() {
                        shared.iperf3.add_udp_addr(a);
                    }
                    let shared = shared.clone();
                    scope.spawn(move || {
                        let hello = |d: &[u8], from: SocketAddr| shared.udp_hello(d, from);
                        iperf3::server::dispatch_udp(&udp, &shared.iperf3, shutdown, &hello)
                    });
                }
                Err(e) => (shared.log)(&format!(
                    "UDP port {} unavailable ({e}): iperf3 clients can run TCP tests only",
                    addr.port()
                )),
            }
            let shared = shared.clone();
            loops.push(scope.spawn(move || accept_loop(listener, &shared, shutdown)));
        }
        for l in loops {
            l.join()
                .map_err(|_| std::io::Error::other("accept loop panicked"))??;
        }
        // Stopped (a signal, or the caller): tests end and tell their clients, as iperf3's
        // server does; request/response tests end with the process.
        shared.stopping.store(true, Ordering::SeqCst);
        let t0 = Instant::now();
        while shared.tests_running.load(Ordering::SeqCst) > 0 && t0.elapsed() < STOP_WAIT {
            std::thread::sleep(Duration::from_millis(20));
        }
        for line in shared.admission.running_tests() {
            (shared.log)(&line);
        }
        Ok(())
    })
}

/// Accepts connections on one listener until `shutdown`; between accepts, re-opens the listener
/// when a test's buffers are on it and no test needs them any more (`ListenerBuffers`).
fn accept_loop(
    listener: TcpListener,
    shared: &Arc<Shared>,
    shutdown: &AtomicBool,
) -> std::io::Result<()> {
    let buffers = Arc::new(ListenerBuffers::new(&listener));
    let served = accept_until(listener, shared, shutdown, &buffers);
    // The tests' threads may hold the buffers a while longer: the port is free now.
    buffers.close();
    served
}

fn accept_until(
    mut listener: TcpListener,
    shared: &Arc<Shared>,
    shutdown: &AtomicBool,
    buffers: &Arc<ListenerBuffers>,
) -> std::io::Result<()> {
    let mut backoff = Duration::ZERO;
    let mut accepted = false;
    while !shutdown.load(Ordering::Relaxed) {
        if !backoff.is_zero() {
            std::thread::sleep(backoff);
        }
        let after_accept = std::mem::take(&mut accepted);
        if let Err(e) = buffers.refresh(&mut listener, after_accept, |conn, peer| {
            dispatch(conn, peer, shared, buffers)
        }) {
            shared.log_throttled(
                "reopen",
                &format!(
                    "could not re-open the listener with the kernel's default buffers ({e}): \
                     tests without -w now inherit the last test's window"
                ),
            );
        }
        if !sockopt::wait_readable(&listener, Duration::from_millis(100))? {
            continue;
        }
        match listener.accept() {
            Ok((conn, peer)) => {
                backoff = Duration::ZERO;
                accepted = true;
                dispatch(conn, peer, shared, buffers);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // Out of descriptors or memory: retrying at once would spin. Back off.
                backoff = (backoff * 2).clamp(Duration::from_millis(10), ACCEPT_BACKOFF_MAX);
                shared.log_throttled("accept", &format!("accept failed: {e}"));
            }
        }
    }
    Ok(())
}

/// Hands a just-accepted connection to a thread of its own, or drops it when too many wait.
fn dispatch(
    conn: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    buffers: &Arc<ListenerBuffers>,
) {
    // A data connection an admitted test expects from this peer is not pending; any other
    // connection counts against `max_pending` until it is admitted or matched.
    let Some(pending) = shared.admission.connection(peer.ip()) else {
        shared.log_throttled(
            "pending",
            &format!(
                "{peer}: dropped, {} connections already wait for admission",
                shared.admission.max_pending()
            ),
        );
        return;
    };
    // The order of accept is the order the client opened its connections in (each connect
    // completes before the next starts); iperf3's data connections carry no stream number.
    let arrival = shared.accepted.fetch_add(1, Ordering::SeqCst);
    let conn_shared = shared.clone();
    let buffers = buffers.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("conn-{peer}"))
        .spawn(move || {
            let pending = conn_shared.admission.pending(pending);
            handle_connection(conn, peer, arrival, (&conn_shared, &buffers), pending)
        });
    if let Err(e) = spawned {
        drop(shared.admission.pending(pending));
        shared.log_throttled("thread", &format!("cannot start a thread for {peer}: {e}"));
    }
}

/// Reads the preamble and dispatches: control session, data connection, or drop.
fn handle_connection(
    mut conn: TcpStream,
    peer: SocketAddr,
    arrival: u64,
    (shared, buffers): (&Shared, &ListenerBuffers),
    mut pending: Pending<'_>,
) {
    // --snd-timeout: on every TCP connection, control and data, as iperf3's server.
    if let Err(e) = shared.limits.liveness.data(&conn) {
        (shared.log)(&format!("{peer}: dropped: {e}"));
        return;
    }
    let deadline = Instant::now() + IO_DEADLINE;
    let mut pre = [0u8; 8];
    if let Err(e) = read_exact_by(&mut conn, &mut pre, deadline) {
        (shared.log)(&format!("{peer}: dropped before its preamble: {e}"));
        return;
    }
    if iperf3::wire::looks_like_cookie(&pre) {
        iperf3_connection(
            (arrival, conn),
            peer,
            &pre,
            (shared, buffers),
            pending,
            deadline,
        );
        return;
    }
    if &pre == protocol::DATA_MAGIC {
        let mut rest = [0u8; 18];
        if read_exact_by(&mut conn, &mut rest, deadline).is_err() {
            return;
        }
        let mut t = [0u8; 16];
        t.copy_from_slice(&rest[..16]);
        let stream = u16::from_be_bytes([rest[16], rest[17]]);
        let chan = shared
            .registry
            .lock()
            .ok()
            .and_then(|r| r.get(&Token(t)).cloned());
        match chan {
            Some(tx) => {
                pending.release();
                let _ = tx.send((stream, conn));
            }
            None => (shared.log)(&format!(
                "{peer}: data connection with an unknown token, dropped"
            )),
        }
        return;
    }
    let _ = conn.write_all(&protocol::control_preamble());
    if let Err(e) = protocol::check_control_preamble(&pre, false) {
        (shared.log)(&format!("{peer}: {e}"));
        return;
    }
    // The rest of the client's greeting, which only an iperf3 server would keep.
    let mut rest = [0u8; protocol::GREETING_LEN - 8];
    if let Err(e) = read_exact_by(&mut conn, &mut rest, deadline) {
        (shared.log)(&format!("{peer}: dropped before its greeting ended: {e}"));
        return;
    }
    let _ = conn.set_nodelay(true);
    if let Err(e) = shared.limits.liveness.keepalive(&conn) {
        (shared.log)(&format!("{peer}: dropped: {e}"));
        return;
    }
    if let Err(e) = control_session(conn, peer, (shared, buffers), pending) {
        (shared.log)(&format!("{peer}: test ended with an error: {e:#}"));
    }
}

/// A connection that starts like an iperf3 cookie: a data connection of an iperf3 test, or a
/// new iperf3 client (ACCESS_DENIED at once when every slot is taken).
fn iperf3_connection(
    (arrival, mut conn): (u64, TcpStream),
    peer: SocketAddr,
    pre: &[u8; 8],
    (shared, buffers): (&Shared, &ListenerBuffers),
    mut pending: Pending<'_>,
    deadline: Instant,
) {
    let mut cookie = [0u8; iperf3::wire::COOKIE_LEN];
    cookie[..8].copy_from_slice(pre);
    if read_exact_by(&mut conn, &mut cookie[8..], deadline).is_err() {
        (shared.log)(&format!("{peer}: dropped before its iperf3 cookie ended"));
        return;
    }
    let Some(cookie) = iperf3::wire::Cookie::parse(&cookie) else {
        (shared.log)(&format!(
            "{peer}: dropped: neither netsweep's greeting nor an iperf3 cookie"
        ));
        return;
    };
    if let Some(tx) = shared.iperf3.data_channel(&cookie) {
        pending.release();
        let _ = tx.send((arrival, conn));
        return;
    }
    if shared.scheduled.is_some() {
        // An iperf3 client cannot carry the ticket: not the scheduled test.
        let _ = conn.write_all(&[iperf3::wire::State::AccessDenied.byte()]);
        (shared.log)(&format!(
            "{peer}: iperf3 client refused: this server serves one scheduled netsweep test"
        ));
        return;
    }
    let slot = match shared.admission.slot(peer) {
        Ok(s) => s,
        Err(running) => {
            let _ = conn.write_all(&[iperf3::wire::State::AccessDenied.byte()]);
            (shared.log)(&format!(
                "{peer}: iperf3 client told busy ({running} tests running, --max-tests {})",
                shared.admission.max_tests()
            ));
            return;
        }
    };
    if let Err(e) = shared.limits.liveness.keepalive(&conn) {
        (shared.log)(&format!("{peer}: dropped: {e}"));
        return;
    }
    pending.release();
    let log = |line: &str| (shared.log)(line);
    let ctx = iperf3::server::Context {
        limits: &shared.limits,
        hub: &shared.iperf3,
        admission: &shared.admission,
        buffers,
        log: &log,
        auth: shared.auth.as_deref(),
        json_output: shared.served.json_output,
        live: shared.served.live.as_ref(),
        stopping: &shared.stopping,
    };
    let _running = Running::new(&shared.tests_running);
    let mut ending = Ending::new(&shared.served);
    match iperf3::server::serve(conn, peer, cookie, &ctx, (slot, &mut ending.live)) {
        Ok(done) => {
            ending.outcome = Outcome::Ok;
            ending.document = Some(done.document);
            // The test's text first (its last interval and summary), then the log's line.
            ending.write_live();
            (shared.log)(&done.said);
        }
        Err(e) if e.is::<iperf3::server::EndedEarly>() => {
            if let Ok(early) = e.downcast::<iperf3::server::EndedEarly>() {
                // Ended by its client (`-t 0` stopped): a test like any other, as to iperf3.
                let how = if early.by_client {
                    ending.outcome = Outcome::Ok;
                    "ended by its client"
                } else {
                    "ended with an error"
                };
                (shared.log)(&format!("{peer}: iperf3 test {how}: {}", early.why));
                ending.document = Some(early.document);
            }
        }
        Err(e) if e.is::<iperf3::server::LoginRefused>() => {
            ending.outcome = Outcome::NotATest;
            (shared.log)(&format!("{peer}: iperf3 client refused: {e:#}"));
        }
        Err(e) => {
            (shared.log)(&format!("{peer}: iperf3 test ended with an error: {e:#}"));
            ending.document = Some(serde_json::json!({ "error": format!("{e:#}") }));
        }
    }
}

/// One test under way, counted while it lives (its `Ending`, declared after it and so dropped
/// first, has written what it counted by then).
struct Running<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Running<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Running<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        Running(count)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
