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
    self, ClientMsg, IO_DEADLINE, ServerMsg, Token, read_frame, write_frame,
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
pub use socket::{Bind, ClientConfig, OnConnected, OnInterrupt, PeerProtocol, TestError};
pub(crate) use socket::{connect_advice, connect_tcp, new_socket, udp_socket};

mod greeting;
pub(crate) use greeting::{Answered, greet};
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
        if let Answered::Iperf3 { .. } = greet(&mut ctrl, server)? {
            return Err(format!(
                "{server} is an iperf3 server, which is asked about a test only by running it"
            ));
        }
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
        Err(e) => Admission::Unknown(e),
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
    match greet(&mut ctrl, server).map_err(TestError::new)? {
        Answered::Netsweep => {}
        // An iperf3 server asked for the parameters: the test goes on in its protocol on this
        // connection (closing it would end a `-s -1` server's one test).
        Answered::Iperf3 { cookie, rtt } => {
            if let Some(why) = iperf3_cannot(spec) {
                return Err(TestError::new(format!(
                    "{server} is an iperf3 server (it answered netsweep's greeting as iperf3's \
                     cookie): {why}"
                )));
            }
            let mut result = crate::traffic::iperf3::client::run_after_cookie(
                cfg,
                spec,
                stop,
                on_interval,
                (ctrl, cookie, rtt),
            )?;
            // On iperf3's own port an iperf3 server is no surprise.
            if cfg.peer == PeerProtocol::Netsweep {
                result.warnings.push(format!(
                    "{server} answered as an iperf3 server: the test ran with iperf3's protocol"
                ));
            }
            return Ok(result);
        }
    }
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

#[cfg(test)]
mod tests;
