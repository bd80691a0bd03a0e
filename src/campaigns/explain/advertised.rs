//! Whether one `-w` was advertised alike across the configurations compared. Linux sizes the
//! window it advertises from `-w`'s receive buffer by a ratio it learns from the arriving
//! packets, anywhere from 1x to 2x `-w`, and kernels differ: a trial's `-w 64K` was advertised
//! as 79.2 KBytes by a 6.18 host and 62.6 KBytes by a 6.1 guest, and a direction sweep between
//! them read "reverse is faster by 27.6%" where the windows were 1.27x apart. `--window-mode
//! clamp` holds each receiver's window at `-w` exactly.

use super::grants::RunsOf;
use super::trust::Flag;
use crate::analysis::stats::describe::{median_sorted, sorted};
use crate::campaigns::store::ConfigRow;
use crate::traffic::result::TestResult;
use crate::traffic::spec::{Direction, WindowMode};
use crate::units::Bytes;

/// Advertised windows of one `-w` further apart than this are flagged (run-to-run the largest
/// advertised window of one configuration varies by a few percent).
const APART: f64 = 1.10;

/// A run's `-w` per stream and the largest window its receivers advertised, per stream, when
/// `-w` was granted in full and not clamped (a clamp holds it; a cut is `grants`' to say).
fn advertised(t: &TestResult) -> Option<(u64, f64)> {
    let asked = t.spec.window_bytes?;
    if t.spec.window_mode == WindowMode::Clamp {
        return None;
    }
    let receivers = match t.spec.direction {
        Direction::Forward => &t.start.server_sockets,
        Direction::Reverse => &t.start.client_sockets,
        Direction::Bidir => return None,
    };
    if receivers.is_empty() || receivers.iter().any(|s| s.window_bytes != Some(asked)) {
        return None;
    }
    let seen = t.summary.snd_wnd_max_bytes.filter(|b| *b > 0)?;
    Some((asked, seen as f64 / f64::from(t.spec.streams.max(1))))
}

/// A configuration, its `-w` and the median window its receivers advertised, per stream.
type Seen<'a> = (&'a ConfigRow, u64, f64);

/// A flag when configurations of one `-w` had their windows advertised more than `APART`
/// apart: the widest pair named.
pub fn flag(configs: &[ConfigRow], runs_of: &RunsOf<'_>) -> Option<Flag> {
    let each: Vec<Seen> = configs
        .iter()
        .filter_map(|c| {
            let runs: Vec<(u64, f64)> = runs_of
                .of(&c.label)
                .iter()
                .filter_map(|t| advertised(t))
                .collect();
            let asked = runs.first()?.0;
            if runs.iter().any(|(w, _)| *w != asked) {
                return None;
            }
            let seen: Vec<f64> = runs.iter().map(|(_, s)| *s).collect();
            Some((c, asked, median_sorted(&sorted(&seen))))
        })
        .collect();
    let mut widest: Option<(&Seen, &Seen)> = None;
    for (i, a) in each.iter().enumerate() {
        for b in &each[i + 1..] {
            if a.1 != b.1 {
                continue;
            }
            let (lo, hi) = if a.2 <= b.2 { (a, b) } else { (b, a) };
            let ratio = hi.2 / lo.2;
            if ratio > APART && widest.is_none_or(|(l, h)| ratio > h.2 / l.2) {
                widest = Some((lo, hi));
            }
        }
    }
    let (lo, hi) = widest?;
    Some(Flag {
        kind: "advertised window".into(),
        runs: Vec::new(),
        configurations: vec![hi.0.label.clone(), lo.0.label.clone()],
        serious: true,
        text: format!(
            "CAUTION: the same -w {} was advertised as {} in {} and {} in {} ({:.2}x: the \
             receiving kernels size the window from -w's buffer each their own way, 1x to 2x \
             it): a difference between them is also their windows'; `window_mode = \"clamp\"` \
             in the plan's [test] (--window-mode clamp) holds each receiver's window at -w",
            Bytes(lo.1),
            Bytes(hi.2 as u64),
            hi.0.label,
            Bytes(lo.2 as u64),
            lo.0.label,
            hi.2 / lo.2
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaigns::explain::tests::direction_sweep;
    use crate::traffic::measure::SocketInfo;

    fn result(direction: Direction, mode: WindowMode, advertised: u64) -> TestResult {
        let mut t = crate::traffic::result::unmeasured(&crate::traffic::spec::TestSpec::tcp(
            std::time::Duration::from_secs(1),
        ));
        t.spec.direction = direction;
        t.spec.window_mode = mode;
        t.spec.window_bytes = Some(65536);
        let sock = SocketInfo {
            window_bytes: Some(65536),
            ..SocketInfo::default()
        };
        t.start.client_sockets = vec![sock.clone()];
        t.start.server_sockets = vec![sock];
        t.summary.snd_wnd_max_bytes = Some(advertised);
        t
    }

    /// The trial's direction sweep: 62.6 KB forward (a 6.1 guest receiving), 79.2 KB reverse.
    #[test]
    fn one_window_advertised_differently_by_two_kernels_is_flagged_unless_clamped() {
        let (configs, rows) = direction_sweep();
        let with = |mode: WindowMode, forward: u64, reverse: u64| {
            vec![
                (1, result(Direction::Forward, mode, forward)),
                (2, result(Direction::Reverse, mode, reverse)),
            ]
        };
        let results = with(WindowMode::Force, 64102, 81101);
        let f = flag(&configs, &RunsOf::new(&rows, &results)).expect("flagged");
        assert!(
            f.text.contains(
                "the same -w 64.0 KBytes was advertised as 79.2 KBytes in direction=reverse and \
                 62.6 KBytes in direction=forward (1.27x"
            ),
            "{}",
            f.text
        );
        // Within 10% of each other, or clamped: nothing to say.
        let near = with(WindowMode::Force, 64102, 66000);
        assert_eq!(flag(&configs, &RunsOf::new(&rows, &near)), None);
        let clamped = with(WindowMode::Clamp, 64102, 81101);
        assert_eq!(flag(&configs, &RunsOf::new(&rows, &clamped)), None);
    }
}
