//! Arguments of `netsweep lab` and their conversion into a `PathConfig`.

use super::key_values;
use crate::lab::{EmulatorChoice, PathConfig};
use crate::units::{BitRate, parse_duration, parse_percent};
use anyhow::Context;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create a lab that stays until `lab down`.
    #[command(
        after_help = "Examples:\n  netsweep lab up wan --rate 1G --rtt 20ms\n  netsweep lab up lossy --rate 100M --delay 5ms --loss 1%\n  netsweep lab up jumbo --mtu 9000 --mtu-b 1500\n  netsweep lab up vm --vm b --nic e1000 --rtt 2ms     (host b a QEMU guest)"
    )]
    Up {
        name: String,
        #[command(flatten)]
        path: PathArgs,
        #[command(flatten)]
        vm: VmArgs,
    },
    /// Build the guest image for `--vm` labs (once; later calls show it).
    #[command(
        name = "vm-image",
        after_help = "Builds from this machine's Debian packages: the kernel package that linux-image-amd64\ndepends on (downloaded with apt-get, unpacked, not installed), busybox-static, and this\nnetsweep binary. Needs: apt-get install qemu-system-x86 busybox-static xz-utils\n\nExamples:\n  netsweep lab vm-image\n  NETSWEEP_VM_DIR=/srv/vm netsweep lab vm-image"
    )]
    VmImage,
    /// Remove a lab (also the leftovers of a crashed run).
    Down { name: String },
    /// Show labs and leftovers.
    List,
    /// Run a command on host a (198.18.0.1) or b (198.18.0.2) of a lab (inside its QEMU guest
    /// when the host is one).
    #[command(
        after_help = "Examples:\n  netsweep lab exec wan a -- ping -c 3 198.18.0.2\n  netsweep lab exec vm b -- netsweep doctor"
    )]
    Exec {
        name: String,
        /// a or b
        host: String,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Bring up a temporary lab, test across it with `netsweep client`, tear it down.
    #[command(
        after_help = "Examples:\n  netsweep lab test --rate 200M --rtt 20ms -- -t 5\n  netsweep lab test --vm b --nic rtl8139 -- -t 5 -R\n  netsweep lab test --vm both --nic e1000 -- -t 5\n  netsweep lab test --rtt 20ms --loss 1% -- -u -b 100M --json\n  netsweep lab test --rate 1G --rtt 20ms -- -w 64K -t 10"
    )]
    Test {
        #[command(flatten)]
        path: PathArgs,
        #[command(flatten)]
        vm: VmArgs,
        /// Options for `netsweep client` (the server address is filled in).
        #[arg(last = true)]
        client: Vec<String>,
    },
    /// (internal) run the delay line of a lab in the foreground.
    #[command(hide = true)]
    Relay {
        name: String,
        #[arg(long)]
        state_dir: Option<std::path::PathBuf>,
    },
    /// (internal, inside a lab's guest) serve the guest's command channel.
    #[command(name = "guest-channel", hide = true)]
    GuestChannel {
        /// The control address and port to listen on.
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// The only address a connection is accepted from.
        #[arg(long)]
        peer: Option<std::net::IpAddr>,
        /// The file holding the lab's token.
        #[arg(long)]
        token_file: std::path::PathBuf,
    },
}

#[derive(Debug, Args, Clone, Default)]
pub struct PathArgs {
    /// Bottleneck rate per direction (tbf), e.g. 200M, 1G.
    #[arg(long)]
    pub rate: Option<String>,
    /// One-way delay per direction.
    #[arg(long, conflicts_with = "rtt")]
    pub delay: Option<String>,
    /// Round-trip time (twice the one-way delay).
    #[arg(long)]
    pub rtt: Option<String>,
    /// Delay variation per direction, uniform +/- (packets keep their order).
    #[arg(long)]
    pub jitter: Option<String>,
    /// Random loss per direction, e.g. 1%.
    #[arg(long)]
    pub loss: Option<String>,
    /// MTU of both hosts (1500 default, 9000 for jumbo frames).
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// MTU of host b only, for mismatch experiments.
    #[arg(long)]
    pub mtu_b: Option<u32>,
    /// Queue of the rate limiter: a size (32K, 256K, 2M: the most bytes waiting for the rate)
    /// or a time at the rate (20ms).
    #[arg(long, default_value = "50ms")]
    pub queue: String,
    /// Delay/loss emulator: auto prefers netem and falls back to netsweep's delay line.
    #[arg(long, default_value = "auto", value_parser = ["auto", "netem", "userspace"])]
    pub emulator: String,
    /// Per-namespace sysctl on host a, KEY=VALUE (repeatable).
    #[arg(long = "sysctl-a")]
    pub sysctl_a: Vec<String>,
    /// Per-namespace sysctl on host b, KEY=VALUE (repeatable).
    #[arg(long = "sysctl-b")]
    pub sysctl_b: Vec<String>,
}

/// Host b as a QEMU guest.
#[derive(Debug, Args, Clone, Default)]
pub struct VmArgs {
    /// Make host b a QEMU guest running netsweep's server (b), or both hosts guests given the
    /// same (both: guest to guest).
    #[arg(long, value_parser = ["b", "both"])]
    pub vm: Option<String>,
    /// The guest's NIC model: virtio, e1000 or rtl8139.
    #[arg(long, requires = "vm", default_value = "virtio")]
    pub nic: String,
    /// The guest's virtual CPUs.
    #[arg(long, requires = "vm", default_value_t = 1)]
    pub vcpus: u32,
    /// The guest's memory, MiB.
    #[arg(long, requires = "vm", default_value_t = 256)]
    pub memory: u32,
    /// virtio-net queue pairs (multiqueue; virtio only).
    #[arg(long, requires = "vm", default_value_t = 1)]
    pub queues: u32,
}

impl VmArgs {
    /// The guest asked for, if any.
    pub fn spec(&self) -> anyhow::Result<Option<crate::lab::vm::guest::GuestSpec>> {
        if self.vm.is_none() {
            return Ok(None);
        }
        let spec = crate::lab::vm::guest::GuestSpec {
            nic: crate::lab::vm::NicModel::parse(&self.nic).map_err(anyhow::Error::msg)?,
            vcpus: self.vcpus,
            memory_mib: self.memory,
            queues: self.queues,
        };
        spec.validate().map_err(anyhow::Error::msg)?;
        Ok(Some(spec))
    }

    /// Whether host a is a guest too (`--vm both`).
    pub fn both(&self) -> bool {
        self.vm.as_deref() == Some("both")
    }
}

impl TryFrom<&PathArgs> for (PathConfig, EmulatorChoice) {
    type Error = anyhow::Error;

    fn try_from(a: &PathArgs) -> anyhow::Result<(PathConfig, EmulatorChoice)> {
        let mut p = PathConfig {
            mtu_a: a.mtu,
            mtu_b: a.mtu_b.unwrap_or(a.mtu),
            ..PathConfig::default()
        };
        if let Some(r) = &a.rate {
            p.rate_bps = Some(r.parse::<BitRate>().context("--rate")?.bits_per_second());
        }
        if let Some(d) = &a.delay {
            p.delay = parse_duration(d).context("--delay")?;
        }
        if let Some(r) = &a.rtt {
            p.delay = parse_duration(r).context("--rtt")? / 2;
        }
        if let Some(j) = &a.jitter {
            p.jitter = parse_duration(j).context("--jitter")?;
        }
        if let Some(l) = &a.loss {
            p.loss_percent = parse_percent(l).context("--loss")?;
        }
        p.set_queue(&a.queue)
            .map_err(|e| anyhow::anyhow!("--queue: {e}"))?;
        p.sysctls_a = key_values(&a.sysctl_a, "--sysctl-a")?;
        p.sysctls_b = key_values(&a.sysctl_b, "--sysctl-b")?;
        p.validate().map_err(anyhow::Error::msg)?;
        let emulator = match a.emulator.as_str() {
            "netem" => EmulatorChoice::Netem,
            "userspace" => EmulatorChoice::Userspace,
            _ => EmulatorChoice::Auto,
        };
        Ok((p, emulator))
    }
}
