use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(version) = netsweep::cli::iperf3_version(&args) {
        netsweep::outln!("{version}");
        return ExitCode::SUCCESS;
    }
    // iperf3's messages under its command line: "iperf3: error - ..." under iperf3's name, as
    // wrappers match them ("iperf3: error - the server is busy ...").
    if let Some((usage, no_role)) = netsweep::cli::iperf3_help(&args) {
        netsweep::outln!("{usage}");
        if no_role {
            netsweep::errln!(
                "iperf3: parameter error - must either be a client (-c) or server (-s)"
            );
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let program = netsweep::cli::program_name(&args);
    let argv = netsweep::cli::iperf3_argv(args);
    let iperf3_cli = argv.iter().any(|a| a == "--iperf3-cli");
    if iperf3_cli {
        netsweep::console::set_failure_prefix(program);
    }
    let cli = match netsweep::cli::Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        // iperf3's command line exits 1 on a parameter error, as iperf3 (clap: 2), and names
        // an option of the other role in iperf3's words.
        Err(e) if iperf3_cli && e.use_stderr() => {
            match netsweep::cli::iperf3_role_error(&argv, &e) {
                Some(why) => netsweep::errln!("{program}: {why}"),
                None => {
                    let _ = e.print();
                }
            }
            return ExitCode::FAILURE;
        }
        Err(e) => match netsweep::cli::rr_count_conflict(&argv, &e) {
            Some(why) => {
                netsweep::errln!("netsweep: {why}");
                return ExitCode::FAILURE;
            }
            None => e.exit(),
        },
    };
    match netsweep::app::run(cli) {
        Ok(code) => code,
        Err(e) => {
            netsweep::errln!("{}{e:#}", netsweep::console::failure_prefix());
            ExitCode::FAILURE
        }
    }
}
