//! netsweep's client on 127.0.0.1 as a user runs it: its `-J` document, and one test against
//! Debian's `iperf3 -s -1 -J` with that server's own document. Traffic tests share two cores,
//! so they take `serial()` first.

use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// One traffic test at a time in this test binary.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `netsweep -c 127.0.0.1 -p PORT -J ARGS`: its document, which must hold no error.
pub fn netsweep_json(port: u16, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-J"])
        .args(args)
        .output()
        .expect("netsweep -c");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && doc.get("error").is_none(),
        "{args:?}: {doc:#}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    doc
}

/// One test (`netsweep -c ... ARGS`) against `iperf3 -s -1 -J` on a free loopback port:
/// netsweep's document and the iperf3 server's.
pub fn against_iperf3(args: &[&str]) -> (Value, Value) {
    let port = super::free_port();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-J", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    super::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("an address"));
    let ours = netsweep_json(port, args);
    super::wait_bounded(&mut server, Duration::from_secs(20), "iperf3 -s -1");
    let out = server.wait_with_output().expect("iperf3's output");
    let theirs = serde_json::from_slice(&out.stdout).expect("iperf3 -s -J's document");
    (ours, theirs)
}
