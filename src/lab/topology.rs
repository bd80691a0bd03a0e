//! The shape of a lab, as data: names, addresses, and the `ip`/`tc` commands that build it.
//! Pure; `lab` runs the commands. Tested without root.

use crate::units::BitRate;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// One of the two hosts of a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    A,
    B,
}

impl Host {
    pub fn parse(s: &str) -> Option<Host> {
        match s {
            "a" | "A" => Some(Host::A),
            "b" | "B" => Some(Host::B),
            _ => None,
        }
    }

    /// The host at the other end of the path.
    pub fn other(self) -> Host {
        match self {
            Host::A => Host::B,
            Host::B => Host::A,
        }
    }

    pub fn letter(self) -> char {
        match self {
            Host::A => 'a',
            Host::B => 'b',
        }
    }

    /// IPv4 address from the benchmarking range 198.18.0.0/15.
    pub fn ipv4(self) -> Ipv4Addr {
        match self {
            Host::A => Ipv4Addr::new(198, 18, 0, 1),
            Host::B => Ipv4Addr::new(198, 18, 0, 2),
        }
    }

    /// The guest's command channel address (198.19.255.1 for a's guest, .2 for b's): on its
    /// TAP side only, routed by the host's namespace for its own connections and never
    /// forwarded from the lab's path.
    pub fn control_ipv4(self) -> Ipv4Addr {
        match self {
            Host::A => Ipv4Addr::new(198, 19, 255, 1),
            Host::B => Ipv4Addr::new(198, 19, 255, 2),
        }
    }

    /// The address of the host's namespace when it routes to a guest that has the host's
    /// address (198.18.0.253 for a, .254 for b).
    pub fn router_ipv4(self) -> Ipv4Addr {
        match self {
            Host::A => Ipv4Addr::new(198, 18, 0, 253),
            Host::B => Ipv4Addr::new(198, 18, 0, 254),
        }
    }

    /// IPv6 address from the benchmarking range 2001:2::/48.
    pub fn ipv6(self) -> Ipv6Addr {
        match self {
            Host::A => Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1),
            Host::B => Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2),
        }
    }

    pub fn address(self) -> IpAddr {
        IpAddr::V4(self.ipv4())
    }
}

/// Names of a lab's namespaces and devices, from its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabNames {
    pub name: String,
}

/// Longest lab name: device names must fit the kernel's 15 characters.
pub const MAX_NAME: usize = 9;

impl LabNames {
    pub fn new(name: &str) -> Result<LabNames, String> {
        let ok = !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !ok {
            return Err(format!(
                "lab name {name:?} is not valid: use 1 to {MAX_NAME} lowercase letters, digits or _"
            ));
        }
        Ok(LabNames {
            name: name.to_string(),
        })
    }

    pub fn namespace(&self, h: Host) -> String {
        format!("nsw-{}-{}", self.name, h.letter())
    }

    /// The TAP device of host `h`'s guest (in host `h`'s namespace).
    pub fn tap(&self, h: Host) -> String {
        format!("nsw{}t{}", self.name, h.letter())
    }

    pub fn device(&self, h: Host) -> String {
        format!("nsw-{}-{}", self.name, h.letter())
    }

    /// The lab name a namespace belongs to, if it is one of ours.
    pub fn owner_of(namespace: &str) -> Option<(String, Host)> {
        let rest = namespace.strip_prefix("nsw-")?;
        let (name, host) = rest.rsplit_once('-')?;
        Some((name.to_string(), Host::parse(host)?))
    }
}

/// How delay and loss are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Emulator {
    /// No delay, jitter or loss asked for: a plain veth pair.
    None,
    /// The kernel's `sch_netem` on a veth pair.
    Netem,
    /// netsweep's own delay line between two TUN devices.
    Userspace,
}

/// The path between the hosts; every setting applies to each direction.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathConfig {
    /// Bottleneck rate per direction, bit/s (`tbf`); `None` = unlimited.
    pub rate_bps: Option<f64>,
    /// One-way delay per direction.
    #[serde(with = "crate::traffic::spec::micros", rename = "delay_us")]
    pub delay: Duration,
    #[serde(with = "crate::traffic::spec::micros", rename = "jitter_us")]
    pub jitter: Duration,
    /// Random loss per direction, percent.
    pub loss_percent: f64,
    pub mtu_a: u32,
    pub mtu_b: u32,
    /// Queue of the rate limiter, as time at the rate (`tbf latency`).
    #[serde(with = "crate::traffic::spec::micros", rename = "queue_us")]
    pub queue: Duration,
    /// Queue of the rate limiter in bytes (`tbf limit`), when given as a size; it then takes
    /// the place of `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    /// Per-namespace sysctls to set on each host, `key=value`.
    pub sysctls_a: Vec<(String, String)>,
    pub sysctls_b: Vec<(String, String)>,
    /// Host b as a QEMU guest with this NIC model, CPUs and memory (`--vm b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<super::vm::guest::GuestSpec>,
    /// Host a a guest too, given the same (`--vm both`: guest to guest).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guest_a: bool,
}

impl PathConfig {
    /// Sets the rate limiter's queue from a size in bytes ("256K", "2M": the most bytes waiting
    /// for the rate) or a time at the rate ("20ms").
    pub fn set_queue(&mut self, v: &str) -> Result<(), String> {
        let lower = v.trim().to_ascii_lowercase();
        if lower.ends_with('s') {
            self.queue = crate::units::parse_duration(v).map_err(|e| e.to_string())?;
            self.queue_bytes = None;
        } else {
            let b = v
                .parse::<crate::units::Bytes>()
                .map_err(|e| format!("queue: {e} (or a time at the rate, e.g. 20ms)"))?;
            if b.0 < 1500 {
                return Err(format!(
                    "queue {v:?} is smaller than one packet: give at least 1500 bytes"
                ));
            }
            self.queue_bytes = Some(b.0);
        }
        Ok(())
    }

    /// The longest a packet can wait in the rate limiter's queue, when the path has a rate.
    pub fn queue_delay(&self) -> Option<Duration> {
        let rate = self.rate_bps?;
        Some(match self.queue_bytes {
            Some(b) => Duration::from_secs_f64(b as f64 * 8.0 / rate),
            None => self.queue,
        })
    }
}

impl Default for PathConfig {
    fn default() -> Self {
        PathConfig {
            rate_bps: None,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss_percent: 0.0,
            mtu_a: 1500,
            mtu_b: 1500,
            queue: Duration::from_millis(50),
            queue_bytes: None,
            sysctls_a: Vec::new(),
            sysctls_b: Vec::new(),
            guest: None,
            guest_a: false,
        }
    }
}

impl Emulator {
    /// "no path emulation", "emulator Netem", "emulator Userspace".
    pub fn describe(self) -> String {
        match self {
            Emulator::None => "no path emulation".to_string(),
            e => format!("emulator {e:?}"),
        }
    }
}

impl PathConfig {
    /// True when the path needs an emulator (netem or the delay line).
    pub fn impaired(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero() || self.loss_percent > 0.0
    }

    /// Whether the rate limit needs the delay line where there is no netem: a `tbf` on the
    /// sender's own device cannot be filled by TCP (TCP small queues), so its queue would
    /// never show; above the delay line's ceiling `tbf` is the only way to the rate.
    pub fn rate_needs_delay_line(&self) -> bool {
        self.rate_bps
            .is_some_and(|r| r <= crate::lab::delayline::CEILING_BPS)
    }

    pub fn rtt(&self) -> Duration {
        self.delay * 2
    }

    /// What RFC 6349's metrics know of this path under `emulator`: its rate, its idle round
    /// trip (with a delay) and its MTU, and what the shaper counts per packet (the delay line
    /// and a TUN device count IP packets; a `tbf` on a veth counts the Ethernet header too).
    pub fn rfc6349_facts(&self, emulator: Emulator) -> crate::analysis::rfc6349::PathFacts {
        use crate::analysis::rfc6349::{Framing, PathFacts};
        let lab = || crate::analysis::rfc6349::LAB_SOURCE.to_string();
        PathFacts {
            bottleneck_bps: self.rate_bps.map(|r| (r, lab())),
            baseline_rtt_s: (!self.delay.is_zero()).then(|| (self.rtt().as_secs_f64(), lab())),
            mtu: Some((self.mtu_a.min(self.mtu_b), lab())),
            framing: Some(match emulator {
                Emulator::Userspace => Framing::Ip,
                Emulator::None | Emulator::Netem => Framing::EthernetHeader,
            }),
            ipv6: false,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = self.rate_bps
            && !(r >= 8_000.0 && r.is_finite())
        {
            return Err(format!("rate {} is too low: at least 8 kbit/s", BitRate(r)));
        }
        if !(0.0..=100.0).contains(&self.loss_percent) {
            return Err("loss must be between 0% and 100%".into());
        }
        if self.jitter > self.delay {
            return Err("jitter must not exceed the delay".into());
        }
        for m in [self.mtu_a, self.mtu_b] {
            if !(576..=65_000).contains(&m) {
                return Err(format!("MTU {m} is out of range (576 to 65000)"));
            }
        }
        if self.delay > Duration::from_secs(10) {
            return Err("delay above 10 s is not supported".into());
        }
        for (k, v) in self.sysctls_a.iter().chain(&self.sysctls_b) {
            crate::lab::check_sysctl(k, v)?;
        }
        if let Some(g) = &self.guest {
            g.validate()?;
        } else if self.guest_a {
            return Err("host a can be a guest only with host b (--vm both)".into());
        }
        Ok(())
    }

    /// What host `h`'s guest is given, when `h` is a guest.
    pub fn guest_on(&self, h: Host) -> Option<super::vm::guest::GuestSpec> {
        match h {
            Host::A => self.guest.filter(|_| self.guest_a),
            Host::B => self.guest,
        }
    }

    /// "RTT 20ms", "RTT 20ms (jitter 1ms)", or "no delay added" (the hosts' own RTT is
    /// microseconds, not 0).
    pub fn delay_text(&self) -> String {
        match (self.rtt().is_zero(), self.jitter.is_zero()) {
            (true, true) => "no delay added".to_string(),
            (_, true) => format!("RTT {:?}", self.rtt()),
            _ => format!("RTT {:?} (jitter {:?})", self.rtt(), self.jitter),
        }
    }

    /// "b" or "both": which hosts are guests, as `--vm` and a plan's `vm` say it.
    pub fn vm_hosts(&self) -> Option<&'static str> {
        self.guest.map(|_| if self.guest_a { "both" } else { "b" })
    }

    pub fn mtu(&self, h: Host) -> u32 {
        match h {
            Host::A => self.mtu_a,
            Host::B => self.mtu_b,
        }
    }

    pub fn sysctls(&self, h: Host) -> &[(String, String)] {
        match h {
            Host::A => &self.sysctls_a,
            Host::B => &self.sysctls_b,
        }
    }
}

/// `tbf` burst for a rate: at least two jumbo frames, and enough for the kernel's timer tick.
pub fn tbf_burst(rate_bps: f64, mtu: u32) -> u64 {
    let per_ms = (rate_bps / 8.0 / 1000.0) as u64;
    per_ms.max(2 * u64::from(mtu)).max(16 * 1024)
}

/// One command line: program and arguments.
pub type Argv = Vec<String>;

fn argv(parts: &[&str]) -> Argv {
    parts.iter().map(|s| s.to_string()).collect()
}

/// Commands for the qdiscs of one host's egress device.
pub fn qdisc_commands(
    ns: &str,
    dev: &str,
    path: &PathConfig,
    emulator: Emulator,
    mtu: u32,
) -> Vec<Argv> {
    let mut out = Vec::new();
    let tbf = |parent: &[&str]| -> Option<Argv> {
        let rate = path.rate_bps?;
        let burst = tbf_burst(rate, mtu);
        let mut a = argv(&["tc", "-n", ns, "qdisc", "add", "dev", dev]);
        a.extend(parent.iter().map(|s| s.to_string()));
        a.extend([
            "tbf".into(),
            "rate".into(),
            format!("{}bit", rate.round() as u64),
            "burst".into(),
            burst.to_string(),
        ]);
        match path.queue_bytes {
            Some(bytes) => a.extend(["limit".into(), bytes.to_string()]),
            None => a.extend(["latency".into(), format!("{}us", path.queue.as_micros())]),
        }
        Some(a)
    };
    if emulator == Emulator::Netem {
        let mut a = argv(&[
            "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
        ]);
        // netem's default limit of 1000 packets would drop at high bandwidth-delay products.
        a.extend(["limit".into(), "1000000".into()]);
        if !path.delay.is_zero() {
            a.extend(["delay".into(), format!("{}us", path.delay.as_micros())]);
            if !path.jitter.is_zero() {
                a.push(format!("{}us", path.jitter.as_micros()));
            }
        }
        if path.loss_percent > 0.0 {
            a.extend(["loss".into(), format!("{}%", path.loss_percent)]);
        }
        out.push(a);
        out.extend(tbf(&["parent", "1:1", "handle", "10:"]));
    } else if emulator == Emulator::None {
        out.extend(tbf(&["root", "handle", "10:"]));
    }
    // The userspace delay line applies the rate and queue itself (see `delayline`).
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernel_limit() {
        let n = LabNames::new("abcdefghi").unwrap();
        assert!(n.device(Host::A).len() <= 15);
        assert_eq!(n.namespace(Host::B), "nsw-abcdefghi-b");
        assert!(LabNames::new("abcdefghij").is_err());
        assert!(LabNames::new("Bad").is_err());
        assert!(LabNames::new("a/b").is_err());
        assert_eq!(LabNames::owner_of("nsw-x1-a"), Some(("x1".into(), Host::A)));
        assert_eq!(LabNames::owner_of("other"), None);
    }

    #[test]
    fn a_path_describes_its_delay_in_words() {
        let mut p = PathConfig::default();
        assert_eq!(p.delay_text(), "no delay added");
        p.delay = Duration::from_millis(10);
        assert_eq!(p.delay_text(), "RTT 20ms");
        p.jitter = Duration::from_millis(1);
        assert_eq!(p.delay_text(), "RTT 20ms (jitter 1ms)");
        assert_eq!(Emulator::None.describe(), "no path emulation");
        assert_eq!(Emulator::Userspace.describe(), "emulator Userspace");
    }

    #[test]
    fn each_guest_host_has_its_own_tap_and_router_address() {
        let n = LabNames::new("abcdefghi").unwrap();
        assert_ne!(n.tap(Host::A), n.tap(Host::B));
        assert!(n.tap(Host::A).len() <= 15 && n.tap(Host::B).len() <= 15);
        assert_ne!(Host::A.router_ipv4(), Host::B.router_ipv4());
        let mut p = PathConfig {
            guest_a: true,
            ..PathConfig::default()
        };
        assert!(p.validate().unwrap_err().contains("--vm both"));
        p.guest = Some(crate::lab::vm::guest::GuestSpec::default());
        assert!(p.validate().is_ok());
        assert_eq!(p.guest_on(Host::A), p.guest);
        assert_eq!(p.vm_hosts(), Some("both"));
        p.guest_a = false;
        assert_eq!((p.guest_on(Host::A), p.vm_hosts()), (None, Some("b")));
    }

    #[test]
    fn netem_gets_delay_loss_and_a_tbf_child() {
        let path = PathConfig {
            rate_bps: Some(200e6),
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(1),
            loss_percent: 1.0,
            ..PathConfig::default()
        };
        let cmds = qdisc_commands("ns", "d", &path, Emulator::Netem, 1500);
        assert_eq!(cmds.len(), 2);
        let netem = cmds[0].join(" ");
        assert!(
            netem.contains("root handle 1: netem limit 1000000 delay 10000us 1000us loss 1%"),
            "{netem}"
        );
        let tbf = cmds[1].join(" ");
        assert!(
            tbf.contains("parent 1:1 handle 10: tbf rate 200000000bit burst 25000 latency 50000us"),
            "{tbf}"
        );
    }

    #[test]
    fn plain_paths_only_shape_the_rate_and_the_delay_line_shapes_its_own() {
        let path = PathConfig {
            rate_bps: Some(1e9),
            ..PathConfig::default()
        };
        assert!(qdisc_commands("ns", "d", &path, Emulator::Userspace, 9000).is_empty());
        let cmds = qdisc_commands("ns", "d", &path, Emulator::None, 9000);
        assert_eq!(cmds.len(), 1);
        assert!(
            cmds[0]
                .join(" ")
                .contains("root handle 10: tbf rate 1000000000bit burst 125000")
        );
        assert!(qdisc_commands("ns", "d", &PathConfig::default(), Emulator::None, 1500).is_empty());
    }

    #[test]
    fn validation_names_the_problem() {
        let bad = PathConfig {
            jitter: Duration::from_millis(5),
            ..PathConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("jitter"));
        let bad = PathConfig {
            mtu_b: 100,
            ..PathConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("MTU"));
        assert!(PathConfig::default().validate().is_ok());
    }
}
