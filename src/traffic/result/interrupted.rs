//! A test the command line's first interrupt ended early, at the end of the interval running
//! (`TestResult::interrupted`): what its result has to say beside its figures.

use serde::{Deserialize, Serialize};

/// What an interrupt that ended a test early at an interval's end leaves to say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interrupted {
    /// The test's time as asked.
    pub asked_s: f64,
}

impl Interrupted {
    /// The warning the result carries, given the measured seconds that ran.
    pub fn sentence(&self, ran_s: f64) -> String {
        format!(
            "interrupted: the test ended at the end of the interval running, {ran_s} s of the {} s \
             asked, with both ends' counts",
            self.asked_s
        )
    }
}
