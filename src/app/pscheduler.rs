//! `netsweep pscheduler METHOD`: one method of the pScheduler tool plugin. Reads pScheduler's
//! JSON on standard input, writes the method's JSON on standard output (one line, as
//! pScheduler's own plugins do), and says on standard error and in the exit code when the
//! input was not understood.

use crate::cli::PschedulerMethod;
use crate::pscheduler::{self, config::ToolConfig};
use serde_json::Value;
use std::process::ExitCode;

/// Largest input read: a spec and both participants' data are a few kilobytes, a
/// merged-results input with two long tests' intervals a few megabytes.
const MAX_INPUT: u64 = 64 << 20;

pub fn run(method: PschedulerMethod) -> anyhow::Result<ExitCode> {
    if method == PschedulerMethod::Enumerate {
        return Ok(emit(&pscheduler::enumerate()));
    }
    let text = crate::inputs::read_stdin(MAX_INPUT)?;
    let input: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return Ok(fail(&format!("the input is not JSON: {e}"))),
    };
    let config = match ToolConfig::load() {
        Ok(c) => c,
        Err(e) => {
            let message = format!("the netsweep tool's configuration: {e:#}");
            if method == PschedulerMethod::Run {
                emit(&pscheduler::result::failure(&message, "", None));
            }
            return Ok(fail(&message));
        }
    };
    Ok(match method {
        PschedulerMethod::Enumerate => emit(&pscheduler::enumerate()),
        PschedulerMethod::CanRun => emit(&pscheduler::spec::can_run(&input, &config)),
        PschedulerMethod::Duration => match pscheduler::spec::duration(&input) {
            Ok(v) => emit(&v),
            Err(e) => fail(&e),
        },
        PschedulerMethod::ParticipantData => {
            match pscheduler::run::participant_data(&input, &config) {
                Ok(v) => emit(&v),
                Err(e) => fail(&e),
            }
        }
        PschedulerMethod::Run => {
            let stop = crate::platform::signals::install();
            match pscheduler::run::run(&input, &config, stop) {
                Ok(v) => emit(&checked(v)),
                Err(e) => {
                    // The JSON too, so the run's record says why.
                    emit(&pscheduler::result::failure(&e.0, "", None));
                    fail(&e.0)
                }
            }
        }
        PschedulerMethod::MergedResults => emit(&pscheduler::result::merge(&input)),
    })
}

/// A run's result as pScheduler will validate it; one that would not validate (a defect)
/// becomes a failure that says why, keeping the diagnostics.
fn checked(v: Value) -> Value {
    let problems = pscheduler::schema::problems(&v);
    if problems.is_empty() {
        return v;
    }
    let diags = v.get("diags").and_then(Value::as_str).unwrap_or("");
    pscheduler::result::failure(
        &format!(
            "netsweep made a result outside the throughput schema: {}",
            problems.join("; ")
        ),
        diags,
        None,
    )
}

fn emit(v: &Value) -> ExitCode {
    crate::outln!("{v}");
    ExitCode::SUCCESS
}

/// pScheduler's `fail`: the message on standard error, exit status 1.
fn fail(message: &str) -> ExitCode {
    crate::errln!("netsweep pscheduler: {message}");
    ExitCode::FAILURE
}
