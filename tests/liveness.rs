//! iperf3's `--snd-timeout` and `--cntl-ka` at work (`traffic::liveness`), both roles: a test
//! whose far end vanishes mid-test (its link cut) ends within about the timeout at the end that
//! sends, with the kernel's "Connection timed out", instead of running on to its end and
//! waiting there; and the control connections carry the keepalive asked, the data connections
//! none. Two namespaces joined by a veth pair (198.18.0.0/30). Root; CI runs it.

mod common;

use common::netns::{Netns, Pair};
use std::process::{Command, Stdio};

use std::time::{Duration, Instant};

const PORT: u16 = 5396;

/// A netsweep server in `ns` on 198.18.0.2 with `args`, its stderr (the log) piped.
fn server(ns: &Netns, args: &[&str]) -> common::KillOnDrop {
    let child = ns
        .cmd(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "server",
            "--bind",
            "198.18.0.2",
            "--port",
            &PORT.to_string(),
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server");
    let child = common::KillOnDrop(child);
    ns.wait_listening(PORT);
    child
}

/// A client in `ns` to the server, with `args`.
fn client(ns: &Netns, args: &[&str]) -> Command {
    let mut c = ns.cmd(env!("CARGO_BIN_EXE_netsweep"));
    c.args(["client", "198.18.0.2", "-p", &PORT.to_string()])
        .args(args);
    c
}

/// A client in `ns` with `args`, its stderr piped for `ended`.
fn spawn_client(ns: &Netns, args: &[&str]) -> common::KillOnDrop {
    common::KillOnDrop(
        client(ns, args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("client"),
    )
}

/// Waits at most 25 s for a client of `spawn_client` to end: its status and what it said.
fn ended(c: &mut common::KillOnDrop) -> (std::process::ExitStatus, String) {
    common::wait_bounded(&mut c.0, Duration::from_secs(25), "the client");
    let status = c.0.wait().expect("the client's status");
    let mut err = String::new();
    if let Some(mut pipe) = c.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
    }
    (status, err)
}

/// Waits until a test's data flows between the two (1 MB received on some connection to the
/// port, as `ss` in `ns` reports it), at most 10 s.
fn flowing(ns: &Netns) {
    let ok = common::wait_bounded_check(Duration::from_secs(10), || {
        let out = ns.cmd("ss").args(["-tiH", "state", "established"]).output();
        out.is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split([' ', '\t', '\n'])
                .filter_map(|w| w.strip_prefix("bytes_acked:"))
                .filter_map(|v| v.parse::<u64>().ok())
                .any(|b| b > 1 << 20)
        })
    });
    assert!(ok, "no data flowed in {}", ns.0);
}

/// Reads the server's log lines until one contains `want`, at most `limit`; the lines read.
fn server_log_until(server: &mut common::KillOnDrop, want: &str, limit: Duration) -> String {
    use std::io::BufRead;
    let err = server.0.stderr.take().expect("the server's stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + limit;
    let mut seen = String::new();
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(want) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    seen
}

/// A sending client whose server's link goes down mid-test ends about `--snd-timeout` later,
/// with the kernel's words; both protocols, against an iperf3 server too.
#[test]
fn snd_timeout_ends_the_test_of_a_client_whose_server_vanished() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("snd_timeout_ends_the_test") {
        return;
    }
    let real_iperf3 = common::tool_or_skip("snd_timeout_ends_the_test (iperf3's server)", "iperf3");
    for (protocol, far) in [
        (&[][..], "netsweep"),
        (&["--iperf3"], "netsweep"),
        (&["--iperf3"], "iperf3"),
    ] {
        if far == "iperf3" && !real_iperf3 {
            continue;
        }
        let p = Pair::new("lvc");
        let _server = if far == "iperf3" {
            let child =
                p.b.cmd("iperf3")
                    .args(["-s", "-B", "198.18.0.2", "-p", &PORT.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("iperf3 -s");
            let child = common::KillOnDrop(child);
            p.b.wait_listening(PORT);
            child
        } else {
            server(&p.b, &[])
        };
        let started = Instant::now();
        let mut c = spawn_client(
            &p.a,
            &[
                &["-t", "30", "-b", "1G", "--snd-timeout", "1000"][..],
                protocol,
            ]
            .concat(),
        );
        flowing(&p.a);
        // The far end goes away without a word: its link down, so nothing is acknowledged.
        p.b.ip(&["link", "set", &p.vb, "down"]);
        let cut = started.elapsed();
        let (status, err) = ended(&mut c);
        let ended = started.elapsed();
        assert!(!status.success(), "{protocol:?} to {far}: {err}");
        assert!(
            err.contains("stream 0: write failed: Connection timed out"),
            "{protocol:?} to {far}: {err}"
        );
        eprintln!(
            "{protocol:?} to {far}: the client ended {:?} after the cut",
            ended - cut
        );
        // 1 s unacknowledged, the RTO's step past it, and the server's moment to say why:
        // well under the test's 30 s.
        assert!(
            ended - cut < Duration::from_secs(8),
            "{protocol:?} to {far}: cut at {cut:?}, ended at {ended:?}"
        );
    }
}

/// A server sending to a client (-R) whose link goes down mid-test ends the test about its
/// `--snd-timeout` later and logs why; both protocols, an iperf3 client too (without it, the
/// server would hold the test to its time and past it, waiting for a client that is gone).
#[test]
fn snd_timeout_ends_the_test_of_a_server_whose_client_vanished() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("snd_timeout_ends_the_servers_test") {
        return;
    }
    let real_iperf3 = common::tool_or_skip("snd_timeout_ends_the_servers_test (iperf3)", "iperf3");
    for protocol in ["netsweep", "netsweep --iperf3", "iperf3"] {
        if protocol == "iperf3" && !real_iperf3 {
            continue;
        }
        let p = Pair::new("lvs");
        let mut srv = server(&p.b, &["--snd-timeout", "1000"]);
        let mut c = match protocol {
            "iperf3" => {
                let mut c = p.a.cmd("iperf3");
                c.args(["-c", "198.18.0.2", "-p", &PORT.to_string()]);
                c
            }
            _ => client(&p.a, &[]),
        };
        c.args(["-t", "30", "-R", "-b", "1G"]);
        if protocol == "netsweep --iperf3" {
            c.arg("--iperf3");
        }
        let _client = common::KillOnDrop(
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("client"),
        );
        flowing(&p.b);
        let cut = Instant::now();
        p.a.ip(&["link", "set", &p.va, "down"]);
        let log = server_log_until(&mut srv, "Connection timed out", Duration::from_secs(20));
        let took = cut.elapsed();
        eprintln!("{protocol:?}: the server ended the test {took:?} after the cut");
        // The data connection's timeout ("stream 0: write failed: ...") or the control
        // connection's, whose interval reports (netsweep's protocol) wait unacknowledged too
        // ("client gone mid-test: ..."): whichever the kernel gives up on first.
        assert!(
            log.lines()
                .any(|l| l.contains("ended with an error") && l.contains("Connection timed out")),
            "{protocol:?}: {log}"
        );
        assert!(
            took < Duration::from_secs(8),
            "{protocol:?}: {took:?}\n{log}"
        );
    }
}

/// `--cntl-ka` puts TCP keepalive on each end's control connection, with the idle time asked,
/// and on no data connection.
#[test]
fn cntl_ka_keeps_the_control_connections_alive_at_both_ends() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("cntl_ka_keeps_the_control_connections")
    {
        return;
    }
    let p = Pair::new("lvk");
    let _server = server(&p.b, &["--cntl-ka=40/5/3"]);
    let mut c = common::KillOnDrop(
        client(&p.a, &["-t", "4", "-P", "2", "--cntl-ka=30/4/2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("client"),
    );
    flowing(&p.a);
    // Each end's connections of the test: (keepalive timer's seconds left, if any).
    let timers = |ns: &Netns| -> Vec<Option<u64>> {
        let out = ns
            .cmd("ss")
            .args(["-tnoH", "state", "established"])
            .output()
            .expect("ss");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                l.split("timer:(keepalive,").nth(1).and_then(|t| {
                    let secs = t.split([',', 's']).next()?;
                    secs.parse::<u64>().ok().or(Some(0))
                })
            })
            .collect()
    };
    let (client_side, server_side) = (timers(&p.a), timers(&p.b));
    common::wait_bounded(&mut c.0, Duration::from_secs(20), "the client");
    for (side, timers, idle) in [("client", client_side, 30), ("server", server_side, 40)] {
        // Three connections: the control connection and two data connections.
        assert_eq!(timers.len(), 3, "{side}: {timers:?}");
        let kept: Vec<u64> = timers.iter().flatten().copied().collect();
        assert_eq!(
            kept.len(),
            1,
            "{side}: one keepalive, on control: {timers:?}"
        );
        assert!(
            kept[0] <= idle && kept[0] + 10 >= idle,
            "{side}: the keepalive's first probe in {}s, idle {idle}s",
            kept[0]
        );
    }
}

/// `--cntl-ka` ends a UDP test whose server vanished (nothing on its data path tells a UDP
/// sender): the control connection's keepalive gives up, and the client says so in the
/// kernel's words, not as a read that waited too long; both protocols.
#[test]
fn cntl_ka_ends_a_udp_test_whose_server_vanished() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("cntl_ka_ends_a_udp_test") {
        return;
    }
    for protocol in [&[][..], &["--iperf3"]] {
        let p = Pair::new("lvu");
        let _server = server(&p.b, &[]);
        let mut c = spawn_client(
            &p.a,
            &[
                &["-u", "-b", "50M", "-t", "30", "--cntl-ka=3/1/2"][..],
                protocol,
            ]
            .concat(),
        );
        std::thread::sleep(Duration::from_millis(1500));
        p.b.ip(&["link", "set", &p.vb, "down"]);
        let cut = Instant::now();
        let (status, err) = ended(&mut c);
        let took = cut.elapsed();
        eprintln!("{protocol:?}: the UDP client ended {took:?} after the cut");
        assert!(!status.success(), "{protocol:?}: {err}");
        assert!(err.contains("Connection timed out"), "{protocol:?}: {err}");
        assert!(!err.contains("sent nothing"), "{protocol:?}: {err}");
        assert!(
            !err.contains("limited on the sending host"),
            "{protocol:?}: {err}"
        );
        // 3 s idle, two probes a second apart, the loop's notice: well before the 30 s end.
        assert!(
            took < Duration::from_secs(12),
            "{protocol:?}: {took:?}\n{err}"
        );
    }
}
