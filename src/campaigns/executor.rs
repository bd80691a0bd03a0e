//! The real `runner::Executor`s: loopback (a server thread on 127.0.0.1), a temporary lab
//! (server on host b, client on host a), and the address of a running `netsweep server`.
//! Each reads kernel counters before and after every test on the hosts it can see.

use crate::campaigns::plan::Plan;
use crate::campaigns::runner::{self, ExecOutcome, Executor};
use crate::lab::vm::guest::GuestState;
use crate::lab::{Host, Lab, LabOptions, PathConfig};

mod libvirt;
mod pool;
use crate::traffic::client::{self, ClientConfig, PeerProtocol};
use crate::traffic::result::TestResult;
use crate::traffic::spec::{ServerLimits, TestSpec};
use crate::{host::counters, host::hostfacts, traffic::server};
use anyhow::Context;
pub use libvirt::LibvirtExecutor;
use pool::{LabPool, Switch};
use serde_json::json;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Runs the client, timing only the test itself.
fn client_run(
    cfg: &ClientConfig,
    spec: &TestSpec,
    stop: &AtomicBool,
) -> (Result<crate::traffic::result::TestResult, String>, Duration) {
    let t = Instant::now();
    let r = match crate::traffic::rr::spec_of(spec) {
        // A request/response test (`test = "rr"`): its result rides in the document's `rr`.
        Some(rr) => rr.and_then(|rr| {
            crate::traffic::rr::client::run(cfg, &rr, stop)
                .map(|r| r.into_test_result(spec))
                .map_err(|e| e.message)
        }),
        None => client::run_test(cfg, spec, stop, &mut |_| {}).map_err(|e| e.message),
    };
    (r, t.elapsed())
}

fn delta_json(before: &counters::Snapshot, after: &counters::Snapshot) -> serde_json::Value {
    serde_json::to_value(counters::delta(before, after)).unwrap_or_default()
}

/// Where each UDP direction's lost datagrams went on a lab path (`lab::loss`): a sentence per
/// direction that lost any. `hosts` are hosts a's and b's counter deltas and devices.
pub fn udp_loss_sentences(
    r: &TestResult,
    drops: &[Option<crate::lab::loss::PathDrops>; 2],
    hosts: [&counters::Delta; 2],
    devices: [String; 2],
) -> Vec<String> {
    use crate::traffic::spec::{Flow, Protocol};
    if r.spec.protocol != Protocol::Udp {
        return Vec::new();
    }
    r.directions
        .iter()
        .filter_map(|d| {
            // Host a runs the client: client-to-server goes a -> b (the delay line's first
            // direction).
            let (from, to, way) = match d.flow {
                Flow::ClientToServer => (0, 1, "a to b"),
                Flow::ServerToClient => (1, 0, "b to a"),
            };
            let sentence = crate::lab::loss::account(
                Some(d.summary.lost_packets.unwrap_or(0)),
                drops[from],
                hosts[from],
                hosts[to],
                &devices[from],
            )?;
            Some(format!("UDP from host {way} on the lab path, {sentence}"))
        })
        .collect()
}

/// Runs a test from this host, with this host's counters around it under `side`.
fn run_here(cfg: &ClientConfig, spec: &TestSpec, stop: &AtomicBool, side: &str) -> ExecOutcome {
    let before = counters::read_live();
    let (result, engine_time) = client_run(cfg, spec, stop);
    let after = counters::read_live();
    ExecOutcome {
        result,
        engine_time,
        counters: Some(json!({ side: delta_json(&before, &after) })),
    }
}

/// The result document a guest's `netsweep client --json` printed (its warnings, on the same
/// channel, come before it), or what it said instead.
fn result_document(out: &str) -> Result<TestResult, String> {
    let start = out
        .find("\n{")
        .map(|i| i + 1)
        .or(out.starts_with('{').then_some(0));
    let Some(start) = start else {
        return Err(format!(
            "the guest's client printed no result: {}",
            out.trim()
        ));
    };
    serde_json::from_str(out[start..].trim_end()).map_err(|e| {
        format!(
            "the guest's client result cannot be read ({e}): {}",
            out.trim()
        )
    })
}

/// Runs a command of a user dimension through `sh -c`.
fn shell(command: &str) -> Result<(), String> {
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{command}` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A netsweep server on 127.0.0.1 inside this process.
pub struct LoopbackExecutor {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl LoopbackExecutor {
    pub fn start() -> anyhow::Result<LoopbackExecutor> {
        let listener = TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let log: server::Log = Arc::new(|_: &str| {});
            let _ = server::run(listener, ServerLimits::default(), &flag, log);
        });
        Ok(LoopbackExecutor {
            addr,
            stop,
            handle: Some(handle),
        })
    }
}

impl Drop for LoopbackExecutor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Executor for LoopbackExecutor {
    fn describe(&self) -> String {
        format!("loopback {}", self.addr)
    }

    fn host_facts(&mut self) -> serde_json::Value {
        json!({ "local": hostfacts::collect_live() })
    }

    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome {
        // Client and server share this host: one set of counters covers both sides.
        run_here(&ClientConfig::new(self.addr), spec, stop, "local")
    }

    fn shell(&mut self, command: &str) -> Result<(), String> {
        shell(command)
    }
}

/// A temporary lab: netsweep's server on host b, the client on host a. A path with a guest
/// keeps its lab while memory allows (`pool`).
pub struct LabExecutor {
    labs: LabPool,
    /// Each guest booted so far, by its NIC: its state and its own doctor's findings.
    guests: serde_json::Map<String, serde_json::Value>,
}

impl LabExecutor {
    /// The lab of `path` in use, and at once those of `others` (the other paths the campaign
    /// will use) that need guests of their own, while memory allows (`pool`).
    pub fn start(
        name: &str,
        path: PathConfig,
        others: &[PathConfig],
        opts: &LabOptions,
    ) -> anyhow::Result<LabExecutor> {
        // Each guest's warm-up and facts as soon as it is up, while the others boot (nothing
        // is measured yet).
        let welcome = |lab: &Lab| {
            warm_up(lab);
            guest_facts(lab, Host::B)
        };
        let (labs, facts, problems) = LabPool::start(name, path, others, opts, &welcome)?;
        for p in problems {
            crate::errln!("netsweep: {p} (tried again when a run needs it)");
        }
        let mut exec = LabExecutor {
            labs,
            guests: serde_json::Map::new(),
        };
        for (k, v) in facts.into_iter().flatten() {
            exec.guests.entry(k).or_insert(v);
        }
        Ok(exec)
    }
}

/// Runs `test` with a stop flag of its own, raised by the user's `stop` or, checked every
/// 100 ms, by a guest of `lab` whose QEMU exited: the test then ends at once, where its client
/// waited 20 s for a final result from a server that was gone. Whether a guest died.
fn watching_guests<T>(
    lab: &Lab,
    stop: &AtomicBool,
    test: impl FnOnce(&AtomicBool) -> T,
) -> (T, bool) {
    if lab.guest().is_none() {
        return (test(stop), false);
    }
    let (mine, over, died) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !over.load(Ordering::Relaxed) {
                if !dead_guests(lab).is_empty() {
                    died.store(true, Ordering::Relaxed);
                }
                if stop.load(Ordering::Relaxed) || died.load(Ordering::Relaxed) {
                    mine.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = test(&mine);
        over.store(true, Ordering::Relaxed);
        out
    });
    (out, died.load(Ordering::Relaxed))
}

/// The guests of `lab` whose QEMU no longer runs, with their hosts.
fn gone_guests(lab: &Lab) -> impl Iterator<Item = (Host, &GuestState)> {
    [Host::A, Host::B]
        .into_iter()
        .filter_map(|h| Some((h, lab.guest_at(h)?)))
        .filter(|(_, g)| g.gone())
}

/// Each guest of `lab` whose QEMU no longer runs, said in a sentence.
fn dead_guests(lab: &Lab) -> Vec<String> {
    gone_guests(lab)
        .map(|(h, g)| {
            format!(
                "host {}'s guest ({} NIC, QEMU pid {}) is no longer running",
                h.letter(),
                g.spec.nic.name(),
                g.pid
            )
        })
        .collect()
}

/// The facts of a lab host's guest: its state and what its own doctor says (run inside it),
/// under its NIC model's name.
fn guest_facts(lab: &Lab, h: Host) -> Option<(String, serde_json::Value)> {
    let g = lab.guest_at(h)?;
    let doctor = lab
        .exec_in_guest(h, &["netsweep".into(), "doctor".into(), "--json".into()])
        .ok()
        .and_then(|(out, _)| serde_json::from_str::<serde_json::Value>(&out).ok())
        .unwrap_or(serde_json::Value::Null);
    Some((
        g.spec.nic.name().to_string(),
        json!({ "guest": serde_json::to_value(g).unwrap_or_default(), "doctor": doctor }),
    ))
}

/// A short test from host a to a new guest, not measured: under TCG a guest's first test runs
/// its server's code for the first time, which QEMU translates then (about 2 s here); done for
/// every guest at once before the first run, that time leaves the runs and overlaps.
fn warm_up(lab: &Lab) {
    if lab.guest().is_none() || lab.guest_at(Host::A).is_some() {
        return;
    }
    let addr = SocketAddr::new(Host::B.address(), crate::traffic::protocol::DEFAULT_PORT);
    let mut spec = TestSpec::tcp(Duration::from_millis(200));
    spec.calibration = Duration::ZERO;
    let _ = lab.run_in(Host::A, || {
        client::run_test(
            &ClientConfig::new(addr),
            &spec,
            &AtomicBool::new(false),
            &mut |_| {},
        )
    });
}

impl LabExecutor {
    /// Readies the lab just built for runs: warms its guest, and keeps the guest's facts once
    /// per NIC model.
    fn welcome(&mut self) {
        warm_up(self.lab());
        let nic = self.lab().guest().map(|g| g.spec.nic.name().to_string());
        if nic.is_some_and(|n| !self.guests.contains_key(&n))
            && let Some((k, v)) = guest_facts(self.lab(), Host::B)
        {
            self.guests.insert(k, v);
        }
    }

    fn lab(&self) -> &Lab {
        self.labs.lab()
    }

    /// Each host's kernel counters: a namespace's read here, a guest's read inside it through
    /// the lab's command channel (`None` if the guest did not answer).
    fn snapshot(&self) -> (Option<counters::Snapshot>, Option<counters::Snapshot>) {
        let lab = self.lab();
        let read = |h| match lab.guest_at(h) {
            Some(_) => crate::lab::guest_counters(lab.state_dir(), lab.name(), h).ok(),
            None => lab.run_in(h, counters::read_live).ok(),
        };
        (read(Host::A), read(Host::B))
    }

    /// Runs the test from host a's guest: its netsweep gets the whole test as JSON and
    /// answers with its result document. `stop` (Ctrl-C) stops the wait at once: the run is
    /// then discarded, and the guest, still running it, goes with the lab.
    fn run_in_guest_a(
        &self,
        spec: &TestSpec,
        stop: &AtomicBool,
    ) -> (Result<TestResult, String>, Duration) {
        if let Some(rr) = &spec.rr {
            let why = format!(
                "test = \"{}\": request/response tests do not run from a lab's guest yet; \
                 drop vm from [target] for them",
                rr.mode.name()
            );
            return (Err(why), Duration::ZERO);
        }
        let json = match serde_json::to_string(spec) {
            Ok(j) => j,
            Err(e) => return (Err(e.to_string()), Duration::ZERO),
        };
        let argv: Vec<String> = [
            "netsweep",
            "client",
            &Host::B.ipv4().to_string(),
            "--json",
            "--spec-json",
            &json,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let t = Instant::now();
        let name = self.lab().name().to_string();
        let dir = self.lab().state_dir().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(crate::lab::exec_in_guest(&dir, &name, Host::A, &argv));
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => {
                    let r = r
                        .map_err(|e| format!("{e:#}"))
                        .and_then(|(out, _)| result_document(&out));
                    return (r, t.elapsed());
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if !stop.load(Ordering::Relaxed) => {}
                Err(_) => return (Err("interrupted".into()), t.elapsed()),
            }
        }
    }
}

impl Executor for LabExecutor {
    fn describe(&self) -> String {
        let lab = self.lab();
        let p = lab.path();
        let guest = lab
            .guest()
            .map(|g| {
                format!(
                    "; {}: {}; first with a {} (each NIC model or path swept gets a guest of its \
                     own, kept running while memory allows: {} up)",
                    match lab.guest_at(Host::A) {
                        Some(_) => "hosts a and b (guest to guest)",
                        None => "host b",
                    },
                    g.machine(),
                    g.nic(),
                    self.labs.len()
                )
            })
            .unwrap_or_default();
        format!(
            "lab {} (rate {}, {}, loss {}%, MTU {}/{}, {}){guest}",
            lab.name(),
            match (p.rate_bps, p.queue_delay()) {
                (Some(r), Some(q)) => format!(
                    "{} with a queue of {:.1} ms",
                    crate::units::BitRate(r),
                    q.as_secs_f64() * 1e3
                ),
                _ => "unlimited".into(),
            },
            p.delay_text(),
            p.loss_percent,
            p.mtu_a,
            p.mtu_b,
            lab.emulator().describe()
        )
    }

    fn host_facts(&mut self) -> serde_json::Value {
        // A namespace's facts are read in it; a guest's are what it was given, the driver it
        // bound and its own doctor's findings (run inside it through the lab's command
        // channel), never the namespace that holds it: its kernel and buffer limits are its
        // own. Host b's later guests are in `facts_gathered`.
        let lab = self.lab();
        let facts = |h| match guest_facts(lab, h) {
            Some((_, guest)) => guest,
            None => lab.run_in(h, hostfacts::collect_live).unwrap_or_default(),
        };
        let current = lab.guest().map(|g| g.spec.nic.name());
        let b = match current.and_then(|n| self.guests.get(n)) {
            Some(g) => g.clone(),
            None => facts(Host::B),
        };
        json!({ "a": facts(Host::A), "b": b, "path": serde_json::to_value(self.lab().path()).unwrap_or_default() })
    }

    fn tuning_targets(&self) -> Vec<crate::host::tuning::Target> {
        // A guest is tuned inside its own kernel, through the lab's command channel.
        let lab = self.lab();
        [Host::A, Host::B]
            .into_iter()
            .map(|h| match lab.guest_at(h) {
                Some(_) => crate::lab::vm::agent::guest_target(lab.state_dir(), lab.name(), h),
                None => crate::host::tuning::Target::Netns(lab.namespace(h)),
            })
            .collect()
    }

    fn path(&self) -> Option<PathConfig> {
        Some(self.lab().path().clone())
    }

    fn set_path(&mut self, path: &PathConfig) -> Result<bool, String> {
        Ok(match self.labs.switch(path)? {
            Switch::Same => false,
            Switch::ToRunning => true,
            Switch::ToNew => {
                self.welcome();
                true
            }
        })
    }

    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome {
        let drops0 = self.lab().delay_line_drops_by_direction();
        let (a0, b0) = self.snapshot();
        let addr = SocketAddr::new(Host::B.address(), crate::traffic::protocol::DEFAULT_PORT);
        let ((result, engine_time), died) = watching_guests(self.lab(), stop, |mine| {
            match self.lab().guest_at(Host::A) {
                Some(_) => self.run_in_guest_a(spec, mine),
                None => self
                    .lab()
                    .run_in(Host::A, || client_run(&ClientConfig::new(addr), spec, mine))
                    .unwrap_or_else(|e| (Err(e.to_string()), Duration::ZERO)),
            }
        });
        let result = match died {
            true => Err("the test was stopped when the guest's QEMU exited".to_string()),
            false => result,
        };
        if stop.load(Ordering::Relaxed) {
            // Discarded by the runner; a guest may still be busy with the test it was given.
            return ExecOutcome::failed("interrupted".into());
        }
        // A failed test with a guest's server: a guest whose QEMU is gone, said first (a trial
        // killed one and read "No route to host" five times); where the server logged, and its
        // last words.
        let mut result = result.map_err(|e| {
            let lab = self.lab();
            let gone = dead_guests(lab);
            let e = if gone.is_empty() {
                e
            } else {
                format!("{}: {e}", gone.join("; "))
            };
            match lab.guest_at(Host::B) {
                Some(g) => format!("{e}\n{}", g.console_tail()),
                None => e,
            }
        });
        // RFC 6349's metrics against the lab's own path, wherever the client ran.
        if let Ok(r) = &mut result
            && r.rr.is_none()
        {
            let lab = self.lab();
            let facts = lab.path().rfc6349_facts(lab.emulator());
            r.rfc6349 = crate::traffic::result::rfc6349::of(r, &facts);
        }
        let (a1, b1) = self.snapshot();
        let drops = crate::lab::loss::between(drops0, self.lab().delay_line_drops_by_direction());
        if let (Ok(r), Some(a0), Some(a1), Some(b0), Some(b1)) = (&mut result, &a0, &a1, &b0, &b1) {
            let (da, db) = (counters::delta(a0, a1), counters::delta(b0, b1));
            let lab = self.lab();
            r.warnings.extend(udp_loss_sentences(
                r,
                &drops,
                [&da, &db],
                [lab.device(Host::A), lab.device(Host::B)],
            ));
        }
        let delta = |x: Option<counters::Snapshot>, y: Option<counters::Snapshot>| match (x, y) {
            (Some(x), Some(y)) => delta_json(&x, &y),
            _ => json!(null),
        };
        ExecOutcome {
            result,
            engine_time,
            counters: Some(json!({ "client": delta(a0, a1), "server": delta(b0, b1) })),
        }
    }

    fn shell(&mut self, command: &str) -> Result<(), String> {
        shell(command)
    }

    fn dead_guests(&self) -> Vec<String> {
        dead_guests(self.lab())
    }

    fn revive(&mut self) -> Result<String, String> {
        let lab = self.lab();
        // Said now: the console files go down with the old lab.
        let tails: Vec<String> = gone_guests(lab)
            .map(|(h, g)| {
                format!(
                    "host {}'s dead guest's console ended with:\n{}",
                    h.letter(),
                    g.last_words()
                )
            })
            .collect();
        self.labs.rebuild_current()?;
        self.welcome();
        Ok(tails.join("\n"))
    }

    fn facts_gathered(&mut self) -> Option<serde_json::Value> {
        (!self.guests.is_empty()).then(|| serde_json::Value::Object(self.guests.clone()))
    }

    fn far_check(&self, plan: &Plan) -> (Vec<String>, Vec<String>) {
        let lab = self.lab();
        let ends: Vec<(String, String)> = [Host::A, Host::B]
            .into_iter()
            .filter(|h| lab.guest_at(*h).is_some())
            .map(|h| {
                let key = "net.ipv4.tcp_available_congestion_control";
                (
                    format!("host {}'s guest", h.letter()),
                    crate::lab::guest_sysctl_read(lab.state_dir(), lab.name(), h, key)
                        .unwrap_or_default(),
                )
            })
            .collect();
        (runner::far_congestion_problems(plan, &ends), Vec::new())
    }
}

/// A `netsweep server` somewhere else; only the client's counters are visible.
pub struct AddressExecutor {
    pub addr: SocketAddr,
    /// What the server speaks: netsweep, or iperf3 (an `iperf3` target).
    pub peer: PeerProtocol,
}

impl Executor for AddressExecutor {
    fn describe(&self) -> String {
        match self.peer {
            PeerProtocol::Iperf3 => format!(
                "iperf3 server {} (the far end is iperf3: its totals per stream are its own, \
                 and its kernel counters are not available)",
                self.addr
            ),
            _ => format!("server {}", self.addr),
        }
    }

    fn host_facts(&mut self) -> serde_json::Value {
        json!({ "client": hostfacts::collect_live() })
    }

    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome {
        let cfg = ClientConfig {
            peer: self.peer,
            ..ClientConfig::new(self.addr)
        };
        run_here(&cfg, spec, stop, "client")
    }

    fn far_check(&self, plan: &Plan) -> (Vec<String>, Vec<String>) {
        if self.peer == PeerProtocol::Iperf3 {
            let warning = (!runner::congestion_names(plan).is_empty()).then(|| {
                format!(
                    "the plan's congestion controls cannot be checked on the iperf3 server {} \
                     before the campaign: a run whose control it lacks fails when it runs",
                    self.addr
                )
            });
            return (Vec::new(), warning.into_iter().collect());
        }
        let cfg = ClientConfig::new(self.addr);
        runner::far_refusals(plan, |spec| client::check(&cfg, spec))
    }

    fn shell(&mut self, command: &str) -> Result<(), String> {
        shell(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guests_result_document_is_read_after_its_warnings() {
        let spec = TestSpec::tcp(Duration::from_secs(2));
        let r = crate::campaigns::runner::tests::fake_result(&spec, 1_000_000);
        let doc = serde_json::to_string_pretty(&r).unwrap();
        let out = format!("netsweep: -w 4M: granted 425 KBytes\n{doc}\n");
        assert_eq!(result_document(&out).unwrap(), r);
        assert_eq!(result_document(&doc).unwrap(), r);
        let e = result_document("netsweep: cannot connect to 198.18.0.2:5310\n").unwrap_err();
        assert!(
            e.contains("printed no result") && e.contains("cannot connect"),
            "{e}"
        );
        assert!(result_document("{ cut off").is_err());
    }
}
