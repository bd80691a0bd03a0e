//! What netsweep reads from outside, made safe before it is used: files a user names (plans,
//! profiles, number files, libvirt XML) are read up to a size cap; kernel pseudo-files under a
//! `/proc` or `/sys` root are read only if they are regular files (a FIFO or a link to
//! `/dev/zero` in a fixture tree is refused, not waited on or read for ever); paths netsweep
//! opens for its own files (a store, its lock) are refused at once when they are not regular
//! files (`refuse_special`); and text from a
//! peer or a file is escaped before it reaches a terminal or a log.
//!
//! Called by `app` (user files), `doctor`, `hostfacts` and `counters` (pseudo-files), and by
//! `protocol` and `output` (peer text).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Largest plan, profile or libvirt XML file read.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;
/// Largest file of numbers `netsweep stats` reads (ministat reads any; 40 million values fit).
pub const MAX_NUMBERS_BYTES: u64 = 512 << 20;
/// Largest kernel pseudo-file read (`/proc/cpuinfo` of a 512-core host is about 1 MiB).
pub const MAX_PSEUDO_BYTES: u64 = 8 << 20;
/// Longest peer string shown (refusal reasons, error messages), in characters.
pub const MAX_PEER_TEXT: usize = 500;

fn too_large(what: &str, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{what} is larger than {} MiB, the most netsweep reads",
            cap >> 20
        ),
    )
}

/// Reads all of `reader` as UTF-8 text, failing once more than `cap` bytes arrive (memory is
/// committed as bytes arrive, never from a size someone announced).
pub fn read_capped(reader: impl Read, cap: u64, what: &str) -> io::Result<String> {
    let mut buf = Vec::new();
    reader.take(cap.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > cap {
        return Err(too_large(what, cap));
    }
    String::from_utf8(buf).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{what} is not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// How long a FIFO a user named as an input may wait for its first byte before netsweep gives
/// up on it: a named FIFO that nobody writes to would otherwise hold the command for ever.
pub const FIFO_WRITER_WAIT: Duration = Duration::from_secs(10);

/// Reads a file a user named, up to `cap` bytes: a regular file, a pipe or FIFO (`<(cmd)`
/// included) or a terminal. The file is opened without blocking and its type checked first; a
/// FIFO waits at most `FIFO_WRITER_WAIT` for a writer, and a directory, socket or other device
/// is refused by name.
pub fn read_file(path: &Path, cap: u64) -> io::Result<String> {
    read_file_waiting(path, cap, FIFO_WRITER_WAIT)
}

fn read_file_waiting(path: &Path, cap: u64, fifo_wait: Duration) -> io::Result<String> {
    use std::io::IsTerminal;
    use std::os::unix::fs::FileTypeExt;
    let what = path.display().to_string();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return read_capped(file, cap, &what);
    }
    if kind.is_fifo() {
        let (first, file) = await_writer(file, &what, fifo_wait)?;
        return read_capped(io::Cursor::new(first).chain(file), cap, &what);
    }
    if kind.is_char_device() && file.is_terminal() {
        return read_capped(blocking(file)?, cap, &what);
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{what} is {}, not a file: give a file or a pipe",
            kind_named(&kind)
        ),
    ))
}

/// What a file that is not a regular one is, as a message names it.
fn kind_named(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "a device"
    }
}

/// Refuses at once a path netsweep is about to open (a database, its journal, a lock file)
/// that is there but is not a regular file (a link is followed), naming what it is: a FIFO or
/// device would block the open (SQLite's has no `O_NONBLOCK`) or be written to. A path that is
/// not there passes; whether it may be created is the opener's call. `role` says what the
/// path is for ("store", "lock file").
pub fn refuse_special(path: &Path, role: &str) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not_regular(path, role, &m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The error for a path that is `kind` where a regular file was needed.
pub fn not_regular(path: &Path, role: &str, kind: &std::fs::FileType) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{role} {} is {}, not a regular file: netsweep opens only regular files there (a \
             FIFO or device would hold it for ever); remove it or give another path",
            path.display(),
            kind_named(kind)
        ),
    )
}

/// Clears `O_NONBLOCK`, so reads wait for data again.
fn blocking(file: File) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Waits for a FIFO's writer, at most `wait`. A non-blocking read tells the cases apart: data
/// (kept and returned), "would block" (a writer holds it open: from then on reads may wait for
/// it), or end of file (no writer yet: poll again until the deadline). Polled, not `poll(2)`ed:
/// Linux does not report a FIFO that never had a writer as readable or hung up.
fn await_writer(mut file: File, what: &str, wait: Duration) -> io::Result<(Vec<u8>, File)> {
    let deadline = Instant::now() + wait;
    let mut first = vec![0u8; 4096];
    loop {
        match file.read(&mut first) {
            Ok(0) if Instant::now() >= deadline => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{what} is a FIFO that nobody wrote to within {} s: start its writer \
                         first, or give a file",
                        wait.as_secs_f64()
                    ),
                ));
            }
            Ok(0) => std::thread::sleep(Duration::from_millis(20)),
            Ok(n) => {
                first.truncate(n);
                return Ok((first, blocking(file)?));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Ok((Vec::new(), blocking(file)?));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads standard input up to `cap` bytes.
pub fn read_stdin(cap: u64) -> io::Result<String> {
    read_capped(io::stdin().lock(), cap, "standard input")
}

/// Reads a kernel pseudo-file (or its stand-in in a fixture tree): a regular file only, opened
/// without blocking, at most `MAX_PSEUDO_BYTES`.
pub fn read_pseudo(path: &Path) -> io::Result<String> {
    read_regular(path, MAX_PSEUDO_BYTES)
}

/// Reads a regular file, up to `cap` bytes, opened without blocking: a FIFO, socket or device
/// in its place is refused at once instead of holding the reader (a server's login, say) until
/// someone writes to it.
pub fn read_regular(path: &Path, cap: u64) -> io::Result<String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a FIFO or device would block whoever reads it): give \
                 a file",
                path.display()
            ),
        ));
    }
    read_capped(file, cap, &path.display().to_string())
}

/// Text from a peer or a file made safe for a terminal or a log line: control characters
/// (escape sequences, carriage returns, newlines) and Unicode direction overrides are shown
/// escaped, and the text is cut at `MAX_PEER_TEXT` characters.
pub fn peer_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_PEER_TEXT + 16));
    for (i, c) in s.chars().enumerate() {
        if i == MAX_PEER_TEXT {
            out.push_str("...");
            break;
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Most characters of a peer's multi-line text kept (`peer_lines`).
pub const MAX_PEER_LINES_TEXT: usize = 256 << 10;

/// Multi-line text from a peer (an iperf3 server's own output) made safe for a terminal: its
/// lines are kept, everything else `peer_text` escapes is escaped, and it is cut at
/// `MAX_PEER_LINES_TEXT` characters.
pub fn peer_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_PEER_LINES_TEXT + 16));
    for (i, c) in s.chars().enumerate() {
        if i == MAX_PEER_LINES_TEXT {
            out.push_str("...");
            break;
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if c == '\n' {
            out.push(c);
        } else if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Serde helper: deserializes a string from a peer and escapes it on the way in.
pub fn de_peer_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    Ok(peer_text(&s))
}

/// Serde helper: the same for an optional string.
pub fn de_peer_text_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    let s: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(s.as_deref().map(peer_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_lines_keep_lines_and_escape_the_rest() {
        assert_eq!(peer_lines("a\nb\x1b[2Jc\r"), "a\nb\\u{1b}[2Jc\\r");
    }

    #[test]
    fn caps_are_enforced_as_bytes_arrive() {
        let big = io::repeat(b'7').take(10_000);
        let e = read_capped(big, 1000, "input").unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        assert_eq!(read_capped(&b"1\n2\n"[..], 4, "x").unwrap(), "1\n2\n");
    }

    #[test]
    fn pseudo_files_must_be_regular() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo_in(dir.path());
        let t0 = std::time::Instant::now();
        assert!(read_pseudo(&fifo).is_err());
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(read_pseudo(&zero).is_err());
        std::fs::write(dir.path().join("mtu"), "1500\n").unwrap();
        assert_eq!(read_pseudo(&dir.path().join("mtu")).unwrap(), "1500\n");
    }

    /// A FIFO made by coreutils' `mkfifo`: this ground-floor layer names no layer above it, so
    /// `platform::mkfifo` is not for its tests.
    fn fifo_in(dir: &Path) -> std::path::PathBuf {
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", fifo.display());
        fifo
    }

    #[test]
    fn a_fifo_nobody_writes_to_is_given_up_on_in_time() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo_in(dir.path());
        let t0 = Instant::now();
        let e = read_file_waiting(&fifo, 1000, Duration::from_millis(300)).unwrap_err();
        let waited = t0.elapsed();
        assert!(
            e.to_string().contains("nobody wrote to within 0.3 s"),
            "{e}"
        );
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    #[test]
    fn a_fifo_whose_writer_comes_later_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo_in(dir.path());
        let to = fifo.clone();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            let mut w = std::fs::OpenOptions::new().write(true).open(to).unwrap();
            std::io::Write::write_all(&mut w, b"1\n").unwrap();
            std::thread::sleep(Duration::from_millis(200));
            std::io::Write::write_all(&mut w, b"2\n3\n").unwrap();
        });
        let text = read_file_waiting(&fifo, 1000, Duration::from_secs(20)).unwrap();
        writer.join().unwrap();
        assert_eq!(text, "1\n2\n3\n");
    }

    #[test]
    fn special_files_are_refused_at_once_where_a_regular_one_belongs() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo_in(dir.path());
        let t0 = Instant::now();
        let e = refuse_special(&fifo, "store").unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(1));
        assert!(
            e.to_string().contains("is a FIFO, not a regular file"),
            "{e}"
        );
        let e = refuse_special(dir.path(), "store").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = refuse_special(Path::new("/dev/null"), "lock file").unwrap_err();
        assert!(
            e.to_string().contains("lock file /dev/null is a device"),
            "{e}"
        );
        assert!(refuse_special(&dir.path().join("absent.db"), "store").is_ok());
        std::fs::write(dir.path().join("x.db"), "").unwrap();
        assert!(refuse_special(&dir.path().join("x.db"), "store").is_ok());
    }

    #[test]
    fn directories_and_devices_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_file(dir.path(), 1000).unwrap_err();
        assert!(e.to_string().contains("is a directory, not a file"), "{e}");
        let e = read_file(Path::new("/dev/zero"), 1000).unwrap_err();
        assert!(e.to_string().contains("is a device, not a file"), "{e}");
        std::fs::write(dir.path().join("plan"), "x = 1\n").unwrap();
        assert_eq!(
            read_file(&dir.path().join("plan"), 1000).unwrap(),
            "x = 1\n"
        );
    }

    #[test]
    fn peer_text_cannot_drive_a_terminal() {
        let evil = "busy\x1b[2J\x1b]0;owned\x07\r\nfake line\u{202e}txt";
        let safe = peer_text(evil);
        assert!(!safe.chars().any(|c| c.is_control()), "{safe:?}");
        assert!(safe.contains("\\u{1b}[2J"), "{safe}");
        assert!(!safe.contains('\u{202e}'));
        assert!(peer_text(&"x".repeat(10_000)).len() <= MAX_PEER_TEXT + 3);
        assert_eq!(peer_text("plain text, ünïcode"), "plain text, ünïcode");
    }
}
