//! Windows the kernels granted smaller than `-w` asked, per configuration, with the limit that
//! cut them and the configurations of the campaign whose runs were granted in full (a profile
//! raising the maxima, say). Pure: reads the sockets each end described in the stored results.
//!
//! On Linux a SO_RCVBUF/SO_SNDBUF request is capped by `net.core.rmem_max`/`wmem_max` unless
//! root forces it (`--window-mode force`); the kernel reports twice what it granted. FreeBSD
//! caps both by `kern.ipc.maxsockbuf` and reports what it granted.

use super::super::store::{ConfigRow, RunRow};
use crate::traffic::measure::SocketInfo;
use crate::traffic::result::TestResult;
use crate::units::Bytes;

/// One configuration whose window was cut.
#[derive(Debug, Clone, PartialEq)]
struct Cut {
    pub configuration: String,
    pub asked: u64,
    /// The window granted (the smallest over its runs and ends), and the end and limit.
    pub granted: u64,
    pub end: &'static str,
    pub limit: String,
}

/// The window one end's buffers allow and the kernel maxima that cut it below `asked`.
fn cut_at(s: &SocketInfo, asked: u64) -> Option<(u64, String)> {
    let window = s.window_bytes?;
    if window >= asked || window == 0 {
        return None;
    }
    // What the end reported per byte of window: 2 on Linux, 1 on FreeBSD.
    let factor = (s.sndbuf_bytes.min(s.rcvbuf_bytes) / window).max(1);
    if factor == 1 {
        return Some((window, "kern.ipc.maxsockbuf".into()));
    }
    let mut caps = Vec::new();
    if s.rcvbuf_bytes / factor < asked {
        caps.push("net.core.rmem_max");
    }
    if s.sndbuf_bytes / factor < asked {
        caps.push("net.core.wmem_max");
    }
    Some((window, caps.join(" and ")))
}

/// The cut of one run, if any: its smallest grant over both ends, and whose kernel granted it
/// (both, when both cut the window to the same size: raising one end's maxima lifts nothing).
fn run_cut(t: &TestResult) -> Option<(u64, &'static str, String)> {
    let asked = t.spec.window_bytes?;
    let ends: Vec<(u64, &'static str, String)> = [
        ("the client's kernel", &t.start.client_sockets),
        ("the server's kernel", &t.start.server_sockets),
    ]
    .into_iter()
    .filter_map(|(end, socks)| {
        let (w, limit) = socks.first().and_then(|s| cut_at(s, asked))?;
        Some((w, end, limit))
    })
    .collect();
    let least = ends.iter().map(|(w, _, _)| *w).min()?;
    let at_least: Vec<&(u64, &'static str, String)> =
        ends.iter().filter(|(w, _, _)| *w == least).collect();
    match at_least.as_slice() {
        [one] => Some((*one).clone()),
        _ => Some((least, "both ends' kernels", at_least[0].2.clone())),
    }
}

/// The stored results of each configuration's successful runs.
pub struct RunsOf<'a>(std::collections::HashMap<&'a str, Vec<&'a TestResult>>);

impl<'a> RunsOf<'a> {
    pub fn new(runs: &'a [RunRow], results: &'a [(i64, TestResult)]) -> RunsOf<'a> {
        let by_id: std::collections::HashMap<i64, &TestResult> =
            results.iter().map(|(id, t)| (*id, t)).collect();
        let mut m: std::collections::HashMap<&str, Vec<&TestResult>> = Default::default();
        for r in runs.iter().filter(|r| r.status == "ok") {
            if let Some(t) = by_id.get(&r.id) {
                m.entry(r.configuration.as_str()).or_default().push(t);
            }
        }
        RunsOf(m)
    }

    pub(super) fn of(&self, label: &str) -> &[&'a TestResult] {
        self.0.get(label).map_or(&[], Vec::as_slice)
    }
}

/// The configurations whose runs were granted less than `-w` asked.
fn cuts(configs: &[ConfigRow], runs_of: &RunsOf<'_>) -> Vec<Cut> {
    configs
        .iter()
        .filter_map(|c| {
            let runs = runs_of.of(&c.label);
            let asked = runs.iter().find_map(|t| t.spec.window_bytes)?;
            let (granted, end, limit) = runs
                .iter()
                .filter_map(|t| run_cut(t))
                .min_by_key(|(w, _, _)| *w)?;
            Some(Cut {
                configuration: c.label.clone(),
                asked,
                granted,
                end,
                limit,
            })
        })
        .collect()
}

/// The answer's sentences: per cut configuration, what was asked and granted, the limit, and
/// the configurations that differ from it in one dimension and were granted in full ("profile
/// = bigmax lifts it").
pub fn words(configs: &[ConfigRow], runs_of: &RunsOf<'_>) -> Vec<String> {
    said(&cuts(configs, runs_of), configs, &|label, asked| {
        in_full(runs_of.of(label), asked)
    })
}

/// `granted_in_full(label, asked)`: that configuration's runs asked `asked` and got it.
fn said(
    cuts: &[Cut],
    configs: &[ConfigRow],
    granted_in_full: &dyn Fn(&str, u64) -> bool,
) -> Vec<String> {
    cuts.iter()
        .filter_map(|cut| {
            let me = configs.iter().find(|c| c.label == cut.configuration)?;
            let lifts: Vec<String> = configs
                .iter()
                .filter(|o| o.label != me.label && granted_in_full(&o.label, cut.asked))
                .filter_map(|o| one_difference(&me.dims, &o.dims))
                .collect();
            let lift = if lifts.is_empty() {
                String::new()
            } else {
                format!("; {} lets it through (granted in full)", lifts.join(", "))
            };
            Some(format!(
                "{}: -w asked {} but {} granted a window of {} (capped by {}), so \
                 its runs measured {}{lift}",
                cut.configuration,
                Bytes(cut.asked),
                cut.end,
                Bytes(cut.granted),
                cut.limit,
                Bytes(cut.granted)
            ))
        })
        .collect()
}

/// Configurations some of whose runs' receivers never opened the window their buffers allow
/// (`traffic::result::checks::unopened_windows`): what they measured was a smaller window.
pub fn unopened(configs: &[ConfigRow], runs_of: &RunsOf<'_>) -> Vec<String> {
    configs
        .iter()
        .filter_map(|c| {
            let runs = runs_of.of(&c.label);
            let hit: Vec<String> = runs
                .iter()
                .filter_map(|t| {
                    crate::traffic::result::checks::unopened_windows(
                        &t.spec,
                        &t.start,
                        &t.directions,
                    )
                    .into_iter()
                    .next()
                })
                .collect();
            let first = hit.first()?;
            Some(format!(
                "{}: in {} of its {} runs {first}",
                c.label,
                hit.len(),
                runs.len()
            ))
        })
        .collect()
}

/// "profile=bigmax" when `b` differs from `a` in exactly one dimension.
fn one_difference(a: &[(String, String)], b: &[(String, String)]) -> Option<String> {
    if a.len() != b.len() {
        return None;
    }
    let diff: Vec<&(String, String)> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x != y)
        .map(|(_, y)| y)
        .collect();
    match diff.as_slice() {
        [(k, v)] => Some(format!("{k}={v}")),
        _ => None,
    }
}

/// Every run of a configuration asked `want` and was granted it, at both ends.
fn in_full(runs: &[&TestResult], want: u64) -> bool {
    !runs.is_empty()
        && runs.iter().all(|t| {
            t.spec.window_bytes.is_some_and(|asked| {
                asked == want
                    && t.start
                        .client_sockets
                        .iter()
                        .chain(&t.start.server_sockets)
                        .all(|s| s.window_bytes.is_none_or(|w| w >= asked))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux(asked: u64, cap: u64) -> SocketInfo {
        let granted = asked.min(cap);
        SocketInfo {
            sndbuf_bytes: 2 * granted,
            rcvbuf_bytes: 2 * granted,
            window_bytes: Some(granted),
            ..SocketInfo::default()
        }
    }

    #[test]
    fn a_linux_cap_between_half_and_all_of_the_window_is_a_cut_and_named() {
        // Debian's rmem_max (212992) under -w 256K: reported 425984, more than asked, yet cut.
        let s = linux(262144, 212992);
        assert_eq!(
            cut_at(&s, 262144),
            Some((212992, "net.core.rmem_max and net.core.wmem_max".into()))
        );
        assert_eq!(cut_at(&linux(65536, 212992), 65536), None);
        let freebsd = SocketInfo {
            sndbuf_bytes: 2097152,
            rcvbuf_bytes: 2097152,
            window_bytes: Some(2097152),
            ..SocketInfo::default()
        };
        assert_eq!(
            cut_at(&freebsd, 4 << 20),
            Some((2097152, "kern.ipc.maxsockbuf".into()))
        );
    }

    /// Regression (a trial's finding): both ends cut to 208 KBytes read "the client's
    /// kernel granted", and a user raising the client's maxima alone would gain nothing.
    #[test]
    fn a_cut_at_both_ends_names_both_and_one_end_alone_names_it() {
        let mut t = crate::traffic::result::unmeasured(&crate::traffic::spec::TestSpec::tcp(
            std::time::Duration::from_secs(1),
        ));
        t.spec.window_bytes = Some(1536 << 10);
        t.start.client_sockets = vec![linux(1536 << 10, 212992)];
        t.start.server_sockets = vec![linux(1536 << 10, 212992)];
        let (w, end, _) = run_cut(&t).expect("a cut");
        assert_eq!((w, end), (212992, "both ends' kernels"));
        t.start.client_sockets = vec![linux(1536 << 10, 4 << 20)];
        let (_, end, limit) = run_cut(&t).expect("a cut");
        assert_eq!(end, "the server's kernel");
        assert_eq!(limit, "net.core.rmem_max and net.core.wmem_max");
        t.start.server_sockets = vec![linux(1536 << 10, 4 << 20)];
        assert_eq!(run_cut(&t), None);
    }

    #[test]
    fn the_configuration_one_dimension_away_that_was_granted_in_full_is_named() {
        let row = |label: &str, dims: &[(&str, &str)]| ConfigRow {
            id: 0,
            position: 0,
            label: label.into(),
            dims: dims
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            resolved: None,
        };
        let configs = vec![
            row(
                "window=1536K profile=default",
                &[("window", "1536K"), ("profile", "default")],
            ),
            row(
                "window=1536K profile=bigmax",
                &[("window", "1536K"), ("profile", "bigmax")],
            ),
            row(
                "window=64K profile=bigmax",
                &[("window", "64K"), ("profile", "bigmax")],
            ),
        ];
        let cut = Cut {
            configuration: configs[0].label.clone(),
            asked: 1536 << 10,
            granted: 212992,
            end: "the server's kernel",
            limit: "net.core.rmem_max".into(),
        };
        let w = said(&[cut], &configs, &|l, asked| {
            l.contains("bigmax") && l.contains(&format!("window={}K", asked >> 10))
        });
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("window=1536K profile=default: -w asked 1.50 MBytes but the server's kernel granted a window of 208 KBytes (capped by net.core.rmem_max)"),
            "{}",
            w[0]
        );
        assert!(
            w[0].ends_with("; profile=bigmax lets it through (granted in full)"),
            "{}",
            w[0]
        );
    }
}
