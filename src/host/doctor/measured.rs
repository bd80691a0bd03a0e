//! The path's own short tests set against the static buffer bounds. A bound (`RateBound`) is a
//! buffer's size over an RTT estimate and a rule for the kernel's overhead; the tests to and
//! from the peer are what this path does. When a test passes more than a bound allows, the
//! bound is wrong for this path and the finding says so, which to believe and why, instead of
//! reporting a cap its own measurement contradicts. Pure: `app::doctor` calls `reconcile`
//! after the host and peer checks.

use super::{BufferSide, Finding, Severity};
use crate::units::BitRate;

/// What the short tests across the path measured, bit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// This host sending (its send buffer, the peer's receive buffer).
    pub to_peer_bps: f64,
    /// The peer sending (this host's receive buffer).
    pub from_peer_bps: f64,
}

/// Where the RTT the bounds assumed came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RttOrigin {
    /// `--rtt`, as the user gave it.
    Given,
    /// The fastest of the TCP connects to the peer.
    Connects,
}

impl RttOrigin {
    fn words(self) -> &'static str {
        match self {
            RttOrigin::Given => "given with --rtt",
            RttOrigin::Connects => "the fastest of 5 TCP connects to the peer",
        }
    }
}

/// A test's rate below this share of the path's rate leaves room a larger buffer might fill.
const NEAR_PATH_RATE: f64 = 0.9;

impl Measured {
    /// The test a bound of `side` limits: the rate and how the test is named.
    fn through(&self, side: BufferSide) -> (f64, &'static str) {
        match side {
            BufferSide::Send => (self.to_peer_bps, "to the peer"),
            BufferSide::Receive => (self.from_peer_bps, "from the peer"),
            BufferSide::Both if self.to_peer_bps >= self.from_peer_bps => {
                (self.to_peer_bps, "to the peer")
            }
            BufferSide::Both => (self.from_peer_bps, "from the peer"),
        }
    }
}

/// Sets every finding that claims a bound against the test of the same direction: a bound the
/// test exceeds is rewritten as refuted (the measurement is believed; a note, or a warning
/// while the test stays below the path's rate), a bound the test keeps is kept and says the
/// test agrees. Either way the title says what RTT the bound assumed.
pub fn reconcile(findings: &mut [Finding], measured: &Measured, origin: RttOrigin) {
    for f in findings.iter_mut() {
        let Some(b) = f.bound.clone() else { continue };
        let (got, test) = measured.through(b.side);
        let rtt = format!("{:.3} ms, {}", b.rtt.as_secs_f64() * 1e3, origin.words());
        f.evidence
            .push(("measured_bps".into(), format!("{got:.0}")));
        f.evidence
            .push(("bound_bps".into(), format!("{:.0}", b.bits_per_second)));
        if got > b.bits_per_second {
            let short = got < NEAR_PATH_RATE * b.path_bps;
            f.severity = if short {
                Severity::Warning
            } else {
                Severity::Info
            };
            f.title = format!(
                "{} would cap one flow near {} by a static estimate, but the test {test} \
                 measured {}: believe the measurement, it is this path's own; the estimate is \
                 only a bound from the buffer's size over an assumed RTT ({rtt}) and a rule \
                 for the kernel's overhead{}",
                b.what,
                BitRate(b.bits_per_second),
                BitRate(got),
                if short {
                    format!(
                        "; the test is still below the path's {}, so a larger buffer may still help",
                        BitRate(b.path_bps)
                    )
                } else {
                    String::new()
                }
            );
        } else {
            f.title = format!(
                "{} (assumed RTT {rtt}); the test {test} measured {}, within that bound",
                f.title,
                BitRate(got)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::doctor::RateBound;
    use std::time::Duration;

    fn capped(side: BufferSide) -> Finding {
        Finding::new(
            "buffers.tcp_wmem",
            Severity::Problem,
            "net.ipv4.tcp_wmem max 512 KBytes is below 2 x BDP (1003 KBytes): one TCP flow's \
             send window caps it near 102 Mbits/sec",
        )
        .fix("on both hosts: sysctl -w net.ipv4.tcp_wmem='4096 16384 1026680'")
        .bound(RateBound {
            what: "net.ipv4.tcp_wmem max 512 KBytes".into(),
            bits_per_second: 102e6,
            side,
            rtt: Duration::from_micros(20_534),
            path_bps: 200e6,
        })
    }

    /// Regression: "PROBLEM ... caps it near 794 Mbits/sec" beside "ok to the peer 952
    /// Mbits/sec" from the same run of doctor.
    #[test]
    fn a_bound_the_test_exceeds_is_refuted_with_the_rtt_it_assumed() {
        let mut f = vec![capped(BufferSide::Send)];
        let m = Measured {
            to_peer_bps: 193e6,
            from_peer_bps: 50e6,
        };
        reconcile(&mut f, &m, RttOrigin::Connects);
        let t = &f[0].title;
        assert_eq!(f[0].severity, Severity::Info, "{t}");
        assert!(!t.contains("caps it"), "{t}");
        assert!(
            t.contains("the test to the peer measured 193 Mbits/sec"),
            "{t}"
        );
        assert!(t.contains("believe the measurement"), "{t}");
        assert!(
            t.contains("20.534 ms, the fastest of 5 TCP connects to the peer"),
            "{t}"
        );
        assert!(f[0].fix.is_some());
        // Above the bound but short of the path's rate: still worth a warning.
        let mut f = vec![capped(BufferSide::Send)];
        let m = Measured {
            to_peer_bps: 136e6,
            from_peer_bps: 193e6,
        };
        reconcile(&mut f, &m, RttOrigin::Given);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].title.contains("given with --rtt"), "{}", f[0].title);
        assert!(f[0].title.contains("a larger buffer may still help"));
    }

    #[test]
    fn a_bound_the_test_keeps_stays_a_problem_and_says_the_test_agrees() {
        let mut f = vec![capped(BufferSide::Receive)];
        let m = Measured {
            to_peer_bps: 193e6,
            from_peer_bps: 98e6,
        };
        reconcile(&mut f, &m, RttOrigin::Connects);
        let t = &f[0].title;
        assert_eq!(f[0].severity, Severity::Problem);
        assert!(
            t.contains("caps it near 102 Mbits/sec (assumed RTT 20.534 ms"),
            "{t}"
        );
        assert!(
            t.contains("the test from the peer measured 98.0 Mbits/sec, within"),
            "{t}"
        );
    }

    #[test]
    fn a_bound_on_both_sides_meets_the_faster_test_and_findings_without_bounds_stay() {
        let plain = Finding::new("tcp.congestion", Severity::Info, "congestion control bbr");
        let mut f = vec![capped(BufferSide::Both), plain.clone()];
        let m = Measured {
            to_peer_bps: 90e6,
            from_peer_bps: 190e6,
        };
        reconcile(&mut f, &m, RttOrigin::Connects);
        assert!(f[0].title.contains("the test from the peer measured 190"));
        assert_eq!(f[1], plain);
    }
}
