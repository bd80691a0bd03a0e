//! The client's side of a request/response test: asks a netsweep server for it on a control
//! connection (`ClientMsg::Transactions`), opens its connections (rr: TCP connections that
//! present the test's token, or UDP sockets greeted like a UDP test's; crr: none until the
//! test, each transaction connects to the test's own port), runs one `engine` loop per
//! connection in its own thread, then reads the server's counts and merges the result.

use crate::traffic::client::{
    Answered, ClientConfig, TestError, confirm_udp, connect_tcp, greet, new_socket,
};
use crate::traffic::protocol::{
    self, ClientMsg, IO_DEADLINE, ServerMsg, Token, read_frame, write_frame,
};
use crate::traffic::rr::engine::{self, Budget, Outcome, Plan};
use crate::traffic::rr::result::RrResult;
use crate::traffic::rr::{RrMode, RrSpec};
use crate::traffic::spec::Protocol;
use socket2::{SockAddr, Type};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How long the server may take to take every connection of the test and say `Ready`.
const SETUP_DEADLINE: Duration = Duration::from_secs(15);
/// How long the client repeats its UDP hellos before it calls UDP blocked.
const UDP_HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// The connections of an rr test, opened before the start.
enum Opened {
    Tcp(Vec<TcpStream>),
    Udp(Vec<UdpSocket>),
    /// crr: where each transaction connects.
    Crr(SocketAddr),
}

/// Runs one request/response test against the netsweep server `cfg.server`; `stop` ends it
/// early (its result then covers the transactions done).
pub fn run(cfg: &ClientConfig, spec: &RrSpec, stop: &AtomicBool) -> Result<RrResult, TestError> {
    if let Some(why) = spec.invalid() {
        return Err(TestError::new(why));
    }
    let server = cfg.server;
    let mut ctrl = connect_tcp(cfg, None).map_err(|e| TestError::connect(server, &e))?;
    let _ = ctrl.set_nodelay(true);
    if let Answered::Iperf3 { .. } = greet(&mut ctrl, server).map_err(TestError::new)? {
        return Err(TestError::new(format!(
            "{server} is an iperf3 server: request/response tests need a netsweep server (run \
             `netsweep server` on that host, port {}, or in the iperf3 server's place)",
            protocol::DEFAULT_PORT
        )));
    }
    write_frame(
        &mut ctrl,
        &ClientMsg::Transactions {
            spec: spec.clone(),
            ticket: cfg.ticket.clone(),
        },
    )?;
    let (token, udp_ports, crr_port) =
        match read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE))? {
            ServerMsg::RrAccepted {
                token,
                udp_ports,
                crr_port,
            } => (token, udp_ports, crr_port),
            ServerMsg::Refused { refusal } => return Err(TestError::new(refusal.to_string())),
            ServerMsg::Error { message } => {
                return Err(TestError::new(format!("server error: {message}")));
            }
            _ => {
                return Err(TestError::new(
                    "the server answered the request/response test with something else: is it \
                     a netsweep server older than --test?",
                ));
            }
        };
    let opened = open(cfg, spec, (&token, &udp_ports, crr_port), &ctrl)
        .map_err(|e| TestError::new(format!("opening the test's connections to {server}: {e}")))?;
    match read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + SETUP_DEADLINE))? {
        ServerMsg::Ready { .. } => {}
        ServerMsg::Error { message } => {
            return Err(TestError::new(format!("server error: {message}")));
        }
        _ => return Err(TestError::new("the server did not say ready")),
    }
    write_frame(&mut ctrl, &ClientMsg::Start)?;
    let start = Instant::now();
    let budget = Budget::new(spec.transactions);
    let plan = Plan {
        request_bytes: spec.request_bytes as usize,
        response_bytes: spec.response_bytes as usize,
        end: start + spec.duration,
        budget: &budget,
        stop,
        spin: spec.spin(),
    };
    let outcomes = drive(cfg, opened, spec, &plan);
    // Start to the last transaction's end (a wait abandoned after the end is no test time).
    let elapsed = outcomes
        .iter()
        .filter_map(|o| o.last_end)
        .max()
        .map_or_else(|| start.elapsed(), |end| end.duration_since(start));
    write_frame(&mut ctrl, &ClientMsg::Done)?;
    let counts = match read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE))? {
        ServerMsg::RrDone { counts } => counts,
        ServerMsg::Error { message } => {
            return Err(TestError::new(format!("server error: {message}")));
        }
        _ => return Err(TestError::new("the server did not send its counts")),
    };
    let result = RrResult::new(spec, &outcomes, elapsed, counts);
    if result.transactions == 0 {
        let why = result.errors.first().cloned().unwrap_or_default();
        return Err(TestError::new(format!("no transaction completed: {why}")));
    }
    Ok(result)
}

/// Runs every connection's loop in its own thread; returns their outcomes.
fn drive(cfg: &ClientConfig, opened: Opened, spec: &RrSpec, plan: &Plan<'_>) -> Vec<Outcome> {
    let cpu = |i: usize| spec.affinity.client.map(|c| c.for_thread(i));
    std::thread::scope(|s| {
        let handles: Vec<_> = match opened {
            Opened::Tcp(socks) => socks
                .into_iter()
                .enumerate()
                .map(|(i, sock)| spawn(s, cpu(i), move || engine::client_tcp(sock, plan)))
                .collect(),
            Opened::Udp(socks) => socks
                .into_iter()
                .enumerate()
                .map(|(i, sock)| spawn(s, cpu(i), move || engine::client_udp(&sock, plan)))
                .collect(),
            Opened::Crr(addr) => (0..usize::from(spec.concurrency))
                .map(|i| {
                    spawn(s, cpu(i), move || {
                        let connect = || -> std::io::Result<TcpStream> {
                            let sock = new_socket(cfg, Type::STREAM, socket2::Protocol::TCP, None)?;
                            sock.connect_timeout(&SockAddr::from(addr), cfg.connect_timeout)?;
                            Ok(sock.into())
                        };
                        engine::client_crr(&connect, plan)
                    })
                })
                .collect(),
        };
        let failed = |why: String| Outcome {
            error: Some(why),
            ..Outcome::default()
        };
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| failed("a connection's thread panicked".into())),
                Err(e) => failed(format!("no thread for a connection: {e}")),
            })
            .collect()
    })
}

/// A connection's thread, named for `top` and the like, pinned to `cpu` if given.
fn spawn<'s, 'e>(
    s: &'s std::thread::Scope<'s, 'e>,
    cpu: Option<usize>,
    f: impl FnOnce() -> Outcome + Send + 's,
) -> std::io::Result<std::thread::ScopedJoinHandle<'s, Outcome>> {
    std::thread::Builder::new()
        .name("rr".into())
        .spawn_scoped(s, move || {
            if let Some(cpu) = cpu
                && let Err(e) = crate::platform::sched::pin_current_thread(cpu)
            {
                return Outcome {
                    error: Some(format!("could not pin a connection to CPU {cpu}: {e}")),
                    ..Outcome::default()
                };
            }
            f()
        })
}

/// Opens the test's connections before the start.
fn open(
    cfg: &ClientConfig,
    spec: &RrSpec,
    (token, udp_ports, crr_port): (&Token, &[u16], Option<u16>),
    ctrl: &TcpStream,
) -> std::io::Result<Opened> {
    let n = usize::from(spec.concurrency);
    match (spec.mode, spec.protocol) {
        (RrMode::Crr, _) => {
            let port = crr_port.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the server named no crr port",
                )
            })?;
            Ok(Opened::Crr(SocketAddr::new(cfg.server.ip(), port)))
        }
        (RrMode::Rr, Protocol::Tcp) => {
            let mut socks = Vec::with_capacity(n);
            for i in 0..spec.concurrency {
                let mut s = connect_tcp(cfg, None)?;
                s.set_nodelay(true)?;
                s.write_all(&protocol::data_preamble(token, i))?;
                socks.push(s);
            }
            Ok(Opened::Tcp(socks))
        }
        (RrMode::Rr, Protocol::Udp) => {
            if udp_ports.len() != n {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the server sent {} UDP ports for {n} connections",
                        udp_ports.len()
                    ),
                ));
            }
            let mut socks = Vec::with_capacity(n);
            for port in udp_ports {
                let sock = new_socket(cfg, Type::DGRAM, socket2::Protocol::UDP, None)?;
                if cfg.bind.is_none() {
                    let any: SocketAddr = match cfg.server {
                        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
                        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
                    };
                    sock.bind(&SockAddr::from(any))?;
                }
                let sock: UdpSocket = sock.into();
                sock.connect(SocketAddr::new(cfg.server.ip(), *port))?;
                socks.push(sock);
            }
            let hellos: Vec<_> = (0..spec.concurrency)
                .map(|i| protocol::udp_hello(token, i))
                .collect();
            confirm_udp(&socks, &hellos, ctrl, Instant::now() + UDP_HELLO_DEADLINE)?;
            Ok(Opened::Udp(socks))
        }
    }
}
