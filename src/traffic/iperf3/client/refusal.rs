//! An iperf3 server's states read in order, and its refusals in the user's words (error codes,
//! a login refused by 3.12's 4-byte code or by 3.21's hang-up, limits of servers before 3.13).

use super::*;

/// Reads the next state, turning ACCESS_DENIED and SERVER_ERROR into the user's words.
pub(super) fn next_state(
    ctrl: &mut TcpStream,
    server: SocketAddr,
    deadline: Instant,
) -> Result<State, TestError> {
    let state = control::read_state(ctrl, deadline).map_err(|e| control_error(server, e))?;
    match state {
        State::AccessDenied => Err(TestError::new(format!(
            "{server}: iperf3 server busy (it serves one test at a time): the server is busy \
             running a test. try again later, or run `netsweep server` there, which serves \
             several"
        ))),
        State::ServerError => {
            let (code, errno) = control::read_server_error(ctrl, Instant::now() + STEP_DEADLINE)
                .map_err(|e| control_error(server, e))?;
            let os = match errno {
                Some(errno) if errno > 0 => {
                    format!(" ({})", std::io::Error::from_raw_os_error(errno))
                }
                _ => String::new(),
            };
            Err(TestError::new(format!(
                "{server}: the iperf3 server refused: {}{os}",
                wire::error_text(code)
            )))
        }
        s => Ok(s),
    }
}

pub(super) fn expect(
    ctrl: &mut TcpStream,
    server: SocketAddr,
    want: State,
    deadline: Instant,
) -> Result<(), TestError> {
    match next_state(ctrl, server, deadline)? {
        s if s == want => Ok(()),
        other => Err(TestError::new(format!(
            "{server}: the iperf3 server {} where {want} was due",
            other.as_peer_act()
        ))),
    }
}

/// What a refusal right after the parameters means when they carried credentials: iperf3's
/// error 142 names no cause, and 3.21 refuses a login by hanging up without a word.
pub(super) fn refused_after_params(e: TestError, auth: Option<&ClientAuth>) -> TestError {
    let Some(auth) = auth else {
        return refused_silently(e);
    };
    let causes = format!(
        "a wrong user name or password, clocks further apart than the server's \
         --time-skew-threshold (10 s by default), or the other padding (this client used {}; {})",
        auth.padding.words(),
        match auth.padding {
            Padding::Oaep => {
                "iperf3 servers before 3.17, and later ones run with --use-pkcs1-padding, need \
                 --use-pkcs1-padding here"
            }
            Padding::Pkcs1 => "iperf3 servers from 3.17 expect OAEP unless run with it",
        }
    );
    let m = &e.message;
    if m.contains(&format!("(iperf3 error {})", wire::code::AUTH_TEST)) {
        let server = m.split(": ").next().unwrap_or_default();
        TestError::new(format!(
            "{server}: the iperf3 server refused the login of user {:?} (iperf3 error {}): {causes}; \
             the server's log may say which",
            auth.user,
            wire::code::AUTH_TEST
        ))
    } else if m.ends_with("closed the control connection") {
        TestError::new(format!(
            "{m} after reading the parameters, without a word. They carried credentials for user \
             {:?}, and iperf3 3.21 hangs up so when it refuses a login: the login was probably \
             refused ({causes}); it may also be one of the server's limits. The server's log \
             may name the cause",
            auth.user
        ))
    } else {
        e
    }
}

/// An iperf3 server that hangs up between the parameters and the start refused the test; before
/// 3.13 servers do so without a code for their own limits.
pub(super) fn refused_silently(e: TestError) -> TestError {
    if e.message.ends_with("closed the control connection") {
        TestError::new(format!(
            "{}, after reading the parameters: it refused the test without saying why (iperf3 \
             servers before 3.13 do so for their limits, such as --server-bitrate-limit; their \
             log names it)",
            e.message
        ))
    } else {
        e
    }
}

pub(super) fn control_error(server: SocketAddr, e: ControlError) -> TestError {
    TestError::new(match e {
        ControlError::Io(crate::traffic::protocol::ProtocolError::Closed) => {
            format!("{server}: the iperf3 server closed the control connection")
        }
        e => format!("{server}: iperf3 control connection: {e}"),
    })
}
