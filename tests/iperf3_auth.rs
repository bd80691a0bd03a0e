//! iperf3's authentication on the wire, both roles: Debian's iperf3 (3.12 in CI) logging in to
//! `netsweep server`, netsweep's client logging in to `iperf3 -s`, netsweep to itself in both
//! paddings, and the two ways a refused login arrives from iperf3 servers (3.12-3.20: SERVER_ERROR
//! and a 4-byte code; 3.21: a hang-up). Keys are made by `openssl` at test time.

mod common;

use netsweep::traffic::client::{self, ClientConfig, PeerProtocol, TestError};
use netsweep::traffic::iperf3::auth::{Padding, password_hash};
use netsweep::traffic::iperf3::login::{ClientAuth, ServerAuth};
use netsweep::traffic::iperf3::wire::State;
use netsweep::traffic::result::TestResult;
use netsweep::traffic::server;
use netsweep::traffic::spec::{ServerLimits, TestSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Traffic tests share two cores: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A key pair and a users file (alice's password is "s3cret") in a temporary directory.
struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    /// `None` (after saying why) when openssl is missing outside CI.
    fn make(test: &str) -> Option<Keys> {
        if !common::tool_or_skip(test, "openssl") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
        };
        run(&["genrsa", "-out", "private.pem", "2048"]);
        run(&[
            "rsa",
            "-in",
            "private.pem",
            "-outform",
            "PEM",
            "-pubout",
            "-out",
            "public.pem",
        ]);
        std::fs::write(
            dir.path().join("users.csv"),
            format!(
                "# iperf3 users\nalice,{}\nbob,{}\n",
                password_hash("alice", "s3cret"),
                password_hash("bob", "other")
            ),
        )
        .unwrap();
        Some(Keys { dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn text(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap()
    }

    fn server_auth(&self, padding: Padding) -> ServerAuth {
        ServerAuth::load(
            &self.path("private.pem"),
            &self.path("users.csv"),
            10,
            padding,
        )
        .unwrap()
    }

    fn client_auth(&self, user: &str, password: &str, padding: Padding) -> ClientAuth {
        ClientAuth::new(user, password, &self.text("public.pem"), padding).unwrap()
    }
}

/// `netsweep server` with a login, in this process; stopped on drop.
struct AuthServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl AuthServer {
    fn start(auth: ServerAuth) -> AuthServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sink, flag) = (log.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            let log: server::Log =
                Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()));
            let limits = ServerLimits::default();
            server::run_authenticated(vec![listener], limits, Arc::new(auth), &flag, log)
                .expect("server run");
        });
        AuthServer {
            addr,
            log,
            stop,
            handle: Some(handle),
        }
    }

    fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The log once it holds `words` (the server logs a refusal after the client heard it),
    /// or panics after 10 s.
    fn log_with(&self, words: &str) -> String {
        self.log_with_any(&[words])
    }

    fn log_with_any(&self, any: &[&str]) -> String {
        let t0 = std::time::Instant::now();
        loop {
            let log = self.log_text();
            if any.iter().any(|w| log.contains(w)) {
                return log;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "no {any:?} in: {log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A process killed on drop.
use common::KillOnDrop as Proc;

fn tcp1() -> TestSpec {
    TestSpec::tcp(Duration::from_secs(1))
}

fn login_to(addr: SocketAddr, auth: Option<ClientAuth>) -> Result<TestResult, TestError> {
    let cfg = ClientConfig {
        peer: PeerProtocol::Iperf3,
        auth: auth.map(Arc::new),
        ..ClientConfig::new(addr)
    };
    client::run_test(&cfg, &tcp1(), &AtomicBool::new(false), &mut |_| {})
}

/// Debian's iperf3 client against `addr` as `user` with `password` (None: no credentials).
fn iperf3_client(addr: SocketAddr, keys: &Keys, login: Option<(&str, &str)>) -> Output {
    let mut c = Command::new("iperf3");
    c.args(["-c", "127.0.0.1", "-p", &addr.port().to_string(), "-t", "1"]);
    if let Some((user, password)) = login {
        c.args(["--username", user, "--rsa-public-key-path"])
            .arg(keys.path("public.pem"))
            .env("IPERF3_PASSWORD", password);
    }
    c.stdin(Stdio::null()).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn iperf3_clients_log_in_to_netsweep_server() {
    let test = "iperf3_clients_log_in_to_netsweep_server";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let Some(keys) = Keys::make(test) else { return };
    let _s = serial();
    // iperf3 3.12 knows PKCS#1 padding only.
    let server = AuthServer::start(keys.server_auth(Padding::Pkcs1));
    let ok = iperf3_client(server.addr, &keys, Some(("alice", "s3cret")));
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("receiver"), "{}", text(&ok));
    let cases: [(Option<(&str, &str)>, &str); 3] = [
        (
            Some(("alice", "guess")),
            "wrong password for user \"alice\"",
        ),
        (Some(("mallory", "s3cret")), "unknown user \"mallory\""),
        (None, "the client sent no credentials"),
    ];
    for (login, logged) in cases {
        let out = iperf3_client(server.addr, &keys, login);
        assert_eq!(out.status.code(), Some(1), "{login:?}: {}", text(&out));
        assert!(
            text(&out).contains("test authorization failed"),
            "{login:?}: {}",
            text(&out)
        );
        server.log_with(logged);
    }
    let log = server.log_text();
    assert!(
        log.contains("iperf3 login of user \"alice\" accepted"),
        "{log}"
    );
    assert_eq!(log.matches("iperf3 test done").count(), 1, "{log}");
}

#[test]
fn netsweep_client_logs_in_to_iperf3_server() {
    let test = "netsweep_client_logs_in_to_iperf3_server";
    if !common::tool_or_skip(test, "iperf3") {
        return;
    }
    let Some(keys) = Keys::make(test) else { return };
    let _s = serial();
    let port = common::free_port();
    let child = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .arg("--rsa-private-key-path")
        .arg(keys.path("private.pem"))
        .arg("--authorized-users-path")
        .arg(keys.path("users.csv"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    let _iperf3 = Proc(child);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    common::wait_listening_quietly(addr);
    let netsweep = |user: &str, password: &str, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["client", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
            .args(["--username", user, "--rsa-public-key-path"])
            .arg(keys.path("public.pem"))
            .args(extra)
            .env("IPERF3_PASSWORD", password)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.code(), text(&out))
    };
    // Debian's 3.12 decrypts PKCS#1 only. --username speaks iperf3 without --iperf3.
    let (code, out) = netsweep("alice", "s3cret", &["--use-pkcs1-padding"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("Far end: iperf3"), "{out}");
    for (user, password) in [("alice", "guess"), ("mallory", "s3cret")] {
        let (code, out) = netsweep(user, password, &["--use-pkcs1-padding"]);
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains(&format!("refused the login of user \"{user}\"")),
            "{out}"
        );
        assert!(out.contains("wrong user name or password"), "{out}");
        assert!(
            !out.contains("before 3.13"),
            "the old misleading hint: {out}"
        );
    }
    // OAEP, the default, against a server before 3.17: the hint names the padding.
    let (code, out) = netsweep("alice", "s3cret", &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("need --use-pkcs1-padding here"), "{out}");
}

#[test]
fn netsweep_logs_in_to_netsweep_in_both_paddings() {
    let test = "netsweep_logs_in_to_netsweep_in_both_paddings";
    let Some(keys) = Keys::make(test) else { return };
    let _s = serial();
    for padding in [Padding::Oaep, Padding::Pkcs1] {
        let server = AuthServer::start(keys.server_auth(padding));
        let r = login_to(
            server.addr,
            Some(keys.client_auth("alice", "s3cret", padding)),
        )
        .unwrap_or_else(|e| panic!("{padding:?}: {e}"));
        assert!(r.directions[0].summary.bytes > 0);
        // A PKCS#1 token to an OAEP-only server is refused; a server that takes PKCS#1 for old
        // clients takes OAEP too.
        let alice =
            |p: Padding| login_to(server.addr, Some(keys.client_auth("alice", "s3cret", p)));
        let (pkcs1, oaep) = (alice(Padding::Pkcs1), alice(Padding::Oaep));
        match padding {
            Padding::Oaep => {
                let e = pkcs1.unwrap_err();
                assert!(e.message.contains("refused the login"), "{e}");
                // The true reason: the token was PKCS#1's, not "could not be decrypted".
                server.log_with("the client used PKCS#1 v1.5 padding");
                assert!(oaep.is_ok(), "{oaep:?}");
            }
            Padding::Pkcs1 => assert!(pkcs1.is_ok() && oaep.is_ok(), "{pkcs1:?} {oaep:?}"),
        }
        let e = login_to(
            server.addr,
            Some(keys.client_auth("bob", "s3cret", padding)),
        )
        .unwrap_err();
        assert!(
            e.message.contains("refused the login of user \"bob\""),
            "{e}"
        );
        let e = login_to(server.addr, None).unwrap_err();
        assert!(e.message.contains("requires credentials"), "{e}");
        // netsweep's own protocol has no login: refused, with the way in.
        let own = ClientConfig::new(server.addr);
        let e = client::run_test(&own, &tcp1(), &AtomicBool::new(false), &mut |_| {}).unwrap_err();
        assert!(e.message.contains("--iperf3 --username"), "{e}");
        let log = server.log_with("wrong password for user \"bob\"");
        let logins = if padding == Padding::Oaep { 2 } else { 3 };
        assert_eq!(
            log.matches("login of user \"alice\" accepted").count(),
            logins,
            "{log}"
        );
    }
}

/// A fake iperf3 server: takes the cookie, asks for the parameters, reads them, then does
/// `after` with the connection.
fn fake_server(after: fn(&mut std::net::TcpStream)) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut cookie = [0u8; 37];
        c.read_exact(&mut cookie).unwrap();
        c.write_all(&[State::ParamExchange.byte()]).unwrap();
        let mut len = [0u8; 4];
        c.read_exact(&mut len).unwrap();
        let mut params = vec![0u8; u32::from_be_bytes(len) as usize];
        c.read_exact(&mut params).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&params).unwrap();
        assert!(
            doc["authtoken"].as_str().is_some_and(|t| t.len() == 344),
            "{doc}"
        );
        after(&mut c);
    });
    (addr, handle)
}

/// Regression: iperf3 3.12 to 3.20 refuse a login with SERVER_ERROR and a 4-byte code, then
/// hang up; netsweep waited for 8 bytes and blamed the server's limits.
#[test]
fn a_refused_login_with_a_4_byte_code_is_reported_as_refused() {
    let Some(keys) = Keys::make("a_refused_login_with_a_4_byte_code_is_reported_as_refused") else {
        return;
    };
    let (addr, server) = fake_server(|c| {
        c.write_all(&[State::ServerError.byte()]).unwrap();
        c.write_all(&142i32.to_be_bytes()).unwrap();
    });
    let e = login_to(
        addr,
        Some(keys.client_auth("alice", "s3cret", Padding::Oaep)),
    )
    .unwrap_err();
    server.join().unwrap();
    assert!(
        e.message
            .contains("refused the login of user \"alice\" (iperf3 error 142)"),
        "{e}"
    );
    assert!(!e.message.contains("before 3.13"), "{e}");
}

/// iperf3 3.21 hangs up on a refused login without a word: the message says the login was
/// probably refused, not that a limit was hit.
#[test]
fn a_hang_up_after_credentials_says_the_login_may_have_been_refused() {
    let Some(keys) = Keys::make("a_hang_up_after_credentials_says_the_login_may_have_been_refused")
    else {
        return;
    };
    let (addr, server) = fake_server(|_| {});
    let e = login_to(
        addr,
        Some(keys.client_auth("alice", "s3cret", Padding::Oaep)),
    )
    .unwrap_err();
    server.join().unwrap();
    assert!(e.message.contains("the login was probably refused"), "{e}");
    assert!(e.message.contains("credentials for user \"alice\""), "{e}");
}

#[test]
fn missing_passwords_and_bad_key_files_are_refused_clearly() {
    let Some(keys) = Keys::make("missing_passwords_and_bad_key_files_are_refused_clearly") else {
        return;
    };
    let netsweep = |args: &[&str], password: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_netsweep"));
        c.args(args)
            .current_dir(keys.dir.path())
            .stdin(Stdio::null())
            .env_remove("IPERF3_PASSWORD");
        if let Some(p) = password {
            c.env("IPERF3_PASSWORD", p);
        }
        let out = c.output().unwrap();
        (out.status.code(), text(&out))
    };
    // Port 9 on loopback: nothing is sent, each is refused before connecting.
    let client = [
        "client",
        "127.0.0.1",
        "-p",
        "9",
        "-t",
        "1",
        "--username",
        "alice",
    ];
    let with_key = |key: &str| {
        let mut a = client.to_vec();
        a.extend(["--rsa-public-key-path", key]);
        a.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let args = with_key("public.pem");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out) = netsweep(&args, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("set IPERF3_PASSWORD"), "{out}");
    let args = with_key("private.pem");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out) = netsweep(&args, Some("s3cret"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("--rsa-public-key-path private.pem: "), "{out}");
    let (code, out) = netsweep(&client, Some("s3cret"));
    assert_eq!(code, Some(2), "clap: --username needs the key: {out}");
    let (code, out) = netsweep(
        &[
            "server",
            "-B",
            "127.0.0.1",
            "-p",
            "9",
            "--rsa-private-key-path",
            "public.pem",
            "--authorized-users-path",
            "users.csv",
        ],
        None,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("--rsa-private-key-path public.pem"), "{out}");
    let missing = Path::new("nowhere.csv");
    let (code, out) = netsweep(
        &[
            "server",
            "-B",
            "127.0.0.1",
            "-p",
            "9",
            "--rsa-private-key-path",
            "private.pem",
            "--authorized-users-path",
            missing.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("--authorized-users-path nowhere.csv"), "{out}");
}

/// Upstream iperf3 from 3.17 (OAEP), when `NETSWEEP_IPERF3_UPSTREAM` names its binary (Debian
/// ships 3.12): its client logs in to `netsweep server` and netsweep's client to its server;
/// a wrong password against it (3.21 hangs up) is reported as a login probably refused.
#[test]
fn upstream_iperf3_logs_in_with_oaep_both_ways() {
    let test = "upstream_iperf3_logs_in_with_oaep_both_ways";
    let Some(upstream) = std::env::var_os("NETSWEEP_IPERF3_UPSTREAM") else {
        eprintln!(
            "SKIPPED {test}: set NETSWEEP_IPERF3_UPSTREAM to an iperf3 3.17 or later binary \
             (built from esnet/iperf with libssl-dev) to include it"
        );
        return;
    };
    let Some(keys) = Keys::make(test) else { return };
    let _s = serial();
    let server = AuthServer::start(keys.server_auth(Padding::Oaep));
    let out = Command::new(&upstream)
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &server.addr.port().to_string(),
            "-t",
            "1",
        ])
        .args(["--username", "alice", "--rsa-public-key-path"])
        .arg(keys.path("public.pem"))
        .env("IPERF3_PASSWORD", "s3cret")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    server.log_with("login of user \"alice\" accepted");
    let port = common::free_port();
    let child = Command::new(&upstream)
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .arg("--rsa-private-key-path")
        .arg(keys.path("private.pem"))
        .arg("--authorized-users-path")
        .arg(keys.path("users.csv"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _iperf3 = Proc(child);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    common::wait_listening_quietly(addr);
    let r = login_to(
        addr,
        Some(keys.client_auth("alice", "s3cret", Padding::Oaep)),
    );
    assert!(r.is_ok(), "{r:?}");
    let e = login_to(
        addr,
        Some(keys.client_auth("alice", "guess", Padding::Oaep)),
    )
    .unwrap_err();
    assert!(
        e.message.contains("the login was probably refused")
            || e.message.contains("refused the login"),
        "{e}"
    );
}

/// Runs `netsweep args` with a pseudo-terminal as its standard input and output; answers
/// "Password:" with `password`. Returns the exit code and everything the terminal showed.
fn on_terminal(args: &[&str], password: &str) -> (Option<i32>, String) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors; the name, termios and winsize may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .env_remove("IPERF3_PASSWORD")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut master = std::fs::File::from(master);
    let (mut shown, mut answered) = (Vec::new(), false);
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&master),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, 200) } <= 0 {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            continue;
        }
        let mut buf = [0u8; 4096];
        match master.read(&mut buf) {
            Ok(0) | Err(_) => break, // EIO: the child closed the terminal
            Ok(n) => shown.extend_from_slice(&buf[..n]),
        }
        if !answered && String::from_utf8_lossy(&shown).contains("Password:") {
            master
                .write_all(format!("{password}\n").as_bytes())
                .unwrap();
            answered = true;
        }
    }
    common::wait_bounded(
        &mut child,
        Duration::from_secs(10),
        "netsweep on a terminal",
    );
    let code = child.wait().unwrap().code();
    (code, String::from_utf8_lossy(&shown).to_string())
}

#[test]
fn the_password_is_asked_for_on_a_terminal_without_echo() {
    let test = "the_password_is_asked_for_on_a_terminal_without_echo";
    let Some(keys) = Keys::make(test) else { return };
    let _s = serial();
    let server = AuthServer::start(keys.server_auth(Padding::Oaep));
    let key = keys.path("public.pem");
    let port = server.addr.port().to_string();
    let (code, shown) = on_terminal(
        &[
            "client",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "1",
            "--username",
            "alice",
            "--rsa-public-key-path",
            key.to_str().unwrap(),
        ],
        "s3cret",
    );
    assert_eq!(code, Some(0), "{shown}");
    assert!(shown.contains("Password:"), "{shown}");
    assert!(
        !shown.contains("s3cret"),
        "the password was echoed: {shown}"
    );
    server.log_with("login of user \"alice\" accepted");
}

/// A client whose clock is an hour off: its token decrypts, and the server refuses it for the
/// skew (iperf3's error 142 on the wire, the skew in the log); within the threshold it passes
/// the login.
#[test]
fn a_client_clock_beyond_the_skew_threshold_is_refused() {
    use netsweep::traffic::iperf3::auth::{Credentials, encode_token, public_key_from_pem};
    let Some(keys) = Keys::make("a_client_clock_beyond_the_skew_threshold_is_refused") else {
        return;
    };
    let _s = serial();
    let server = AuthServer::start(keys.server_auth(Padding::Oaep));
    let public = public_key_from_pem(&keys.text("public.pem")).unwrap();
    let now = netsweep::traffic::iperf3::login::unix_now();
    // The first byte after the parameters: SERVER_ERROR, or CREATE_STREAMS once logged in.
    let answer = |ts: i64| -> Vec<u8> {
        let c = Credentials {
            user: "alice".into(),
            password: "s3cret".into(),
            ts,
        };
        let token = encode_token(&c, &public, Padding::Oaep, &mut rand::rngs::OsRng).unwrap();
        let params = serde_json::json!({"tcp": true, "time": 1, "parallel": 1, "authtoken": token});
        let mut ctrl = std::net::TcpStream::connect(server.addr).unwrap();
        ctrl.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        ctrl.write_all(&[b'a'; 36]).unwrap();
        ctrl.write_all(&[0]).unwrap();
        let mut state = [0u8; 1];
        ctrl.read_exact(&mut state).unwrap();
        assert_eq!(state[0], State::ParamExchange.byte());
        let body = params.to_string();
        ctrl.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
        ctrl.write_all(body.as_bytes()).unwrap();
        let mut reply = vec![0u8; 1];
        ctrl.read_exact(&mut reply).unwrap();
        if reply[0] == State::ServerError.byte() {
            let mut rest = [0u8; 8];
            ctrl.read_exact(&mut rest).unwrap();
            reply.extend_from_slice(&rest);
        }
        reply
    };
    let refused = answer(now - 3600);
    assert_eq!(refused[0], State::ServerError.byte());
    assert_eq!(i32::from_be_bytes(refused[1..5].try_into().unwrap()), 142);
    // 3600 s, or 3601 when a second turned between the token and the check.
    let log = server.log_with("from this server's, more than the --time-skew-threshold of 10 s");
    assert!(
        log.contains("clock is 3600 s") || log.contains("clock is 3601 s"),
        "{log}"
    );
    // Five seconds off is within the default 10: the server goes on to the streams.
    assert_eq!(answer(now - 5), vec![State::CreateStreams.byte()]);
    server.log_with("login of user \"alice\" accepted");
}
