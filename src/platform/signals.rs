//! Platform leaf: turns SIGINT, SIGTERM and SIGHUP into a flag that long-running commands poll,
//! so an interrupted client prints what it measured and a server stops cleanly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Signals heard so far: two presses of Ctrl-C a starved process reads at once are two, where
/// the flag holds one.
static HEARD: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    // Only lock-free atomics: async-signal-safe.
    HEARD.fetch_add(1, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// The signals heard from a moment on: two a starved process reads at once (a busy host) are
/// a second interrupt, where the flag alone holds one (CI saw a client pressed twice end as if
/// pressed once).
pub struct Presses(usize);

impl Presses {
    pub fn from_now() -> Presses {
        Presses(HEARD.load(Ordering::SeqCst))
    }

    /// Signals heard since `from_now`.
    pub fn count(&self) -> usize {
        HEARD.load(Ordering::SeqCst).saturating_sub(self.0)
    }

    /// Takes a raised `stop` as a first interrupt: lowers it, so a second raises it again,
    /// and says true. False, `stop` left raised, when two were heard already (or the second
    /// came as it went down).
    pub fn take_first(&self, stop: &AtomicBool) -> bool {
        if self.count() >= 2 {
            return false;
        }
        stop.store(false, Ordering::SeqCst);
        if self.count() >= 2 {
            stop.store(true, Ordering::SeqCst);
        }
        true
    }
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
