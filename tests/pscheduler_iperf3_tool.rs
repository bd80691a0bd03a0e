//! netsweep as the `iperf3_cmd` of pScheduler's iperf3 tool, with the command lines the tool's
//! `run` builds (perfsonar/pscheduler, pscheduler-tool-iperf3/iperf3/run, 2026-05) and the
//! per-run credentials its `participant-data` makes (a 2048-bit RSA key, a 20-character user
//! and password, `user,sha256({user}password)`), in a fleet mixing hosts that announce iperf3
//! 3.12 and 3.17: logins work or fail as they would with iperf3 itself, against a netsweep
//! peer and Debian's iperf3 3.12 peer, both roles.
//!
//! What a host announces is `iperf3 --version` from its PATH (a fake iperf3 printing 3.17.1,
//! or Debian's 3.12); the tool adds `--use-pkcs1-padding` first on both command lines when the
//! local version is 3.17 or later and the peer's older.

mod common;

use netsweep::traffic::iperf3::auth::password_hash;
use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const USER: &str = "q7Zr2KpX9mW4tB8nL3vD";
const PASSWORD: &str = "f#8Lk2@pQz!r5Xw^m1Tb";
const SECONDS: &str = "1";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_netsweep")
}

/// What runs as `iperf3_cmd` on a host, and what `iperf3 --version` on its PATH announces.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Host {
    /// netsweep, with Debian's iperf3 3.12 on the PATH.
    NetsweepBy312,
    /// netsweep, with an iperf3 3.17.1 on the PATH.
    NetsweepBy317,
    /// Debian's iperf3 3.12 itself.
    Iperf312,
}

impl Host {
    fn announced(self) -> (u64, u64) {
        match self {
            Host::NetsweepBy317 => (3, 17),
            _ => (3, 12),
        }
    }
}

/// The run's files: what participant-data hands out, written where the tool writes them.
struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn make() -> Run {
        let dir = tempfile::tempdir().expect("tempdir");
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("openssl");
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        // TraditionalOpenSSL private key and SubjectPublicKeyInfo public key, as the tool's
        // participant-data writes them with Python's cryptography.
        openssl(&["genrsa", "-traditional", "-out", "private-key", "2048"]);
        openssl(&["rsa", "-in", "private-key", "-pubout", "-out", "public-key"]);
        std::fs::write(
            dir.path().join("credentials"),
            format!("{USER},{}\n", password_hash(USER, PASSWORD)),
        )
        .expect("credentials");
        // A host whose iperf3 is 3.17.1 (the version is all the tool asks of it).
        let fake = dir.path().join("path317");
        std::fs::create_dir(&fake).expect("mkdir");
        let script = fake.join("iperf3");
        std::fs::write(&script, "#!/bin/sh\necho 'iperf 3.17.1 (cJSON 1.7.15)'\n").expect("fake");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Run { dir }
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The PATH a host's processes see: its announced iperf3 first.
    fn path_of(&self, host: Host) -> String {
        let system = std::env::var("PATH").unwrap_or_default();
        match host {
            Host::NetsweepBy317 => format!("{}:{system}", self.file("path317")),
            _ => system,
        }
    }
}

fn command_of(host: Host, run: &Run, args: &[String]) -> Command {
    let mut c = Command::new(match host {
        Host::Iperf312 => "iperf3",
        _ => bin(),
    });
    c.args(args).env("PATH", run.path_of(host));
    c
}

/// The tool's `iperf3_first_args` after the command: `--use-pkcs1-padding` when this host's
/// iperf3 is 3.17 or later and the other's is older.
fn padding_flag(me: Host, other: Host) -> Vec<String> {
    if other.announced() < (3, 17) && me.announced() >= (3, 17) {
        vec!["--use-pkcs1-padding".into()]
    } else {
        Vec::new()
    }
}

/// `run_server` with `ip-version: 4`, `dest: 127.0.0.1` and the auth files.
fn server_args(me: Host, other: Host, port: u16, run: &Run) -> Vec<String> {
    let mut a = padding_flag(me, other);
    for s in ["-s", "-1", "--idle-timeout", SECONDS, "--json", "-p"] {
        a.push(s.into());
    }
    a.push(port.to_string());
    for s in ["-B", "127.0.0.1", "-4", "--authorized-users-path"] {
        a.push(s.into());
    }
    a.push(run.file("credentials"));
    a.push("--rsa-private-key-path".into());
    a.push(run.file("private-key"));
    a
}

/// `run_client` with `ip-version: 4`, `source`/`dest: 127.0.0.1`, `parallel: 2`,
/// `interval: PT1S` and the auth files (IPERF3_PASSWORD in the environment).
fn client_args(me: Host, other: Host, port: u16, run: &Run) -> Vec<String> {
    let mut a = padding_flag(me, other);
    a.push("-p".into());
    a.push(port.to_string());
    for s in [
        "-4",
        "-B",
        "127.0.0.1",
        "-c",
        "127.0.0.1",
        "-t",
        SECONDS,
        "--json",
        "-i",
        "1",
        "-P",
        "2",
        "--rsa-public-key-path",
    ] {
        a.push(s.into());
    }
    a.push(run.file("public-key"));
    a.push("--username".into());
    a.push(USER.into());
    a
}

/// Kills a child left running when a test fails.
struct Reaped(Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Both participants' outputs: the server's (it ends by itself with -1) and the client's.
fn run_pair(server: Host, client: Host, password: &str) -> (Output, Output) {
    let run = Run::make();
    let port = common::free_port();
    let child = command_of(server, &run, &server_args(server, client, port, &run))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server");
    let mut child = Reaped(Some(child));
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("addr"));
    let c = command_of(client, &run, &client_args(client, server, port, &run))
        .env("IPERF3_PASSWORD", password)
        .output()
        .expect("client");
    let mut s = child.0.take().expect("server child");
    common::wait_bounded(&mut s, Duration::from_secs(15), "the -1 server");
    (s.wait_with_output().expect("server output"), c)
}

/// The client's output read as the tool's `_make_result` and `iperf3_parser` read it.
fn parsed(o: &Output) -> Result<Value, String> {
    let text = String::from_utf8_lossy(&o.stdout);
    // The tool drops anything before the first brace (iperf3 issue 1086).
    let text = text.find('{').map_or("", |p| &text[p..]);
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "status {}, not JSON ({e}): {text}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        )
    })?;
    if let Some(e) = doc.get("error") {
        return Err(format!("status {}: error {e}", o.status));
    }
    if !o.status.success() {
        return Err(format!("status {} without an error: {doc}", o.status));
    }
    if doc.get("intervals").is_none() {
        return Err(format!("no intervals: {doc}"));
    }
    let end = &doc["end"];
    if end.get("sum_sent").is_none() && end.get("sum").is_none() {
        return Err(format!("no end.sum_sent: {doc}"));
    }
    Ok(doc)
}

fn bps(doc: &Value, key: &str) -> f64 {
    doc["end"][key]["bits_per_second"].as_f64().unwrap_or(0.0)
}

fn login_works(server: Host, client: Host) {
    let (s, c) = run_pair(server, client, PASSWORD);
    let cdoc = parsed(&c).unwrap_or_else(|e| {
        panic!(
            "{client:?} client to {server:?} server: {e}\nserver: {}",
            String::from_utf8_lossy(&s.stderr)
        )
    });
    assert!(bps(&cdoc, "sum_received") > 1e6, "{cdoc}");
    // The server's -J document, which the tool parses for participant 1 (and takes as the
    // result with reverse): what it received in this forward test.
    let sdoc = parsed(&s).unwrap_or_else(|e| panic!("{server:?} server's -J document: {e}"));
    assert!(bps(&sdoc, "sum_received") > 1e6, "{sdoc}");
}

fn login_fails(server: Host, client: Host, password: &str) {
    let (s, c) = run_pair(server, client, password);
    let e = parsed(&c).expect_err("the login must fail");
    assert!(
        ["uthenticat", "uthoriz", "login", "ccess denied"]
            .iter()
            .any(|w| e.contains(w)),
        "{client:?} to {server:?}: {e}"
    );
    // Neither end sends a byte of traffic: the server reports no test.
    let _ = s;
}

fn ready(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !common::tool_or_skip(test, "openssl") || !common::tool_or_skip(test, "iperf3") {
        return None;
    }
    let v = Command::new("iperf3").arg("--version").output().ok()?;
    let v = String::from_utf8_lossy(&v.stdout).to_string();
    if !v.starts_with("iperf 3.12") {
        eprintln!("SKIPPED {test}: the iperf3 on the PATH is not 3.12 but {v:?}");
        return None;
    }
    Some(SERIAL.lock().unwrap_or_else(|e| e.into_inner()))
}

#[test]
fn netsweep_serves_the_tools_server_command_line_to_iperf3_3_12_and_netsweep_clients() {
    let Some(_g) = ready("server command line") else {
        return;
    };
    // Hosts that announce 3.12 pad with PKCS#1, without the flag the tool does not add.
    login_works(Host::NetsweepBy312, Host::Iperf312);
    // A 3.17 host serving a 3.12 one: the tool adds --use-pkcs1-padding first.
    login_works(Host::NetsweepBy317, Host::Iperf312);
    login_works(Host::NetsweepBy317, Host::NetsweepBy317);
    login_works(Host::NetsweepBy312, Host::NetsweepBy317);
}

#[test]
fn netsweep_runs_the_tools_client_command_line_against_iperf3_3_12_and_netsweep() {
    let Some(_g) = ready("client command line") else {
        return;
    };
    login_works(Host::Iperf312, Host::NetsweepBy312);
    login_works(Host::Iperf312, Host::NetsweepBy317);
    login_works(Host::NetsweepBy317, Host::NetsweepBy312);
}

/// Logins fail where iperf3's would: a wrong password; OAEP from a host whose pScheduler
/// wrongly believed its peer was 3.17 (no flag) against a 3.12 server.
#[test]
fn logins_fail_where_iperf3s_would() {
    let Some(_g) = ready("failing logins") else {
        return;
    };
    login_fails(Host::Iperf312, Host::NetsweepBy312, "notThePassword");
    login_fails(Host::NetsweepBy317, Host::Iperf312, "notThePassword");
    // The 3.17 client without --use-pkcs1-padding sends OAEP, which 3.12 cannot read.
    let run = Run::make();
    let port = common::free_port();
    let server = command_of(
        Host::Iperf312,
        &run,
        &server_args(Host::Iperf312, Host::Iperf312, port, &run),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("iperf3 -s");
    let mut server = Reaped(Some(server));
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("addr"));
    let c = command_of(
        Host::NetsweepBy317,
        &run,
        &client_args(Host::NetsweepBy317, Host::NetsweepBy317, port, &run),
    )
    .env("IPERF3_PASSWORD", PASSWORD)
    .output()
    .expect("client");
    assert!(parsed(&c).is_err(), "OAEP to iperf3 3.12 must fail");
    if let Some(mut s) = server.0.take() {
        let _ = s.kill();
        let _ = s.wait();
    }
}

/// `--idle-timeout N` with `-1`: a server no client comes to exits after N s, status 0,
/// printing nothing (as iperf3; the tool then reports that it could not parse the output).
#[test]
fn the_one_off_server_leaves_after_its_idle_timeout() {
    let port = common::free_port().to_string();
    let t0 = std::time::Instant::now();
    let mut s = Command::new(bin())
        .args(["-s", "-1", "--idle-timeout", "1", "--json", "-p", &port])
        .args(["-B", "127.0.0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server");
    common::wait_bounded(
        &mut s,
        Duration::from_secs(10),
        "netsweep -s -1 --idle-timeout 1",
    );
    let out = s.wait_with_output().expect("output");
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
}

/// The tool's first argument may be `--use-pkcs1-padding`: `netsweep --use-pkcs1-padding -s`
/// is still a server (regression: the rewrite looked for `-s` first only).
#[test]
fn a_leading_padding_flag_keeps_the_server_a_server() {
    let run = Run::make();
    let port = common::free_port().to_string();
    let mut s = Command::new(bin())
        .args([
            "--use-pkcs1-padding",
            "-s",
            "-1",
            "--idle-timeout",
            "1",
            "-p",
            &port,
        ])
        .args(["--authorized-users-path", &run.file("credentials")])
        .args(["--rsa-private-key-path", &run.file("private-key")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server");
    common::wait_bounded(&mut s, Duration::from_secs(10), "the server");
    let out = s.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("PKCS#1"), "{err}");
}

/// As iperf3's `-1`: a client refused at its login is not the one test, so a stranger with a
/// wrong password cannot end the tool's server before the scheduled client comes.
#[test]
fn a_refused_login_does_not_end_the_one_off_server() {
    let Some(_g) = ready("refused login and -1") else {
        return;
    };
    let run = Run::make();
    let port = common::free_port();
    let me = Host::NetsweepBy312;
    let server = command_of(me, &run, &server_args(me, Host::Iperf312, port, &run))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("server");
    let mut server = Reaped(Some(server));
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("addr"));
    let client = |password: &str| {
        command_of(
            Host::Iperf312,
            &run,
            &client_args(Host::Iperf312, me, port, &run),
        )
        .env("IPERF3_PASSWORD", password)
        .output()
        .expect("iperf3 -c")
    };
    assert!(parsed(&client("notThePassword")).is_err());
    let ok = client(PASSWORD);
    parsed(&ok).expect("the scheduled client after the stranger");
    let mut s = server.0.take().expect("server");
    common::wait_bounded(&mut s, Duration::from_secs(15), "the -1 server");
    let out = s.wait_with_output().expect("output");
    assert!(out.status.success(), "{out:?}");
    parsed(&out).expect("the served test's document");
}

/// `netsweep -s -1 --json` on a free loopback port, one test by Debian's
/// `iperf3 -c 127.0.0.1 -p P CLIENT_ARGS`: the server's document.
fn server_document_of(client_args: &[&str]) -> Value {
    let port = common::free_port().to_string();
    let server = Command::new(bin())
        .args(["-s", "-1", "--idle-timeout", "20", "--json", "-p", &port])
        .args(["-B", "127.0.0.1", "-4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("netsweep -s");
    let mut server = Reaped(Some(server));
    common::wait_listening_quietly(format!("127.0.0.1:{port}").parse().expect("addr"));
    let mut client = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port])
        .args(client_args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf3 -c");
    common::wait_bounded(&mut client, Duration::from_secs(30), "iperf3 -c");
    let c = client.wait_with_output().expect("iperf3 -c");
    let mut s = server.0.take().expect("server child");
    common::wait_bounded(&mut s, Duration::from_secs(15), "the -1 server");
    let out = s.wait_with_output().expect("server output");
    assert!(
        c.status.success() && out.status.success(),
        "iperf3 {client_args:?}: {}\nserver: {}",
        String::from_utf8_lossy(&c.stderr),
        String::from_utf8_lossy(&out.stderr)
    );
    parsed(&out).unwrap_or_else(|e| panic!("the server's document for {client_args:?}: {e}"))
}

/// Checks a server document's intervals of a 2 s test of 2 streams at 1 s intervals (`-t 2
/// -i 1 -P 2`) as pScheduler's iperf3 parser reads them (each interval's `streams` and `sum`:
/// socket, start, end, bytes, bits_per_second, omitted; a TCP sender's retransmits, snd_cwnd,
/// rtt), against the document's `end` sum of this server's own count, `end_key`.
fn check_server_intervals(doc: &Value, server_sends: bool, end_key: &str) {
    let ivs = doc["intervals"].as_array().expect("an intervals array");
    // As iperf3 3.12's server: one interval a second, then at most a stub up to the client's
    // TEST_END (iperf3 keeps one under a tenth of a second only when it moved data).
    let whole = ivs
        .iter()
        .filter(|iv| iv["sum"]["seconds"].as_f64().unwrap_or(0.0) >= 0.5)
        .count();
    assert!(
        whole == 2 && ivs.len() <= 3,
        "{} intervals: {doc:#}",
        ivs.len()
    );
    let mut last_end = 0.0;
    let mut total = 0u64;
    for (k, iv) in ivs.iter().enumerate() {
        let sum = &iv["sum"];
        let start = sum["start"].as_f64().expect("sum.start");
        assert!(
            (start - last_end).abs() < 1e-3,
            "interval {k} starts at {start}: {iv:#}"
        );
        last_end = sum["end"].as_f64().expect("sum.end");
        let streams = iv["streams"].as_array().expect("streams");
        assert_eq!(streams.len(), 2, "interval {k}: {iv:#}");
        let mut of_streams = 0u64;
        for s in streams {
            let mut keys = vec![
                "socket",
                "start",
                "end",
                "seconds",
                "bytes",
                "bits_per_second",
            ];
            if server_sends {
                keys.extend(["retransmits", "snd_cwnd", "snd_wnd", "rtt", "rttvar"]);
            }
            for key in keys {
                assert!(s[key].is_number(), "interval {k}: no {key}: {s:#}");
            }
            assert_eq!(s["omitted"], Value::Bool(false), "{s:#}");
            assert_eq!(s["sender"], Value::Bool(server_sends), "{s:#}");
            let bytes = s["bytes"].as_u64().unwrap_or(0);
            if k < 2 {
                assert!(bytes > 0, "interval {k}: a stream moved nothing: {s:#}");
            }
            of_streams += bytes;
        }
        for key in ["seconds", "bits_per_second"] {
            assert!(sum[key].is_number(), "interval {k}: no sum.{key}: {sum:#}");
        }
        assert_eq!(sum["sender"], Value::Bool(server_sends), "{sum:#}");
        assert_eq!(sum["omitted"], Value::Bool(false), "{sum:#}");
        assert_eq!(
            sum["bytes"].as_u64(),
            Some(of_streams),
            "interval {k}: {iv:#}"
        );
        if server_sends {
            assert!(sum["retransmits"].is_number(), "{sum:#}");
        }
        total += of_streams;
    }
    let end = doc["end"][end_key]["bytes"]
        .as_u64()
        .expect("the end's bytes");
    let off = (total as f64 - end as f64).abs() / end.max(1) as f64;
    assert!(
        off < 0.03,
        "the intervals add up to {total} bytes, end.{end_key} says {end}"
    );
}

/// Regression (issue 41, pScheduler audit): the server's `--json` document had
/// `"intervals": []`, so with `reverse`, where the tool takes the server's document as the
/// result, pScheduler's parser found no interval (iperf3 3.12's server gives one a second).
/// The server now writes its own figures per interval for the streams it sent (`-R`) or
/// received (forward).
#[test]
fn the_servers_json_has_an_interval_a_second_for_its_streams() {
    let test = "server intervals";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let reverse = server_document_of(&["-t", "2", "-i", "1", "-R", "-P", "2"]);
    check_server_intervals(&reverse, true, "sum_sent");
    check_end_streams(&reverse, true);
    let forward = server_document_of(&["-t", "2", "-i", "1", "-P", "2"]);
    check_server_intervals(&forward, false, "sum_received");
    check_end_streams(&forward, false);
}

/// The end's streams as pScheduler's iperf3 parser reads them (`rename_json` of each stream's
/// `udp` or `sender`): `socket` becomes the summary stream's `stream-id`, which the esmond
/// archiver sorts by with several streams (a stream without one is a KeyError there), and
/// `mean_rtt` its `rtt`. Regression: a netsweep server's document had neither, so a reverse
/// test (whose result is the server's document) lost both. The sender's RTTs of a stream the
/// server sent are its own, in order: min <= mean <= max.
fn check_end_streams(doc: &Value, server_sends: bool) {
    let connected: Vec<&Value> = doc["start"]["connected"]
        .as_array()
        .expect("start.connected")
        .iter()
        .map(|c| &c["socket"])
        .collect();
    let streams = doc["end"]["streams"].as_array().expect("end.streams");
    assert_eq!(streams.len(), 2, "{streams:#?}");
    for s in streams {
        let sender = &s["sender"];
        assert!(sender["socket"].is_i64(), "no socket: {s:#}");
        assert!(
            connected.contains(&&sender["socket"]),
            "{s:#} of {connected:?}"
        );
        assert_eq!(s["receiver"]["socket"], sender["socket"], "{s:#}");
        let rtt = |k: &str| sender[k].as_u64();
        if server_sends {
            let (min, mean, max) = (rtt("min_rtt"), rtt("mean_rtt"), rtt("max_rtt"));
            assert!(
                min > Some(0) && min <= mean && mean <= max,
                "RTTs {min:?} {mean:?} {max:?}: {s:#}"
            );
            assert!(rtt("max_snd_cwnd") > Some(0), "{s:#}");
        } else {
            assert_eq!(
                rtt("mean_rtt"),
                None,
                "the client's RTT is not the server's: {s:#}"
            );
        }
    }
}

/// With `--bidir` the server's document sums each direction apart, as iperf3's server does:
/// the client's sending streams in `sum_sent`/`sum_received`, the server's own in
/// `sum_sent_bidir_reverse`/`sum_received_bidir_reverse` (the two directions were added up).
#[test]
fn the_servers_json_sums_each_direction_of_a_bidir_test_apart() {
    let test = "server bidir sums";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let doc = server_document_of(&["-t", "1", "--bidir", "-P", "2"]);
    let end = &doc["end"];
    let bytes = |v: &Value| {
        v["bytes"]
            .as_u64()
            .unwrap_or_else(|| panic!("bytes in {v:#}"))
    };
    let streams = end["streams"].as_array().expect("end's streams");
    assert_eq!(streams.len(), 4, "{end:#}");
    assert_eq!(doc["start"]["test_start"]["num_streams"], 2);
    for (name, range) in [("", 0..2), ("_bidir_reverse", 2..4)] {
        let sent = bytes(&end[format!("sum_sent{name}")]);
        let received = bytes(&end[format!("sum_received{name}")]);
        let of =
            |side: &str| -> u64 { streams[range.clone()].iter().map(|s| bytes(&s[side])).sum() };
        assert_eq!(sent, of("sender"), "sum_sent{name}: {end:#}");
        assert_eq!(received, of("receiver"), "sum_received{name}: {end:#}");
        assert!(
            received > 0 && received <= sent,
            "sum{name}: {received} of {sent}"
        );
    }
}
