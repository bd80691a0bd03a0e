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

/// The first successful probe of a remote host: whether its netsweep runs, and the host for
/// plain `sysctl` commands (shared by clones; not part of equality).
#[derive(Debug, Clone, Default)]
pub struct Probed(std::sync::Arc<std::sync::OnceLock<(bool, SshHost)>>);

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

    /// The probe's finding, probing once it succeeds (a failed probe, a network blip, is not
    /// kept: the next call asks again).
    fn probe(&self) -> Result<&(bool, SshHost), String> {
        if let Some(found) = self.probed.0.get() {
            return Ok(found);
        }
        let found = SshHost::probe(&self.dest, &self.ssh_options, &self.netsweep)
            .map_err(|e| format!("{e:#}"))?;
        Ok(self.probed.0.get_or_init(|| found))
    }

    /// The host as a plain-sysctl target when it has no netsweep; `None` when it has one.
    fn without_netsweep(&self) -> Result<Option<Target>, String> {
        let (has, host) = self.probe()?;
        Ok((!has).then(|| Target::SshSysctl(host.clone())))
    }

    /// Whether ssh reaches it and it runs a system netsweep tunes (its first probe).
    pub fn reachable(&self) -> Result<(), String> {
        self.probe().map(|_| ())
    }

    /// Every reason `p` cannot be applied there (ssh does not reach it, a key its kernel
    /// lacks, a bad value), found with plain `sysctl` reads before any traffic: a campaign's
    /// `--check` said an unreachable server's plan was valid, and the runs then failed.
    pub fn validate(&self, p: &Profile, opts: &ApplyOptions) -> Result<(), Vec<String>> {
        let (_, host) = self.probe().map_err(|e| vec![e])?;
        validate(&Target::SshSysctl(host.clone()), p, opts)
    }

    /// The values of `keys` in force there, read with `sysctl` whether or not netsweep tunes
    /// it (a key the kernel lacks is left out), for the record of a campaign's runs.
    pub fn values(
        &self,
        keys: &[String],
    ) -> Result<std::collections::BTreeMap<String, String>, String> {
        let (_, host) = self.probe()?;
        host.read_all(keys).map_err(|e| format!("{e:#}"))
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
}

/// A line the remote netsweep printed, with the command it suggests for its own host
/// (`PROGRAM tune ... --target local`, as `restore with:` and `status` print it) made the
/// command that reaches that host from here: `program` and `target` are this end's (its
/// binary, and `--target ssh:USER@HOST` with its ssh options). A user pasted the remote's
/// `--target local` here and restored this host instead, told "nothing to restore".
pub fn localize_hint(line: &str, program: &str, target: &str) -> String {
    const LOCAL: &str = "--target local";
    let Some(end) = line.find(LOCAL) else {
        return line.to_string();
    };
    let Some(tune) = line[..end].rfind(" tune ") else {
        return line.to_string();
    };
    let start = line[..tune].rfind([' ', '`']).map_or(0, |i| i + 1);
    format!(
        "{}{program} tune {}{target}{}",
        &line[..start],
        &line[tune + " tune ".len()..end],
        &line[end + LOCAL.len()..]
    )
}

#[cfg(test)]
mod tests {
    use super::localize_hint;

    #[test]
    fn the_remotes_own_restore_command_is_printed_as_it_reaches_it_from_here() {
        let target = "--target ssh:root@198.18.77.2 --ssh-option Port=47722";
        assert_eq!(
            localize_hint(
                "restore with: /opt/n/netsweep tune restore --target local",
                "/usr/bin/netsweep",
                target
            ),
            "restore with: /usr/bin/netsweep tune restore --target ssh:root@198.18.77.2 \
             --ssh-option Port=47722"
        );
        assert_eq!(
            localize_hint(
                "x: profile p PARTIALLY applied (kept); `netsweep tune restore --target local` puts the originals back",
                "ns",
                target
            ),
            format!(
                "x: profile p PARTIALLY applied (kept); `ns tune restore {target}` puts the originals back"
            )
        );
        assert_eq!(
            localize_hint("  net.ipv4.tcp_rmem = \"1 2 3\"", "ns", target),
            "  net.ipv4.tcp_rmem = \"1 2 3\""
        );
    }
}
