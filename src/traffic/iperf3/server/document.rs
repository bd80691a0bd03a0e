//! The document `netsweep -s -1 --json` prints for its iperf3 test, as iperf3's server `-J`
//! does: `start` (who connected, what was asked), `end` with the streams' and the sums'
//! figures as both ends exchanged them (the sender's `sum_sent` and the receiver's
//! `sum_received` for TCP, `sum` for UDP; with `--bidir` the streams the server sends in
//! `sum_sent_bidir_reverse`, `sum_received_bidir_reverse` or `sum_bidir_reverse`, as iperf3's
//! server writes them), and `intervals`: this server's own figures per
//! interval for its streams (what it received; what it sent, with the sender's TCP figures;
//! both with `--bidir`), rendered by the client document's builder (`json::interval_of`) from
//! the server's side. pScheduler's iperf3 tool reads this document for its server participant
//! (and, with `reverse`, makes it the test's result, intervals included).

use super::*;
use crate::traffic::iperf3::json::{self, Writer};
use crate::traffic::iperf3::wire::StreamResult;
use crate::traffic::result::{Interval, StreamInterval};
use serde_json::{Value, json};

/// The document of a finished test: `ours` are this server's figures, `theirs` the client's,
/// `intervals` this server's (`intervals::intervals`); the client's `-T` and `--extra-data` from
/// `params` at the top, as iperf3's server writes them.
pub(super) fn document(
    ends: &Ends,
    (spec, params): (&TestSpec, &Params),
    (ours, theirs): (&Results, &Results),
    intervals: &[Interval],
) -> Value {
    let mut doc = built(ends, spec, (ours, Some(theirs)), intervals);
    // The test as the client asked it (this server's own grid runs past the client's end).
    let asked = &mut doc["start"]["test_start"];
    asked["duration"] = json!(params.time_s);
    asked["omit"] = json!(params.omit_s);
    asked["bytes"] = json!(params.bytes);
    asked["blocks"] = json!(params.blocks);
    if let Some(len) = params.len {
        asked["blksize"] = json!(len);
    }
    for (key, value) in [("title", &params.title), ("extra_data", &params.extra_data)] {
        if let Some(v) = value {
            doc[key] = json!(v);
        }
    }
    doc
}

/// The document of a netsweep client's test (`netsweep -s -J`): this server's own figures
/// only, as its text shows them (a netsweep client does not send the server its counts): each
/// stream's and sum's `sender` or `receiver` as this end was, and for UDP `sum` with the
/// datagrams this end sent or the losses and jitter it saw. `stopped`: when open-ended streams
/// were stopped; `None` for a test that ran its grid.
pub fn own_document(
    ends: &Ends,
    spec: &TestSpec,
    finished: &Finished,
    stopped: Option<std::time::Duration>,
) -> Value {
    let ours = crate::traffic::iperf3::report::results(spec, finished, stopped);
    let intervals =
        intervals::intervals(spec, finished, stopped.unwrap_or(std::time::Duration::MAX));
    built(ends, spec, (&ours, None), &intervals)
}

/// `document`'s body: with `theirs` both ends' figures, without it this end's only.
fn built(
    ends: &Ends,
    spec: &TestSpec,
    (ours, theirs): (&Results, Option<&Results>),
    intervals: &[Interval],
) -> Value {
    let udp = spec.protocol == Protocol::Udp;
    // Without the client's figures a stream's far side is this end's own, and only this end's
    // side is written (UDP's sum takes each figure from the end that counts it).
    let one_sided = theirs.is_none();
    let theirs = theirs.unwrap_or(ours);
    // Each stream's sending and receiving end's figures, by the stream's own direction (both
    // directions with --bidir).
    let flows = spec.flows();
    let pairs: Vec<(bool, &StreamResult, &StreamResult)> = flows
        .iter()
        .enumerate()
        .filter_map(|(i, flow)| {
            let id = wire::stream_id(i);
            let (o, t) = (ours.stream(id)?, theirs.stream(id)?);
            let sends = *flow == Flow::ServerToClient;
            Some(if sends { (true, o, t) } else { (false, t, o) })
        })
        .collect();
    let streams: Vec<Value> = pairs
        .iter()
        .map(|(sends, s, r)| {
            // Each side names its stream as `start.connected` and the intervals do.
            let socket = s.id;
            if udp {
                let mut u = udp_sum(s, r, *sends);
                u["socket"] = json!(socket);
                // This end's count, as iperf3's server writes its own (0 for a stream it sent).
                u["out_of_order"] = json!(if *sends {
                    0
                } else {
                    out_of_order(intervals, wire::stream_index(socket))
                });
                return json!({ "udp": u });
            }
            let mut sender = side(s, true);
            sender["socket"] = json!(socket);
            if *sends {
                sender_extremes(intervals, wire::stream_index(socket), &mut sender);
            }
            let mut receiver = side(r, false);
            receiver["socket"] = json!(socket);
            // iperf3's `sender` on both sides: whether this end sent the stream.
            receiver["sender"] = json!(*sends);
            sender["sender"] = json!(*sends);
            if one_sided && *sends {
                json!({ "sender": sender })
            } else if one_sided {
                json!({ "receiver": receiver })
            } else {
                json!({ "sender": sender, "receiver": receiver })
            }
        })
        .collect();
    let mut end = json!({ "streams": streams });
    // The sums of one direction; in a --bidir test the server's own sending streams are the
    // client's reverse direction.
    for sends in [false, true] {
        let these = || pairs.iter().filter(|p| p.0 == sends);
        if these().next().is_none() {
            continue;
        }
        let (mut sent, received) = (total(these().map(|p| p.1)), total(these().map(|p| p.2)));
        // Each stream's sent datagrams after the warm-up, as its own line says (a trial's
        // finding: an iperf3 3.12 client's -O datagrams were in the sum, 6250 for 4168).
        sent.packets = these().map(|p| sent_packets(p.1, p.2)).sum();
        let suffix = if sends && spec.direction == Direction::Bidir {
            "_bidir_reverse"
        } else {
            ""
        };
        if udp {
            end[format!("sum{suffix}")] = udp_sum(&sent, &received, sends);
            // iperf3 3.13 on also writes each end's side.
            if sends || !one_sided {
                end[format!("sum_sent{suffix}")] = udp_side(&sent, true);
            }
            if !sends || !one_sided {
                end[format!("sum_received{suffix}")] = udp_side(&received, false);
            }
        } else {
            if sends || !one_sided {
                end[format!("sum_sent{suffix}")] = side(&sent, true);
            }
            if !sends || !one_sided {
                end[format!("sum_received{suffix}")] = side(&received, false);
            }
        }
        // iperf3's `sender` on each sum: whether this end sent that direction.
        for key in ["sum_sent", "sum_received"] {
            if let Some(v) = end.get_mut(format!("{key}{suffix}")) {
                v["sender"] = json!(sends);
            }
        }
    }
    let server_sends = spec.direction == Direction::Reverse;
    let client = if one_sided {
        &None
    } else {
        &theirs.congestion_used
    };
    let (sends, receives) = if server_sends {
        (&ours.congestion_used, client)
    } else {
        (client, &ours.congestion_used)
    };
    if !udp {
        for (key, c) in [
            ("sender_tcp_congestion", sends),
            ("receiver_tcp_congestion", receives),
        ] {
            if let Some(c) = c {
                end[key] = json!(c);
            }
        }
    }
    // This server is the host; the client is the remote end, when it told its figures.
    let mut cpu = json!({
        "host_total": ours.cpu_total,
        "host_user": ours.cpu_user,
        "host_system": ours.cpu_system,
    });
    if !one_sided {
        cpu["remote_total"] = json!(theirs.cpu_total);
        cpu["remote_user"] = json!(theirs.cpu_user);
        cpu["remote_system"] = json!(theirs.cpu_system);
    }
    end["cpu_utilization_percent"] = cpu;
    json!({
        "start": start_section(ends, spec),
        "intervals": intervals
            .iter()
            .filter_map(|iv| json::interval_of(Writer::Server, spec, iv))
            .collect::<Vec<Value>>(),
        "end": end,
    })
}

/// Who a test's document names: the client's control connection (`peer`, to this server's
/// `local`) and each stream's connection, as its socket says; the test's cookie and this
/// end's first data socket (its MSS and buffers).
#[derive(Debug, Clone)]
pub struct Ends {
    pub peer: SocketAddr,
    pub local: Option<SocketAddr>,
    /// Each stream's number, this end's address and the client's.
    pub connected: Vec<(u16, SocketAddr, SocketAddr)>,
    pub cookie: Option<String>,
    pub first: Option<crate::traffic::measure::SocketInfo>,
    /// The control connection's MSS (`start.tcp_mss_default`; iperf3's server writes 0 there,
    /// never having read it).
    pub control_mss: Option<u32>,
}

impl Ends {
    pub fn of(
        peer: SocketAddr,
        local: Option<SocketAddr>,
        sockets: &[(u16, Flow, StreamSocket)],
        spec: &TestSpec,
    ) -> Ends {
        let connected = sockets
            .iter()
            .filter_map(|(i, _, s)| {
                let (l, r) = match s {
                    StreamSocket::Tcp(t) => (t.local_addr(), t.peer_addr()),
                    StreamSocket::Udp(u) => (u.local_addr(), u.peer_addr()),
                };
                Some((*i, l.ok()?, r.ok()?))
            })
            .collect();
        Ends {
            peer,
            local,
            connected,
            cookie: None,
            control_mss: None,
            first: sockets
                .first()
                .map(|(i, _, s)| crate::traffic::session::describe(*i, s, spec)),
        }
    }

    /// The control connection's MSS, read from `ctrl`.
    pub fn with_control(self, ctrl: &std::net::TcpStream) -> Ends {
        Ends {
            control_mss: crate::platform::sockopt::tcp_info(ctrl)
                .ok()
                .map(|i| i.snd_mss),
            ..self
        }
    }

    /// The test's cookie, as the document names it (`start.cookie`).
    pub fn with_cookie(self, cookie: String) -> Ends {
        Ends {
            cookie: Some(cookie),
            ..self
        }
    }
}

/// An address as iperf3 names it: an IPv4 client of a server on `::` is 127.0.0.1.
fn host(a: SocketAddr) -> String {
    a.ip().to_canonical().to_string()
}

/// The document's `start`: who connected, when, and the test asked for, with iperf3's keys
/// (`connected`: each stream's connection, as iperf3's server lists them).
pub(super) fn start_section(ends: &Ends, spec: &TestSpec) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let connected: Vec<Value> = if ends.connected.is_empty() {
        vec![json!({
            "local_host": ends.local.map(host),
            "local_port": ends.local.map(|a| a.port()),
            "remote_host": host(ends.peer),
            "remote_port": ends.peer.port(),
        })]
    } else {
        ends.connected
            .iter()
            .map(|(i, l, r)| {
                json!({
                    "socket": wire::stream_id(usize::from(*i)),
                    "local_host": host(*l),
                    "local_port": l.port(),
                    "remote_host": host(*r),
                    "remote_port": r.port(),
                })
            })
            .collect()
    };
    let mut start = json!({
        "connected": connected,
        "version": json::version(),
        "system_info": crate::platform::system_info(),
        "timestamp": json::timestamp(now),
        "accepted_connection": { "host": host(ends.peer), "port": ends.peer.port() },
    });
    if let Value::Object(m) = &mut start {
        m.extend(json::this_end(
            spec,
            ends.cookie.as_deref(),
            ends.control_mss,
            ends.first.as_ref(),
        ));
        m.insert("test_start".into(), json::asked_test_start(spec));
    }
    start
}

/// The streams' figures added up: bytes, retransmits and datagrams summed, the longest
/// stream's time, the mean jitter.
fn total<'a>(streams: impl Iterator<Item = &'a StreamResult>) -> StreamResult {
    let mut t = StreamResult {
        start_time: Some(0.0),
        end_time: Some(0.0),
        ..StreamResult::default()
    };
    let (mut jitter, mut count) = (0.0, 0usize);
    for s in streams {
        count += 1;
        t.bytes += s.bytes;
        t.retransmits = match (t.retransmits, s.retransmits) {
            (a, None) => a,
            (a, Some(b)) => Some(a.unwrap_or(0) + b),
        };
        t.packets += s.measured_packets();
        t.errors += s.measured_errors();
        let longest = t.end_time.unwrap_or(0.0).max(s.seconds().unwrap_or(0.0));
        t.end_time = Some(longest);
        jitter += s.jitter_s;
    }
    if count > 0 {
        t.jitter_s = jitter / count as f64;
    }
    t
}

fn rate(s: &StreamResult) -> (f64, f64) {
    let secs = s.seconds().unwrap_or(0.0);
    let bps = if secs > 0.0 {
        s.bytes as f64 * 8.0 / secs
    } else {
        0.0
    };
    (secs, bps)
}

/// One side of a TCP stream or sum, iperf3's keys.
fn side(s: &StreamResult, sending: bool) -> Value {
    let (secs, bps) = rate(s);
    let mut v = json!({
        "start": 0,
        "end": secs,
        "seconds": secs,
        "bytes": s.bytes,
        "bits_per_second": bps,
        "sender": sending,
    });
    if sending && let Some(r) = s.retransmits {
        v["retransmits"] = json!(r);
    }
    v
}

/// One end's side of a UDP sum (`sum_sent`, `sum_received`), iperf3's keys: the datagrams
/// sent, or those received with the losses and jitter.
fn udp_side(s: &StreamResult, sending: bool) -> Value {
    let mut v = side(s, sending);
    let packets = s.measured_packets();
    let lost = if sending { 0 } else { s.measured_errors() };
    v["jitter_ms"] = json!(if sending { 0.0 } else { s.jitter_s * 1000.0 });
    v["lost_packets"] = json!(lost);
    // A receiver's count is iperf3's: the sequence numbers it saw up to, received and lost.
    v["packets"] = json!(packets);
    v["lost_percent"] = json!(if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    });
    v
}

/// The end-of-test TCP figures iperf3's server writes for a stream it sent (`max_snd_cwnd`,
/// `max_snd_wnd`, `max_rtt`, `min_rtt`, `mean_rtt`), from this end's TCP_INFO samples of the
/// stream (`stream`: its index), one per measured interval as iperf3's `iperf_stats_callback`
/// takes them; the mean in whole microseconds, as iperf3 divides. Nothing without samples.
fn sender_extremes(intervals: &[Interval], stream: Option<usize>, side: &mut Value) {
    let rows: Vec<&StreamInterval> = measured_rows(intervals, stream).collect();
    let rtts: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.rtt_us.map(u64::from))
        .collect();
    let (Some(max), Some(min)) = (rtts.iter().max(), rtts.iter().min()) else {
        return;
    };
    let max_of =
        |f: fn(&StreamInterval) -> Option<u64>| rows.iter().filter_map(|r| f(r)).max().unwrap_or(0);
    side["max_snd_cwnd"] = json!(max_of(|r| r.cwnd_bytes));
    side["max_snd_wnd"] = json!(max_of(|r| r.snd_wnd_bytes));
    side["max_rtt"] = json!(max);
    side["min_rtt"] = json!(min);
    side["mean_rtt"] = json!(rtts.iter().sum::<u64>() / rtts.len() as u64);
}

/// The datagrams of a stream this server received (`stream`: its index) that came after a
/// higher sequence number, over its measured intervals.
fn out_of_order(intervals: &[Interval], stream: Option<usize>) -> u64 {
    measured_rows(intervals, stream)
        .filter_map(|r| r.out_of_order)
        .fold(0, u64::saturating_add)
}

/// The rows of one stream (`stream`: its index) in the measured intervals.
fn measured_rows(
    intervals: &[Interval],
    stream: Option<usize>,
) -> impl Iterator<Item = &StreamInterval> {
    intervals
        .iter()
        .filter(|iv| !iv.omitted)
        .flat_map(|iv| &iv.streams)
        .filter(move |r| Some(usize::from(r.stream)) == stream)
}

/// The datagrams a UDP stream's sender `s` sent after the warm-up: its own count, or for a
/// sender that does not say what it sent in the warm-up (iperf3 before 3.13), its total less
/// the sequence numbers its receiver `r` had seen by the warm-up's end.
fn sent_packets(s: &StreamResult, r: &StreamResult) -> i64 {
    match s.omitted_packets {
        Some(_) => s.measured_packets(),
        None => s
            .packets
            .saturating_sub(r.omitted_packets.unwrap_or(0).max(0)),
    }
}

/// A UDP stream or sum: the sender's rate and datagrams, the receiver's losses and jitter.
fn udp_sum(s: &StreamResult, r: &StreamResult, server_sends: bool) -> Value {
    let (secs, bps) = rate(s);
    let packets = sent_packets(s, r);
    let lost = r.measured_errors();
    let lost_percent = if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    };
    json!({
        "start": 0,
        "end": secs,
        "seconds": secs,
        "bytes": s.bytes,
        "bits_per_second": bps,
        "jitter_ms": r.jitter_s * 1000.0,
        "lost_packets": lost,
        "packets": packets,
        "lost_percent": lost_percent,
        "sender": server_sends,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(bytes: &[u64], retransmits: Option<u64>) -> Results {
        Results {
            streams: bytes
                .iter()
                .enumerate()
                .map(|(i, b)| StreamResult {
                    id: wire::stream_id(i),
                    bytes: *b,
                    retransmits,
                    start_time: Some(0.0),
                    end_time: Some(2.0),
                    ..StreamResult::default()
                })
                .collect(),
            ..Results::default()
        }
    }

    fn control_only(peer: SocketAddr) -> Ends {
        Ends {
            peer,
            local: None,
            connected: Vec::new(),
            cookie: None,
            first: None,
            control_mss: None,
        }
    }

    /// The document of a test whose client sent no `-T` or `--extra-data`.
    fn without_labels(
        peer: SocketAddr,
        spec: &TestSpec,
        results: (&Results, &Results),
        intervals: &[Interval],
    ) -> Value {
        document(
            &control_only(peer),
            (spec, &Params::default()),
            results,
            intervals,
        )
    }

    /// The client's `-T` and `--extra-data` at the top, as iperf3's server writes them.
    #[test]
    fn the_clients_title_and_extra_data_are_at_the_top() {
        let spec = TestSpec::tcp(Duration::from_secs(2));
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let (ours, theirs) = (results(&[900], None), results(&[1000], Some(0)));
        let said = Params {
            title: Some("run 7".into()),
            extra_data: Some("site=a".into()),
            ..Params::default()
        };
        let d = document(&control_only(peer), (&spec, &said), (&ours, &theirs), &[]);
        assert_eq!(
            (&d["title"], &d["extra_data"]),
            (&json!("run 7"), &json!("site=a"))
        );
        let plain = without_labels(peer, &spec, (&ours, &theirs), &[]);
        assert!(plain.get("title").is_none() && plain.get("extra_data").is_none());
    }

    #[test]
    fn a_forward_tcp_test_sums_the_clients_sending_and_the_servers_receiving() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        spec.streams = 2;
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let (ours, theirs) = (results(&[900, 100], None), results(&[1000, 200], Some(3)));
        let d = without_labels(peer, &spec, (&ours, &theirs), &[]);
        assert_eq!(d["end"]["sum_sent"]["bytes"], json!(1200));
        assert_eq!(d["end"]["sum_sent"]["retransmits"], json!(6));
        assert_eq!(d["end"]["sum_received"]["bytes"], json!(1000));
        assert_eq!(d["end"]["sum_received"]["bits_per_second"], json!(4000.0));
        assert_eq!(d["end"]["streams"].as_array().map(Vec::len), Some(2));
        assert_eq!(d["intervals"], json!([]));
        assert_eq!(
            d["start"]["connected"][0]["remote_host"],
            json!("127.0.0.1")
        );
    }

    #[test]
    fn a_reverse_test_sums_the_servers_sending() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        spec.direction = Direction::Reverse;
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let (ours, theirs) = (results(&[500], Some(1)), results(&[400], None));
        let d = without_labels(peer, &spec, (&ours, &theirs), &[]);
        assert_eq!(d["end"]["sum_sent"]["bytes"], json!(500));
        assert_eq!(d["end"]["sum_received"]["bytes"], json!(400));
        assert_eq!(d["start"]["test_start"]["reverse"], json!(1));
    }

    /// With --bidir each direction has its own sums, as iperf3's server writes them: the
    /// client's sending streams in `sum_sent`/`sum_received`, the server's in `_bidir_reverse`
    /// (before, the two directions were added together).
    #[test]
    fn a_bidir_test_sums_each_direction_apart() {
        let mut spec = TestSpec::tcp(Duration::from_secs(2));
        spec.direction = Direction::Bidir;
        spec.streams = 1;
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        // Stream 1 the client sends (1000, 990 arrived); stream 2 the server sends (500, 480).
        let (ours, theirs) = (
            results(&[990, 500], Some(2)),
            results(&[1000, 480], Some(5)),
        );
        let d = without_labels(peer, &spec, (&ours, &theirs), &[]);
        let end = &d["end"];
        assert_eq!(end["sum_sent"]["bytes"], json!(1000), "{end:#}");
        assert_eq!(end["sum_sent"]["retransmits"], json!(5));
        assert_eq!(end["sum_received"]["bytes"], json!(990));
        assert_eq!(end["sum_sent_bidir_reverse"]["bytes"], json!(500));
        assert_eq!(end["sum_sent_bidir_reverse"]["retransmits"], json!(2));
        assert_eq!(end["sum_received_bidir_reverse"]["bytes"], json!(480));
        assert_eq!(end["streams"][1]["sender"]["bytes"], json!(500));
        assert_eq!(end["streams"][1]["receiver"]["bytes"], json!(480));
        let mut udp = spec.clone();
        udp.protocol = Protocol::Udp;
        let d = without_labels(peer, &udp, (&ours, &theirs), &[]);
        assert_eq!(d["end"]["sum"]["bytes"], json!(1000), "{:#}", d["end"]);
        assert_eq!(d["end"]["sum_bidir_reverse"]["bytes"], json!(500));
    }

    /// The server writes its intervals from its own side: the streams it sends are the
    /// senders, with their TCP figures, and the bytes are its own count.
    #[test]
    fn a_reverse_tests_intervals_are_the_servers_sending() {
        use crate::traffic::measure::{IntervalReport, Role, StreamReport, TcpSample};
        let mut spec = TestSpec::tcp(Duration::from_secs(12));
        spec.direction = Direction::Reverse;
        spec.calibration = Duration::ZERO;
        let sent = StreamReport {
            intervals: (0..2)
                .map(|k| IntervalReport {
                    stream: 0,
                    index: k,
                    role: Role::Sender,
                    bytes: 1000,
                    packets: 0,
                    tcp: Some(TcpSample {
                        retransmits: 1,
                        rtt_us: 50 + 25 * k,
                        cwnd_bytes: 1000 + 2000 * u64::from(k),
                        snd_wnd_bytes: 4000,
                        ..TcpSample::default()
                    }),
                    udp: None,
                })
                .collect(),
            ..StreamReport::empty(0, Flow::ServerToClient, Role::Sender, None)
        };
        let finished = crate::traffic::session::Finished {
            reports: vec![sent],
            ..Default::default()
        };
        let ivs = super::super::intervals::intervals(&spec, &finished, Duration::from_secs(2));
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let (ours, theirs) = (results(&[2000], Some(2)), results(&[2000], None));
        let d = without_labels(peer, &spec, (&ours, &theirs), &ivs);
        assert_eq!(d["intervals"].as_array().map(Vec::len), Some(2), "{d:#}");
        let s = &d["intervals"][1]["streams"][0];
        assert_eq!(s["sender"], json!(true), "{s:#}");
        assert_eq!(s["bytes"], json!(1000));
        assert_eq!(s["rtt"], json!(75));
        assert_eq!(s["start"], json!(1.0));
        let sum = &d["intervals"][1]["sum"];
        assert_eq!(sum["retransmits"], json!(1), "{sum:#}");
        assert_eq!(sum["sender"], json!(true));
        // The end's stream: each side named by its socket, and the sender's TCP figures over
        // its interval samples, as iperf3's server writes them (pScheduler's iperf3 tool takes
        // `socket` as the stream's id and `mean_rtt` as its RTT).
        let stream = &d["end"]["streams"][0];
        let sender = &stream["sender"];
        assert_eq!(
            (&sender["socket"], &stream["receiver"]["socket"]),
            (&json!(1), &json!(1)),
            "{stream:#}"
        );
        for (key, want) in [
            ("max_rtt", 75),
            ("min_rtt", 50),
            ("mean_rtt", 62),
            ("max_snd_cwnd", 3000),
            ("max_snd_wnd", 4000),
        ] {
            assert_eq!(sender[key], json!(want), "{key}: {stream:#}");
        }
        // iperf3's `sender` on every side and sum: whether this end sent (true with -R).
        let end = &d["end"];
        for v in [
            &stream["receiver"],
            sender,
            &end["sum_sent"],
            &end["sum_received"],
        ] {
            assert_eq!(v["sender"], json!(true), "{end:#}");
        }
        // A stream the server received has no sender's TCP figures of its own.
        let mut forward = spec.clone();
        forward.direction = Direction::Forward;
        let d = without_labels(peer, &forward, (&ours, &theirs), &ivs);
        assert!(d["end"]["streams"][0]["sender"].get("max_rtt").is_none());
        assert_eq!(d["end"]["streams"][0]["sender"]["sender"], json!(false));
        assert_eq!(d["end"]["sum_sent"]["sender"], json!(false));
    }

    /// A trial's finding: an iperf3 3.12 client (which does not say what it sent in the
    /// warm-up) with `-O`: the sum counted its warm-up datagrams (6250) where its streams
    /// said 4168.
    #[test]
    fn a_udp_sum_leaves_out_the_warm_up_of_a_client_that_does_not_count_it() {
        let spec = TestSpec {
            streams: 2,
            ..TestSpec::udp(Duration::from_secs(2))
        };
        let peer: SocketAddr = "[::ffff:198.18.0.1]:40000".parse().unwrap();
        let mut theirs = results(&[1200 * 3125, 1200 * 3125], None);
        let mut ours = results(&[1200 * 2084, 1200 * 2084], None);
        for (t, o) in theirs.streams.iter_mut().zip(ours.streams.iter_mut()) {
            t.packets = 3125;
            t.omitted_packets = None;
            o.packets = 3125;
            o.omitted_packets = Some(1041);
        }
        let said = Params {
            time_s: 2,
            len: Some(1200),
            ..Params::default()
        };
        let d = document(&control_only(peer), (&spec, &said), (&ours, &theirs), &[]);
        let end = &d["end"];
        let streams: i64 = (0..2)
            .map(|i| end["streams"][i]["udp"]["packets"].as_i64().unwrap())
            .sum();
        assert_eq!(streams, 4168, "{end:#}");
        assert_eq!(end["sum"]["packets"], json!(4168), "{end:#}");
        assert_eq!(end["sum_sent"]["packets"], json!(4168), "{end:#}");
    }

    /// iperf3 3.13+'s UDP sides beside `sum`, the client's test as asked (not this server's
    /// longer grid), who was accepted, and both ends' CPU.
    #[test]
    fn a_udp_test_has_each_ends_side_and_the_test_as_asked() {
        let spec = TestSpec::udp(Duration::from_secs(12));
        let peer: SocketAddr = "[::ffff:198.18.0.1]:40000".parse().unwrap();
        let mut theirs = results(&[1400 * 100], None);
        theirs.streams[0].packets = 100;
        theirs.cpu_total = 7.5;
        let mut ours = results(&[1400 * 96], None);
        ours.streams[0].packets = 100;
        ours.streams[0].errors = 4;
        ours.streams[0].jitter_s = 0.002;
        ours.cpu_total = 2.5;
        let said = Params {
            time_s: 2,
            len: Some(1400),
            ..Params::default()
        };
        let d = document(&control_only(peer), (&spec, &said), (&ours, &theirs), &[]);
        let end = &d["end"];
        assert_eq!(end["sum_sent"]["packets"], json!(100));
        assert_eq!(end["sum_sent"]["lost_packets"], json!(0));
        // iperf3's receiver counts the sequence numbers it saw up to: received and lost.
        assert_eq!(end["sum_received"]["packets"], json!(100));
        assert_eq!(end["sum_received"]["lost_packets"], json!(4));
        assert_eq!(end["sum_received"]["lost_percent"], json!(4.0));
        assert_eq!(end["sum_received"]["jitter_ms"], json!(2.0));
        assert_eq!(end["sum_received"]["bytes"], json!(1400 * 96));
        assert_eq!(end["sum"]["lost_packets"], json!(4));
        assert_eq!(end["streams"][0]["udp"]["socket"], json!(1), "{end:#}");
        assert_eq!(
            end["streams"][0]["udp"]["out_of_order"],
            json!(0),
            "{end:#}"
        );
        assert_eq!(end["cpu_utilization_percent"]["host_total"], json!(2.5));
        assert_eq!(end["cpu_utilization_percent"]["remote_total"], json!(7.5));
        let start = &d["start"];
        assert_eq!(start["test_start"]["duration"], json!(2));
        assert_eq!(start["test_start"]["blksize"], json!(1400));
        assert_eq!(start["test_start"]["protocol"], json!("UDP"));
        assert_eq!(
            start["accepted_connection"],
            json!({ "host": "198.18.0.1", "port": 40000 })
        );
        assert!(
            start["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("iperf 3.")),
            "{start}"
        );
    }
}
