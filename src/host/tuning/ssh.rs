//! A remote host tuned with plain `sysctl` commands over OpenSSH.

use super::*;
use std::collections::BTreeMap;

/// `ssh -o BatchMode=yes [-o OPTION]...`: how every remote tuning command starts.
pub fn ssh_command(ssh_options: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new("ssh");
    cmd.args(["-o", "BatchMode=yes"]);
    for o in ssh_options {
        cmd.args(["-o", o]);
    }
    cmd
}

/// A host tuned with plain `sysctl` commands over OpenSSH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshHost {
    /// `USER@HOST`.
    pub dest: String,
    /// OpenSSH options, each passed as `-o OPTION`.
    pub ssh_options: Vec<String>,
    /// Its system (from `uname -s`): which table of a profile applies and how to write.
    pub os: Os,
    /// Whom ssh logs in as where (`USER@HOSTNAME`, `:PORT` past 22), as `ssh -G` resolves
    /// `dest` with the options and the user's config: the journal's name, so `ssh:server`
    /// and `ssh:root@server` (the same login) find one journal. `None`: named by `dest`.
    pub login: Option<String>,
}

/// The login `ssh -G`'s printed configuration resolves to: `USER@HOSTNAME`, with `:PORT`
/// when not 22; `None` when a line is missing.
pub fn resolved_login(config: &str) -> Option<String> {
    let field = |name: &str| {
        config.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    };
    let (user, host, port) = (field("user")?, field("hostname")?, field("port")?);
    Some(if port == "22" {
        format!("{user}@{host}")
    } else {
        format!("{user}@{host}:{port}")
    })
}

impl SshHost {
    /// Runs `words` there (each word single-quoted for the remote shell); its standard output.
    fn run(&self, words: &[&str]) -> anyhow::Result<String> {
        let mut cmd = ssh_command(&self.ssh_options);
        let quoted: Vec<String> = words
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', "")))
            .collect();
        let out = cmd
            .args(["--", &self.dest])
            .arg(quoted.join(" "))
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run ssh (install openssh-client)")?;
        if !out.status.success() {
            bail!(
                "`{}` on {} failed: {}",
                words.join(" "),
                self.dest,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    }

    /// The values of `keys` there, in one round trip (`sysctl -n` of each, its line or
    /// nothing: a key the kernel lacks is left out).
    pub fn read_all(&self, keys: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
        let valid: Vec<&String> = keys.iter().filter(|k| sysctl::valid_name(k)).collect();
        if valid.is_empty() {
            return Ok(BTreeMap::new());
        }
        // One line per key: its value, or "-" when the kernel lacks it.
        let script = valid
            .iter()
            .map(|k| format!("v=$(sysctl -n {k} 2>/dev/null) || v=-; echo \"$v\""))
            .collect::<Vec<_>>()
            .join("; ");
        let out = self.run(&["sh", "-c", &script])?;
        Ok(valid
            .into_iter()
            .zip(out.lines())
            .filter(|(_, v)| *v != "-")
            .map(|(k, v)| (k.clone(), normalize(v)))
            .collect())
    }

    /// Probes `dest`: whether `netsweep` (the command given) runs there, and its system.
    pub fn probe(
        dest: &str,
        ssh_options: &[String],
        netsweep: &str,
    ) -> anyhow::Result<(bool, SshHost)> {
        // `ssh -G` only prints the configuration it would use; it connects nowhere.
        let login = ssh_command(ssh_options)
            .args(["-G", "--", dest])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| resolved_login(&String::from_utf8_lossy(&o.stdout)));
        let mut host = SshHost {
            dest: dest.to_string(),
            ssh_options: ssh_options.to_vec(),
            os: Os::Linux,
            login,
        };
        let uname = host.run(&["uname", "-s"])?;
        host.os = match uname.trim() {
            "Linux" => Os::Linux,
            "FreeBSD" => Os::FreeBsd,
            other => bail!("{dest} runs {other:?}: netsweep tunes Linux and FreeBSD hosts"),
        };
        let has = host
            .run(&["sh", "-c", &format!("command -v {netsweep}")])
            .is_ok();
        Ok((has, host))
    }
}

impl SysctlPlace for SshHost {
    fn id(&self) -> String {
        let login = self.login.as_deref().unwrap_or(&self.dest);
        format!("ssh-{}", login.replace(['/', '@', ':'], "_"))
    }

    fn arg(&self) -> String {
        format!("ssh:{}", self.dest)
    }

    fn os(&self) -> Os {
        self.os
    }

    fn read(&self, key: &str) -> anyhow::Result<String> {
        self.run(&["sysctl", "-n", key]).map(|v| normalize(&v))
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        let set = format!("{key}={value}");
        let words: Vec<&str> = match self.os {
            Os::Linux => vec!["sysctl", "-w", &set],
            Os::FreeBsd => vec!["sysctl", &set],
        };
        self.run(&words).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_ssh_resolves_names_the_journal() {
        let config = "user root\nhostname 198.18.0.2\nport 22\naddressfamily any\n";
        assert_eq!(resolved_login(config).as_deref(), Some("root@198.18.0.2"));
        let other_port = "hostname 198.18.0.2\nuser ops\nport 2222\n";
        assert_eq!(
            resolved_login(other_port).as_deref(),
            Some("ops@198.18.0.2:2222")
        );
        // "hostkeyalias" and the like are other keys, not "hostname".
        assert_eq!(resolved_login("user root\nhostkeyalias x\nport 22\n"), None);
        let place = |dest: &str, login: Option<&str>| SshHost {
            dest: dest.into(),
            ssh_options: Vec::new(),
            os: Os::Linux,
            login: login.map(String::from),
        };
        // An alias and the login it stands for: one journal.
        assert_eq!(
            place("server", Some("root@198.18.0.2")).id(),
            place("root@198.18.0.2", Some("root@198.18.0.2")).id()
        );
        assert_eq!(place("root@198.18.0.9", None).id(), "ssh-root_198.18.0.9");
        assert_eq!(
            place("x", Some("ops@198.18.0.2:2222")).id(),
            "ssh-ops_198.18.0.2_2222"
        );
    }
}
