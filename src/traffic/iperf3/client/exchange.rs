//! The end of an iperf3 test on the client: after TEST_END, the results both ways, then
//! DISPLAY_RESULTS and IPERF_DONE, and the wait for the server to hang up.

use super::*;

/// How long the server may take from TEST_END to its results.
const RESULTS_DEADLINE: Duration = Duration::from_secs(15);

/// After TEST_END: results both ways, then DISPLAY_RESULTS and IPERF_DONE.
pub(super) fn exchange(
    ctrl: &mut TcpStream,
    server: SocketAddr,
    spec: &TestSpec,
    local: &Finished,
) -> Result<Results, TestError> {
    let deadline = Instant::now() + RESULTS_DEADLINE;
    expect(ctrl, server, State::ExchangeResults, deadline)?;
    control::write_json(
        ctrl,
        &crate::traffic::iperf3::report::results(spec, local, None).to_json(),
    )
    .map_err(|e| TestError::new(format!("{server}: {e}")))?;
    let doc = control::read_json(ctrl, wire::MAX_RESULTS_BYTES, deadline)
        .map_err(|e| control_error(server, e))?;
    let results = Results::from_json(&doc)
        .map_err(|e| TestError::new(format!("{server}: the iperf3 server's results: {e}")))?;
    expect(ctrl, server, State::DisplayResults, deadline)?;
    let _ = control::write_state(ctrl, State::IperfDone);
    // Wait for the server to hang up: until it has read IPERF_DONE it is still in this test,
    // and a next test that connects before then would be told "busy".
    let mut rest = [0u8; 64];
    let until = Instant::now() + Duration::from_secs(2);
    let _ = ctrl.set_read_timeout(Some(Duration::from_millis(100)));
    while Instant::now() < until {
        match std::io::Read::read(ctrl, &mut rest) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    Ok(results)
}
