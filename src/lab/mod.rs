//! `netsweep lab`: two hosts in their own network namespaces (`nsw-NAME-a`, `nsw-NAME-b`,
//! addressed 198.18.0.1 and 198.18.0.2), joined by a path with a rate (`tbf`), delay, jitter and
//! loss. Delay and loss come from netem where the kernel has it, otherwise from netsweep's own
//! delay line between two TUN devices (`delayline`).
//!
//! The API is small: `Lab::up`, `Lab::run_in` / `Lab::command` to do something on a host, and
//! `Lab::down` (also on drop). `down_by_name` and `list` clean and show labs left by other
//! processes, using the state files in `state_dir`. Used by the `lab` commands, the campaign
//! runner and the physics tests.
//!
//! A lab is recorded in its state file before anything of it is made, and its child processes
//! (the relay, QEMU) are also found by their command lines (`processes`), so a kill at any point
//! leaves nothing that `lab list`, `lab down` or the next start's recovery cannot find.
//! `LabOptions::interrupt` (a signal's flag) stops a build between its steps or while a guest
//! boots, and the build removes what it made. `vm::agent` runs commands in guests.

pub mod delayline;
pub mod loss;
pub mod processes;
mod registry;
mod relay;
mod state;
pub mod topology;
pub mod vm;

pub use registry::{Listing, down_by_name, list, reap_orphans};
use relay::spawn_relay_daemon;
pub use relay::{DelayLine, run_relay, spawn_delay_line};
use state::write_state;
pub use state::{LabState, STATE_DIR, read_state};
pub use topology::{Emulator, Host, LabNames, PathConfig};
pub use vm::agent::{
    GUEST_EXEC_SILENCE, exec_in_guest, guest_counters, guest_sysctl_read, guest_sysctl_write,
};

use crate::platform::netns;
use anyhow::{Context, bail};
use delayline::{Counters, Impairment};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which emulator the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmulatorChoice {
    /// netem when the kernel has it, else the userspace delay line.
    Auto,
    Netem,
    Userspace,
}

/// Where the userspace delay line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayMode {
    /// Threads of this process; the lab lives as long as the `Lab` value.
    InProcess,
    /// A detached `EXE lab relay NAME` process, so the lab outlives this one (`lab up`).
    Daemon(PathBuf),
}

/// How to bring a lab up.
#[derive(Debug, Clone)]
pub struct LabOptions {
    pub state_dir: PathBuf,
    pub emulator: EmulatorChoice,
    pub relay: RelayMode,
    /// The netsweep binary a guest runs as its server (`PathConfig::guest`); this
    /// executable when `None`.
    pub guest_netsweep: Option<PathBuf>,
    /// Raised by a signal (`platform::signals`): the build stops at its next step, or while
    /// it waits for a guest, and removes what it made.
    pub interrupt: Option<&'static AtomicBool>,
}

/// Longest wait for a guest to boot (TCG on a busy 2-core machine takes 4-10 s).
pub const GUEST_BOOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            state_dir: PathBuf::from(STATE_DIR),
            emulator: EmulatorChoice::Auto,
            relay: RelayMode::InProcess,
            guest_netsweep: None,
            interrupt: None,
        }
    }
}

enum Relay {
    None,
    Threads {
        stop: Arc<AtomicBool>,
        handles: Vec<std::thread::JoinHandle<()>>,
        counters: Arc<[Counters; 2]>,
    },
    Daemon,
}

/// A running lab. Torn down on drop unless `persist` was called.
pub struct Lab {
    names: LabNames,
    state: LabState,
    state_dir: PathBuf,
    relay: Relay,
    keep: bool,
}

/// Checks a per-namespace sysctl before anything is written.
pub fn check_sysctl(key: &str, value: &str) -> Result<(), String> {
    let key_ok = key.starts_with("net.")
        && !key.contains("..")
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
    if !key_ok {
        return Err(format!(
            "sysctl {key:?} is not accepted: only net.* keys can be set on a lab host"
        ));
    }
    if value.is_empty() || value.contains(['\n', '\0']) || value.len() > 256 {
        return Err(format!("sysctl value {value:?} for {key} is not valid"));
    }
    Ok(())
}

fn sysctl_path(key: &str) -> PathBuf {
    Path::new("/proc/sys").join(key.replace('.', "/"))
}

/// Whether the kernel can add netem (tried on a dummy device inside `ns`).
fn netem_available(ns: &str) -> bool {
    let ok = netns::run(
        "ip",
        &["-n", ns, "link", "add", "nswprobe", "type", "dummy"],
    )
    .is_ok()
        && netns::run(
            "tc",
            &[
                "-n", ns, "qdisc", "add", "dev", "nswprobe", "root", "netem", "delay", "1ms",
            ],
        )
        .is_ok();
    let _ = netns::run("ip", &["-n", ns, "link", "del", "nswprobe"]);
    ok
}

impl Lab {
    /// Builds the lab. On any failure everything created so far is removed again.
    pub fn up(name: &str, path: PathConfig, opts: &LabOptions) -> anyhow::Result<Lab> {
        let names = LabNames::new(name).map_err(anyhow::Error::msg)?;
        path.validate().map_err(anyhow::Error::msg)?;
        netns::check_privileges()?;
        for h in [Host::A, Host::B] {
            if netns::exists(&names.namespace(h)) || read_state(&opts.state_dir, name).is_some() {
                bail!(
                    "lab {name} already exists (namespace {} or its state file): remove it with `{}`",
                    names.namespace(h),
                    crate::paste::netsweep(&["lab", "down", name])
                );
            }
        }
        let guests = path.guest_on(Host::A).is_some() || path.guest_on(Host::B).is_some();
        let mut lab = Lab {
            state: LabState {
                name: name.into(),
                path,
                emulator: Emulator::None,
                relay_pid: None,
                // Whole seconds, as the state file has always held them.
                created_unix_s: crate::platform::clock::now_unix() as u64,
                owner_pid: Some(std::process::id()),
                guest: None,
                guest_a: None,
                guest_token: None,
            },
            names,
            state_dir: opts.state_dir.clone(),
            relay: Relay::None,
            keep: false,
        };
        if guests {
            lab.state.guest_token = Some(vm::channel::new_token());
        }
        // From here on, dropping `lab` removes whatever was made.
        lab.build(opts)?;
        Ok(lab)
    }

    fn build(&mut self, opts: &LabOptions) -> anyhow::Result<()> {
        let (a, b) = (self.names.namespace(Host::A), self.names.namespace(Host::B));
        // Recorded before anything is made, so whatever a kill leaves is found by its name.
        write_state(&self.state_dir, &self.state)?;
        interrupted(opts)?;
        netns::run("ip", &["netns", "add", &a])?;
        netns::run("ip", &["netns", "add", &b])?;
        // An explicit choice is honoured even on an unimpaired path; auto uses no emulator there.
        let path = &self.state.path;
        self.state.emulator = match (path.impaired(), opts.emulator) {
            (false, EmulatorChoice::Auto)
                if !path.rate_needs_delay_line() || netem_available(&a) =>
            {
                Emulator::None
            }
            (false, EmulatorChoice::Auto) => Emulator::Userspace,
            (_, EmulatorChoice::Userspace) => Emulator::Userspace,
            (_, choice) => {
                if netem_available(&a) {
                    Emulator::Netem
                } else if choice == EmulatorChoice::Netem {
                    bail!("this kernel has no sch_netem: use --emulator userspace (or auto)");
                } else {
                    Emulator::Userspace
                }
            }
        };
        let (da, db) = (self.names.device(Host::A), self.names.device(Host::B));
        if self.state.emulator == Emulator::Userspace {
            for (ns, dev) in [(&a, &da), (&b, &db)] {
                netns::run(
                    "ip",
                    &["-n", ns, "tuntap", "add", "dev", dev, "mode", "tun"],
                )?;
                // The delay line may be descheduled for a few ms: a long TUN queue absorbs
                // that instead of dropping (the default of 500 packets lasts 6 ms at 1 Gbit/s).
                netns::run(
                    "ip",
                    &["-n", ns, "link", "set", "dev", dev, "txqueuelen", "20000"],
                )?;
            }
        } else {
            netns::run(
                "ip",
                &[
                    "link", "add", &da, "netns", &a, "type", "veth", "peer", "name", &db, "netns",
                    &b,
                ],
            )?;
        }
        for h in [Host::A, Host::B] {
            interrupted(opts)?;
            self.configure_host(h, self.state.path.guest_on(h).is_some())?;
        }
        // The emulator is recorded before the relay starts; the relay names its lab and
        // state directory on its command line, where `down_by_name` finds it before its PID
        // is written.
        write_state(&self.state_dir, &self.state)?;
        interrupted(opts)?;
        if self.state.emulator == Emulator::Userspace {
            self.start_relay(&opts.relay)?;
        }
        test_pause("relay-started");
        write_state(&self.state_dir, &self.state)?;
        for h in [Host::B, Host::A] {
            let Some(spec) = self.state.path.guest_on(h) else {
                continue;
            };
            interrupted(opts)?;
            let exe = match &opts.guest_netsweep {
                Some(p) => p.clone(),
                None => std::env::current_exe().context("cannot find the netsweep executable")?,
            };
            self.boot_guest(h, &spec, &exe, opts.interrupt)?;
            write_state(&self.state_dir, &self.state)?;
            interrupted(opts)?;
            // The host's sysctls go into its guest's kernel, through the command channel.
            for (k, v) in self.state.path.sysctls(h) {
                guest_sysctl_write(&self.state_dir, &self.state.name, h, k, v).with_context(
                    || format!("cannot set {k}={v} in host {}'s guest", h.letter()),
                )?;
            }
        }
        Ok(())
    }

    /// Host `h`'s namespace becomes a router for the guest behind its TAP device: the guest
    /// has the host's address, the namespace answers ARP for each side (proxy ARP) and
    /// forwards, so the path (rate, delay, loss, queue) between the namespaces is the guest's
    /// path.
    fn route_to_guest(&self, h: Host) -> anyhow::Result<()> {
        let ns = self.names.namespace(h);
        let dev = self.names.device(h);
        let tap = self.names.tap(h);
        let mtu = self.state.path.mtu(h).to_string();
        netns::run(
            "ip",
            &["-n", &ns, "tuntap", "add", "dev", &tap, "mode", "tap"],
        )?;
        netns::run(
            "ip",
            &["-n", &ns, "link", "set", "dev", &tap, "mtu", &mtu, "up"],
        )?;
        // An address of the router's own (from the benchmarking range) for its ARP requests;
        // one per host, since a router drops ARP requests that come from its own address.
        let router = format!("{}/32", h.router_ipv4());
        netns::run("ip", &["-n", &ns, "addr", "add", &router, "dev", &tap])?;
        for (key, value) in [
            ("net.ipv4.ip_forward".to_string(), "1"),
            (format!("net.ipv4.conf.{dev}.proxy_arp"), "1"),
            (format!("net.ipv4.conf.{tap}.proxy_arp"), "1"),
        ] {
            netns::run_in(&ns, || std::fs::write(sysctl_path(&key), value))?
                .with_context(|| format!("cannot set {key} in {ns}"))?;
        }
        let far = format!("{}/32", h.other().ipv4());
        let own = format!("{}/32", h.ipv4());
        netns::run("ip", &["-n", &ns, "route", "add", &far, "dev", &dev])?;
        netns::run("ip", &["-n", &ns, "route", "add", &own, "dev", &tap])?;
        // The guest's command channel: reachable from this namespace's own sockets only. Its
        // route is in a table that only locally made packets consult (`iif lo`), so packets
        // from the path (forwarded) find no route to it.
        let control = format!("{}/32", h.control_ipv4());
        let router = h.router_ipv4().to_string();
        let table = CONTROL_TABLE.to_string();
        netns::run(
            "ip",
            &[
                "-n", &ns, "route", "add", &control, "dev", &tap, "src", &router, "table", &table,
            ],
        )?;
        netns::run(
            "ip",
            &[
                "-n", &ns, "rule", "add", "to", &control, "iif", "lo", "lookup", &table, "pref",
                &table,
            ],
        )?;
        Ok(())
    }

    fn boot_guest(
        &mut self,
        h: Host,
        spec: &vm::guest::GuestSpec,
        netsweep: &Path,
        interrupt: Option<&AtomicBool>,
    ) -> anyhow::Result<()> {
        let image = vm::image::prepare(&vm::image::dir(), netsweep, &|m| {
            crate::errln!("lab {}: {m}", self.state.name)
        })?;
        let accel = vm::guest::choose_accel(&image, std::time::Duration::from_secs(20));
        let token = self
            .state
            .guest_token
            .clone()
            .context("a lab with a guest has a token")?;
        let net = vm::guest::GuestNet {
            tap: Some(self.names.tap(h)),
            ip_cidr: format!("{}/24", h.ipv4()),
            port: crate::traffic::protocol::DEFAULT_PORT,
            channel: Some(vm::guest::ChannelNet {
                addr: h.control_ipv4(),
                peer: h.router_ipv4(),
                token,
            }),
        };
        let files = vm::guest::Files::for_host(&self.state_dir, &self.state.name, h);
        let guest = vm::guest::boot(
            Some(&self.names.namespace(h)),
            &image,
            spec,
            accel,
            &net,
            &files,
            vm::guest::BootWait {
                timeout: GUEST_BOOT_TIMEOUT,
                interrupt,
            },
        )?;
        match h {
            Host::A => self.state.guest_a = Some(guest),
            Host::B => self.state.guest = Some(guest),
        }
        Ok(())
    }

    /// Host b's guest, when it is one.
    pub fn guest(&self) -> Option<&vm::guest::GuestState> {
        self.state.guest.as_ref()
    }

    /// Host `h`'s guest, when it is one.
    pub fn guest_at(&self, h: Host) -> Option<&vm::guest::GuestState> {
        self.state.guest_at(h)
    }

    /// Runs `argv` inside host `h`'s guest; its output and exit status.
    pub fn exec_in_guest(&self, h: Host, argv: &[String]) -> anyhow::Result<(String, i32)> {
        exec_in_guest(&self.state_dir, &self.state.name, h, argv)
    }
}

/// Fails once the build's interrupt flag is raised (a signal arrived).
fn interrupted(opts: &LabOptions) -> anyhow::Result<()> {
    if opts.interrupt.is_some_and(|f| f.load(Ordering::SeqCst)) {
        bail!("interrupted by a signal while the lab was being built");
    }
    Ok(())
}

/// Test hook: with `NETSWEEP_TEST_PAUSE=POINT` in the environment, the build stops at the named
/// point for at most 60 s, saying so on standard error, so a test can kill it there (the points
/// are `relay-started`, `guest-started`, `image-written` and a campaign's `libvirt-opened` and
/// `libvirt-switched`).
/// A SIGINT or SIGTERM ends the pause at once, so a test can also interrupt it there.
pub fn test_pause(point: &str) {
    if std::env::var_os("NETSWEEP_TEST_PAUSE").is_some_and(|p| p == point) {
        crate::errln!("netsweep: test pause at {point}");
        let flag = crate::platform::signals::flag();
        for _ in 0..1200 {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// The routing table of a guest's command channel in its host's namespace.
const CONTROL_TABLE: u32 = 5311;

impl Lab {
    fn configure_host(&self, h: Host, guest_behind: bool) -> anyhow::Result<()> {
        let ns = self.names.namespace(h);
        let dev = self.names.device(h);
        let mtu = self.state.path.mtu(h).to_string();
        netns::run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        netns::run(
            "ip",
            &["-n", &ns, "link", "set", "dev", &dev, "mtu", &mtu, "up"],
        )?;
        if guest_behind {
            self.route_to_guest(h)?;
            return self.shape(h);
        }
        netns::run(
            "ip",
            &[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", h.ipv4()),
                "dev",
                &dev,
            ],
        )?;
        netns::run(
            "ip",
            &[
                "-n",
                &ns,
                "-6",
                "addr",
                "add",
                &format!("{}/64", h.ipv6()),
                "dev",
                &dev,
                "nodad",
            ],
        )?;
        self.shape(h)
    }

    /// The path's qdiscs and the host's sysctls.
    fn shape(&self, h: Host) -> anyhow::Result<()> {
        let ns = self.names.namespace(h);
        let dev = self.names.device(h);
        for cmd in topology::qdisc_commands(
            &ns,
            &dev,
            &self.state.path,
            self.state.emulator,
            self.state.path.mtu(h),
        ) {
            let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
            netns::run(&cmd[0], &args)?;
        }
        // A guest's host: its sysctls go into the guest once it has booted.
        let sysctls = match self.state.path.guest_on(h) {
            Some(_) => &[][..],
            None => self.state.path.sysctls(h),
        };
        for (k, v) in sysctls {
            check_sysctl(k, v).map_err(anyhow::Error::msg)?;
            netns::run_in(&ns, || std::fs::write(sysctl_path(k), v))?
                .with_context(|| format!("cannot set {k}={v} on host {}", h.letter()))?;
        }
        Ok(())
    }

    fn impairment(&self) -> Impairment {
        Impairment::of(&self.state.path)
    }

    fn start_relay(&mut self, mode: &RelayMode) -> anyhow::Result<()> {
        match mode {
            RelayMode::InProcess => {
                let (stop, handles, counters) = spawn_delay_line(&self.names, self.impairment())?;
                self.relay = Relay::Threads {
                    stop,
                    handles,
                    counters,
                };
                self.state.relay_pid = Some(std::process::id());
            }
            RelayMode::Daemon(exe) => {
                let pid = spawn_relay_daemon(exe, &self.state.name, &self.state_dir)?;
                self.relay = Relay::Daemon;
                self.state.relay_pid = Some(pid);
            }
        }
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Where the lab's state file is.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    pub fn emulator(&self) -> Emulator {
        self.state.emulator
    }

    pub fn path(&self) -> &PathConfig {
        &self.state.path
    }

    pub fn namespace(&self, h: Host) -> String {
        self.names.namespace(h)
    }

    /// Packets the in-process delay line forwarded and dropped, per direction (a->b, b->a).
    pub fn delay_line_counts(&self) -> Option<[(u64, u64); 2]> {
        match &self.relay {
            Relay::Threads { counters, .. } => Some([0, 1].map(|i| {
                (
                    counters[i].forwarded.load(Ordering::Relaxed),
                    counters[i].dropped_loss.load(Ordering::Relaxed),
                )
            })),
            _ => None,
        }
    }

    /// Packets the in-process delay line dropped in both directions, to its loss and at the
    /// tail of its full queue (or when the far device refused them).
    pub fn delay_line_drops(&self) -> Option<u64> {
        self.delay_line_drops_by_direction()
            .map(|d| d.iter().map(|x| x.loss + x.queue + x.oversize).sum())
    }

    /// Host `h`'s end of the path (a veth or the delay line's TUN device, in its namespace).
    pub fn device(&self, h: Host) -> String {
        self.names.device(h)
    }

    /// The path's drops per direction (a->b, b->a): the delay line's counters, or, where the
    /// kernel shapes the path (netem, tbf), the qdiscs' on each sending host's device. `None`
    /// where neither can be read (a `lab up` relay runs in a process of its own).
    pub fn delay_line_drops_by_direction(&self) -> Option<[loss::PathDrops; 2]> {
        match &self.relay {
            Relay::Threads { counters, .. } => Some([0, 1].map(|i| loss::PathDrops {
                loss: counters[i].dropped_loss.load(Ordering::Relaxed),
                queue: counters[i].dropped_queue.load(Ordering::Relaxed),
                oversize: counters[i].dropped_oversize.load(Ordering::Relaxed),
            })),
            Relay::None if matches!(self.emulator(), Emulator::Netem | Emulator::None) => {
                let of = |h: Host| {
                    let out = self
                        .command(h, "tc")
                        .args(["-s", "-j", "qdisc", "show", "dev", &self.device(h)])
                        .output()
                        .ok()?;
                    loss::qdisc_drops(&String::from_utf8_lossy(&out.stdout))
                };
                let (a, b) = (of(Host::A), of(Host::B));
                (a.is_some() || b.is_some()).then(|| [a.unwrap_or_default(), b.unwrap_or_default()])
            }
            _ => None,
        }
    }

    /// Runs `f` on a thread inside host `h`'s namespace.
    pub fn run_in<T: Send>(&self, h: Host, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
        netns::run_in(&self.names.namespace(h), f)
    }

    /// A command that runs `program` on host `h` (through `ip netns exec`).
    pub fn command(&self, h: Host, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names.namespace(h), program]);
        c
    }

    /// Keeps the lab after this value is dropped (`lab up`).
    pub fn persist(mut self) {
        self.keep = true;
        // Kept on purpose: no process owns it any more, so it is never reaped as an orphan.
        self.state.owner_pid = None;
        if let Err(e) = write_state(&self.state_dir, &self.state) {
            crate::errln!(
                "lab {}: cannot update its state file: {e:#}",
                self.state.name
            );
        }
    }

    /// Removes the lab; returns what was removed.
    pub fn down(mut self) -> anyhow::Result<Vec<String>> {
        self.keep = true;
        self.teardown()
    }

    fn teardown(&mut self) -> anyhow::Result<Vec<String>> {
        if let Relay::Threads { stop, handles, .. } = &mut self.relay {
            stop.store(true, Ordering::Relaxed);
            for h in handles.drain(..) {
                let _ = h.join();
            }
        }
        self.relay = Relay::None;
        down_by_name(&self.state.name, &self.state_dir)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.keep
            && let Err(e) = self.teardown()
        {
            crate::errln!("netsweep: cleaning up lab {}: {e:#}", self.state.name);
        }
    }
}

/// netsweep's own server running on a lab host; stopped on drop.
pub struct LabServer {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    pub addr: std::net::SocketAddr,
}

impl Drop for LabServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Lab {
    /// Starts `netsweep server` (in-process) on host `h`, port 5310.
    pub fn start_server(
        &self,
        h: Host,
        limits: crate::traffic::spec::ServerLimits,
    ) -> anyhow::Result<LabServer> {
        let addr = std::net::SocketAddr::new(h.address(), crate::traffic::protocol::DEFAULT_PORT);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle =
            netns::spawn_in(
                &self.names.namespace(h),
                move || match std::net::TcpListener::bind(addr) {
                    Ok(listener) => {
                        let _ = tx.send(Ok(()));
                        let log: crate::traffic::server::Log = Arc::new(|_: &str| {});
                        let _ = crate::traffic::server::run(listener, limits, &flag, log);
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                },
            )?;
        rx.recv()
            .context("server thread ended")?
            .with_context(|| format!("cannot listen on {addr}"))?;
        Ok(LabServer {
            stop,
            handle: Some(handle),
            addr,
        })
    }
}
