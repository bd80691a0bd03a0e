use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = netsweep::cli::Cli::parse();
    match netsweep::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            netsweep::errln!("netsweep: {e:#}");
            ExitCode::FAILURE
        }
    }
}
