//! Whether the configurations' runs were interleaved in time. Runs of one configuration made
//! in one session and another's in a later one (a sequential plan, or iperf3 results imported
//! from a "before" and an "after" session) differ by whatever else changed between the
//! sessions, which no test on the runs can tell from the change: a trial's simulation of
//! before/after sessions 3% apart at random, no true effect, called 33 of 100 "different".
//! Interleaved rounds are what separates the two (Box, Hunter and Hunter, *Statistics for
//! Experimenters*, ch. 4: randomization and blocking).

use super::trust::Flag;
use crate::campaigns::store::RunRow;

/// A flag when some configuration's runs all started before another's first: the pairs named.
/// Only configurations with two or more distinct start times are judged (runs imported by an
/// older version carry the import's time, one for a whole batch).
pub fn flag(ok: &[&RunRow]) -> Option<Flag> {
    // Each configuration's first and last start, in the order they were first seen.
    let mut spans: Vec<(String, f64, f64, Vec<i64>)> = Vec::new();
    for r in ok {
        let Some(t) = r.started_unix.filter(|t| t.is_finite()) else {
            continue;
        };
        match spans.iter_mut().find(|s| s.0 == r.configuration) {
            Some(s) => {
                s.1 = s.1.min(t);
                s.2 = s.2.max(t);
                s.3.push(r.id);
            }
            None => spans.push((r.configuration.clone(), t, t, vec![r.id])),
        }
    }
    spans.retain(|s| s.2 > s.1);
    spans.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut apart = Vec::new();
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.2 < b.1 {
                apart.push((a, b));
            }
        }
    }
    if apart.is_empty() {
        return None;
    }
    let shown: Vec<String> = apart
        .iter()
        .take(3)
        .map(|(a, b)| format!("every run of {} started before the first of {}", a.0, b.0))
        .collect();
    let more = apart.len().saturating_sub(shown.len());
    let mut configurations: Vec<String> = Vec::new();
    let mut runs: Vec<i64> = Vec::new();
    for (a, b) in &apart {
        for s in [a, b] {
            if !configurations.contains(&s.0) {
                configurations.push(s.0.clone());
                runs.extend(&s.3);
            }
        }
    }
    Some(Flag {
        kind: "sessions".into(),
        runs,
        configurations,
        serious: true,
        text: format!(
            "CAUTION: the runs were not interleaved: {}{}: a difference between the sessions \
             (the hosts, the path, the hour) cannot be told from a difference between the \
             configurations; runs that alternate can (a campaign's interleaved rounds: \
             netsweep run)",
            shown.join("; "),
            if more > 0 {
                format!(" (and {more} more pairs)")
            } else {
                String::new()
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of configuration "s=VALUE" that started at `t`.
    fn run(id: i64, value: &str, t: Option<f64>) -> RunRow {
        RunRow {
            started_unix: t,
            ..crate::campaigns::explain::tests::run(id, &[("s", value)], 0, Some(1e9))
        }
    }

    fn flag_of(runs: &[RunRow]) -> Option<Flag> {
        flag(&runs.iter().collect::<Vec<_>>())
    }

    #[test]
    fn sessions_one_after_the_other_are_flagged_and_interleaved_runs_are_not() {
        let t = |s: f64| Some(1.8e9 + s);
        // Before at 0, 10, 20 s; after at 100, 110, 120 s.
        let apart = [
            run(1, "before", t(0.0)),
            run(2, "before", t(10.0)),
            run(3, "before", t(20.0)),
            run(4, "after", t(100.0)),
            run(5, "after", t(110.0)),
            run(6, "after", t(120.0)),
        ];
        let f = flag_of(&apart).expect("flagged");
        assert!(f.serious);
        assert!(
            f.text
                .contains("every run of s=before started before the first of s=after"),
            "{}",
            f.text
        );
        assert_eq!(f.runs, vec![1, 2, 3, 4, 5, 6]);
        // Alternating runs: spans overlap.
        let interleaved = [
            run(1, "before", t(0.0)),
            run(2, "after", t(10.0)),
            run(3, "before", t(20.0)),
            run(4, "after", t(30.0)),
        ];
        assert_eq!(flag_of(&interleaved), None);
        // Runs stored with one time per batch (an older import): not judged.
        let batches = [
            run(1, "before", t(0.0)),
            run(2, "before", t(0.0)),
            run(3, "after", t(50.0)),
            run(4, "after", t(50.0)),
        ];
        assert_eq!(flag_of(&batches), None);
        let untimed = [run(1, "a", None), run(2, "b", None)];
        assert_eq!(flag_of(&untimed), None);
    }
}
