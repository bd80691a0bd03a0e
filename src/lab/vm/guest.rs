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

    /// "QEMU guest: 1 vCPU, 256 MiB, TCG (...), booted in 2.6 s".
    pub fn machine(&self) -> String {
        format!(
            "QEMU guest: {} vCPU, {} MiB, {}, booted in {:.1} s",
            self.spec.vcpus,
            self.spec.memory_mib,
            match self.accel {
                Accel::Kvm => "KVM",
                Accel::Tcg =>
                    "TCG (the guest CPU is emulated: its cost weighs on every NIC model's figure)",
            },
            self.boot_s
        )
    }
}

/// Where the guest's console and pidfile go.
#[derive(Debug, Clone)]
pub struct Files {
    pub console: PathBuf,
    pub pidfile: PathBuf,
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

/// QEMU's arguments (after the program name).
pub fn qemu_args(
    image: &Image,
    spec: &GuestSpec,
    accel: Accel,
    net: &GuestNet,
    files: &Files,
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
        "-serial".into(),
        format!("file:{}", files.console.display()),
        "-pidfile".into(),
        files.pidfile.display().to_string(),
        "-kernel".into(),
        image.vmlinux.display().to_string(),
        "-initrd".into(),
        image.initrd.display().to_string(),
        "-append".into(),
        format!(
            "console=ttyS0 loglevel=3 panic=-1 netsweep.ip={} netsweep.port={}{}",
            net.ip_cidr,
            net.port,
            net.channel.as_ref().map_or(String::new(), |c| format!(
                " netsweep.ctl={} netsweep.peer={} netsweep.token={}",
                c.addr, c.peer, c.token
            ))
        ),
    ]);
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
            a.push("-device".into());
            a.push(format!(
                "{},netdev=n0{}",
                spec.nic.qemu_device(),
                if mq {
                    format!(",mq=on,vectors={}", 2 * spec.queues + 2)
                } else {
                    String::new()
                }
            ));
        }
        None => {
            a.push("-nic".into());
            a.push("none".into());
        }
    }
    a
}

/// What the guest's console says: its NIC driver, and whether it is ready.
pub fn console_status(text: &str) -> (Option<String>, bool) {
    let driver = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("netsweep-guest: driver="))
        .map(|d| d.trim().to_string());
    (driver, text.contains("netsweep-guest: ready"))
}

/// How long `boot` waits for the guest, and the flag (a signal) that stops the wait at once.
#[derive(Debug, Clone, Copy)]
pub struct BootWait<'a> {
    pub timeout: Duration,
    pub interrupt: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Starts QEMU (inside namespace `ns` when given) and waits up to `timeout` for the guest's
/// ready line. On failure QEMU is stopped and the console's last lines are in the error.
pub fn boot(
    ns: Option<&str>,
    image: &Image,
    spec: &GuestSpec,
    accel: Accel,
    net: &GuestNet,
    files: &Files,
    wait: BootWait<'_>,
) -> anyhow::Result<GuestState> {
    let BootWait { timeout, interrupt } = wait;
    spec.validate().map_err(anyhow::Error::msg)?;
    let _ = std::fs::remove_file(&files.console);
    let _ = std::fs::remove_file(&files.pidfile);
    let args = qemu_args(image, spec, accel, net, files);
    let mut cmd = match ns {
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
    loop {
        let text = std::fs::read_to_string(&files.console).unwrap_or_default();
        let (driver, ready) = console_status(&text);
        if ready {
            return Ok(GuestState {
                pid,
                spec: *spec,
                accel,
                driver: driver.unwrap_or_default(),
                console: files.console.clone(),
                pidfile: files.pidfile.clone(),
                boot_s: t0.elapsed().as_secs_f64(),
            });
        }
        let alive = is_our_qemu(pid, &files.pidfile);
        if interrupt.is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst)) {
            stop(pid, &files.pidfile);
            bail!("interrupted by a signal while the guest was booting");
        }
        if !alive || t0.elapsed() > timeout {
            stop(pid, &files.pidfile);
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "the guest ({}, {}) {} after {:.0} s; its console ended with:\n{}",
                spec.nic.name(),
                accel.name(),
                if alive { "was not ready" } else { "stopped" },
                t0.elapsed().as_secs_f64(),
                tail.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

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
        match boot(
            None,
            image,
            &GuestSpec::default(),
            Accel::Kvm,
            &net,
            &files,
            BootWait {
                timeout,
                interrupt: None,
            },
        ) {
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
        }
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
        let a = qemu_args(&image(), &spec, Accel::Tcg, &net, &files).join(" ");
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
        assert!(
            a.contains("-serial file:/run/l/x.console -pidfile /run/l/x.qemu.pid"),
            "{a}"
        );
        let mq = GuestSpec {
            queues: 4,
            vcpus: 4,
            ..GuestSpec::default()
        };
        let a = qemu_args(&image(), &mq, Accel::Kvm, &net, &files).join(" ");
        assert!(
            a.contains("queues=4 -device virtio-net-pci,netdev=n0,mq=on,vectors=10"),
            "{a}"
        );
        assert!(a.contains("-smp 4"), "{a}");
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
