use super::*;
use crate::lab::{EmulatorChoice, PathConfig};
use crate::traffic::client::{ClientConfig, PeerProtocol};
use crate::traffic::protocol::DEFAULT_PORT;
use crate::traffic::spec::{Count, Direction, TestSpec};
use std::net::IpAddr;
use std::time::Duration;

fn client(args: &[&str]) -> anyhow::Result<(ClientConfig, TestSpec)> {
    let mut v = vec!["netsweep", "client"];
    v.extend_from_slice(args);
    match Cli::try_parse_from(v)?.command {
        Command::Client(c) => <(ClientConfig, TestSpec)>::try_from(&*c),
        _ => unreachable!(),
    }
}

#[test]
fn iperf3_style_flags_map_to_the_spec() {
    let (cfg, spec) = client(&[
        "127.0.0.1",
        "-t",
        "2",
        "-P",
        "3",
        "-R",
        "-w",
        "64K",
        "-C",
        "reno",
        "-O",
        "1",
    ])
    .unwrap();
    assert_eq!(cfg.server.port(), DEFAULT_PORT);
    assert_eq!(spec.streams, 3);
    assert_eq!(spec.direction, Direction::Reverse);
    assert_eq!(spec.window_bytes, Some(65536));
    assert_eq!(spec.omit, Duration::from_secs(1));
    assert_eq!(spec.congestion.as_deref(), Some("reno"));
}

/// Regression: `-u` without `-b` sent 1 Gbit/s to loopback and lab addresses where iperf3
/// sends 1 Mbit/s per stream; an iperf3 habit sent 1000x what its user expected.
#[test]
fn udp_without_b_is_iperf3s_1_mbit_per_stream_everywhere() {
    for host in ["127.0.0.1", "::1", "198.18.0.2", "192.0.2.7"] {
        let (cfg, spec) = client(&[host, "-u"]).unwrap();
        assert_eq!(spec.bitrate_bps, 1e6, "{host}");
        assert!(
            cfg.notes.iter().any(|n| n.contains("iperf3's default")),
            "{host}: {:?}",
            cfg.notes
        );
        let (_, spec) = client(&[host, "-u", "-P", "4"]).unwrap();
        assert_eq!(spec.stream_rate().bits_per_second(), 1e6, "{host}");
    }
}

/// Regression: `-P 4 -b 100M` sent 100 Mbit/s in all where iperf3 sends 100 per stream (a
/// pScheduler mesh loaded the path 4x less with netsweep). netsweep's total is
/// `--total-bitrate`.
#[test]
fn b_is_per_stream_and_total_bitrate_is_netsweeps_own() {
    let (_, spec) = client(&["127.0.0.1", "-P", "4", "-b", "100M"]).unwrap();
    assert_eq!(spec.bitrate_bps, 400e6);
    assert_eq!(spec.stream_rate().bits_per_second(), 100e6);
    // What an iperf3 server is told: its -b, per stream.
    let p = crate::traffic::iperf3::client::params_for(&spec).unwrap();
    assert_eq!(p.bandwidth_bps, 100_000_000);
    let (_, spec) = client(&["127.0.0.1", "-P", "4", "--total-bitrate", "100M"]).unwrap();
    assert_eq!(spec.bitrate_bps, 100e6);
    let (_, spec) = client(&["127.0.0.1", "--rrul", "-b", "10M"]).unwrap();
    assert_eq!(spec.bitrate_bps, 40e6, "--rrul's 4 streams, 10M each");
    let e = client(&["127.0.0.1", "-b", "1M", "--total-bitrate", "1M"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be used with"), "{e}");
}

#[test]
fn rcv_timeout_is_iperf3s_milliseconds_in_both_roles() {
    let (cfg, _) = client(&["127.0.0.1"]).unwrap();
    assert_eq!(cfg.rcv_timeout, Duration::from_secs(120));
    let (cfg, _) = client(&["127.0.0.1", "-R", "--rcv-timeout", "5000"]).unwrap();
    assert_eq!(cfg.rcv_timeout, Duration::from_secs(5));
    let (cfg, _) = client(&["127.0.0.1", "--bidir", "--rcv-timeout", "5000"]).unwrap();
    assert_eq!(cfg.rcv_timeout, Duration::from_secs(5));
    let e = format!(
        "{:#}",
        client(&["127.0.0.1", "-R", "--rcv-timeout", "50"]).unwrap_err()
    );
    assert!(e.contains("--rcv-timeout") && e.contains("100"), "{e}");
    // As iperf3: a client that only sends has no data to time.
    let e = format!(
        "{:#}",
        client(&["127.0.0.1", "--rcv-timeout", "5000"]).unwrap_err()
    );
    assert!(e.contains("valid only in receiving mode"), "{e}");
    let server = |args: &[&str]| {
        let mut v = vec!["netsweep", "server"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().command {
            Command::Server(s) => ServerConfig::try_from(&s),
            _ => unreachable!(),
        }
    };
    assert_eq!(
        server(&[]).unwrap().limits.rcv_timeout,
        Duration::from_secs(120)
    );
    assert_eq!(
        server(&["--rcv-timeout", "2500"])
            .unwrap()
            .limits
            .rcv_timeout,
        Duration::from_millis(2500)
    );
}

/// Regression: `netsweep -s`, `netsweep -c HOST` were refused with a misleading tip.
#[test]
fn iperf3_command_lines_are_understood() {
    let v = |a: &[&str]| -> Vec<String> {
        let os: Vec<std::ffi::OsString> = a.iter().map(|s| s.into()).collect();
        iperf3_argv(os)
            .into_iter()
            .map(|s| s.to_string_lossy().to_string())
            .collect()
    };
    assert_eq!(
        v(&["netsweep", "-s", "-p", "5"]),
        ["netsweep", "server", "--iperf3-cli", "-p", "5"]
    );
    // pScheduler's iperf3 tool puts --use-pkcs1-padding before -s (regression: "unexpected
    // argument '-s'").
    assert_eq!(
        v(&[
            "netsweep",
            "--use-pkcs1-padding",
            "-s",
            "-1",
            "--idle-timeout",
            "3",
            "--json"
        ]),
        [
            "netsweep",
            "server",
            "--iperf3-cli",
            "--use-pkcs1-padding",
            "-1",
            "--idle-timeout",
            "3",
            "--json"
        ]
    );
    // iperf3's clusters of the server flag and value-less server flags.
    assert_eq!(
        v(&["netsweep", "-sD", "-p", "5"]),
        ["netsweep", "server", "--iperf3-cli", "-D", "-p", "5"]
    );
    assert_eq!(
        v(&["netsweep", "-s1J"]),
        ["netsweep", "server", "--iperf3-cli", "-1J"]
    );
    assert_eq!(
        v(&["netsweep", "-c", "h", "-t", "5"]),
        ["netsweep", "client", "h", "--iperf3-cli", "-t", "5"]
    );
    assert_eq!(
        v(&["netsweep", "-t", "5", "-c", "h", "-R"]),
        ["netsweep", "client", "h", "--iperf3-cli", "-t", "5", "-R"]
    );
    assert_eq!(
        v(&["netsweep", "stats", "-c", "99"]),
        ["netsweep", "stats", "-c", "99"]
    );
    let cli = Cli::try_parse_from(v(&["netsweep", "-c", "127.0.0.1", "-Z", "-f", "m", "-V"]));
    assert!(cli.is_ok(), "{cli:?}");
    // getopt's forms of -c's value (regression: "unexpected argument '-c' found").
    for line in [
        &["netsweep", "-c127.0.0.1", "-t", "5"][..],
        &["netsweep", "--client=127.0.0.1", "-t", "5"],
        &["netsweep", "-t", "5", "-c127.0.0.1"],
    ] {
        assert_eq!(
            v(line),
            ["netsweep", "client", "127.0.0.1", "--iperf3-cli", "-t", "5"],
            "{line:?}"
        );
    }
    // Not on netsweep's own command lines, and not for iperf3's --cport.
    assert_eq!(
        v(&["netsweep", "stats", "-c99"]),
        ["netsweep", "stats", "-c99"]
    );
    assert_eq!(
        v(&["netsweep", "-c", "h", "--cport", "5"]),
        ["netsweep", "client", "h", "--iperf3-cli", "--cport", "5"]
    );
    // -c without its host: the client's parser says so.
    assert_eq!(
        v(&["netsweep", "-c"]),
        ["netsweep", "client", "--iperf3-cli"]
    );
    let e = Cli::try_parse_from(v(&["netsweep", "-c"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("<HOST>"), "{e}");
}

/// iperf3's getopt keeps an option's last value: wrappers put defaults before the user's own.
#[test]
fn an_option_given_twice_keeps_its_last_value() {
    let (_, spec) = client(&["127.0.0.1", "-t", "5", "-P", "3", "-t", "2", "-P", "1"]).unwrap();
    assert_eq!(spec.duration, std::time::Duration::from_secs(2));
    assert_eq!(spec.streams, 1);
    let s = server_of(&["-s", "-p", "5", "-p", "6"]).unwrap();
    assert_eq!(s.listen.port(), 6);
}

/// iperf3's server runs one test at a time; `netsweep server` serves four unless told.
#[test]
fn iperf3s_server_line_serves_one_test_at_a_time() {
    assert_eq!(server_of(&["-s"]).unwrap().limits.max_tests, 1);
    assert_eq!(
        server_of(&["-s", "--max-tests", "3"])
            .unwrap()
            .limits
            .max_tests,
        3
    );
    assert_eq!(server_of(&["server"]).unwrap().limits.max_tests, 4);
    assert!(server_of(&["server", "--max-tests", "0"]).is_err());
}

/// iperf3's -i 0: nothing while the test runs, one interval over the whole test.
#[test]
fn interval_zero_is_one_interval_over_the_test() {
    let (_, spec) = client(&["127.0.0.1", "-t", "3", "-i", "0"]).unwrap();
    assert_eq!(spec.interval, spec.duration);
    assert!(spec.whole_test_interval);
    let (_, spec) = client(&["127.0.0.1", "-n", "1G", "-i", "0"]).unwrap();
    assert_eq!(spec.interval, spec.duration);
    assert!(spec.whole_test_interval);
    let (_, spec) = client(&["127.0.0.1", "-t", "3", "-i", "3"]).unwrap();
    assert!(!spec.whole_test_interval);
    assert!(client(&["127.0.0.1", "-t", "auto", "-i", "0"]).is_err());
}

/// Regression: `-t -5` gave the tip "use '-- -5'".
#[test]
fn negative_times_get_plain_answers() {
    let e = format!("{:#}", client(&["127.0.0.1", "-t", "-5"]).unwrap_err());
    assert!(e.contains("-t/--time") && !e.contains("'--"), "{e}");
}

#[test]
fn byte_and_block_counts_end_the_test_with_iperf3s_protocol() {
    let (cfg, spec) = client(&["127.0.0.1", "-n", "1G"]).unwrap();
    assert_eq!(spec.count, Some(Count::Bytes(1 << 30)));
    assert_eq!(cfg.peer, PeerProtocol::Iperf3);
    // The duration is only the ceiling: as long as iperf3 lets a test run.
    assert_eq!(spec.duration, std::time::Duration::from_secs(86_400));
    let (_, spec) = client(&["127.0.0.1", "-k", "5K", "-l", "32K", "-u"]).unwrap();
    assert_eq!(spec.count, Some(Count::Blocks(5 << 10)));
    assert_eq!(spec.count.unwrap().bytes(spec.length_bytes), 5 << 25);
    let p = crate::traffic::iperf3::client::params_for(&spec).unwrap();
    assert_eq!((p.time_s, p.bytes, p.blocks), (0, 0, 5 << 10));
    // One end condition, as iperf3 says: a time, a byte count or a block count.
    for args in [
        &["127.0.0.1", "-n", "1G", "-t", "5"][..],
        &["127.0.0.1", "-k", "10", "-t", "5"],
        &["127.0.0.1", "-n", "1G", "-k", "10"],
    ] {
        let e = client(args).unwrap_err().to_string();
        assert!(e.contains("cannot be used with"), "{args:?}: {e}");
    }
    for (args, want) in [
        (&["127.0.0.1", "-n", "0"][..], "more than 0"),
        (&["127.0.0.1", "-n", "1G", "--latency"], "--latency"),
        (&["127.0.0.1", "-n", "lots"], "-n/--bytes"),
        (&["127.0.0.1", "-n", "1G", "-O", "0.5"], "whole seconds"),
    ] {
        let e = format!("{:#}", client(args).unwrap_err());
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

/// UDP without `-l`: the control connection's MSS once it is open, as iperf3's client
/// (`udp_path_datagrams`; 1400 until then); `-l` is kept as given, TCP is untouched.
#[test]
fn udp_defaults_are_the_paths_datagrams_at_iperf3s_1_mbit() {
    let (cfg, spec) = client(&["127.0.0.1", "-u"]).unwrap();
    assert!(cfg.udp_path_datagrams);
    assert_eq!(spec.length_bytes, 1400);
    assert_eq!(spec.bitrate_bps, 1e6);
    let (cfg, spec) = client(&["127.0.0.1", "-u", "-b", "0", "-l", "8K"]).unwrap();
    assert!(!cfg.udp_path_datagrams);
    assert_eq!(spec.bitrate_bps, 0.0);
    assert_eq!(spec.length_bytes, 8192);
    let (cfg, _) = client(&["127.0.0.1"]).unwrap();
    assert!(!cfg.udp_path_datagrams);
    // Once connected: the control connection's MSS (loopback's, here), -l's size untouched.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ctrl = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let mss = crate::platform::sockopt::tcp_info(&ctrl).unwrap().snd_mss;
    let (cfg, spec) = client(&["127.0.0.1", "-u"]).unwrap();
    assert_eq!(cfg.path_datagrams(&spec, &ctrl).length_bytes, mss);
    let (cfg, spec) = client(&["127.0.0.1", "-u", "-l", "8K"]).unwrap();
    assert_eq!(cfg.path_datagrams(&spec, &ctrl).length_bytes, 8192);
}

#[test]
fn bad_input_names_the_flag() {
    for (args, flag) in [
        (vec!["127.0.0.1", "-w", "0"], "window"),
        (vec!["127.0.0.1", "-t", "-0.5"], "-t/--time"),
        (vec!["127.0.0.1", "-w", "lots"], "-w/--window"),
        (vec!["127.0.0.1", "-b", "fast"], "-b/--bitrate"),
        (vec!["127.0.0.1", "-t", "10q"], "-t/--time"),
    ] {
        let err = format!("{:#}", client(&args).unwrap_err());
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn lab_path_flags_map_to_the_path() {
    let cli = Cli::try_parse_from([
        "netsweep",
        "lab",
        "up",
        "x",
        "--rate",
        "200M",
        "--rtt",
        "20ms",
        "--loss",
        "1%",
        "--mtu-b",
        "9000",
        "--sysctl-b",
        "net.ipv4.tcp_sack=0",
    ])
    .unwrap();
    let Command::Lab(LabCommand::Up { path, .. }) = cli.command else {
        panic!()
    };
    let (p, e) = <(PathConfig, EmulatorChoice)>::try_from(&path).unwrap();
    assert_eq!(p.rate_bps, Some(200e6));
    assert_eq!(p.delay, Duration::from_millis(10));
    assert_eq!(p.loss_percent, 1.0);
    assert_eq!((p.mtu_a, p.mtu_b), (1500, 9000));
    assert_eq!(
        p.sysctls_b,
        vec![("net.ipv4.tcp_sack".to_string(), "0".to_string())]
    );
    assert_eq!(e, EmulatorChoice::Auto);
    let bad = PathArgs {
        sysctl_a: vec!["kernel.panic=1".into()],
        queue: "50ms".into(),
        mtu: 1500,
        ..PathArgs::default()
    };
    let err = <(PathConfig, EmulatorChoice)>::try_from(&bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("only net.* keys"), "{err}");
}

/// iperf3's IP and socket options become the test's (both ends apply them) or the client's
/// connection settings; what cannot be honoured is refused by name, never ignored.
#[test]
fn iperf3s_ip_and_socket_options_are_honoured() {
    let (cfg, spec) = client(&[
        "127.0.0.1",
        "--dscp",
        "ef",
        "--fq-rate",
        "100M",
        "--cport",
        "5000",
        "--connect-timeout",
        "500",
        "--get-server-output",
    ])
    .unwrap();
    assert_eq!(spec.tos, Some(0xb8));
    assert_eq!(spec.fq_rate_bps, Some(100_000_000));
    assert_eq!(cfg.cport, Some(5000));
    assert_eq!(cfg.connect_timeout, std::time::Duration::from_millis(500));
    assert!(cfg.server_output);
    // -S as iperf3's strtol(base 0): decimal, hex, octal.
    for (v, tos) in [("16", 16), ("0x10", 16), ("020", 16), ("184", 0xb8)] {
        assert_eq!(
            client(&["127.0.0.1", "-S", v]).unwrap().1.tos,
            Some(tos),
            "{v}"
        );
    }
    for (v, tos) in [("46", 0xb8), ("af11", 0x28), ("CS7", 0xe0), ("0", 0)] {
        assert_eq!(
            client(&["127.0.0.1", "--dscp", v]).unwrap().1.tos,
            Some(tos),
            "{v}"
        );
    }
    let (cfg, spec) = client(&["127.0.0.1", "-m", "-u", "--dont-fragment"])
        .map_or_else(|e| (None, format!("{e:#}")), |_| (Some(()), String::new()));
    assert!(
        cfg.is_none() && spec.contains("-m/--mptcp applies to TCP"),
        "{spec}"
    );
    assert!(
        client(&["127.0.0.1", "-u", "--dont-fragment"])
            .unwrap()
            .1
            .dont_fragment
    );
    // With TCP, as iperf3: the test runs, with a note (DF is TCP's already).
    let (cfg, spec) = client(&["127.0.0.1", "--dont-fragment"]).expect("TCP runs");
    assert!(!spec.dont_fragment);
    assert!(
        cfg.notes
            .iter()
            .any(|n| n.starts_with("--dont-fragment: accepted and ignored")),
        "{:?}",
        cfg.notes
    );
    for (args, words) in [
        (&["127.0.0.1", "--dscp", "64"][..], "0 to 63"),
        (&["127.0.0.1", "-S", "256"][..], "0 to 255"),
        (&["127.0.0.1", "--dscp", "fast"][..], "not a DSCP"),
        (&["127.0.0.1", "--connect-timeout", "0"][..], "milliseconds"),
        (&["127.0.0.1", "-L", "7"][..], "not an IPv6 address"),
        (&["::1", "-L", "0"][..], "1 to 1048575"),
        (&["::1", "-L", "0x100000"][..], "1 to 1048575"),
        (&["::1", "-L", "seven"][..], "not a number"),
    ] {
        let e = format!("{:#}", client(args).unwrap_err());
        assert!(e.contains(words), "{args:?}: {e}");
    }
    assert!(client(&["127.0.0.1", "-t", "1"]).is_ok());
    // -L as iperf3's strtol(base 0), towards an IPv6 server.
    for (v, label) in [
        ("7", 7),
        ("0x12345", 0x12345),
        ("017", 15),
        ("1048575", 0xfffff),
    ] {
        assert_eq!(
            client(&["::1", "-L", v]).unwrap().0.flowlabel,
            Some(label),
            "{v}"
        );
    }
    assert_eq!(client(&["::1"]).unwrap().0.flowlabel, None);
}

#[test]
fn window_auto_leaves_autotuning_and_window_mode_ask_is_carried() {
    let (_, spec) = client(&["127.0.0.1", "-w", "auto"]).unwrap();
    assert_eq!(spec.window_bytes, None);
    let (_, spec) = client(&["127.0.0.1", "-w", "default"]).unwrap();
    assert_eq!(spec.window_bytes, None);
    let (_, spec) = client(&["127.0.0.1", "-w", "1536K", "--window-mode", "ask"]).unwrap();
    assert_eq!(spec.window_bytes, Some(1536 * 1024));
    assert_eq!(spec.window_mode, crate::traffic::spec::WindowMode::Ask);
    let (_, spec) = client(&["127.0.0.1", "-w", "64K"]).unwrap();
    assert_eq!(spec.window_mode, crate::traffic::spec::WindowMode::Force);
    let e = client(&["127.0.0.1", "--window-mode", "gently"]).unwrap_err();
    assert!(
        format!("{e:#}").contains("--window-mode: window mode \"gently\""),
        "{e:#}"
    );
}

/// Regression: `tune bdp` printed `--rate 10000000000`; its hint now names the running binary
/// and units, and the CLI parses it back to the same path.
#[test]
fn the_tune_bdp_hint_parses_back_to_the_same_path() {
    let text = crate::host::tuning::bdp_text(10e9, 0.0016, &|_| None);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("apply with: "))
        .unwrap_or_else(|| panic!("{text}"));
    // The line runs as printed: nothing to strip.
    let program = crate::paste::program();
    let rest = line
        .strip_prefix(&program)
        .unwrap_or_else(|| panic!("{line}"));
    assert!(rest.contains("--rate 10G"), "{line}");
    let mut argv = vec!["netsweep"];
    argv.extend(rest.split_whitespace());
    let Command::Tune(t) = Cli::try_parse_from(argv).unwrap().command else {
        panic!("{line}")
    };
    let TuneCommand::Apply {
        profile, common, ..
    } = t
    else {
        panic!("{line}")
    };
    assert_eq!(profile, "high-bdp");
    let rate: crate::units::BitRate = common.rate.unwrap().parse().unwrap();
    assert_eq!(rate.bits_per_second(), 10e9);
    assert_eq!(
        crate::units::parse_duration(&common.rtt.unwrap()).unwrap(),
        Duration::from_micros(1600)
    );
}

fn server_of(args: &[&str]) -> anyhow::Result<ServerConfig> {
    let argv = std::iter::once("netsweep")
        .chain(args.iter().copied())
        .map(std::ffi::OsString::from)
        .collect();
    match Cli::try_parse_from(iperf3_argv(argv))?.command {
        Command::Server(s) => ServerConfig::try_from(&s),
        _ => anyhow::bail!("not a server"),
    }
}

/// The server command line pScheduler's iperf3 tool builds (regression: "unexpected argument
/// '--idle-timeout'", then `--json` and `-4`).
#[test]
fn the_pscheduler_iperf3_tools_server_line_is_a_one_off_server() {
    let c = server_of(&[
        "-s",
        "-1",
        "--idle-timeout",
        "13",
        "--json",
        "-p",
        "5201",
        "-B",
        "127.0.0.1",
        "-4",
    ])
    .unwrap();
    assert!(c.one_off && c.json);
    assert_eq!(c.idle_timeout, Some(std::time::Duration::from_secs(13)));
    assert_eq!(c.listen, "127.0.0.1:5201".parse().unwrap());
    let c = server_of(&["-s", "-4"]).unwrap();
    assert_eq!(c.listen.ip(), IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));
    let e = server_of(&["-s", "-B", "::1", "-4"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an IPv4 address"), "{e}");
    let e = server_of(&["-s", "-1", "--idle-timeout", "0"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1 second"), "{e}");
}

/// `netsweep -s` stands where `iperf3 -s` stood: iperf3's clients find it on 5201 without
/// `-p`, and netsweep's on 5310. `-p` means one port, as in iperf3; `netsweep server` keeps
/// netsweep's port alone unless `--iperf3` asks for both (regression: `iperf3 -c HOST` against
/// `netsweep -s` was refused).
#[test]
fn an_iperf3_style_server_listens_on_iperf3s_port_too_unless_p_says_otherwise() {
    let c = server_of(&["-s"]).unwrap();
    assert_eq!(c.listen.port(), DEFAULT_PORT);
    assert_eq!(
        (c.extra_ports.as_slice(), c.iperf3_port_if_free),
        (&[][..], Some(5201))
    );
    for (args, port, extra) in [
        (&["-s", "-p", "6000"][..], 6000, &[][..]),
        (&["-s", "-p", "5201"][..], 5201, &[][..]),
        (&["server"][..], DEFAULT_PORT, &[][..]),
        (&["server", "--iperf3"][..], DEFAULT_PORT, &[5201][..]),
        (&["-s", "--iperf3"][..], DEFAULT_PORT, &[5201][..]),
        (
            &["-s", "--iperf3-port", "5202"][..],
            DEFAULT_PORT,
            &[5202][..],
        ),
    ] {
        let c = server_of(args).unwrap();
        assert_eq!(
            (
                c.listen.port(),
                c.extra_ports.as_slice(),
                c.iperf3_port_if_free
            ),
            (port, extra, None),
            "{args:?}"
        );
    }
}

/// iperf3's client flags netsweep does not implement are refused by name, with what to do
/// instead, not by clap's "unexpected argument" or a unit parser's "unknown unit".
#[test]
fn iperf3s_unimplemented_client_flags_are_refused_by_name() {
    for (args, name) in [
        (
            &["127.0.0.1", "-F", "/etc/hosts"][..],
            "-F/--file: netsweep sends from memory",
        ),
        (
            &["127.0.0.1", "--sctp"],
            "--sctp: netsweep tests TCP and UDP only",
        ),
        (
            &["127.0.0.1", "-u", "-b1G/100"],
            "-b 1G/100: iperf3's bursts",
        ),
        (
            &["127.0.0.1", "--total-bitrate", "1G/100"],
            "--total-bitrate 1G/100",
        ),
        (
            &["127.0.0.1", "-u", "-N"],
            "-N/--no-delay applies to TCP only",
        ),
    ] {
        let e = client(args).unwrap_err().to_string();
        assert!(e.contains(name), "{args:?}: {e}");
    }
    // -N and --repeating-payload are honoured, and an iperf3 server is told both.
    let (_, spec) = client(&["127.0.0.1", "-N", "--repeating-payload", "-n", "1M"]).unwrap();
    assert!(spec.no_delay && spec.repeating_payload);
    let p = crate::traffic::iperf3::client::params_for(&spec).unwrap();
    assert!(p.nodelay && p.repeating_payload);
    let m = p.to_json();
    assert_eq!(m["repeating_payload"], serde_json::json!(1));
    assert_eq!(m["nodelay"], serde_json::json!(true));
    // -T is a flag of the output, accepted.
    assert!(client(&["127.0.0.1", "-T", "test1"]).is_ok());
}

#[test]
fn netsweeps_own_tcp_and_udp_tests_skip_the_receive_copy_and_iperf3s_command_line_copies() {
    let skips = |args: &[&str]| client(args).unwrap().1.skip_rx_copy;
    // Where this host's TCP can drop data unread (Linux; FreeBSD copies).
    let can = crate::platform::sockopt::RECV_TRUNC_DISCARDS;
    assert_eq!(skips(&["127.0.0.1"]), can);
    assert_eq!(skips(&["127.0.0.1", "-R", "-P", "4"]), can);
    assert!(!skips(&["127.0.0.1", "--rx-copy"]));
    // An iperf3 server named as such is asked only when --skip-rx-copy says so.
    assert!(!skips(&["127.0.0.1", "--iperf3"]));
    assert!(skips(&["127.0.0.1", "--iperf3", "--skip-rx-copy"]));
    // iperf3's command line keeps iperf3's default unless --skip-rx-copy is given.
    assert!(!skips(&["127.0.0.1", "--iperf3-cli"]));
    assert!(skips(&["127.0.0.1", "--iperf3-cli", "--skip-rx-copy"]));
    // UDP skips it too (its receivers count coalesced batches from their heads); request/
    // response tests keep the copy.
    assert_eq!(skips(&["127.0.0.1", "-u"]), can);
    assert!(!skips(&["127.0.0.1", "-u", "--rx-copy"]));
    assert!(skips(&["127.0.0.1", "-u", "--skip-rx-copy"]));
    assert!(!skips(&["127.0.0.1", "-u", "--iperf3-cli"]));
    assert!(!skips(&["127.0.0.1", "--test", "rr"]));
    // Asking for both is a mistake, named.
    let err = client(&["127.0.0.1", "--rx-copy", "--skip-rx-copy"]).unwrap_err();
    assert!(format!("{err:#}").contains("--rx-copy"), "{err:#}");
}

mod analysis_flags;
mod iperf3_options;
mod lengths;

/// Under the name iperf3 (a link to netsweep standing in for it), `--version` is iperf3's `-v`:
/// pScheduler's iperf3 tool reads `iperf3 --version`; under netsweep's own name it stays
/// netsweep's. Messages name the program as it was started.
#[test]
fn the_version_under_iperf3s_name_is_iperf3s() {
    let os = |v: &[&str]| -> Vec<std::ffi::OsString> { v.iter().map(|s| s.into()).collect() };
    for argv in [
        os(&["/usr/bin/iperf3", "--version"]),
        os(&["iperf3", "-v"]),
        os(&["netsweep", "-v"]),
    ] {
        let v = iperf3_version(&argv).unwrap_or_default();
        assert!(v.starts_with("iperf 3."), "{argv:?}: {v}");
    }
    assert_eq!(iperf3_version(&os(&["netsweep", "--version"])), None);
    assert_eq!(iperf3_version(&os(&["iperf3", "--version", "-c"])), None);
    assert_eq!(
        program_name(&os(&["/usr/local/bin/iperf3", "-c", "h"])),
        "iperf3"
    );
    assert_eq!(
        program_name(&os(&["./target/release/netsweep"])),
        "netsweep"
    );
    assert_eq!(program_name(&[]), "netsweep");
}
