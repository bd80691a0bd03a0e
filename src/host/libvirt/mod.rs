//! A user's own libvirt domain as a measurement target: its NIC model changed for a campaign
//! and always put back. `Session` holds one domain: it keeps the original definition in a
//! journal before the first change, changes only the chosen interface's `<model type>`,
//! restarts the domain for the change to take effect, and restores the definition and the
//! domain's state when dropped (end, failure, Ctrl-C); a kill -9 leaves the journal, which
//! the next `netsweep run` or `doctor --libvirt` restores (`journal::recover_stale`).
//! `virsh` talks to libvirt; `xml` is the pure part.

pub mod journal;
pub mod virsh;
pub mod xml;

use std::time::Duration;
use virsh::{State, Virsh};

/// The journals, locks and definitions given to `virsh define`: on storage that survives a
/// reboot (`/var/lib/netsweep/libvirt` as root, else the user's state directory), since a
/// domain's changed definition does (`NETSWEEP_RUNTIME_DIR/libvirt` when that is set).
pub fn dir() -> std::path::PathBuf {
    super::state_dir().join("libvirt")
}

/// One domain in use by this process.
pub struct Session {
    pub virsh: Virsh,
    pub domain: String,
    /// Which interface of the definition the model applies to.
    index: usize,
    /// The model that interface has now (in the definition and, once restarted, running).
    model: Option<String>,
    original: String,
    was_running: bool,
    journal: std::path::PathBuf,
    journaled: bool,
    /// How long a guest may take to shut down before it is powered off.
    pub grace: Duration,
    /// This campaign's hold on the domain, from `open` until after the restore (`Drop` runs
    /// before the fields are dropped); the kernel releases it if the process dies.
    _held: crate::platform::filelock::FileLock,
}

impl Session {
    /// Opens `domain` and holds it: a second campaign on it is refused by name (two campaigns
    /// changing one domain would undo each other and store runs under the wrong model). A
    /// journal left by a process that died is restored first (`journal::stale`: not when the
    /// domain was edited since, nor by a check, which stops there); one that does not read back
    /// whole stops it, with the recovery by hand.
    pub fn open(
        virsh: Virsh,
        domain: &str,
        mac: Option<&str>,
        (grace, stale): (Duration, journal::Stale),
    ) -> Result<(Session, Vec<String>), String> {
        let journal = journal::path_of(virsh.uuid(domain).as_deref(), domain, virsh.uri.as_deref());
        let lock = journal::lock_path(&journal);
        if let Some(parent) = lock.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let held = match crate::platform::filelock::FileLock::try_acquire(&lock) {
            Ok(h) => h,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(format!(
                    "libvirt domain {domain} is in use by another netsweep campaign (it holds \
                     {}): wait for it to end",
                    lock.display()
                ));
            }
            Err(e) => return Err(format!("cannot lock {}: {e}", lock.display())),
        };
        let mut notes = Vec::new();
        let found = journal::load(&journal)?;
        if found.is_none() {
            journal::orphaned_original(&journal)?;
        }
        if let Some(j) = found {
            let say = |l: &str| crate::errln!("{l}");
            notes.push(journal::stale(&journal, &j, (grace, stale), &say)?);
        }
        let original = virsh.dumpxml(domain, true)?;
        let ifaces = xml::interfaces(&original)?;
        let index = xml::pick(&ifaces, mac)?;
        let was_running = virsh.state(domain)? == State::Running;
        Ok((
            Session {
                model: ifaces[index].model.clone(),
                virsh,
                domain: domain.to_string(),
                index,
                original,
                was_running,
                journal,
                journaled: false,
                grace,
                _held: held,
            },
            notes,
        ))
    }

    /// The model of the interface in use (`None`: libvirt's default).
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The interface in use, as the definition has it now.
    pub fn interface(&self) -> Result<xml::Interface, String> {
        let now = self.virsh.dumpxml(&self.domain, true)?;
        xml::interfaces(&now)?
            .get(self.index)
            .cloned()
            .ok_or_else(|| "the interface is gone from the definition".into())
    }

    fn journal_first(&mut self) -> Result<(), String> {
        if self.journaled {
            return Ok(());
        }
        journal::write(
            &self.journal,
            &journal::Journal {
                uri: self.virsh.uri.clone(),
                domain: self.domain.clone(),
                original: self.original.clone(),
                was_running: self.was_running,
                owner_pid: std::process::id(),
                created_unix: crate::platform::clock::now_unix(),
                original_sha256: String::new(),
                grace_s: Some(self.grace.as_secs_f64()),
            },
        )?;
        self.journaled = true;
        Ok(())
    }

    /// Starts the domain if it is not running; whether it did.
    pub fn ensure_running(&mut self) -> Result<bool, String> {
        match self.virsh.state(&self.domain)? {
            State::Running => Ok(false),
            State::ShutOff => {
                self.journal_first()?;
                self.virsh.start(&self.domain)?;
                Ok(true)
            }
            State::Other(s) => Err(format!(
                "libvirt domain {} is {s}: resume or shut it off first",
                self.domain
            )),
        }
    }

    /// Gives the interface `model` and restarts the domain with it; whether anything changed.
    pub fn set_model(&mut self, model: &str) -> Result<bool, String> {
        xml::valid_model(model)?;
        if self.model.as_deref() == Some(model) {
            return self.ensure_running();
        }
        self.journal_first()?;
        let now = self.virsh.dumpxml(&self.domain, true)?;
        let changed = xml::with_model(&now, self.index, model)?;
        self.virsh.define(&changed)?;
        self.model = Some(model.to_string());
        self.virsh.stop(&self.domain, self.grace)?;
        self.virsh.start(&self.domain)?;
        Ok(true)
    }

    /// Puts the domain back as it was found; what was done, in words.
    pub fn restore(&mut self) -> Result<Option<String>, String> {
        if !self.journaled {
            return Ok(None);
        }
        let j = journal::load(&self.journal)?.ok_or_else(|| {
            format!(
                "the journal {} of libvirt domain {} is gone",
                self.journal.display(),
                self.domain
            )
        })?;
        let line = journal::restore(&self.journal, &j, self.grace)?;
        self.journaled = false;
        self.model = xml::interfaces(&self.original)?
            .get(self.index)
            .and_then(|i| i.model.clone());
        Ok(Some(line))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        match self.restore() {
            Ok(Some(line)) => crate::errln!("netsweep: {line}"),
            Ok(None) => {}
            Err(e) => crate::errln!(
                "netsweep: could not restore libvirt domain {}: {e}; its original definition \
                 is in {} and the next `netsweep run` restores it",
                self.domain,
                self.journal.display()
            ),
        }
    }
}

/// The driver the guest bound to its interface with `mac` (`virtio_net`, `e1000`, `8139cp`),
/// read over ssh from the guest's `/sys/class/net` (a Linux guest).
pub fn guest_driver(dest: &str, ssh_options: &[String], mac: &str) -> Result<String, String> {
    let mac = mac.to_ascii_lowercase();
    if !xml::valid_mac(&mac) {
        return Err(format!("{mac:?} is not a MAC address"));
    }
    let script = format!(
        "for d in /sys/class/net/*; do if [ \"$(cat \"$d/address\" 2>/dev/null)\" = {mac} ]; \
         then basename \"$(readlink \"$d/device/driver\")\"; fi; done"
    );
    let out = crate::host::tuning::ssh_command(ssh_options)
        .args(["-o", "ConnectTimeout=5", "--", dest, &script])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ssh {dest}: {}",
            crate::inputs::peer_text(String::from_utf8_lossy(&out.stderr).trim())
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(crate::inputs::peer_text)
        .ok_or_else(|| format!("no interface with MAC {mac} in the guest {dest}"))
}
