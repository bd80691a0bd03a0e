//! What iperf3 users type first, through the real binary on loopback: `netsweep -s`,
//! `netsweep -c HOST`, `-f`, `-V`, `-Z`, `--logfile`, `--forceflush`, and the output details a
//! new user tripped over (a header before a connection error, `--bidir` tags glued on).

mod common;

use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};

/// `netsweep -s` (iperf3's spelling) on a free loopback port; killed on drop.
struct Server(Child, u16);

impl Server {
    fn start() -> Server {
        // A port something else took after it was found free answers the wait for this
        // server, which then exits unable to bind it (CI once saw a client refused on a port
        // the server was waited on): the server must still run, or another port is tried.
        for _ in 0..3 {
            let port = common::free_port();
            let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
                .args(["-s", "--bind", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            common::wait_listening(addr, "netsweep -s");
            std::thread::sleep(std::time::Duration::from_millis(100));
            if child.try_wait().unwrap().is_none() {
                return Server(child, port);
            }
            eprintln!("netsweep -s on port {port} exited at its start; another port");
        }
        panic!("netsweep -s did not stay up on three free ports");
    }

    /// `netsweep -c 127.0.0.1 -p PORT ARGS...`
    fn client(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-c", "127.0.0.1", "-p", &self.1.to_string()])
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn iperf3_spellings_run_a_test() {
    let s = Server::start();
    let o = s.client(&[
        "-t",
        "1",
        "-i",
        "0.5",
        "-f",
        "m",
        "-V",
        "-Z",
        "--forceflush",
    ]);
    let text = out(&o);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[  0]") && l.contains(" sec "))
        .collect();
    assert!(!rows.is_empty(), "{text}");
    assert!(
        rows.iter()
            .all(|l| l.contains("Mbits/sec") && !l.contains("Gbits")),
        "-f m: {text}"
    );
    assert!(
        text.contains("Test: TCP, client to server, 1 stream per direction"),
        "-V: {text}"
    );
    assert!(!text.contains("Reverse mode"), "{text}");
    assert!(
        text.contains("client stream 0:") && text.contains("server stream 0:"),
        "{text}"
    );
    assert!(text.contains("-Z: accepted"), "-Z: {text}");
}

/// Each data connection gets iperf3's line once it is up, before the column header ("[  0]
/// local 127.0.0.1 port 52314 connected to 127.0.0.1 port 5201"), and `--json-stream`'s start
/// event lists them in `connected` (it was empty).
#[test]
fn data_connections_are_named_as_iperf3_names_them() {
    let s = Server::start();
    let o = s.client(&["-t", "1", "-P", "2"]);
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("[ ID]"))
        .expect("a header");
    let mut ports = Vec::new();
    for (i, stream) in ["[  0]", "[  1]"].iter().enumerate() {
        let line = lines[1 + i];
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(
            line.starts_with(stream)
                && words[2..4] == ["local", "127.0.0.1"]
                && words[6..9] == ["connected", "to", "127.0.0.1"]
                && words[10] == s.1.to_string(),
            "{text}"
        );
        ports.push(words[5].parse::<u16>().expect("a local port"));
    }
    assert!(header == 3 && ports[0] != ports[1], "{text}");
    let o = s.client(&["-t", "1", "-P", "2", "--json-stream"]);
    let first = out(&o).lines().next().unwrap_or_default().to_string();
    let event: serde_json::Value = serde_json::from_str(&first).expect("a JSON event");
    let connected = event["data"]["connected"].as_array().expect("connected");
    assert_eq!(connected.len(), 2, "{first}");
    assert!(
        connected
            .iter()
            .all(|c| c["remote_port"] == s.1 && c["local_port"].as_u64().unwrap_or(0) > 0),
        "{first}"
    );
}

/// `-R` says who sends in iperf3's own words, after the connecting line.
#[test]
fn reverse_mode_is_announced_as_iperf3_does() {
    let s = Server::start();
    let o = s.client(&["-t", "0.3", "-R"]);
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        o.status.success()
            && lines
                .first()
                .is_some_and(|l| l.starts_with("Connecting to host 127.0.0.1"))
            && lines.get(1) == Some(&"Reverse mode, remote host 127.0.0.1 is sending"),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// iperf3's `-I FILE` on a client: the file holds the client's process ID while it runs and
/// is gone after (it was refused as a server-only flag).
#[test]
fn a_client_holds_its_pidfile_while_it_runs() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("client.pid");
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &s.1.to_string(), "-t", "1", "-I"])
        .arg(&pidfile)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let want = format!("{}\n", child.id());
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&pidfile).ok().as_deref() != Some(want.as_str()) {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(5),
            "no pid {want:?} in {}",
            pidfile.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(child.wait().unwrap().success());
    assert!(!pidfile.exists(), "the pidfile is removed at exit");
}

#[test]
fn logfile_receives_the_output() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.log");
    let o = s.client(&["-t", "0.5", "--logfile", log.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(
        !out(&o).contains("receiver"),
        "stdout stays empty: {}",
        out(&o)
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("receiver") && logged.contains("sender"),
        "{logged}"
    );
}

/// As iperf3's: a text run's error goes to the log too (a run from cron keeps its reason), a
/// JSON log keeps one document (the error is its `error`, the message stays on stderr).
#[test]
fn logfile_receives_the_error_of_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let (log, json_log) = (dir.path().join("run.log"), dir.path().join("run.json"));
    let port = common::free_port().to_string();
    let client = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = client(&["--logfile", log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("unable to connect to server"), "{logged}");
    let o = client(&["-J", "--logfile", json_log.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_log).unwrap()).expect("one document");
    assert!(
        doc["error"]
            .as_str()
            .is_some_and(|e| e.contains("unable to connect to server")),
        "{doc}"
    );
}

/// `--logfile` never writes through a symbolic link (the file it points to stays as it was)
/// and never blocks on a FIFO: both are refused at once, by name.
#[test]
fn logfile_refuses_a_symlink_and_a_fifo() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("run.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = s.client(&["-t", "0.5", "--logfile", link.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        !o.status.success() && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    let fifo = dir.path().join("fifo.log");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let t0 = std::time::Instant::now();
    let o = s.client(&["-t", "0.5", "--logfile", fifo.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success() && err.contains("FIFO"), "{err}");
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "it waited on the FIFO"
    );
}

/// Regression: `--bidir` summary lines ended in `(0.85%)[TX-C]` and `receiver[TX-C]`, then in
/// `receiver [TX-C]`, where iperf3 (3.12 and 3.21) writes the direction after the id,
/// `[  5][TX-C] ... receiver` and `[SUM][RX-C]`, under a `[ ID][Role]` header: what scripts grep.
#[test]
fn bidir_roles_follow_the_id_as_iperf3_writes_them() {
    let s = Server::start();
    let o = s.client(&["--bidir", "-t", "1", "-i", "0.5", "-P", "2"]);
    let text = out(&o);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("[ ID][Role] Interval"), "{text}");
    for role in ["[TX-C]", "[RX-C]"] {
        for end in ["sender", "receiver"] {
            let stream = text.lines().any(|l| {
                l.starts_with('[')
                    && l.get(5..11) == Some(role)
                    && l.get(1..4)
                        .is_some_and(|id| id.trim().parse::<u32>().is_ok())
                    && l.trim_end().ends_with(end)
            });
            assert!(stream, "no stream line {role} ... {end}: {text}");
            let sum = format!("[SUM]{role}");
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&sum) && l.trim_end().ends_with(end)),
                "no {sum} ... {end}: {text}"
            );
        }
    }
    for l in text.lines().filter(|l| l.contains("-C]")) {
        assert!(
            l.starts_with('[')
                && (l.get(5..11) == Some("[TX-C]") || l.get(5..11) == Some("[RX-C]")),
            "a role elsewhere than after the id: {l:?}"
        );
    }
}

/// Regression: the column header was printed before a connection error.
#[test]
fn no_header_before_a_connection_error() {
    let port = common::free_port();
    let o = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!out(&o).contains("[ ID]"), "{}", out(&o));
    // iperf3's words first (scripts grep them), then what to do.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("unable to connect to server") && err.contains("Connection refused"),
        "{err}"
    );
}

/// UDP without -b says which rate it chose: iperf3's 1 Mbit/s per stream, even to loopback.
#[test]
fn udp_without_a_rate_says_what_it_sends() {
    let s = Server::start();
    let o = s.client(&["-u", "-t", "0.5"]);
    assert!(o.status.success());
    assert!(
        out(&o).contains("UDP at 1.00 Mbits/sec per stream, iperf3's default"),
        "{}",
        out(&o)
    );
}

/// Regression: with `-O 1 -t 2` the summary read "1.00-3.00 sec" and TCP's measured intervals
/// started at "1.30" (after the warm-up and the send path calibration). iperf3 restarts its
/// clock after the warm-up: omitted intervals from 0, measured ones and the summary from 0 too.
#[test]
fn warm_up_labels_are_iperf3s() {
    let s = Server::start();
    for extra in [&[][..], &["-u", "-b", "10M"][..], &["--iperf3"][..]] {
        let mut args = vec!["-O", "1", "-t", "2"];
        args.extend_from_slice(extra);
        let o = s.client(&args);
        let text = out(&o);
        assert!(o.status.success(), "{extra:?}: {text}");
        let spans = |pick: &dyn Fn(&str) -> bool| -> Vec<String> {
            text.lines()
                .filter(|l| l.contains(" sec ") && pick(l))
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
                .collect()
        };
        let omitted = spans(&|l| l.contains("(omitted)"));
        let measured = spans(&|l| {
            !l.contains("(omitted)") && !l.contains("sender") && !l.contains("receiver")
        });
        assert_eq!(
            omitted.first().map(String::as_str),
            Some("0.00-1.00"),
            "{extra:?}: {text}"
        );
        assert_eq!(
            measured,
            ["0.00-1.00", "1.00-2.00"],
            "{extra:?}: measured intervals from the end of the warm-up: {text}"
        );
        for l in text
            .lines()
            .filter(|l| l.contains(" sec ") && l.ends_with("receiver"))
        {
            assert!(l.contains(" 0.00-2.0"), "{extra:?}: {l}\n{text}");
        }
    }
}

/// The lines `netsweep -s -p PORT` writes to stdout up to the one `done` accepts (10 s at
/// most), the server still running while `done` is asked (so its port can be reached).
fn server_lines(port: &str, done: impl Fn(&str) -> bool) -> Vec<String> {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-s", "--bind", "127.0.0.1", "-p", port])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (mut seen, mut unreached) = (Vec::new(), false);
    while let Ok(line) =
        rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        let last = done(&line);
        if last {
            // The port the line names is the one listening.
            let port = line
                .strip_prefix("Server listening on ")
                .and_then(|p| p.split_whitespace().next()?.parse::<u16>().ok());
            unreached = !port.is_some_and(|p| {
                std::net::TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], p))).is_ok()
            });
        }
        seen.push(line);
        if last {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(!unreached, "{seen:?}: nothing listens on the port named");
    seen
}

/// What scripts wait for and check: `netsweep -s` says iperf3's "Server listening on PORT"
/// on standard output once it listens; a parameter error on iperf3's command line exits 1, as
/// iperf3's (clap's own is 2), and an option of the other role is named in iperf3's words.
#[test]
fn readiness_line_and_parameter_errors_are_iperf3s() {
    let port = common::free_port();
    let want = format!("Server listening on {port} (test #1)");
    let seen = server_lines(&port.to_string(), |l| l == want);
    assert!(seen.contains(&want), "{seen:?}");
    // `-p 0`: the line names the port the kernel chose, one a client reaches.
    let seen = server_lines("0", |l| l.starts_with("Server listening on "));
    let chosen: u16 = seen
        .iter()
        .find_map(|l| l.strip_prefix("Server listening on "))
        .and_then(|p| p.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert_ne!(chosen, 0, "{seen:?}");
    for (args, words) in [
        (&["-c", "127.0.0.1", "--bogus"][..], "--bogus"),
        (
            &["-c", "127.0.0.1", "-D"],
            "some option you are trying to set is server only",
        ),
        (
            &["-s", "-t", "5"],
            "some option you are trying to set is client only",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
    }
}

/// A test that ended well ends with iperf3's `iperf Done.` (scripts wait for it; not with
/// `-J`), and every figure has iperf3's three significant digits (`100 Mbits/sec`, not
/// `100.0`: iperf3's unit_snprintf switches format where rounding adds a digit).
#[test]
fn the_text_ends_as_iperf3s_with_its_digits() {
    let s = Server::start();
    let o = s.client(&["-t", "1", "-b", "100M", "-i", "0.5"]);
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    assert_eq!(text.lines().last(), Some("iperf Done."), "{text}");
    assert!(text.contains("\n\niperf Done.\n"), "{text}");
    let units = [
        "KBytes",
        "MBytes",
        "GBytes",
        "Kbits/sec",
        "Mbits/sec",
        "Gbits/sec",
    ];
    let mut seen = 0;
    for line in text.lines().filter(|l| l.starts_with("[  0]")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2).filter(|w| units.contains(&w[1])) {
            let digits = pair[0].chars().filter(char::is_ascii_digit).count();
            // Bytes scale by 1024 (as iperf3's): 1000 to 1023 of a unit keep four digits,
            // `1010 KBytes` (a window near 1 MByte), where iperf3 writes them too.
            let binary = pair[1].ends_with("Bytes")
                && pair[0]
                    .parse::<u32>()
                    .is_ok_and(|v| (1000..1024).contains(&v));
            let ok = if pair[0].contains('.') {
                digits == 3
            } else {
                (1..=3).contains(&digits) || binary
            };
            assert!(ok, "{:?} in {line:?}: {text}", pair[0]);
            seen += 1;
        }
    }
    assert!(seen >= 6, "{text}");
    // UDP's loss percentage as iperf3's %.2g: "(0%)", "(0.052%)", "(1.2%)", not "(0.00%)".
    let u = s.client(&["-u", "-t", "1", "-b", "10M"]);
    let utext = out(&u);
    assert!(u.status.success(), "{utext}");
    let mut percents = 0;
    for line in utext
        .lines()
        .filter(|l| l.starts_with("[  0]") && l.contains("%)"))
    {
        let open = line.rfind('(').expect("(");
        let pc = &line[open + 1..line.rfind("%)").expect("%)")];
        let significant = pc
            .split('e')
            .next()
            .unwrap_or("")
            .trim_start_matches(['0', '.'])
            .chars()
            .filter(char::is_ascii_digit)
            .count();
        let mantissa = pc.split('e').next().unwrap_or("");
        // %g drops trailing zeros: "0.00" and "1.20" are not iperf3's.
        let trailing_zero = mantissa.contains('.') && mantissa.ends_with('0');
        assert!(
            pc.parse::<f64>().is_ok() && significant <= 2 && !trailing_zero,
            "{pc:?} in {line:?}"
        );
        percents += 1;
    }
    assert!(percents >= 2, "{utext}");
    let j = s.client(&["-t", "1", "-b", "10M", "-J"]);
    assert!(j.status.success());
    assert!(!out(&j).contains("iperf Done"), "{}", out(&j));
}

/// The data connections' lines and the column header are printed as soon as the connections
/// are up, as iperf3 prints them, not with the first interval (ten seconds later with `-i 10`).
#[test]
fn connected_lines_come_before_the_first_interval_ends() {
    use std::io::BufRead;
    let s = Server::start();
    let t0 = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["-c", "127.0.0.1", "-p", &s.1.to_string()])
        .args(["-t", "4", "-i", "10", "-b", "10M"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut arrived = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        arrived.push((t0.elapsed(), line.unwrap()));
    }
    common::wait_bounded(
        &mut child,
        std::time::Duration::from_secs(15),
        "netsweep -c",
    );
    let when = |needle: &str| {
        arrived
            .iter()
            .find(|(_, l)| l.contains(needle))
            .map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no {needle:?} in {arrived:?}"))
    };
    let connected = when("connected to 127.0.0.1 port");
    let header = when("[ ID] Interval");
    let interval = when("0.00-4.00");
    assert!(connected <= header, "{arrived:?}");
    // The one interval closes at the test's end (4 s); the lines came at the start.
    assert!(
        interval.saturating_sub(header) > std::time::Duration::from_secs(2),
        "{arrived:?}"
    );
}
