//! What is recorded about a lab: one JSON state file per lab in the state directory (owner-only,
//! written atomically), read by the registry, the relay process and the guest agent.

use super::topology::{Emulator, Host, PathConfig};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Default directory of lab state files.
pub const STATE_DIR: &str = "/run/netsweep/labs";

/// What is recorded about a running lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabState {
    pub name: String,
    pub path: PathConfig,
    pub emulator: Emulator,
    pub relay_pid: Option<u32>,
    pub created_unix_s: u64,
    /// The process whose lab this is while it runs (a campaign, `lab test`); `None` for a lab
    /// kept by `lab up`. A lab whose owner died without removing it is an orphan (`reap`).
    #[serde(default)]
    pub owner_pid: Option<u32>,
    /// Host b as a QEMU guest (`--vm b`).
    #[serde(default)]
    pub guest: Option<super::vm::guest::GuestState>,
    /// Host a as a QEMU guest (`--vm both`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_a: Option<super::vm::guest::GuestState>,
    /// The secret its guests' command channels ask for first (`vm::channel`); only in this
    /// owner-only file and on the guests' kernel command lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_token: Option<String>,
}

impl LabState {
    /// Host `h`'s guest, when it is one.
    pub fn guest_at(&self, h: Host) -> Option<&super::vm::guest::GuestState> {
        match h {
            Host::A => self.guest_a.as_ref(),
            Host::B => self.guest.as_ref(),
        }
    }
}

fn state_file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// Reads a lab's state file, if any.
pub fn read_state(dir: &Path, name: &str) -> Option<LabState> {
    let text = std::fs::read_to_string(state_file(dir, name)).ok()?;
    serde_json::from_str(&text).ok()
}

pub(super) fn write_state(dir: &Path, state: &LabState) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = state_file(dir, &state.name);
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    // Owner-only: the state holds the lab's token for its guests' command channels.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&serde_json::to_vec_pretty(state)?))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}
