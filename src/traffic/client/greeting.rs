//! The first exchange on a control connection: netsweep's greeting has an iperf3 cookie's
//! shape (`protocol::client_greeting`), so the server's first answer says which server it is.
//! A netsweep server answers with its preamble, an iperf3 server with PARAM_EXCHANGE (or
//! ACCESS_DENIED while it runs another test): no wait to tell them apart. Before protocol
//! version 3 a client sent the preamble alone and waited 1 s (on iperf3's port) or 3 s (on any
//! other) for an answer before it completed a cookie.

use crate::traffic::iperf3::wire::State;
use crate::traffic::protocol::{self, GREETING_LEN, IO_DEADLINE, ProtocolError, read_exact_by};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Which server answered the greeting.
#[derive(Debug)]
pub(crate) enum Answered {
    /// A netsweep server of this protocol version.
    Netsweep,
    /// An iperf3 server, which kept the greeting as the test's cookie and asked for the
    /// parameters `rtt` after it went out.
    Iperf3 {
        cookie: [u8; GREETING_LEN],
        rtt: Duration,
    },
}

/// Greets the server on `ctrl` and reads its first answer (within `IO_DEADLINE`); an answer
/// from neither kind of server, or from another version of netsweep's, is an error that says
/// what came back.
pub(crate) fn greet(ctrl: &mut TcpStream, server: SocketAddr) -> Result<Answered, String> {
    let greeting = protocol::client_greeting();
    let t0 = Instant::now();
    let deadline = t0 + IO_DEADLINE;
    ctrl.write_all(&greeting)
        .map_err(|e| format!("{server}: {e}"))?;
    let mut first = [0u8; 1];
    read_exact_by(ctrl, &mut first, deadline).map_err(|e| silent(server, &e))?;
    match first[0] {
        b if b == protocol::CONTROL_MAGIC[0] => {
            let mut pre = [b; 8];
            read_exact_by(ctrl, &mut pre[1..], deadline)
                .and_then(|()| protocol::check_control_preamble(&pre, true))
                .map_err(|e| format!("{server} did not answer as a netsweep server: {e}"))?;
            Ok(Answered::Netsweep)
        }
        b => match State::from_byte(b) {
            Some(State::ParamExchange) => Ok(Answered::Iperf3 {
                cookie: greeting,
                rtt: t0.elapsed(),
            }),
            Some(State::AccessDenied) => Err(format!(
                "{server} is an iperf3 server running another test (it answered with \
                 ACCESS_DENIED): the server is busy running a test. try again later"
            )),
            Some(State::ServerError) => Err(format!(
                "{server} is an iperf3 server that answered the greeting with an error (its \
                 own output says why)"
            )),
            _ => Err(format!(
                "{server} did not answer as a netsweep server or an iperf3 server (its first \
                 byte was {b:#04x})"
            )),
        },
    }
}

/// Why a server that sent nothing is neither kind of server.
fn silent(server: SocketAddr, e: &ProtocolError) -> String {
    match e {
        ProtocolError::Timeout(_) => format!(
            "{server} did not answer as a netsweep server: no answer to its greeting within {}s",
            IO_DEADLINE.as_secs()
        ),
        e => format!("{server} did not answer as a netsweep server: {e}"),
    }
}
