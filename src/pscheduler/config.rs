//! The netsweep tool's configuration on a pScheduler host, `/etc/pscheduler/tool/netsweep.conf`
//! (or the file `NETSWEEP_PSCHEDULER_CONF` names), in the INI form of the iperf3 tool's
//! `iperf3.conf`:
//!
//! ```ini
//! [netsweep]
//! server_port = 5310     # where this host's server participant listens
//! max_duration = 1h      # longest test this host serves (warm-up included)
//! max_streams = 128      # most parallel streams
//! max_rate = 10G         # highest rate; unlimited tests are then refused
//! ```
//!
//! A missing file means the defaults. Read by `method`, used by `spec::can_run` and `run`.

use crate::traffic::spec::ServerLimits;
use crate::units::{BitRate, parse_duration};
use std::path::Path;
use std::time::Duration;

/// Where pScheduler keeps tool configurations.
pub const DEFAULT_PATH: &str = "/etc/pscheduler/tool/netsweep.conf";
/// The environment variable that names another configuration file.
pub const PATH_VARIABLE: &str = "NETSWEEP_PSCHEDULER_CONF";

/// Longest file read: a configuration of a few lines.
const MAX_BYTES: u64 = 64 * 1024;

/// The tool's settings on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolConfig {
    /// TCP port of this host's server participant (and its UDP port for the same number).
    pub server_port: u16,
    pub max_duration: Duration,
    pub max_streams: u16,
    /// bit/s; 0 = no cap.
    pub max_rate_bps: f64,
    /// The file these came from, for messages; `None` for the defaults.
    pub source: Option<String>,
}

impl Default for ToolConfig {
    fn default() -> Self {
        let l = ServerLimits::default();
        ToolConfig {
            server_port: crate::traffic::protocol::DEFAULT_PORT,
            max_duration: l.max_duration,
            max_streams: l.max_streams,
            max_rate_bps: 0.0,
            source: None,
        }
    }
}

impl ToolConfig {
    /// The configuration file named by `NETSWEEP_PSCHEDULER_CONF`, else the default path.
    pub fn load() -> anyhow::Result<ToolConfig> {
        let path = std::env::var_os(PATH_VARIABLE)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| DEFAULT_PATH.into());
        ToolConfig::load_from(&path)
    }

    /// Reads `path`; a missing file is the defaults.
    pub fn load_from(path: &Path) -> anyhow::Result<ToolConfig> {
        // A regular file only: a FIFO in its place would hold every pScheduler method.
        let text = match crate::inputs::read_regular(path, MAX_BYTES) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ToolConfig::default());
            }
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        };
        let mut c =
            ToolConfig::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        c.source = Some(path.display().to_string());
        Ok(c)
    }

    /// Parses the INI text: `key = value` lines under `[netsweep]`, `#` and `;` comments.
    pub fn parse(text: &str) -> Result<ToolConfig, String> {
        let mut c = ToolConfig::default();
        let mut section = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split(['#', ';']).next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.trim().to_string();
                continue;
            }
            if section != "netsweep" {
                continue;
            }
            let at = |e: String| format!("line {}: {e}", n + 1);
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| at(format!("{line:?} is not key = value")))?;
            match key {
                "server_port" => {
                    c.server_port = value
                        .parse()
                        .ok()
                        .filter(|p| *p > 0)
                        .ok_or_else(|| at(format!("server_port {value:?} is not a port")))?
                }
                "max_duration" => {
                    c.max_duration = parse_duration(value).map_err(|e| at(e.to_string()))?
                }
                "max_streams" => {
                    c.max_streams = value
                        .parse()
                        .map_err(|_| at(format!("max_streams {value:?} is not a count")))?
                }
                "max_rate" => {
                    c.max_rate_bps = value
                        .parse::<BitRate>()
                        .map_err(|e| at(e.to_string()))?
                        .bits_per_second()
                }
                other => return Err(at(format!("unknown setting {other:?}"))),
            }
        }
        Ok(c)
    }

    /// The caps of this host's server participant: one test at a time, this file's limits.
    pub fn limits(&self) -> ServerLimits {
        ServerLimits {
            max_tests: 1,
            max_duration: self.max_duration,
            max_streams: self.max_streams,
            max_rate_bps: self.max_rate_bps,
            ..ServerLimits::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_under_the_netsweep_section() {
        let c = ToolConfig::parse(
            "# netsweep tool\n[other]\nserver_port = 1\n[netsweep]\nserver_port = 5999 ; why\n\
             max_duration = 90s\nmax_streams = 8\nmax_rate = 2G\n",
        )
        .unwrap_or_default();
        assert_eq!(c.server_port, 5999);
        assert_eq!(c.max_duration, Duration::from_secs(90));
        assert_eq!(c.max_streams, 8);
        assert_eq!(c.max_rate_bps, 2e9);
        assert_eq!(c.limits().max_tests, 1);
    }

    #[test]
    fn bad_settings_name_their_line() {
        for (text, needle) in [
            ("[netsweep]\nserver_port = 0\n", "line 2"),
            ("[netsweep]\n\nmax_rate = fast\n", "line 3"),
            ("[netsweep]\nport = 5\n", "unknown setting"),
            ("[netsweep]\nserver_port\n", "not key = value"),
        ] {
            match ToolConfig::parse(text) {
                Ok(c) => panic!("{text:?} accepted as {c:?}"),
                Err(e) => assert!(e.contains(needle), "{text:?}: {e}"),
            }
        }
    }

    #[test]
    fn a_missing_file_is_the_defaults() {
        let c = ToolConfig::load_from(Path::new("/nonexistent/netsweep.conf"));
        assert_eq!(c.ok(), Some(ToolConfig::default()));
    }
}
