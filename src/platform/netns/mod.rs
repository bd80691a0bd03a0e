//! Platform leaf for labs: network namespaces, TUN devices, and running `ip`/`tc` with their
//! errors captured. Labs are Linux only: on other systems every lab entry point fails in
//! `check_privileges` with a sentence saying so (`unsupported.rs`).

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub use unsupported::*;

use anyhow::{Context, bail};
use std::process::Command;

/// Runs a command, failing with its stderr.
pub fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
