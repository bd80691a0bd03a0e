//! What `netsweep -s` writes on stdout for each test it serves, in the layout of iperf3's
//! server: `Accepted connection from HOST, port PORT` and each data connection, this end's
//! lines for each interval, then its summary, each stream's line ending in `sender` or
//! `receiver` as this end was (`[  1][RX-S]` and `[  3][TX-S]` with `--bidir`). Rendered from
//! the test's document (the one `-s -J` prints: `iperf3::server::document`; `ServedText` line
//! by line as the test runs), so the text and the JSON cannot disagree: the intervals as the
//! document has them, the summary over the measured (not omitted) ones and the time and
//! figures of the document's `end`.

use super::{Line, SEPARATOR, header_of, line};
use crate::traffic::result::{StreamInterval, total_of};
use crate::traffic::spec::Protocol;
use crate::units::RateFormat;
use serde_json::Value;
use std::fmt::Write;

/// One stream's row of an interval, read from the document, with what the text needs besides.
struct Row {
    socket: String,
    /// This end sent the stream's data.
    sender: bool,
    seconds: f64,
    figures: StreamInterval,
}

fn row_of(v: &Value) -> Option<Row> {
    let u = |k: &str| v.get(k).and_then(Value::as_u64);
    let f = |k: &str| v.get(k).and_then(Value::as_f64);
    let sender = v.get("sender").and_then(Value::as_bool).unwrap_or(false);
    let row = Row {
        socket: v.get("socket")?.to_string(),
        sender,
        seconds: f("seconds")?,
        figures: StreamInterval {
            bytes: u("bytes")?,
            bits_per_second: f("bits_per_second")?,
            retransmits: u("retransmits"),
            cwnd_bytes: u("snd_cwnd"),
            rtt_us: u("rtt").and_then(|r| u32::try_from(r).ok()),
            packets: u("packets"),
            lost_packets: u("lost_packets"),
            lost_percent: f("lost_percent"),
            jitter_ms: f("jitter_ms"),
            ..StreamInterval::default()
        },
    };
    Some(row)
}

/// `--bidir`'s tag for a line of this server's: what it did with the stream.
fn tag(sender: bool, bidir: bool) -> &'static str {
    match (bidir, sender) {
        (false, _) => "",
        (true, true) => "[TX-S]",
        (true, false) => "[RX-S]",
    }
}

/// How a line ends: an interval's, marked when it is a warm-up's, or the summary's, with the
/// end this server was.
#[derive(Clone, Copy)]
enum Ending {
    Interval { omitted: bool },
    Summary,
}

impl Ending {
    fn words(self, sender: bool) -> &'static str {
        match (self, sender) {
            (Ending::Interval { omitted: true }, _) => "  (omitted)",
            (Ending::Interval { omitted: false }, _) => "",
            (Ending::Summary, true) => "  sender",
            (Ending::Summary, false) => "  receiver",
        }
    }
}

/// Each direction's rows (this end receiving, then sending), with a `[SUM]` where a direction
/// has more than one stream.
fn lines(out: &mut String, rows: &[Row], span: (f64, f64), form: Form, ending: Ending) {
    for sender in [false, true] {
        let these: Vec<&Row> = rows.iter().filter(|r| r.sender == sender).collect();
        let role = tag(sender, form.bidir);
        for r in &these {
            let l = form.line(&r.socket, role, span);
            out.push_str(&line(&l, &r.figures, ending.words(sender)));
            out.push('\n');
        }
        if these.len() > 1 {
            let figures: Vec<StreamInterval> = these.iter().map(|r| r.figures.clone()).collect();
            let secs = these.iter().map(|r| r.seconds).fold(0.0, f64::max);
            let total = total_of(&figures, secs);
            let l = form.line("SUM", role, span);
            out.push_str(&line(&l, &total, ending.words(sender)));
            out.push('\n');
        }
    }
}

/// What every line of one test shares.
#[derive(Clone, Copy)]
struct Form {
    proto: Protocol,
    bidir: bool,
    units: RateFormat,
    /// Streams per direction (`-P`): with more than one, each interval ends with iperf3's
    /// separator.
    streams: u64,
    /// This server sends a stream (`-R`, `--bidir`): TCP's sender columns.
    sends: bool,
}

impl Form {
    /// The column header of the intervals (`summary`: of the summary): a server that only
    /// receives TCP has no sender's columns, and one that only sends UDP counts its datagrams
    /// in its intervals, as iperf3's server writes them.
    fn header(&self, summary: bool) -> String {
        if self.proto == Protocol::Tcp && !self.sends {
            "[ ID] Interval           Transfer     Bitrate".to_string()
        } else if self.udp_sends_only() && !summary {
            super::UDP_SENT_HEADER.to_string()
        } else {
            header_of(self.proto, self.bidir)
        }
    }

    /// This server only sends the test's UDP streams (`-R`): it knows its datagrams sent
    /// per interval, not the client's losses.
    fn udp_sends_only(&self) -> bool {
        self.proto == Protocol::Udp && self.sends && !self.bidir
    }

    fn line<'a>(&self, id: &'a str, role: &'a str, (start, end): (f64, f64)) -> Line<'a> {
        Line {
            id,
            role,
            start,
            end,
            proto: self.proto,
            units: self.units,
        }
    }
}

/// The text of one served test from its document; `None` for a document without a test's
/// figures (a test that failed: the server's log says why).
pub fn served_test(doc: &Value, units: RateFormat) -> Option<String> {
    let (text, opening) = ServedText::open(doc.get("start")?, units)?;
    Some(opening + &text.close(doc, 0)?)
}

/// One served test's text written as the test goes: `open` at the start of its streams, each
/// `interval` as it closes, `close` with the document.
#[derive(Clone, Copy)]
pub struct ServedText {
    form: Form,
}

impl ServedText {
    /// From the document's `start`: the text and its first lines (who connected, the header).
    pub fn open(start: &Value, units: RateFormat) -> Option<(ServedText, String)> {
        let test = start.get("test_start")?;
        let form = Form {
            proto: if test.get("protocol").and_then(Value::as_str) == Some("UDP") {
                Protocol::Udp
            } else {
                Protocol::Tcp
            },
            bidir: test.get("bidir").and_then(Value::as_i64) == Some(1),
            units,
            streams: test.get("num_streams").and_then(Value::as_u64).unwrap_or(1),
            sends: ["reverse", "bidir"]
                .iter()
                .any(|k| test.get(k).and_then(Value::as_i64) == Some(1)),
        };
        let mut out = String::new();
        let text = |v: &Value, k: &str| {
            v.get(k).map_or("?".into(), |x| match x.as_str() {
                Some(s) => s.to_string(),
                None => x.to_string(),
            })
        };
        let accepted = start
            .get("accepted_connection")
            .map(|a| (text(a, "host"), text(a, "port")))
            .or_else(|| {
                let c = start.get("connected")?.get(0)?;
                Some((text(c, "remote_host"), text(c, "remote_port")))
            });
        if let Some((host, port)) = accepted {
            let _ = writeln!(out, "Accepted connection from {host}, port {port}");
        }
        // Each stream's connection, as iperf3's server lists them.
        for c in start
            .get("connected")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("socket").is_some())
        {
            let _ = writeln!(
                out,
                "[{:>3}] local {} port {} connected to {} port {}",
                text(c, "socket"),
                text(c, "local_host"),
                text(c, "local_port"),
                text(c, "remote_host"),
                text(c, "remote_port")
            );
        }
        let _ = writeln!(out, "{}", form.header(false));
        Some((ServedText { form }, out))
    }

    /// The lines of one interval of the document's.
    pub fn interval(&self, iv: &Value) -> String {
        let mut out = String::new();
        let (rows, span, omitted) = interval_rows(iv);
        lines(
            &mut out,
            &rows,
            span,
            self.form,
            Ending::Interval { omitted },
        );
        if self.form.streams > 1 {
            out.push_str(SEPARATOR);
        }
        out
    }

    /// The lines of the document's intervals after the first `shown`, then the summary;
    /// `None` for a document without intervals (a test that failed).
    pub fn close(&self, doc: &Value, shown: usize) -> Option<String> {
        let mut out = String::new();
        // Each stream's measured figures, added up in stream order for the summary.
        let mut kept: Vec<(Row, Vec<StreamInterval>)> = Vec::new();
        for (k, iv) in doc.get("intervals")?.as_array()?.iter().enumerate() {
            if k >= shown {
                out.push_str(&self.interval(iv));
            }
            let (rows, _, omitted) = interval_rows(iv);
            if omitted {
                continue;
            }
            for r in rows {
                match kept.iter_mut().find(|(k, _)| k.socket == r.socket) {
                    Some((k, all)) => {
                        k.seconds += r.seconds;
                        all.push(r.figures);
                    }
                    None => {
                        let figures = vec![r.figures.clone()];
                        kept.push((r, figures));
                    }
                }
            }
        }
        if self.form.streams <= 1 {
            out.push_str(SEPARATOR);
        }
        let _ = writeln!(out, "{}", self.form.header(true));
        // Each stream's figures over the test, in stream order, from `end`.
        let ends: Vec<&Value> = doc
            .get("end")
            .and_then(|e| e.get("streams"))
            .and_then(Value::as_array)
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        let totals: Vec<Row> = kept
            .into_iter()
            .enumerate()
            .map(|(k, (r, all))| summary_row(r, &all, ends.get(k).copied()))
            .collect();
        let secs = totals.iter().map(|r| r.seconds).fold(0.0, f64::max);
        lines(&mut out, &totals, (0.0, secs), self.form, Ending::Summary);
        Some(out)
    }
}

/// An interval's stream rows, its span and whether it is a warm-up's.
fn interval_rows(iv: &Value) -> (Vec<Row>, (f64, f64), bool) {
    let rows: Vec<Row> = iv
        .get("streams")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(row_of).collect())
        .unwrap_or_default();
    let omitted = iv
        .get("sum")
        .or_else(|| iv.get("sum_bidir_reverse"))
        .and_then(|s| s.get("omitted"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let f = |k: &str| iv.get("streams")?.get(0)?.get(k)?.as_f64();
    let span = (f("start").unwrap_or(0.0), f("end").unwrap_or(0.0));
    (rows, span, omitted)
}

/// A stream's summary: its measured intervals added up, over the seconds of the stream's
/// `end` entry where the document has one (the test's time to where it stopped: an empty stub
/// of an interval at the end is no line, but its time counts); this end's bytes and rate from
/// there for TCP, and for UDP the datagrams, and a receiver's losses and jitter (a sender's
/// line has none, as iperf3's).
fn summary_row(r: Row, all: &[StreamInterval], end: Option<&Value>) -> Row {
    let f = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    let udp = end.and_then(|e| e.get("udp"));
    let own = end.and_then(|e| e.get(if r.sender { "sender" } else { "receiver" }));
    let seconds = udp
        .or(own)
        .and_then(|v| f(v, "seconds"))
        .filter(|s| *s > 0.0)
        .unwrap_or(r.seconds);
    let mut figures = total_of(all, seconds);
    figures.cwnd_bytes = None;
    figures.rtt_us = None;
    if let Some(o) = own {
        if let Some(b) = o.get("bytes").and_then(Value::as_u64) {
            figures.bytes = b;
        }
        if let Some(bps) = f(o, "bits_per_second") {
            figures.bits_per_second = bps;
        }
    }
    if let Some(u) = udp {
        figures.packets = u.get("packets").and_then(Value::as_u64);
        if r.sender {
            // iperf3's sender line is what the sender knows: the datagrams it sent, no jitter
            // and no losses (the receiver's line has those; the document keeps them).
            figures.lost_packets = Some(0);
            figures.lost_percent = Some(0.0);
            figures.jitter_ms = Some(0.0);
        } else {
            figures.lost_packets = u.get("lost_packets").and_then(Value::as_u64);
            figures.lost_percent = f(u, "lost_percent");
            figures.jitter_ms = f(u, "jitter_ms");
        }
    }
    Row {
        figures,
        seconds,
        ..r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stream(socket: u32, (start, end): (f64, f64), bytes: u64, sender: bool) -> Value {
        json!({
            "socket": socket, "start": start, "end": end, "seconds": end - start,
            "bytes": bytes, "bits_per_second": bytes as f64 * 8.0 / (end - start),
            "sender": sender,
        })
    }

    /// A two-second UDP test to this server with a one-second warm-up, as the document of
    /// `iperf3::server::document` has it: the receiver's intervals carry jitter and the
    /// datagrams their sequence numbers cover, 7 of 900 lost in each.
    fn udp_document() -> Value {
        let rx = |(start, end), omitted: bool| {
            let mut s = stream(1, (start, end), 1_250_000, false);
            s["jitter_ms"] = json!(0.25);
            s["packets"] = json!(900);
            s["lost_packets"] = json!(7);
            s["lost_percent"] = json!(7.0 / 9.0);
            json!({ "streams": [s], "sum": { "omitted": omitted } })
        };
        json!({
            "start": {
                "connected": [{ "remote_host": "198.18.0.1", "remote_port": 40000 }],
                "test_start": { "protocol": "UDP", "num_streams": 1, "reverse": 0, "bidir": 0 },
            },
            "intervals": [rx((0.0, 1.0), true), rx((0.0, 1.0), false), rx((1.0, 2.0), false)],
            "end": { "streams": [{ "udp": {
                "packets": 1800, "lost_packets": 14, "lost_percent": 0.7777, "jitter_ms": 0.3,
            } }] },
        })
    }

    #[test]
    fn a_udp_receivers_losses_are_per_interval_and_the_tests_and_warm_up_is_marked() {
        let text = served_test(&udp_document(), RateFormat::Auto).expect("a test");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Accepted connection from 198.18.0.1, port 40000");
        assert!(lines[2].ends_with("(omitted)"), "{text}");
        // Per interval: jitter and the interval's losses.
        assert!(lines[3].ends_with("0.250 ms  7/900 (0.78%)"), "{text}");
        let summary = lines.last().expect("a summary");
        // Two measured seconds of 1.25 MB: 2.38 MBytes at 10.0 Mbits/sec; the end's losses.
        assert!(
            summary.starts_with("[  1]   0.00-2.00   sec   2.38 MBytes"),
            "{summary}"
        );
        assert!(summary.contains("10.0 Mbits/sec"), "{summary}");
        assert!(
            summary.ends_with("0.300 ms  14/1800 (0.78%)  receiver"),
            "{summary}"
        );
    }

    #[test]
    fn bidir_lines_say_what_the_server_did_and_streams_add_up_per_direction() {
        let iv = json!({ "streams": [
            stream(1, (0.0, 1.0), 1000, false),
            stream(3, (0.0, 1.0), 2000, false),
            stream(5, (0.0, 1.0), 4000, true),
        ], "sum": { "omitted": false } });
        let doc = json!({
            "start": { "test_start": { "protocol": "TCP", "bidir": 1 } },
            "intervals": [iv],
            "end": {},
        });
        let text = served_test(&doc, RateFormat::Bytes('K')).expect("a test");
        for want in ["[  1][RX-S]", "[  3][RX-S]", "[SUM][RX-S]", "[  5][TX-S]"] {
            assert!(text.contains(want), "{want} in {text}");
        }
        // One stream the server sent: no sum for that direction.
        assert!(!text.contains("[SUM][TX-S]"), "{text}");
        let sum = text
            .lines()
            .find(|l| l.starts_with("[SUM][RX-S]") && l.ends_with("receiver"))
            .expect("the receivers' sum");
        assert!(sum.contains("2.93 KBytes"), "{sum}");
        assert!(sum.contains("2.93 KBytes/sec"), "{sum}");
    }

    /// A server that only receives TCP has no sender's columns; with `-P 2` each interval
    /// ends with iperf3's separator, and the summary follows the last one.
    #[test]
    fn a_receiving_server_has_iperf3s_columns_and_separators() {
        let iv = |t: f64| {
            json!({ "streams": [
                stream(1, (t, t + 1.0), 1000, false),
                stream(3, (t, t + 1.0), 2000, false),
            ], "sum": { "omitted": false } })
        };
        let doc = json!({
            "start": { "test_start": { "protocol": "TCP", "num_streams": 2, "reverse": 0 } },
            "intervals": [iv(0.0), iv(1.0)],
            "end": {},
        });
        let text = served_test(&doc, RateFormat::Auto).expect("a test");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "[ ID] Interval           Transfer     Bitrate");
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("- - -")).count(),
            2,
            "{text}"
        );
        assert!(
            lines[4].starts_with("- - -") && lines[9].starts_with("[ ID]"),
            "{text}"
        );
    }

    /// A server that only sends UDP (`-R`) writes its intervals as iperf3's sender does: the
    /// datagrams it sent under "Total Datagrams"; the summary has iperf3's loss columns.
    #[test]
    fn a_server_sending_udp_counts_its_datagrams_per_interval() {
        let tx = |t: f64| {
            let mut s = stream(1, (t, t + 1.0), 1_400_000, true);
            s["packets"] = json!(1000);
            json!({ "streams": [s], "sum": { "omitted": false } })
        };
        let doc = json!({
            "start": { "test_start": { "protocol": "UDP", "num_streams": 1, "reverse": 1 } },
            "intervals": [tx(0.0), tx(1.0)],
            "end": { "streams": [{ "udp": {
                "bytes": 2_800_000u64, "seconds": 2.0, "packets": 2000, "lost_packets": 30,
                "lost_percent": 1.5, "jitter_ms": 0.016,
            } }] },
        });
        let text = served_test(&doc, RateFormat::Auto).expect("a test");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "[ ID] Interval           Transfer     Bitrate           Total Datagrams"
        );
        assert!(lines[1].ends_with("11.2 Mbits/sec  1000"), "{text}");
        assert!(
            lines[4].contains("Jitter     Lost/Total Datagrams"),
            "{text}"
        );
        // The client's losses and jitter (in the document) are not the sender's line's.
        assert!(
            lines[5].ends_with("0.000 ms  0/2000 (0%)  sender"),
            "{text}"
        );
    }

    /// A client that ended a moment past the last whole interval: the empty stub is no line
    /// (iperf3's rule), but the summary runs to where the test stopped, with the end's rate.
    #[test]
    fn the_summary_runs_to_where_the_test_stopped() {
        let iv = |t: f64| {
            json!({ "streams": [stream(1, (t, t + 1.0), 125_000_000, false)],
                    "sum": { "omitted": false } })
        };
        let doc = json!({
            "start": { "test_start": { "protocol": "TCP", "num_streams": 1, "reverse": 0 } },
            "intervals": [iv(0.0), iv(1.0)],
            "end": { "streams": [{ "receiver": {
                "bytes": 250_000_000u64, "seconds": 2.056, "bits_per_second": 972_762_645.9,
            } }] },
        });
        let text = served_test(&doc, RateFormat::Auto).expect("a test");
        let summary = text.lines().last().expect("a summary");
        assert!(summary.starts_with("[  1]   0.00-2.06   sec"), "{summary}");
        assert!(summary.contains(" 973 Mbits/sec"), "{summary}");
    }

    #[test]
    fn a_failed_test_has_no_text() {
        assert_eq!(
            served_test(&json!({ "error": "x" }), RateFormat::Auto),
            None
        );
    }
}
