//! Platform leaf: turns SIGINT, SIGTERM and SIGHUP into a flag that long-running commands poll,
//! so an interrupted client prints what it measured and a server stops cleanly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Signals received: the flag can be taken down by whoever acted on it, the count cannot.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    // Only lock-free atomics: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
    RECEIVED.fetch_add(1, Ordering::SeqCst);
}

/// Installs the handlers and returns the flag they raise.
pub fn install() -> &'static AtomicBool {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
    &INTERRUPTED
}

/// The flag, without installing handlers.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// How many of the signals above arrived since the handlers were installed.
pub fn received() -> usize {
    RECEIVED.load(Ordering::SeqCst)
}
