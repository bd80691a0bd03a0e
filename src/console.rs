//! Standard output and standard error for commands. `println!` panics when the reader has gone
//! (`netsweep export | head`, `netsweep tune show | head`); these macros drop the text instead
//! and remember that the reader left, so a command still finishes its work and its cleanup
//! (restoring sysctls, removing a lab) and exits normally.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Where standard output goes instead, with `--logfile`.
static LOG_FILE: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// Sends what would go to standard output to `path` (appended, as iperf3's `--logfile`). A
/// symbolic link there is refused, not followed (`O_NOFOLLOW`), and so is anything but a
/// regular file: a FIFO would block the test until someone read it (opened without blocking,
/// then checked).
pub fn log_to(path: &std::path::Path) -> std::io::Result<()> {
    set_log(open_log(path)?);
    Ok(())
}

/// Opens `path` as `log_to` does (appended; a symbolic link, FIFO or device refused).
pub fn open_log(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link: netsweep does not write through one; give the file itself",
            ),
            Some(libc::ENXIO) => std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a FIFO with no reader: give a regular file",
            ),
            _ => e,
        })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO or device): give a regular file",
        ));
    }
    Ok(file)
}

/// Sends what would go to standard output to `file` from now on.
pub fn set_log(file: std::fs::File) {
    if let Ok(mut f) = LOG_FILE.lock() {
        *f = Some(file);
    }
}

/// iperf3's `-T`/`--title` and `--timestamps`: the title and the time format every line of
/// standard output starts with, and whether the next write starts a line.
struct Prefix {
    title: Option<String>,
    timestamps: Option<String>,
    at_start: bool,
}

static PREFIX: std::sync::Mutex<Prefix> = std::sync::Mutex::new(Prefix {
    title: None,
    timestamps: None,
    at_start: true,
});

/// Starts every later line of standard output with `title` and two spaces, as iperf3's
/// `-T TITLE` does (`None`: no prefix).
pub fn set_title(title: Option<String>) {
    if let Ok(mut p) = PREFIX.lock() {
        (p.title, p.at_start) = (title, true);
    }
}

/// Starts every later line of standard output with the local time in strftime(3)'s `format`,
/// as iperf3's `--timestamps[=FORMAT]` does (its default: `"%c "`); before the title, as
/// iperf3 prints them. `None`: no time.
pub fn set_timestamps(format: Option<String>) {
    if let Ok(mut p) = PREFIX.lock() {
        p.timestamps = format;
    }
}

/// `line` after the time, when `--timestamps` asked for it (for standard error's lines, which
/// a server's log is).
pub fn stamped(line: &str) -> String {
    match PREFIX.lock().ok().and_then(|p| p.timestamps.clone()) {
        Some(format) => format!("{}{line}", local_time(&format)),
        None => line.to_string(),
    }
}

/// The local time now in strftime(3)'s `format`: libc's own, so `%c` and the other locale
/// conversions print what iperf3's (which calls the same function) prints; empty when the
/// format holds a NUL or its result is over 256 bytes.
pub fn local_time(format: &str) -> String {
    let Ok(format) = std::ffi::CString::new(format) else {
        return String::new();
    };
    let mut buf = [0u8; 256];
    // SAFETY: time(NULL) has no preconditions; localtime_r writes into our `tm`; strftime
    // writes at most `buf.len()` bytes into `buf` and reads the NUL-terminated format.
    let n = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return String::new();
        }
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), &tm)
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// `text` with `prefix` before each line that starts in it; `at_start` says whether the
/// text starts a line, and is left saying whether the next text does.
pub fn prefixed(prefix: &str, text: &str, at_start: &mut bool) -> String {
    let mut out = String::with_capacity(text.len() + prefix.len());
    for piece in text.split_inclusive('\n') {
        if *at_start {
            out.push_str(prefix);
        }
        out.push_str(piece);
        *at_start = piece.ends_with('\n');
    }
    out
}

/// Writes to standard output (or the log file); a closed pipe is remembered, not a panic.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    if let Ok(mut p) = PREFIX.lock()
        && (p.title.is_some() || p.timestamps.is_some())
    {
        let mut prefix = p.timestamps.as_deref().map(local_time).unwrap_or_default();
        if let Some(title) = &p.title {
            prefix.push_str(title);
            prefix.push_str(":  ");
        }
        let text = prefixed(&prefix, &args.to_string(), &mut p.at_start);
        drop(p);
        return write_plain(format_args!("{text}"));
    }
    write_plain(args);
}

fn write_plain(args: std::fmt::Arguments<'_>) {
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

/// Whether messages for standard error go to the `--logfile` too (`errors_to_log`).
static ERRORS_TO_LOG: AtomicBool = AtomicBool::new(false);

/// With `--logfile` and text output, errors and warnings go to the log instead of standard
/// error, as iperf3 writes its errors there (a test run from cron leaves its reason in the
/// log). A JSON log keeps one document: its messages stay on standard error.
pub fn errors_to_log(on: bool) {
    ERRORS_TO_LOG.store(on, Ordering::Relaxed);
}

/// Writes to standard error (or the log, `errors_to_log`); failures are ignored (there is
/// nowhere left to say them).
pub fn write_err(args: std::fmt::Arguments<'_>) {
    if ERRORS_TO_LOG.load(Ordering::Relaxed)
        && let Ok(mut guard) = LOG_FILE.lock()
        && let Some(f) = guard.as_mut()
    {
        let _ = f.write_fmt(args);
        return;
    }
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// How the line of a failure begins (`failure_prefix`): netsweep's "netsweep: ", or iperf3's
/// "iperf3: error - " under iperf3's command line (`set_failure_prefix`).
static FAILURE_PREFIX: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Makes failures begin as iperf3's do under its command line ("iperf3: error - unable to
/// connect to server: ..."), which wrappers of iperf3 match; `program` is the name run.
pub fn set_failure_prefix(program: &str) {
    if let Ok(mut p) = FAILURE_PREFIX.lock() {
        *p = Some(format!("{program}: error - "));
    }
}

/// The start of a failure's line: "netsweep: ", or what `set_failure_prefix` made it.
pub fn failure_prefix() -> String {
    FAILURE_PREFIX
        .lock()
        .ok()
        .and_then(|p| p.clone())
        .unwrap_or_else(|| "netsweep: ".to_string())
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_title_starts_every_line_as_iperf3s_does() {
        let mut at_start = true;
        let a = super::prefixed(
            "test1:  ",
            "Connecting to host\n[  5] 0.00-1.00",
            &mut at_start,
        );
        assert_eq!(a, "test1:  Connecting to host\ntest1:  [  5] 0.00-1.00");
        assert!(!at_start);
        let b = super::prefixed("test1:  ", " sec\n\n", &mut at_start);
        assert_eq!(b, " sec\ntest1:  \n");
        assert!(at_start);
    }

    /// `--timestamps`: strftime(3)'s conversions, read back against the clock.
    #[test]
    fn the_local_time_follows_strftimes_format() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let epoch: u64 = super::local_time("%s").parse().expect("%s is a number");
        assert!(
            epoch >= before && epoch <= before + 2,
            "{epoch} against {before}"
        );
        assert_eq!(super::local_time("[%%] "), "[%] ");
        let year = super::local_time("%Y");
        assert!(year.len() == 4 && year.parse::<u32>().is_ok(), "{year}");
        // A NUL cannot reach strftime; the prefix is then empty, not cut short.
        assert_eq!(super::local_time("a\0b"), "");
    }
}
