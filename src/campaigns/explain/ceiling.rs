//! One TCP configuration's ceilings, by one formula for `explain`, its JSON and the report's
//! charts: the window the runs had over the path's idle RTT, the path's rate, and the rate a
//! paced run asked for. Pure.
//!
//! A flow carries at most its window per round trip, so the window ceiling is the largest
//! window its receivers advertised (TCP_INFO; what the flow could have in flight), else the
//! window the run asked for cut to what either end's kernel granted (`SocketInfo::window_bytes`),
//! over the idle RTT: the lab's, or the smallest RTT the senders measured when that is longer
//! (a trial's TCG guests measured 4.4-4.8 ms on a 4 ms lab path, and a Debian 6.1 guest
//! advertised 64088 bytes for `-w 64K` where a 6.18 host advertises 79.2 KB). A goodput above
//! its window ceiling is not window-limited, whatever else it is. A window-limited flow short
//! of window/idle RTT because a queue lengthened its round trip is stated against the window
//! over the RTT under load, its idle share beside it (a trial read "window-limited at 33% of
//! window/RTT" of runs at 95-111% of window/loaded RTT).

use crate::traffic::result::TestResult;
use crate::traffic::spec::{Direction, Protocol};

/// Where a run's window figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `-w`, granted in full by both ends.
    Asked,
    /// `-w`, cut by an end's kernel (its maxima).
    Granted,
    /// The largest window the receivers advertised (TCP_INFO): without `-w`, or when the
    /// kernel advertised more than `-w`.
    Advertised,
}

impl WindowSource {
    pub fn words(self) -> &'static str {
        match self {
            WindowSource::Asked => "asked",
            WindowSource::Granted => "granted",
            WindowSource::Advertised => "advertised",
        }
    }
}

/// A run's window, summed over its streams of one direction, and where it came from: the
/// largest window the receivers advertised, since that is what the flow could have in flight
/// (Linux 6.x advertises 114% of `-w` of the doubled buffer it grants on veth, Linux 6.1 98%);
/// without that figure, `-w` as asked, cut to what either end's kernel granted. The source
/// says "granted" whenever a kernel cut `-w`. `None` for UDP or a run with no figure.
pub fn run_window(t: &TestResult) -> Option<(u64, WindowSource)> {
    if t.spec.protocol != Protocol::Tcp {
        return None;
    }
    let streams = u64::from(t.spec.streams.max(1));
    // Summed over both directions with --bidir: one direction's share.
    let dirs = if t.spec.direction == Direction::Bidir {
        2
    } else {
        1
    };
    let advertised = t
        .summary
        .snd_wnd_max_bytes
        .filter(|w| *w > 0)
        .map(|w| w / dirs);
    let Some(asked) = t.spec.window_bytes else {
        return advertised.map(|a| (a, WindowSource::Advertised));
    };
    let granted = t
        .start
        .client_sockets
        .iter()
        .chain(&t.start.server_sockets)
        .filter_map(|s| s.window_bytes)
        .min();
    let (window, source) = match granted {
        Some(g) if g < asked => (g * streams, WindowSource::Granted),
        _ => (asked * streams, WindowSource::Asked),
    };
    Some(match advertised {
        Some(a) if source == WindowSource::Granted => (a, source),
        Some(a) => (a, WindowSource::Advertised),
        None => (window, source),
    })
}

/// The rate a paced TCP run asked for, all streams and directions (bit/s).
pub fn asked_rate(t: &TestResult) -> Option<f64> {
    if t.spec.protocol != Protocol::Tcp || t.spec.bitrate_bps <= 0.0 {
        return None;
    }
    let dirs = if t.spec.direction == Direction::Bidir {
        2.0
    } else {
        1.0
    };
    Some(t.spec.bitrate_bps * dirs)
}

/// The smallest RTT the run's senders measured, in seconds.
pub fn measured_idle_rtt_s(t: &TestResult) -> Option<f64> {
    t.summary
        .rtt_min_us
        .filter(|r| *r > 0)
        .map(|r| f64::from(r) / 1e6)
}

/// A goodput at or above this share of a ceiling is "at" that ceiling.
pub const AT_CEILING: f64 = 0.8;
/// A paced run at or above this share of its asked rate delivered it.
pub const AT_ASKED: f64 = 0.95;

/// What a TCP configuration's figures are judged against (medians of its runs).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ceilings {
    pub link_bps: Option<f64>,
    /// The window over the idle RTT, bit/s.
    pub window_bps: Option<f64>,
    pub asked_bps: Option<f64>,
    /// The window over the RTT under load (the senders' mean smoothed RTT), bit/s: what a
    /// window-limited flow meets when a queue lengthens its round trip.
    pub loaded_window_bps: Option<f64>,
    /// Share of time the senders waited for the receiver's window / their own buffer.
    pub rwnd_percent: Option<f64>,
    pub sndbuf_percent: Option<f64>,
}

/// Below this share of window/idle RTT a window-limited flow's share is stated against the
/// window over the RTT under load.
const FULL_WINDOW: f64 = 0.9;

/// The window ceiling a configuration's share is stated against: the window over the idle
/// RTT, or over the RTT under load when the flow is short of the idle one and a queue
/// lengthened its round trip. `None` without a window figure.
pub fn window_ceiling_used(goodput: f64, c: &Ceilings) -> Option<f64> {
    let w = c.window_bps?;
    Some(match c.loaded_window_bps {
        Some(lw) if goodput < FULL_WINDOW * w && lw < w => lw,
        _ => w,
    })
}

/// Held by the receiver's window though short of the link: the senders waited for it most of
/// the time, below 90% of the link; the window and receiver sentences say which (the window in
/// flight, or a receiver that read slower than the path delivered). A trial's autotuned guest
/// (its window stopped at half of `tcp_rmem`'s maximum) at 82% of a 500 Mbit/s path was called
/// link-limited, where raising `tcp_rmem` gave +14.7%; another at 84%, waiting 57% of the time
/// with 84% of its window over the loaded RTT in flight, where `tcp_rmem` gave +16%.
fn held_by_window(goodput: f64, c: &Ceilings) -> bool {
    c.rwnd_percent.is_some_and(|r| r >= 50.0)
        && c.window_bps.is_some()
        && c.link_bps.is_none_or(|l| goodput < FULL_WINDOW * l)
}

/// Which ceiling a TCP configuration met, and the sentence that says it.
pub fn classify(goodput: f64, c: &Ceilings) -> (&'static str, String) {
    use crate::units::BitRate;
    let pct = |x: f64| goodput / x * 100.0;
    if let Some(a) = c.asked_bps.filter(|a| goodput >= AT_ASKED * a) {
        return (
            "asked rate",
            format!(
                "at its asked rate: {:.0}% of the {} it was paced to",
                pct(a),
                BitRate(a)
            ),
        );
    }
    if let Some(l) = c
        .link_bps
        .filter(|l| goodput >= AT_CEILING * l && !held_by_window(goodput, c))
    {
        return (
            "link",
            format!(
                "link-limited at {:.0}% of {}",
                pct(l).min(100.0),
                BitRate(l)
            ),
        );
    }
    let waited = c.rwnd_percent.filter(|r| *r >= 1.0);
    let waiting = waited
        .map(|r| format!(", waiting for the receiver's window {r:.0}% of the time"))
        .unwrap_or_default();
    if let Some(w) = c.window_bps
        && goodput <= w
    {
        // Short of window/idle RTT, yet the window over the RTT the senders measured under
        // load is met: a rate is what is in flight over the round trip (Little's law), so
        // the window was in flight nearly all the time and a queue lengthened the round trip
        // (a trial's 64K run at 78% of window/idle RTT, 92% over its loaded RTT, waiting for
        // the window 49% of the time, was put on the guest).
        let used = window_ceiling_used(goodput, c).unwrap_or(w);
        if goodput >= AT_CEILING * used {
            return (
                "window",
                if used < w {
                    format!(
                        "window-limited at {:.0}% of window/loaded RTT ({}){waiting}; {:.0}% of \
                         window/idle RTT ({}), as the RTT under load was longer than idle",
                        pct(used),
                        BitRate(used),
                        pct(w),
                        BitRate(w)
                    )
                } else {
                    format!(
                        "window-limited at {:.0}% of window/RTT ({}){waiting}",
                        pct(w),
                        BitRate(w)
                    )
                },
            );
        }
        // Held by the window most of the time with the window not in flight: a receiver that
        // read slower than the path delivered.
        if c.rwnd_percent.is_some_and(|r| r >= 50.0) {
            return (
                "receiver",
                format!(
                    "receiver-limited{waiting}, though its window over the RTT allows {} \
                     ({:.0}% used): the receiving host read slower than the path delivered \
                     (its CPU, or its application)",
                    BitRate(w),
                    pct(w)
                ),
            );
        }
    }
    if c.sndbuf_percent.is_some_and(|s| s >= 50.0) {
        return (
            "send buffer",
            format!(
                "limited by the sender's own buffer ({:.0}% of the time)",
                c.sndbuf_percent.unwrap_or(0.0)
            ),
        );
    }
    let mut below = Vec::new();
    if let Some(a) = c.asked_bps {
        below.push(format!("{:.0}% of the {} asked", pct(a), BitRate(a)));
    }
    if let Some(l) = c.link_bps {
        below.push(format!("{:.0}% of the link", pct(l)));
    }
    match c.window_bps {
        Some(w) if goodput > w => {
            return (
                "other",
                format!(
                    "above its window/RTT ({}, {:.0}% of it), so not window-limited: the \
                     receiver's kernel opened a larger window than -w counts (Linux gives a \
                     buffer twice -w and advertises part of the overhead)",
                    BitRate(w),
                    pct(w)
                ),
            );
        }
        Some(w) => below.push(format!("{:.0}% of window/RTT", pct(w))),
        None => {}
    }
    (
        "other",
        if below.is_empty() {
            "no ceiling known (no path rate, no TCP_INFO)".into()
        } else {
            format!(
                "below its ceilings ({}): {}",
                below.join(", "),
                if c.link_bps.is_some() {
                    SOMETHING_ELSE
                } else {
                    SOMETHING_ELSE_OR_THE_PATH
                }
            )
        },
    )
}

/// What limits a flow below every ceiling known.
pub const SOMETHING_ELSE: &str = "something else limits it (CPU, loss, congestion control)";
/// The same where the path's rate is not known: it comes first (a trial's campaign at 99% of
/// its 100 Mbit/s path was put on CPU, loss or congestion control).
pub const SOMETHING_ELSE_OR_THE_PATH: &str = "something else limits it: the path's own rate, \
    which netsweep was not told (explain --rate RATE, or a lab target, says it), or CPU, loss, \
    congestion control";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_by_the_window_below_its_idle_ceiling_is_a_queue_or_a_slow_receiver() {
        let w = 1536.0 * 1024.0 * 8.0 / 0.040;
        let held = |loaded_rtt: f64| Ceilings {
            link_bps: Some(200e6),
            window_bps: Some(w),
            loaded_window_bps: Some(1536.0 * 1024.0 * 8.0 / loaded_rtt),
            rwnd_percent: Some(60.0),
            ..Ceilings::default()
        };
        // 92 Mbit/s with 1.5 MiB in flight: only a 137 ms RTT would explain it by the window.
        let (limit, text) = classify(92e6, &held(0.055));
        assert_eq!(limit, "receiver", "{text}");
        assert!(text.contains("29% used"), "{text}");
        let (limit, text) = classify(92e6, &held(0.130));
        assert_eq!(limit, "window", "{text}");
        assert!(
            text.contains("RTT under load was longer than idle"),
            "{text}"
        );
        // The trial's 64K run: 40.3 Mbit/s on a 100 Mbit/s, 10 ms path, its senders' RTT
        // 11.75 ms under load, waiting for the window 49% of the time.
        let small = Ceilings {
            link_bps: Some(100e6),
            window_bps: Some(65536.0 * 8.0 / 0.010),
            loaded_window_bps: Some(65536.0 * 8.0 / 0.01175),
            rwnd_percent: Some(49.0),
            ..Ceilings::default()
        };
        let (limit, text) = classify(40.3e6, &small);
        assert_eq!(limit, "window", "{text}");
        // Half the window in flight is no window's limit.
        let (limit, text) = classify(22e6, &small);
        assert_eq!(limit, "other", "{text}");
    }

    /// A trial's seeds campaign in TCG guests, 500 Mbit/s and 4 ms: `-w 64K` runs at 77.5
    /// Mbit/s with 64088 bytes advertised, 4.6 ms idle and 6.37 ms loaded, read "window-limited
    /// at 33-65% of window/RTT" (65536 bytes over the lab's 4 ms).
    #[test]
    fn a_window_limited_flow_behind_a_queue_is_stated_against_its_loaded_rtt() {
        let held = Ceilings {
            link_bps: Some(500e6),
            window_bps: Some(64088.0 * 8.0 / 0.0046),
            loaded_window_bps: Some(64088.0 * 8.0 / 0.00637),
            rwnd_percent: Some(85.0),
            ..Ceilings::default()
        };
        assert_eq!(window_ceiling_used(77.5e6, &held), held.loaded_window_bps);
        let (limit, text) = classify(77.5e6, &held);
        assert_eq!(limit, "window", "{text}");
        assert!(
            text.starts_with("window-limited at 96% of window/loaded RTT (80.5 Mbits/sec)")
                && text.contains("; 70% of window/idle RTT (111"),
            "{text}"
        );
        // At its idle ceiling the idle one is the share, alone.
        assert_eq!(window_ceiling_used(108e6, &held), held.window_bps);
        let (_, text) = classify(108e6, &held);
        assert!(
            text.starts_with("window-limited at 97% of window/RTT ("),
            "{text}"
        );
    }

    /// The trial's autotuned guest: its window stopped at 719744 bytes (half of `tcp_rmem`'s
    /// maximum), 396.7 Mbit/s against 420 over the loaded RTT, waiting for the receiver 78% of
    /// the time, on a 500 Mbit/s path: held by the window, not the link, though above 80% of
    /// it. At the link (96%) the link it is.
    #[test]
    fn a_flow_held_by_its_window_short_of_the_link_is_window_limited() {
        let autotuned = |rwnd: f64| Ceilings {
            link_bps: Some(500e6),
            window_bps: Some(719744.0 * 8.0 / 0.0046),
            loaded_window_bps: Some(719744.0 * 8.0 / 0.01369),
            rwnd_percent: Some(rwnd),
            ..Ceilings::default()
        };
        let (limit, text) = classify(396.7e6, &autotuned(78.0));
        assert_eq!(limit, "window", "{text}");
        assert!(text.contains("of window/loaded RTT"), "{text}");
        // At 82% of the link and not waiting for the receiver: the link's share stands.
        assert_eq!(classify(410e6, &autotuned(10.0)).0, "link");
        assert_eq!(classify(410e6, &autotuned(78.0)).0, "window");
        assert_eq!(classify(482e6, &autotuned(78.0)).0, "link");
    }

    #[test]
    fn the_window_a_receiver_advertised_is_the_runs_window() {
        let run = |advertised: Option<u64>, granted: u64| {
            let mut t = crate::traffic::result::unmeasured(&crate::traffic::spec::TestSpec::tcp(
                std::time::Duration::from_secs(1),
            ));
            t.spec.window_bytes = Some(65536);
            let sock = crate::traffic::measure::SocketInfo {
                window_bytes: Some(granted),
                ..Default::default()
            };
            t.start.client_sockets = vec![sock.clone()];
            t.start.server_sockets = vec![sock];
            t.summary.snd_wnd_max_bytes = advertised;
            run_window(&t)
        };
        // A Debian 6.1 guest advertised 64088 bytes for -w 64K; a 6.18 host 81101.
        assert_eq!(
            run(Some(64088), 65536),
            Some((64088, WindowSource::Advertised))
        );
        assert_eq!(
            run(Some(81101), 65536),
            Some((81101, WindowSource::Advertised))
        );
        assert_eq!(run(None, 65536), Some((65536, WindowSource::Asked)));
        // Cut by a kernel's maximum: granted, at what was advertised when known.
        assert_eq!(
            run(Some(31000), 32768),
            Some((31000, WindowSource::Granted))
        );
        assert_eq!(run(None, 32768), Some((32768, WindowSource::Granted)));
    }

    fn c(window: Option<f64>, link: Option<f64>, asked: Option<f64>) -> Ceilings {
        Ceilings {
            link_bps: link,
            window_bps: window,
            asked_bps: asked,
            ..Ceilings::default()
        }
    }

    /// A trial's campaign to an address (no path rate known): 96.5 Mbit/s, 37% of window/RTT,
    /// was put on "CPU, loss, congestion control" on a 100 Mbit/s path.
    #[test]
    fn below_every_known_ceiling_an_unknown_path_rate_comes_first() {
        let w = 1048576.0 * 8.0 / 0.0403;
        let (limit, text) = classify(96.5e6, &c(Some(w), None, None));
        assert_eq!(limit, "other", "{text}");
        assert!(
            text.contains("the path's own rate, which netsweep was not told")
                && text.contains("explain --rate RATE"),
            "{text}"
        );
        let (_, known) = classify(50e6, &c(Some(w), Some(100e6), None));
        assert!(known.ends_with(SOMETHING_ELSE), "{known}");
    }

    #[test]
    fn a_flow_above_its_window_over_the_idle_rtt_is_never_window_limited() {
        // 64 KiB over 40 ms: 13.1 Mbit/s. 11.7 is 89% of it; 16 would be 122%: not the window.
        let w = 65536.0 * 8.0 / 0.040;
        let (limit, text) = classify(11.7e6, &c(Some(w), Some(200e6), None));
        assert_eq!(limit, "window", "{text}");
        assert!(text.starts_with("window-limited at 89%"), "{text}");
        let (limit, text) = classify(16e6, &c(Some(w), Some(200e6), None));
        assert_eq!(limit, "other", "{text}");
        assert!(text.starts_with("above its window/RTT"), "{text}");
        assert!(!text.starts_with("window-limited"), "{text}");
    }

    #[test]
    fn the_link_comes_before_a_window_larger_than_the_path_allows() {
        // 4 MiB over 20 ms is 1.68 Gbit/s: on a 1 Gbit/s path the flow is path-limited.
        let (limit, text) = classify(
            940e6,
            &c(Some(4.0 * 1048576.0 * 8.0 / 0.020), Some(1e9), None),
        );
        assert_eq!(limit, "link", "{text}");
        assert!(
            text.starts_with("link-limited at 94% of 1.00 Gbits/sec"),
            "{text}"
        );
    }

    #[test]
    fn a_paced_tcp_run_is_judged_by_its_asked_rate() {
        let (limit, text) = classify(199e6, &c(Some(1e9), Some(1e9), Some(200e6)));
        assert_eq!(limit, "asked rate", "{text}");
        assert!(
            text.starts_with("at its asked rate: 100% of the 200"),
            "{text}"
        );
        let (limit, text) = classify(100e6, &c(Some(1e9), Some(1e9), Some(200e6)));
        assert_eq!(limit, "other", "{text}");
        assert!(text.contains("50% of the 200 Mbits/sec asked"), "{text}");
    }
}
