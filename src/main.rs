use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv = netsweep::cli::iperf3_argv(std::env::args_os().collect());
    let cli = netsweep::cli::Cli::parse_from(argv);
    match netsweep::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            netsweep::errln!("netsweep: {e:#}");
            ExitCode::FAILURE
        }
    }
}
