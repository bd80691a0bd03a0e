//! netsweep as a perfSONAR pScheduler tool for the `throughput` test: the methods pScheduler
//! calls on a tool plugin (`enumerate`, `can-run`, `duration`, `participant-data`, `run`,
//! `merged-results`), each taking pScheduler's JSON and returning the JSON its contract asks
//! for. The plugin's executables (`contrib/pscheduler/netsweep/`) only `exec netsweep
//! pscheduler METHOD`; `app::pscheduler` reads standard input and writes standard output.
//!
//! - `spec`: the throughput spec, what is supported, the duration, the netsweep `TestSpec`.
//! - `result`: a `TestResult` in the throughput result format; `merged-results`.
//! - `schema`: the throughput result schema as checks.
//! - `run`: `participant-data` and `run` (the client and server participants).
//! - `config`: the tool's configuration file on a pScheduler host.
//! - `iso8601`: pScheduler's durations and timestamps.

pub mod config;
pub mod iso8601;
pub mod result;
pub mod run;
pub mod schema;
pub mod spec;

use serde_json::{Value, json};

/// The tool's name in pScheduler.
pub const TOOL_NAME: &str = "netsweep";

/// Preference among the throughput tools (iperf3 10, nuttcp 5, iperf2 0, ethr -10): below
/// iperf3 and nuttcp, so installing the plugin changes no existing mesh; tasks ask for it by
/// name (`--tool netsweep`), or get it where the others cannot run a test.
pub const PREFERENCE: i64 = 1;

/// `enumerate`: what pScheduler stores about the tool (`#/pScheduler/PluginEnumeration/Tool`).
pub fn enumerate() -> Value {
    json!({
        "schema": 1,
        "name": TOOL_NAME,
        "description": "Measure network throughput with netsweep (both ends' figures, checked against each other)",
        "version": env!("CARGO_PKG_VERSION"),
        "tests": ["throughput"],
        "preference": PREFERENCE,
        "maintainer": {
            "name": "netsweep developers",
        },
    })
}
