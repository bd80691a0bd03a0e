//! `[target] kind = "libvirt"`: a user's own libvirt domain, measured against a server that
//! runs in the guest, whose NIC model a `[matrix] nic` sweeps (the domain is redefined and
//! restarted per model, and put back at the end: `host::libvirt`).

use super::Reader;
use crate::traffic::client::PeerProtocol;
use crate::units::parse_duration;
use std::time::Duration;
use toml_edit::TableLike;

/// The keys only a libvirt target has.
pub const LIBVIRT_KEYS: [&str; 8] = [
    "domain",
    "uri",
    "server",
    "server_start",
    "server_command",
    "interface",
    "boot_timeout",
    "shutdown_timeout",
];

/// How the server in the guest comes up after each start of the domain.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerStart {
    /// The guest starts it by itself (a service, or its init): netsweep waits for the port.
    Running,
    /// netsweep runs `command` over ssh once the guest answers there, then waits for the port.
    Ssh {
        dest: String,
        ssh_options: Vec<String>,
        command: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct LibvirtTarget {
    pub domain: String,
    /// libvirt's connection URI (`virsh -c`); libvirt's default when left out.
    pub uri: Option<String>,
    /// The guest's server, `HOST[:PORT]`.
    pub host: String,
    /// What that server speaks: netsweep (port 5310 by default) or iperf3 (5201).
    pub server: PeerProtocol,
    pub start: ServerStart,
    /// The MAC of the interface whose model a `nic` sweep changes (needed when it has several).
    pub interface: Option<String>,
    /// How long after a start the server must answer.
    pub boot_timeout: Duration,
    /// How long a guest may take to shut down before it is powered off (0: at once).
    pub shutdown_timeout: Duration,
}

impl LibvirtTarget {
    /// The server's port when `host` names none.
    pub fn default_port(&self) -> u16 {
        match self.server {
            PeerProtocol::Iperf3 => crate::traffic::iperf3::IPERF3_PORT,
            _ => crate::traffic::protocol::DEFAULT_PORT,
        }
    }
}

fn duration(r: &mut Reader, table: &dyn TableLike, key: &str, default: Duration) -> Duration {
    match r.string(table, key) {
        Some((v, span)) => match parse_duration(&v) {
            Ok(d) if d <= Duration::from_secs(3600) => d,
            Ok(_) => {
                r.issue(span, format!("{key} {v:?} is more than an hour"));
                default
            }
            Err(e) => {
                r.issue(span, format!("{key} {v:?}: {e}"));
                default
            }
        },
        None => default,
    }
}

/// Reads a libvirt target; `None` when a required key is missing (reported).
pub(super) fn read(
    r: &mut Reader,
    table: &dyn TableLike,
    span: Option<std::ops::Range<usize>>,
) -> Option<LibvirtTarget> {
    let domain = r.string(table, "domain").map(|(s, _)| s);
    let host = r.string(table, "host").map(|(s, _)| s);
    let (Some(domain), Some(host)) = (domain, host) else {
        r.issue(
            span,
            "target kind \"libvirt\" needs domain = \"NAME\" (as `virsh list --all` shows it) \
             and host = \"GUEST-ADDRESS[:PORT]\" (where the server in the guest listens)",
        );
        return None;
    };
    let server = match r.string(table, "server") {
        None => PeerProtocol::Netsweep,
        Some((s, _)) if s == "netsweep" => PeerProtocol::Netsweep,
        Some((s, _)) if s == "iperf3" => PeerProtocol::Iperf3,
        Some((s, sspan)) => {
            r.issue(
                sspan,
                format!("server {s:?}: the guest's server is \"netsweep\" or \"iperf3\""),
            );
            PeerProtocol::Netsweep
        }
    };
    let interface = r.string(table, "interface").and_then(|(m, mspan)| {
        let ok = crate::host::libvirt::xml::valid_mac(&m);
        if !ok {
            r.issue(
                mspan,
                format!("interface {m:?} is not a MAC address such as 52:54:00:12:34:56"),
            );
        }
        ok.then(|| m.to_ascii_lowercase())
    });
    let command = r.string(table, "server_command");
    let start = match r.string(table, "server_start") {
        None => ServerStart::Running,
        Some((s, _)) if s == "running" => ServerStart::Running,
        Some((s, sspan)) => match s.strip_prefix("ssh:") {
            Some(dest) if !dest.is_empty() && !dest.starts_with('-') => {
                let ssh_options = r.ssh_options(table);
                match &command {
                    Some((c, _)) => ServerStart::Ssh {
                        dest: dest.to_string(),
                        ssh_options,
                        command: c.clone(),
                    },
                    None => {
                        r.issue(
                            sspan,
                            "server_start = \"ssh:USER@HOST\" needs server_command, e.g. \
                             \"iperf3 -s -D\" or \"netsweep server --daemon\"",
                        );
                        ServerStart::Running
                    }
                }
            }
            _ => {
                r.issue(
                    sspan,
                    format!(
                        "server_start {s:?}: \"running\" (the guest starts its server) or \
                         \"ssh:USER@HOST\" (with server_command)"
                    ),
                );
                ServerStart::Running
            }
        },
    };
    if let (ServerStart::Running, Some((_, cspan))) = (&start, &command) {
        r.issue(
            cspan.clone(),
            "server_command is run over ssh: add server_start = \"ssh:USER@HOST\"",
        );
    }
    Some(LibvirtTarget {
        domain,
        uri: r.string(table, "uri").map(|(s, _)| s),
        host,
        server,
        start,
        interface,
        boot_timeout: duration(r, table, "boot_timeout", Duration::from_secs(180)),
        shutdown_timeout: duration(r, table, "shutdown_timeout", Duration::from_secs(60)),
    })
}
