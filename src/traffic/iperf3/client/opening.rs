//! How a test against an iperf3 server opens: a control connection of its own, tried again
//! while the server reopens between tests, or one netsweep's greeting reached an iperf3 server
//! on; either way up to the server's PARAM_EXCHANGE.

use super::*;

/// Attempts at a control connection that the server refuses or resets (see `run_session`):
/// pauses of 0.1, 0.2, 0.4 and 0.8 s, 1.5 s in all (a loaded CI host's iperf3 3.12 reset a
/// connection made right after the last test while the three pauses to 0.4 s ran out).
const CONNECT_TRIES: u32 = 5;
/// Runs one test against an iperf3 server: its whole session, from the cookie to the results
/// exchange.
pub fn run_session(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<TestResult, TestError> {
    let server = cfg.server;
    let mut attempt = 0;
    // An iperf3 server closes and reopens its listening socket between tests, for some
    // milliseconds after it hung up on the last one: connections then are refused or reset,
    // while connecting or at the first exchange. So both are tried again shortly.
    let opened = loop {
        attempt += 1;
        let retry = attempt < CONNECT_TRIES;
        let pause = Duration::from_millis(100 << (attempt - 1));
        let ctrl = match connect_tcp(cfg, None) {
            Ok(c) => c,
            Err(e)
                if retry
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
                    ) =>
            {
                std::thread::sleep(pause);
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(TestError {
                    refused: true,
                    ..TestError::new(format!(
                        "unable to connect to server {server}: Connection refused: is {} \
                         running there?",
                        if server.port() == crate::traffic::iperf3::IPERF3_PORT {
                            "`iperf3 -s` (or `netsweep -s`)".to_string()
                        } else {
                            let p = server.port();
                            format!("`iperf3 -s -p {p}` (or `netsweep server -p {p}`)")
                        }
                    ))
                });
            }
            Err(e) => return Err(TestError::connect(server, &e)),
        };
        match open(cfg, ctrl) {
            Err(e) if retry && e.message.contains("reset by peer") => std::thread::sleep(pause),
            other => break other?,
        }
    };
    run_on(cfg, spec, stop, on_interval, opened)
}

/// Goes on as iperf3 on a control connection whose whole `cookie` went out and that the
/// server answered with PARAM_EXCHANGE `control_rtt` after it (netsweep's greeting, which an
/// iperf3 server takes as a cookie: `client::greeting`).
pub fn run_after_cookie(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    (ctrl, cookie, control_rtt): (TcpStream, [u8; wire::COOKIE_LEN], Duration),
) -> Result<TestResult, TestError> {
    let opened = Opened {
        ctrl,
        cookie: Cookie(cookie),
        control_rtt,
    };
    run_on(cfg, spec, stop, on_interval, opened)
}

/// A control connection the server asked for parameters on.
pub(super) struct Opened {
    pub(super) ctrl: TcpStream,
    pub(super) cookie: Cookie,
    pub(super) control_rtt: Duration,
}

/// Sends a cookie and waits for PARAM_EXCHANGE.
fn open(cfg: &ClientConfig, mut ctrl: TcpStream) -> Result<Opened, TestError> {
    let server = cfg.server;
    let _ = ctrl.set_nodelay(true);
    let cookie = Cookie::random();
    let t0 = Instant::now();
    ctrl.write_all(&cookie.0)
        .map_err(|e| TestError::new(format!("{server}: {e}")))?;
    expect(&mut ctrl, server, State::ParamExchange, t0 + STEP_DEADLINE)?;
    Ok(Opened {
        ctrl,
        cookie,
        control_rtt: t0.elapsed(),
    })
}
