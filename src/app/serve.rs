//! `netsweep server` (and iperf3's `-s`): listening, serving until stopped or for one test
//! (`-1`), and what it prints for each test it served: iperf3's server text on stdout with
//! `-s`, the test's document with `-J`.

use super::daemon;
use crate::cli::{ServerArgs, ServerConfig};
use crate::traffic::{iperf3, output};
use crate::{platform::signals, traffic::server};
use anyhow::Context;
use socket2::{Domain, Socket, Type};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;

/// Binds the server's listener; on `::` it accepts IPv4 too.
pub fn bind_listener(cfg: &ServerConfig) -> anyhow::Result<TcpListener> {
    listen_on(cfg.listen)
}

fn listen_on(addr: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    sock.bind(&addr.into())
        .with_context(|| format!("cannot listen on {addr}"))?;
    sock.listen(128)?;
    Ok(sock.into())
}

pub(super) fn serve(a: &ServerArgs) -> anyhow::Result<ExitCode> {
    let cfg = ServerConfig::try_from(a)?;
    if a.daemon && !cfg.output.background {
        // The options were checked above, on this terminal.
        return daemon::start_in_background();
    }
    crate::console::set_timestamps(cfg.output.timestamps.clone());
    let redirect = daemon::Redirect::open(&cfg.output, (cfg.json, cfg.iperf3_banner))?;
    // Tests' sockets are budgeted under the open-file limit: take all the system allows.
    crate::platform::fdlimit::raise_to_hard();
    let mut listeners = match bind_listener(&cfg) {
        Ok(l) => vec![l],
        // iperf3's -s -J writes its listener's failure as a document with an "error" (a
        // trial's finding: pScheduler's iperf3 tool read an empty standard output).
        Err(e) if cfg.json => {
            let doc = serde_json::json!({
                "error": format!("unable to start listener for connections: {e:#}")
            });
            crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
            crate::errln!("{}{e:#}", crate::console::failure_prefix());
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e),
    };
    for port in &cfg.extra_ports {
        listeners.push(
            listen_on(std::net::SocketAddr::new(cfg.listen.ip(), *port))
                .context("the iperf3 port (is an iperf3 server running here?)")?,
        );
    }
    let mut iperf3_port_taken = None;
    if let Some(port) = cfg.iperf3_port_if_free {
        match listen_on(std::net::SocketAddr::new(cfg.listen.ip(), port)) {
            Ok(l) => listeners.push(l),
            Err(e) => iperf3_port_taken = Some((port, e)),
        }
    }
    let stop = signals::install();
    let addrs: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.to_string())
        .collect();
    let mut said = vec![format!(
        "{}{} (max {} at once; {})",
        daemon::LISTENING,
        addrs.join(" and "),
        match cfg.limits.max_tests {
            1 => "1 test".to_string(),
            n => format!("{n} tests"),
        },
        if cfg.auth.is_some() {
            "iperf3 clients that log in"
        } else {
            "netsweep and iperf3 clients"
        }
    )];
    if let Some(auth) = &cfg.auth {
        said.push(format!(
            "iperf3 clients log in (users in {}, {}); netsweep's own clients are refused",
            auth.users_path.display(),
            auth.padding.words()
        ));
    }
    if let Some((port, e)) = &iperf3_port_taken {
        said.push(format!(
            "not on iperf3's port {port} ({:#}; an iperf3 server there?): iperf3 clients add -p {}",
            e,
            cfg.listen.port()
        ));
    }
    if cfg.one_off {
        said.push("serving one test, then exiting (-1)".into());
    }
    said.extend(
        cfg.output
            .notes
            .iter()
            .map(|n| format!("netsweep server: {n}")),
    );
    let said: Vec<String> = said
        .iter()
        .map(|line| crate::console::stamped(line))
        .collect();
    // Held while the server runs, removed on every way out of this function; claimed before
    // the listening line, which -D waits for.
    let _pidfile = cfg
        .output
        .pidfile
        .as_deref()
        .map(daemon::Pidfile::claim)
        .transpose()?;
    for line in &said {
        crate::errln!("{line}");
    }
    redirect.apply(&said)?;
    // iperf3's line names the port iperf3's clients find: 5201 when the server listens there
    // too, else the port it listens on (the one the kernel chose for `-p 0`).
    let ports: Vec<u16> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.port())
        .collect();
    let banner_port = ports
        .iter()
        .copied()
        .find(|p| *p == crate::traffic::iperf3::IPERF3_PORT)
        .or(ports.first().copied())
        .unwrap_or(cfg.listen.port());
    if cfg.iperf3_banner {
        crate::outln!("{}", listening(banner_port, 1));
    }
    let log: server::Log =
        Arc::new(|line: &str| crate::errln!("{}", crate::console::stamped(line)));
    let served = Arc::new(server::Served {
        json_output: cfg.json,
        on_document: test_document(&cfg),
        live: test_text(&cfg, banner_port),
        ..server::Served::default()
    });
    let idled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    crate::host::sendmemory::enable();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        {
            let served = served.clone();
            scope.spawn(move || save_send_memory(&served, stop));
        }
        if cfg.one_off {
            let served = served.clone();
            let (idle, idled) = (cfg.idle_timeout, idled.clone());
            // Polls the count: the server's threads end when `stop` is raised.
            scope.spawn(move || one_off_watch(&served, idle, stop, &idled));
        }
        let outcome = server::serve_all(listeners, cfg.limits, cfg.auth, stop, log, served.clone());
        // Without -1 the watcher is not running; with it, it ends once `stop` is up.
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome?;
        Ok(())
    })?;
    if let Err(e) = crate::host::sendmemory::save() {
        crate::errln!("netsweep: the send-path record was not saved: {e}");
    }
    if idled.load(std::sync::atomic::Ordering::SeqCst) {
        // As iperf3: nothing printed, status 0.
        crate::errln!(
            "no client came within --idle-timeout {} s; exiting (-1)",
            cfg.idle_timeout.map_or(0, |d| d.as_secs())
        );
        return Ok(ExitCode::SUCCESS);
    }
    if cfg.one_off && cfg.json && served.last_document().is_none() {
        // Each test's document was printed as it ended (`test_report`); none ended.
        let doc = serde_json::json!({ "error": "the server stopped before its test ended" });
        crate::outln!("{}", serde_json::to_string_pretty(&doc)?);
    }
    // As iperf3 -1: the exit status says how the one test went.
    if cfg.one_off && served.failed.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        return Ok(ExitCode::FAILURE);
    }
    // Stopped by a signal (not by -1's end): iperf3's -s says so and exits 1.
    let by_signal = !(cfg.one_off && served.ended() > 0);
    if cfg.iperf3_cli && by_signal {
        crate::errln!("netsweep: interrupt - the server has terminated");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `-1`: raises `stop` once a test has ended, or when no connection has been served for
/// `idle` (then sets `idled`). Ends when `stop` is up.
fn one_off_watch(
    served: &server::Served,
    idle: Option<std::time::Duration>,
    stop: &std::sync::atomic::AtomicBool,
    idled: &std::sync::atomic::AtomicBool,
) {
    use std::sync::atomic::Ordering::{Relaxed, SeqCst};
    let mut last_busy = std::time::Instant::now();
    while !stop.load(Relaxed) {
        if served.ended() > 0 {
            stop.store(true, Relaxed);
        } else if served.busy() {
            last_busy = std::time::Instant::now();
        } else if idle.is_some_and(|i| last_busy.elapsed() >= i) {
            idled.store(true, SeqCst);
            stop.store(true, Relaxed);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Saves the server's send-path record after each test that ended (`host::sendmemory`), until
/// `stop`.
fn save_send_memory(served: &server::Served, stop: &std::sync::atomic::AtomicBool) {
    let mut saved = served.ended();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let ended = served.ended();
        if ended != saved {
            saved = ended;
            if let Err(e) = crate::host::sendmemory::save() {
                crate::errln!("netsweep: the send-path record was not saved: {e}");
            }
        }
    }
}

/// iperf3's listening line between its rules, with the number of the test it waits for
/// (3.12's words on; 3.11 wrote no number).
fn listening(port: u16, test: u64) -> String {
    let rule = "-".repeat(59);
    format!("{rule}\nServer listening on {port} (test #{test})\n{rule}")
}

/// With `-J`, each test's document on stdout as it ends (as iperf3's `-s -J`: one document a
/// test).
fn test_document(cfg: &ServerConfig) -> Option<server::DocumentSink> {
    cfg.json.then(|| {
        server::DocumentSink(Arc::new(|doc| {
            if let Ok(text) = serde_json::to_string_pretty(doc) {
                crate::outln!("{text}");
            }
        }))
    })
}

/// With iperf3's `-s`, each test's text on stdout as iperf3's server writes it: who
/// connected and the header when its streams start, each interval as it closes, the summary
/// and the listening line again when it ends (not after the one test of `-1`). `netsweep
/// server` writes none: its log line on stderr gives each test in one line.
fn test_text(cfg: &ServerConfig, banner_port: u16) -> Option<iperf3::server::LiveSink> {
    if !cfg.iperf3_banner {
        return None;
    }
    let (units, again) = (cfg.units, (!cfg.one_off).then_some(banner_port));
    // The number of the test the listening line says the server waits for.
    let tests = Arc::new(std::sync::atomic::AtomicU64::new(1));
    Some(iperf3::server::LiveSink(Arc::new(move |start| {
        let text = output::ServedText::open(start, units).map(|(text, opening)| {
            crate::out!("{opening}");
            text
        });
        let again = again.map(|port| (port, tests.clone()));
        Box::new(TextReport { text, again })
    })))
}

/// One test's text under way (`test_text`).
struct TextReport {
    text: Option<output::ServedText>,
    /// The port the listening line names, when it is said again after the test, and the
    /// count of tests it numbers.
    again: Option<(u16, Arc<std::sync::atomic::AtomicU64>)>,
}

impl iperf3::server::LiveReport for TextReport {
    fn interval(&mut self, interval: &serde_json::Value) {
        if let Some(t) = &self.text {
            crate::out!("{}", t.interval(interval));
        }
    }

    fn ended(&mut self, document: &serde_json::Value, shown: usize) {
        if let Some(rest) = self.text.and_then(|t| t.close(document, shown)) {
            crate::out!("{rest}");
        }
        // A server stopping (a signal) waits for no next test.
        let stopping = crate::platform::signals::flag().load(std::sync::atomic::Ordering::SeqCst);
        if let Some((port, tests)) = self.again.as_ref().filter(|_| !stopping) {
            let next = tests.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            crate::outln!("{}", listening(*port, next));
        }
    }
}
