use super::*;

/// The two byte streams of a captured control connection (`tests/fixtures/iperf3/*.txt`:
/// one line per read, "C" or "S" and hex).
fn transcript(name: &str) -> (Vec<u8>, Vec<u8>) {
    let path = format!(
        "{}/tests/fixtures/iperf3/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let (mut c, mut s) = (Vec::new(), Vec::new());
    for line in text.lines() {
        let (side, hex) = line.split_once(' ').unwrap();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        if side == "C" { &mut c } else { &mut s }.extend(bytes);
    }
    (c, s)
}

/// Reads one length-prefixed document from the front of `b`.
fn take_json(b: &mut &[u8], cap: u32) -> Map<String, Value> {
    let len = check_json_length(b[..4].try_into().unwrap(), cap).unwrap();
    let doc = parse_json(&b[4..4 + len]).unwrap();
    *b = &b[4 + len..];
    doc
}

fn take_state(b: &mut &[u8]) -> State {
    let s = State::from_byte(b[0]).unwrap();
    *b = &b[1..];
    s
}

/// A whole exchange of Debian's iperf3 3.12 client and server decodes as the protocol says.
fn decode_exchange(name: &str) -> (Params, Results, Results) {
    let (c, s) = transcript(name);
    let (mut c, mut s) = (&c[..], &s[..]);
    let cookie = Cookie::parse(&c[..COOKIE_LEN]).expect("cookie");
    assert!(looks_like_cookie(&cookie.0[..8]));
    c = &c[COOKIE_LEN..];
    assert_eq!(take_state(&mut s), State::ParamExchange);
    let params = Params::from_json(&take_json(&mut c, MAX_PARAMS_BYTES)).unwrap();
    for want in [State::CreateStreams, State::TestStart, State::TestRunning] {
        assert_eq!(take_state(&mut s), want);
    }
    assert_eq!(take_state(&mut c), State::TestEnd);
    assert_eq!(take_state(&mut s), State::ExchangeResults);
    let client = Results::from_json(&take_json(&mut c, MAX_RESULTS_BYTES)).unwrap();
    let server = Results::from_json(&take_json(&mut s, MAX_RESULTS_BYTES)).unwrap();
    assert_eq!(take_state(&mut s), State::DisplayResults);
    assert_eq!(take_state(&mut c), State::IperfDone);
    assert!(c.is_empty() && s.is_empty(), "bytes left over");
    (params, client, server)
}

#[test]
fn captured_tcp_two_streams() {
    let (p, client, server) = decode_exchange("tcp-p2");
    assert!(!p.udp);
    assert_eq!((p.time_s, p.parallel, p.len), (1, 2, Some(131_072)));
    assert_eq!(p.client_version.as_deref(), Some("3.12"));
    let ids: Vec<i64> = client.streams.iter().map(|s| s.id).collect();
    assert_eq!(ids, [1, 3]);
    assert_eq!(stream_index(3), Some(1));
    // The client sent, so it has the retransmits; the receiving server has none (-1 as u64).
    assert_eq!(client.sender_has_retransmits, 1);
    assert_eq!(server.sender_has_retransmits, -1);
    assert!(server.streams.iter().all(|s| s.retransmits.is_none()));
    for id in ids {
        let (sent, got) = (client.stream(id).unwrap(), server.stream(id).unwrap());
        assert!(got.bytes > 0 && got.bytes <= sent.bytes, "{got:?} {sent:?}");
        assert!(got.seconds().unwrap() > 0.9);
    }
}

#[test]
fn captured_tcp_reverse_with_options() {
    let (p, client, server) = decode_exchange("tcp-reverse");
    assert!(p.reverse && !p.bidirectional);
    assert_eq!((p.omit_s, p.window), (1, Some(262_144)));
    assert_eq!(p.congestion.as_deref(), Some("reno"));
    assert_eq!(server.sender_has_retransmits, 1);
    assert!(server.streams[0].retransmits.is_some());
    assert_eq!(client.sender_has_retransmits, -1);
}

#[test]
fn captured_tcp_bidir_lists_both_directions() {
    let (p, client, server) = decode_exchange("tcp-bidir");
    assert!(p.bidirectional);
    assert_eq!(p.stream_count(), 2);
    assert_eq!(client.streams.len(), 2);
    assert_eq!(server.streams.len(), 2);
}

#[test]
fn udp_documents_of_3_12_read_leniently() {
    let read = |name: &str| {
        let path = format!(
            "{}/tests/fixtures/iperf3/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        parse_json(&std::fs::read(path).unwrap()).unwrap()
    };
    let p = Params::from_json(&read("udp-reverse-params.json")).unwrap();
    assert!(p.udp && p.reverse && p.udp_counters_64bit);
    assert_eq!(p.bandwidth_bps, 10_000_000);
    // 3.12 writes "retransmits": 1.8446744073709552e+19 for "none".
    let r = Results::from_json(&read("udp-reverse-server-results.json")).unwrap();
    assert_eq!(r.streams[0].retransmits, None);
    assert_eq!((r.streams[0].packets, r.streams[0].errors), (39, 0));
    assert!(r.streams[0].jitter_s > 0.0);
}

#[test]
fn params_round_trip() {
    let p = Params {
        udp: true,
        omit_s: 2,
        time_s: 10,
        parallel: 4,
        bidirectional: true,
        window: Some(1 << 20),
        len: Some(1400),
        bandwidth_bps: 250_000_000,
        congestion: Some("bbr".into()),
        get_server_output: true,
        udp_counters_64bit: true,
        client_version: Some("netsweep 0.1".into()),
        mss: Some(1400),
        ..Params::default()
    };
    let doc = p.to_json();
    let back = Params::from_json(doc.as_object().unwrap()).unwrap();
    assert_eq!(back, p);
}

#[test]
fn out_of_range_params_are_refused_with_iperf3_codes() {
    let refuse = |doc: Value| {
        Params::from_json(doc.as_object().unwrap())
            .unwrap_err()
            .code
    };
    assert_eq!(
        refuse(json!({"tcp": true, "parallel": 500})),
        code::NUM_STREAMS
    );
    assert_eq!(
        refuse(json!({"tcp": true, "time": 999_999})),
        code::DURATION
    );
    assert_eq!(
        refuse(json!({"tcp": true, "len": 5 << 20})),
        code::BLOCK_SIZE
    );
    assert_eq!(
        refuse(json!({"udp": true, "len": 70_000})),
        code::UDP_BLOCK_SIZE
    );
    assert_eq!(refuse(json!({"tcp": true, "omit": -3})), code::OMIT);
    assert_eq!(refuse(json!({"sctp": true})), code::UNIMPLEMENTED);
    assert_eq!(
        refuse(json!({"tcp": true, "window": 1u64 << 40})),
        code::BUF_SIZE
    );
}

#[test]
fn results_round_trip_and_missing_fields_are_named() {
    let r = Results {
        cpu_total: 12.5,
        cpu_user: 2.5,
        cpu_system: 10.0,
        sender_has_retransmits: 1,
        congestion_used: Some("cubic".into()),
        streams: vec![StreamResult {
            id: 1,
            bytes: 123_456_789,
            retransmits: Some(7),
            jitter_s: 0.0,
            errors: 0,
            omitted_errors: Some(0),
            packets: 0,
            omitted_packets: Some(0),
            start_time: Some(0.0),
            end_time: Some(10.0),
        }],
        version: None,
        server_software: None,
        skipped_rx_copy: None,
        server_output: None,
    };
    let doc = r.to_json();
    assert_eq!(Results::from_json(doc.as_object().unwrap()).unwrap(), r);
    // A netsweep server names itself; the name is a peer's text, made safe to print.
    let mut named = doc.as_object().unwrap().clone();
    named.insert(SERVER_SOFTWARE.into(), json!("netsweep 0.1.0\u{1b}[2J"));
    assert_eq!(
        Results::from_json(&named)
            .unwrap()
            .server_software
            .as_deref(),
        Some("netsweep 0.1.0\\u{1b}[2J")
    );
    let e = Results::from_json(json!({"cpu_util_total": 1}).as_object().unwrap()).unwrap_err();
    assert!(e.contains("cpu_util_user"), "{e}");
    let e = Results::from_json(
        json!({"cpu_util_total": 1, "cpu_util_user": 1, "cpu_util_system": 0,
               "sender_has_retransmits": 0, "streams": [{"id": 1}]})
        .as_object()
        .unwrap(),
    )
    .unwrap_err();
    assert!(e.contains("bytes"), "{e}");
}

/// A server's own output is kept as iperf3's client keeps it: the JSON document when there is
/// one, else the text with its lines, and a terminal's escape sequences made harmless.
#[test]
fn server_output_is_kept_and_its_text_made_safe() {
    use crate::traffic::result::ServerOutput;
    let base = Results::default().to_json();
    let with = |k: &str, v: Value| {
        let mut m = base.as_object().unwrap().clone();
        m.insert(k.into(), v);
        Results::from_json(&m).unwrap().server_output
    };
    assert_eq!(
        with("server_output_text", json!("line 1\n\u{1b}[2Jline 2\n")),
        Some(ServerOutput::Text("line 1\n\\u{1b}[2Jline 2\n".into()))
    );
    let j = json!({"start": {"version": "iperf 3.21"}});
    assert_eq!(
        with("server_output_json", j.clone()),
        Some(ServerOutput::Json(j))
    );
    assert_eq!(
        Results::from_json(base.as_object().unwrap())
            .unwrap()
            .server_output,
        None
    );
}

/// The IP and socket options an iperf3 client asks for are read and written under iperf3's
/// keys; a netsweep server honours them (`server::spec_for`).
#[test]
fn ip_and_socket_options_travel_under_iperf3s_keys() {
    let p = Params {
        tos: 0xb8,
        fqrate_bps: 100_000_000,
        dont_fragment: true,
        mptcp: true,
        skip_rx_copy: true,
        parallel: 1,
        ..Params::default()
    };
    let doc = p.to_json();
    // iperf3 3.19+ sends --skip-rx-copy as the number 1.
    assert_eq!(doc["skip_rx_copy"], json!(1));
    assert_eq!(doc["TOS"], json!(0xb8));
    assert_eq!(doc["fqrate"], json!(100_000_000));
    assert_eq!(doc["dont_fragment"], json!(1));
    assert_eq!(doc["mptcp"], json!(true));
    let mut m = doc.as_object().unwrap().clone();
    m.insert("tcp".into(), json!(true));
    let back = Params::from_json(&m).unwrap();
    assert_eq!(
        (
            back.tos,
            back.fqrate_bps,
            back.dont_fragment,
            back.mptcp,
            back.skip_rx_copy
        ),
        (0xb8, 100_000_000, true, true, true)
    );
    assert!(back.unimplemented.is_empty(), "{:?}", back.unimplemented);
    m.insert("TOS".into(), json!(300));
    assert_eq!(Params::from_json(&m).unwrap_err().code, code::BAD_TOS);
}

#[test]
fn the_version_is_read_from_server_output() {
    let m = json!({"server_output_json": {"start": {"version": "iperf 3.17.1"}}});
    assert_eq!(
        peer_version(m.as_object().unwrap()).as_deref(),
        Some("3.17.1")
    );
    let m = json!({"server_output_text": "iperf 3.9\nLinux host 5.10\n"});
    assert_eq!(peer_version(m.as_object().unwrap()).as_deref(), Some("3.9"));
    let m = json!({"server_output_text": "Accepted connection\n"});
    assert_eq!(peer_version(m.as_object().unwrap()), None);
}

#[test]
fn lengths_are_checked_before_reading() {
    assert_eq!(check_json_length([0, 0, 0, 0], 10), Err(JsonError::Empty));
    assert_eq!(
        check_json_length(u32::MAX.to_be_bytes(), MAX_RESULTS_BYTES),
        Err(JsonError::TooLarge {
            len: u32::MAX,
            cap: MAX_RESULTS_BYTES
        })
    );
    assert!(matches!(parse_json(b"[1]"), Err(JsonError::NotObject)));
    assert!(matches!(
        parse_json(b"{\"a\":"),
        Err(JsonError::Malformed(_))
    ));
}

#[test]
fn cookies_states_ids_and_errors() {
    let c = Cookie::random();
    assert_eq!(Cookie::parse(&c.0), Some(c));
    let mut bad = c.0;
    bad[3] = b'A';
    assert_eq!(Cookie::parse(&bad), None);
    bad = c.0;
    bad[36] = b'x';
    assert_eq!(Cookie::parse(&bad), None);
    assert!(!looks_like_cookie(crate::traffic::protocol::DATA_MAGIC));
    assert!(!looks_like_cookie(crate::traffic::protocol::CONTROL_MAGIC));
    for b in 0..=255u8 {
        if let Some(s) = State::from_byte(b) {
            assert_eq!(s.byte(), b);
        }
    }
    assert_eq!(State::AccessDenied.byte(), 0xff);
    assert_eq!((0..4).map(stream_id).collect::<Vec<_>>(), [1, 3, 4, 5]);
    assert_eq!(stream_index(2), None);
    assert_eq!(server_error(37, 0)[..5], [0xfe, 0, 0, 0, 37]);
    assert!(error_text(code::MAX_SERVER_DURATION).contains("--server-max-duration"));
    assert!(error_text(code::TOTAL_RATE).contains("bitrate"));
    assert_eq!(error_text(9999), "iperf3 error code 9999");
    // The connect datagram and the reply, as bytes on the wire.
    assert_eq!(&UDP_CONNECT_MSG, b"9876");
    assert_eq!(UDP_CONNECT_REPLY, [0xb1, 0x68, 0xde, 0x3a]);
}

/// Options a netsweep server cannot honour are named, so the test is refused out loud rather
/// than run without them; zero values (iperf3 sends some unset options as 0) are not options.
#[test]
fn options_a_server_does_not_implement_are_named() {
    let doc = |text: &str| -> Map<String, Value> {
        serde_json::from_str(text).expect("a parameter document")
    };
    let p = Params::from_json(&doc(
        r#"{"tcp":true,"time":2,"parallel":1,"burst":5,"server_affinity":1,"TOS":16}"#,
    ))
    .expect("parameters");
    assert_eq!(p.unimplemented, ["-b RATE/BURST"]);
    // -L is the client's own (its sockets carry the label): read, checked as iperf3's server
    // checks it (IESETFLOW outside 1 to 0xfffff), and written back.
    let labelled = Params::from_json(&doc(
        r#"{"tcp":true,"time":2,"parallel":1,"flowlabel":74565}"#,
    ))
    .expect("parameters");
    assert_eq!(labelled.flowlabel, Some(0x12345));
    assert!(labelled.unimplemented.is_empty());
    assert_eq!(labelled.to_json()["flowlabel"], serde_json::json!(74565));
    let e = Params::from_json(&doc(
        r#"{"tcp":true,"time":2,"parallel":1,"flowlabel":1048576}"#,
    ))
    .unwrap_err();
    assert_eq!(e.code, code::SET_FLOW);
    // -T and --extra-data travel as iperf3's client sends them.
    let said = Params::from_json(&doc(
        r#"{"tcp":true,"time":2,"parallel":1,"title":"run 7","extra_data":"site=a"}"#,
    ))
    .expect("parameters");
    assert_eq!(said.title.as_deref(), Some("run 7"));
    assert_eq!(said.extra_data.as_deref(), Some("site=a"));
    let back = said.to_json();
    assert_eq!(
        (&back["title"], &back["extra_data"]),
        (&json!("run 7"), &json!("site=a"))
    );
    // -A n,m is honoured: the server pins itself (CPU 0 too: iperf3's "none" is -1).
    assert_eq!(p.server_affinity, Some(1));
    for (v, want) in [("0", Some(0)), ("-1", None)] {
        let text = format!(r#"{{"tcp":true,"time":2,"parallel":1,"server_affinity":{v}}}"#);
        assert_eq!(
            Params::from_json(&doc(&text)).unwrap().server_affinity,
            want
        );
        let back = Params::from_json(
            Params::from_json(&doc(&text))
                .unwrap()
                .to_json()
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(back.server_affinity, want);
    }
    let far = doc(r#"{"tcp":true,"time":2,"parallel":1,"server_affinity":5000}"#);
    assert!(Params::from_json(&far).is_err());
    let p = Params::from_json(&doc(
        r#"{"tcp":true,"time":2,"parallel":1,"flowlabel":0,"gso":1,"zerocopy":1,"mptcp":true}"#,
    ))
    .expect("parameters");
    assert!(p.unimplemented.is_empty(), "{:?}", p.unimplemented);
    // -Z is honoured (the server's senders use sendfile), and written back as iperf3 does.
    assert!(p.zerocopy);
    assert_eq!(p.to_json()["zerocopy"], serde_json::json!(1));
    let plain = Params::from_json(&doc(r#"{"tcp":true,"time":2,"parallel":1}"#)).unwrap();
    assert!(!plain.zerocopy && plain.to_json().get("zerocopy").is_none());
}
