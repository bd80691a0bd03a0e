//! A remote host tuned with plain `sysctl` commands over OpenSSH.

use super::*;

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

    /// Probes `dest`: whether `netsweep` (the command given) runs there, and its system.
    pub fn probe(
        dest: &str,
        ssh_options: &[String],
        netsweep: &str,
    ) -> anyhow::Result<(bool, SshHost)> {
        let mut host = SshHost {
            dest: dest.to_string(),
            ssh_options: ssh_options.to_vec(),
            os: Os::Linux,
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
        format!("ssh-{}", self.dest.replace(['/', '@', ':'], "_"))
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
