//! Starting and stopping a QEMU guest: the command line (pure, tested), the boot that waits
//! for the guest's ready line on its console, the accelerator probe, and the stop by PID.

use super::image::Image;
use super::{Accel, NicModel};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What the guest is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestSpec {
    pub nic: NicModel,
    pub vcpus: u32,
    pub memory_mib: u32,
    /// virtio-net queue pairs (1: no multiqueue); other models have one.
    pub queues: u32,
}

impl GuestSpec {
    /// What guests that can share a saved boot have in common (`snapshot`):
    /// "virtio-1cpu-256mib-1q".
    pub fn kind(&self) -> String {
        format!(
            "{}-{}cpu-{}mib-{}q",
            self.nic.name(),
            self.vcpus,
            self.memory_mib,
            self.queues
        )
    }
}

impl Default for GuestSpec {
    fn default() -> Self {
        GuestSpec {
            nic: NicModel::Virtio,
            vcpus: 1,
            memory_mib: 256,
            queues: 1,
        }
    }
}

impl GuestSpec {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=16).contains(&self.vcpus) {
            return Err(format!("vcpus {} is out of range 1..16", self.vcpus));
        }
        if !(128..=16384).contains(&self.memory_mib) {
            return Err(format!(
                "memory {} MiB is out of range 128..16384",
                self.memory_mib
            ));
        }
        if !(1..=16).contains(&self.queues) {
            return Err(format!("queues {} is out of range 1..16", self.queues));
        }
        if self.queues > 1 && self.nic != NicModel::Virtio {
            return Err(format!("queues > 1 needs virtio, not {}", self.nic.name()));
        }
        Ok(())
    }
}

/// A running guest, as recorded in the lab's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestState {
    pub pid: u32,
    pub spec: GuestSpec,
    pub accel: Accel,
    /// The driver the guest bound to its NIC, as it reported it.
    pub driver: String,
    pub console: PathBuf,
    pub pidfile: PathBuf,
    /// Seconds from starting QEMU to the guest's server being ready.
    pub boot_s: f64,
    /// The guest resumed from a saved boot (`snapshot`) instead of booting.
    #[serde(default)]
    pub resumed: bool,
}

impl GuestState {
    /// "e1000 NIC (guest driver e1000), QEMU guest: 1 vCPU, 256 MiB, TCG (...), booted in 2.6 s".
    pub fn describe(&self) -> String {
        format!("{}, {}", self.nic(), self.machine())
    }

    /// "virtio NIC (guest driver virtio_net)".
    pub fn nic(&self) -> String {
        format!(
            "{} NIC (guest driver {})",
            self.spec.nic.name(),
            if self.driver.is_empty() {
                "none"
            } else {
                &self.driver
            }
        )
    }

    /// "QEMU guest: 1 vCPU, 256 MiB, TCG (...), booted in 2.6 s" (or "resumed from its saved
    /// boot in 0.6 s").
    pub fn machine(&self) -> String {
        format!(
            "QEMU guest: {} vCPU, {} MiB, {}, {} in {:.1} s",
            self.spec.vcpus,
            self.spec.memory_mib,
            match self.accel {
                Accel::Kvm => "KVM",
                Accel::Tcg =>
                    "TCG (the guest CPU is emulated: its cost weighs on every NIC model's figure)",
            },
            if self.resumed {
                "resumed from its saved boot"
            } else {
                "booted"
            },
            self.boot_s
        )
    }
}

/// Where the guest's console and pidfile go, and the sockets of its console's input and of
/// QEMU's monitor while it starts.
#[derive(Debug, Clone)]
pub struct Files {
    pub console: PathBuf,
    pub pidfile: PathBuf,
    pub serial: PathBuf,
    pub qmp: PathBuf,
}

impl Files {
    /// Lab `name`'s guest on host `h` (`NAME.console` for b, `NAME-a.console` for a: lab
    /// names have no `-`, so no other lab's files are named so).
    pub fn for_host(dir: &Path, name: &str, h: crate::lab::Host) -> Files {
        match h {
            crate::lab::Host::B => Files::in_dir(dir, name),
            crate::lab::Host::A => Files::in_dir(dir, &format!("{name}-a")),
        }
    }

    pub fn in_dir(dir: &Path, name: &str) -> Files {
        Files {
            console: dir.join(format!("{name}.console")),
            pidfile: dir.join(format!("{name}.qemu.pid")),
            serial: dir.join(format!("{name}.serial")),
            qmp: dir.join(format!("{name}.qmp")),
        }
    }
}

/// The guest's address (CIDR) and server port, given on its kernel command line.
#[derive(Debug, Clone)]
pub struct GuestNet {
    pub tap: Option<String>,
    pub ip_cidr: String,
    pub port: u16,
    /// The command channel (`channel`); none for the accelerator probe.
    pub channel: Option<ChannelNet>,
}

/// Where the guest's command channel listens, whom it answers, and the token it asks for.
#[derive(Debug, Clone)]
pub struct ChannelNet {
    pub addr: std::net::Ipv4Addr,
    pub peer: std::net::Ipv4Addr,
    pub token: String,
}

/// How a guest gets its settings (address, port, command channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start<'a> {
    /// On the kernel command line, the console to a file (the accelerator probe).
    Cold,
    /// On its console once its NIC is bound (`image::init_script`), so the guest can be saved
    /// first or resumed from a save (`resume`: `snapshot`).
    Console { resume: Option<&'a Path> },
}

/// The guest's settings as `netsweep.KEY=VALUE` words.
pub fn settings(net: &GuestNet) -> String {
    format!(
        "netsweep.ip={} netsweep.port={}{}",
        net.ip_cidr,
        net.port,
        net.channel.as_ref().map_or(String::new(), |c| format!(
            " netsweep.ctl={} netsweep.peer={} netsweep.token={}",
            c.addr, c.peer, c.token
        ))
    )
}

/// QEMU's arguments (after the program name).
pub fn qemu_args(
    image: &Image,
    spec: &GuestSpec,
    accel: Accel,
    net: &GuestNet,
    files: &Files,
    start: Start<'_>,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "-accel",
        accel.name(),
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-daemonize",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend([
        "-m".into(),
        spec.memory_mib.to_string(),
        "-smp".into(),
        spec.vcpus.to_string(),
        "-pidfile".into(),
        files.pidfile.display().to_string(),
        "-kernel".into(),
        image.vmlinux.display().to_string(),
        "-initrd".into(),
        image.initrd.display().to_string(),
    ]);
    let base = "console=ttyS0 loglevel=3 panic=-1";
    match start {
        Start::Cold => a.extend([
            "-serial".into(),
            format!("file:{}", files.console.display()),
            "-append".into(),
            format!("{base} {}", settings(net)),
        ]),
        Start::Console { .. } => {
            // The console goes to its file as well as to the socket its settings come by; the
            // command line is the same for a save and its resumes.
            a.extend([
                "-chardev".into(),
                format!(
                    "socket,id=s0,path={},server=on,wait=off,logfile={}",
                    files.serial.display(),
                    files.console.display()
                ),
                "-serial".into(),
                "chardev:s0".into(),
                "-qmp".into(),
                format!("unix:{},server=on,wait=off", files.qmp.display()),
                "-append".into(),
                format!("{base} netsweep.settings=console"),
            ]);
        }
    }
    match &net.tap {
        Some(tap) => {
            let mq = spec.nic == NicModel::Virtio && spec.queues > 1;
            a.push("-netdev".into());
            a.push(format!(
                "tap,id=n0,ifname={tap},script=no,downscript=no{}",
                if mq {
                    format!(",queues={}", spec.queues)
                } else {
                    String::new()
                }
            ));
            // QEMU's e1000 completes a link autonegotiation the guest asks for only after a
            // timer, and Linux's e1000 driver looks at the link again 2 s later: its guest was
            // ready 1.2-2 s after the others (2026-11-26). With the negotiation off, the link
            // is up when the driver first looks; the data path is the same emulated 1 Gbit/s
            // full-duplex card either way.
            let extra = match spec.nic {
                NicModel::Virtio if mq => format!(",mq=on,vectors={}", 2 * spec.queues + 2),
                NicModel::E1000 => ",autonegotiation=off".to_string(),
                _ => String::new(),
            };
            a.push("-device".into());
            a.push(format!("{},netdev=n0{extra}", spec.nic.qemu_device()));
        }
        None => {
            a.push("-nic".into());
            a.push("none".into());
        }
    }
    if let Start::Console {
        resume: Some(saved),
    } = start
    {
        a.push("-incoming".into());
        a.push(format!(
            "exec:cat {}",
            crate::paste::quote(&saved.to_string_lossy())
        ));
    }
    a
}

/// What the guest's console says: its NIC driver, and whether it is ready.
pub fn console_status(text: &str) -> (Option<String>, bool) {
    let driver = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("netsweep-guest: driver="))
        .map(|d| d.trim().to_string());
    (driver, text.contains(READY))
}

/// How long `boot` waits for the guest, and the flag (a signal) that stops the wait at once.
#[derive(Debug, Clone, Copy)]
pub struct BootWait<'a> {
    pub timeout: Duration,
    pub interrupt: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Starts QEMU (inside namespace `ns` when given) and waits up to `timeout` for the guest's
/// ready line. Under TCG a guest resumes from the saved boot of its kind when there is one
/// (one that does not resume is removed and the guest booted); a guest that boots is saved
/// first, for the next (`snapshot`). On failure QEMU is stopped and the console's last lines
/// are in the error.
pub fn boot(
    ns: Option<&str>,
    image: &Image,
    spec: &GuestSpec,
    accel: Accel,
    net: &GuestNet,
    files: &Files,
    wait: BootWait<'_>,
) -> anyhow::Result<GuestState> {
    let saved = super::snapshot::path(image, &spec.kind(), accel);
    let guest = Guest {
        ns,
        image,
        spec,
        accel,
        net,
        files,
    };
    if let Some(file) = saved.as_deref().filter(|p| super::snapshot::resumable(p)) {
        // Marked used first, so another lab's tidying keeps it while this QEMU reads it; and
        // only this very file is removed if it does not resume (another lab may have written a
        // good one in its place meanwhile).
        super::snapshot::mark_used(file);
        let identity = file_identity(file);
        // A resume is ready in about a second; one that is not in 30 s will not be.
        let resume_wait = BootWait {
            timeout: wait.timeout.min(Duration::from_secs(30)),
            ..wait
        };
        match guest.start(Start::Console { resume: Some(file) }, None, resume_wait) {
            Ok(g) => return Ok(g),
            Err(e) if interrupted(&wait) => return Err(e),
            Err(e) => {
                crate::errln!(
                    "netsweep: the saved boot {} did not resume ({}); the guest boots and is \
                     saved again",
                    file.display(),
                    e.to_string().lines().next().unwrap_or_default()
                );
                if identity.is_some() && file_identity(file) == identity {
                    let _ = std::fs::remove_file(file);
                }
            }
        }
    }
    guest.start(Start::Console { resume: None }, saved.as_deref(), wait)
}

/// The device and inode of `path`: which file it names now.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn interrupted(wait: &BootWait<'_>) -> bool {
    wait.interrupt
        .is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
}

/// One guest to start: where, from what, with what.
struct Guest<'a> {
    ns: Option<&'a str>,
    image: &'a Image,
    spec: &'a GuestSpec,
    accel: Accel,
    net: &'a GuestNet,
    files: &'a Files,
}

impl Guest<'_> {
    /// Starts QEMU and waits for the guest's ready line, giving its settings as `how` says and
    /// saving it to `save_to` first when it boots.
    fn start(
        &self,
        how: Start<'_>,
        save_to: Option<&Path>,
        wait: BootWait<'_>,
    ) -> anyhow::Result<GuestState> {
        self.spec.validate().map_err(anyhow::Error::msg)?;
        let files = self.files;
        let sockets = [&files.serial, &files.qmp];
        for f in [&files.console, &files.pidfile].into_iter().chain(sockets) {
            let _ = std::fs::remove_file(f);
        }
        let args = qemu_args(self.image, self.spec, self.accel, self.net, files, how);
        let mut cmd = match self.ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "qemu-system-x86_64"]);
                c
            }
            None => Command::new("qemu-system-x86_64"),
        };
        let t0 = Instant::now();
        let out = cmd.args(&args).output().with_context(|| {
            format!(
                "cannot run qemu-system-x86_64: install {}",
                super::image::PACKAGES
            )
        })?;
        if !out.status.success() {
            bail!(
                "qemu-system-x86_64 failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let pid: u32 = std::fs::read_to_string(&files.pidfile)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .context("QEMU started but wrote no pidfile")?;
        crate::lab::test_pause("guest-started");
        let ready = match how {
            Start::Cold => self.wait_for(pid, t0, wait, READY),
            Start::Console { resume } => {
                self.give_settings(pid, t0, wait, resume.is_none(), save_to)
            }
        };
        for f in sockets {
            let _ = std::fs::remove_file(f);
        }
        let text = match ready {
            Ok(text) => text,
            Err(e) => {
                stop(pid, &files.pidfile);
                return Err(e);
            }
        };
        Ok(GuestState {
            pid,
            spec: *self.spec,
            accel: self.accel,
            driver: console_status(&text).0.unwrap_or_default(),
            console: files.console.clone(),
            pidfile: files.pidfile.clone(),
            boot_s: t0.elapsed().as_secs_f64(),
            resumed: matches!(how, Start::Console { resume: Some(_) }),
        })
    }

    /// Writes the guest's settings to its console once it waits for them (after saving it,
    /// when it booted and `save_to` says where), then waits for its ready line. The console's
    /// output is read and dropped meanwhile, so the guest never waits on a full socket; it
    /// goes to the console file either way.
    fn give_settings(
        &self,
        pid: u32,
        t0: Instant,
        wait: BootWait<'_>,
        booted: bool,
        save_to: Option<&Path>,
    ) -> anyhow::Result<String> {
        use std::io::{Read, Write};
        let console = std::os::unix::net::UnixStream::connect(&self.files.serial)
            .context("cannot connect to the guest's console")?;
        let mut drain = console.try_clone()?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while matches!(drain.read(&mut buf), Ok(n) if n > 0) {}
        });
        let result = (|| {
            if booted {
                self.wait_for(pid, t0, wait, WAITING)?;
                if let Some(file) = save_to
                    && let Err(e) = super::snapshot::save(&self.files.qmp, file)
                {
                    // A save that fails costs only the next guest of this kind its resume.
                    crate::errln!(
                        "netsweep: this guest could not be saved for the next of its kind, \
                         which will boot too: {e:#}"
                    );
                }
            }
            (&console).write_all(format!("{}\n", settings(self.net)).as_bytes())?;
            self.wait_for(pid, t0, wait, READY)
        })();
        let _ = console.shutdown(std::net::Shutdown::Both);
        result
    }

    /// Waits until the console holds `line`; its whole text then. Fails when QEMU ends, the
    /// wait's time is up or its interrupt is raised.
    fn wait_for(
        &self,
        pid: u32,
        t0: Instant,
        wait: BootWait<'_>,
        line: &str,
    ) -> anyhow::Result<String> {
        loop {
            let text = std::fs::read_to_string(&self.files.console).unwrap_or_default();
            if text.contains(line) {
                return Ok(text);
            }
            let alive = is_our_qemu(pid, &self.files.pidfile);
            if interrupted(&wait) {
                bail!("interrupted by a signal while the guest was booting");
            }
            if !alive || t0.elapsed() > wait.timeout {
                bail!(
                    "the guest ({}, {}) {} after {:.0} s; its console ended with:\n{}",
                    self.spec.nic.name(),
                    self.accel.name(),
                    if alive { "was not ready" } else { "stopped" },
                    t0.elapsed().as_secs_f64(),
                    last_lines(&text, 8)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The last `n` lines of a console's text.
fn last_lines(text: &str, n: usize) -> String {
    let tail: Vec<&str> = text.lines().rev().take(n).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

impl GuestState {
    /// Whether its QEMU is no longer running (exited, or killed).
    pub fn gone(&self) -> bool {
        !is_our_qemu(self.pid, &self.pidfile)
    }

    /// Where the guest's console is and its last lines: the guest's server logs there, so a
    /// test its server ended is explained there (a run failed with "the server closed the
    /// control connection" and no word of where to look).
    pub fn console_tail(&self) -> String {
        format!(
            "the guest's console ({}), where its server logs, ended with:\n{}",
            self.console.display(),
            self.last_words()
        )
    }

    /// The console's last lines, for a guest whose console file goes with its lab.
    pub fn last_words(&self) -> String {
        let text = crate::inputs::read_regular(&self.console, 1 << 20).unwrap_or_default();
        last_lines(&text, 8)
    }
}

/// The console lines of a guest waiting for its settings, and of one ready for tests.
const WAITING: &str = "netsweep-guest: waiting for settings";
const READY: &str = "netsweep-guest: ready";

/// Whether `pid` is the QEMU that wrote `pidfile` (not a reused PID).
pub fn is_our_qemu(pid: u32, pidfile: &Path) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let text = String::from_utf8_lossy(&cmdline);
    text.contains("qemu-system") && text.contains(&*pidfile.to_string_lossy())
}

/// Stops the guest: SIGTERM, then SIGKILL after 2 s; only if `pid` is still our QEMU.
pub fn stop(pid: u32, pidfile: &Path) -> bool {
    if !is_our_qemu(pid, pidfile) {
        return false;
    }
    crate::platform::process::terminate(pid);
    let t0 = Instant::now();
    while is_our_qemu(pid, pidfile) && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if is_our_qemu(pid, pidfile) {
        crate::platform::process::kill(pid);
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(pidfile);
    true
}

/// KVM if a guest really boots under it within `timeout`, else TCG. The verdict is kept in
/// the image directory (`accel`), so the probe runs once per image.
pub fn choose_accel(image: &Image, timeout: Duration) -> Accel {
    let verdict = image.dir.join("accel");
    // One probe at a time (they share the probe's files); a waiter then reads the verdict.
    let _lock = super::image::lock(&image.dir).ok();
    match std::fs::read_to_string(&verdict).as_deref().map(str::trim) {
        Ok("kvm") => return Accel::Kvm,
        Ok("tcg") => return Accel::Tcg,
        _ => {}
    }
    let accel = if Path::new("/dev/kvm").exists() {
        let files = Files::in_dir(&image.dir, "probe");
        let net = GuestNet {
            tap: None,
            ip_cidr: "198.18.0.2/24".into(),
            port: 5201,
            channel: None,
        };
        let guest = Guest {
            ns: None,
            image,
            spec: &GuestSpec::default(),
            accel: Accel::Kvm,
            net: &net,
            files: &files,
        };
        let wait = BootWait {
            timeout,
            interrupt: None,
        };
        match guest.start(Start::Cold, None, wait) {
            Ok(g) => {
                stop(g.pid, &files.pidfile);
                Accel::Kvm
            }
            Err(_) => Accel::Tcg,
        }
    } else {
        Accel::Tcg
    };
    let _ = std::fs::write(&verdict, accel.name());
    accel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Image {
        Image {
            dir: "/c".into(),
            vmlinux: "/c/kernel/vmlinux".into(),
            initrd: "/c/initrd.cpio".into(),
            kernel_version: "6.1.0-56-amd64".into(),
            stamp: "0123456789abcdef".into(),
        }
    }

    /// Regression (issue 42, 9): a VM lab's failed test did not say where the guest's server
    /// logged; the error now carries the console's path and its last lines.
    #[test]
    fn a_guests_console_tail_names_the_file_and_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let console = dir.path().join("lab.console");
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&console, text).unwrap();
        let g = GuestState {
            pid: 1,
            spec: GuestSpec::default(),
            accel: Accel::Tcg,
            driver: String::new(),
            console: console.clone(),
            pidfile: dir.path().join("lab.qemu.pid"),
            boot_s: 1.0,
            resumed: false,
        };
        let tail = g.console_tail();
        assert!(tail.contains(&console.display().to_string()), "{tail}");
        assert!(
            tail.ends_with(
                "line 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\nline 20"
            ),
            "{tail}"
        );
        assert!(!tail.contains("line 12\n"), "{tail}");
    }

    #[test]
    fn a_kind_names_what_decides_a_saved_boot() {
        let spec = GuestSpec {
            nic: NicModel::E1000,
            vcpus: 2,
            memory_mib: 192,
            queues: 1,
        };
        assert_eq!(spec.kind(), "e1000-2cpu-192mib-1q");
    }

    #[test]
    fn the_command_line_boots_the_elf_kernel_with_the_model_on_the_tap() {
        let files = Files::in_dir(Path::new("/run/l"), "x");
        let net = GuestNet {
            tap: Some("nswxt".into()),
            ip_cidr: "198.18.0.2/24".into(),
            port: 5201,
            channel: Some(ChannelNet {
                addr: "198.19.255.2".parse().unwrap(),
                peer: "198.18.0.254".parse().unwrap(),
                token: "00ff".repeat(8),
            }),
        };
        let spec = GuestSpec {
            nic: NicModel::Rtl8139,
            ..GuestSpec::default()
        };
        let a = qemu_args(&image(), &spec, Accel::Tcg, &net, &files, Start::Cold).join(" ");
        assert!(a.starts_with("-accel tcg -nodefaults"), "{a}");
        assert!(
            a.contains("-kernel /c/kernel/vmlinux -initrd /c/initrd.cpio"),
            "{a}"
        );
        assert!(
            a.contains("netsweep.ip=198.18.0.2/24 netsweep.port=5201"),
            "{a}"
        );
        // The command channel's address, its one peer and the lab's token.
        assert!(
            a.contains(&format!(
                "netsweep.ctl=198.19.255.2 netsweep.peer=198.18.0.254 netsweep.token={}",
                "00ff".repeat(8)
            )),
            "{a}"
        );
        assert!(
            a.contains(
                "-netdev tap,id=n0,ifname=nswxt,script=no,downscript=no -device rtl8139,netdev=n0"
            ),
            "{a}"
        );
        assert!(a.contains("-pidfile /run/l/x.qemu.pid"), "{a}");
        assert!(a.contains("-serial file:/run/l/x.console -append"), "{a}");
        // Settings on the console: the command line holds none of them, and is the same for a
        // guest that is saved and one that resumes, but for the resume's `-incoming`.
        let save = qemu_args(
            &image(),
            &spec,
            Accel::Tcg,
            &net,
            &files,
            Start::Console { resume: None },
        );
        let saved = Path::new("/c/saved/x y.qemu");
        let resume = qemu_args(
            &image(),
            &spec,
            Accel::Tcg,
            &net,
            &files,
            Start::Console {
                resume: Some(saved),
            },
        );
        assert_eq!(&resume[..save.len()], &save[..]);
        assert_eq!(
            resume[save.len()..],
            ["-incoming", "exec:cat '/c/saved/x y.qemu'"]
        );
        let save = save.join(" ");
        assert!(
            !save.contains("netsweep.ip") && !save.contains("00ff"),
            "{save}"
        );
        assert!(save.contains(
            "-chardev socket,id=s0,path=/run/l/x.serial,server=on,wait=off,logfile=/run/l/x.console \
             -serial chardev:s0 -qmp unix:/run/l/x.qmp,server=on,wait=off \
             -append console=ttyS0 loglevel=3 panic=-1 netsweep.settings=console"
        ), "{save}");
        assert_eq!(
            settings(&net),
            format!(
                "netsweep.ip=198.18.0.2/24 netsweep.port=5201 netsweep.ctl=198.19.255.2 \
                 netsweep.peer=198.18.0.254 netsweep.token={}",
                "00ff".repeat(8)
            )
        );
        let mq = GuestSpec {
            queues: 4,
            vcpus: 4,
            ..GuestSpec::default()
        };
        let a = qemu_args(&image(), &mq, Accel::Kvm, &net, &files, Start::Cold).join(" ");
        assert!(
            a.contains("queues=4 -device virtio-net-pci,netdev=n0,mq=on,vectors=10"),
            "{a}"
        );
        assert!(a.contains("-smp 4"), "{a}");
        // An e1000's link is up without waiting for an autonegotiation.
        let e1000 = GuestSpec {
            nic: NicModel::E1000,
            ..GuestSpec::default()
        };
        let a = qemu_args(&image(), &e1000, Accel::Tcg, &net, &files, Start::Cold).join(" ");
        assert!(
            a.contains("-device e1000,netdev=n0,autonegotiation=off"),
            "{a}"
        );
    }

    #[test]
    fn specs_out_of_range_are_refused() {
        let bad = GuestSpec {
            nic: NicModel::E1000,
            queues: 2,
            ..GuestSpec::default()
        };
        assert!(bad.validate().unwrap_err().contains("needs virtio"));
        let bad = GuestSpec {
            memory_mib: 64,
            ..GuestSpec::default()
        };
        assert!(bad.validate().is_err());
        assert!(GuestSpec::default().validate().is_ok());
    }

    #[test]
    fn the_console_tells_the_driver_and_readiness() {
        let (d, r) = console_status("boot...\nnetsweep-guest: driver=8139cp\n");
        assert_eq!((d.as_deref(), r), (Some("8139cp"), false));
        let (_, r) = console_status("netsweep-guest: driver=e1000\nnetsweep-guest: ready\n");
        assert!(r);
    }
}
