//! `netsweep server` serving unmodified iperf3 clients (3.1 to 3.21) beside its own.
//!
//! The server tells the two apart by a connection's first bytes (an iperf3 cookie is lowercase
//! letters and digits; netsweep's preambles start with capitals). Everything the own server
//! promises holds for iperf3 clients: several tests at once up to `--max-tests` (over it an
//! iperf3 client gets ACCESS_DENIED at once), limits refused with SERVER_ERROR codes iperf3
//! clients print in words, data connections accepted only with the test's cookie and from the
//! control peer's address, UDP streams only from that address, and a client that dies or stalls
//! frees its slot within seconds.
//!
//! A test's slot (`traffic::admission`) is held until its results are exchanged and its data
//! sockets closed, so whatever a test holds (streams, the client's results document, read
//! under a cap that follows the stream count and within `STAGE_DEADLINE`) is bounded by
//! `--max-tests`. A UDP stream belongs to the first sender from the control peer's address
//! that says hello for it (the socket is then connected to that address and port); a further
//! hello from another port of that address while the test runs means someone else raced the
//! client for a stream, and the test is ended rather than run with a stranger.
//!
//! iperf3 clients end the test themselves (TEST_END), so the server's streams run open-ended
//! until then, and the figures it reports run to that moment.

use super::control::{self, ControlError};
use super::login::ServerAuth;
use super::wire::{self, Cookie, Params, Refusal, Results, State, code};
use crate::traffic::admission::{self, Admission, Expecting, STAGE_DEADLINE, Slot, StreamClock};
use crate::traffic::bitrate_limit::RateWatch;
use crate::traffic::engine::{Datagrams, EngineEvent, StreamSocket};
use crate::traffic::session::{self, Finished, Wire};
use crate::traffic::spec::{Direction, Flow, Protocol, ServerLimits, TestSpec};
use socket2::{Domain, SockAddr, Socket, Type};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

mod document;
mod ending;
mod intervals;
mod live;
mod spec;
pub use document::{Ends, own_document};
use ending::*;
pub use live::{LiveReport, LiveSink, LiveTest};
#[cfg(test)]
use spec::duration_code;
pub use spec::spec_for;

/// How long past its asked time (and omit) a test may run before the server ends it: an
/// iperf3 client says TEST_END within a round trip of its timer.
const END_GRACE: Duration = Duration::from_secs(10);
/// The client's results document: this much, plus `RESULTS_PER_STREAM` per stream (iperf3
/// clients send about 300 bytes per stream), and never more than `wire::MAX_RESULTS_BYTES`.
const RESULTS_BASE: u32 = 64 << 10;
const RESULTS_PER_STREAM: u32 = 4 << 10;
/// How long a sender of stray connect datagrams stays known (and can take no stream).
const STRAY_MEMORY: Duration = Duration::from_secs(60);
/// Most stray senders remembered.
const MAX_STRAYS: usize = 4096;
/// iperf3's default block sizes, for clients that send none.
const TCP_DEFAULT_LEN: u32 = 128 << 10;
const UDP_DEFAULT_LEN: u32 = 1460;

/// A data connection and its place in the server's accept order (the order the client opened
/// its streams in: iperf3's data connections carry no stream number).
pub type Arrival = (u64, TcpStream);

/// Where the tests waiting for their streams are found by the connections that bring them.
#[derive(Default)]
pub struct Hub {
    data: Mutex<HashMap<Cookie, Sender<Arrival>>>,
    /// UDP tests, oldest first, from CREATE_STREAMS to their end.
    udp: Mutex<Vec<UdpTest>>,
    /// Senders of connect datagrams no test was waiting for, and when they last sent one: a
    /// sprayer is known before a test starts and never takes its streams.
    strays: Mutex<HashMap<SocketAddr, Instant>>,
    /// Where connect datagrams arrive, one per port served (`bind_udp`); a UDP test on a port
    /// without one is refused.
    udp_addrs: Mutex<Vec<SocketAddr>>,
}

impl Hub {
    /// The test a data connection with `cookie` belongs to, if one waits for it.
    pub fn data_channel(&self, cookie: &Cookie) -> Option<Sender<Arrival>> {
        self.data.lock().ok()?.get(cookie).cloned()
    }

    /// Hands a UDP connect datagram from `from` to the oldest test of that peer still waiting
    /// for streams. Returns whether one took it. A hello from an address that already has a
    /// stream is a repeat, and one from a known stray (a sender heard when no test of its
    /// address waited) is ignored; one from a new port of a peer whose tests have all their
    /// streams contests them: someone else raced the client, and those tests are ended.
    pub fn udp_connect(&self, from: SocketAddr) -> bool {
        let Ok(mut tests) = self.udp.lock() else {
            return false;
        };
        let ip = from.ip().to_canonical();
        let mine = |t: &&mut UdpTest| t.peer == ip;
        if tests
            .iter_mut()
            .filter(mine)
            .any(|t| t.taken.contains(&from))
        {
            return false;
        }
        if self.known_stray(from) {
            return false;
        }
        if !tests.iter_mut().any(|t| t.peer == ip) {
            self.record_stray(from);
            return false;
        }
        if let Some(t) = tests
            .iter_mut()
            .filter(mine)
            .find(|t| t.taken.len() < t.want)
            && t.tx.send(from).is_ok()
        {
            t.taken.push(from);
            return true;
        }
        for t in tests.iter_mut().filter(mine) {
            t.contested.get_or_insert(from);
        }
        false
    }

    /// Whether `from` sent a connect datagram no test waited for within `STRAY_MEMORY` (and
    /// keeps it known a while longer).
    fn known_stray(&self, from: SocketAddr) -> bool {
        let Ok(mut strays) = self.strays.lock() else {
            return false;
        };
        match strays.get_mut(&from) {
            Some(seen) if seen.elapsed() < STRAY_MEMORY => {
                *seen = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Remembers a stray sender, forgetting old ones so the table stays under `MAX_STRAYS`.
    fn record_stray(&self, from: SocketAddr) {
        let Ok(mut strays) = self.strays.lock() else {
            return;
        };
        if strays.len() >= MAX_STRAYS {
            strays.retain(|_, seen| seen.elapsed() < STRAY_MEMORY);
        }
        if strays.len() < MAX_STRAYS {
            strays.insert(from, Instant::now());
        }
    }

    /// The sender that raced the client of test `cookie` for a UDP stream, if one did.
    fn contested(&self, cookie: &Cookie) -> Option<SocketAddr> {
        self.udp
            .lock()
            .ok()?
            .iter()
            .find(|t| t.cookie == *cookie)
            .and_then(|t| t.contested)
    }

    /// Records where connect datagrams arrive, once a port's UDP socket is bound.
    pub fn add_udp_addr(&self, addr: SocketAddr) {
        if let Ok(mut a) = self.udp_addrs.lock() {
            a.push(addr);
        }
    }

    /// Where connect datagrams for `port` arrive (the address `bind_udp` bound), if anywhere.
    pub fn udp_addr(&self, port: u16) -> Option<SocketAddr> {
        self.udp_addrs
            .lock()
            .ok()
            .and_then(|a| a.iter().find(|a| a.port() == port).copied())
    }
}

/// The UDP socket on the server's port that receives iperf3's connect datagrams, with
/// SO_REUSEPORT so each stream's socket can bind the same port connected to its peer.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&SockAddr::from(addr))?;
    Ok(s.into())
}

/// A UDP test in the hub: who may say hello for its streams and who did.
struct UdpTest {
    cookie: Cookie,
    /// The control connection's peer address: hellos from elsewhere are strays.
    peer: IpAddr,
    /// Streams the test has.
    want: usize,
    /// Senders handed a stream, in order.
    taken: Vec<SocketAddr>,
    tx: Sender<SocketAddr>,
    /// A further sender from the peer's address once every stream was taken.
    contested: Option<SocketAddr>,
}

/// Whether `d` is iperf3's UDP connect datagram, as a little- or big-endian client writes it.
fn is_connect_datagram(d: &[u8]) -> bool {
    let mut swapped = wire::UDP_CONNECT_MSG;
    swapped.reverse();
    d == wire::UDP_CONNECT_MSG || d == swapped
}

/// Reads connect datagrams until `shutdown`, handing each to its test; any other datagram
/// (up to 64 bytes of it) goes to `other` (netsweep's own clients greet the same port).
pub fn dispatch_udp(
    sock: &UdpSocket,
    hub: &Hub,
    shutdown: &AtomicBool,
    other: &dyn Fn(&[u8], SocketAddr),
) {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = [0u8; 64];
    while !shutdown.load(Ordering::Relaxed) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            if is_connect_datagram(&buf[..n]) {
                hub.udp_connect(from);
            } else {
                other(&buf[..n], from);
            }
        }
    }
}

/// Removes a test's entries from the hub on drop.
struct Registration<'a> {
    hub: &'a Hub,
    cookie: Cookie,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Ok(mut d) = self.hub.data.lock() {
            d.remove(&self.cookie);
        }
        if let Ok(mut u) = self.hub.udp.lock() {
            u.retain(|t| t.cookie != self.cookie);
        }
    }
}

/// How long a client told why its running test ends has to hang up before its streams stop.
const TOLD_WAIT: Duration = Duration::from_secs(2);

/// Sends SERVER_ERROR with `code` and closes; the client prints the code in words.
fn refuse(ctrl: &mut TcpStream, r: &Refusal) -> anyhow::Error {
    use std::io::Write;
    let _ = ctrl.write_all(&wire::server_error(r.code, 0));
    anyhow::anyhow!("refused: {}", r.reason)
}

/// What `serve` needs of the server around it.
pub struct Context<'a> {
    pub limits: &'a ServerLimits,
    pub hub: &'a Hub,
    pub admission: &'a Admission,
    /// The listener's buffers: a test's data connections are born with its window.
    pub buffers: &'a crate::traffic::listener::ListenerBuffers,
    pub log: &'a dyn Fn(&str),
    /// The login iperf3 clients must pass (`--rsa-private-key-path`), if any.
    pub auth: Option<&'a ServerAuth>,
    /// The server writes JSON (`-J`): `--get-server-output` sends the test's document.
    pub json_output: bool,
    /// Makes each test's account as it goes (`netsweep -s`'s text).
    pub live: Option<&'a LiveSink>,
    /// Raised when the server stops (a signal): a running test ends at once, its client told
    /// SERVER_TERMINATE, and what it counted is kept.
    pub stopping: &'a AtomicBool,
}

/// Most bytes of results accepted from a client of a test of `streams` streams.
fn results_cap(streams: usize) -> u32 {
    let per = u32::try_from(streams)
        .unwrap_or(u32::MAX)
        .saturating_mul(RESULTS_PER_STREAM);
    RESULTS_BASE
        .saturating_add(per)
        .min(wire::MAX_RESULTS_BYTES)
}

/// Reads the client's parameters (within `STAGE_DEADLINE`) and checks them against the limits.
fn accept_params(
    ctrl: &mut TcpStream,
    ctx: &Context<'_>,
    slot: &mut Slot<'_>,
) -> Result<(TestSpec, Params, Option<SocketAddr>), Refusal> {
    let udp_addr = ctrl
        .local_addr()
        .ok()
        .and_then(|a| ctx.hub.udp_addr(a.port()));
    let doc = control::read_json(
        ctrl,
        wire::MAX_PARAMS_BYTES,
        Instant::now() + STAGE_DEADLINE,
    )
    .map_err(|e| Refusal::new(code::RECV_PARAMS, e.to_string()))?;
    // The login comes first, as in iperf3: nothing about the test is looked at before it.
    login(ctrl, ctx, doc.get("authtoken").and_then(|t| t.as_str()))?;
    let params = Params::from_json(&doc)?;
    let mut spec = spec_for(&params, ctx.limits)?;
    crate::traffic::session::server_pinning(&mut spec.affinity, ctx.limits.affinity)
        .map_err(|why| Refusal::new(code::AFFINITY, why))?;
    if spec.protocol == Protocol::Udp && udp_addr.is_none() {
        return Err(Refusal::new(
            code::UNIMPLEMENTED,
            "UDP is unavailable: the UDP port could not be bound",
        ));
    }
    slot.reserve_streams(spec.flows().len())
        .map_err(|reason| Refusal::new(code::NUM_STREAMS, reason))?;
    Ok((spec, params, udp_addr))
}

/// Checks a client's credentials when this server asks for them (iperf3's error 142 when they
/// fail; the log says why, the client only learns that they did).
fn login(ctrl: &TcpStream, ctx: &Context<'_>, token: Option<&str>) -> Result<(), Refusal> {
    let peer = ctrl
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    match (ctx.auth, token) {
        (Some(auth), token) => match auth.check(token, super::login::unix_now()) {
            Ok(user) => {
                (ctx.log)(&format!("{peer}: iperf3 login of user {user:?} accepted"));
                Ok(())
            }
            Err(e) => Err(Refusal::new(code::AUTH_TEST, format!("login refused: {e}"))),
        },
        (None, Some(_)) => {
            (ctx.log)(&format!(
                "{peer}: the iperf3 client sent credentials; this server checks none (no \
                 --authorized-users-path)"
            ));
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

/// A test an iperf3 client ran to its end: its JSON document, and the log's line of it (for the
/// caller to log once the test's own account is written).
pub struct Served {
    pub document: serde_json::Value,
    pub said: String,
}

/// Serves one iperf3 client whose cookie was read; the test when it ran (`LoginRefused` when
/// it did not log in). `slot` holds the test's place among `--max-tests` until its results are
/// exchanged and its data sockets closed.
pub fn serve(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    cookie: Cookie,
    ctx: &Context<'_>,
    (mut slot, live): (Slot<'_>, &mut Option<LiveTest>),
) -> anyhow::Result<Served> {
    let hub = ctx.hub;
    let local = ctrl.local_addr().ok();
    let _ = ctrl.set_nodelay(true);
    control::write_state(&mut ctrl, State::ParamExchange)?;
    let (spec, params, udp_addr) = match accept_params(&mut ctrl, ctx, &mut slot) {
        Ok(a) => a,
        Err(r) => {
            // The slot is free before the client hears why: it may try again at once.
            drop(slot);
            let e = refuse(&mut ctrl, &r);
            if r.code == code::AUTH_TEST {
                return Err(LoginRefused(e.to_string()).into());
            }
            return Err(e);
        }
    };
    let flows = spec.flows();
    slot.describe(format!("{}, set up", test_words(&spec, &params)));
    let (tx, rx) = mpsc::channel();
    let registration = Registration { hub, cookie };
    let (udp_tx, udp_rx) = mpsc::channel();
    let mut expecting = None;
    if spec.protocol == Protocol::Tcp {
        expecting = Some(Expecting::new(ctx.admission, peer.ip(), flows.len()));
        if let Ok(mut d) = hub.data.lock() {
            d.insert(cookie, tx);
        }
    } else if let Ok(mut u) = hub.udp.lock() {
        u.push(UdpTest {
            cookie,
            peer: peer.ip().to_canonical(),
            want: flows.len(),
            taken: Vec::new(),
            tx: udp_tx,
            contested: None,
        });
    }
    // The data connections are born with the test's buffers (or the kernel's defaults).
    let lease = ctx
        .buffers
        .lease_for(&spec, |why| (ctx.log)(&format!("{peer}: {why}")));
    control::write_state(&mut ctrl, State::CreateStreams)?;
    let rtt = crate::platform::sockopt::tcp_info(&ctrl)
        .map(|i| Duration::from_micros(u64::from(i.rtt_us)))
        .unwrap_or(Duration::from_millis(100));
    let mut clock = StreamClock::new(flows.len(), rtt);
    let setup = Setup {
        ctrl: &ctrl,
        spec: &spec,
        flows: &flows,
    };
    let sockets = match spec.protocol {
        Protocol::Tcp => collect_tcp(&rx, &setup, peer.ip(), &mut clock, expecting.as_mut()),
        Protocol::Udp => collect_udp(&udp_rx, &setup, udp_addr, &mut clock),
    };
    drop(expecting);
    drop(lease);
    // TCP data connections are all in; a UDP test stays in the hub until it ends, so a
    // stranger's hello for its streams is noticed.
    if let Ok(mut d) = hub.data.lock() {
        d.remove(&cookie);
    }
    let sockets = sockets
        .map_err(|e| refuse(&mut ctrl, &Refusal::new(code::STREAM_ACCEPT, e.to_string())))?;
    let held: Vec<StreamSocket> = sockets
        .iter()
        .filter_map(|(_, _, s)| s.try_clone().ok())
        .collect();
    control::write_state(&mut ctrl, State::TestStart)?;
    control::write_state(&mut ctrl, State::TestRunning)?;
    let start = Instant::now();
    slot.describe(test_words(&spec, &params));
    (ctx.log)(&format!(
        "{peer}: iperf3 client{}: {}",
        params
            .client_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        test_words(&spec, &params)
    ));
    let wire = Wire {
        datagrams: Datagrams::Iperf3 {
            seq64: params.udp_counters_64bit,
        },
        open_ended: true,
        drain_senders: false,
        eager_receivers: true,
        receivers_start_at_data: None,
    };
    let who = Ends::of(peer, local, &sockets, &spec)
        .with_cookie(format!("{cookie:?}"))
        .with_control(&ctrl);
    let streams = session::start_streams(&spec, false, sockets, (start, start), wire)?;
    *live = ctx.live.map(|s| LiveTest::start(s, &who, (&spec, start)));
    let deadline = Deadline::of(start, &spec, &params);
    let mut finished = Finished::default();
    let ends = (&deadline, ctx.limits.rcv_timeout, ctx.stopping);
    let watch = ctx
        .limits
        .bitrate_limit
        .map(|l| RateWatch::new(l, spec.interval, flows.len()));
    let ended = wait_for_end(
        &mut ctrl,
        &streams,
        ends,
        (&mut finished, watch, live.as_mut()),
        || hub.contested(&cookie),
    );
    let stopped = start.elapsed();
    // Told before the streams stop. A client over this server's limits (rate, time) is its
    // own and keeps sending: its streams run on until it hangs up (a moment), so it reads the
    // reason instead of meeting a reset on its next write. A raced stream stops at once.
    if let Err(Ended {
        why,
        code: Some(code),
    }) = &ended
    {
        let _ = refuse(&mut ctrl, &Refusal::new(*code, why.clone()));
        if *code == code::TOTAL_RATE || *code == deadline.code {
            control::wait_hung_up(&mut ctrl, TOLD_WAIT);
        }
    }
    if ended.as_ref().is_err_and(|e| e.why == SERVER_TERMINATED) {
        // As iperf3's server on SIGINT: the client hears SERVER_TERMINATE and prints what it
        // has ("the server has terminated").
        let _ = control::write_state(&mut ctrl, State::ServerTerminate);
    }
    streams.stop_and_collect(&mut finished);
    drop(registration);
    finished.reports.sort_by_key(|r| r.stream);
    finished.cpu.wall_s = stopped.as_secs_f64();
    if let Err(e) = ended {
        // What it counted is not lost with the test: a client ends a `-t 0` test so. The
        // document has this end's figures and the error, as iperf3's server writes it.
        let ours = super::report::results(&spec, &finished, Some(stopped));
        let Some(counted) = counted_words(&spec, &ours) else {
            anyhow::bail!("{}", e.why);
        };
        let why = format!(
            "{} after {:.1} s; this end counted {counted}",
            e.why,
            stopped.as_secs_f64()
        );
        let mut document = own_document(&who, &spec, &finished, Some(stopped));
        // iperf3's words where iperf3's server has them (scripts look for them); the log has
        // what this end counted.
        document["error"] = serde_json::json!(iperf3_words(&e.why).unwrap_or(&why));
        return Err(EndedEarly {
            why,
            document,
            by_client: e.why == CLIENT_TERMINATED,
        }
        .into());
    }
    control::write_state(&mut ctrl, State::ExchangeResults)?;
    let cap = results_cap(flows.len());
    let theirs =
        control::read_json(&mut ctrl, cap, Instant::now() + STAGE_DEADLINE).map_err(|e| {
            let _ = refuse(&mut ctrl, &Refusal::new(code::RECV_RESULTS, e.to_string()));
            anyhow::anyhow!(
                "the client's results (at most {cap} bytes within {} s): {e}",
                STAGE_DEADLINE.as_secs()
            )
        })?;
    let theirs =
        Results::from_json(&theirs).map_err(|e| anyhow::anyhow!("the client's results: {e}"))?;
    let mut ours = super::report::results(&spec, &finished, Some(stopped));
    // As iperf3's server: the congestion control its first TCP stream used, asked or not
    // (the client's -J shows it as receiver_tcp_congestion).
    if ours.congestion_used.is_none() {
        ours.congestion_used = held.iter().find_map(|s| match s {
            StreamSocket::Tcp(t) => crate::platform::sockopt::congestion(t),
            StreamSocket::Udp(_) => None,
        });
    }
    let intervals = intervals::intervals(&spec, &finished, stopped);
    let document = document::document(&who, (&spec, &params), (&ours, &theirs), &intervals);
    let mut doc = ours.to_json();
    if let Some(m) = doc.as_object_mut() {
        // So a netsweep client names its far end truly; iperf3 ignores the key.
        m.insert(
            super::wire::SERVER_SOFTWARE.into(),
            serde_json::Value::String(super::wire::own_software()),
        );
        // Which receive mode its receivers ran, when it had any: a netsweep client says so.
        let mut receivers = finished
            .reports
            .iter()
            .filter(|r| r.role == crate::traffic::measure::Role::Receiver)
            .peekable();
        if receivers.peek().is_some() {
            let skipped = receivers.all(|r| r.skipped_rx_copy);
            m.insert(
                super::wire::SKIPPED_RX_COPY.into(),
                serde_json::Value::Bool(skipped),
            );
        }
        if params.get_server_output && ctx.json_output {
            // iperf3's --get-server-output from a server that writes JSON: its document.
            m.insert("server_output_json".into(), document.clone());
        } else if params.get_server_output {
            // iperf3's --get-server-output: the server's own account, as text.
            m.insert(
                "server_output_text".into(),
                serde_json::Value::String(server_output(
                    &document,
                    (peer, &spec),
                    (&ours, &theirs),
                )),
            );
        }
    }
    control::write_json(&mut ctrl, &doc)?;
    control::write_state(&mut ctrl, State::DisplayResults)?;
    // IPERF_DONE, or the client hangs up: either ends the test.
    let _ = control::read_state(&mut ctrl, Instant::now() + STAGE_DEADLINE);
    drop(held);
    drop(ctrl);
    // Only now is everything the test held released: the slot goes last.
    drop(slot);
    let said = summary_line(peer, &spec, &ours, &theirs);
    Ok(Served { document, said })
}

/// A test that ended before the client's results were exchanged, after its streams had
/// counted something: the client said CLIENT_TERMINATE (`by_client`: iperf3's `-t 0` stopped,
/// its client interrupted; a test like any other to iperf3's `-1`), or went away, or broke a
/// limit. `document`: this end's figures and the error.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub struct EndedEarly {
    pub why: String,
    pub document: serde_json::Value,
    pub by_client: bool,
}

/// A client refused at its login: no test of this server's (iperf3's `-1` waits on for the
/// next client).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LoginRefused(String);

/// What the collectors of a test's streams check them against.
struct Setup<'a> {
    /// The control connection: when it closes, setup ends at once.
    ctrl: &'a TcpStream,
    spec: &'a TestSpec,
    flows: &'a [Flow],
}

impl Setup<'_> {
    /// Why setup ends early or late, if it does.
    fn gave_up(&self, clock: &StreamClock, got: usize, what: &str) -> Option<String> {
        admission::setup_gave_up(self.ctrl, clock, got, self.flows.len(), what)
    }
}

/// Waits for every TCP data connection (with the cookie, from the control peer) and numbers
/// them in the order they were accepted: the threads that read their cookies hand them over in
/// any order, and a stream taken for another (a receiver for a sender with `--bidir`) would
/// leave both ends waiting for data.
fn collect_tcp(
    rx: &Receiver<Arrival>,
    setup: &Setup<'_>,
    peer_ip: IpAddr,
    clock: &mut StreamClock,
    expecting: Option<&mut Expecting<'_>>,
) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
    let flows = setup.flows;
    let mut got: Vec<Arrival> = Vec::with_capacity(flows.len());
    let want = (setup.ctrl, peer_ip, flows.len());
    admission::collect_connections(rx, want, clock, expecting, |arrival, sock| {
        session::prepare_tcp(&sock, setup.spec)?;
        got.push((arrival, sock));
        Ok(true)
    })?;
    got.sort_by_key(|(arrival, _)| *arrival);
    Ok(got
        .into_iter()
        .zip(flows)
        .enumerate()
        .map(|(i, ((_, sock), flow))| (i as u16, *flow, StreamSocket::Tcp(sock)))
        .collect())
}

/// Takes one connect datagram per stream from the hub, binds a socket on the server's port
/// connected to its sender (so only that address and port reach the stream), and answers it.
fn collect_udp(
    rx: &Receiver<SocketAddr>,
    setup: &Setup<'_>,
    bind_to: Option<SocketAddr>,
    clock: &mut StreamClock,
) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
    let bind_to = bind_to.ok_or_else(|| anyhow::anyhow!("no UDP port"))?;
    let flows = setup.flows;
    let mut out = Vec::with_capacity(flows.len());
    while out.len() < flows.len() {
        if let Some(why) = setup.gave_up(clock, out.len(), "UDP streams") {
            anyhow::bail!(why);
        }
        let from = match rx.recv_timeout(clock.wait(Duration::from_millis(100))) {
            Ok(a) => a,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the server is stopping"),
        };
        let i = out.len();
        let sock = bind_udp(bind_to)?;
        let end = session::UdpEnd::iperf3(flows[i] == Flow::ClientToServer);
        session::prepare_udp(&sock, setup.spec, end)?;
        sock.connect(from)?;
        sock.send(&wire::UDP_CONNECT_REPLY)?;
        clock.progressed();
        out.push((i as u16, flows[i], StreamSocket::Udp(sock)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duration_code_suits_the_client_version() {
        assert_eq!(duration_code(Some("3.12")), code::DURATION);
        assert_eq!(duration_code(Some("3.13")), code::MAX_SERVER_DURATION);
        assert_eq!(duration_code(Some("3.21+")), code::MAX_SERVER_DURATION);
        assert_eq!(
            duration_code(Some("netsweep 0.1.0")),
            code::MAX_SERVER_DURATION
        );
        assert_eq!(duration_code(None), code::DURATION);
        // The end at the server's longest: 160 from 3.20, "the server has terminated" before.
        use spec::expired_code;
        assert_eq!(expired_code(Some("3.19")), code::SERVER_TERM);
        assert_eq!(expired_code(Some("3.12")), code::SERVER_TERM);
        assert_eq!(expired_code(Some("3.20")), code::SERVER_DURATION_EXPIRED);
        assert_eq!(expired_code(Some("3.21+")), code::SERVER_DURATION_EXPIRED);
        assert_eq!(
            expired_code(Some("netsweep 0.1.0")),
            code::SERVER_DURATION_EXPIRED
        );
        assert_eq!(expired_code(None), code::SERVER_TERM);
    }

    /// `-N` and `--repeating-payload` reach this end's data sockets and senders (under `-R`
    /// they are the ones that send); `--sctp` is refused by name.
    #[test]
    fn no_delay_and_the_repeating_payload_reach_the_servers_senders() {
        let m = serde_json::json!({
            "tcp": true, "time": 1, "parallel": 1, "reverse": true, "nodelay": true,
            "repeating_payload": 1
        });
        let p = Params::from_json(m.as_object().unwrap()).unwrap();
        let spec = spec_for(&p, &ServerLimits::default()).unwrap();
        assert!(spec.no_delay && spec.repeating_payload, "{spec:?}");
        let plain = serde_json::json!({"tcp": true, "time": 1, "parallel": 1});
        let p = Params::from_json(plain.as_object().unwrap()).unwrap();
        let spec = spec_for(&p, &ServerLimits::default()).unwrap();
        assert!(!spec.no_delay && !spec.repeating_payload);
        let sctp = serde_json::json!({"sctp": true, "time": 1, "parallel": 1});
        let r = Params::from_json(sctp.as_object().unwrap()).unwrap_err();
        assert!(r.reason.contains("asked for --sctp"), "{}", r.reason);
        assert_eq!(r.code, code::UNIMPLEMENTED);
    }

    #[test]
    fn parameters_become_a_test_within_the_limits() {
        let limits = ServerLimits {
            max_duration: Duration::from_secs(60),
            max_streams: 8,
            max_rate_bps: 1e9,
            ..ServerLimits::default()
        };
        let p = Params {
            udp: true,
            time_s: 10,
            omit_s: 2,
            parallel: 4,
            bidirectional: true,
            bandwidth_bps: 100_000_000,
            len: Some(1400),
            ..Params::default()
        };
        let spec = spec_for(&p, &limits).unwrap();
        assert_eq!(spec.direction, Direction::Bidir);
        assert_eq!(spec.flows().len(), 8);
        // iperf3's bandwidth is per stream; netsweep's rate is per direction.
        assert_eq!(spec.bitrate_bps, 400e6);
        assert_eq!(spec.duration, Duration::from_secs(10) + END_GRACE);
        let refuse = |p: Params| spec_for(&p, &limits).unwrap_err().code;
        assert_eq!(
            refuse(Params {
                time_s: 70,
                ..p.clone()
            }),
            code::DURATION
        );
        assert_eq!(
            refuse(Params {
                parallel: 9,
                ..p.clone()
            }),
            code::NUM_STREAMS
        );
        assert_eq!(
            refuse(Params {
                bandwidth_bps: 300_000_000,
                ..p.clone()
            }),
            code::TOTAL_RATE
        );
        assert_eq!(
            refuse(Params {
                bandwidth_bps: 0,
                ..p.clone()
            }),
            code::TOTAL_RATE
        );
        // -n with -R: the server sends until the client has its count and says TEST_END.
        let reverse_count = spec_for(
            &Params {
                reverse: true,
                bidirectional: false,
                time_s: 0,
                bytes: 1 << 20,
                ..p.clone()
            },
            &limits,
        )
        .expect("-n with -R is served");
        assert_eq!(reverse_count.direction, Direction::Reverse);
        // Regression: with many streams, a count's grid of the longest test accepted held more
        // interval reports than --max-intervals, and -P 64 -n was refused (code 37). The grid
        // is as long as the reports fit.
        for (parallel, bidirectional) in [(64, false), (128, true)] {
            let many = ServerLimits {
                max_streams: 128,
                max_rate_bps: 0.0,
                ..ServerLimits::default()
            };
            let counted = spec_for(
                &Params {
                    parallel,
                    bidirectional,
                    time_s: 0,
                    bytes: 1 << 30,
                    bandwidth_bps: 0,
                    ..p.clone()
                },
                &many,
            )
            .expect("a count with many streams is served");
            assert!(counted.interval_records() <= many.max_interval_records);
            assert!(counted.duration >= Duration::from_secs(700), "{counted:?}");
        }
        assert_eq!(
            refuse(Params {
                mptcp: true,
                ..p.clone()
            }),
            code::UNIMPLEMENTED
        );
        let options = spec_for(
            &Params {
                udp: false,
                len: Some(128 << 10),
                tos: 0xb8,
                fqrate_bps: 100_000_000,
                ..p.clone()
            },
            &limits,
        )
        .expect("TOS and fq rate are honoured");
        assert_eq!(options.tos, Some(0xb8));
        assert_eq!(options.fq_rate_bps, Some(100_000_000));
        // -t 0: until the client ends it, within the longest test this server serves.
        let unlimited = spec_for(&Params { time_s: 0, ..p }, &limits).expect("-t 0 is served");
        assert_eq!(unlimited.total_time(), limits.max_duration + END_GRACE);
    }

    /// The server's `-i` sets an iperf3 client's grid (the client does not send its own);
    /// `-i 0` is one interval over the whole test, and a count's grid still fits the reports.
    #[test]
    fn the_servers_interval_is_an_iperf3_clients_grid() {
        let p = Params {
            time_s: 3,
            parallel: 2,
            ..Params::default()
        };
        let with = |interval: Duration| ServerLimits {
            iperf3_interval: interval,
            ..ServerLimits::default()
        };
        let half = spec_for(&p, &with(Duration::from_millis(500))).unwrap();
        assert_eq!(half.interval, Duration::from_millis(500));
        assert!(!half.whole_test_interval);
        assert_eq!(
            half.interval_count(),
            (half.duration.as_secs_f64() / 0.5).ceil() as u64
        );
        let whole = spec_for(&p, &with(Duration::ZERO)).unwrap();
        assert!(whole.whole_test_interval);
        assert_eq!(
            (whole.interval, whole.interval_count()),
            (whole.duration, 1)
        );
        // A count at 0.1 s intervals: the grid is as long as its reports fit.
        let tight = ServerLimits {
            max_interval_records: 10_000,
            ..with(Duration::from_millis(100))
        };
        let counted = spec_for(
            &Params {
                time_s: 0,
                bytes: 1 << 30,
                ..p
            },
            &tight,
        )
        .expect("a count at short intervals is served");
        assert!(counted.interval_records() <= 10_000, "{counted:?}");
        assert!(counted.duration >= Duration::from_secs(400), "{counted:?}");
    }
}
