//! An iperf3 -J document's figures checked against each other before `import` stores it (pure):
//! each sum's rate against its own bytes and seconds, what the receiver counted against what
//! the sender sent (bytes; for UDP packets and losses too), and each sum against the
//! per-stream figures in `end.streams`. A contradiction, or a stored rate without the bytes it
//! must be checked against, is refused with the field named: an edited or damaged file, never
//! data. Called by `import::parse_json_result`.

use super::lenient_f64;
use serde_json::Value;

/// A rate off its own bytes over its own seconds by more than this share contradicts them.
pub const RATE_SLACK: f64 = 0.01;

/// How much more a receiver may count than its sender sent, as a share of the sent bytes.
/// Nothing arrives that was not sent, but iperf3's two ends each round their own counts.
pub const RECEIVED_SLACK: f64 = 0.01;

/// The same with omitted seconds (`-O`): each end stops omitting by its own clock, up to half a
/// round trip apart, so the receiver may count data the sender sent while it still omitted
/// (2.4% more over loopback in a 1 s test with `-O 1`; a long path's round trip makes more).
pub const RECEIVED_SLACK_OMIT: f64 = 0.25;

/// A sum off the total of its streams by more than this share contradicts them (iperf3 adds
/// the streams' own counts, so they agree exactly).
pub const STREAMS_SLACK: f64 = 0.001;

type Checked = Result<(), String>;

/// A section as a message names it: `/sum_received` is `end.sum_received`.
fn at(section: &str) -> String {
    format!("end{}", section.replace('/', "."))
}

fn figure(end: &Value, section: &str, key: &str) -> Option<f64> {
    end.pointer(&format!("{section}/{key}"))
        .and_then(lenient_f64)
}

/// The rate against the section's own bytes and seconds (`seconds`, else `end - start`). The
/// stored section must have them: a rate with nothing to check it against is refused.
pub fn stored_rate_agrees(end: &Value, section: &str, bps: f64) -> Checked {
    let Some(bytes) = figure(end, section, "bytes") else {
        return Err(format!(
            "{at} has bits_per_second but no bytes: the rate it would store cannot be \
             checked against what was counted (iperf3 always writes both)",
            at = at(section)
        ));
    };
    let seconds = figure(end, section, "seconds")
        .or_else(|| Some(figure(end, section, "end")? - figure(end, section, "start")?));
    let Some(seconds) = seconds.filter(|s| *s > 0.0) else {
        return Err(format!(
            "{at} has bits_per_second but no positive seconds (nor start and end): the \
             rate it would store cannot be checked",
            at = at(section)
        ));
    };
    rate_agrees(section, bps, bytes, seconds)
}

fn rate_agrees(section: &str, bps: f64, bytes: f64, seconds: f64) -> Checked {
    let own = bytes * 8.0 / seconds;
    if (own - bps).abs() > RATE_SLACK * own.max(bps) {
        return Err(format!(
            "{at}.bits_per_second is {bps} but its own {bytes} bytes over {seconds} s \
             make {own:.0}: the document's figures contradict each other",
            at = at(section)
        ));
    }
    Ok(())
}

/// Every other sum's rate against its own bytes and seconds, when it has all three.
fn other_rates_agree(end: &Value) -> Checked {
    for section in ["/sum_sent", "/sum_received"] {
        let (Some(bps), Some(bytes), Some(seconds)) = (
            figure(end, section, "bits_per_second"),
            figure(end, section, "bytes"),
            figure(end, section, "seconds").filter(|s| *s > 0.0),
        ) else {
            continue;
        };
        rate_agrees(section, bps, bytes, seconds)?;
    }
    Ok(())
}

/// What the receiver counted against what the sender sent: bytes, and for UDP packets.
fn received_within_sent(end: &Value, omit: bool) -> Checked {
    let slack = if omit {
        RECEIVED_SLACK_OMIT
    } else {
        RECEIVED_SLACK
    };
    for key in ["bytes", "packets"] {
        // A sender's count of 0 is an iperf3 server's document of a test it only received:
        // that end knows no sender's count (a trial's `iperf3 -s -1 -J` file was refused).
        let (Some(sent), Some(got)) = (
            figure(end, "/sum_sent", key).filter(|s| *s > 0.0),
            figure(end, "/sum_received", key),
        ) else {
            continue;
        };
        if got > sent * (1.0 + slack) {
            return Err(format!(
                "end.sum_received.{key} is {got} but end.sum_sent.{key} is {sent}: the receiver \
                 cannot count more than was sent (at most {:.0}% more, as each end rounds{}); the \
                 document's figures contradict each other",
                slack * 100.0,
                if omit {
                    " and omits by its own clock"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

/// UDP losses: no section loses more packets than it counts, and its lost_percent is its lost
/// packets over the packets counted (its own, or the sender's: iperf3 3.12 writes the latter
/// in `sum_received`).
fn losses_agree(end: &Value) -> Checked {
    let sent = figure(end, "/sum_sent", "packets");
    for section in ["/sum", "/sum_received"] {
        let (Some(lost), Some(packets)) = (
            figure(end, section, "lost_packets"),
            figure(end, section, "packets"),
        ) else {
            continue;
        };
        if lost > packets {
            return Err(format!(
                "{at}.lost_packets is {lost}, more than its {packets} packets: the \
                 document's figures contradict each other",
                at = at(section)
            ));
        }
        let Some(percent) = figure(end, section, "lost_percent") else {
            continue;
        };
        let agrees = |of: f64| of > 0.0 && (100.0 * lost / of - percent).abs() <= 0.5;
        let none = packets == 0.0 && lost == 0.0 && percent == 0.0;
        if !none && !agrees(packets) && !sent.is_some_and(agrees) {
            return Err(format!(
                "{at}.lost_percent is {percent} but {lost} of {packets} packets were \
                 lost: the document's figures contradict each other",
                at = at(section)
            ));
        }
    }
    Ok(())
}

/// The records in `end.streams` a sum adds up: `record` ("sender", "receiver" or "udp") of the
/// streams in the sum's direction (a stream's `sender` flag equal to the sum's; a
/// bidirectional test's other direction has its own sums).
fn stream_total(end: &Value, section: &str, record: &str, key: &str) -> Option<f64> {
    let streams = end.get("streams")?.as_array()?;
    let direction = end.pointer(&format!("{section}/sender"));
    let mut total = 0.0;
    let mut any = false;
    for s in streams {
        let Some(r) = s.get(record) else { continue };
        let flag = r.get("sender");
        if direction.is_some() && flag.is_some() && flag != direction {
            continue;
        }
        total += r.get(key).and_then(lenient_f64)?;
        any = true;
    }
    any.then_some(total)
}

/// Each sum against the total of its streams, when the document has per-stream figures.
fn sums_agree_with_streams(end: &Value, udp: bool) -> Checked {
    let checks: &[(&str, &str, &str)] = if udp {
        &[
            ("/sum", "udp", "bytes"),
            ("/sum", "udp", "packets"),
            ("/sum", "udp", "lost_packets"),
        ]
    } else {
        &[
            ("/sum_sent", "sender", "bytes"),
            ("/sum_received", "receiver", "bytes"),
        ]
    };
    for (section, record, key) in checks {
        let (Some(sum), Some(streams)) = (
            figure(end, section, key),
            stream_total(end, section, record, key),
        ) else {
            continue;
        };
        if (sum - streams).abs() > STREAMS_SLACK * sum.max(streams) {
            return Err(format!(
                "{at}.{key} is {sum} but its streams' {record}.{key} in end.streams add \
                 up to {streams}: the document's figures contradict each other",
                at = at(section)
            ));
        }
    }
    Ok(())
}

/// Every cross-check of one document's `end` (the stored section's own rate is checked by
/// `stored_rate_agrees`). `omit`: the test omitted its first seconds (`start.test_start.omit`).
pub fn figures_agree(end: &Value, udp: bool, omit: bool) -> Checked {
    other_rates_agree(end)?;
    received_within_sent(end, omit)?;
    if udp {
        losses_agree(end)?;
    }
    sums_agree_with_streams(end, udp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tcp(sent: u64, got: u64, got_bps: f64) -> Value {
        json!({
            "streams": [
                {"sender": {"bytes": sent / 2, "sender": true},
                 "receiver": {"bytes": got / 2, "sender": true}},
                {"sender": {"bytes": sent - sent / 2, "sender": true},
                 "receiver": {"bytes": got - got / 2, "sender": true}}
            ],
            "sum_sent": {"seconds": 1.0, "bytes": sent, "bits_per_second": sent as f64 * 8.0,
                         "sender": true},
            "sum_received": {"seconds": 1.0, "bytes": got, "bits_per_second": got_bps,
                             "sender": true}
        })
    }

    /// Regression: a file whose `sum_received` bytes and rate were both multiplied by 10 (each
    /// consistent with itself) was stored: the receiver got ten times what was sent.
    #[test]
    fn a_receiver_that_got_more_than_was_sent_is_refused() {
        let ok = tcp(1_000_000_000, 999_000_000, 7.992e9);
        assert_eq!(figures_agree(&ok, false, false), Ok(()));
        let mut x10 = tcp(1_000_000_000, 10_000_000_000, 8e10);
        let e = figures_agree(&x10, false, false).unwrap_err();
        assert!(
            e.contains("end.sum_received.bytes") && e.contains("sum_sent"),
            "{e}"
        );
        // With the stream figures left as they were, the sum no longer adds up either.
        x10["sum_sent"]["bytes"] = json!(10_000_000_000u64);
        x10["sum_sent"]["bits_per_second"] = json!(8e10);
        let e = figures_agree(&x10, false, false).unwrap_err();
        assert!(e.contains("end.streams"), "{e}");
        // -O: the receiver may count a little more than the sender (2.4% seen on loopback).
        let omitted = tcp(557_056_000, 570_687_488, 570_687_488.0 * 8.0);
        assert!(figures_agree(&omitted, false, false).is_err());
        assert_eq!(figures_agree(&omitted, false, true), Ok(()));
    }

    #[test]
    fn bidirectional_streams_add_up_in_their_own_direction() {
        let mut doc = tcp(200, 200, 1600.0);
        doc["streams"].as_array_mut().unwrap().push(json!(
            {"sender": {"bytes": 5000, "sender": false}, "receiver": {"bytes": 5000, "sender": false}}
        ));
        assert_eq!(figures_agree(&doc, false, false), Ok(()));
    }

    fn udp(lost: u64, packets: u64, percent: f64) -> Value {
        json!({
            "streams": [{"udp": {"bytes": 1000, "packets": packets, "lost_packets": lost,
                                 "sender": true}}],
            "sum": {"bytes": 1000, "packets": packets, "lost_packets": lost,
                    "lost_percent": percent, "sender": true},
            "sum_sent": {"seconds": 1.0, "bytes": 1000, "bits_per_second": 8000.0,
                         "packets": packets, "sender": true},
            "sum_received": {"seconds": 1.0, "bytes": 1000 - lost * 10, "packets": packets,
                             "lost_packets": lost, "lost_percent": percent, "sender": false}
        })
    }

    #[test]
    fn udp_losses_must_agree_with_the_packets() {
        assert_eq!(figures_agree(&udp(10, 100, 10.0), true, false), Ok(()));
        assert_eq!(figures_agree(&udp(0, 0, 0.0), true, false), Ok(()));
        let e = figures_agree(&udp(10, 100, 1.0), true, false).unwrap_err();
        assert!(e.contains("lost_percent"), "{e}");
        let mut more_lost = udp(10, 100, 10.0);
        more_lost["sum"]["lost_packets"] = json!(500);
        more_lost["sum_received"]["lost_packets"] = json!(500);
        let e = figures_agree(&more_lost, true, false).unwrap_err();
        assert!(e.contains("lost_packets"), "{e}");
        let mut more_received = udp(0, 100, 0.0);
        more_received["sum_received"]["packets"] = json!(1000);
        let e = figures_agree(&more_received, true, false).unwrap_err();
        assert!(e.contains("sum_received.packets"), "{e}");
    }
}
