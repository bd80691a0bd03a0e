//! iperf3: its JSON result documents (`import`) and its wire protocol (`wire`).

pub mod import;
pub mod wire;

pub use import::{MAX_JSON_BYTES, parse_json_result};
