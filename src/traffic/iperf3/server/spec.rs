//! The netsweep test an iperf3 client's parameters ask for, within this server's limits, or the
//! refusal iperf3 prints in words.

use super::*;

/// The netsweep test an iperf3 client's parameters ask for. The streams run open-ended (the
/// client says when the test ends), so the grid is the asked time plus `END_GRACE`; a count
/// (`-n`/`-k`) is the spec's, so this end sends exactly it.
pub fn spec_for(p: &Params, limits: &ServerLimits) -> Result<TestSpec, Refusal> {
    if !p.unimplemented.is_empty() {
        return Err(Refusal::new(
            code::UNIMPLEMENTED,
            format!(
                "the client asked for {}, which this netsweep server does not implement",
                p.unimplemented.join(", ")
            ),
        ));
    }
    if p.mptcp {
        // An MPTCP client's connections to this server's plain TCP listener fall back to TCP:
        // running the test would measure TCP and call it MPTCP.
        return Err(Refusal::new(
            code::UNIMPLEMENTED,
            "the client asked for -m/--mptcp, and this netsweep server listens for plain TCP \
             (its connections would fall back to TCP)",
        ));
    }
    let asked = if p.time_s > 0 {
        Duration::from_secs(p.time_s)
    } else {
        // -n/-k: the client sends until its count, then says TEST_END; -t 0 alone: until
        // the client is interrupted (CLIENT_TERMINATE). The grid is the longest test this
        // server accepts, warm-up included, and no longer than its streams'
        // interval reports fit under --max-intervals (64 streams at 1 s intervals: 3125 s).
        let flows = u64::from(p.parallel.max(1)) * if p.bidirectional { 2 } else { 1 };
        let step = if limits.iperf3_interval.is_zero() {
            Duration::from_secs(1)
        } else {
            limits.iperf3_interval
        };
        let fits = step
            .saturating_mul(u32::try_from(limits.max_interval_records / flows).unwrap_or(u32::MAX))
            .saturating_sub(Duration::from_secs(p.omit_s) + step + END_GRACE);
        limits
            .max_duration
            .saturating_sub(Duration::from_secs(p.omit_s))
            .min(fits)
            .max(Duration::from_secs(1))
    };
    let omit = Duration::from_secs(p.omit_s);
    if asked + omit > limits.max_duration {
        return Err(Refusal::new(
            duration_code(p.client_version.as_deref()),
            format!(
                "{} s exceed this server's --max-duration of {} s",
                (asked + omit).as_secs(),
                limits.max_duration.as_secs()
            ),
        ));
    }
    if p.parallel > limits.max_streams {
        return Err(Refusal::new(
            code::NUM_STREAMS,
            format!(
                "{} streams exceed this server's --max-streams of {}",
                p.parallel, limits.max_streams
            ),
        ));
    }
    let total = p.bandwidth_bps as f64 * f64::from(p.parallel);
    // As iperf3's server: -b per stream, times the streams of both directions with --bidir.
    if let Some(why) = limits.bitrate_limit.and_then(|l| {
        l.refusal(
            p.bandwidth_bps as f64 * p.stream_count() as f64,
            p.stream_count(),
        )
    }) {
        return Err(Refusal::new(code::TOTAL_RATE, why));
    }
    if limits.max_rate_bps > 0.0 && (total == 0.0 || total > limits.max_rate_bps) {
        return Err(Refusal::new(
            code::TOTAL_RATE,
            format!(
                "{} per direction exceeds this server's --max-rate of {}",
                if total == 0.0 {
                    "an unlimited rate".into()
                } else {
                    crate::units::BitRate(total).to_string()
                },
                crate::units::BitRate(limits.max_rate_bps)
            ),
        ));
    }
    let mut spec = if p.udp {
        TestSpec::udp(asked + END_GRACE)
    } else {
        TestSpec::tcp(asked + END_GRACE)
    };
    spec.omit = omit;
    // The server's -i, as iperf3's server reports on its own; 0: the whole test.
    spec.interval = limits.iperf3_interval;
    if spec.interval.is_zero() {
        spec.interval = spec.duration;
        spec.whole_test_interval = true;
    }
    spec.streams = p.parallel;
    spec.direction = match (p.reverse, p.bidirectional) {
        (_, true) => Direction::Bidir,
        (true, _) => Direction::Reverse,
        _ => Direction::Forward,
    };
    spec.window_bytes = p.window;
    spec.mss_bytes = p.mss;
    spec.congestion = p.congestion.clone();
    spec.length_bytes = p.len.unwrap_or(if p.udp {
        UDP_DEFAULT_LEN
    } else {
        TCP_DEFAULT_LEN
    });
    spec.bitrate_bps = total;
    spec.tos = (p.tos != 0).then_some(p.tos);
    spec.fq_rate_bps = (p.fqrate_bps > 0).then_some(p.fqrate_bps);
    spec.dont_fragment = p.dont_fragment && p.udp;
    spec.skip_rx_copy = p.skip_rx_copy;
    spec.affinity.server = p.server_affinity.map(crate::traffic::affinity::Cpus::one);
    // -N: TCP_NODELAY on this end's data sockets too (under -R they are the senders).
    spec.no_delay = p.nodelay && !p.udp;
    spec.repeating_payload = p.repeating_payload;
    // As iperf3's server sends: write(2) of the block size, sendfile(2) when the client asked
    // for -Z. (netsweep's own default, sendfile of the block, carried 0.7x what iperf3's server
    // does under iperf3 3.21's `-R -P 2`: 19.96 against 28.28 Gbit/s on loopback, 2-vCPU AMD
    // EPYC VM, 2026-11-29; write(2) 28.13: docs/performance.md.)
    spec.zerocopy = p.zerocopy;
    spec.calibration = Duration::ZERO;
    // -n/-k: this end's senders stop at the count, as iperf3's server does (iperf_send stops
    // at settings->bytes or blocks), so a -R or --bidir test sends it and no more; its
    // receivers end theirs once they have it.
    spec.count = match (p.bytes, p.blocks) {
        (0, 0) => None,
        (0, k) => Some(crate::traffic::spec::Count::Blocks(k)),
        (b, _) => Some(crate::traffic::spec::Count::Bytes(b)),
    };
    spec.validate()
        .map_err(|e| Refusal::new(code::RECV_PARAMS, e.to_string()))?;
    if spec.interval_records() > limits.max_interval_records {
        return Err(Refusal::new(
            code::MAX_SERVER_DURATION,
            format!(
                "{} interval records exceed this server's --max-intervals of {}",
                spec.interval_records(),
                limits.max_interval_records
            ),
        ));
    }
    Ok(spec)
}

/// The code for "longer than this server allows": clients from 3.13 and netsweep's know
/// IEMAXSERVERTESTDURATIONEXCEEDED; older ones print only its number, so they get IEDURATION
/// ("test duration too long").
pub(super) fn duration_code(client_version: Option<&str>) -> i32 {
    if knows(client_version, (3, 13)) {
        code::MAX_SERVER_DURATION
    } else {
        code::DURATION
    }
}

/// The code for a test ended at the longest this server serves: clients from 3.20 (and
/// netsweep's) know IESERVERTESTDURATIONEXPIRED; older ones print "int_errno=160:" and, with
/// `-J`, exit 0 (iperf3 3.12, measured), so they get IESERVERTERM ("the server has
/// terminated").
pub(super) fn expired_code(client_version: Option<&str>) -> i32 {
    if knows(client_version, (3, 20)) {
        code::SERVER_DURATION_EXPIRED
    } else {
        code::SERVER_TERM
    }
}

/// Whether a client of `client_version` (its `client_version` parameter) is netsweep's or an
/// iperf3 of at least `release`; an unknown version is taken as older.
fn knows(client_version: Option<&str>, release: (u32, u32)) -> bool {
    if client_version.is_some_and(|v| v.starts_with("netsweep ")) {
        return true;
    }
    client_version
        .and_then(|v| {
            let mut parts = v.trim().split('.');
            let major: u32 = parts.next()?.parse().ok()?;
            let minor: u32 = parts
                .next()?
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()?;
            Some((major, minor) >= release)
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::spec::Count;

    /// The server sends as iperf3's does: write(2) of the block, sendfile(2) with the client's
    /// `-Z`; never calibrated.
    #[test]
    fn the_server_sends_as_iperf3s_does() {
        let limits = ServerLimits::default();
        let p = Params {
            time_s: 2,
            parallel: 1,
            reverse: true,
            len: Some(256 << 10),
            ..Params::default()
        };
        let plain = spec_for(&p, &limits).expect("-R");
        assert!(!plain.zerocopy && plain.calibration.is_zero() && !plain.chooses_send_path());
        assert_eq!(plain.length_bytes, 256 << 10);
        let z = spec_for(
            &Params {
                zerocopy: true,
                ..p
            },
            &limits,
        )
        .expect("-R -Z");
        assert!(z.zerocopy && z.calibration.is_zero());
    }

    /// Regression (issue 41, 1): the count of an iperf3 client's `-n`/`-k` was not the spec's,
    /// so a server that sends (`-R`, `--bidir`) kept its senders going until TEST_END
    /// (2,894,856,192 bytes for `-n 5M -R`). It is the spec's now, in the client's units.
    #[test]
    fn an_iperf3_clients_count_is_the_servers_too() {
        let limits = ServerLimits::default();
        let p = Params {
            parallel: 4,
            reverse: true,
            bytes: 5 << 20,
            len: Some(128 << 10),
            ..Params::default()
        };
        let spec = spec_for(&p, &limits).expect("-n -R is served");
        assert_eq!(spec.count, Some(Count::Bytes(5 << 20)));
        let k = spec_for(
            &Params {
                bytes: 0,
                blocks: 40,
                len: None,
                ..p.clone()
            },
            &limits,
        )
        .expect("-k -R is served");
        // Blocks of iperf3's default 128 KiB when the client names no length.
        assert_eq!(k.count.map(|c| c.bytes(k.length_bytes)), Some(40 << 17));
        let timed = spec_for(
            &Params {
                bytes: 0,
                time_s: 10,
                ..p
            },
            &limits,
        )
        .expect("a timed test");
        assert_eq!(timed.count, None);
    }
}
