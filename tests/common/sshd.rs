//! A throwaway OpenSSH server inside a test's namespace, with a throwaway host key and client
//! key: it stands in for a remote host's or a guest's sshd. Ended when dropped, also when an
//! assertion fails.

use super::KillOnDrop;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The port the server listens on.
pub const PORT: u16 = 2222;

pub struct Sshd {
    _process: KillOnDrop,
    /// The client's private key.
    pub key: PathBuf,
}

impl Sshd {
    /// Starts sshd on `listen`:2222 in namespace `ns`, its keys and configuration in `dir`, and
    /// waits (10 s at most) until it listens.
    pub fn start(ns: &str, listen: Ipv4Addr, dir: &Path) -> Sshd {
        for file in ["host_key", "client_key"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(file))
                .status()
                .expect("ssh-keygen");
            assert!(status.success(), "ssh-keygen {file}: {status}");
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {PORT}\nListenAddress {listen}\nHostKey {}\nPidFile none\nAuthorizedKeysFile {}\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
                dir.join("host_key").display(),
                dir.join("authorized_keys").display()
            ),
        )
        .unwrap();
        let process = Command::new("ip")
            .args(["netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&config)
            .stderr(Stdio::null())
            .spawn()
            .expect("ip netns exec sshd");
        let process = KillOnDrop(process);
        let socket = format!("{listen}:{PORT}");
        super::wait_bounded_until(Duration::from_secs(10), "sshd", || {
            Command::new("ip")
                .args(["netns", "exec", ns, "ss", "-Hltn"])
                .arg(format!("sport = :{PORT}"))
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&socket))
        });
        Sshd {
            _process: process,
            key: dir.join("client_key"),
        }
    }

    /// ssh's `-o` options that reach this server with the client key and no host-key prompt.
    pub fn options(&self) -> Vec<String> {
        [
            format!("Port={PORT}"),
            "StrictHostKeyChecking=no".into(),
            "UserKnownHostsFile=/dev/null".into(),
            "LogLevel=ERROR".into(),
            format!("IdentityFile={}", self.key.display()),
        ]
        .into()
    }
}
