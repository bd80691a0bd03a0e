//! A test the command line's first interrupt ended early, in iperf3's `-J` document.

use crate::traffic::result::interrupted::Interrupted;
use serde_json::{Map, Value, json};

/// Writes the test as iperf3 3.21 writes one interrupted by a signal (exit status 0): the time
/// asked and an error, so a reader that tests for the key does not take it for a whole test
/// (netsweep's figures are whole, for the time that ran).
pub(super) fn mark(top: &mut Map<String, Value>, cut: &Interrupted) {
    if let Some(ts) = top
        .get_mut("start")
        .and_then(|s| s.get_mut("test_start"))
        .and_then(Value::as_object_mut)
    {
        ts.insert("duration".into(), json!(cut.asked_s.round() as u64));
    }
    top.insert(
        "error".into(),
        json!(
            "interrupt - the client has terminated (the figures cover the test until the end \
             of the interval running)"
        ),
    );
}
