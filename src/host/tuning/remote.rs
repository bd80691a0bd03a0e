//! A remote host tuned by its own netsweep through OpenSSH (the server side of a campaign).

use super::*;

/// A host tuned through OpenSSH by running `netsweep tune ... --target local` there (the
/// server side of a campaign against a remote `netsweep server`). The remote netsweep keeps
/// its own journal; a restore here is idempotent there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// `USER@HOST`.
    pub dest: String,
    /// OpenSSH options, each passed as `-o OPTION`.
    pub ssh_options: Vec<String>,
    /// The netsweep command on the remote host.
    pub netsweep: String,
    /// What probing it found, kept after the first success: a campaign switches profiles many
    /// times and the host does not change between them.
    pub probed: Probed,
}

/// The first successful probe of a remote host (shared by clones; not part of equality).
#[derive(Debug, Clone, Default)]
pub struct Probed(std::sync::Arc<std::sync::OnceLock<Option<SshHost>>>);

impl PartialEq for Probed {
    fn eq(&self, _: &Probed) -> bool {
        true
    }
}
impl Eq for Probed {}

impl Remote {
    pub fn new(dest: &str, ssh_options: Vec<String>, netsweep: String) -> Remote {
        Remote {
            dest: dest.to_string(),
            ssh_options,
            netsweep,
            probed: Probed::default(),
        }
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let mut cmd = ssh_command(&self.ssh_options);
        cmd.args(["--", &self.dest, &self.netsweep, "tune"])
            .args(args);
        cmd.stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("cannot run ssh: {e}"))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())
                .map_err(|e| format!("ssh stdin: {e}"))?;
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "`netsweep tune {}` on {} failed: {}{}",
                args.join(" "),
                self.dest,
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    pub fn id(&self) -> String {
        format!("ssh:{}", self.dest)
    }

    /// The host as a plain-sysctl target when it has no netsweep; `None` when it has one.
    fn without_netsweep(&self) -> Result<Option<Target>, String> {
        if let Some(found) = self.probed.0.get() {
            return Ok(found.clone().map(Target::SshSysctl));
        }
        let (has, host) = SshHost::probe(&self.dest, &self.ssh_options, &self.netsweep)
            .map_err(|e| format!("{e:#}"))?;
        // A failed probe (a network blip) is not kept: the next call asks again.
        let found = self.probed.0.get_or_init(|| (!has).then_some(host));
        Ok(found.clone().map(Target::SshSysctl))
    }

    /// Applies `p` there: through the remote netsweep (sent as a profile file on standard
    /// input; it picks the table of its own system), or, on a host without netsweep, with
    /// plain `sysctl` commands and the journal kept here.
    pub fn apply(&self, p: &Profile) -> Result<String, String> {
        if let Some(t) = self.without_netsweep()? {
            let opts = ApplyOptions {
                allow_host_wide: true,
                owner_pid: Some(std::process::id()),
            };
            return apply(&t, p, &opts)
                .map(|e| {
                    format!(
                        "applied profile {} on {} with sysctl ({} settings)",
                        p.name,
                        self.dest,
                        e.len()
                    )
                })
                .map_err(|e| format!("{e:#}"));
        }
        self.run(
            &["apply", &p.name, "--profiles", "-", "--target", "local"],
            Some(&profile::to_toml(p)),
        )
    }

    /// Restores there; true when something was restored.
    pub fn restore(&self) -> Result<bool, String> {
        if let Some(t) = self.without_netsweep()? {
            return restore(&t)
                .map(|r| r.is_some())
                .map_err(|e| format!("{e:#}"));
        }
        self.run(&["restore", "--target", "local"], None)
            .map(|t| t.contains("restored profile"))
    }

    pub fn status(&self) -> Result<String, String> {
        self.run(&["status", "--target", "local"], None)
    }
}
