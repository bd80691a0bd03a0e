//! iperf3's meaning of its own flags, where netsweep's defaults would differ: `-b` is the rate
//! of each stream, `-u` without `-b` is 1 Mbit/s per stream, `-k` counts blocks of iperf3's
//! default length (128 KiB for TCP) unless `-l` says otherwise. netsweep's own choices stay
//! available under its own names: `--total-bitrate` (the rate of a direction, split over its
//! streams) and the calibrated TCP write size of a test without `-l` or `-k`.

use super::ClientArgs;
use crate::traffic::spec::{IPERF3_TCP_LENGTH, IPERF3_UDP_RATE, Protocol, TestSpec};
use crate::units::BitRate;
use anyhow::Context;

/// Sets the spec's rate (the total of a direction, as `TestSpec` keeps it) from `-b` (per
/// stream), `--total-bitrate` (per direction) or UDP's default; call once `streams` is final.
/// Returns the note the start of the test says when the default was taken.
pub(super) fn apply_rate(a: &ClientArgs, spec: &mut TestSpec) -> anyhow::Result<Option<String>> {
    let streams = f64::from(spec.streams.max(1));
    for (flag, value) in [("-b", &a.bitrate), ("--total-bitrate", &a.total_bitrate)] {
        if let Some(v) = value
            && let Some((rate, burst)) = v.split_once('/')
        {
            anyhow::bail!(
                "{flag} {v}: iperf3's bursts (RATE/BURST, here {burst} packets at a time) are \
                 not implemented: netsweep paces each stream evenly; give {flag} {rate}"
            );
        }
    }
    if let Some(b) = &a.bitrate {
        let each = b.parse::<BitRate>().context("-b/--bitrate")?;
        spec.bitrate_bps = each.bits_per_second() * streams;
        paced_block_length(a, spec);
    } else if let Some(t) = &a.total_bitrate {
        spec.bitrate_bps = t
            .parse::<BitRate>()
            .context("--total-bitrate")?
            .bits_per_second();
        paced_block_length(a, spec);
    } else if spec.protocol == Protocol::Udp {
        spec.bitrate_bps = IPERF3_UDP_RATE * streams;
        return Ok(Some(format!(
            "UDP at {} per stream, iperf3's default (-b RATE per stream, or --total-bitrate \
             RATE for a direction; -b 0 for unlimited)",
            BitRate(IPERF3_UDP_RATE)
        )));
    }
    Ok(None)
}

/// A paced TCP stream without `-l` writes iperf3's 128 KiB blocks, as iperf3's `-b` does: the
/// pacer sends whole blocks (an iperf3 receiver waits for whole blocks), so netsweep's 1 MiB
/// writes paced 10 Mbit/s per stream as two blocks in 2 s, 8.39 Mbit/s, and refused `-b 1M
/// -t 3` as shorter than one write.
fn paced_block_length(a: &ClientArgs, spec: &mut TestSpec) {
    if spec.bitrate_bps > 0.0 && a.length.is_none() && spec.protocol == Protocol::Tcp {
        spec.length_bytes = IPERF3_TCP_LENGTH;
    }
}

/// `-k` without `-l` counts TCP blocks of iperf3's 128 KiB, not netsweep's own write size.
pub(super) fn apply_block_length(a: &ClientArgs, spec: &mut TestSpec) {
    if a.blockcount.is_some() && a.length.is_none() && spec.protocol == Protocol::Tcp {
        spec.length_bytes = IPERF3_TCP_LENGTH;
    }
}

/// `--rcv-timeout MS`, as iperf3 takes it: at least 100 ms.
pub(super) fn rcv_timeout(ms: Option<u64>) -> anyhow::Result<std::time::Duration> {
    let Some(ms) = ms else {
        return Ok(crate::traffic::session::DEFAULT_RCV_TIMEOUT);
    };
    let t = std::time::Duration::from_millis(ms);
    if t < crate::traffic::session::MIN_RCV_TIMEOUT {
        anyhow::bail!(
            "--rcv-timeout {ms}: give at least 100 milliseconds (iperf3's least; its default is \
             120000)"
        );
    }
    Ok(t)
}

/// `--cntl-ka[=IDLE/INTV/CNT]` and `--snd-timeout MS`, as iperf3 takes them (both roles): the
/// keepalive's parts left out are the system's defaults, read once here so that a bad
/// combination is refused before anything connects.
pub(super) fn liveness(
    cntl_ka: Option<&str>,
    snd_timeout: Option<u64>,
) -> anyhow::Result<crate::traffic::liveness::Liveness> {
    use crate::traffic::liveness::{KeepaliveAsk, Liveness, user_timeout};
    let control_keepalive = match cntl_ka {
        None => None,
        Some(text) => {
            let ask = KeepaliveAsk::parse(text).map_err(anyhow::Error::msg)?;
            let defaults = crate::platform::sockopt::system_keepalive().map_err(|e| {
                anyhow::anyhow!("--cntl-ka: cannot read the system's keepalive defaults: {e}")
            })?;
            Some(ask.resolve(defaults).map_err(anyhow::Error::msg)?)
        }
    };
    let user_timeout = match snd_timeout {
        None => None,
        Some(ms) => {
            let t = user_timeout(ms).map_err(anyhow::Error::msg)?;
            if t.is_some() && !crate::platform::sockopt::HAS_USER_TIMEOUT {
                anyhow::bail!(
                    "--snd-timeout: this system has no TCP_USER_TIMEOUT (iperf3 built here \
                     refuses it too); a stalled test ends by the receiving end's --rcv-timeout"
                );
            }
            t
        }
    };
    Ok(Liveness {
        control_keepalive,
        user_timeout,
    })
}
