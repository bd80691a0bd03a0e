//! netsweep: measure, tune and explain network throughput.
//!
//! # Layout (layers from the ground up: each imports only the layers listed before it)
//! - Ground floor, importing no other layer: `units`, `inputs`, `console`, `paste`
//!   (quantities and their parsers, bounded reading and escaping of outside text, printing that
//!   survives a closed pipe, suggested commands that run as printed), and `analysis`: pure
//!   statistics over slices (`stats`), the decision engine every verdict comes from (`decide`:
//!   paired or Welch t, equivalence within a practical change, Holm, robust outliers), named
//!   sets compared ministat-style (`sets`), a campaign's dimensions' effects (`effects`) and
//!   ministat's rendering and input (`ministat`).
//! - `platform`: Linux and FreeBSD leaves (socket options and TCP_INFO, namespaces, signals,
//!   host and thread CPU time, the clock, the congestion control check, the open-file limit,
//!   output files that never follow a symlink).
//! - `traffic`: the test (`spec`, `timeline`), the engine's stream loops, what each end
//!   measures and the merged, checked result; request/response tests (`rr`: netperf's RR and
//!   CRR, beside the engine); netsweep's control protocol, its server and
//!   client and their shared admission (slots, deadlines, descriptor budget); iperf3's
//!   protocol in both roles, its JSON document and import; iperf3-style text output; a result
//!   file (netsweep's, iperf3's `-J` or `--json-stream`) read back as one test over time
//!   (`over_time`).
//! - `host`: `doctor` diagnostics, sysctl `tuning` with its journal (a kernel only a higher
//!   layer reaches is a `tuning::SysctlPlace` handed down), kernel counters and facts, and a
//!   user's libvirt domain through `virsh` (`libvirt`: its NIC model changed for a campaign,
//!   journaled and put back).
//!   `pscheduler`: netsweep as a perfSONAR pScheduler tool (methods, spec and result formats).
//! - `lab`: two-host networks in namespaces with rate, delay and loss, and QEMU guests, whose
//!   agent (`lab::vm::agent`) is the `SysctlPlace` of a guest's kernel.
//! - `campaigns`: plans, the runner and its executors, the SQLite store, campaign statistics.
//!   `cli`: command-line syntax, converted once into validated configurations.
//! - `report`: HTML and Markdown reports of a stored campaign, and one test over time (`plot`).
//! - `app`: what each subcommand does, called by `main`.
//!
//! Calculation (`analysis`, `traffic::result`, `traffic::timeline`, `traffic::engine`'s pacer,
//! sequence and send path choice, `campaigns::campaign`, `campaigns::plan`,
//! `traffic::iperf3::wire`) is apart from I/O and rendering.

pub mod analysis;
pub mod app;
pub mod campaigns;
pub mod cli;
pub mod console;
pub mod host;
pub mod inputs;
pub mod lab;
pub mod paste;
pub mod platform;
pub mod pscheduler;
pub mod report;
pub mod traffic;
pub mod units;
