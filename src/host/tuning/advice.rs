//! Buffer advice for a path, computed in one place for `doctor` and `tune bdp` (and the
//! `high-bdp` profiles): the bandwidth-delay product, the buffers one flow needs (2 x BDP, as
//! Linux advertises about half of a receive buffer), the TCP buffer triples with Linux's own
//! middle values, `sysctl -w` lines that paste as printed, and rates written back as a user
//! types them (`--rate 10G`).

use crate::units::BitRate;

/// The middle ("default") value of `net.ipv4.tcp_rmem` netsweep suggests: Linux's own.
pub const RMEM_MIDDLE: u64 = 131_072;
/// The middle value of `net.ipv4.tcp_wmem` netsweep suggests: Linux's own.
pub const WMEM_MIDDLE: u64 = 16_384;

/// The largest buffer Linux takes in these keys: they are C `int`s (`sysctl -w
/// net.ipv4.tcp_rmem='4096 131072 5000000000'` fails with "Invalid argument"), and a socket's
/// buffer is an `int` too.
pub const KERNEL_MAX: u64 = i32::MAX as u64;

/// What one TCP flow over a path of `rate_bps` and `rtt_s` needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferAdvice {
    /// Bandwidth-delay product, bytes.
    pub bdp: u64,
    /// Buffers that keep a window of one BDP: 2 x BDP, bytes, at most `KERNEL_MAX`.
    pub need: u64,
    /// 2 x BDP is more than Linux holds (`KERNEL_MAX`): one flow cannot fill the path.
    pub capped: bool,
}

impl BufferAdvice {
    pub fn for_path(rate_bps: f64, rtt_s: f64) -> BufferAdvice {
        let bdp = (rate_bps / 8.0 * rtt_s).ceil().max(0.0) as u64;
        let twice = bdp.saturating_mul(2);
        BufferAdvice {
            bdp,
            need: twice.min(KERNEL_MAX),
            capped: twice > KERNEL_MAX,
        }
    }

    /// Where 2 x BDP is past what Linux holds: the sentence that says so, with the most one
    /// flow then carries over `rtt_s` (half the largest buffer as its window).
    pub fn cap_note(&self, rtt_s: f64) -> Option<String> {
        self.capped.then(|| {
            format!(
                "2 x BDP is more than Linux holds in one socket buffer ({KERNEL_MAX} bytes, a C \
                 int): the advice is that limit, with which one TCP flow's window tops out near \
                 {} over this RTT; fill the path with several streams (-P)",
                BitRate(KERNEL_MAX as f64 / 2.0 * 8.0 / rtt_s)
            )
        })
    }

    /// The value advised for `key` with an autotuning maximum of `max` bytes (never below the
    /// triple's middle value, never past `KERNEL_MAX`); `None` for keys this advice does not
    /// cover.
    pub fn value(key: &str, max: u64) -> Option<String> {
        let max = max.min(KERNEL_MAX);
        match key {
            "net.ipv4.tcp_rmem" => Some(format!("4096 {RMEM_MIDDLE} {}", max.max(RMEM_MIDDLE))),
            "net.ipv4.tcp_wmem" => Some(format!("4096 {WMEM_MIDDLE} {}", max.max(WMEM_MIDDLE))),
            "net.core.rmem_max" | "net.core.wmem_max" => Some(max.to_string()),
            _ => None,
        }
    }

    /// `sysctl -w KEY=VALUE` for this path's `key`, quoted for the shell.
    pub fn sysctl_line(&self, key: &str) -> Option<String> {
        Self::value(key, self.need).map(|v| crate::platform::sysctl::sysctl_line(key, &v))
    }
}

/// A rate as a user types it for `--rate`, parsing back to the same number: `10G`, `1500M`,
/// `64K`, else whole bits per second.
pub fn rate_arg(bps: f64) -> String {
    let whole = bps.round();
    for (unit, size) in [("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)] {
        if whole >= size && (whole / size).fract() == 0.0 {
            return format!("{}{unit}", whole / size);
        }
    }
    format!("{whole}")
}

/// A round trip as a user types it: `1.576ms`, `20ms`, `0.25ms` (to the microsecond, which is
/// what `--rtt` resolves; no floating-point tail such as `1.5759999999999998ms`).
pub fn rtt_arg(rtt_s: f64) -> String {
    let us = (rtt_s * 1e6).round() as u64;
    let text = format!("{}.{:03}", us / 1000, us % 1000);
    format!("{}ms", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `rate_arg` checked against the parser: what the hint says is what the user asked.
pub fn rate_round_trips(bps: f64) -> bool {
    rate_arg(bps)
        .parse::<BitRate>()
        .is_ok_and(|r| r.bits_per_second() == bps.round())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_written_with_units_and_parse_back() {
        assert_eq!(rate_arg(10e9), "10G");
        assert_eq!(rate_arg(1.5e9), "1500M");
        assert_eq!(rate_arg(100e6), "100M");
        assert_eq!(rate_arg(64e3), "64K");
        assert_eq!(rate_arg(1234.0), "1234");
        for r in [10e9, 1.5e9, 100e6, 64e3, 1234.0, 2.5e12] {
            assert!(rate_round_trips(r), "{r}: {}", rate_arg(r));
        }
    }

    /// Regression: `tune bdp --rtt 1.576ms` printed `--rtt 1.5759999999999998ms`.
    #[test]
    fn round_trips_are_written_as_typed_and_parse_back() {
        assert_eq!(rtt_arg(0.001576), "1.576ms");
        assert_eq!(rtt_arg(0.020), "20ms");
        assert_eq!(rtt_arg(0.00025), "0.25ms");
        for t in [0.001576, 0.020, 0.00025, 1.5, 0.0000_01] {
            let back = crate::units::parse_duration(&rtt_arg(t)).unwrap();
            assert_eq!(
                back.as_micros(),
                (t * 1e6).round() as u128,
                "{t}: {}",
                rtt_arg(t)
            );
        }
    }

    /// Regression: doctor advised a tcp_wmem middle of 131072 where `tune bdp` kept 16384.
    #[test]
    fn one_middle_value_per_key_and_pasteable_lines() {
        let a = BufferAdvice::for_path(1e9, 0.02);
        assert_eq!((a.bdp, a.need), (2_500_000, 5_000_000));
        assert_eq!(
            a.sysctl_line("net.ipv4.tcp_wmem").unwrap(),
            "sysctl -w net.ipv4.tcp_wmem='4096 16384 5000000'"
        );
        assert_eq!(
            a.sysctl_line("net.ipv4.tcp_rmem").unwrap(),
            "sysctl -w net.ipv4.tcp_rmem='4096 131072 5000000'"
        );
        assert_eq!(
            a.sysctl_line("net.core.rmem_max").unwrap(),
            "sysctl -w net.core.rmem_max=5000000"
        );
    }

    /// A trial's findings: `tune bdp --rate 1G --rtt 0.5ms` advised tcp_rmem "4096 131072
    /// 125000" (the maximum below the default), and `--rate 100G --rtt 200ms` 5000000000, which
    /// the kernel refuses.
    #[test]
    fn triples_stay_ordered_and_values_within_what_linux_takes() {
        let small = BufferAdvice::for_path(1e9, 0.0005);
        assert_eq!(small.need, 125_000);
        assert_eq!(
            BufferAdvice::value("net.ipv4.tcp_rmem", small.need).unwrap(),
            "4096 131072 131072"
        );
        assert_eq!(
            BufferAdvice::value("net.ipv4.tcp_wmem", 5000).unwrap(),
            "4096 16384 16384"
        );
        let huge = BufferAdvice::for_path(100e9, 0.2);
        assert_eq!(huge.bdp, 2_500_000_000);
        assert!(huge.capped && huge.need == KERNEL_MAX);
        assert_eq!(
            huge.sysctl_line("net.ipv4.tcp_rmem").unwrap(),
            "sysctl -w net.ipv4.tcp_rmem='4096 131072 2147483647'"
        );
        assert_eq!(
            BufferAdvice::value("net.core.rmem_max", 30_000_000_000).unwrap(),
            "2147483647"
        );
        // 2^31-1 bytes as a window of half of it over 200 ms: 42.9 Gbit/s.
        let note = huge.cap_note(0.2).unwrap();
        assert!(
            note.contains("42.9 Gbits/sec") && note.contains("-P"),
            "{note}"
        );
        assert!(!small.capped && small.cap_note(0.0005).is_none());
    }
}
