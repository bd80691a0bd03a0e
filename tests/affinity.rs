//! `-A`/`--affinity` as users run it: netsweep's client and server pin their data threads
//! (streams and request/response connections) where asked, a client's `-A N,M` moves the
//! server's for its test, ranges spread the streams, iperf3 clients and servers take and give
//! `server_affinity` in both directions, and CPUs this process may not use are refused by
//! name. Each thread's CPUs are read from the kernel (`/proc/PID/task/TID/status`,
//! `Cpus_allowed_list`) while the test runs.

mod common;

use common::KillOnDrop;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The CPUs this test process may use.
fn allowed() -> Vec<usize> {
    common::cpus_allowed(&std::fs::read_to_string("/proc/self/status").unwrap())
}

/// The CPU lists of `pid`'s threads whose name starts with `prefix`.
fn threads(pid: u32, prefix: &str) -> Vec<Vec<usize>> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .map(|s| common::cpus_allowed(&s))
        .collect()
}

/// Waits (30 s at most: a loaded host starts processes slowly) until `pid` has `n` threads
/// named `prefix*` all pinned (one CPU each), and returns their CPUs, sorted. The test's
/// client (`process`) ending first fails the test with what it printed.
fn pinned(pid: u32, prefix: &str, n: usize, process: &mut KillOnDrop) -> Vec<usize> {
    let t0 = Instant::now();
    loop {
        let t = threads(pid, prefix);
        if t.len() >= n && t.iter().all(|l| l.len() == 1) {
            let mut cpus: Vec<usize> = t.iter().map(|l| l[0]).collect();
            cpus.sort_unstable();
            return cpus;
        }
        if let Ok(Some(status)) = process.0.try_wait() {
            let mut said = String::new();
            for pipe in [
                process
                    .0
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read>),
                process
                    .0
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read>),
            ]
            .into_iter()
            .flatten()
            {
                let mut p = pipe;
                let _ = p.read_to_string(&mut said);
            }
            panic!(
                "the client ended ({status}) before pid {pid} had {n} pinned {prefix}* threads: \
                 {said}"
            );
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "pid {pid}: {n} pinned {prefix}* threads expected, saw {t:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn netsweep() -> Command {
    Command::new(env!("CARGO_BIN_EXE_netsweep"))
}

fn server(args: &[&str]) -> (KillOnDrop, String) {
    let port = common::free_port().to_string();
    let child = netsweep()
        .args(["server", "--bind", "127.0.0.1", "-p", &port])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("netsweep server");
    common::wait_listening(
        format!("127.0.0.1:{port}").parse().unwrap(),
        "netsweep server",
    );
    (KillOnDrop(child), port)
}

fn client(port: &str, args: &[&str]) -> KillOnDrop {
    KillOnDrop(
        netsweep()
            .args(["client", "127.0.0.1", "-p", port])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("netsweep client"),
    )
}

/// Waits for a client (60 s at most: its test is seconds long; on a hang it is killed when
/// dropped) and returns what it printed on standard output.
fn finish(mut c: KillOnDrop) -> String {
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(c.0.stdout.take().expect("a piped stdout")));
    let err = drain(Box::new(c.0.stderr.take().expect("a piped stderr")));
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = c.0.try_wait().expect("wait") {
            break status;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "the client hangs");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "{out}{err}");
    out
}

/// Two CPUs to tell apart (the same one twice on a one-CPU host).
fn two_cpus() -> (usize, usize) {
    let cpus = allowed();
    (cpus[0], *cpus.last().unwrap())
}

#[test]
fn both_ends_pin_their_streams_where_asked_and_a_client_moves_the_servers() {
    let _serial = common::loopback::serial();
    let (a, b) = two_cpus();
    // The server's own -A, used when the client does not say.
    let (srv, port) = server(&["-A", &b.to_string()]);
    let mut c = client(&port, &["-t", "3", "-P", "2", "-A", &a.to_string()]);
    assert_eq!(pinned(c.0.id(), "stream-", 2, &mut c), [a, a]);
    assert_eq!(pinned(srv.0.id(), "stream-", 2, &mut c), [b, b]);
    let text = finish(c);
    assert!(
        text.contains(&format!(
            "CPU affinity (-A): client's data threads on CPU {a}, server's where the server's \
             own -A puts them."
        )),
        "{text}"
    );

    // The client's N-M,M: its streams spread over the range, the server's moved for this test.
    let range = format!("{a}-{b},{a}");
    let mut c = client(&port, &["-t", "3", "-P", "2", "-A", &range, "-J"]);
    let mut spread = vec![a, b];
    spread.dedup();
    let mut mine = pinned(c.0.id(), "stream-", 2, &mut c);
    mine.dedup();
    assert_eq!(mine, spread);
    assert_eq!(pinned(srv.0.id(), "stream-", 2, &mut c), [a, a]);
    let doc: serde_json::Value = serde_json::from_str(&finish(c)).expect("-J");
    assert_eq!(doc["spec"]["affinity"]["server"]["first"], a, "{doc:#}");

    // Request/response connections too.
    let mut c = client(
        &port,
        &[
            "--test",
            "rr",
            "-t",
            "3",
            "-P",
            "2",
            "-A",
            &format!("{b},{a}"),
        ],
    );
    assert_eq!(pinned(c.0.id(), "rr", 2, &mut c), [b, b]);
    assert_eq!(pinned(srv.0.id(), "rr", 2, &mut c), [a, a]);
    let text = finish(c);
    assert!(text.contains("CPU affinity   (-A)"), "{text}");
}

#[test]
fn cpus_this_host_cannot_use_are_refused_by_name_on_either_end() {
    let _serial = common::loopback::serial();
    let absent = allowed().last().unwrap() + 1;
    let (_srv, port) = server(&[]);
    let run = |args: &[&str]| -> String {
        let out = netsweep()
            .args(["client", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(args)
            .output()
            .expect("netsweep client");
        assert!(!out.status.success(), "{args:?} ran");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["-A", &absent.to_string()]);
    assert!(
        e.contains(&format!("CPU {absent} is not one this process may run on")),
        "{e}"
    );
    let e = run(&["-A", &format!(",{absent}")]);
    assert!(
        e.contains("this server cannot pin its streams")
            && e.contains(&format!("CPU {absent} is not one")),
        "{e}"
    );
    let e = run(&["-A", "5-2"]);
    assert!(e.contains("runs backwards"), "{e}");
    let out = netsweep()
        .args(["server", "-p", "1", "-A", "0,1"])
        .output()
        .expect("netsweep server");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("N,M is the client's"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_iperf3_client_pins_a_netsweep_server_and_netsweep_pins_an_iperf3_server() {
    const NAME: &str = "an_iperf3_client_pins_a_netsweep_server_and_netsweep_pins_an_iperf3_server";
    if !common::tool_or_skip(NAME, "iperf3") {
        return;
    }
    let _serial = common::loopback::serial();
    let (a, b) = two_cpus();
    let (srv, port) = server(&[]);
    let mut iperf3 = KillOnDrop(
        Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "3", "-P", "2"])
            .args(["-A", &format!("{a},{b}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iperf3 -c"),
    );
    assert_eq!(pinned(srv.0.id(), "stream-", 2, &mut iperf3), [b, b]);
    finish(iperf3);
    drop(srv);

    let port = common::free_port().to_string();
    let iperf3_server = KillOnDrop(
        Command::new("iperf3")
            .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s"),
    );
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().unwrap());
    let mut c = client(&port, &["--iperf3", "-t", "3", "-A", &format!("{a},{b}")]);
    // iperf3 pins its main thread (its streams' threads, from 3.16, inherit it).
    let pid = iperf3_server.0.id();
    assert_eq!(pinned(pid, "iperf3", 1, &mut c)[0], b);
    assert_eq!(pinned(c.0.id(), "stream-", 1, &mut c), [a]);
    finish(c);

    // A range is netsweep's: an iperf3 server takes one CPU, and is not asked for more.
    if a == b {
        return;
    }
    let out = netsweep()
        .args(["client", "127.0.0.1", "-p", &port, "--iperf3", "-t", "1"])
        .args(["-A", &format!("{a},{a}-{b}")])
        .output()
        .expect("netsweep client");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("an iperf3 server pins itself to one CPU"), "{e}");
}
