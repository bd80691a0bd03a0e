//! iperf3's `-V` lines that scripts read from its text: `Time:` at the start, and after the
//! summary `CPU Utilization: local/sender ...` and the congestion controls
//! (`snd_tcp_congestion`, `rcv_tcp_congestion`), in iperf3's format (`iperf_api.c`), from the
//! figures of the same test's `-J` document (`json::end`).

use super::json;
use crate::traffic::result::TestResult;
use crate::traffic::spec::{Direction, Protocol};
use serde_json::Value;

/// `Time: Wed, 02 Dec 2026 15:17:45 GMT` for a moment in Unix seconds.
pub fn time_line(unix_s: f64) -> String {
    format!(
        "Time: {}",
        json::timestamp(unix_s)["time"].as_str().unwrap_or_default()
    )
}

/// The lines iperf3's `-V` prints after the summary rows: each end's CPU, then (TCP) the
/// sender's and receiver's congestion controls where known.
pub fn end_lines(result: &TestResult) -> String {
    let end = json::end(result);
    let cpu = &end["cpu_utilization_percent"];
    let f = |k: &str| cpu[k].as_f64().unwrap_or(0.0);
    // The client's role names its side, as iperf3's: local/sender when it sends.
    let (local, remote) = match result.spec.direction {
        Direction::Reverse => ("receiver", "sender"),
        _ => ("sender", "receiver"),
    };
    let mut out = format!(
        "CPU Utilization: local/{local} {:.1}% ({:.1}%u/{:.1}%s), remote/{remote} {:.1}% \
         ({:.1}%u/{:.1}%s)\n",
        f("host_total"),
        f("host_user"),
        f("host_system"),
        f("remote_total"),
        f("remote_user"),
        f("remote_system"),
    );
    if result.spec.protocol == Protocol::Tcp {
        for (key, name) in [
            ("sender_tcp_congestion", "snd_tcp_congestion"),
            ("receiver_tcp_congestion", "rcv_tcp_congestion"),
        ] {
            if let Some(Value::String(cc)) = end.get(key) {
                out.push_str(&format!("{name} {cc}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_line_is_iperf3s() {
        assert_eq!(time_line(0.0), "Time: Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
