//! What `netsweep -s` prints on stdout for each test it serves, as iperf3's server does: the
//! test's text (who connected, this end's intervals, its summary as `sender` or `receiver`)
//! and the listening line again; with `-J` each test's document. Checked against the
//! clients' own results of the same tests: the server's figures are the ones the clients
//! report for the server's end.

mod common;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// A server process on a free port, its stdout read line by line; killed on drop.
struct Server {
    child: Child,
    port: String,
    lines: Receiver<String>,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let port = common::free_port().to_string();
        let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-s", "-B", "127.0.0.1", "-p", &port])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().unwrap());
        Server { child, port, lines }
    }

    /// The lines written until `count` more of them satisfy `until` (20 s at most).
    fn read_until(&self, until: impl Fn(&str) -> bool, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let (mut seen, mut got) = (Vec::new(), 0);
        while got < count {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                panic!("the server wrote only {seen:#?}");
            };
            got += usize::from(until(&line));
            seen.push(line);
        }
        seen
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client run against `port` with `-J`: its document.
fn client(program: &str, port: &str, args: &[&str]) -> Value {
    let o = Command::new(program)
        .args(["-c", "127.0.0.1", "-p", port, "-J"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    serde_json::from_slice(&o.stdout).expect("the client's document")
}

fn bytes_words(v: &Value) -> String {
    netsweep::units::Bytes(v.as_u64().expect("bytes")).to_string()
}

/// The line of `text` that starts with `id` and ends with `end`.
fn line_of<'a>(text: &'a [String], id: &str, end: &str) -> &'a str {
    text.iter()
        .find(|l| l.starts_with(id) && l.trim_end().ends_with(end))
        .unwrap_or_else(|| panic!("no {id} ... {end} line in {text:#?}"))
}

#[test]
fn each_test_is_told_on_stdout_as_iperf3s_server_tells_it() {
    let s = Server::start(&[]);
    let banner = |l: &str| l.starts_with("Server listening on ");
    s.read_until(banner, 1);
    let ns = env!("CARGO_BIN_EXE_netsweep");

    // Two streams to the server: its receiver lines are the client's receiver figures.
    let doc = client(ns, &s.port, &["-t", "1", "-P", "2"]);
    let text = s.read_until(banner, 1);
    assert!(
        text.iter()
            .any(|l| l.starts_with("Accepted connection from 127.0.0.1, port ")),
        "{text:#?}"
    );
    let sum = line_of(&text, "[SUM]", "receiver");
    let want = bytes_words(&doc["end"]["sum_received"]["bytes"]);
    assert!(sum.contains(&format!(" {want} ")), "{sum} against {want}");
    assert_eq!(
        text.iter().filter(|l| l.ends_with("receiver")).count(),
        3,
        "{text:#?}"
    );
    assert!(text.iter().any(|l| l.starts_with("- - -")), "{text:#?}");
    // Each data connection once, as iperf3's server lists them: the client's ports.
    let ports: Vec<u64> = doc["start"]["connected"]
        .as_array()
        .expect("connected")
        .iter()
        .filter_map(|c| c["local_port"].as_u64())
        .collect();
    assert_eq!(ports.len(), 2, "{}", doc["start"]);
    for p in ports {
        let said = format!(" connected to 127.0.0.1 port {p}");
        assert_eq!(
            text.iter().filter(|l| l.ends_with(&said)).count(),
            1,
            "{said} in {text:#?}"
        );
    }

    // Both ways: each stream tagged with what the server did with it.
    client(ns, &s.port, &["-t", "1", "--bidir"]);
    let text = s.read_until(banner, 1);
    assert!(
        text.iter().any(|l| l.starts_with("[ ID][Role]")),
        "{text:#?}"
    );
    line_of(&text, "[  1][RX-S]", "receiver");
    line_of(&text, "[  3][TX-S]", "sender");

    // iperf3's client, UDP: the server's losses and datagrams are what iperf3's client reads.
    if common::tool_or_skip(
        "each_test_is_told_on_stdout_as_iperf3s_server_tells_it",
        "iperf3",
    ) {
        let doc = client("iperf3", &s.port, &["-t", "1", "-u", "-b", "20M"]);
        let text = s.read_until(banner, 1);
        let sum = &doc["end"]["sum"];
        let lost = format!(
            " {}/{} (",
            sum["lost_packets"].as_u64().expect("lost"),
            sum["packets"].as_u64().expect("packets")
        );
        let line = line_of(&text, "[  1]", "receiver");
        assert!(line.contains(&lost), "{line} against iperf3's {lost}");

        // Reversed, the server sends: its line is iperf3's sender's, the datagrams it sent with
        // no jitter and no losses (those are the client's to tell).
        let doc = client("iperf3", &s.port, &["-t", "1", "-u", "-b", "20M", "-R"]);
        let text = s.read_until(banner, 1);
        let sent = doc["end"]["sum"]["packets"].as_u64().expect("packets");
        let line = line_of(&text, "[  1]", "sender");
        let want = format!(" 0.000 ms  0/{sent} (0%)  sender");
        assert!(line.ends_with(&want), "{line} against {want}");
    }
}

/// The server's lines for an interval come when the interval closes, not when the test ends
/// (a user watching `iperf3 -s` sees the test as it runs).
#[test]
fn interval_lines_come_while_the_test_runs() {
    let s = Server::start(&[]);
    let banner = |l: &str| l.starts_with("Server listening on ");
    s.read_until(banner, 1);
    let mut client = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &s.port, "-t", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first = s.read_until(|l| l.starts_with("[  1]"), 1);
    let running = client.try_wait().unwrap().is_none();
    let t0 = Instant::now();
    while client.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = client.kill();
    let _ = client.wait();
    assert!(
        running,
        "the first interval came only after the test: {first:#?}"
    );
    let rest = s.read_until(banner, 1);
    // Each measured second once, then the summary.
    let measured = |l: &&String| l.starts_with("[  1]") && !l.ends_with("(omitted)");
    let seconds: Vec<&String> = first.iter().chain(&rest).filter(measured).collect();
    assert!(seconds.len() >= 6, "{seconds:#?}");
    assert!(
        seconds.last().is_some_and(|l| l.ends_with("receiver")),
        "{seconds:#?}"
    );
    assert_eq!(
        seconds
            .iter()
            .filter(|l| l.contains("   4.00-5.00   sec"))
            .count(),
        1,
        "{seconds:#?}"
    );
}

/// Documents one after another on a stream: as many as `count`, 20 s at most.
fn documents(out: impl Read + Send + 'static, count: usize) -> Vec<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for doc in serde_json::Deserializer::from_reader(out).into_iter::<Value>() {
            let Ok(doc) = doc else { break };
            if tx.send(doc).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    (0..count)
        .map_while(|_| {
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok()
        })
        .collect()
}

/// `netsweep -s -J ARGS` on a free port, listening: the process and its port.
fn json_server(args: &[&str], stdout: Stdio) -> (Child, String) {
    let port = common::free_port().to_string();
    let server = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-s", "-J", "-B", "127.0.0.1", "-p", &port])
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().unwrap());
    (server, port)
}

/// What `server` wrote once it exited (20 s at most; then it is killed).
fn exited(mut server: Child) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = server.kill();
    server.wait_with_output().unwrap()
}

#[test]
fn json_gives_each_test_its_document_and_one_off_its_one() {
    let ns = env!("CARGO_BIN_EXE_netsweep");
    // Without -1: a document per test, as it ends.
    let (mut server, port) = json_server(&[], Stdio::piped());
    let out = server.stdout.take().expect("stdout");
    let theirs = [
        client(ns, &port, &["-t", "1"]),
        client(ns, &port, &["-t", "1", "-R"]),
    ];
    let ours = documents(out, 2);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(ours.len(), 2, "{ours:#?}");
    // The server received the first test's data and sent the second's.
    assert_eq!(
        ours[0]["end"]["sum_received"]["bytes"], theirs[0]["end"]["sum_received"]["bytes"],
        "{:#}",
        ours[0]["end"]
    );
    assert_eq!(ours[0]["start"]["test_start"]["reverse"], 0);
    assert_eq!(ours[1]["start"]["test_start"]["reverse"], 1);
    assert!(ours[1]["end"]["sum_sent"]["bytes"].as_u64() > Some(0));

    // -J --logfile: the file holds the documents only (a JSON reader takes it whole), as
    // iperf3's; the server's messages stay on stderr.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tests.json");
    let path = log.to_str().expect("a path in UTF-8");
    let (mut server, port) = json_server(&["--logfile", path], Stdio::null());
    let theirs = client(ns, &port, &["-t", "1"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut logged = String::new();
    while !logged.trim_end().ends_with('}') && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        logged = std::fs::read_to_string(&log).unwrap_or_default();
    }
    let _ = server.kill();
    let _ = server.wait();
    let ours: Value = serde_json::from_str(&logged).expect("the log is one document");
    assert_eq!(
        ours["end"]["sum_received"]["bytes"],
        theirs["end"]["sum_received"]["bytes"]
    );

    // -1 -J with a netsweep client: its test's document, not an error.
    let (server, port) = json_server(&["-1"], Stdio::piped());
    let theirs = client(ns, &port, &["-t", "1", "-P", "2"]);
    let done = exited(server);
    assert!(
        done.status.success(),
        "-1 did not end after its test: {done:?}"
    );
    let ours: Value = serde_json::from_slice(&done.stdout).expect("one document");
    assert!(ours.get("error").is_none(), "{ours:#}");
    assert_eq!(
        ours["end"]["sum_received"]["bytes"],
        theirs["end"]["sum_received"]["bytes"]
    );
    assert_eq!(ours["end"]["streams"].as_array().map(Vec::len), Some(2));
}

/// `netsweep -s -1 -J` while `client` (its arguments after the port) runs and is sent SIGINT
/// `interrupts` times, `after` in: the server's exit status and document. A second interrupt
/// waits until the client said it heard the first (netsweep's "interrupt: the test ends at"):
/// two signals sent while the first is still pending are one to the kernel, and a client
/// starved on a busy host (CI) took them so, ending the test as pressed once.
fn interrupted(client: &[&str], interrupts: usize, after: Duration) -> (Option<i32>, Value) {
    let (server, port) = json_server(&["-1"], Stdio::piped());
    let mut client = Command::new(client[0])
        .args(["-c", "127.0.0.1", "-p", &port])
        .args(&client[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (heard_tx, heard) = mpsc::channel();
    let stderr = client.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("interrupt: the test ends at") {
                let _ = heard_tx.send(());
            }
        }
    });
    std::thread::sleep(after);
    let pid = client.id().to_string();
    for k in 0..interrupts {
        if k > 0 {
            let _ = heard.recv_timeout(Duration::from_secs(10));
            // As a second press would be: signals::SAME_INTERRUPT takes the same signal
            // within 2 ms as one, and the client said it heard the first within a millisecond
            // of it (the kill sent at once then was merged, 1 run in 20 under load).
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").args(["-INT", &pid]).status();
    }
    let done = exited(server);
    let _ = client.kill();
    let _ = client.wait();
    let doc = serde_json::from_slice(&done.stdout).expect("one document");
    (done.status.code(), doc)
}

/// What a test its client ended early leaves in the server's document: what the server
/// counted and its intervals beside the error.
fn keeps_the_servers_figures(doc: &Value, error: &str) {
    assert!(
        doc["error"].as_str().is_some_and(|e| e.contains(error)),
        "{doc:#}"
    );
    assert!(
        doc["end"]["sum_received"]["bytes"].as_u64() > Some(0),
        "{doc:#}"
    );
    assert!(
        doc["intervals"].as_array().is_some_and(|i| i.len() >= 2),
        "{doc:#}"
    );
}

/// iperf3's client ending a `-t 0` test (Ctrl-C: CLIENT_TERMINATE) against `netsweep -s -1
/// -J`: the server's document has what it counted, its intervals and iperf3's error, and `-1`
/// exits 0 as iperf3's does after such a test.
#[test]
fn a_test_its_iperf3_client_ended_keeps_the_servers_figures() {
    let test = "a_test_its_iperf3_client_ended_keeps_the_servers_figures";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let (code, doc) = interrupted(&["iperf3", "-t", "0"], 1, Duration::from_millis(2500));
    assert_eq!(code, Some(0), "{doc:#}");
    // iperf3's server's words, which scripts look for.
    keeps_the_servers_figures(&doc, "the client has terminated");
}

/// A netsweep client stopped at once (Ctrl-C twice) mid-test: its server's document keeps
/// what it counted, and the last interval ends where the test stopped. Intervals of 3 s with
/// the first Ctrl-C half a second into the second one: the second Ctrl-C has 2.5 s to arrive
/// before the test ends as pressed once, on a busy host too.
#[test]
fn a_test_its_netsweep_client_aborted_keeps_the_servers_figures() {
    let ns = env!("CARGO_BIN_EXE_netsweep");
    let (code, doc) = interrupted(&[ns, "-t", "30", "-i", "3"], 2, Duration::from_millis(3500));
    assert_eq!(code, Some(1), "{doc:#}");
    keeps_the_servers_figures(&doc, "client aborted (interrupted)");
    let last = doc["intervals"]
        .as_array()
        .and_then(|i| i.last())
        .map(|i| &i["streams"][0]);
    let seconds = last.and_then(|s| s["seconds"].as_f64()).unwrap_or(0.0);
    assert!(seconds > 0.0 && seconds < 3.0, "{doc:#}");
}

/// The server's `-i` is the interval of an iperf3 client's tests, as iperf3's server reports
/// on its own `-i` (the client does not send its own): `-i 0.5` gives half-second lines and
/// intervals that add up to what the server counted; `-i 0` one interval over the whole test,
/// holding every datagram of a UDP test as the client counted them.
#[test]
fn the_servers_interval_is_an_iperf3_clients() {
    let test = "the_servers_interval_is_an_iperf3_clients";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let s = Server::start(&["-i", "0.5"]);
    let banner = |l: &str| l.starts_with("Server listening on ");
    s.read_until(banner, 1);
    let theirs = client("iperf3", &s.port, &["-t", "2"]);
    let text = s.read_until(banner, 1);
    for span in ["0.00-0.50", "0.50-1.00", "1.00-1.50", "1.50-2.00"] {
        let line = format!("{span}   sec");
        assert!(text.iter().any(|l| l.contains(&line)), "{span}: {text:#?}");
    }
    let (server, port) = json_server(&["-1", "-i", "0.5"], Stdio::piped());
    let theirs_json = client("iperf3", &port, &["-t", "2"]);
    let doc: Value = serde_json::from_slice(&exited(server).stdout).expect("the document");
    assert_eq!(doc["start"]["test_start"]["interval"], 0.5, "{doc:#}");
    let intervals = doc["intervals"].as_array().expect("intervals");
    assert!(intervals.len() >= 4, "{doc:#}");
    for iv in &intervals[..4] {
        let secs = iv["sum"]["seconds"].as_f64().unwrap_or(0.0);
        assert!((secs - 0.5).abs() < 1e-6, "{iv:#}");
    }
    let summed: u64 = intervals
        .iter()
        .filter_map(|iv| iv["sum"]["bytes"].as_u64())
        .sum();
    let received = theirs_json["end"]["sum_received"]["bytes"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        summed.abs_diff(received) <= received / 200,
        "intervals {summed}, received {received}"
    );
    assert!(theirs["end"]["sum_received"]["bytes"].as_u64() > Some(0));
    // -i 0, UDP: one interval, every datagram the client sent.
    let (server, port) = json_server(&["-1", "-i", "0"], Stdio::piped());
    let theirs = client("iperf3", &port, &["-t", "2", "-u", "-b", "20M"]);
    let doc: Value = serde_json::from_slice(&exited(server).stdout).expect("the document");
    assert_eq!(doc["start"]["test_start"]["interval"], 0.0, "{doc:#}");
    let intervals = doc["intervals"].as_array().expect("intervals");
    assert_eq!(intervals.len(), 1, "{doc:#}");
    let sum = &intervals[0]["sum"];
    let sent = theirs["end"]["sum"]["packets"]
        .as_u64()
        .expect("packets sent");
    assert_eq!(sum["packets"].as_u64(), Some(sent), "{sum:#}");
    assert_eq!(
        sum["lost_packets"], theirs["end"]["sum"]["lost_packets"],
        "{sum:#}"
    );
}

/// A client's document and its server's name the same test: `start.cookie` is the test's own
/// on both ends (iperf3's cookie; a netsweep client's token), where the client's document
/// once held a random one. The server's `start` has iperf3's keys for what it had: the MSS
/// (the control connection's, as iperf3's client gives it), the `-w` asked and the buffers
/// the kernel granted.
#[test]
fn the_servers_document_and_its_clients_name_one_cookie() {
    let mut clients = vec![env!("CARGO_BIN_EXE_netsweep")];
    if common::tool_or_skip("the cookie with an iperf3 client", "iperf3") {
        clients.push("iperf3");
    }
    for program in clients {
        let (server, port) = json_server(&["-1"], Stdio::piped());
        let theirs = client(program, &port, &["-t", "1", "-w", "512K"]);
        let ours: Value = serde_json::from_slice(&exited(server).stdout).expect("the document");
        let cookie = theirs["start"]["cookie"]
            .as_str()
            .expect("the client's cookie");
        assert!(cookie.len() >= 32, "{program}: {cookie}");
        assert_eq!(
            ours["start"]["cookie"],
            json!(cookie),
            "{program}: {:#}",
            ours["start"]
        );
        let start = &ours["start"];
        assert!(
            start["tcp_mss_default"].as_u64() > Some(0),
            "{program}: {start:#}"
        );
        // The control connection's MSS on both ends, as iperf3's client reads it (the data
        // sockets' is larger on loopback with -w 512K: 65483 against 32768).
        assert_eq!(
            start["tcp_mss_default"], theirs["start"]["tcp_mss_default"],
            "{program}: {start:#}"
        );
        assert_eq!(
            start["sock_bufsize"],
            json!(512 * 1024),
            "{program}: {start:#}"
        );
        assert!(
            start["rcvbuf_actual"].as_u64() >= Some(512 * 1024),
            "{program}: {start:#}"
        );
    }
}

/// Regression (a trial's finding): the server's UDP jitter read 0.000 ms for every iperf3
/// client, taken from the empty intervals of the grid the server keeps past the client's end.
/// It is the estimate where datagrams last arrived, in the server's document and in what the
/// client was told.
#[test]
fn the_servers_udp_jitter_is_measured_for_an_iperf3_client() {
    if !common::tool_or_skip(
        "the_servers_udp_jitter_is_measured_for_an_iperf3_client",
        "iperf3",
    ) {
        return;
    }
    let (server, port) = json_server(&["-1"], Stdio::piped());
    let theirs = client("iperf3", &port, &["-t", "2", "-u", "-b", "20M"]);
    let ours: Value = serde_json::from_slice(&exited(server).stdout).expect("the document");
    let jitter = ours["end"]["sum"]["jitter_ms"].as_f64().unwrap_or(0.0);
    assert!(jitter > 0.0, "{:#}", ours["end"]);
    let last = ours["intervals"]
        .as_array()
        .and_then(|ivs| {
            ivs.iter()
                .rev()
                .find(|iv| iv["sum"]["packets"].as_u64() > Some(0))
        })
        .and_then(|iv| iv["sum"]["jitter_ms"].as_f64());
    // The same estimate, through a division by 1000 and back (the last digit may differ).
    let near = |x: Option<f64>| x.is_some_and(|x| (x - jitter).abs() < 1e-9);
    assert!(near(last), "{last:?} {jitter}: {:#}", ours["intervals"]);
    let told = theirs["end"]["sum"]["jitter_ms"].as_f64();
    assert!(near(told), "{told:?} {jitter}: {:#}", theirs["end"]);
}

/// A server stopped (SIGINT) while an iperf3 client's test runs does as iperf3's: the client
/// hears SERVER_TERMINATE ("the server has terminated", and exits 1 with what it had), the
/// server writes the test's text to where it stopped and its summary, and exits 1 saying so;
/// stopped idle it exits 1 too. (Before: no summary, a client left with "control socket has
/// closed unexpectedly", and exit 0.)
#[test]
fn a_server_stopped_mid_test_tells_its_iperf3_client_and_writes_what_it_counted() {
    let test = "a_server_stopped_mid_test_tells_its_iperf3_client_and_writes_what_it_counted";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let mut s = Server::start(&[]);
    let banner = |l: &str| l.starts_with("Server listening on ");
    s.read_until(banner, 1);
    let client = Command::new("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &s.port,
            "-t",
            "20",
            "-u",
            "-b",
            "5M",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Two intervals, then the signal.
    s.read_until(|l| l.contains("1.00-2.00"), 1);
    let pid = s.child.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let text = s.read_until(|l| l.ends_with("receiver"), 1);
    let theirs = client.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&theirs.stderr)
    );
    assert!(said.contains("the server has terminated"), "{said}");
    assert_eq!(theirs.status.code(), Some(1), "{said}");
    // The summary covers the test to where it stopped: past the two whole seconds.
    let summary = text.last().expect("a summary");
    let secs: f64 = summary
        .split_whitespace()
        .find_map(|w| w.strip_prefix("0.00-")?.parse().ok())
        .expect("the summary's span");
    assert!(secs > 2.0 && secs < 10.0, "{summary}");
    // Stopped, it exits 1; idle, the same.
    let mut idle = Server::start(&[]);
    let pid = idle.child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    for server in [&mut s, &mut idle] {
        common::wait_bounded(&mut server.child, Duration::from_secs(10), "the server");
        let status = server.child.try_wait().unwrap().and_then(|st| st.code());
        assert_eq!(status, Some(1));
    }
}

/// `-s --logfile F` (text) keeps F to what iperf3's log holds, in order: the listening lines,
/// then each test's text; the server's own line per test stays on standard error. (Before,
/// those lines were in F too, a test's `test done` before its last interval.)
#[test]
fn a_text_logfile_holds_the_tests_text_in_order() {
    if !common::tool_or_skip("a_text_logfile_holds_the_tests_text_in_order", "iperf3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let path = log.to_str().unwrap();
    let port = common::free_port().to_string();
    let server = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args([
            "-s",
            "-1",
            "-B",
            "127.0.0.1",
            "-p",
            &port,
            "--logfile",
            path,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().unwrap());
    client("iperf3", &port, &["-t", "2", "-u", "-b", "5M"]);
    let out = exited(server);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = |want: &str| lines.iter().position(|l| l.contains(want));
    let (listening, accepted, last, summary) = (
        at("Server listening on"),
        at("Accepted connection from"),
        at("1.00-2.00"),
        at("receiver"),
    );
    assert!(
        listening < accepted && accepted < last && last < summary && listening.is_some(),
        "{text}"
    );
    assert!(!text.contains("test done"), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("iperf3 test done"), "{err}");
}
