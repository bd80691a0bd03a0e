//! The client options a plan can set in `[test]` or sweep in `[matrix]`, and how each value,
//! written as a user would type it on the command line, changes a `TestSpec`.

use crate::traffic::latency::LatencySpec;
use crate::traffic::rr::{RrMode, RrTest};
use crate::traffic::spec::{
    Direction, Protocol, TestSpec, UDP_DEFAULT_LENGTH, UDP_DEFAULT_RATE, zerocopy_asked,
};
use crate::units::{BitRate, Bytes, parse_duration};
use toml_edit::Value;

/// The client options a plan can set in `[test]` or sweep in `[matrix]`.
pub const OPTIONS: [&str; 25] = [
    "protocol",
    "duration",
    "interval",
    "omit",
    "parallel",
    "streams",
    "reverse",
    "bidir",
    "direction",
    "window",
    "window_mode",
    "mss",
    "congestion",
    "length",
    "bitrate",
    "zerocopy",
    "skip_rx_copy",
    "latency",
    "probe_rate",
    "latency_idle",
    "rrul",
    "test",
    "request_response",
    "transactions",
    "spin",
];

/// A TOML scalar as the text a user would type on the command line.
pub(super) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.value().clone()),
        Value::Integer(i) => Some(i.value().to_string()),
        Value::Float(f) => Some(f.value().to_string()),
        Value::Boolean(b) => Some(b.value().to_string()),
        _ => None,
    }
}

pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(format!("{v:?} is not true or false")),
    }
}

/// `length` without `zerocopy` is written with write(2), as `client -l` (one rule,
/// `spec::zerocopy_asked`); `named` says whether the plan sets an option for this test. Run once
/// every option is in: `apply_option` takes them one at a time, in any order.
pub(super) fn settle_zerocopy(spec: &mut TestSpec, named: impl Fn(&str) -> bool) {
    spec.zerocopy = zerocopy_asked(named("length"), named("zerocopy").then_some(spec.zerocopy));
}

/// Applies one option to a spec; the error says what is accepted.
pub fn apply_option(spec: &mut TestSpec, key: &str, v: &str) -> Result<(), String> {
    let e = |x: crate::units::ParseError| x.to_string();
    match key {
        "protocol" => {
            spec.protocol = match v {
                "tcp" => Protocol::Tcp,
                "udp" => {
                    if spec.protocol != Protocol::Udp {
                        spec.length_bytes = UDP_DEFAULT_LENGTH;
                        spec.bitrate_bps = UDP_DEFAULT_RATE;
                        spec.calibration = std::time::Duration::ZERO;
                    }
                    Protocol::Udp
                }
                _ => return Err(format!("protocol {v:?} is not tcp or udp")),
            }
        }
        "duration" => {
            (spec.duration, spec.steady) = crate::traffic::steady::parse_duration(v)?;
        }
        "interval" => spec.interval = parse_duration(v).map_err(e)?,
        "omit" => spec.omit = parse_duration(v).map_err(e)?,
        "parallel" | "streams" => {
            spec.streams = v
                .parse()
                .map_err(|_| format!("{v:?} is not a stream count"))?
        }
        "reverse" => {
            if parse_bool(v)? {
                spec.direction = Direction::Reverse
            } else if spec.direction == Direction::Reverse {
                spec.direction = Direction::Forward
            }
        }
        "bidir" => {
            if parse_bool(v)? {
                spec.direction = Direction::Bidir
            } else if spec.direction == Direction::Bidir {
                spec.direction = Direction::Forward
            }
        }
        "direction" => {
            spec.direction = match v {
                "forward" => Direction::Forward,
                "reverse" => Direction::Reverse,
                "bidir" => Direction::Bidir,
                _ => return Err(format!("direction {v:?} is not forward, reverse or bidir")),
            }
        }
        // `auto`/`default`: no window, the kernel's autotuning (a value of the dimension too).
        "window" => spec.window_bytes = crate::traffic::spec::parse_window(v).map_err(e)?,
        "window_mode" => spec.window_mode = v.parse()?,
        "mss" => {
            spec.mss_bytes = Some(
                v.parse()
                    .map_err(|_| format!("{v:?} is not an MSS in bytes"))?,
            )
        }
        "congestion" => spec.congestion = Some(v.to_string()),
        // A path or size the plan names is used as named: no calibration.
        "length" => {
            spec.length_bytes = u32::try_from(v.parse::<Bytes>().map_err(e)?.0)
                .map_err(|_| format!("length {v} is too large"))?;
            spec.calibration = std::time::Duration::ZERO;
        }
        "bitrate" => spec.bitrate_bps = v.parse::<BitRate>().map_err(e)?.bits_per_second(),
        "zerocopy" => {
            spec.zerocopy = parse_bool(v)?;
            spec.calibration = std::time::Duration::ZERO;
        }
        // Receivers that drop the data in the kernel (iperf3's --skip-rx-copy): a plan's
        // receivers copy it unless told, as iperf3's do, so its figures compare with theirs.
        "skip_rx_copy" => spec.skip_rx_copy = parse_bool(v)?,
        "latency" => {
            spec.latency = if parse_bool(v)? {
                Some(spec.latency.unwrap_or_default())
            } else {
                None
            }
        }
        "probe_rate" => {
            let l = spec.latency.get_or_insert_with(LatencySpec::default);
            l.probe_rate_hz = v
                .parse()
                .map_err(|_| format!("{v:?} is not a number of probes per second"))?;
        }
        "latency_idle" => {
            spec.latency.get_or_insert_with(LatencySpec::default).idle =
                parse_duration(v).map_err(e)?
        }
        // As `client --rrul`: TCP both ways, 4 streams each unless the plan says, and the probe.
        "rrul" => {
            if parse_bool(v)? {
                spec.direction = Direction::Bidir;
                if spec.streams == 1 {
                    spec.streams = crate::traffic::spec::RRUL_STREAMS;
                }
                spec.latency.get_or_insert_with(LatencySpec::default);
            }
        }
        // As `client --test rr|crr`, `-r REQ,RESP`, `--transactions N`: sizes or a count alone
        // make an rr test; `test = "throughput"` (the default) makes none.
        "test" => {
            spec.rr = match v {
                "throughput" => None,
                _ => {
                    let mode: RrMode = v
                        .parse()
                        .map_err(|_| format!("test {v:?} is not throughput, rr or crr"))?;
                    Some(RrTest {
                        mode,
                        ..spec.rr.unwrap_or(RrTest::new(mode))
                    })
                }
            }
        }
        "request_response" => {
            let (req, resp) = crate::traffic::rr::parse_sizes(v)?;
            let rr = spec.rr.get_or_insert(RrTest::new(RrMode::Rr));
            (rr.request_bytes, rr.response_bytes) = (req, resp);
        }
        "transactions" => {
            let n: u64 = v
                .parse()
                .map_err(|_| format!("{v:?} is not a number of transactions"))?;
            spec.rr.get_or_insert(RrTest::new(RrMode::Rr)).transactions = Some(n);
        }
        "spin" => {
            let d = crate::units::parse_duration(v).map_err(|e| format!("spin: {e}"))?;
            // "0" is no polling at all.
            spec.rr.get_or_insert(RrTest::new(RrMode::Rr)).spin_us =
                Some(u64::try_from(d.as_micros()).unwrap_or(u64::MAX)).filter(|&us| us > 0);
        }
        _ => {
            return Err(format!(
                "unknown option {key:?}; options are {}",
                OPTIONS.join(", ")
            ));
        }
    }
    Ok(())
}
