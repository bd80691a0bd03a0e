//! Where sysctls are tuned: this host, a network namespace, a host through ssh, or a place a
//! higher layer reaches (`SysctlPlace`), and how each is read, written and named.

use super::*;

/// A kernel whose sysctls can be read and written. Implemented here by `SshHost`, and by the
/// layers above for the places only they can reach (a lab's QEMU guest: `lab::vm::agent`).
pub trait SysctlPlace: std::fmt::Debug + Send + Sync {
    /// A file-name-safe identity for the journal, unique among places (`guest-wan-b`).
    fn id(&self) -> String;
    /// How to name it on the command line (`--target`).
    fn arg(&self) -> String;
    /// The system whose settings it holds (whose table of a profile applies).
    fn os(&self) -> Os;
    /// The value of `key`, whitespace-normalised.
    fn read(&self, key: &str) -> anyhow::Result<String>;
    /// Sets `key` to `value`.
    fn write(&self, key: &str, value: &str) -> anyhow::Result<()>;
    /// Whether the place is gone with its kernel (a stopped guest): its settings went with it,
    /// so a journal of it has nothing left to restore. A namespace never is: host-wide keys
    /// written from it outlive it.
    fn gone(&self) -> bool {
        false
    }
}

/// Where settings are changed.
#[derive(Debug, Clone)]
pub enum Target {
    Local,
    /// A network namespace by name (`netns:NAME`, or `lab:NAME:a` for a lab host).
    Netns(String),
    /// `ssh:USER@HOST`: netsweep runs `netsweep tune ...` there.
    Ssh(String),
    /// A host reached through ssh that has no netsweep: plain `sysctl` commands there, with
    /// the journal kept here (made by `tune` after probing, never parsed).
    SshSysctl(SshHost),
    /// A kernel a higher layer reaches, with the journal kept here: the QEMU guest of a lab
    /// host (`lab:NAME:b` when b is a guest), through the lab's command channel.
    Place(Arc<dyn SysctlPlace>),
}

/// Places compare by their journal identity, the rest by value.
impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Local, Target::Local) => true,
            (Target::Netns(a), Target::Netns(b)) | (Target::Ssh(a), Target::Ssh(b)) => a == b,
            (Target::SshSysctl(a), Target::SshSysctl(b)) => a == b,
            (Target::Place(a), Target::Place(b)) => a.id() == b.id(),
            _ => false,
        }
    }
}

impl Eq for Target {}

impl Target {
    /// `local`, `netns:NAME` or `ssh:USER@HOST`; a lab host (`lab:NAME:a|b`) is parsed by the
    /// lab (`lab::vm::agent::tuning_target`), which knows whether it is a guest.
    pub fn parse(s: &str) -> Result<Target, String> {
        if s == "local" {
            return Ok(Target::Local);
        }
        if let Some(ns) = s
            .strip_prefix("netns:")
            .filter(|n| !n.is_empty() && !n.contains('/'))
        {
            return Ok(Target::Netns(ns.to_string()));
        }
        if let Some(dest) = s
            .strip_prefix("ssh:")
            .filter(|d| !d.is_empty() && !d.starts_with('-'))
        {
            return Ok(Target::Ssh(dest.to_string()));
        }
        Err(format!(
            "target {s:?} is not local, netns:NAME, lab:NAME:a|b or ssh:USER@HOST"
        ))
    }

    /// A file-name-safe identity for the journal.
    pub fn id(&self) -> String {
        match self {
            // The namespace's inode: `local` inside two namespaces is two different targets.
            Target::Local => {
                let ns = std::fs::read_link("/proc/thread-self/ns/net")
                    .map(|l| l.to_string_lossy().to_string())
                    .unwrap_or_default();
                let inode: String = ns.chars().filter(|c| c.is_ascii_digit()).collect();
                format!("local-net{inode}")
            }
            Target::Netns(n) => format!("netns-{n}"),
            Target::Ssh(d) => format!("ssh-{}", d.replace(['/', '@', ':'], "_")),
            Target::SshSysctl(h) => h.id(),
            Target::Place(p) => p.id(),
        }
    }

    /// The system whose settings this target holds (whose table of a profile applies).
    pub fn os(&self) -> Os {
        match self {
            Target::Local => THIS_OS,
            Target::Netns(_) => Os::Linux,
            Target::Ssh(_) => THIS_OS,
            Target::SshSysctl(h) => h.os,
            Target::Place(p) => p.os(),
        }
    }

    /// Reads a sysctl on the target.
    pub fn read(&self, key: &str) -> anyhow::Result<String> {
        let v = match self {
            Target::Local => sysctl::read(key),
            Target::Netns(ns) => netns::run_in(ns, || sysctl::read(key))?,
            Target::Ssh(_) => bail!("ssh targets are handled by the remote netsweep"),
            Target::SshSysctl(h) => return h.read(key),
            Target::Place(p) => return p.read(key),
        }
        .with_context(|| format!("the kernel has no {key}"))?;
        Ok(v)
    }

    /// Whether this process may write `key` here; only the local host is checked (entering a
    /// namespace needs root anyway, and the remote checks for itself).
    pub(super) fn writable(&self, key: &str) -> bool {
        match self {
            Target::Local => sysctl::writable(key),
            _ => true,
        }
    }

    pub(super) fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
        let r = match self {
            Target::Local => sysctl::write(key, value),
            Target::Netns(ns) => netns::run_in(ns, || sysctl::write(key, value))?,
            Target::Ssh(_) => bail!("ssh targets are handled by the remote netsweep"),
            Target::SshSysctl(h) => return h.write(key, value),
            Target::Place(p) => {
                return p
                    .write(key, value)
                    .with_context(|| format!("cannot write {key} = {value} in {}", self.id()));
            }
        };
        r.with_context(|| format!("cannot write {key} = {value}"))
    }
}

/// How to name a target on the command line.
/// The words that name `t` on a `tune` command line, ssh's options included, so a suggested
/// command reaches the same host as printed.
pub fn target_words(t: &Target) -> Vec<String> {
    let mut words = vec!["--target".to_string(), target_arg(t)];
    if let Target::SshSysctl(h) = t {
        for o in &h.ssh_options {
            words.extend(["--ssh-option".to_string(), o.clone()]);
        }
    }
    words
}

/// `netsweep tune restore` of `t`, as it pastes.
pub fn restore_command(t: &Target) -> String {
    let mut words = vec!["tune".to_string(), "restore".to_string()];
    words.extend(target_words(t));
    crate::paste::netsweep(&words)
}

pub fn target_arg(t: &Target) -> String {
    match t {
        Target::Local => "local".into(),
        Target::Netns(n) => format!("netns:{n}"),
        Target::Ssh(d) => format!("ssh:{d}"),
        Target::SshSysctl(h) => h.arg(),
        Target::Place(p) => p.arg(),
    }
}
