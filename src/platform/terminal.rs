//! Reading a secret from the terminal with echo off (iperf3's password prompt). Unix termios,
//! the same on Linux and FreeBSD; the echo comes back on drop, even on an error.

use std::io::{BufRead, IsTerminal, Write};

/// Restores the terminal's settings on drop.
struct EchoOff {
    fd: libc::c_int,
    saved: libc::termios,
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: `saved` came from tcgetattr on this descriptor, which stays open (stdin).
        unsafe {
            libc::tcsetattr(self.fd, libc::TCSAFLUSH, &self.saved);
        }
    }
}

/// Prints `prompt` to standard error and reads one line from standard input with echo off,
/// without its line end. `Ok(None)` when standard input is not a terminal (nothing is read).
pub fn read_secret(prompt: &str) -> std::io::Result<Option<String>> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Ok(None);
    }
    let fd = libc::STDIN_FILENO;
    // SAFETY: termios is plain data, filled by tcgetattr before use.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd is stdin, a terminal; `saved` is a valid termios to write to.
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut quiet = saved;
    quiet.c_lflag &= !libc::ECHO;
    // SAFETY: as above, with a termios derived from the saved one.
    if unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let guard = EchoOff { fd, saved };
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    drop(guard);
    eprintln!();
    let end = line.find(['\r', '\n']).unwrap_or(line.len());
    line.truncate(end);
    Ok(Some(line))
}
