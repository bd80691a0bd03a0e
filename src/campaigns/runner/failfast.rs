//! Failing fast: a configuration whose runs fail the same way in two consecutive rounds (the
//! same error text once its numbers are set aside) will fail that way again, so the runner
//! skips it for the rest of the campaign, says why once, and goes on with the others. When
//! every configuration is skipped the campaign stops. Pure bookkeeping; `runner` stores the
//! skips (`Store::skip_configuration`) so `--resume` can retry them after a fix.

use std::collections::HashMap;

/// A run's error with every number replaced by `#`: "connect 198.18.0.2:5310 after 3.1 s" and
/// "connect 198.18.0.2:5311 after 3.4 s" fail the same way.
pub fn normalise(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    let mut in_number = false;
    for c in error.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// A configuration to skip from now on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The configuration's position in the campaign.
    pub position: usize,
    /// Why, for the user: the rounds and the (last) error as it was.
    pub reason: String,
}

/// The last failure of each configuration, and the configurations skipped.
#[derive(Debug, Default)]
pub struct FailFast {
    /// Position -> (round, normalised error) of its last run, while that run failed.
    last_failure: HashMap<usize, (u32, String)>,
    skipped: HashMap<usize, String>,
}

impl FailFast {
    /// Whether the configuration at `position` is skipped.
    pub fn is_skipped(&self, position: usize) -> bool {
        self.skipped.contains_key(&position)
    }

    /// How many configurations are skipped.
    pub fn skipped_count(&self) -> usize {
        self.skipped.len()
    }

    /// Notes one finished run; returns the skip when this failure repeats the configuration's
    /// failure of the round before.
    pub fn record(&mut self, position: usize, round: u32, error: Option<&str>) -> Option<Skip> {
        let Some(error) = error else {
            self.last_failure.remove(&position);
            return None;
        };
        let norm = normalise(error);
        let repeats = self
            .last_failure
            .get(&position)
            .is_some_and(|(r, e)| r + 1 == round && *e == norm);
        self.last_failure.insert(position, (round, norm));
        if !repeats || self.is_skipped(position) {
            return None;
        }
        let reason = format!(
            "its runs failed the same way in rounds {round} and {}: {error}",
            round + 1
        );
        self.skipped.insert(position, reason.clone());
        Some(Skip { position, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_do_not_make_two_failures_different() {
        assert_eq!(
            normalise("connect 198.18.0.2:5310 timed out after 3.1 s"),
            "connect #.#.#.#:# timed out after #.# s"
        );
        assert_eq!(
            normalise("Permission denied (os error 13)"),
            normalise("Permission denied (os error 13)")
        );
        assert_ne!(normalise("Permission denied"), normalise("No such file"));
    }

    #[test]
    fn two_consecutive_rounds_failing_the_same_way_skip_once() {
        let mut f = FailFast::default();
        assert_eq!(f.record(0, 0, Some("refused on port 5310")), None);
        assert_eq!(f.record(1, 0, None), None);
        let skip = f.record(0, 1, Some("refused on port 5311")).unwrap();
        assert_eq!(skip.position, 0);
        assert!(
            skip.reason.contains("rounds 1 and 2: refused on port 5311"),
            "{}",
            skip.reason
        );
        assert!(f.is_skipped(0) && !f.is_skipped(1));
        // Said once.
        assert_eq!(f.record(0, 2, Some("refused on port 5312")), None);
        assert_eq!(f.skipped_count(), 1);
    }

    #[test]
    fn a_different_error_a_success_between_or_a_gap_does_not_skip() {
        let mut f = FailFast::default();
        f.record(0, 0, Some("Permission denied"));
        assert_eq!(f.record(0, 1, Some("No route to host")), None);
        f.record(1, 0, Some("boom"));
        f.record(1, 1, None);
        assert_eq!(f.record(1, 2, Some("boom")), None);
        f.record(2, 0, Some("boom"));
        assert_eq!(
            f.record(2, 2, Some("boom")),
            None,
            "rounds 1 and 3 are not consecutive"
        );
        assert_eq!(f.skipped_count(), 0);
    }
}
