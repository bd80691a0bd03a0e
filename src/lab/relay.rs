//! The userspace delay line of a lab: the two forwarding threads between the hosts' TUN
//! devices, run either inside the process that owns the `Lab` or as a detached
//! `netsweep lab relay NAME` process that outlives `lab up`. Stopping a relay checks that the pid
//! still belongs to it first.

use super::delayline::{self, Counters, Impairment, Schedule};
use super::state::read_state;
use super::topology::{Host, LabNames};
use crate::platform::{netns, process};
use anyhow::{Context, bail};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The stop flag, the forwarding threads and their per-direction counters.
pub type DelayLine = (
    Arc<AtomicBool>,
    Vec<std::thread::JoinHandle<()>>,
    Arc<[Counters; 2]>,
);

/// Attaches to both TUN devices and starts one forwarding thread per direction.
pub fn spawn_delay_line(names: &LabNames, imp: Impairment) -> anyhow::Result<DelayLine> {
    let tun_a = netns::run_in(&names.namespace(Host::A), || {
        netns::open_tun(&names.device(Host::A))
    })??;
    let tun_b = netns::run_in(&names.namespace(Host::B), || {
        netns::open_tun(&names.device(Host::B))
    })??;
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Arc<[Counters; 2]> = Arc::new([Counters::default(), Counters::default()]);
    let (a, b) = (Arc::new(tun_a), Arc::new(tun_b));
    let seed: u64 = rand::random();
    let mut handles = Vec::new();
    for (dir, (from, to)) in [(a.clone(), b.clone()), (b, a)].into_iter().enumerate() {
        let (stop, counters) = (stop.clone(), counters.clone());
        let schedule = Schedule::new(imp, dir, seed.wrapping_add(dir as u64));
        handles.push(
            std::thread::Builder::new()
                .name(format!("delay-line-{dir}"))
                .spawn(move || {
                    netns::favour_this_thread();
                    delayline::forward(&from, &to, schedule, &stop, &counters[dir])
                })?,
        );
    }
    Ok((stop, handles, counters))
}

/// Runs the delay line of lab `name` in this process until `stop` (the `lab relay` command).
pub fn run_relay(name: &str, state_dir: &Path, stop: &AtomicBool) -> anyhow::Result<()> {
    let state = read_state(state_dir, name).with_context(|| format!("no state for lab {name}"))?;
    let names = LabNames::new(name).map_err(anyhow::Error::msg)?;
    let imp = Impairment::of(&state.path);
    let (line_stop, handles, _) = spawn_delay_line(&names, imp)?;
    crate::outln!("ready");
    let mut ticks = 0u64;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        ticks += 1;
        // A lab removed without this relay (its namespaces deleted by a recovery that could
        // not see it) is not kept alive by the TUN devices held here: the relay ends.
        if ticks.is_multiple_of(10)
            && [Host::A, Host::B]
                .iter()
                .any(|h| !netns::exists(&names.namespace(*h)))
        {
            crate::errln!("lab {name}: its namespaces are gone, the delay line stops");
            break;
        }
    }
    line_stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    Ok(())
}

pub(super) fn spawn_relay_daemon(exe: &Path, name: &str, state_dir: &Path) -> anyhow::Result<u32> {
    let log = std::fs::File::create(state_dir.join(format!("{name}.log")))?;
    let mut cmd = Command::new(exe);
    cmd.args(["lab", "relay", name, "--state-dir"])
        .arg(state_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    // The relay leaves our session so Ctrl-C here does not stop a lab that `lab up` created
    // to outlive this process.
    process::detach_session(&mut cmd);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let pid = child.id();
    let stdout = child.stdout.take().context("relay stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(line) if line.trim() == "ready" => Ok(pid),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the delay line did not start; see {}",
                state_dir.join(format!("{name}.log")).display()
            )
        }
    }
}

pub(super) fn is_our_relay(pid: u32, name: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            args.windows(3)
                .any(|w| w[0] == b"lab" && w[1] == b"relay" && w[2] == name.as_bytes())
        })
        .unwrap_or(false)
}

/// Stops our relay `pid` (identified by the caller): SIGTERM, then SIGKILL after 2 s.
pub(super) fn stop_process(pid: u32) {
    process::terminate(pid);
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && process::alive(pid) {
        std::thread::sleep(Duration::from_millis(20));
        // Reap it if it is our child (lab test); harmless otherwise.
        process::reap(pid);
    }
    if process::alive(pid) {
        process::kill(pid);
    }
}
