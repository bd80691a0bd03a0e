//! Counting a server's ended tests: callers that serve a set number of tests (`-1`, a
//! pScheduler server participant) stop when it is reached.

use std::sync::atomic::Ordering;

/// How many admitted tests have ended, and how (`run_observed`): pScheduler's server
/// participant and `netsweep server -1` stop after their one test.
#[derive(Debug, Default)]
pub struct Served {
    pub ok: std::sync::atomic::AtomicU64,
    pub failed: std::sync::atomic::AtomicU64,
}

impl Served {
    /// Tests ended either way.
    pub fn ended(&self) -> u64 {
        self.ok.load(Ordering::SeqCst) + self.failed.load(Ordering::SeqCst)
    }
}

/// Counts one admitted test in `Served` when it ends, as failed unless `ok` was set.
pub(super) struct Ending<'a> {
    pub(super) served: &'a Served,
    pub(super) ok: bool,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        let c = if self.ok {
            &self.served.ok
        } else {
            &self.served.failed
        };
        c.fetch_add(1, Ordering::SeqCst);
    }
}
