//! What each subcommand does: wires the library together and prints. Called by `main`, which
//! maps the outcome to an exit code.

mod campaign;
mod doctor;
mod explain;
pub(crate) mod lab;
mod pscheduler;
mod stats;
mod tune;

use crate::cli::{Cli, ClientArgs, Command, ServerArgs, ServerConfig};
use crate::traffic::client::{self, ClientConfig};
use crate::traffic::output;
use crate::traffic::result::TestResult;
use crate::traffic::spec::TestSpec;
use crate::units::RateFormat;
use crate::{platform::signals, traffic::server};
use anyhow::Context;
use socket2::{Domain, Socket, Type};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Server(a) => serve(&a),
        Command::Client(a) => run_client(&a),
        Command::Lab(c) => lab::run(c),
        Command::Stats(a) => stats::run(&a),
        Command::Run(a) => campaign::run(&a),
        Command::Compare(a) => campaign::compare(&a),
        Command::Explain(a) => explain::run(&a),
        Command::Export(a) => campaign::export(&a),
        Command::Import(a) => campaign::import(&a),
        Command::Migrate(a) => campaign::migrate(&a),
        Command::Report(a) => campaign::report(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Tune(c) => tune::run(c),
        Command::Pscheduler { method } => pscheduler::run(method),
    }
}

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

fn serve(a: &ServerArgs) -> anyhow::Result<ExitCode> {
    let cfg = ServerConfig::try_from(a)?;
    // Tests' sockets are budgeted under the open-file limit: take all the system allows.
    crate::platform::fdlimit::raise_to_hard();
    let mut listeners = vec![bind_listener(&cfg)?];
    for port in &cfg.extra_ports {
        listeners.push(
            listen_on(std::net::SocketAddr::new(cfg.listen.ip(), *port))
                .context("the iperf3 port (is an iperf3 server running here?)")?,
        );
    }
    let stop = signals::install();
    let addrs: Vec<String> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .map(|a| a.to_string())
        .collect();
    crate::errln!(
        "netsweep server listening on {} (max {} tests at once; netsweep and iperf3 clients)",
        addrs.join(" and "),
        cfg.limits.max_tests
    );
    let log: server::Log = Arc::new(|line: &str| crate::errln!("{line}"));
    server::run_all(listeners, cfg.limits, stop, log)?;
    Ok(ExitCode::SUCCESS)
}

fn run_client(a: &ClientArgs) -> anyhow::Result<ExitCode> {
    let (cfg, spec): (ClientConfig, TestSpec) = a.try_into()?;
    let view = ClientView::try_from(a)?;
    Ok(client_and_print(&cfg, &spec, &view))
}

/// How `netsweep client` shows its result: JSON or text, in which units, how much detail.
#[derive(Debug, Clone, Default)]
pub struct ClientView {
    pub json: bool,
    pub units: RateFormat,
    pub verbose: bool,
    /// Where the output goes instead of standard output (`--logfile`).
    pub logfile: Option<std::path::PathBuf>,
}

impl TryFrom<&ClientArgs> for ClientView {
    type Error = anyhow::Error;

    fn try_from(a: &ClientArgs) -> anyhow::Result<ClientView> {
        Ok(ClientView {
            json: a.json,
            units: a
                .format
                .as_deref()
                .map(str::parse)
                .transpose()
                .context("-f/--format")?
                .unwrap_or_default(),
            verbose: a.verbose,
            logfile: a.logfile.clone(),
        })
    }
}

/// Runs one test, printing intervals live (text) or one document at the end (`--json`).
/// Ctrl-C prints what was measured so far. The column header waits for the first interval,
/// so a test that never starts prints only why.
pub fn client_and_print(cfg: &ClientConfig, spec: &TestSpec, view: &ClientView) -> ExitCode {
    if let Some(path) = &view.logfile
        && let Err(e) = crate::console::log_to(path)
    {
        crate::errln!("netsweep: --logfile {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    let stop = signals::install();
    for note in &cfg.notes {
        if view.json {
            crate::errln!("netsweep: {note}");
        } else {
            crate::outln!("{note}");
        }
    }
    if !view.json {
        crate::outln!(
            "Connecting to host {}, port {}",
            cfg.server.ip(),
            cfg.server.port()
        );
        if view.verbose {
            crate::outln!("{}", output::spec_line(spec));
        }
    }
    let mut header_shown = false;
    let mut print_interval = |iv: &crate::traffic::result::Interval| {
        if !view.json {
            if !header_shown {
                crate::outln!("{}", output::header(spec));
                header_shown = true;
            }
            crate::out!("{}", output::interval_lines(spec, iv, view.units));
        }
    };
    match client::run_test(cfg, spec, stop, &mut print_interval) {
        Ok(result) => {
            print_result(&result, view);
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let Some(partial) = &e.partial {
                print_result(partial, view);
            }
            crate::errln!("netsweep: {}", e.message);
            ExitCode::FAILURE
        }
    }
}

fn print_result(result: &TestResult, view: &ClientView) {
    if view.json {
        match serde_json::to_string_pretty(result) {
            Ok(text) => crate::outln!("{text}"),
            Err(e) => crate::errln!("netsweep: cannot encode the result: {e}"),
        }
    } else {
        crate::out!("{}", output::summary(result, view.units));
        if view.verbose {
            crate::out!("{}", output::sockets(result));
        }
    }
}
