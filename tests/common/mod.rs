//! Helpers shared by the integration tests: an in-process server on 127.0.0.1:0 and the
//! root/CI rules for tests that need namespaces.
#![allow(dead_code)]

pub mod browser;
pub mod loopback;
pub mod netns;
pub mod sshd;

use netsweep::traffic::client::{self, ClientConfig, TestError};
use netsweep::traffic::result::{Interval, TestResult};
use netsweep::traffic::server;
use netsweep::traffic::spec::{ServerLimits, TestSpec};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A server running in this process; stopped on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(limits: ServerLimits) -> TestServer {
        Self::start_on("127.0.0.1:0", limits)
    }

    pub fn start_on(bind: &str, limits: ServerLimits) -> TestServer {
        let listener = TcpListener::bind(bind).expect("bind test listener");
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let log: server::Log =
                Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()));
            server::run(listener, limits, &flag, log).expect("server run");
        });
        TestServer {
            addr,
            log,
            stop,
            handle: Some(handle),
        }
    }

    pub fn run(&self, spec: &TestSpec) -> Result<TestResult, TestError> {
        let stop = AtomicBool::new(false);
        client::run_test(
            &ClientConfig::new(self.addr),
            spec,
            &stop,
            &mut |_: &Interval| {},
        )
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn is_root() -> bool {
    netsweep::platform::process::is_root()
}

pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false)
}

/// True when a root-only test may run. Outside CI a non-root run skips with a message; in CI
/// the test fails instead, so CI can never pass by running nothing.
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(!in_ci(), "{test} needs root and CI must run it");
    eprintln!(
        "SKIPPED {test}: needs root (network namespaces); run the tests as root to include it"
    );
    false
}

/// True when `tool` is on PATH. In CI a missing tool fails the test.
pub fn tool_or_skip(test: &str, tool: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        assert!(!in_ci(), "{test} needs {tool}; .ci/run must install it");
        eprintln!("SKIPPED {test}: {tool} is not installed");
    }
    found
}

/// The ports `free_port` hands out: below Linux's and FreeBSD's ephemeral ranges (32768 and
/// 49152 on), so no connection's local port lands on one between its release and a server's
/// bind.
const TEST_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A port free on 127.0.0.1 for TCP and UDP (bound and released) for a test's own server.
/// Never the same twice in one test binary, whose tests run at once: the kernel's port 0 may
/// hand two tests one port in turn, and two servers then race for it (one test's client met
/// the other's server, busy with its test).
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let span = u32::from(TEST_PORTS.end - TEST_PORTS.start);
    // Where this process starts in the span, so binaries run one after another (or two suites
    // at once) do not start on the same ports.
    let offset = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = TEST_PORTS.start + u16::try_from((offset + n) % span).expect("within span");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        if TcpListener::bind(addr).is_ok() && std::net::UdpSocket::bind(addr).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {TEST_PORTS:?}")
}

/// Waits until something accepts connections on `addr` (a server process starting).
pub fn wait_listening(addr: SocketAddr, what: &str) {
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "{what} did not start listening on {addr}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Waits until a TCP socket listens on `addr`'s port, without connecting (a connection would
/// count as a client to a server such as iperf3's).
pub fn wait_listening_quietly(addr: SocketAddr) {
    let t0 = std::time::Instant::now();
    let port = format!(":{:04X} ", addr.port());
    loop {
        let listening = ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| {
                t.lines().any(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .is_some_and(|a| format!("{a} ").ends_with(&port))
                        && l.split_whitespace().nth(3) == Some("0A")
                })
            })
        });
        if listening {
            return;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "nothing listens on {addr}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A lab for one test, named after `tag` and this process, its state in `dir`.
pub fn lab_up(
    tag: &str,
    dir: &tempfile::TempDir,
    path: netsweep::lab::PathConfig,
    emulator: netsweep::lab::EmulatorChoice,
) -> netsweep::lab::Lab {
    let opts = netsweep::lab::LabOptions {
        state_dir: dir.path().to_path_buf(),
        emulator,
        ..netsweep::lab::LabOptions::default()
    };
    netsweep::lab::Lab::up(
        &format!("{tag}{}", std::process::id() % 100_000),
        path,
        &opts,
    )
    .expect("lab up")
}

/// Runs `netsweep ARGS` in `dir` (its runtime files there too), asserts that it succeeded and
/// returns its standard output and error together.
#[allow(dead_code)]
pub fn netsweep_ok(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(args)
        .current_dir(dir)
        .env("NETSWEEP_RUNTIME_DIR", dir.join("rt"))
        .output()
        .expect("netsweep runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {text}");
    text
}

/// What of lab `name` (state in `state_dir`) is still there: its namespaces, its state file,
/// and its processes (a relay or QEMU, found by their command lines). Empty when nothing is.
pub fn lab_leftovers(name: &str, state_dir: &std::path::Path) -> Vec<String> {
    let mut left: Vec<String> = ["a", "b"]
        .iter()
        .map(|h| format!("nsw-{name}-{h}"))
        .filter(|ns| netsweep::platform::netns::exists(ns))
        .map(|ns| format!("namespace {ns}"))
        .collect();
    let state = state_dir.join(format!("{name}.json"));
    if state.exists() {
        left.push(format!("state file {}", state.display()));
    }
    left.extend(
        netsweep::lab::processes::of_lab(name, state_dir)
            .into_iter()
            .map(|p| format!("{:?} process {}", p.kind, p.pid)),
    );
    left
}

/// Waits at most `limit` for `child` to end (then kills it and fails).
pub fn wait_bounded(child: &mut std::process::Child, limit: std::time::Duration, what: &str) {
    let t0 = std::time::Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Tries `ok` every 200 ms until it holds, at most `limit` (then fails naming `what`).
pub fn wait_bounded_until(limit: std::time::Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !ok() {
        assert!(t0.elapsed() < limit, "{what} not ready within {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Tries `ok` every 100 ms for at most `limit`: whether it came to hold.
pub fn wait_bounded_check(limit: std::time::Duration, mut ok: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        if ok() {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Starts `netsweep ARGS` with the test hook `NETSWEEP_TEST_PAUSE=point` and waits (at most
/// `limit`) until it says it paused there; the child is then stopped at that point.
pub fn netsweep_paused_at(
    args: &[&str],
    envs: &[(&str, &str)],
    point: &str,
    limit: std::time::Duration,
) -> std::process::Child {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"));
    cmd.args(args).envs(envs.iter().copied());
    paused_at(cmd, point, limit)
}

/// Starts `cmd` (a netsweep, possibly behind `ip netns exec`, which execs it) with the test
/// hook at `point` and waits (at most `limit`) until it says it paused there.
pub fn paused_at(
    mut cmd: std::process::Command,
    point: &str,
    limit: std::time::Duration,
) -> std::process::Child {
    use std::io::BufRead;
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut child = cmd
        .env("NETSWEEP_TEST_PAUSE", point)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("netsweep starts");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let want = format!("test pause at {point}");
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains(&want) {
                let _ = tx.send(Ok(()));
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(())) => child,
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} never paused at {point}: {other:?}");
        }
    }
}

/// VmRSS of the process whose `/proc/.../status` is `status` (`/proc/self/status`,
/// `/proc/PID/status`), KiB; 0 when it is gone.
pub fn vm_rss_kib(status: &str) -> u64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// The CPUs a `/proc/.../status` text allows its task (`Cpus_allowed_list: 0-1,4`).
pub fn cpus_allowed(status: &str) -> Vec<usize> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("");
    let mut out = Vec::new();
    for run in list.trim().split(',').filter(|r| !r.is_empty()) {
        let (a, b) = run.split_once('-').unwrap_or((run, run));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// A child process killed and reaped when dropped: cleanup even when an assertion fails.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// kill -9 of a child, reaped.
pub fn kill9(child: &mut std::process::Child) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
}

/// Removes lab `name` (state in the default directory) when dropped: cleanup even when an
/// assertion fails.
pub struct LabDown(pub String);

impl Drop for LabDown {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["lab", "down", &self.0])
            .output();
    }
}

/// One group of `/proc/net/snmp` (`group` is its line's prefix, such as `"Udp:"`): each
/// counter by name.
pub fn snmp_counters(text: &str, group: &str) -> std::collections::HashMap<String, u64> {
    let mut lines = text.lines().filter(|l| l.starts_with(group));
    let (names, values) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .filter_map(|(n, v)| Some((n.to_string(), v.parse().ok()?)))
        .collect()
}

/// Thread names in this process, sampled every 50 ms until `stop`.
pub fn thread_names_while(
    stop: &std::sync::atomic::AtomicBool,
) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        for task in std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(n) = std::fs::read_to_string(task.path().join("comm")) {
                names.insert(n.trim().to_string());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    names
}

/// `netsweep doctor --json`'s diagnosis, after checking its exit status against it: 2 when a
/// finding is a problem, 0 otherwise (1 would be a doctor that could not diagnose).
pub fn doctor_diagnosis(out: &std::process::Output) -> netsweep::host::doctor::Diagnosis {
    let d: netsweep::host::doctor::Diagnosis = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let problem = d.worst() == netsweep::host::doctor::Severity::Problem;
    assert_eq!(
        out.status.code(),
        Some(if problem { 2 } else { 0 }),
        "worst finding {:?}: {}",
        d.worst(),
        String::from_utf8_lossy(&out.stderr)
    );
    d
}
