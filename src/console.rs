//! Standard output and standard error for commands. `println!` panics when the reader has gone
//! (`netsweep export | head`, `netsweep tune show | head`); these macros drop the text instead
//! and remember that the reader left, so a command still finishes its work and its cleanup
//! (restoring sysctls, removing a lab) and exits normally.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Where standard output goes instead, with `--logfile`.
static LOG_FILE: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// Sends what would go to standard output to `path` (appended, as iperf3's `--logfile`).
pub fn log_to(path: &std::path::Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    if let Ok(mut f) = LOG_FILE.lock() {
        *f = Some(file);
    }
    Ok(())
}

/// Writes to standard output (or the log file); a closed pipe is remembered, not a panic.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    if let Ok(mut guard) = LOG_FILE.lock()
        && let Some(f) = guard.as_mut()
    {
        let _ = f.write_fmt(args);
        return;
    }
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).and_then(|_| out.flush()).is_err() {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Writes to standard error; failures are ignored (there is nowhere left to say them).
pub fn write_err(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// True once standard output's reader has gone.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// `print!` that survives a closed pipe.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::console::write_out(format_args!($($t)*)) };
}

/// `println!` that survives a closed pipe.
#[macro_export]
macro_rules! outln {
    () => { $crate::console::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` that survives a closed standard error.
#[macro_export]
macro_rules! errln {
    ($($t:tt)*) => { $crate::console::write_err(format_args!("{}\n", format_args!($($t)*))) };
}
