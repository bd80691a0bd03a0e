//! iperf3's `-D`, `-I` and `--logfile` for `netsweep server`: a server in the background, its
//! process ID in a file, and its messages in a log.
//!
//! `-D` starts the same command line again as a child in a session of its own, with standard
//! input and output on /dev/null, and relays what the child says on standard error until it
//! has said its startup lines and points its messages at `--logfile` or /dev/null
//! (`Redirect`): a server that cannot bind says why on the terminal that started it,
//! and `-D` fails with it (iperf3 forks first and reports into the void).

use crate::cli::ServerOutput;
use anyhow::{Context, bail};
use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// How a server's startup message begins: `-D` succeeds when it was said.
pub const LISTENING: &str = "netsweep server listening on ";

/// The hidden flag that tells the started server it is `-D`'s, so it never starts another.
const CHILD_FLAG: &str = "--daemon-child";

/// This process's arguments for the background server: `-D`/`--daemon` dropped, the child's
/// flag added (also when `-D` hid in a cluster such as `-1D`, which the child then ignores).
pub fn child_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = args
        .into_iter()
        .filter(|a| a != "-D" && a != "--daemon")
        .collect();
    out.push(CHILD_FLAG.into());
    out
}

/// `-D`: starts the server in the background and returns once it listens and has said its
/// startup lines, having printed them (under the name iperf3, silently as iperf3's `-D`); fails
/// with its exit status when it ends first, and with what it said.
pub fn start_in_background() -> anyhow::Result<ExitCode> {
    let args: Vec<OsString> = std::env::args_os().collect();
    let quiet = crate::cli::program_name(&args) == "iperf3";
    let (program, arg0) = invoked_as(&args)?;
    let mut cmd = Command::new(program);
    std::os::unix::process::CommandExt::arg0(&mut cmd, arg0);
    cmd.args(child_args(args.into_iter().skip(1)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    crate::platform::process::detach_session(&mut cmd);
    let mut child = cmd.spawn().context("-D: cannot start the server")?;
    let pid = child.id();
    // Until the server points its messages elsewhere (`Redirect::apply`, after its startup
    // lines) or ends: the pipe closes either way, and the listening line tells which.
    let mut listening = false;
    let mut held = Vec::new();
    if let Some(said) = child.stderr.take() {
        for line in std::io::BufReader::new(said).lines() {
            let Ok(line) = line else { break };
            listening |= line.contains(LISTENING);
            match quiet {
                true => held.push(line),
                false => crate::errln!("{line}"),
            }
        }
    }
    if listening {
        if !quiet {
            crate::errln!("netsweep server: running in the background as process {pid}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    for line in held {
        crate::errln!("{line}");
    }
    let status = child.wait().context("-D: waiting for the server")?;
    bail!("-D: the server ended before it listened ({status})")
}

/// The path this program was started by and its `argv[0]`, for the background server: a link
/// named iperf3 keeps its name there (the kernel names a process after the path it was
/// started by), so `pidof iperf3`, `pgrep -x iperf3` and `killall iperf3` find it (a trial's
/// init script found no iperf3: the server ran as netsweep, from the link's target).
fn invoked_as(args: &[OsString]) -> anyhow::Result<(PathBuf, OsString)> {
    let exe = std::env::current_exe().context("-D: cannot find this program to start it again")?;
    let Some(arg0) = args.first().cloned() else {
        return Ok((exe.clone(), exe.into_os_string()));
    };
    let named = Path::new(&arg0);
    let path = if named.components().count() > 1 {
        Some(named.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|dirs| {
            std::env::split_paths(&dirs)
                .map(|d| d.join(named))
                .find(|p| p.is_file())
        })
    };
    let same = |p: &PathBuf| p.canonicalize().ok() == exe.canonicalize().ok();
    Ok((path.filter(same).unwrap_or(exe), arg0))
}

/// `-I FILE`: the file holding this server's process ID, removed when dropped if it still
/// holds it.
pub struct Pidfile {
    path: PathBuf,
}

impl Pidfile {
    /// Writes this process's ID to `path`; refused when `path` names a running process, or
    /// holds something other than a process ID (a mistyped path must not cost a file).
    pub fn claim(path: &Path) -> anyhow::Result<Pidfile> {
        let held = std::fs::symlink_metadata(path).map_or(0, |m| m.len());
        if held > 0 && read_pid(path).is_none() {
            bail!(
                "-I {}: the file holds something other than a process ID; netsweep does not \
                 overwrite it: give another file",
                path.display()
            );
        }
        if let Some(pid) = read_pid(path)
            && pid != std::process::id()
            && crate::platform::process::alive(pid)
        {
            bail!(
                "-I {}: process {pid} is running (another netsweep?); stop it or give another file",
                path.display()
            );
        }
        crate::platform::outfile::write(path, format!("{}\n", std::process::id()))
            .with_context(|| format!("-I {}", path.display()))?;
        Ok(Pidfile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        if read_pid(&self.path) == Some(std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The process ID a pidfile holds, if it holds one (at most 64 bytes are read).
fn read_pid(path: &Path) -> Option<u32> {
    let text = crate::inputs::read_regular(path, 64).ok()?;
    text.trim().parse().ok()
}

/// Where the server's messages go once it has said its startup lines: `--logfile`, or, for
/// `-D`'s server without one, /dev/null. Opened before the server binds, so a log that cannot
/// be written fails the start where `-D` still shows it.
pub struct Redirect {
    file: Option<std::fs::File>,
    /// A log gets the startup lines too.
    repeat: bool,
    /// `-J`: the log holds the documents only, as iperf3's `-s -J --logfile` (a JSON reader
    /// takes the file whole); messages stay on stderr, or go nowhere in the background.
    json: bool,
    /// `-s`'s text: the log holds the startup lines and the tests' text, as iperf3's; the
    /// server's own line per test stays on the terminal's stderr (in the background, with
    /// no terminal, it goes to the log too).
    text: bool,
    background: bool,
}

impl Redirect {
    pub fn open(out: &ServerOutput, (json, text): (bool, bool)) -> anyhow::Result<Redirect> {
        let file = match (&out.logfile, out.background) {
            (Some(path), _) => Some(
                crate::console::open_log(path)
                    .with_context(|| format!("--logfile {}", path.display()))?,
            ),
            (None, true) => Some(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/null")
                    .context("-D: /dev/null")?,
            ),
            (None, false) => None,
        };
        Ok(Redirect {
            file,
            repeat: out.logfile.is_some() && !json,
            json,
            text,
            background: out.background,
        })
    }

    /// Points standard error (the server's messages) and standard output (the tests' text or
    /// documents) at the target, and says `lines` again in a log; with `-J` only standard
    /// output. Without a target, nothing changes.
    pub fn apply(self, lines: &[String]) -> anyhow::Result<()> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let messages_to_log = !self.json && (!self.text || self.background);
        if messages_to_log {
            crate::platform::process::stderr_to(&file).context("pointing messages at the log")?;
        } else if self.background {
            let null = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .context("-D: /dev/null")?;
            crate::platform::process::stderr_to(&null).context("-D: messages to /dev/null")?;
        }
        crate::console::set_log(file);
        if self.repeat {
            for line in lines {
                if messages_to_log {
                    crate::errln!("{line}");
                } else {
                    crate::outln!("{line}");
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_background_server_runs_the_same_line_without_d_and_never_forks_again() {
        let args = ["server", "-p", "5400", "-D", "-I", "/tmp/p", "--daemon"].map(OsString::from);
        assert_eq!(
            child_args(args),
            ["server", "-p", "5400", "-I", "/tmp/p", CHILD_FLAG].map(OsString::from)
        );
        // A cluster keeps its -D; the child's flag stops a second start.
        let args = ["-s", "-1D"].map(OsString::from);
        assert_eq!(
            child_args(args),
            ["-s", "-1D", CHILD_FLAG].map(OsString::from)
        );
    }

    #[test]
    fn a_pidfile_holds_this_process_and_goes_when_dropped_and_a_live_ones_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("netsweep.pid");
        let held = Pidfile::claim(&path).unwrap();
        assert_eq!(read_pid(&path), Some(std::process::id()));
        drop(held);
        assert!(!path.exists());
        // A running process's file (pid 1, init, always runs) is refused and left alone.
        std::fs::write(&path, "1\n").unwrap();
        let Err(e) = Pidfile::claim(&path) else {
            panic!("claimed")
        };
        let e = e.to_string();
        assert!(e.contains("process 1 is running"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
        // Anything else is not a pidfile, and is kept.
        std::fs::write(&path, "root:x:0:0\n").unwrap();
        let Err(e) = Pidfile::claim(&path) else {
            panic!("claimed")
        };
        let e = e.to_string();
        assert!(e.contains("other than a process ID"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "root:x:0:0\n");
        // A dead process's file is taken over.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(&path, format!("{dead}\n")).unwrap();
        let held = Pidfile::claim(&path).unwrap();
        assert_eq!(read_pid(&path), Some(std::process::id()));
        drop(held);
    }
}
