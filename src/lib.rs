//! netsweep: measure, tune and explain network throughput.
//!
//! # Layout
//! - `units`: byte counts, bit rates and durations as types, with their parsers.
//! - `spec`: `TestSpec`, the typed description of one test, and the server's caps.
//! - `timeline`: the interval grid both ends share.
//! - `protocol`: control messages, framing with a size cap, preambles, tokens.
//! - `engine`: per-stream TCP and UDP send/receive loops, pacing, loss and jitter, and the TCP
//!   send path calibration (`engine::sendpath`).
//! - `measure`: what one end measures (interval and stream reports, CPU).
//! - `result`: merging both ends into a `TestResult` (also the JSON output); `result::checks`
//!   holds the reports against each other and against physics.
//! - `stats`: ministat-compatible statistics, Welch, Mann-Whitney, verdicts (pure).
//! - `ministat`: ministat-compatible rendering of an analysis, and its input format.
//! - `plan`, `runner`, `executor`, `store`, `campaign`: campaigns, their runs and their statistics.
//! - `report`: HTML and Markdown reports with SVG charts.
//! - `doctor`: host, path and libvirt diagnostics with fixes.
//! - `tuning`: sysctl profiles applied with a journal and always restored.
//! - `counters`, `hostfacts`: kernel counters and host facts (procfs/sysfs readers).
//! - `inputs`: bounded reading of files and pseudo-files, and escaping of peer text.
//! - `iperf3`: iperf3's JSON result documents (import).
//! - `session`: socket setup and stream threads shared by both ends.
//! - `server` / `client`: the two ends of a test.
//! - `lab`: two-host networks in namespaces with rate, delay and loss (`netns`: its platform leaf).
//! - `output`: iperf3-style text rendering.
//! - `sockopt`, `signals`: platform leaves (socket options, TCP_INFO, signals).
//! - `console`: printing that survives a closed pipe (`out!`, `outln!`, `errln!`).
//! - `cli`: command-line syntax, converted once into validated configurations.
//! - `app`: what each subcommand does, called by `main`.

pub mod app;
pub mod campaign;
pub mod cli;
pub mod client;
pub mod console;
pub mod counters;
pub mod doctor;
pub mod engine;
pub mod executor;
pub mod hostfacts;
pub mod inputs;
pub mod iperf3;
pub mod lab;
pub mod measure;
pub mod ministat;
pub mod netns;
pub mod output;
pub mod plan;
pub mod protocol;
pub mod report;
pub mod result;
pub mod runner;
pub mod server;
pub mod session;
pub mod signals;
pub mod sockopt;
pub mod spec;
pub mod stats;
pub mod store;
pub mod timeline;
pub mod tuning;
pub mod units;
