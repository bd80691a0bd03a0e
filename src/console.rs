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
    if let Ok(mut f) = LOG_FILE.lock() {
        *f = Some(file);
    }
    Ok(())
}

/// iperf3's `-T`/`--title`: the text every line of standard output starts with, and whether
/// the next write starts a line.
static TITLE: std::sync::Mutex<(Option<String>, bool)> = std::sync::Mutex::new((None, true));

/// Starts every later line of standard output with `title` and two spaces, as iperf3's
/// `-T TITLE` does (`None`: no prefix).
pub fn set_title(title: Option<String>) {
    if let Ok(mut t) = TITLE.lock() {
        *t = (title, true);
    }
}

/// `text` with `title:  ` before each line that starts in it; `at_start` says whether the
/// text starts a line, and is left saying whether the next text does.
pub fn titled(title: &str, text: &str, at_start: &mut bool) -> String {
    let mut out = String::with_capacity(text.len() + title.len() + 3);
    for piece in text.split_inclusive('\n') {
        if *at_start {
            out.push_str(title);
            out.push_str(":  ");
        }
        out.push_str(piece);
        *at_start = piece.ends_with('\n');
    }
    out
}

/// Writes to standard output (or the log file); a closed pipe is remembered, not a panic.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    if let Ok(mut t) = TITLE.lock()
        && let (Some(title), at_start) = &mut *t
    {
        let text = titled(title, &args.to_string(), at_start);
        drop(t);
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_title_starts_every_line_as_iperf3s_does() {
        let mut at_start = true;
        let a = super::titled(
            "test1",
            "Connecting to host\n[  5] 0.00-1.00",
            &mut at_start,
        );
        assert_eq!(a, "test1:  Connecting to host\ntest1:  [  5] 0.00-1.00");
        assert!(!at_start);
        let b = super::titled("test1", " sec\n\n", &mut at_start);
        assert_eq!(b, " sec\ntest1:  \n");
        assert!(at_start);
    }
}
