//! libvirt through its own command-line client, `virsh`: the same connection rules, auth and
//! error messages the user has (the `virt` crate would bind libvirt's C library, adding a
//! build dependency on `libvirt-dev` for a handful of calls that `virsh` makes in well under a
//! second each). Every call is bounded in time: a stuck daemon is an error, not a hang.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one `virsh` call may take (a `start` of a large domain included).
const CALL_LIMIT: Duration = Duration::from_secs(120);

/// `virsh`, connected to `uri` (libvirt's default connection when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Virsh {
    pub uri: Option<String>,
}

/// A domain's state, as `virsh domstate` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Running,
    ShutOff,
    /// Paused, in shutdown, crashed, ...: as virsh printed it.
    Other(String),
}

impl State {
    pub fn parse(s: &str) -> State {
        match s.trim() {
            "running" => State::Running,
            "shut off" => State::ShutOff,
            other => State::Other(other.to_string()),
        }
    }
}

impl Virsh {
    pub fn new(uri: Option<String>) -> Virsh {
        Virsh { uri }
    }

    /// The words before a subcommand: `virsh` or `virsh -c URI`.
    fn prefix(&self) -> Vec<String> {
        let mut w = vec!["virsh".to_string()];
        if let Some(u) = &self.uri {
            w.push("-c".into());
            w.push(u.clone());
        }
        w
    }

    /// A `virsh` command line as the user would paste it (words quoted where a shell needs it).
    pub fn command_line(&self, args: &[&str]) -> String {
        let mut words = self.prefix();
        words.extend(args.iter().map(|s| s.to_string()));
        words
            .iter()
            .map(|w| crate::paste::quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs `virsh ARGS`; its standard output, or its error message.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let words = self.prefix();
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| {
            format!("cannot run virsh ({e}): install libvirt-clients (Debian) or libvirt (FreeBSD)")
        })?;
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let reader = std::thread::spawn(move || {
            let mut o = Vec::new();
            if let Some(s) = out.as_mut() {
                let _ = s
                    .take(super::xml::MAX_DEFINITION as u64)
                    .read_to_end(&mut o);
            }
            o
        });
        let err_reader = std::thread::spawn(move || {
            let mut e = Vec::new();
            if let Some(s) = err.as_mut() {
                let _ = s.take(64 << 10).read_to_end(&mut e);
            }
            e
        });
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if start.elapsed() < CALL_LIMIT => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "`{}` did not answer in {} s: is libvirtd running?",
                        self.command_line(args),
                        CALL_LIMIT.as_secs()
                    ));
                }
                Err(e) => return Err(format!("waiting for virsh: {e}")),
            }
        };
        let stdout = reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        if status.success() {
            Ok(String::from_utf8_lossy(&stdout).into_owned())
        } else {
            let msg = failure_words(&String::from_utf8_lossy(&stderr));
            Err(format!("`{}` failed: {msg}", self.command_line(args)))
        }
    }
}

/// virsh's error text on one line (its lines joined by "; ", never a literal `\n`), with the
/// fix when it could not reach libvirtd at all.
fn failure_words(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let text = crate::inputs::peer_text(&lines.join("; "));
    // No daemon behind the socket: start it. A connection refused for its URI (a typo such
    // as qemu:///sytem) is the URI's: a trial was told to start a libvirtd that ran.
    if text.contains("Failed to connect socket") {
        format!(
            "{text}: is libvirtd running? Start it (`systemctl start libvirtd`, or `libvirtd -d` \
             and `virtlogd -d` where there is no systemd), or check --connect"
        )
    } else if text.contains("failed to connect to the hypervisor") {
        format!(
            "{text}: check the connection URI (--connect, or the plan's uri; e.g. qemu:///system)"
        )
    } else {
        text
    }
}

impl Virsh {
    /// The definition: the running one (`inactive` false) or the one the next start uses.
    /// The domain's UUID, the same whichever way it is spelled (name, id or UUID) and whichever
    /// URI reaches it; `None` when libvirt cannot say. `virsh domuuid` refuses a UUID ("failed
    /// to get domain", libvirt 9-11 here), so a UUID is checked with `virsh domname` instead.
    pub fn uuid(&self, domain: &str) -> Option<String> {
        if let Some(uuid) = as_uuid(domain) {
            return self.run(&["domname", domain]).ok().map(|_| uuid);
        }
        let uuid = self.run(&["domuuid", domain]).ok()?.trim().to_string();
        as_uuid(&uuid)
    }

    pub fn dumpxml(&self, domain: &str, inactive: bool) -> Result<String, String> {
        let mut args = vec!["dumpxml"];
        if inactive {
            args.push("--inactive");
        }
        args.extend(["--", domain]);
        self.run(&args)
    }

    /// `virsh define` of `xml`, through a private temporary file.
    pub fn define(&self, xml: &str) -> Result<(), String> {
        let mut f = tempfile_in_runtime()?;
        std::io::Write::write_all(&mut f.1, xml.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", f.0.display()))?;
        let path = f.0.display().to_string();
        let r = self.run(&["define", "--file", &path]).map(|_| ());
        let _ = std::fs::remove_file(&f.0);
        r
    }

    pub fn state(&self, domain: &str) -> Result<State, String> {
        self.run(&["domstate", "--", domain])
            .map(|s| State::parse(&s))
    }

    pub fn start(&self, domain: &str) -> Result<(), String> {
        self.run(&["start", "--", domain]).map(|_| ())
    }

    /// Powers the domain off at once.
    pub fn destroy(&self, domain: &str) -> Result<(), String> {
        self.run(&["destroy", "--", domain]).map(|_| ())
    }

    /// Asks the guest to shut down, then powers it off if it has not within `grace` (at once
    /// when `grace` is zero: a guest without ACPI handling never shuts down by itself).
    pub fn stop(&self, domain: &str, grace: Duration) -> Result<(), String> {
        if self.state(domain)? == State::ShutOff {
            return Ok(());
        }
        if !grace.is_zero() && self.run(&["shutdown", "--", domain]).is_ok() {
            let start = Instant::now();
            while start.elapsed() < grace {
                if self.state(domain)? == State::ShutOff {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        }
        match self.destroy(domain) {
            Ok(()) => Ok(()),
            // It shut off between the check and the destroy.
            Err(_) if self.state(domain)? == State::ShutOff => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A new file only this user can read, in the runtime directory.
fn tempfile_in_runtime() -> Result<(std::path::PathBuf, std::fs::File), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = super::dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for n in 0..100u32 {
        let path = dir.join(format!("define-{}-{n}.xml", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
        }
    }
    Err(format!("no free temporary file name in {}", dir.display()))
}

/// `text` as a UUID in libvirt's form (8-4-4-4-12 hex digits), lower case; `None` otherwise.
fn as_uuid(text: &str) -> Option<String> {
    let t = text.trim();
    let groups: Vec<&str> = t.split('-').collect();
    let shape = groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12];
    (shape
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit())))
    .then(|| t.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_known_in_any_case_and_names_are_not_uuids() {
        assert_eq!(
            as_uuid("2728AE0F-3686-4a6b-a9b7-3d99d2d20f54\n").as_deref(),
            Some("2728ae0f-3686-4a6b-a9b7-3d99d2d20f54")
        );
        for not in [
            "vm1",
            "netsweep-test-1",
            "2728ae0f-3686-4a6b-a9b7-3d99d2d20f5",
            "",
        ] {
            assert_eq!(as_uuid(not), None, "{not}");
        }
    }

    /// Regression: virsh's two-line errors printed with a literal `\n`, and no word of libvirtd.
    #[test]
    fn virshs_errors_are_one_line_and_name_libvirtd_when_it_is_down() {
        let down = "error: failed to connect to the hypervisor\nerror: Failed to connect socket to \
                    '/var/run/libvirt/libvirt-sock': No such file or directory\n";
        let w = failure_words(down);
        assert!(!w.contains("\\n") && !w.contains('\n'), "{w}");
        assert!(
            w.contains("hypervisor; error: Failed to connect socket"),
            "{w}"
        );
        assert!(
            w.contains("is libvirtd running?") && w.contains("libvirtd -d"),
            "{w}"
        );
        let typo = failure_words(
            "error: failed to connect to the hypervisor\nerror: internal error: unexpected qemu \
             URI path '/sytem', try qemu:///system\n",
        );
        assert!(
            !typo.contains("libvirtd running") && typo.contains("check the connection URI"),
            "{typo}"
        );
        let other = failure_words("error: failed to get domain 'vm9'\n");
        assert_eq!(other, "error: failed to get domain 'vm9'");
    }

    #[test]
    fn states_and_printed_commands() {
        assert_eq!(State::parse("running\n\n"), State::Running);
        assert_eq!(State::parse("shut off\n"), State::ShutOff);
        assert_eq!(State::parse("paused"), State::Other("paused".into()));
        let v = Virsh::new(Some("qemu:///system".into()));
        assert_eq!(
            v.command_line(&["dumpxml", "my vm"]),
            "virsh -c qemu:///system dumpxml 'my vm'"
        );
        assert_eq!(
            Virsh::new(None).command_line(&["start", "vm1"]),
            "virsh start vm1"
        );
    }
}
