use super::*;
use crate::traffic::measure::{IntervalReport, Role, StreamReport, TcpSample, UdpReceived};
use std::time::Duration;

fn report(stream: u16, flow: Flow, role: Role, per_interval: &[(u64, u64)]) -> StreamReport {
    StreamReport {
        stream,
        flow,
        role,
        intervals: per_interval
            .iter()
            .enumerate()
            .map(|(k, (bytes, packets))| IntervalReport {
                stream,
                index: k as u32,
                role,
                bytes: *bytes,
                packets: *packets,
                tcp: (role == Role::Sender).then_some(TcpSample {
                    retransmits: 1,
                    rtt_us: 100,
                    rttvar_us: 10,
                    cwnd_bytes: 1000,
                    ..TcpSample::default()
                }),
                udp: (role == Role::Receiver).then_some(UdpReceived {
                    jitter_ms: 0.5,
                    out_of_order: 0,
                    duplicates: 0,
                    ..UdpReceived::default()
                }),
            })
            .collect(),
        tail_bytes: 0,
        tcp_total_retransmits: None,
        tcp_bytes_sent: None,
        tcp_bytes_retrans: None,
        tcp_dsack_dups: None,
        tcp_min_rtt_us: None,
        tcp_bytes_received: None,
        skipped_rx_copy: false,
        bytes_acked: None,
        drained: None,
        rtt_min_us: Some(90),
        rtt_max_us: Some(110),
        error: None,
        saw_end: false,
        highest_seq: None,
        udp_timing: None,
        send: None,
        receive: None,
    }
}

/// One UDP stream's two ends over two 1 s intervals: (bytes, datagrams) sent and received.
fn udp_ends(sent: &[(u64, u64)], received: &[(u64, u64)]) -> (StreamReport, StreamReport) {
    (
        report(0, Flow::ClientToServer, Role::Sender, sent),
        report(0, Flow::ClientToServer, Role::Receiver, received),
    )
}

#[test]
fn udp_loss_is_sent_minus_received_per_interval() {
    let spec = TestSpec {
        interval: Duration::from_secs(1),
        ..TestSpec::udp(Duration::from_secs(2))
    };
    let (s, r) = udp_ends(&[(14_000, 10), (14_000, 10)], &[(12_600, 9), (14_000, 10)]);
    let pairs = [StreamPair {
        flow: Flow::ClientToServer,
        sender: &s,
        receiver: &r,
    }];
    let res = build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult::default(),
        None,
    );
    assert_eq!(res.intervals[0].total.lost_packets, Some(1));
    assert_eq!(res.intervals[0].total.lost_percent, Some(10.0));
    assert_eq!(res.summary.packets, Some(20));
    assert_eq!(res.summary.lost_packets, Some(1));
    assert_eq!(res.summary.lost_percent, Some(5.0));
    assert_eq!(res.summary.bytes, 26_600);
    assert_eq!(res.summary.bits_per_second, 26_600.0 * 8.0 / 2.0);
}

#[test]
fn parallel_streams_sum_over_the_same_period() {
    let spec = TestSpec {
        streams: 2,
        interval: Duration::from_secs(1),
        calibration: Duration::ZERO,
        ..TestSpec::tcp(Duration::from_secs(2))
    };
    let s0 = report(0, Flow::ClientToServer, Role::Sender, &[(100, 0), (100, 0)]);
    let r0 = report(
        0,
        Flow::ClientToServer,
        Role::Receiver,
        &[(100, 0), (100, 0)],
    );
    let s1 = report(1, Flow::ClientToServer, Role::Sender, &[(300, 0), (300, 0)]);
    let r1 = report(
        1,
        Flow::ClientToServer,
        Role::Receiver,
        &[(300, 0), (300, 0)],
    );
    let pairs = [
        StreamPair {
            flow: Flow::ClientToServer,
            sender: &s0,
            receiver: &r0,
        },
        StreamPair {
            flow: Flow::ClientToServer,
            sender: &s1,
            receiver: &r1,
        },
    ];
    let res = build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult::default(),
        None,
    );
    assert_eq!(res.summary.seconds, 2.0);
    assert_eq!(res.summary.bytes, 800);
    assert_eq!(res.summary.bits_per_second, 800.0 * 8.0 / 2.0);
    assert_eq!(res.summary.retransmits, Some(4));
    assert_eq!(
        res.directions[0].streams[1].summary.bits_per_second,
        600.0 * 8.0 / 2.0
    );
    assert_eq!(res.intervals[0].total.cwnd_bytes, Some(2000));
    assert_eq!(res.summary.rtt_min_us, Some(90));
}

#[test]
fn a_cut_short_test_reports_only_intervals_both_ends_saw() {
    let spec = TestSpec {
        interval: Duration::from_secs(1),
        calibration: Duration::ZERO,
        ..TestSpec::tcp(Duration::from_secs(5))
    };
    let s = report(
        0,
        Flow::ClientToServer,
        Role::Sender,
        &[(100, 0), (100, 0), (100, 0)],
    );
    let r = report(
        0,
        Flow::ClientToServer,
        Role::Receiver,
        &[(100, 0), (100, 0)],
    );
    let pairs = [StreamPair {
        flow: Flow::ClientToServer,
        sender: &s,
        receiver: &r,
    }];
    let res = build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult::default(),
        Some("gone".into()),
    );
    assert_eq!(res.intervals.len(), 2);
    assert_eq!(res.summary.seconds, 2.0);
    assert_eq!(res.summary.bits_per_second, 200.0 * 8.0 / 2.0);
    assert_eq!(res.error.as_deref(), Some("gone"));
}

#[test]
fn a_window_granted_smaller_than_asked_is_said() {
    use crate::traffic::measure::SocketInfo;
    let sock = |snd: u64, rcv: u64| SocketInfo {
        sndbuf_bytes: snd,
        rcvbuf_bytes: rcv,
        ..SocketInfo::default()
    };
    let spec = TestSpec {
        window_bytes: Some(4 << 20),
        ..TestSpec::tcp(Duration::from_secs(1))
    };
    // Linux as root: twice the request on the client. FreeBSD server capped by
    // kern.ipc.maxsockbuf (2 MiB): it grants what it allows, no more.
    let start = StartInfo {
        client_sockets: vec![sock(8 << 20, 8 << 20)],
        server_sockets: vec![sock(1_864_135, 1_864_135)],
        ..StartInfo::default()
    };
    let w = checks::window_grants(&spec, &start);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("server's kernel granted") && w[0].contains("kern.ipc.maxsockbuf"),
        "{}",
        w[0]
    );
    // Granted in full on both ends, or no -w: nothing to say.
    let full = StartInfo {
        server_sockets: vec![sock(4 << 20, 4 << 20)],
        ..start.clone()
    };
    assert!(checks::window_grants(&spec, &full).is_empty());
    let no_w = TestSpec::tcp(Duration::from_secs(1));
    assert!(checks::window_grants(&no_w, &start).is_empty());
}

#[test]
fn a_receiver_that_never_opened_its_window_is_said() {
    use crate::traffic::measure::SocketInfo;
    use crate::traffic::spec::Flow;
    let spec = TestSpec {
        window_bytes: Some(1 << 20),
        ..TestSpec::tcp(Duration::from_secs(4))
    };
    let start = StartInfo {
        server_sockets: vec![SocketInfo {
            sndbuf_bytes: 2 << 20,
            rcvbuf_bytes: 2 << 20,
            window_bytes: Some(1 << 20),
            ..SocketInfo::default()
        }],
        ..StartInfo::default()
    };
    // The VM guests' 6.1 kernel before the fix: 62.6 KBytes advertised for -w 1M.
    let direction = |seen: u64, waited: f64| DirectionResult {
        flow: Flow::ClientToServer,
        summary: Summary {
            snd_wnd_max_bytes: Some(seen),
            rwnd_limited_percent: Some(waited),
            ..Summary::default()
        },
        streams: Vec::new(),
        udp_timing: None,
    };
    let w = checks::unopened_windows(&spec, &start, &[direction(64_128, 95.0)]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "the server's largest advertised window was 62.6 KBytes of the 1.00 MBytes"
        ),
        "{}",
        w[0]
    );
    // Opened, or small but never waited for: nothing to say.
    assert!(checks::unopened_windows(&spec, &start, &[direction(1 << 20, 95.0)]).is_empty());
    assert!(checks::unopened_windows(&spec, &start, &[direction(64_128, 2.0)]).is_empty());
}

#[test]
fn a_udp_sender_short_of_its_rate_is_said_unless_the_test_was_cut_short() {
    let spec = TestSpec {
        interval: Duration::from_secs(1),
        bitrate_bps: 1e6,
        ..TestSpec::udp(Duration::from_secs(2))
    };
    let (s, r) = udp_ends(&[(14_000, 10), (14_000, 10)], &[(14_000, 10), (14_000, 10)]);
    let pairs = [StreamPair {
        flow: Flow::ClientToServer,
        sender: &s,
        receiver: &r,
    }];
    let ran = build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult::default(),
        None,
    );
    assert!(
        ran.warnings
            .iter()
            .any(|w| w.contains("limited on the sending host")),
        "{:?}",
        ran.warnings
    );
    // Its far end gone mid-test: the shortfall is that, not the sending host.
    let cut = build(
        &spec,
        StartInfo::default(),
        &pairs,
        CpuResult::default(),
        Some("server gone mid-test (Connection timed out (os error 110))".into()),
    );
    assert!(
        !cut.warnings
            .iter()
            .any(|w| w.contains("limited on the sending host")),
        "{:?}",
        cut.warnings
    );
}
