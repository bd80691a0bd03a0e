//! Platform leaf: turns SIGINT, SIGTERM and SIGHUP into a flag that long-running commands poll,
//! so an interrupted client prints what it measured and a server stops cleanly.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
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
