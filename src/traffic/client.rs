//! `netsweep client`: runs one test against a `netsweep server` (or an iperf3 server) and
//! returns a typed `TestResult`. Interval results are handed to a callback as soon as both ends
//! have reported them; the command line, the campaign runner and the lab all call `run_test`.
//! This room dispatches by protocol (netsweep's greeting, iperf3's protocol, a count) and holds
//! the shared toolkit (`socket`, `merge`); `netsweep` is the session with a netsweep server.
//!
//! Faults end the test with a `TestError` that carries whatever was measured until then.

use crate::traffic::engine::{EngineEvent, StreamSocket};
use crate::traffic::latency::prober::{ProbeRecord, Prober};
use crate::traffic::latency::summary::summarize;
use crate::traffic::measure::{Role, StreamReport};
use crate::traffic::protocol::spawn_reader;
use crate::traffic::protocol::{
    self, ClientMsg, IO_DEADLINE, ServerMsg, Token, read_exact_by, read_frame, write_frame,
};
use crate::traffic::result::{self, CpuResult, Interval, StartInfo, StreamPair, TestResult};
use crate::traffic::session::{self, Finished};
use crate::traffic::spec::{Flow, Protocol, TestSpec};
use socket2::{SockAddr, Type};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant, SystemTime};

pub mod merge;
pub mod socket;
pub(crate) use merge::LiveMerger;
pub(crate) use merge::finish;
pub use socket::{Bind, ClientConfig, DETECT_WAIT, OnConnected, PeerProtocol, TestError};
pub(crate) use socket::{connect_advice, connect_tcp, new_socket, udp_socket};

mod remote;

use remote::Remote;

mod assemble;
use assemble::*;

mod ending;
use ending::AutoEnd;

mod netsweep;
pub(crate) use netsweep::confirm_udp;

/// What a netsweep server says of a test it was asked about (`ClientMsg::Check`).
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    Admissible,
    /// Refused, with the server's reason.
    Refused(String),
    /// The server could not be asked (unreachable, not a netsweep server, one that predates
    /// the question): why.
    Unknown(String),
}

/// Asks the server whether it would admit a test of `spec`, without running it.
pub fn check(cfg: &ClientConfig, spec: &TestSpec) -> Admission {
    let server = cfg.server;
    let ask = || -> Result<ServerMsg, String> {
        let mut ctrl = connect_tcp(cfg, None).map_err(|e| connect_advice(server, &e))?;
        let _ = ctrl.set_nodelay(true);
        ctrl.write_all(&protocol::control_preamble())
            .map_err(|e| e.to_string())?;
        let mut pre = [0u8; 8];
        read_exact_by(&mut ctrl, &mut pre, Instant::now() + IO_DEADLINE)
            .and_then(|()| protocol::check_control_preamble(&pre, true))
            .map_err(|e| format!("not answered as a netsweep server: {e}"))?;
        write_frame(
            &mut ctrl,
            &ClientMsg::Check {
                spec: spec.clone(),
                ticket: cfg.ticket.clone(),
            },
        )
        .map_err(|e| e.to_string())?;
        read_frame::<ServerMsg>(&mut ctrl, Some(Instant::now() + IO_DEADLINE))
            .map_err(|e| format!("no answer to the question (a server older than it?): {e}"))
    };
    match ask() {
        Ok(ServerMsg::Admissible) => Admission::Admissible,
        Ok(ServerMsg::Refused { refusal }) => Admission::Refused(refusal.to_string()),
        Ok(other) => Admission::Unknown(format!("answered {other:?}")),
        Err(e) => Admission::Unknown(format!("{server}: {e}")),
    }
}

/// Runs one test. `stop` ends it early (Ctrl-C); `on_interval` sees each merged interval.
/// A TCP result carries RFC 6349's metrics as far as the path is known (`cfg.path`, else
/// measured: `result::rfc6349`).
pub fn run_test(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<TestResult, TestError> {
    let mut result = run_test_of_either_protocol(cfg, spec, stop, on_interval)?;
    if spec.protocol == crate::traffic::spec::Protocol::Tcp {
        let mut path = cfg.path.clone();
        path.ipv6 = cfg.server.is_ipv6();
        if path.mtu.is_none() {
            path.mtu = crate::platform::sockopt::route_mtu(cfg.server)
                .map(|m| (m, "route to the server".to_string()));
        }
        result.rfc6349 = crate::traffic::result::rfc6349::of(&result, &path);
    }
    Ok(result)
}

fn run_test_of_either_protocol(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<TestResult, TestError> {
    if spec.steady.is_some() && cfg.peer == PeerProtocol::Iperf3 {
        return Err(TestError::new(
            crate::traffic::iperf3::client::NO_AUTO.to_string(),
        ));
    }
    // A count (-n/-k) or an interrupt (-t 0) ends the test when the client says: iperf3's
    // protocol, which netsweep servers speak too (netsweep's own fixes the grid in advance).
    if cfg.peer == PeerProtocol::Iperf3 || spec.count.is_some() || spec.until_stopped {
        return crate::traffic::iperf3::client::run_session(cfg, spec, stop, on_interval);
    }
    spec.validate().map_err(|e| TestError::new(e.to_string()))?;
    let server = cfg.server;
    let mut ctrl = connect_tcp(cfg, None).map_err(|e| TestError::connect(server, &e))?;
    let _ = ctrl.set_nodelay(true);
    let t0 = Instant::now();
    ctrl.write_all(&protocol::control_preamble())
        .map_err(|e| TestError::new(format!("{server}: {e}")))?;
    let mut pre = [0u8; 8];
    let wait = match cfg.peer {
        PeerProtocol::Detect => DETECT_WAIT,
        _ => socket::IPERF3_PROBE_WAIT,
    };
    match read_exact_by(&mut ctrl, &mut pre, Instant::now() + wait) {
        Ok(()) => {}
        Err(protocol::ProtocolError::Timeout(_)) if cfg.peer == PeerProtocol::Netsweep => {
            return match silent_server(&mut ctrl, server, t0 + IO_DEADLINE) {
                // An iperf3 server asked for the parameters: the test goes on in its protocol
                // on this connection (closing it would end a `-s -1` server's one test).
                Silent::Iperf3 { cookie, rtt } if iperf3_cannot(spec).is_none() => {
                    let mut result = crate::traffic::iperf3::client::run_after_cookie(
                        cfg,
                        spec,
                        stop,
                        on_interval,
                        (ctrl, cookie, rtt),
                    )?;
                    result.warnings.push(format!(
                        "{server} answered as an iperf3 server (not netsweep's greeting within \
                         {}s): the test ran with iperf3's protocol (--iperf3 skips the wait)",
                        socket::IPERF3_PROBE_WAIT.as_secs()
                    ));
                    Ok(result)
                }
                Silent::Iperf3 { .. } => Err(TestError::new(format!(
                    "{server} looks like an iperf3 server (it did not answer netsweep's greeting \
                     and answered iperf3's cookie): {}",
                    iperf3_cannot(spec).unwrap_or_default()
                ))),
                Silent::Other(why) => Err(TestError::new(why)),
            };
        }
        Err(protocol::ProtocolError::Timeout(_))
            if cfg.peer == PeerProtocol::Detect && iperf3_cannot(spec).is_some() =>
        {
            return Err(TestError::new(format!(
                "{server} did not answer netsweep's greeting within {DETECT_WAIT:?}: {}",
                iperf3_cannot(spec).unwrap_or_default()
            )));
        }
        Err(protocol::ProtocolError::Timeout(_)) if cfg.peer == PeerProtocol::Detect => {
            let mut result = crate::traffic::iperf3::client::run_after_greeting(
                cfg,
                spec,
                stop,
                on_interval,
                ctrl,
                &protocol::control_preamble(),
            )?;
            result.warnings.push(format!(
                "{server} did not answer netsweep's greeting within {DETECT_WAIT:?}: the test ran \
                 with iperf3's protocol (--iperf3 skips the wait)"
            ));
            return Ok(result);
        }
        Err(e) => {
            return Err(TestError::new(format!(
                "{server} did not answer as a netsweep server: {e}"
            )));
        }
    }
    protocol::check_control_preamble(&pre, true)
        .map_err(|e| TestError::new(format!("server {server}: {e}")))?;
    if cfg.mptcp {
        // Its connections would fall back to TCP without a word: refused instead.
        return Err(TestError::new(format!(
            "-m/--mptcp: {server} is a netsweep server, which listens for plain TCP (MPTCP \
             connections to it fall back to TCP); run `iperf3 -s` there for an MPTCP test"
        )));
    }
    let control_rtt = t0.elapsed();
    netsweep::session(cfg, spec, stop, on_interval, ctrl, control_rtt)
}

/// Why `spec` cannot run against an iperf3 server, if it cannot: latency probes need a
/// netsweep server to echo them, `-t auto` one that ends a test early.
fn iperf3_cannot(spec: &TestSpec) -> Option<&'static str> {
    if spec.latency.is_some() {
        Some("an iperf3 server cannot echo latency probes (--latency needs a netsweep server)")
    } else if spec.steady.is_some() {
        Some(crate::traffic::iperf3::client::NO_AUTO)
    } else {
        None
    }
}

/// What a server that did not answer netsweep's greeting within `IPERF3_PROBE_WAIT` is.
enum Silent {
    /// An iperf3 server, which took the greeting and the rest of `cookie` as its cookie and
    /// asked for the parameters `rtt` after the rest went out.
    Iperf3 {
        cookie: [u8; crate::traffic::iperf3::wire::COOKIE_LEN],
        rtt: Duration,
    },
    /// Anything else, and why it is no netsweep server.
    Other(String),
}

/// Why a server that did not answer netsweep's greeting within `IPERF3_PROBE_WAIT` is no
/// netsweep server: the rest of an iperf3 cookie is sent, and an iperf3 server answers it
/// with a state byte (PARAM_EXCHANGE, or ACCESS_DENIED when busy); anything else waits until
/// `deadline` for the greeting, as before. (A netsweep server answers its greeting at once.)
fn silent_server(ctrl: &mut TcpStream, server: SocketAddr, deadline: Instant) -> Silent {
    use crate::traffic::iperf3::wire::{COOKIE_LEN, State};
    let greeting = protocol::control_preamble();
    let mut cookie = [b'a'; COOKIE_LEN];
    cookie[..greeting.len()].copy_from_slice(&greeting);
    cookie[COOKIE_LEN - 1] = 0;
    let not_netsweep = format!(
        "{server} did not answer as a netsweep server: no answer to its greeting within {}s",
        IO_DEADLINE.as_secs()
    );
    let t0 = Instant::now();
    if ctrl.write_all(&cookie[greeting.len()..]).is_err() {
        return Silent::Other(not_netsweep);
    }
    let mut first = [0u8; 1];
    Silent::Other(match read_exact_by(ctrl, &mut first, deadline) {
        Ok(()) if State::from_byte(first[0]) == Some(State::ParamExchange) => {
            return Silent::Iperf3 {
                cookie,
                rtt: t0.elapsed(),
            };
        }
        Ok(()) if State::from_byte(first[0]) == Some(State::AccessDenied) => format!(
            "{server} is an iperf3 server running another test (it answered iperf3's cookie \
             with ACCESS_DENIED): try again when it is done, with --iperf3"
        ),
        Ok(()) if State::from_byte(first[0]) == Some(State::ServerError) => format!(
            "{server} looks like an iperf3 server: add --iperf3 (it did not answer \
             netsweep's greeting and answered iperf3's cookie with an error)"
        ),
        Ok(()) if first[0] == greeting[0] => format!(
            "{server} answered netsweep's greeting only after {}s (a busy netsweep server?): \
             try again",
            socket::IPERF3_PROBE_WAIT.as_secs()
        ),
        Ok(()) => format!("{not_netsweep} (it answered with byte {:#04x})", first[0]),
        Err(_) => not_netsweep,
    })
}

#[cfg(test)]
mod tests;
