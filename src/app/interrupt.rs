//! `-t 0`: the first Ctrl-C ends the test at the end of the interval running, which may be
//! seconds away with a long `-i`; the interrupt is acknowledged on standard error when it is
//! heard, so the user does not press again for want of an answer.

use crate::platform::signals;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A watcher of the process's signals for the length of one test; stops when dropped.
pub(super) struct Heard {
    done: Arc<AtomicBool>,
    watcher: Option<JoinHandle<()>>,
}

impl Heard {
    /// Watches for the first interrupt of a test that runs until one (`until_stopped`).
    pub(super) fn watch(until_stopped: bool, interval: Duration) -> Option<Heard> {
        if !until_stopped {
            return None;
        }
        let done = Arc::new(AtomicBool::new(false));
        let seen = signals::received();
        let watching = done.clone();
        let watcher = std::thread::Builder::new()
            .name("interrupt-notice".into())
            .spawn(move || {
                while !watching.load(Ordering::Relaxed) {
                    if signals::received() > seen {
                        crate::errln!("{}", words(interval));
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
            .ok()?;
        Some(Heard {
            done,
            watcher: Some(watcher),
        })
    }
}

impl Drop for Heard {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// What the first interrupt of a `-t 0` test does, in the user's words.
fn words(interval: Duration) -> String {
    let within = if interval.is_zero() {
        String::new()
    } else {
        format!(" (within {} s)", interval.as_secs_f64())
    };
    format!(
        "netsweep: interrupt: the test ends at the end of the interval running{within}, with \
         both ends' counts; Ctrl-C again stops it at once"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_says_when_the_test_ends_and_how_to_stop_it_at_once() {
        let w = words(Duration::from_secs(10));
        assert!(w.contains("(within 10 s)"), "{w}");
        assert!(w.ends_with("Ctrl-C again stops it at once"), "{w}");
        assert!(!words(Duration::ZERO).contains("within"));
        assert!(Heard::watch(false, Duration::from_secs(1)).is_none());
    }
}
