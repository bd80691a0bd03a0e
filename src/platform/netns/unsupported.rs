//! Labs on systems without Linux network namespaces: the same interface, failing with one
//! clear sentence (`lab`, lab targets of plans and `tune --target lab:...`/`netns:...`).

use anyhow::bail;
use std::fs::File;

/// Why a lab cannot run here.
fn refusal() -> anyhow::Error {
    anyhow::anyhow!(
        "netsweep labs need Linux (network namespaces, veth, TUN and tc); this is {}: \
         run the lab on a Linux host, or measure real hosts with `netsweep server` and \
         `netsweep client`",
        std::env::consts::OS
    )
}

pub fn check_privileges() -> anyhow::Result<()> {
    Err(refusal())
}

pub fn exists(_ns: &str) -> bool {
    false
}

pub fn list() -> Vec<String> {
    Vec::new()
}

pub fn name_of(_link: &str) -> Option<String> {
    None
}

pub fn this_threads() -> Option<String> {
    None
}

pub fn pids(_ns: &str) -> Vec<u32> {
    Vec::new()
}

pub fn favour_this_thread() {}

pub fn enter(_ns: &str) -> anyhow::Result<()> {
    Err(refusal())
}

pub fn run_in<T: Send>(_ns: &str, _f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    Err(refusal())
}

pub fn run_in_scratch<T: Send>(_f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
    Err(refusal())
}

pub fn spawn_in<F>(_ns: &str, _f: F) -> anyhow::Result<std::thread::JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    Err(refusal())
}

pub fn open_tun(name: &str) -> anyhow::Result<File> {
    bail!("no TUN device {name}: {}", refusal())
}

pub fn wait_readable(_fd: &File, timeout: std::time::Duration) -> bool {
    std::thread::sleep(timeout);
    false
}
