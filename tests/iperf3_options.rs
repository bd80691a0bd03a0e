//! iperf3's remaining options, end to end through the built binary: a server in the background
//! (`-D`, `-I`, `--logfile`, `--timestamps`) as an init script starts iperf3, and the client's
//! `--timestamps`, `--extra-data` and `--json-stream-full-output`.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn netsweep(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .output()
        .expect("run netsweep")
}

/// `netsweep -c 127.0.0.1 -p PORT -t 1 ARGS`.
fn one_second_test(port: &str, args: &[&str]) -> Output {
    let mut all = vec!["-c", "127.0.0.1", "-p", port, "-t", "1"];
    all.extend_from_slice(args);
    netsweep(&all)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A one-off server (`PROGRAM -s -1 -B HOST -p PORT EXTRA`: iperf3 or netsweep) on a free
/// port, once it listens; its port.
fn one_off_server(program: &str, host: &str, extra: &[&str]) -> (String, std::process::Child) {
    let port = common::free_port().to_string();
    let child = Command::new(program)
        .args(["-s", "-1", "-B", host, "-p", &port])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} -s: {e}"));
    let bracketed = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    common::wait_listening_quietly(bracketed.parse().unwrap());
    (port, child)
}

/// What a one-off server printed on standard output once it ended.
fn said_by(mut server: std::process::Child) -> String {
    common::wait_bounded(&mut server, Duration::from_secs(20), "the one-off server");
    text(
        &server
            .wait_with_output()
            .expect("the server's output")
            .stdout,
    )
}

fn pid_in(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn running(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Ends the background server named by a pidfile when the test ends, passed or failed.
struct Daemon(PathBuf);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = pid_in(&self.0) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            common::wait_bounded_until(Duration::from_secs(10), "the server to end", || {
                !running(pid)
            });
        }
    }
}

#[test]
fn a_server_in_the_background_holds_its_pidfile_logs_and_goes_cleanly() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let (pidfile, log) = (dir.path().join("ns.pid"), dir.path().join("ns.log"));
    let port = common::free_port().to_string();
    let out = netsweep(&[
        "-s",
        "-p",
        &port,
        "-D",
        "-I",
        pidfile.to_str().unwrap(),
        "--logfile",
        log.to_str().unwrap(),
        "--timestamps=[%s] ",
        "-V",
    ]);
    let _daemon = Daemon(pidfile.clone());
    let said = text(&out.stderr);
    assert!(out.status.success(), "{said}");
    // -D returns once the server listens, having shown what it said.
    let pid = pid_in(&pidfile).expect("the pidfile holds the server's ID");
    assert!(
        said.contains(&format!("running in the background as process {pid}")),
        "{said}"
    );
    assert!(said.contains("netsweep server listening on"), "{said}");
    assert!(said.contains("-V: accepted and ignored"), "{said}");
    assert!(running(pid));
    assert_ne!(pid, std::process::id());
    // The server is in a session of its own: a Ctrl-C at the terminal that started it does
    // not reach it.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let session: u32 = after_name.split(' ').nth(3).unwrap().parse().unwrap();
    assert_eq!(session, pid, "{stat}");

    // A test against it; the client's own time before each line, and its extra data.
    // With -f too: both options once shared a name inside clap.
    let out = one_second_test(&port, &["--timestamps=%Y@ ", "-T", "run7", "-f", "m"]);
    let client = text(&out.stdout);
    assert!(out.status.success(), "{client}{}", text(&out.stderr));
    let year = common_year();
    for line in client.lines() {
        assert!(
            line.starts_with(&format!("{year}@ run7:  ")),
            "every line starts with the time, then the title: {line:?}"
        );
    }
    let out = one_second_test(&port, &["--extra-data", "batch 12", "-J"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("-J's document");
    assert_eq!(doc["extra_data"], "batch 12");
    assert!(doc["end"]["sum_received"]["bytes"].as_f64().unwrap() > 0.0);

    // The log has the startup and each test, each line with the server's time.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("netsweep server listening on"), "{logged}");
    let lines: Vec<&str> = logged.lines().collect();
    assert!(lines.len() >= 3, "startup and two tests: {logged}");
    for line in &lines {
        let stamp = line
            .strip_prefix('[')
            .and_then(|l| l.split_once("] "))
            .and_then(|(s, _)| s.parse::<u64>().ok());
        assert!(stamp.is_some(), "{line:?} starts with [%s] ");
    }

    // A second server on the same pidfile is refused while the first runs (were it not, it
    // would end on its own: -1 with an idle timeout).
    let other = common::free_port().to_string();
    let out = netsweep(&[
        "-s",
        "-p",
        &other,
        "-1",
        "--idle-timeout",
        "2",
        "-I",
        pidfile.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("process {pid} is running")),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(pid_in(&pidfile), Some(pid));

    // SIGTERM ends it, and it takes its pidfile with it.
    let _ = Command::new("kill").arg(pid.to_string()).status();
    common::wait_bounded_until(Duration::from_secs(10), "the server to end", || {
        !running(pid)
    });
    assert!(!pidfile.exists(), "the pidfile stayed");
}

/// This year, as the clock says (strftime's %Y in the client's own time zone is checked
/// against it, so the test does not hang on time-zone details).
fn common_year() -> String {
    text(
        &Command::new("date")
            .arg("+%Y")
            .output()
            .expect("date")
            .stdout,
    )
    .trim()
    .to_string()
}

/// Under the name iperf3 (a link), `-D` is as quiet as iperf3's and the background server
/// keeps the name: `pgrep -x iperf3`, `pidof` and `killall` find it by the process name the
/// kernel gives it (the path it was started by), not netsweep's. A server that cannot listen
/// still says why.
#[test]
fn a_background_server_started_as_iperf3_is_quiet_and_named_iperf3() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("iperf3");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_netsweep"), &link).unwrap();
    let pidfile = dir.path().join("d.pid");
    let port = common::free_port().to_string();
    let args = ["-s", "-p", &port, "-D", "-I", pidfile.to_str().unwrap()];
    let out = Command::new(&link).args(args).output().unwrap();
    let _daemon = Daemon(pidfile.clone());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(text(&out.stderr), "");
    let pid = pid_in(&pidfile).expect("the pidfile holds the server's ID");
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(comm.trim(), "iperf3");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(cmdline.starts_with(link.to_str().unwrap().as_bytes()));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().port().to_string();
    let other = dir.path().join("other.pid");
    let args = [
        "-s",
        "-B",
        "127.0.0.1",
        "-p",
        &busy,
        "-D",
        "-I",
        other.to_str().unwrap(),
    ];
    let out = Command::new(&link).args(args).output().unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot listen on"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_server_that_cannot_listen_fails_d_on_the_terminal_and_leaves_no_pidfile() {
    let _serial = common::loopback::serial();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("ns.pid");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = netsweep(&[
        "-s",
        "-B",
        "127.0.0.1",
        "-p",
        &port,
        "-D",
        "-I",
        pidfile.to_str().unwrap(),
    ]);
    let _daemon = Daemon(pidfile.clone());
    let said = text(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("cannot listen on"), "{said}");
    assert!(
        said.contains("-D: the server ended before it listened"),
        "{said}"
    );
    assert!(!pidfile.exists());
}

#[test]
fn json_stream_full_output_prints_the_events_then_the_document() {
    let _serial = common::loopback::serial();
    let server = common::TestServer::start(Default::default());
    let port = server.addr.port().to_string();
    let out = one_second_test(
        &port,
        &[
            "--json-stream",
            "--json-stream-full-output",
            "--extra-data",
            "x",
        ],
    );
    let all = text(&out.stdout);
    assert!(out.status.success(), "{all}{}", text(&out.stderr));
    let (events, document): (Vec<&str>, Vec<&str>) =
        all.lines().partition(|l| l.starts_with("{\"event\""));
    let names: Vec<String> = events
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].to_string())
        .collect();
    assert_eq!(names.first().map(String::as_str), Some("\"start\""));
    assert_eq!(names.last().map(String::as_str), Some("\"end\""));
    let doc: Value = serde_json::from_str(&document.join("\n")).expect("the whole document");
    assert_eq!(doc["extra_data"], "x");
    assert!(doc["intervals"].as_array().is_some_and(|i| !i.is_empty()));
}

/// `--udp-counters-64bit` against iperf3's own server (`-d` prints the parameters it got): it
/// is asked for 64-bit sequence numbers and reads them; a header of the other width would show
/// as loss or disorder in its count.
#[test]
fn udp_counters_64bit_are_asked_of_an_iperf3_server_and_read_by_it() {
    let _serial = common::loopback::serial();
    if !common::tool_or_skip("udp_counters_64bit_are_asked_of_an_iperf3_server", "iperf3") {
        return;
    }
    for asked in [true, false] {
        let (port, server) = one_off_server("iperf3", "127.0.0.1", &["-d"]);
        let mut args = vec![
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "--iperf3",
            "-u",
            "-b",
            "50M",
            "-l",
            "1400",
            "-t",
            "2",
        ];
        if asked {
            args.push("--udp-counters-64bit");
        }
        let out = netsweep(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let said = said_by(server);
        assert_eq!(said.contains("\"udp_counters_64bit\""), asked, "{said}");
        // The receiver line: "0/8928 (0%)  receiver" at 50 Mbit/s for 2 s.
        let receiver = said
            .lines()
            .find(|l| l.contains("receiver"))
            .unwrap_or_else(|| panic!("no receiver line: {said}"));
        // The one word of two numbers around a slash ("Mbits/sec" is not it).
        let counts = receiver
            .split_whitespace()
            .find_map(|w| {
                let (lost, total) = w.split_once('/')?;
                Some((lost.parse::<u64>().ok()?, total.parse::<u64>().ok()?))
            })
            .unwrap_or_else(|| panic!("{receiver}"));
        assert!(
            counts.0 == 0 && counts.1 > 4_000,
            "asked {asked}: {receiver}"
        );
    }
}

/// `-L`: a labelled test over IPv6 runs against netsweep's server (TCP and UDP) and against
/// iperf3's, which is told the label (`-d` prints the parameters); iperf3's own client with `-L`
/// is served by netsweep's server; towards IPv4 the client says why it cannot. That the packets
/// carry the label is checked against the kernel in `client::socket`'s tests.
#[test]
fn a_flow_label_is_set_sent_and_served_as_by_iperf3() {
    let _serial = common::loopback::serial();
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("SKIPPED a_flow_label_is_set_sent_and_served_as_by_iperf3: no IPv6 loopback");
        return;
    }
    let server = common::TestServer::start_on("[::1]:0", Default::default());
    let port = server.addr.port().to_string();
    for udp in [&[][..], &["-u", "-b", "20M"][..]] {
        let mut args = vec!["-c", "::1", "-p", &port, "-t", "1", "-L", "0x12345"];
        args.extend_from_slice(udp);
        let out = netsweep(&args);
        assert!(out.status.success(), "{udp:?}: {}", text(&out.stderr));
    }
    let out = netsweep(&["-c", "127.0.0.1", "-p", &port, "-t", "1", "-L", "5"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not an IPv6 address"),
        "{}",
        text(&out.stderr)
    );
    if !common::tool_or_skip("a_flow_label_is_set_sent_and_served_as_by_iperf3", "iperf3") {
        return;
    }
    let out = Command::new("iperf3")
        .args(["-c", "::1", "-p", &port, "-t", "1", "-L", "74565"])
        .output()
        .expect("iperf3 -c");
    assert!(
        out.status.success(),
        "iperf3 -L against netsweep: {}",
        text(&out.stdout)
    );
    let (own, iperf3) = one_off_server("iperf3", "::1", &["-d"]);
    let out = netsweep(&[
        "-c", "::1", "-p", &own, "--iperf3", "-t", "1", "-L", "74565",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = said_by(iperf3);
    assert!(
        said.contains("\"flowlabel\":\t74565") || said.contains("\"flowlabel\":74565"),
        "{said}"
    );
}

/// `-T` and `--extra-data` reach the far end's `-J` document, as between iperf3s: netsweep's
/// client tells iperf3's server, and netsweep's server writes what iperf3's client told it.
#[test]
fn a_title_and_extra_data_reach_the_servers_document() {
    let _serial = common::loopback::serial();
    if !common::tool_or_skip(
        "a_title_and_extra_data_reach_the_servers_document",
        "iperf3",
    ) {
        return;
    }
    let document = |server| -> Value {
        let said = said_by(server);
        serde_json::from_str(&said).unwrap_or_else(|e| panic!("{e}: {said}"))
    };
    let (port, iperf3) = one_off_server("iperf3", "127.0.0.1", &["-J"]);
    let out = netsweep(&[
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "--iperf3",
        "-t",
        "1",
        "-T",
        "run 7",
        "--extra-data",
        "site=a",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = document(iperf3);
    assert_eq!(
        (&doc["title"], &doc["extra_data"]),
        (&"run 7".into(), &"site=a".into())
    );
    let netsweep_server = env!("CARGO_BIN_EXE_netsweep");
    let (port, ours) = one_off_server(
        netsweep_server,
        "127.0.0.1",
        &["-J", "--idle-timeout", "20"],
    );
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-T", "run 8"])
        .args(["--extra-data", "site=b"])
        .output()
        .expect("iperf3 -c");
    assert!(out.status.success(), "{}", text(&out.stdout));
    let doc = document(ours);
    assert_eq!(
        (&doc["title"], &doc["extra_data"]),
        (&"run 8".into(), &"site=b".into())
    );
    // netsweep's own client keeps them at the top of both of its documents, as iperf3's.
    for json in ["--json", "--json=netsweep"] {
        let (port, server) = one_off_server(netsweep_server, "127.0.0.1", &[]);
        let out = netsweep(&[
            "client",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "1",
            json,
            "-T",
            "run 9",
            "--extra-data",
            "site=c",
        ]);
        let _ = said_by(server);
        let doc: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{json}: {e}: {}", text(&out.stderr)));
        assert_eq!(
            (&doc["title"], &doc["extra_data"]),
            (&"run 9".into(), &"site=c".into()),
            "{json}"
        );
    }
}

/// `--server-bitrate-limit` as iperf3's server enforces it, checked against iperf3's own server
/// with the same clients: a test asking more in total is refused at its start; an unlimited one
/// runs and is ended once its average over the window passes the limit (iperf3's error 27);
/// one within the limit runs to its end. netsweep's server tells the client why in each case
/// (iperf3's closes the control connection at a refused start); netsweep's own client hears
/// why too.
#[test]
fn a_server_bitrate_limit_refuses_and_ends_tests_as_iperf3s_does() {
    let _serial = common::loopback::serial();
    if !common::tool_or_skip(
        "a_server_bitrate_limit_refuses_and_ends_tests_as_iperf3s_does",
        "iperf3",
    ) {
        return;
    }
    let limit = ["--server-bitrate-limit", "300M/1"];
    let over = "total required bandwidth is larger than server limit";
    for program in ["iperf3", env!("CARGO_BIN_EXE_netsweep")] {
        for (client, refused) in [
            (&["-P", "2", "-b", "200M"][..], true),
            (&[][..], true),
            (&["-P", "2", "-b", "50M"][..], false),
        ] {
            let mut extra = vec!["--idle-timeout", "20"];
            extra.extend_from_slice(&limit);
            let (port, server) = one_off_server(program, "127.0.0.1", &extra);
            let t0 = std::time::Instant::now();
            let out = Command::new("iperf3")
                .args(["-c", "127.0.0.1", "-p", &port, "-t", "4"])
                .args(client)
                .output()
                .expect("iperf3 -c");
            let took = t0.elapsed();
            let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
            let _ = said_by(server);
            assert_eq!(
                !out.status.success(),
                refused,
                "{program} {client:?}: {said}"
            );
            if refused {
                // iperf3's own server refuses at the start by closing the control connection
                // without a word, and ends a running test by closing the streams as it says
                // why (its client may meet the reset first); netsweep's tells the client why.
                assert!(
                    said.contains(over) || program == "iperf3",
                    "{program} {client:?}: {said}"
                );
                // Refused at the start, or ended within a few intervals, not at the end.
                assert!(
                    took < Duration::from_millis(3800),
                    "{program} {client:?}: {took:?}"
                );
            }
        }
    }
    let (port, server) = one_off_server(env!("CARGO_BIN_EXE_netsweep"), "127.0.0.1", &limit);
    let out = netsweep(&["-c", "127.0.0.1", "-p", &port, "-t", "4"]);
    let _ = said_by(server);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--server-bitrate-limit of 300 Mbits/sec"),
        "{}",
        text(&out.stderr)
    );
}

/// Standing in for iperf3 under its name (a link `iperf3` to netsweep): `iperf3 --version`
/// is iperf3's first line, which pScheduler's iperf3 tool reads, and an error reads as
/// iperf3's ("iperf3: error - unable to connect to server: ..."), which wrappers match.
#[test]
fn under_iperf3s_name_the_version_and_errors_are_iperf3s() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("iperf3");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_netsweep"), &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg("--version")
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(
        out.status.success() && said.starts_with("iperf 3."),
        "{said}"
    );
    // A port nothing listens on (bound, never listening): refused at once.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    drop(held);
    let out = std::process::Command::new(&link)
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("iperf3: error - unable to connect to server"),
        "{err}"
    );
    // Under netsweep's own name, netsweep's --version and its own name in the message.
    let out = netsweep(&["--version"]);
    assert!(text(&out.stdout).starts_with("netsweep "), "{out:?}");
    let out = netsweep(&["-c", "127.0.0.1", "-p", &port, "-t", "1"]);
    let err = text(&out.stderr);
    assert!(
        err.starts_with("netsweep: error - unable to connect to server"),
        "{err}"
    );
}

/// Under the name iperf3: `-h` is iperf3's usage with every option of both roles (feature
/// probes grep it: `iperf3 --help | grep -q -- --bidir`), no arguments is iperf3's parameter
/// error with exit status 1, and `-v` has iperf3's features line.
#[test]
fn iperf3s_help_and_version_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("iperf3");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_netsweep"), &link).unwrap();
    let run = |args: &[&str]| Command::new(&link).args(args).output().unwrap();
    for flag in ["-h", "--help"] {
        let out = run(&[flag]);
        let help = text(&out.stdout);
        assert!(out.status.success(), "{help}");
        assert!(
            help.starts_with("Usage: iperf3 [-s|-c host] [options]"),
            "{help}"
        );
        for option in [
            "--bidir",
            "--rcv-timeout",
            "--get-server-output",
            "--one-off",
        ] {
            assert!(help.contains(option), "{option}: {help}");
        }
    }
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("iperf3: parameter error - must either be a client (-c) or server (-s)"),
        "{}",
        text(&out.stderr)
    );
    let version = text(&run(&["-v"]).stdout);
    assert!(
        version.contains("\nOptional features available: "),
        "{version}"
    );
    // netsweep's own name keeps netsweep's help.
    let own = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .arg("-h")
        .output()
        .unwrap();
    assert!(
        text(&own.stdout).contains("Commands:"),
        "{}",
        text(&own.stdout)
    );
}
