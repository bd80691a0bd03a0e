//! iperf3: its JSON result documents (`import`; `over_time`: a `-J` or `--json-stream` file as
//! one test over time, for `plot`), its wire protocol (`wire`, `control`), its
//! authentication (`auth`: tokens and checks; `login`: keys, users file, password), and
//! netsweep's client for iperf3 servers (`client`), the padding of the iperf3 on the PATH
//! (`installed`).

pub mod auth;
pub mod client;
pub mod control;
pub mod import;
pub mod installed;
pub mod json;
pub mod login;
pub mod over_time;
pub mod peer_checks;
pub mod peer_result;
pub mod report;
pub mod server;
pub mod verbose;
pub mod wire;

/// iperf3's port: a client aimed at it detects an iperf3 server (`PeerProtocol::Detect`).
pub const IPERF3_PORT: u16 = 5201;

pub use import::{MAX_JSON_BYTES, parse_json_result};
