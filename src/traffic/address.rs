//! Where a test goes: a host name and port resolved to one socket address, honouring `-4`/`-6`.
//! Called by `cli` for the client's server, by `app` for peers and plan targets, by the
//! libvirt executor and by `pscheduler`.

use std::net::{SocketAddr, ToSocketAddrs};

/// A server address that cannot be used: a name that does not resolve, no address of the
/// family asked (`-4`/`-6`), a `-B` of the other family. iperf3 meets these when it connects,
/// so its `-J` document carries them as the test's `error`; a client in iperf3's mode does the
/// same (`app`), where option errors are refused before any document.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AddressError(pub String);

/// Resolves `host:port`, honouring `-4`/`-6`.
pub fn resolve(host: &str, port: u16, v4: bool, v6: bool) -> anyhow::Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| AddressError(format!("cannot resolve {host:?}: {e}")))?
        .collect();
    Ok(addrs
        .iter()
        .find(|a| (!v4 || a.is_ipv4()) && (!v6 || a.is_ipv6()))
        .copied()
        .ok_or_else(|| {
            AddressError(format!(
                "{host:?} has no {} address",
                if v4 { "IPv4" } else { "IPv6" }
            ))
        })?)
}

/// Resolves `HOST[:PORT]` (a name, an IPv4 address, a bare IPv6 address, or `[IPv6]:PORT`),
/// with `default_port` when it names none. A bare IPv6 address never has a port: `2001:db8::5:1`
/// is one address, not `2001:db8::5` port 1.
pub fn resolve_host_port(spec: &str, default_port: u16) -> anyhow::Result<SocketAddr> {
    let (host, port) = match spec.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') || (h.starts_with('[') && h.ends_with(']')) => (
            h,
            p.parse::<u16>()
                .map_err(|_| anyhow::anyhow!("the port of {spec} is not a number"))?,
        ),
        _ => (spec, default_port),
    };
    resolve(host, port, false, false)
}

#[cfg(test)]
mod tests {
    use super::{resolve, resolve_host_port};

    #[test]
    fn address_families_are_honoured() {
        assert!(resolve("::1", 1, false, true).unwrap().is_ipv6());
        assert!(resolve("127.0.0.1", 1, true, false).unwrap().is_ipv4());
        assert!(resolve("127.0.0.1", 1, false, true).is_err());
    }

    #[test]
    fn a_port_is_read_only_where_it_cannot_be_part_of_the_address() {
        let at = |s: &str| resolve_host_port(s, 5310).map(|a| a.to_string());
        assert_eq!(at("127.0.0.1").unwrap(), "127.0.0.1:5310");
        assert_eq!(at("127.0.0.1:5201").unwrap(), "127.0.0.1:5201");
        assert_eq!(at("[::1]:5201").unwrap(), "[::1]:5201");
        assert_eq!(at("::1").unwrap(), "[::1]:5310");
        assert_eq!(at("2001:db8::5:1").unwrap(), "[2001:db8::5:1]:5310");
        assert_eq!(at("[2001:db8::5]").unwrap(), "[2001:db8::5]:5310");
        let e = at("127.0.0.1:http").unwrap_err().to_string();
        assert_eq!(e, "the port of 127.0.0.1:http is not a number");
    }
}
