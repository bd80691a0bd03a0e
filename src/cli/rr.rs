//! `netsweep client --test rr|crr`: the command line of a request/response test, converted
//! once into the client's configuration and an `RrSpec`. Options of throughput tests that
//! mean nothing here are refused by name rather than ignored.

use super::ClientArgs;
use crate::traffic::client::ClientConfig;
use crate::traffic::rr::{RrMode, RrSpec, parse_sizes};
use crate::traffic::spec::{Protocol, TestSpec};
use anyhow::{Context, bail};
use std::time::Duration;

/// The ceiling of a `--transactions` test without `-t`.
pub const COUNT_CEILING: Duration = Duration::from_secs(60);

impl TryFrom<&ClientArgs> for (ClientConfig, RrSpec) {
    type Error = anyhow::Error;

    fn try_from(a: &ClientArgs) -> anyhow::Result<(ClientConfig, RrSpec)> {
        let mode: RrMode = a
            .test_kind
            .as_deref()
            .unwrap_or("rr")
            .parse()
            .map_err(|e: String| anyhow::anyhow!(e))?;
        if a.iperf3 || a.iperf3_cli || a.auth.username.is_some() {
            bail!(
                "--test {}: request/response tests run between netsweep's own client and server; \
                 iperf3 servers (--iperf3, iperf3's command line, --username) have none",
                mode.name()
            );
        }
        let refused = [
            (a.reverse, "-R"),
            (a.bidir, "--bidir"),
            (a.bytes.is_some(), "-n (use --transactions)"),
            (a.blockcount.is_some(), "-k (use --transactions)"),
            (
                a.latency || a.probe_rate.is_some() || a.latency_idle.is_some(),
                "--latency",
            ),
            (a.rrul, "--rrul"),
            (a.bitrate.is_some() || a.total_bitrate.is_some(), "-b"),
            (a.length.is_some(), "-l (use -r REQ,RESP)"),
            (a.json_stream, "--json-stream"),
            (a.spec_json.is_some(), "--spec-json"),
        ];
        if let Some((_, flag)) = refused.iter().find(|(set, _)| *set) {
            bail!(
                "--test {}: {flag} does not apply to a request/response test",
                mode.name()
            );
        }
        let duration = match (&a.time, a.transactions) {
            (Some(t), _) => crate::units::parse_duration(t).context("-t/--time")?,
            (None, Some(_)) => COUNT_CEILING,
            (None, None) => Duration::from_secs(10),
        };
        let (request_bytes, response_bytes) = match &a.request_response {
            Some(r) => parse_sizes(r).map_err(|e| anyhow::anyhow!(e))?,
            None => (1, 1),
        };
        // `--spin 0` is no polling at all.
        let spin_us = match &a.spin {
            Some(t) => Some(
                u64::try_from(
                    crate::units::parse_duration(t)
                        .context("--spin")?
                        .as_micros(),
                )
                .unwrap_or(u64::MAX),
            )
            .filter(|&us| us > 0),
            None => None,
        };
        let mut spec = RrSpec {
            mode,
            protocol: if a.udp { Protocol::Udp } else { Protocol::Tcp },
            request_bytes,
            response_bytes,
            concurrency: a.parallel,
            duration,
            transactions: a.transactions,
            affinity: Default::default(),
            spin_us,
        };
        if let Some(why) = spec.invalid() {
            bail!("{why}");
        }
        // Where the server is, -B, --connect-timeout, -A: as a throughput test has them.
        let mut plain = a.clone();
        plain.test_kind = None;
        plain.time = Some("1".into());
        plain.transactions = None;
        plain.request_response = None;
        plain.spin = None;
        let (cfg, plain): (ClientConfig, TestSpec) = (&plain).try_into()?;
        spec.affinity = plain.affinity;
        Ok((cfg, spec))
    }
}
