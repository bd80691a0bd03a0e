//! `netsweep tune`: applies sysctl profiles to a target (this host, a network namespace or lab
//! host, or a remote host through ssh) and always puts the original values back.
//!
//! Safety order: every key and value is checked first (allowlist, existence, syntax, scope), so
//! a rejected profile writes nothing; then the original values go to a journal (fsynced) before
//! the first write; each write is read back and verified. A journal whose owner process died
//! (kill -9, crash) is restored by the next tuning command, which says so. Restore is
//! idempotent. The network-facing server never calls this module. `state` tells how far a
//! journal's profile is applied now (all, some keys after an interrupted apply, none).
//!
//! A kernel this layer cannot reach by itself (a lab's QEMU guest, through the lab's command
//! channel) is a `SysctlPlace` that the layer knowing it implements (`lab::vm::agent`) and hands
//! down as `Target::Place`: tuning knows no lab.

pub mod advice;
pub mod profile;
pub mod state;
pub mod trial;

pub use crate::platform::sysctl::normalize;
use crate::platform::{Os, THIS_OS, netns, sysctl};
use anyhow::{Context, bail};
use profile::{Profile, Scope};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

mod bdp;
pub use bdp::*;
mod ssh;
pub use ssh::{SshHost, ssh_command};

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
    fn writable(&self, key: &str) -> bool {
        match self {
            Target::Local => sysctl::writable(key),
            _ => true,
        }
    }

    fn write(&self, key: &str, value: &str) -> anyhow::Result<()> {
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

/// One changed setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub original: String,
    pub applied: String,
}

/// The record of what a target had before tuning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub target: String,
    pub profile: String,
    /// The process that restores it when it ends; `None` for `tune apply` without `--hold`,
    /// which stays until `tune restore`.
    pub owner_pid: Option<u32>,
    pub created_unix: f64,
    pub entries: Vec<Entry>,
}

/// Directory of journals: `/run/netsweep/tuning`, or the user's runtime directory.
pub fn journal_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("NETSWEEP_RUNTIME_DIR") {
        return PathBuf::from(d).join("tuning");
    }
    if crate::platform::process::is_root() {
        return PathBuf::from("/run/netsweep/tuning");
    }
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join("netsweep/tuning")
}

fn journal_path(t: &Target) -> PathBuf {
    journal_dir().join(format!("{}.json", t.id()))
}

pub fn read_journal(t: &Target) -> Option<Journal> {
    serde_json::from_str(&std::fs::read_to_string(journal_path(t)).ok()?).ok()
}

/// Writes the journal durably: temporary file, fsync, rename, fsync of the directory.
fn write_journal(t: &Target, j: &Journal) -> anyhow::Result<()> {
    let dir = journal_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = journal_path(t);
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&serde_json::to_vec_pretty(j)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(&dir)?.sync_all()?;
    Ok(())
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub profile: String,
    pub entries: Vec<Entry>,
    /// The owner that died without restoring, when this was crash recovery.
    pub crashed_owner: Option<u32>,
    /// The target no longer exists (its settings went with it): nothing was written.
    pub target_gone: bool,
}

impl Restored {
    /// One line on what crash recovery did on `t`.
    pub fn recovery_line(&self, t: &Target) -> String {
        let owner = self.crashed_owner.unwrap_or(0);
        if self.target_gone {
            format!(
                "dropped the tuning journal of profile {} on {} left by process {owner}: {} no longer exists, and its settings went with it",
                self.profile,
                t.id(),
                t.id()
            )
        } else {
            format!(
                "restored {} setting(s) of profile {} on {} left by process {owner} that ended without restoring them",
                self.entries.len(),
                self.profile,
                t.id()
            )
        }
    }
}

/// Restores a journal left by a process that died; `None` if there is none to recover.
pub fn recover(t: &Target) -> anyhow::Result<Option<Restored>> {
    match read_journal(t) {
        Some(j)
            if j.owner_pid
                .is_some_and(|p| !crate::platform::process::alive(p)) =>
        {
            let owner = j.owner_pid;
            let mut r = restore(t)?.context("journal vanished")?;
            r.crashed_owner = owner;
            Ok(Some(r))
        }
        _ => Ok(None),
    }
}

/// Whether the target itself is gone with its kernel (`SysctlPlace::gone`).
fn gone(t: &Target) -> bool {
    match t {
        Target::Place(p) => p.gone(),
        _ => false,
    }
}

/// Writes the originals of `entries` back (last change first); keys already at their
/// original value are left alone. Returns the errors.
fn put_back(t: &Target, entries: &[Entry]) -> Vec<String> {
    let mut errors = Vec::new();
    for e in entries.iter().rev() {
        if t.read(&e.key).is_ok_and(|v| v == normalize(&e.original)) {
            continue;
        }
        if let Err(err) = t.write(&e.key, &e.original) {
            errors.push(format!("{err:#}"));
            continue;
        }
        match t.read(&e.key) {
            Ok(v) if v == normalize(&e.original) => {}
            Ok(v) => errors.push(format!(
                "{} reads {v:?} after restoring {:?}",
                e.key, e.original
            )),
            Err(err) => errors.push(format!("{err:#}")),
        }
    }
    errors
}

/// Puts every journaled key back and removes the journal. `None`: nothing to restore.
pub fn restore(t: &Target) -> anyhow::Result<Option<Restored>> {
    let Some(j) = read_journal(t) else {
        return Ok(None);
    };
    let target_gone = gone(t);
    let errors = if target_gone {
        Vec::new()
    } else {
        put_back(t, &j.entries)
    };
    if !errors.is_empty() {
        bail!(
            "restoring {} left the journal {} in place: {}",
            t.id(),
            journal_path(t).display(),
            errors.join("; ")
        );
    }
    std::fs::remove_file(journal_path(t)).ok();
    Ok(Some(Restored {
        profile: j.profile,
        entries: j.entries,
        crashed_owner: None,
        target_gone,
    }))
}

/// Options of `apply`.
#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    /// Allow host-wide keys on a namespace target.
    pub allow_host_wide: bool,
    /// Owner process (restores at its end); `None` keeps the settings until `tune restore`.
    pub owner_pid: Option<u32>,
}

/// Checks everything a profile would write on a target; every problem at once.
pub fn validate(t: &Target, p: &Profile, opts: &ApplyOptions) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let os = t.os();
    if let Some(e) = profile::missing_table(p, os) {
        return Err(vec![e]);
    }
    for (k, v) in &p.table(os) {
        if let Err(e) = profile::check_for(os, k, v) {
            errors.push(e);
            continue;
        }
        // Tried first: the true reason a key cannot act in a namespace, whatever is allowed.
        if matches!(t, Target::Netns(_))
            && let Some(why) = trial::in_namespace(k)
        {
            errors.push(format!(
                "{k} cannot act on {}: {why}; {}",
                t.id(),
                trial::ELSEWHERE
            ));
            continue;
        }
        if matches!(t, Target::Netns(_))
            && profile::scope(k) == Some(Scope::HostWide)
            && !opts.allow_host_wide
        {
            errors.push(format!("{k} is host-wide, not per namespace: changing it on {} changes the whole host (leave it out, e.g. with the built-in high-bdp-ns instead of high-bdp; or allow it: --allow-host-wide, or allow_host_wide = true in a plan's [target])", t.id()));
            continue;
        }
        if let Err(e) = t.read(k) {
            errors.push(format!("{e:#}"));
        } else if !t.writable(k) {
            errors.push(format!(
                "{k} cannot be changed by this user on {}: changing sysctls needs root",
                t.id()
            ));
        } else if matches!(t, Target::Place(_))
            && let Some(why) = trial::read_back(t, k)
        {
            errors.push(why);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Applies a profile: validate, journal, write, verify. On any failure what was written is
/// restored.
pub fn apply(t: &Target, p: &Profile, opts: &ApplyOptions) -> anyhow::Result<Vec<Entry>> {
    if let Some(j) = read_journal(t) {
        bail!(
            "{} is already tuned with profile {} ({} settings): run `netsweep tune restore --target {}` first",
            t.id(),
            j.profile,
            j.entries.len(),
            target_arg(t)
        );
    }
    validate(t, p, opts).map_err(|e| {
        anyhow::anyhow!(
            "profile {} was not applied, nothing was written:\n  {}",
            p.name,
            e.join("\n  ")
        )
    })?;
    let mut entries = Vec::new();
    for (k, v) in p.table(t.os()) {
        let original = t.read(&k)?;
        let applied = if p.raise_only {
            profile::raised(&original, &v)
        } else {
            normalize(&v)
        };
        entries.push(Entry {
            key: k,
            original,
            applied,
        });
    }
    let journal = Journal {
        target: t.id(),
        profile: p.name.clone(),
        owner_pid: opts.owner_pid,
        created_unix: crate::platform::clock::now_unix(),
        entries: entries.clone(),
    };
    write_journal(t, &journal)?;
    for (i, e) in entries.iter().enumerate() {
        let verified = t
            .write(&e.key, &e.applied)
            .and_then(|_| t.read(&e.key))
            .and_then(|now| {
                if now == e.applied {
                    Ok(())
                } else {
                    bail!(
                        "{} reads {now:?} after writing {:?} (the kernel adjusted or refused it)",
                        e.key,
                        e.applied
                    )
                }
            });
        if let Err(err) = verified {
            // Undo what was written, including a partial write of this key.
            let errors = put_back(t, &entries[..=i]);
            if errors.is_empty() {
                std::fs::remove_file(journal_path(t)).ok();
                bail!("{err:#}; the original values were restored");
            }
            bail!(
                "{err:#}; restoring failed too ({}), the journal {} stays for `tune restore`",
                errors.join("; "),
                journal_path(t).display()
            );
        }
    }
    Ok(entries)
}

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

/// How to name a target on the command line.
pub fn target_arg(t: &Target) -> String {
    match t {
        Target::Local => "local".into(),
        Target::Netns(n) => format!("netns:{n}"),
        Target::Ssh(d) => format!("ssh:{d}"),
        Target::SshSysctl(h) => h.arg(),
        Target::Place(p) => p.arg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(Target::parse("local"), Ok(Target::Local));
        assert_eq!(Target::parse("netns:x1"), Ok(Target::Netns("x1".into())));
        assert_eq!(
            Target::parse("ssh:me@host"),
            Ok(Target::Ssh("me@host".into()))
        );
        assert!(Target::parse("ssh:-oProxyCommand=x").is_err());
        assert!(Target::parse("netns:../x").is_err());
        assert!(Target::parse("lab:wan:b").is_err());
    }

    #[test]
    fn bdp_of_10g_at_1_6_ms() {
        let text = bdp_text(10e9, 0.0016, &|k| {
            (k == "net.ipv4.tcp_rmem").then(|| "4096\t131072\t6291456".to_string())
        });
        assert!(text.contains("2000000 bytes"), "{text}");
        assert!(text.contains("net.ipv4.tcp_rmem = \"4096 131072 4000000\"   (now \"4096 131072 6291456\": enough)"), "{text}");
        assert!(
            text.contains("net.ipv4.tcp_wmem = \"4096 16384 4000000\"   (now \"\": unknown)"),
            "{text}"
        );
        // Regression: the hint ended with `--rate RATE --rtt RTT` placeholders.
        assert!(
            text.contains("tune apply high-bdp --rate 10G --rtt 1.6ms"),
            "{text}"
        );
    }

    #[test]
    fn a_profile_without_the_targets_table_is_refused_before_any_command() {
        let t = Target::SshSysctl(SshHost {
            dest: "root@198.18.0.9".into(),
            ssh_options: Vec::new(),
            os: Os::FreeBsd,
        });
        assert_eq!(t.os(), Os::FreeBsd);
        assert_eq!(t.id(), "ssh-root_198.18.0.9");
        let p = profile::builtin("large-buffers", None).unwrap();
        let mut linux_only = p.clone();
        linux_only.freebsd.clear();
        // No ssh runs: the missing table is found first.
        let e = validate(&t, &linux_only, &ApplyOptions::default()).unwrap_err();
        assert!(
            e[0].contains("no [profiles.large-buffers.freebsd] table"),
            "{e:?}"
        );
    }
}
