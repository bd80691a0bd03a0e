//! What the user knows of the path a test crosses, for RFC 6349's metrics (`--path-rate`,
//! `--baseline-rtt`, `--path-mtu`, `--framing`), converted once into
//! `analysis::rfc6349::PathFacts`. Shared by the client and `netsweep rfc6349`.

use crate::analysis::rfc6349::{Framing, PathFacts};
use crate::units::{BitRate, parse_duration};
use anyhow::Context;
use clap::Args;

#[derive(Debug, Args, Clone, Default)]
pub struct PathArgs {
    /// The path's bottleneck rate (RFC 6349's bottleneck bandwidth), e.g. 1G, 100M: the test
    /// then reports the transfer time ratio against the RFC's ideal.
    #[arg(long, value_name = "RATE")]
    pub path_rate: Option<String>,
    /// The path's round trip when idle (RFC 6349's baseline RTT), e.g. 20ms; measured when not
    /// given (idle latency probes with --latency, else the kernel's smallest RTT).
    #[arg(long, value_name = "DURATION")]
    pub baseline_rtt: Option<String>,
    /// The path MTU, bytes (read from the route to the server when not given).
    #[arg(long, value_name = "BYTES")]
    pub path_mtu: Option<u32>,
    /// What the bottleneck counts per packet: ethernet (38 bytes of framing, the RFC's),
    /// ethernet-header (14: a tbf on a veth) or ip (none: a TUN shaper).
    #[arg(long, value_name = "ethernet|ethernet-header|ip")]
    pub framing: Option<String>,
}

impl PathArgs {
    pub fn facts(&self) -> anyhow::Result<PathFacts> {
        let given = || "given".to_string();
        let rate = match &self.path_rate {
            Some(r) => {
                let bps = r
                    .parse::<BitRate>()
                    .context("--path-rate")?
                    .bits_per_second();
                anyhow::ensure!(bps > 0.0, "--path-rate {r}: give the path's rate, e.g. 1G");
                Some((bps, given()))
            }
            None => None,
        };
        let rtt = match &self.baseline_rtt {
            Some(t) => {
                let d = parse_duration(t).context("--baseline-rtt")?;
                anyhow::ensure!(
                    !d.is_zero(),
                    "--baseline-rtt {t}: give the idle RTT, e.g. 20ms"
                );
                Some((d.as_secs_f64(), given()))
            }
            None => None,
        };
        if let Some(m) = self.path_mtu {
            anyhow::ensure!(
                (68..=65_535).contains(&m),
                "--path-mtu {m}: an IP MTU is 68 to 65535 bytes (Ethernet's is 1500)"
            );
        }
        let framing = match &self.framing {
            Some(f) => Some(Framing::parse(f).ok_or_else(|| {
                anyhow::anyhow!("--framing {f}: expected ethernet, ethernet-header or ip")
            })?),
            None => None,
        };
        Ok(PathFacts {
            bottleneck_bps: rate,
            baseline_rtt_s: rtt,
            mtu: self.path_mtu.map(|m| (m, given())),
            framing,
            ipv6: false,
        })
    }
}

/// `netsweep rfc6349 HOST`: RFC 6349's steps against a `netsweep server`.
#[derive(Debug, Args, Clone)]
pub struct Rfc6349Args {
    /// The `netsweep server` at the far end.
    pub host: String,
    #[arg(long, short = 'p', default_value_t = crate::traffic::protocol::DEFAULT_PORT)]
    pub port: u16,
    #[command(flatten)]
    pub path: PathArgs,
    /// Measured time of each TCP test, after its warm-up.
    #[arg(long, short = 't', default_value = "10s")]
    pub time: String,
    /// Warm-up of each TCP test, left out of its figures (slow start).
    #[arg(long, short = 'O', default_value = "2s")]
    pub omit: String,
    /// The windows tried, as shares of the bandwidth-delay product (100% = the BDP) or as
    /// sizes (2M), comma-separated.
    #[arg(long, default_value = "50%,100%,200%")]
    pub windows: String,
    /// A test passes when its throughput reaches this share of the Maximum Achievable TCP
    /// Throughput (netsweep's threshold: the RFC gives only the ideal, 100%).
    #[arg(long, default_value = "95%")]
    pub pass: String,
    /// The server sends, this end receives.
    #[arg(long, short = 'R')]
    pub reverse: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A window the procedure tries: a share of the BDP or a size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WindowChoice {
    BdpShare(f64),
    Bytes(u64),
}

/// `Rfc6349Args`, checked.
#[derive(Debug, Clone)]
pub struct Rfc6349Config {
    pub server: std::net::SocketAddr,
    pub path: PathFacts,
    pub duration: std::time::Duration,
    pub omit: std::time::Duration,
    pub windows: Vec<WindowChoice>,
    pub pass_share: f64,
    pub reverse: bool,
    pub json: bool,
}

fn share(text: &str, what: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| anyhow::anyhow!("{what} {text:?}: expected a percentage, e.g. 95%"))?;
    anyhow::ensure!(
        v.is_finite() && v > 0.0,
        "{what} {text:?}: must be above 0%"
    );
    Ok(v)
}

impl TryFrom<&Rfc6349Args> for Rfc6349Config {
    type Error = anyhow::Error;

    fn try_from(a: &Rfc6349Args) -> anyhow::Result<Rfc6349Config> {
        let duration = parse_duration(&a.time).context("-t/--time")?;
        anyhow::ensure!(
            !duration.is_zero(),
            "-t {}: give each test's time, e.g. 10s",
            a.time
        );
        let omit = parse_duration(&a.omit).context("-O/--omit")?;
        let mut windows = Vec::new();
        for w in a
            .windows
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            windows.push(if w.ends_with('%') {
                WindowChoice::BdpShare(share(w, "--windows")?)
            } else {
                let b = w
                    .parse::<crate::units::Bytes>()
                    .with_context(|| {
                        format!("--windows {w}: a share of the BDP (100%) or a size (2M)")
                    })?
                    .0;
                anyhow::ensure!(b >= 1024, "--windows {w}: a window of at least 1K");
                WindowChoice::Bytes(b)
            });
        }
        anyhow::ensure!(
            !windows.is_empty(),
            "--windows: give at least one, e.g. 100%"
        );
        let pass_share = share(&a.pass, "--pass")?;
        anyhow::ensure!(pass_share <= 1.0, "--pass {}: at most 100%", a.pass);
        let server = crate::traffic::address::resolve(&a.host, a.port, false, false)?;
        let mut path = a.path.facts()?;
        path.ipv6 = server.is_ipv6();
        Ok(Rfc6349Config {
            server,
            path,
            duration,
            omit,
            windows,
            pass_share,
            reverse: a.reverse,
            json: a.json,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: Rfc6349Args,
    }

    fn config(args: &[&str]) -> anyhow::Result<Rfc6349Config> {
        let w = Wrap::try_parse_from(std::iter::once("x").chain(args.iter().copied()))?;
        Rfc6349Config::try_from(&w.a)
    }

    #[test]
    fn windows_are_bdp_shares_or_sizes_and_bad_values_are_named() {
        let c = config(&["127.0.0.1", "--windows", "50%, 100%,2M", "--pass", "90%"]).unwrap();
        assert_eq!(
            c.windows,
            vec![
                WindowChoice::BdpShare(0.5),
                WindowChoice::BdpShare(1.0),
                WindowChoice::Bytes(2 << 20)
            ]
        );
        assert!((c.pass_share - 0.9).abs() < 1e-12);
        let e = config(&["127.0.0.1", "--windows", "lots"]).unwrap_err();
        assert!(format!("{e:#}").contains("--windows lots"), "{e:#}");
        let e = config(&["127.0.0.1", "--pass", "120%"]).unwrap_err();
        assert!(e.to_string().contains("at most 100%"), "{e}");
        let e = config(&["127.0.0.1", "--path-rate", "0"]).unwrap_err();
        assert!(format!("{e:#}").contains("--path-rate"), "{e:#}");
        let c = config(&["127.0.0.1", "--path-rate", "1G", "--baseline-rtt", "20ms"]).unwrap();
        assert_eq!(c.path.bottleneck_bps, Some((1e9, "given".into())));
        assert_eq!(c.path.baseline_rtt_s, Some((0.02, "given".into())));
    }
}
