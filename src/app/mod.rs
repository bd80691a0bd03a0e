//! What each subcommand does: wires the library together and prints. Called by `main`, which
//! maps the outcome to an exit code.

mod compare;
mod daemon;
mod db;
mod doctor;
mod explain;
mod export;
mod import;
pub(crate) mod lab;
mod plot;
mod pscheduler;
mod report;
mod rfc6349;
mod run;
mod serve;
mod stats;
mod tune;

use crate::cli::{Cli, ClientArgs, Command};
use crate::platform::signals;
use crate::traffic::client::{self, ClientConfig};
use crate::traffic::iperf3::json as iperf3_json;
use crate::traffic::output;
use crate::traffic::result::{StartInfo, TestResult};
use crate::traffic::spec::TestSpec;
use crate::units::RateFormat;
use anyhow::Context;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Server(a) => serve::serve(&a),
        Command::Client(a) => run_client(&a),
        Command::Lab(c) => lab::run(c),
        Command::Stats(a) => stats::run(&a),
        Command::Run(a) => run::run(&a),
        Command::Compare(a) => compare::compare(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Export(a) => export::export(&a),
        Command::Import(a) => import::import(&a),
        Command::Migrate(a) => db::migrate(&a),
        Command::Report(a) => report::report(&a),
        Command::Plot(a) => plot::plot(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Rfc6349(a) => rfc6349::run(&a),
        Command::Tune(c) => tune::run(c),
        Command::Pscheduler { method } => pscheduler::run(method),
    }
}

fn run_client(a: &ClientArgs) -> anyhow::Result<ExitCode> {
    // Held while the client runs; removed on every way out of this function.
    let _pidfile = a
        .pidfile
        .as_deref()
        .map(daemon::Pidfile::claim)
        .transpose()?;
    if a.test_kind.is_some() {
        let (cfg, spec): (ClientConfig, crate::traffic::rr::RrSpec) = a.try_into()?;
        let view = ClientView::try_from(a)?;
        return Ok(rr_and_print(&cfg, &spec, &view));
    }
    let view = ClientView::try_from(a)?;
    let (cfg, spec): (ClientConfig, TestSpec) = match a.try_into() {
        Ok(both) => both,
        Err(e) => return unusable_address(e, &view),
    };
    // A calibrating sender's choice also rests on this host's record of earlier tests.
    let remembers = spec.chooses_send_path();
    if remembers {
        crate::host::sendmemory::enable();
    }
    let code = client_and_print(&cfg, &spec, &view);
    if remembers && let Err(e) = crate::host::sendmemory::save() {
        crate::errln!("netsweep: the send-path record was not saved: {e}");
    }
    Ok(code)
}

/// How `netsweep client` shows its result: JSON or text, in which units, how much detail.
#[derive(Debug, Clone, Default)]
pub struct ClientView {
    /// `None`: text.
    pub json: Option<JsonSchema>,
    pub units: RateFormat,
    pub verbose: bool,
    /// Where the output goes instead of standard output (`--logfile`).
    pub logfile: Option<std::path::PathBuf>,
    /// `-T`: the text output's line prefix, iperf3's JSON's "title".
    pub title: Option<String>,
    /// `--timestamps`: the strftime(3) format of the time before each line of text output.
    pub timestamps: Option<String>,
    /// `--extra-data`: iperf3's JSON's "extra_data".
    pub extra_data: Option<String>,
    /// `--json-stream-full-output`: the whole iperf3 document after the events.
    pub stream_full: bool,
    /// iperf3's command line: a test that ended well ends its text with iperf3's
    /// `iperf Done.` (scripts wait for it).
    pub done_line: bool,
}

/// Which JSON a client prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonSchema {
    /// netsweep's own result document (`TestResult`).
    Netsweep,
    /// iperf3 3.21's `-J` document (`traffic::iperf3::json`).
    Iperf3,
    /// iperf3's `--json-stream`: one event per line, intervals as they end.
    Iperf3Stream,
}

impl TryFrom<&ClientArgs> for ClientView {
    type Error = anyhow::Error;

    fn try_from(a: &ClientArgs) -> anyhow::Result<ClientView> {
        let iperf3_mode = a.iperf3 || a.iperf3_cli;
        let json = match (a.json.as_deref(), a.json_stream) {
            (Some("netsweep"), true) => anyhow::bail!(
                "--json-stream writes iperf3's events; netsweep's own document is --json=netsweep"
            ),
            (_, true) => Some(JsonSchema::Iperf3Stream),
            (None, false) => None,
            (Some("auto"), false) if iperf3_mode => Some(JsonSchema::Iperf3),
            (Some("auto" | "netsweep"), false) => Some(JsonSchema::Netsweep),
            (Some("iperf3"), false) => Some(JsonSchema::Iperf3),
            (Some(other), false) => anyhow::bail!(
                "--json={other}: expected --json (iperf3's document in iperf3 mode, else \
                 netsweep's), --json=iperf3 or --json=netsweep"
            ),
        };
        Ok(ClientView {
            json,
            units: a
                .format
                .as_deref()
                .map(str::parse)
                .transpose()
                .context("-f/--format")?
                .unwrap_or_default(),
            verbose: a.verbose,
            logfile: a.logfile.clone(),
            title: a.ip.title.clone(),
            timestamps: a.ip.timestamps.format.clone(),
            extra_data: a.ip.extra_data.clone(),
            stream_full: a.json_stream_full_output,
            done_line: a.iperf3_cli,
        })
    }
}

/// A first Ctrl-C ends the test at the end of the interval running, which may be seconds away
/// with a long `-i`: said on standard error when it is heard, so no one presses again for want
/// of an answer.
fn interrupt_heard(ends_at: std::time::Duration) {
    crate::errln!(
        "netsweep: interrupt: the test ends at {:.2} s, the end of the interval running, with \
         both ends' counts; a second interrupt (Ctrl-C) stops it at once",
        ends_at.as_secs_f64()
    );
}

/// Sends standard output to `--logfile` when one is given; false, after saying why, when it
/// cannot be opened.
fn output_to_logfile(view: &ClientView) -> bool {
    if let Some(path) = &view.logfile
        && let Err(e) = crate::console::log_to(path)
    {
        crate::errln!("netsweep: --logfile {}: {e}", path.display());
        return false;
    }
    crate::console::errors_to_log(view.logfile.is_some() && view.json.is_none());
    true
}

/// Runs one test, printing intervals live (text, `--json-stream`) or one document at the end
/// (`--json`). Ctrl-C prints what was measured so far. The column header waits for the first
/// interval, so a test that never starts prints only why.
pub fn client_and_print(cfg: &ClientConfig, spec: &TestSpec, view: &ClientView) -> ExitCode {
    if !output_to_logfile(view) {
        return ExitCode::FAILURE;
    }
    let stop = signals::install();
    if view.json.is_none() {
        crate::console::set_title(view.title.clone());
        crate::console::set_timestamps(view.timestamps.clone());
    }
    for note in &cfg.notes {
        if view.json.is_some() {
            crate::errln!("netsweep: {note}");
        } else {
            crate::outln!("{note}");
        }
    }
    if view.json.is_none() {
        crate::outln!(
            "Connecting to host {}, port {}",
            cfg.server.ip(),
            cfg.server.port()
        );
        // iperf3's line, word for word.
        if spec.direction == crate::traffic::spec::Direction::Reverse {
            crate::outln!("Reverse mode, remote host {} is sending", cfg.server.ip());
        }
        if view.verbose {
            if view.done_line {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                crate::outln!("{}", crate::traffic::iperf3::verbose::time_line(now));
            }
            crate::outln!("{}", output::spec_line(spec));
        }
    }
    let mut started = false;
    // The data connections, told once they are up: iperf3's "connected to" lines and the
    // column header at once, as iperf3 prints them (not with the first interval, seconds
    // later with a long -i), and the `--json-stream` start event's `connected`.
    let header_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (told, connected) = std::sync::mpsc::channel();
    let on_connected = {
        let (header_out, spec, text) = (header_out.clone(), spec.clone(), view.json.is_none());
        move |sockets: &[crate::traffic::measure::SocketInfo], far_intervals: bool| {
            if !text {
                let _ = told.send(sockets.to_vec());
            } else if !header_out.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::out!("{}", output::connected_lines(sockets));
                crate::outln!("{}", output::client_header(&spec, far_intervals));
            }
        }
    };
    let cfg = &ClientConfig {
        connected: Some(client::OnConnected(Arc::new(on_connected))),
        interrupt: Some(client::OnInterrupt(Arc::new(interrupt_heard))),
        ..cfg.clone()
    };
    // Where the test runs: the server's port, or the fallback's once it moved there.
    let running_on = std::cell::Cell::new(cfg.server);
    // Where the measured intervals start (the end of the warm-up): their labels count from it.
    let mut origin: Option<f64> = None;
    let mut print_interval = |iv: &crate::traffic::result::Interval| match view.json {
        None => {
            if !header_out.swap(true, std::sync::atomic::Ordering::Relaxed) {
                crate::outln!("{}", output::header(spec));
            }
            if !iv.omitted && origin.is_none() {
                origin = Some(iv.start_s);
            }
            // iperf3's command line without -O: the send path's calibration is no iperf3
            // interval, in text as in its -J document (a trial counted one row too many).
            if view.done_line && iv.omitted && spec.omit.is_zero() {
                return;
            }
            let from = origin.unwrap_or(0.0);
            crate::out!("{}", output::interval_lines(spec, iv, view.units, from));
        }
        Some(JsonSchema::Iperf3Stream) => {
            if !started {
                let info = StartInfo {
                    client_sockets: connected.try_iter().last().unwrap_or_default(),
                    ..now_only()
                };
                stream_start(running_on.get(), spec, &info);
                started = true;
            }
            if let Some(data) = iperf3_json::interval(spec, iv) {
                crate::outln!("{}", iperf3_json::stream_event("interval", &data));
            }
        }
        Some(_) => {}
    };
    let mut moved = None;
    let outcome = match client::run_test(cfg, spec, stop, &mut print_interval) {
        // Nothing on netsweep's port, and no -p: iperf3's port, where `iperf3 -s` listens.
        Err(e) if e.refused && e.partial.is_none() && cfg.port_fallback.is_some() => {
            let moved = moved.insert(cfg.on_port(cfg.port_fallback.unwrap_or_default()));
            running_on.set(moved.server);
            if view.json.is_none() {
                crate::outln!(
                    "Nothing listens on port {} (netsweep's); connecting to host {}, port {} \
                     (iperf3's)",
                    cfg.server.port(),
                    moved.server.ip(),
                    moved.server.port()
                );
            }
            client::run_test(moved, spec, stop, &mut print_interval).map_err(|mut e| {
                if e.refused {
                    e.message = format!(
                        "unable to connect to server {}: Connection refused on port {} \
                         (netsweep's) and {} (iperf3's): is `netsweep server` or `iperf3 -s` \
                         running there?",
                        cfg.server.ip(),
                        cfg.server.port(),
                        moved.server.port()
                    );
                }
                e
            })
        }
        outcome => outcome,
    };
    // The results name the server and port the test ran against.
    let cfg = moved.as_ref().unwrap_or(cfg);
    let stream_started = started && view.json == Some(JsonSchema::Iperf3Stream);
    match outcome {
        Ok(result) => {
            print_result(cfg, &result, view, stream_started);
            if view.json.is_none() && view.done_line {
                crate::outln!("\niperf Done.");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            // iperf3's client gives no summary of a test that failed (its server gone, an
            // error of either end): no rows, and `"end": {}` beside `error` in its document
            // (a trial's script read a dead server's "receiver" row as the test's rate). A
            // test the user stopped keeps its summary, as iperf3's does. netsweep's own
            // document keeps what was measured.
            let iperf3_document = matches!(
                view.json,
                Some(JsonSchema::Iperf3 | JsonSchema::Iperf3Stream)
            );
            let failed_iperf3_way = view.done_line
                && (iperf3_document || view.json.is_none())
                && !stop.load(std::sync::atomic::Ordering::SeqCst);
            match &e.partial {
                Some(partial) if failed_iperf3_way => {
                    print_failed_iperf3_test(cfg, partial, view, &e.message, stream_started)
                }
                // A JSON document of a failed test says why in `error` (perfSONAR reads a
                // document without one as a success), also when the failure is the check of
                // the two ends' reports rather than an error of either.
                Some(partial) if view.json.is_some() && partial.error.is_none() => {
                    let mut failed = (**partial).clone();
                    failed.error = Some(e.message.clone());
                    print_result(cfg, &failed, view, stream_started)
                }
                Some(partial) => print_result(cfg, partial, view, stream_started),
                None => print_failure(cfg, spec, view, &e.message, stream_started),
            }
            // iperf3's -J says it in the document alone: `iperf3 -J ... 2>&1 | jq` reads one.
            if !(view.done_line && iperf3_document) {
                crate::errln!("{}{}", crate::console::failure_prefix(), e.message);
            }
            ExitCode::FAILURE
        }
    }
}

/// Runs one request/response test and prints its result: text, or `{"rr": ...}` with
/// `--json`. Ctrl-C ends it early with what was measured.
pub fn rr_and_print(
    cfg: &ClientConfig,
    spec: &crate::traffic::rr::RrSpec,
    view: &ClientView,
) -> ExitCode {
    if !output_to_logfile(view) {
        return ExitCode::FAILURE;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(warning) = spec.polling_oversubscribed(cfg.server.ip().is_loopback(), cpus) {
        crate::errln!("netsweep: warning: {warning}");
    }
    let stop = signals::install();
    if view.json.is_none() {
        crate::outln!(
            "Connecting to host {}, port {}: {}",
            cfg.server.ip(),
            cfg.server.port(),
            spec.words()
        );
    }
    match crate::traffic::rr::client::run(cfg, spec, stop) {
        Ok(result) => {
            match view.json {
                Some(_) => match serde_json::to_string_pretty(&serde_json::json!({ "rr": result }))
                {
                    Ok(doc) => crate::outln!("{doc}"),
                    Err(e) => crate::errln!("netsweep: cannot write the JSON: {e}"),
                },
                None => crate::out!(
                    "{}",
                    crate::traffic::rr::output::render(&result, &cfg.server.to_string())
                ),
            }
            if result.errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            if view.json.is_some() {
                crate::outln!("{}", serde_json::json!({ "error": e.message }));
            }
            crate::errln!("{}{}", crate::console::failure_prefix(), e.message);
            ExitCode::FAILURE
        }
    }
}

/// A start time and nothing else: what is known before the first interval.
fn now_only() -> StartInfo {
    StartInfo {
        timestamp_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        ..StartInfo::default()
    }
}

fn stream_start(server: std::net::SocketAddr, spec: &TestSpec, info: &StartInfo) {
    let data = iperf3_json::start(spec, info, server);
    crate::outln!("{}", iperf3_json::stream_event("start", &data));
}

fn print_json(doc: &serde_json::Value) {
    match serde_json::to_string_pretty(doc) {
        Ok(text) => crate::outln!("{text}"),
        Err(e) => crate::errln!("netsweep: cannot encode the result: {e}"),
    }
}

/// iperf3's `-J` document of a result, with `-T`'s "title" and `--extra-data`'s "extra_data" at
/// its top, where iperf3 puts them.
fn iperf3_document(
    cfg: &ClientConfig,
    result: &TestResult,
    view: &ClientView,
) -> serde_json::Value {
    labelled(iperf3_json::document(result, cfg.server), view)
}

/// A JSON document with `-T`'s "title" and `--extra-data`'s "extra_data" at its top (iperf3's
/// place for them; netsweep's own document carries them in the same place).
fn labelled(mut doc: serde_json::Value, view: &ClientView) -> serde_json::Value {
    if let Some(m) = doc.as_object_mut() {
        for (key, value) in [("title", &view.title), ("extra_data", &view.extra_data)] {
            if let Some(v) = value {
                m.insert(key.into(), serde_json::json!(v));
            }
        }
    }
    doc
}

fn print_result(cfg: &ClientConfig, result: &TestResult, view: &ClientView, stream_started: bool) {
    match view.json {
        Some(JsonSchema::Netsweep) => match serde_json::to_value(result) {
            Ok(doc) => print_json(&labelled(doc, view)),
            Err(e) => crate::errln!("netsweep: cannot encode the result: {e}"),
        },
        Some(JsonSchema::Iperf3) => print_json(&iperf3_document(cfg, result, view)),
        Some(JsonSchema::Iperf3Stream) => {
            if !stream_started {
                stream_start(cfg.server, &result.spec, &result.start);
            }
            if let Some(e) = &result.error {
                let event = iperf3_json::stream_event("error", &serde_json::json!(e));
                crate::outln!("{event}");
            }
            if let Some((name, output)) = iperf3_json::server_output(result) {
                crate::outln!("{}", iperf3_json::stream_event(name, &output));
            }
            let end = iperf3_json::end(result);
            crate::outln!("{}", iperf3_json::stream_event("end", &end));
            if view.stream_full {
                print_json(&iperf3_document(cfg, result, view));
            }
        }
        // iperf3's command line prints iperf3's rows on standard output and netsweep's own lines
        // on standard error (the terminal shows both), unless -V asks for them there too or a
        // --logfile takes everything: `grep receiver | tail -1` read "1.00" from a line of
        // netsweep's ("... low-water mark up to 1.00 MBytes") in a trial's script.
        None if view.done_line && !view.verbose && view.logfile.is_none() => {
            crate::out!("{}", output::summary_rows(result, view.units));
            let notes = output::summary_notes(result);
            if !notes.trim().is_empty() {
                crate::errln!("{}", notes.trim_end());
            }
            if let Some(text) = output::server_output(result) {
                crate::out!("{text}");
            }
        }
        None => {
            // iperf3's -V words around its summary, which scripts read (CPU Utilization).
            let iperf3_verbose = view.done_line && view.verbose;
            if iperf3_verbose {
                crate::outln!("Test Complete. Summary Results:");
            }
            crate::out!("{}", output::summary(result, view.units));
            if iperf3_verbose {
                crate::out!("{}", crate::traffic::iperf3::verbose::end_lines(result));
            }
            if view.verbose {
                crate::out!("{}", output::sockets(result));
            }
            if let Some(text) = output::server_output(result) {
                crate::out!("{text}");
            }
        }
    }
}

/// A server address that cannot be used (`address::AddressError`): in iperf3's JSON, a
/// document (or event) with its `error`, as iperf3 writes one (a trial's finding: `-c ::1 -4
/// -J` printed nothing on standard output for pScheduler to read); any other error as is.
fn unusable_address(e: anyhow::Error, view: &ClientView) -> anyhow::Result<ExitCode> {
    if e.downcast_ref::<crate::traffic::address::AddressError>()
        .is_none()
    {
        return Err(e);
    }
    let message = format!("{e:#}");
    match view.json {
        Some(JsonSchema::Iperf3) => print_json(&serde_json::json!({
            "start": {},
            "intervals": [],
            "end": {},
            "error": message,
        })),
        Some(JsonSchema::Iperf3Stream) => {
            let event = iperf3_json::stream_event("error", &serde_json::json!(message));
            crate::outln!("{event}");
        }
        Some(JsonSchema::Netsweep) | None => return Err(e),
    }
    crate::errln!("{}{message}", crate::console::failure_prefix());
    Ok(ExitCode::FAILURE)
}

/// A test that failed before measuring anything: iperf3's JSON readers still get a document
/// (or an event) with the `error` they look for.
/// A test that failed mid-way under iperf3's command line, as iperf3 tells one: its document
/// with the intervals measured, `"end": {}` and the error; in text, nothing more (the intervals
/// were printed as they closed). netsweep's own document is not iperf3's (the caller's).
fn print_failed_iperf3_test(
    cfg: &ClientConfig,
    partial: &TestResult,
    view: &ClientView,
    message: &str,
    stream_started: bool,
) {
    match view.json {
        Some(JsonSchema::Iperf3) => {
            let mut doc = iperf3_document(cfg, partial, view);
            doc["end"] = serde_json::json!({});
            doc["error"] = serde_json::json!(message);
            print_json(&doc);
        }
        Some(JsonSchema::Iperf3Stream) => {
            if !stream_started {
                stream_start(cfg.server, &partial.spec, &partial.start);
            }
            let event = iperf3_json::stream_event("error", &serde_json::json!(message));
            crate::outln!("{event}");
        }
        Some(JsonSchema::Netsweep) | None => {}
    }
}

fn print_failure(
    cfg: &ClientConfig,
    spec: &TestSpec,
    view: &ClientView,
    message: &str,
    stream_started: bool,
) {
    match view.json {
        Some(JsonSchema::Iperf3) => print_json(&serde_json::json!({
            "start": iperf3_json::start(spec, &now_only(), cfg.server),
            "intervals": [],
            "end": {},
            "error": message,
        })),
        Some(JsonSchema::Iperf3Stream) => {
            if !stream_started {
                stream_start(cfg.server, spec, &now_only());
            }
            let event = iperf3_json::stream_event("error", &serde_json::json!(message));
            crate::outln!("{event}");
        }
        Some(JsonSchema::Netsweep) | None => {}
    }
}
