//! iperf3: its JSON result documents (`import`).

pub mod import;

pub use import::{MAX_JSON_BYTES, parse_json_result};
