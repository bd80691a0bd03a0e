use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(version) = netsweep::cli::iperf3_version(&args) {
        netsweep::outln!("{version}");
        return ExitCode::SUCCESS;
    }
    let argv = netsweep::cli::iperf3_argv(args);
    let cli = match netsweep::cli::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        // iperf3's command line exits 1 on a parameter error, as iperf3 (clap: 2), and names
        // an option of the other role in iperf3's words.
        Err(e) if argv.iter().any(|a| a == "--iperf3-cli") && e.use_stderr() => {
            match netsweep::cli::iperf3_role_error(&argv, &e) {
                Some(why) => netsweep::errln!("netsweep: {why}"),
                None => {
                    let _ = e.print();
                }
            }
            return ExitCode::FAILURE;
        }
        Err(e) => e.exit(),
    };
    match netsweep::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            netsweep::errln!("netsweep: {e:#}");
            ExitCode::FAILURE
        }
    }
}
