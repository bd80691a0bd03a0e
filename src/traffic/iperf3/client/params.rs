//! iperf3's test parameters for a netsweep spec (`Params`), and what iperf3's protocol cannot
//! carry, refused by name (so `run --check` and the command line refuse it too).

use crate::traffic::iperf3::wire::{self, Params};
use crate::traffic::spec::{Count, Protocol, TestSpec};
use std::time::Duration;

/// The server's output (asked for to learn its version) only for tests whose output stays
/// small: streams x seconds at most this.
const SERVER_OUTPUT_MAX_STREAM_SECONDS: u64 = 10_000;

/// Why a `duration = "auto"` test cannot run in iperf3's protocol.
pub const NO_AUTO: &str = "duration = \"auto\" (-t auto) needs a netsweep server: iperf3's \
     protocol cannot end a test when its rates are steady; give a time (-t 10)";

/// iperf3's parameters for `spec`, or why iperf3 cannot run it.
pub fn params_for(spec: &TestSpec) -> Result<Params, String> {
    // What only a netsweep server does: refused here, so `run --check` refuses it too.
    if spec.steady.is_some() {
        return Err(NO_AUTO.into());
    }
    if spec.latency.is_some() {
        return Err(
            "--latency needs a netsweep server: iperf3 servers do not echo its probes".into(),
        );
    }
    if spec.window_clamp().is_some() && spec.direction != crate::traffic::spec::Direction::Reverse {
        return Err(
            "--window-mode clamp needs a netsweep server: an iperf3 server's receivers do not \
             hold the window (with -R only this end receives, and it does)"
                .into(),
        );
    }
    let whole = |d: Duration, flag: &str| -> Result<u64, String> {
        if d.subsec_nanos() == 0 {
            Ok(d.as_secs())
        } else {
            Err(format!(
                "iperf3 takes whole seconds for {flag}, got {:.3}s",
                d.as_secs_f64()
            ))
        }
    };
    // A test with a count ends at it, one of -t 0 when the client is interrupted: the
    // duration is only this end's ceiling.
    let time_s = if spec.count.is_some() || spec.until_stopped {
        0
    } else {
        whole(spec.duration, "-t")?
    };
    let omit_s = whole(spec.omit, "-O")?;
    if time_s > wire::MAX_TIME_S || omit_s > wire::MAX_OMIT_S {
        return Err(format!(
            "iperf3 allows -t up to {} s and -O up to {} s",
            wire::MAX_TIME_S,
            wire::MAX_OMIT_S
        ));
    }
    if spec.streams > wire::MAX_STREAMS {
        return Err(format!(
            "iperf3 allows at most {} streams (-P), got {}",
            wire::MAX_STREAMS,
            spec.streams
        ));
    }
    let udp = spec.protocol == Protocol::Udp;
    if !udp && spec.length_bytes > wire::MAX_TCP_BLOCK {
        return Err(format!(
            "iperf3 allows TCP writes (-l) of at most 1 MiB, got {} bytes",
            spec.length_bytes
        ));
    }
    if udp && spec.length_bytes < 16 {
        return Err("iperf3 needs UDP datagrams (-l) of at least 16 bytes".into());
    }
    let server_affinity = match spec.affinity.server {
        Some(c) if !c.is_single() => {
            return Err(format!(
                "-A: an iperf3 server pins itself to one CPU, not {}: give one (as in -A 0,2)",
                c.words()
            ));
        }
        c => c.map(|c| c.first),
    };
    let streams = u64::from(spec.streams.max(1));
    Ok(Params {
        udp,
        omit_s,
        time_s,
        mss: spec.mss_bytes,
        parallel: spec.streams,
        reverse: spec.direction == crate::traffic::spec::Direction::Reverse,
        bidirectional: spec.direction == crate::traffic::spec::Direction::Bidir,
        window: spec.window_bytes,
        len: Some(spec.length_bytes),
        // iperf3's bandwidth is per stream; netsweep's -b is the total of a direction.
        bandwidth_bps: (spec.bitrate_bps / streams as f64).round() as u64,
        congestion: spec.congestion.clone(),
        // A count's test takes as long as it takes: its output only when asked for.
        get_server_output: spec.count.is_none()
            && (time_s + omit_s) * spec.flows().len() as u64 <= SERVER_OUTPUT_MAX_STREAM_SECONDS,
        bytes: match spec.count {
            Some(Count::Bytes(b)) => b,
            _ => 0,
        },
        blocks: match spec.count {
            Some(Count::Blocks(k)) => k,
            _ => 0,
        },
        client_version: Some(wire::own_software()),
        tos: spec.tos.unwrap_or(0),
        fqrate_bps: spec.fq_rate_bps.unwrap_or(0),
        dont_fragment: spec.dont_fragment,
        skip_rx_copy: spec.skip_rx_copy,
        nodelay: spec.no_delay && !udp,
        repeating_payload: spec.repeating_payload,
        server_affinity,
        ..Params::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clamped_window_is_refused_where_the_iperf3_server_would_receive() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        spec.window_bytes = Some(1 << 20);
        spec.window_mode = crate::traffic::spec::WindowMode::Clamp;
        let e = params_for(&spec).err().unwrap();
        assert!(e.contains("--window-mode clamp"), "{e}");
        spec.direction = crate::traffic::spec::Direction::Bidir;
        assert!(params_for(&spec).is_err());
        spec.direction = crate::traffic::spec::Direction::Reverse;
        assert!(
            params_for(&spec).is_ok(),
            "with -R this end receives and clamps"
        );
    }
}
