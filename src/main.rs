use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let argv = netsweep::cli::iperf3_argv(std::env::args_os().collect());
    let cli = match netsweep::cli::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => match netsweep::cli::iperf3_role_error(&argv, &e) {
            // As iperf3, which exits 1 on a parameter error.
            Some(why) => {
                netsweep::errln!("netsweep: {why}");
                return ExitCode::FAILURE;
            }
            // iperf3's command line exits 1 on a parameter error, as iperf3 (clap: 2).
            None if argv.iter().any(|a| a == "--iperf3-cli") && e.use_stderr() => {
                let _ = e.print();
                return ExitCode::FAILURE;
            }
            None => e.exit(),
        },
    };
    match netsweep::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            netsweep::errln!("netsweep: {e:#}");
            ExitCode::FAILURE
        }
    }
}
