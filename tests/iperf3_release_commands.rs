//! iperf3's own release commands, run both ways on loopback: Debian's iperf3 client (3.12 in
//! CI) against a netsweep server, and netsweep's client (`netsweep -c HOST --iperf3 ...`, as a
//! user told "add --iperf3" would type it) against Debian's `iperf3 -s`. Every command passes
//! (exit 0, iperf3's summary or a JSON document without an error) or is refused by netsweep by
//! name (`REFUSED`, each with its reason). `auth_test.sh`'s logins run the same two ways, with
//! keys that `openssl` makes in a temporary directory.
//!
//! The command lines are transcribed, as data, from esnet/iperf at commit
//! c9b74229d0d9bfec6d2307b66b43c29a7665ad0b (2026-07-10): `test_commands.sh` (the arguments
//! after `./src/iperf3 -c "$host"`, in the script's order) and `auth_test.sh`. CI has no
//! network, so they are not downloaded. To keep the runtime modest, `-t 5` becomes `-t 1` and
//! a line without an end condition gets `-t 1`; everything else is as written.

mod common;

use common::{KillOnDrop, TestServer};
use netsweep::traffic::iperf3::auth::password_hash;
use netsweep::traffic::spec::ServerLimits;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// test_commands.sh, c9b74229d0d9bfec6d2307b66b43c29a7665ad0b: every client line's arguments
/// after `-c "$host"`.
const TEST_COMMANDS: &[&str] = &[
    "-V -t 5 -T test1",
    "-u -V -t 5",
    "-i .3 -O 2 -t 5",
    "-i 1 -J -t 5",
    "-4 -t 5",
    "-4 -u -t 5",
    "-6 -t 5",
    "-6 -u -t 5",
    "-V -t 5 --fq-rate 5m",
    "-u -V -t 5 --fq-rate 5m",
    "--sctp -V -t 5",
    "-P 3 -t 5",
    "-u -P 3 -t 5",
    "-P 2 -t 5 -R",
    "-u -P 2 -t 5 -R",
    "-P 2 -t 5 --bidir",
    "-u -P 2 -t 5 --bidir",
    "-Z -t 5",
    "-Z -t 5 -R",
    "-t 5 -w 8M",
    "-n 5M",
    "-n 5M -u -b1G",
    "-n 5M -R",
    "-n 5M -u -b1G -R",
    "-n 5M -t 5",
    "-k 1K",
    "-k 1K -u -b1G",
    "-k 1K -R",
    "-k 1K -u -b1G -R",
    "-A 2/2",
    "-A 2/2 -u -b1G",
    "-u -b1G/100",
    "-C reno -V",
    "-M 1000 -V",
];

/// A command netsweep refuses by name: the words a netsweep server's log names it with (an
/// iperf3 client hears iperf3's "not implemented"), the words netsweep's client refuses it
/// with, and why. `iperf3_itself`: what iperf3's own client says when it refuses the command
/// on this machine before asking any server (`-A 2/2` on a machine without a CPU 2).
struct Refused {
    command: &'static str,
    server_log: &'static str,
    client_error: &'static str,
    why: &'static str,
    iperf3_itself: Option<&'static str>,
}

const REFUSED: &[Refused] = &[
    Refused {
        command: "--sctp -V -t 5",
        server_log: "asked for --sctp",
        client_error: "--sctp: netsweep tests TCP and UDP only",
        why: "netsweep measures TCP and UDP; SCTP is iperf3's alone",
        iperf3_itself: None,
    },
    Refused {
        command: "-u -b1G/100",
        server_log: "-b RATE/BURST",
        client_error: "-b 1G/100: iperf3's bursts",
        why: "netsweep's pacer sends evenly, without bursts",
        iperf3_itself: None,
    },
];

/// Commands that pin the client to CPU 2 (iperf3 reads its help's `n/n,m` as n): they run
/// where this process may use CPU 2, and both clients refuse them where it may not.
const PINS_CPU_2: &[&str] = &["-A 2/2", "-A 2/2 -u -b1G"];

/// Whether this process may run on CPU 2.
fn has_cpu_2() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    common::cpus_allowed(&status).contains(&2)
}

/// Refused before any traffic by iperf3's own client as by netsweep's: two end conditions.
const BOTH_REFUSE: &[(&str, &str, &str)] = &[(
    "-n 5M -t 5",
    "only one test end condition (-t, -n, -k) may be specified",
    "parameter error - only one test end condition (-t, -n, -k) may be specified",
)];

/// The arguments as run: `-t 5` is `-t 1`, and a line without an end condition gets `-t 1`.
fn shortened(command: &str) -> Vec<String> {
    let mut args: Vec<String> = command.split_whitespace().map(String::from).collect();
    for i in 1..args.len() {
        if args[i - 1] == "-t" && args[i] == "5" {
            args[i] = "1".into();
        }
    }
    if !args.iter().any(|a| a == "-t" || a == "-n" || a == "-k") {
        args.extend(["-t".into(), "1".into()]);
    }
    args
}

/// The loopback address a command runs over: `::1` for `-6`.
fn host_of(args: &[String]) -> &'static str {
    if args.iter().any(|a| a == "-6") {
        "::1"
    } else {
        "127.0.0.1"
    }
}

/// Runs `cmd`, killing it after `limit` (then fails naming `what`).
fn run_bounded(cmd: Command, limit: Duration, what: &str) -> Output {
    run_within(cmd, limit, what).unwrap_or_else(|| panic!("{what}: no end within {limit:?}"))
}

/// Runs `cmd`: its output, or `None` when it did not end within `limit` (it is killed).
fn run_within(mut cmd: Command, limit: Duration, what: &str) -> Option<Output> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Some(out.unwrap_or_else(|e| panic!("{what}: {e}"))),
        Err(_) => {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let _ = rx.recv_timeout(Duration::from_secs(5));
            None
        }
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

/// A finished test's output as iperf3 prints it: the JSON document (no error, an `end`) with
/// `-J`, else the text summary with its receiver line (each line titled with `-T`).
fn passed(args: &[String], out: &Output, titled: bool) -> Result<(), String> {
    let all = text(out);
    if !out.status.success() {
        return Err(format!("exit {:?}: {all}", out.status.code()));
    }
    if args.iter().any(|a| a == "-J") {
        let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {all}"))?;
        if doc.get("error").is_some() || doc["end"].as_object().is_none_or(|e| e.is_empty()) {
            return Err(format!("{doc:#}"));
        }
        return Ok(());
    }
    if !all.contains("receiver") {
        return Err(format!("no receiver line: {all}"));
    }
    if let Some(i) = args.iter().position(|a| a == "-T").filter(|_| titled) {
        let title = format!("{}:  ", args[i + 1]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if let Some(l) = stdout
            .lines()
            .find(|l| !l.is_empty() && !l.starts_with(&title))
        {
            return Err(format!("line without the title {title:?}: {l:?}\n{stdout}"));
        }
    }
    Ok(())
}

/// Debian's iperf3 client runs every release command against netsweep servers (one on
/// 127.0.0.1, one on ::1).
#[test]
fn iperf3s_release_commands_run_against_a_netsweep_server() {
    let test = "iperf3s_release_commands_run_against_a_netsweep_server";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    let v4 = TestServer::start(ServerLimits::default());
    let v6 = TestServer::start_on("[::1]:0", ServerLimits::default());
    let mut failures = Vec::new();
    for command in TEST_COMMANDS {
        let args = shortened(command);
        let host = host_of(&args);
        let server = if host == "::1" { &v6 } else { &v4 };
        let seen = server.log_text().len();
        let mut cmd = Command::new("iperf3");
        cmd.args(["-c", host, "-p", &server.addr.port().to_string()])
            .args(&args);
        // UDP counts the server sends (`-n 5M -u -b1G -R`, `-k 1K -u -b1G -R`) end through
        // loss too: netsweep's server tops up until TEST_END (tests/iperf3_lab.rs).
        let out = run_bounded(cmd, Duration::from_secs(40), command);
        if PINS_CPU_2.contains(command) && !has_cpu_2() {
            if out.status.success() || !text(&out).contains("unable to set CPU affinity") {
                failures.push(format!(
                    "{command}: iperf3 should refuse CPU 2: {}",
                    text(&out)
                ));
            }
            continue;
        }
        if let Some(r) = REFUSED.iter().find(|r| r.command == *command) {
            // iperf3 prints the server's "not implemented"; the server's log names the option.
            if r.iperf3_itself
                .is_some_and(|w| !out.status.success() && text(&out).contains(w))
            {
                // iperf3's client refused it here before asking the server.
                continue;
            }
            let named = common::wait_bounded_check(Duration::from_secs(10), || {
                server.log_text()[seen..].contains(r.server_log)
            });
            if out.status.success() || !text(&out).contains("not implemented") || !named {
                failures.push(format!(
                    "{command}: should be refused by name ({}): {}\nlog: {}",
                    r.why,
                    text(&out),
                    &server.log_text()[seen..]
                ));
            }
            continue;
        }
        if let Some((_, iperf3_words, _)) = BOTH_REFUSE.iter().find(|b| b.0 == *command) {
            if out.status.success() || !text(&out).contains(iperf3_words) {
                failures.push(format!(
                    "{command}: iperf3 should refuse it: {}",
                    text(&out)
                ));
            }
            continue;
        }
        // (iperf3 3.12's own client leaves some lines untitled: only netsweep's are checked.)
        if let Err(e) = passed(&args, &out, false) {
            failures.push(format!(
                "{command}: {e}\nlog: {}",
                &server.log_text()[seen..]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `iperf3 -s` on a free port of `host`.
fn iperf3_server(host: &str, extra: &[&str]) -> (KillOnDrop, SocketAddr) {
    let port = common::free_port();
    let child = Command::new("iperf3")
        .args(["-s", "-B", host, "-p", &port.to_string()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    let addr = SocketAddr::new(host.parse().expect("an address"), port);
    common::wait_listening_quietly(addr);
    (KillOnDrop(child), addr)
}

/// netsweep's client runs every release command against Debian's `iperf3 -s` (on 127.0.0.1
/// and on ::1), with `--iperf3` as it says to add.
#[test]
fn netsweeps_client_runs_iperf3s_release_commands_against_iperf3() {
    let test = "netsweeps_client_runs_iperf3s_release_commands_against_iperf3";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let _s = serial();
    let (_v4, a4) = iperf3_server("127.0.0.1", &[]);
    let (_v6, a6) = iperf3_server("::1", &[]);
    let mut failures = Vec::new();
    for command in TEST_COMMANDS {
        let args = shortened(command);
        let host = host_of(&args);
        let port = if host == "::1" { a6.port() } else { a4.port() };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_netsweep"));
        cmd.args(["-c", host, "-p", &port.to_string(), "--iperf3"])
            .args(&args);
        let out = run_bounded(cmd, Duration::from_secs(40), command);
        if PINS_CPU_2.contains(command) && !has_cpu_2() {
            if out.status.success() || !text(&out).contains("CPU 2 is not one this process") {
                failures.push(format!("{command}: should refuse CPU 2: {}", text(&out)));
            }
            continue;
        }
        if let Some(r) = REFUSED.iter().find(|r| r.command == *command) {
            if out.status.success() || !text(&out).contains(r.client_error) {
                failures.push(format!(
                    "{command}: should be refused by name ({}): {}",
                    r.why,
                    text(&out)
                ));
            }
            continue;
        }
        if let Some((_, _, ours)) = BOTH_REFUSE.iter().find(|b| b.0 == *command) {
            if out.status.success() || !text(&out).contains(ours) {
                failures.push(format!("{command}: should be refused: {}", text(&out)));
            }
            continue;
        }
        if let Err(e) = passed(&args, &out, true) {
            failures.push(format!("{command}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// auth_test.sh, c9b74229d0d9bfec6d2307b66b43c29a7665ad0b: user mario, password luigi, and the
/// four logins it tries, in order, with whether each gets in.
const AUTH_USER: &str = "mario";
const AUTH_PASSWORD: &str = "luigi";
const AUTH_LOGINS: &[(&str, bool)] = &[
    ("luigi", true),
    ("very incorrect", false),
    (
        "very,very,very, incorrect, and really, really, really, really, really long. Just to check.",
        false,
    ),
    ("luigi", true),
];

/// auth_test.sh's keys and users file, as it makes them: `openssl genrsa 2048`, the public
/// key with `openssl rsa -pubout`, and `mario,sha256("{mario}luigi")`.
fn auth_files(test: &str) -> Option<tempfile::TempDir> {
    if !common::tool_or_skip(test, "openssl") {
        return None;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    for args in [
        &["genrsa", "-out", "private.pem", "2048"][..],
        &[
            "rsa",
            "-in",
            "private.pem",
            "-outform",
            "PEM",
            "-pubout",
            "-out",
            "public.pem",
        ],
    ] {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    }
    std::fs::write(
        dir.path().join("authorized-user.txt"),
        format!("{AUTH_USER},{}\n", password_hash(AUTH_USER, AUTH_PASSWORD)),
    )
    .expect("the users file");
    Some(dir)
}

/// A client login of auth_test.sh: `IPERF3_PASSWORD=... CLIENT -c HOST -p PORT
/// --rsa-public-key-path=./public.pem --username=mario` (-t 1 for time).
fn login(client: &str, extra: &[&str], dir: &Path, port: u16, password: &str) -> Output {
    let mut cmd = Command::new(client);
    cmd.args(["-c", "127.0.0.1", "-p", &port.to_string()])
        .args(extra)
        .args([
            "--rsa-public-key-path=./public.pem",
            &format!("--username={AUTH_USER}"),
            "-t",
            "1",
        ])
        .current_dir(dir)
        .env("IPERF3_PASSWORD", password);
    run_bounded(cmd, Duration::from_secs(30), password)
}

/// auth_test.sh's server line with netsweep (`--use-pkcs1-padding`: iperf3 3.12 clients pad
/// with PKCS#1, as any iperf3 before 3.17) and Debian's iperf3 client: the right password
/// gets in twice, the wrong ones are refused, and the server's log says the true reason
/// (a wrong password, spaces or not).
#[test]
fn auth_test_sh_iperf3_client_against_netsweep_server() {
    let test = "auth_test_sh_iperf3_client_against_netsweep_server";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let Some(dir) = auth_files(test) else { return };
    let _s = serial();
    let port = common::free_port();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).expect("the log file");
    let server = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
            .args([
                "--rsa-private-key-path=./private.pem",
                "--authorized-user=./authorized-user.txt",
                "--use-pkcs1-padding",
            ])
            .current_dir(dir.path())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .expect("netsweep -s"),
    );
    common::wait_listening_quietly(SocketAddr::from(([127, 0, 0, 1], port)));
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();
    for (i, (password, gets_in)) in AUTH_LOGINS.iter().enumerate() {
        let out = login("iperf3", &[], dir.path(), port, password);
        if *gets_in {
            assert!(
                out.status.success() && text(&out).contains("receiver"),
                "login {i}: {}\nlog: {}",
                text(&out),
                log_text()
            );
        } else {
            assert!(!out.status.success(), "login {i}: {}", text(&out));
            assert!(
                text(&out).contains("test authorization failed"),
                "login {i}: {}",
                text(&out)
            );
            let want = format!("wrong password for user \"{AUTH_USER}\"");
            assert!(
                common::wait_bounded_check(Duration::from_secs(10), || log_text()
                    .matches(&want)
                    .count()
                    >= i),
                "login {i}: the log should say {want:?}: {}",
                log_text()
            );
        }
    }
    let log = log_text();
    assert!(!log.contains("credentials text"), "{log}");
    drop(server);
}

/// auth_test.sh's logins with netsweep's client against Debian's `iperf3 -s` with its keys
/// (`--use-pkcs1-padding`: iperf3 3.12 servers read PKCS#1 only). netsweep's client refuses a
/// password with white space before connecting (iperf3's servers cannot read one), which is
/// where those two logins fail.
#[test]
fn auth_test_sh_netsweep_client_against_iperf3_server() {
    let test = "auth_test_sh_netsweep_client_against_iperf3_server";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let Some(dir) = auth_files(test) else { return };
    let _s = serial();
    let port = common::free_port();
    let _server = KillOnDrop(
        Command::new("iperf3")
            .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
            .args([
                "--rsa-private-key-path=./private.pem",
                "--authorized-user=./authorized-user.txt",
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("iperf3 -s"),
    );
    common::wait_listening_quietly(SocketAddr::from(([127, 0, 0, 1], port)));
    let netsweep = env!("CARGO_BIN_EXE_netsweep");
    for (i, (password, gets_in)) in AUTH_LOGINS.iter().enumerate() {
        let out = login(
            netsweep,
            &["--use-pkcs1-padding"],
            dir.path(),
            port,
            password,
        );
        if *gets_in {
            assert!(
                out.status.success() && text(&out).contains("receiver"),
                "login {i}: {}",
                text(&out)
            );
        } else {
            assert!(!out.status.success(), "login {i}: {}", text(&out));
            assert!(
                text(&out).contains("password"),
                "login {i}: the refusal should name the password: {}",
                text(&out)
            );
        }
    }
}
