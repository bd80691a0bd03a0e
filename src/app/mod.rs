//! What each subcommand does: wires the library together and prints. Called by `main`, which
//! maps the outcome to an exit code.

mod campaign;
mod doctor;
pub(crate) mod lab;
mod stats;
mod tune;

use crate::cli::{Cli, ClientArgs, Command, ServerArgs, ServerConfig};
use crate::client::{self, ClientConfig};
use crate::output;
use crate::result::TestResult;
use crate::spec::TestSpec;
use crate::{server, signals};
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
        Command::Export(a) => campaign::export(&a),
        Command::Import(a) => campaign::import(&a),
        Command::Report(a) => campaign::report(&a),
        Command::Doctor(a) => doctor::run(&a),
        Command::Tune(c) => tune::run(c),
    }
}

/// Binds the server's listener; on `::` it accepts IPv4 too.
pub fn bind_listener(cfg: &ServerConfig) -> anyhow::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(cfg.listen), Type::STREAM, None)?;
    sock.set_reuse_address(true)?;
    if cfg.listen.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    sock.bind(&cfg.listen.into())
        .with_context(|| format!("cannot listen on {}", cfg.listen))?;
    sock.listen(128)?;
    Ok(sock.into())
}

fn serve(a: &ServerArgs) -> anyhow::Result<ExitCode> {
    let cfg = ServerConfig::try_from(a)?;
    let listener = bind_listener(&cfg)?;
    let stop = signals::install();
    crate::errln!(
        "netsweep server listening on {} (max {} tests at once)",
        listener.local_addr()?,
        cfg.limits.max_tests
    );
    let log: server::Log = Arc::new(|line: &str| crate::errln!("{line}"));
    server::run(listener, cfg.limits, stop, log)?;
    Ok(ExitCode::SUCCESS)
}

fn run_client(a: &ClientArgs) -> anyhow::Result<ExitCode> {
    let (cfg, spec): (ClientConfig, TestSpec) = a.try_into()?;
    Ok(client_and_print(&cfg, &spec, a.json))
}

/// Runs one test, printing intervals live (text) or one document at the end (`--json`).
/// Ctrl-C prints what was measured so far.
pub fn client_and_print(cfg: &ClientConfig, spec: &TestSpec, json: bool) -> ExitCode {
    let stop = signals::install();
    if !json {
        crate::outln!(
            "Connecting to host {}, port {}",
            cfg.server.ip(),
            cfg.server.port()
        );
        crate::outln!("{}", output::header(spec));
    }
    let mut print_interval = |iv: &crate::result::Interval| {
        if !json {
            crate::out!("{}", output::interval_lines(spec, iv));
        }
    };
    match client::run_test(cfg, spec, stop, &mut print_interval) {
        Ok(result) => {
            print_result(&result, json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            if let Some(partial) = &e.partial {
                print_result(partial, json);
            }
            crate::errln!("netsweep: {}", e.message);
            ExitCode::FAILURE
        }
    }
}

fn print_result(result: &TestResult, json: bool) {
    if json {
        match serde_json::to_string_pretty(result) {
            Ok(text) => crate::outln!("{text}"),
            Err(e) => crate::errln!("netsweep: cannot encode the result: {e}"),
        }
    } else {
        crate::out!("{}", output::summary(result));
    }
}
