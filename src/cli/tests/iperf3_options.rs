//! iperf3's options in each role: every one known (honoured, accepted with a note, or refused
//! by name), and clap's own checks of the whole command line.

use super::{client, server_of};
use crate::cli::{Cli, iperf3_argv, iperf3_role_error};
use crate::traffic::client::ClientConfig;
use crate::traffic::spec::TestSpec;
use clap::Parser;
use std::time::Duration;

/// iperf3 3.21's long options (`src/iperf_api.c`'s table) that take a value, with one (and an
/// option they need after it); the rest are flags. Options of the other role only are left out
/// of each list.
const IPERF3_CLIENT_OPTIONS: &[(&str, Option<&str>)] = &[
    ("port", Some("5201")),
    ("format", Some("m")),
    ("interval", Some("1")),
    ("verbose", None),
    ("json", None),
    ("json-stream", None),
    ("json-stream-full-output", Some("--json-stream")),
    ("udp", None),
    ("bitrate", Some("1M")),
    ("bandwidth", Some("1M")),
    ("time", Some("2")),
    ("bytes", Some("1M")),
    ("blockcount", Some("10")),
    ("length", Some("1400")),
    ("parallel", Some("2")),
    ("reverse", None),
    ("bidir", None),
    ("window", Some("1M")),
    ("bind", Some("127.0.0.1")),
    ("bind-dev", Some("lo")),
    ("cport", Some("5500")),
    ("set-mss", Some("1400")),
    ("no-delay", None),
    ("version4", None),
    ("version6", None),
    ("tos", Some("0x10")),
    ("dscp", Some("ef")),
    ("extra-data", Some("run-7")),
    ("flowlabel", Some("5")),
    ("zerocopy", None),
    ("omit", Some("1")),
    ("file", Some("f")),
    ("repeating-payload", None),
    ("timestamps", None),
    ("affinity", Some("0")),
    ("title", Some("t")),
    ("congestion", Some("cubic")),
    ("linux-congestion", Some("cubic")),
    ("sctp", None),
    ("nstreams", Some("2")),
    ("xbind", Some("h")),
    ("logfile", Some("/tmp/l")),
    ("forceflush", None),
    ("get-server-output", None),
    ("udp-counters-64bit", None),
    ("no-fq-socket-pacing", None),
    ("dont-fragment", None),
    ("skip-rx-copy", None),
    ("username", Some("u --rsa-public-key-path k")),
    ("rsa-public-key-path", Some("k --username u")),
    ("use-pkcs1-padding", None),
    ("fq-rate", Some("1G")),
    ("pacing-timer", Some("1000")),
    ("connect-timeout", Some("3000")),
    ("rcv-timeout", Some("5000")),
    ("snd-timeout", Some("5000")),
    ("cntl-ka", None),
    ("mptcp", None),
    ("gsro", None),
    ("debug", None),
    ("pidfile", Some("/tmp/p")),
];

const IPERF3_SERVER_OPTIONS: &[(&str, Option<&str>)] = &[
    ("port", Some("5201")),
    ("format", Some("m")),
    ("interval", Some("1")),
    ("daemon", None),
    ("one-off", None),
    ("verbose", None),
    ("json", None),
    ("server-max-duration", Some("60")),
    ("bind", Some("127.0.0.1")),
    ("version4", None),
    ("affinity", Some("0")),
    ("pidfile", Some("/tmp/p")),
    ("logfile", Some("/tmp/l")),
    ("forceflush", None),
    ("timestamps", None),
    ("rsa-private-key-path", Some("k --authorized-users-path u")),
    ("authorized-users-path", Some("u --rsa-private-key-path k")),
    (
        "time-skew-threshold",
        Some("10 --rsa-private-key-path k --authorized-users-path u"),
    ),
    (
        "use-pkcs1-padding",
        Some("--rsa-private-key-path k --authorized-users-path u"),
    ),
    ("idle-timeout", Some("10")),
    ("rcv-timeout", Some("5000")),
    ("snd-timeout", Some("5000")),
    ("cntl-ka", None),
    ("server-bitrate-limit", Some("1G/5")),
    ("bind-dev", Some("lo")),
    ("mptcp", None),
    ("json-stream", None),
    ("debug", None),
];

/// Every iperf3 option of each role is known to netsweep's command line as iperf3 writes it
/// (`netsweep -c HOST --OPTION` or `netsweep -s --OPTION`): honoured, accepted with a note, or
/// refused by name later, never clap's "unexpected argument".
#[test]
fn every_iperf3_option_of_each_role_is_known() {
    for (role, options) in [("-c", IPERF3_CLIENT_OPTIONS), ("-s", IPERF3_SERVER_OPTIONS)] {
        for (name, value) in options {
            let mut argv: Vec<String> = vec!["netsweep".into(), role.into()];
            if role == "-c" {
                argv.push("127.0.0.1".into());
            }
            argv.push(format!("--{name}"));
            argv.extend(value.iter().flat_map(|v| v.split(' ')).map(String::from));
            let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
            if let Err(e) = Cli::try_parse_from(iperf3_argv(os)) {
                panic!("{argv:?}: {e}");
            }
        }
    }
}

/// What the iperf3 options accepted without acting say, and what the honoured ones do.
#[test]
fn iperf3_options_netsweep_does_not_act_on_are_said_and_the_others_honoured() {
    let (cfg, _) = client(&[
        "127.0.0.1",
        "-u",
        "--gsro",
        "--pacing-timer",
        "500",
        "--cntl-ka",
    ])
    .unwrap();
    let notes = cfg.notes.join("\n");
    for flag in ["--gsro: accepted; netsweep's UDP", "--pacing-timer"] {
        assert!(notes.contains(flag), "{flag}: {notes}");
    }
    // --cntl-ka is honoured: the system's keepalive on the control connection.
    assert!(!notes.contains("--cntl-ka"), "{notes}");
    let system = crate::platform::sockopt::system_keepalive().unwrap();
    assert_eq!(cfg.liveness.control_keepalive, Some(system));
    assert_eq!(cfg.liveness.user_timeout, None);
    let (cfg, _) = client(&["127.0.0.1", "--gsro", "--snd-timeout", "100"]).unwrap();
    let notes = cfg.notes.join("\n");
    assert!(
        notes.contains("--gsro: accepted and ignored: it applies to UDP"),
        "{notes}"
    );
    assert!(!notes.contains("--snd-timeout"), "{notes}");
    assert_eq!(
        cfg.liveness.user_timeout,
        crate::platform::sockopt::HAS_USER_TIMEOUT.then_some(Duration::from_millis(100))
    );
    assert_eq!(cfg.liveness.control_keepalive, None);
    let (cfg, _) = client(&["127.0.0.1", "--cntl-ka=60/10/3", "--snd-timeout", "0"]).unwrap();
    assert_eq!(
        cfg.liveness,
        crate::traffic::liveness::Liveness {
            control_keepalive: Some(crate::platform::sockopt::Keepalive {
                idle: Duration::from_secs(60),
                interval: Duration::from_secs(10),
                count: 3
            }),
            user_timeout: None,
        }
    );
    for (args, says) in [
        (
            &["127.0.0.1", "--cntl-ka=5/10/3"][..],
            "must be longer than",
        ),
        (&["127.0.0.1", "--cntl-ka=x"][..], "not a whole number"),
        (&["127.0.0.1", "--snd-timeout", "86400001"][..], "at most"),
    ] {
        let Err(e) = client(args) else {
            panic!("{args:?} was taken")
        };
        assert!(e.to_string().contains(says), "{args:?}: {e}");
    }
    let (cfg, spec) = client(&[
        "127.0.0.1",
        "--udp-counters-64bit",
        "--bind-dev",
        "lo",
        "--bandwidth",
        "5M",
        "--set-mss",
        "1200",
        "--linux-congestion",
        "reno",
        "--version4",
    ])
    .unwrap();
    assert!(cfg.udp_counters_64bit);
    assert!(matches!(&cfg.bind, Some(crate::traffic::client::Bind::Device(d)) if d == "lo"));
    assert_eq!(spec.bitrate_bps, 5e6);
    assert_eq!(spec.mss_bytes, Some(1200));
    assert_eq!(spec.congestion.as_deref(), Some("reno"));
    assert!(cfg.server.is_ipv4());
    for (args, refused) in [
        (&["127.0.0.1", "--nstreams", "2"][..], "--sctp"),
        (&["127.0.0.1", "--xbind", "a"][..], "--sctp"),
    ] {
        let Err(e) = client(args) else {
            panic!("{args:?} was not refused")
        };
        let e = e.to_string();
        assert!(e.contains(refused), "{args:?}: {e}");
    }
    // The server: iperf3's name for the longest test, and its notes.
    let c = server_of(&["-s", "--server-max-duration", "90", "-i", "2", "-V"]).unwrap();
    assert_eq!(c.limits.max_duration, Duration::from_secs(90));
    assert!(c.output.notes.join("").contains("-V: accepted and ignored"));
    // -i is the interval of iperf3 clients' tests, in iperf3's bounds (0.1 to 60, or 0).
    assert_eq!(c.limits.iperf3_interval, Duration::from_secs(2));
    let interval = |v: &str| server_of(&["-s", "-i", v]).map(|c| c.limits.iperf3_interval);
    assert_eq!(interval("0.5").unwrap(), Duration::from_millis(500));
    assert_eq!(interval("0").unwrap(), Duration::ZERO);
    assert_eq!(
        server_of(&["-s"]).unwrap().limits.iperf3_interval,
        Duration::from_secs(1)
    );
    for bad in ["0.05", "61", "-1"] {
        let e = format!("{:#}", interval(bad).unwrap_err());
        assert!(
            e.contains("invalid report interval (min = 0.1, max = 60"),
            "{bad}: {e}"
        );
    }
    let c = server_of(&[
        "-s",
        "--server-bitrate-limit",
        "2G/10",
        "--cntl-ka=120/10/5",
        "--snd-timeout",
        "3000",
    ])
    .unwrap();
    let limit = c.limits.bitrate_limit.expect("the limit");
    assert_eq!(
        (limit.bits_per_second, limit.window, c.limits.max_rate_bps),
        (2e9, Duration::from_secs(10), 0.0)
    );
    let notes = c.output.notes.join("\n");
    assert!(!notes.contains("--server-bitrate-limit"), "{notes}");
    assert!(!notes.contains("--cntl-ka"), "{notes}");
    assert_eq!(
        c.limits.liveness.control_keepalive,
        Some(crate::platform::sockopt::Keepalive {
            idle: Duration::from_secs(120),
            interval: Duration::from_secs(10),
            count: 5
        })
    );
    assert_eq!(
        c.limits.liveness.user_timeout,
        crate::platform::sockopt::HAS_USER_TIMEOUT.then_some(Duration::from_secs(3))
    );
    let Err(e) = server_of(&["-s", "--server-bitrate-limit", "2G/100"]) else {
        panic!("an averaging time of 100 s was taken")
    };
    assert!(e.to_string().contains("0.1 to 60 seconds"), "{e}");
    for (flag, refused) in [
        (&["-s", "--bind-dev", "lo"][..], "--bind-dev"),
        (&["-s", "-m"][..], "-m/--mptcp"),
        (&["-s", "--json-stream"][..], "--json-stream"),
    ] {
        let Err(e) = server_of(flag) else {
            panic!("{flag:?} was not refused")
        };
        assert!(e.to_string().starts_with(refused), "{flag:?}: {e}");
    }
    let c = server_of(&["-s", "--server-max-duration", "0"]).unwrap();
    assert!(c.limits.max_duration >= Duration::from_secs(86_400));
    let c = server_of(&[
        "-s",
        "-D",
        "-I",
        "/tmp/p",
        "--logfile",
        "/tmp/l",
        "--timestamps",
    ])
    .unwrap();
    assert!(
        !c.output.background,
        "the -D server's own flag is the child's"
    );
    assert_eq!(c.output.timestamps.as_deref(), Some("%c "));
    assert_eq!(
        c.output.pidfile.as_deref(),
        Some(std::path::Path::new("/tmp/p"))
    );
}

/// iperf3's `-v` prints the version as iperf3's first line gives it ("iperf 3.21 ..."), so a
/// probe that reads its second word reads iperf3's version; `--version` is netsweep's.
#[test]
fn v_alone_is_the_version() {
    let os = |a: &[&str]| -> Vec<std::ffi::OsString> { a.iter().map(Into::into).collect() };
    let text = crate::cli::iperf3_version(&os(&["netsweep", "-v"])).expect("-v");
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("iperf 3.21 (netsweep "), "{first}");
    assert_eq!(first.split_whitespace().nth(1), Some("3.21"));
    let features = text
        .lines()
        .find_map(|l| l.strip_prefix("Optional features available: "))
        .expect("iperf3's features line");
    for f in [
        "authentication",
        "TCP congestion algorithm",
        "CPU affinity setting",
    ] {
        assert!(features.split(", ").any(|x| x == f), "{features}");
    }
    assert!(!features.contains("SCTP"), "{features}");
    assert_eq!(
        crate::cli::iperf3_version(&os(&["netsweep", "--version"])),
        None
    );
    assert_eq!(
        crate::cli::iperf3_version(&os(&["netsweep", "-c", "h", "-v"])),
        None
    );
    let e = Cli::try_parse_from(iperf3_argv(os(&["netsweep", "--version"]))).unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
}

/// clap's own checks of the whole command line (no flag named twice in one command, every
/// `requires` and `conflicts_with` naming an argument), which release builds skip at run time.
#[test]
fn the_command_line_passes_claps_checks() {
    use clap::CommandFactory;
    Cli::command().debug_assert();
}

/// iperf3's `-t 0`: until interrupted, with iperf3's protocol (whose client says when the test
/// ends), the grid only the ceiling iperf3 allows; it was refused ("duration must be more than
/// 0").
#[test]
fn t0_runs_until_interrupted_with_iperf3s_protocol() {
    use crate::traffic::client::PeerProtocol;
    let (cfg, spec) = client(&["127.0.0.1", "-t", "0"]).unwrap();
    assert!(spec.until_stopped);
    assert_eq!(cfg.peer, PeerProtocol::Iperf3);
    assert_eq!(spec.duration, Duration::from_secs(86_400));
    assert!(spec.count.is_none());
    let p = crate::traffic::iperf3::client::params_for(&spec).unwrap();
    assert_eq!((p.time_s, p.bytes, p.blocks), (0, 0, 0));
    // A time is still a time, and -t auto is not -t 0.
    let (cfg, spec) = client(&["127.0.0.1", "-t", "3"]).unwrap();
    assert!(!spec.until_stopped);
    assert_ne!(cfg.peer, PeerProtocol::Iperf3);
    let (_, spec) = client(&["127.0.0.1", "-t", "auto"]).unwrap();
    assert!(!spec.until_stopped && spec.steady.is_some());
    // One interval over a day would hold Ctrl-C's end for the day.
    let e = format!(
        "{:#}",
        client(&["127.0.0.1", "-t", "0", "-i", "0"]).unwrap_err()
    );
    assert!(e.contains("-i 0 with -t 0"), "{e}");
}

/// Without `-p` the client tries iperf3's 5201 when nothing listens on 5310, telling the
/// servers apart there; with `-p` it goes where it is told.
#[test]
fn without_p_iperf3s_port_is_the_fallback() {
    use crate::traffic::client::PeerProtocol;
    let (cfg, _) = client(&["127.0.0.1"]).unwrap();
    assert_eq!(cfg.server.port(), 5310);
    assert_eq!(cfg.port_fallback, Some(5201));
    let moved = cfg.on_port(5201);
    assert_eq!(moved.server.port(), 5201);
    assert_eq!(
        (moved.peer, moved.port_fallback),
        (PeerProtocol::Detect, None)
    );
    // A count keeps iperf3's protocol on the other port.
    let (cfg, _) = client(&["127.0.0.1", "-n", "1M"]).unwrap();
    assert_eq!(cfg.on_port(5201).peer, PeerProtocol::Iperf3);
    // --iperf3 too: netsweep's servers serve iperf3's protocol on 5310 (the VM experiment's
    // guests do), and iperf3's own listen on 5201.
    let (cfg, _) = client(&["127.0.0.1", "--iperf3"]).unwrap();
    assert_eq!((cfg.server.port(), cfg.port_fallback), (5310, Some(5201)));
    assert_eq!(cfg.on_port(5201).peer, PeerProtocol::Iperf3);
    for port in ["5310", "5201", "6000"] {
        let (cfg, _) = client(&["127.0.0.1", "-p", port]).unwrap();
        assert_eq!(cfg.port_fallback, None, "-p {port}");
    }
}

/// iperf3's words for a command line clap refuses (`netsweep ARGS`), if they differ.
fn error(args: &[&str]) -> Option<String> {
    let os: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    let argv = iperf3_argv(os);
    let e = Cli::try_parse_from(&argv).expect_err("refused");
    iperf3_role_error(&argv, &e)
}

/// Options iperf3 refuses together get iperf3's words on its command line (clap's own on
/// netsweep's spelling).
#[test]
fn conflicting_options_are_refused_in_iperf3s_words() {
    assert_eq!(
        error(&["netsweep", "-c", "127.0.0.1", "-R", "--bidir"]).as_deref(),
        Some("parameter error - cannot be both reverse and bidirectional")
    );
    for ends in [["-n", "1M", "-t", "2"], ["-k", "10", "-n", "1M"]] {
        let mut args = vec!["netsweep", "-c", "127.0.0.1"];
        args.extend(ends);
        assert_eq!(
            error(&args).as_deref(),
            Some("parameter error - only one test end condition (-t, -n, -k) may be specified"),
            "{args:?}"
        );
    }
    assert_eq!(
        error(&["netsweep", "client", "127.0.0.1", "-R", "--bidir"]),
        None
    );
}

/// An option of the other role on iperf3's command line gets iperf3's words (and a way that
/// works), not clap's "unexpected argument" with a `-- -D` tip that fails the same way; an
/// option neither role knows stays clap's error.
#[test]
fn the_other_roles_options_are_refused_in_iperf3s_words() {
    for args in [
        &["netsweep", "-c", "127.0.0.1", "-D"][..],
        &["netsweep", "-c", "127.0.0.1", "-1"],
        &[
            "netsweep",
            "-c",
            "127.0.0.1",
            "--server-bitrate-limit",
            "1G",
        ],
        &["netsweep", "-c", "127.0.0.1", "--idle-timeout=5"],
    ] {
        let why = error(args).unwrap_or_else(|| panic!("{args:?}"));
        assert!(
            why.contains("some option you are trying to set is server only")
                && why.contains("`netsweep -s` takes it"),
            "{why}"
        );
    }
    for args in [
        &["netsweep", "-s", "-t", "5"][..],
        &["netsweep", "-s", "-P", "2"],
        &["netsweep", "-s", "--bidir"],
    ] {
        let why = error(args).unwrap_or_else(|| panic!("{args:?}"));
        assert!(why.contains("is client only"), "{why}");
        assert!(why.contains(args[2]), "{why}");
    }
    assert_eq!(error(&["netsweep", "-c", "127.0.0.1", "--bogus"]), None);
    assert_eq!(error(&["netsweep", "-s", "--bogus"]), None);
    // netsweep's own subcommands keep clap's errors.
    assert_eq!(error(&["netsweep", "client", "127.0.0.1", "-D"]), None);
}

/// iperf3's bounds are said before connecting, in its words: streams, duration, window, port.
#[test]
fn iperf3s_bounds_are_refused_before_connecting() {
    for (args, words) in [
        (
            &["127.0.0.1", "-P", "129"][..],
            "invalid number of parallel streams",
        ),
        (
            &["127.0.0.1", "-t", "86401"],
            "test duration valid values are 0 to 86400",
        ),
        (&["127.0.0.1", "-w", "513M"], "socket buffer size too large"),
        (
            &["127.0.0.1", "-p", "0"],
            "port number must be between 1 and 65535",
        ),
    ] {
        let e = format!("{:#}", client(args).unwrap_err());
        assert!(e.contains(words), "{args:?}: {e}");
    }
    for ok in [
        &["127.0.0.1", "-P", "128"][..],
        &["127.0.0.1", "-t", "86400"],
        &["127.0.0.1", "-w", "512M"],
        &["127.0.0.1", "-t", "0"],
        &["127.0.0.1", "-n", "1G"],
    ] {
        assert!(client(ok).is_ok(), "{ok:?}");
    }
}

/// iperf3's command line keeps iperf3's report interval bounds (0.1 to 60 s, or 0) and says
/// `-P 0` in the words of `-P 129`; netsweep's own spelling keeps its finer intervals.
#[test]
fn iperf3s_interval_and_stream_bounds_on_its_command_line() {
    let iperf3 = |args: &[&str]| -> anyhow::Result<(ClientConfig, TestSpec)> {
        let argv = ["netsweep", "-c", "127.0.0.1"]
            .iter()
            .chain(args)
            .map(std::ffi::OsString::from)
            .collect();
        match Cli::try_parse_from(iperf3_argv(argv))?.command {
            crate::cli::Command::Client(c) => <(ClientConfig, TestSpec)>::try_from(&*c),
            _ => anyhow::bail!("not a client"),
        }
    };
    for bad in ["0.05", "61"] {
        let e = format!("{:#}", iperf3(&["-i", bad]).unwrap_err());
        assert!(
            e.contains("invalid report interval (min = 0.1, max = 60 seconds"),
            "{bad}: {e}"
        );
    }
    for ok in ["0", "0.1", "0.5", "60"] {
        assert!(iperf3(&["-i", ok]).is_ok(), "{ok}");
    }
    let e = format!("{:#}", iperf3(&["-P", "0"]).unwrap_err());
    assert!(e.contains("(min = 1, max = 128)"), "{e}");
    assert!(client(&["127.0.0.1", "-i", "0.05"]).is_ok());
}
