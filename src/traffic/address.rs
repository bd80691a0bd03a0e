//! Where a test goes: a host name and port resolved to one socket address, honouring `-4`/`-6`.
//! Called by `cli` for the client's server, by `app` for peers and by `pscheduler`.

use anyhow::Context;
use std::net::{SocketAddr, ToSocketAddrs};

/// Resolves `host:port`, honouring `-4`/`-6`.
pub fn resolve(host: &str, port: u16, v4: bool, v6: bool) -> anyhow::Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host:?}"))?
        .collect();
    addrs
        .iter()
        .find(|a| (!v4 || a.is_ipv4()) && (!v6 || a.is_ipv6()))
        .copied()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{host:?} has no {} address",
                if v4 { "IPv4" } else { "IPv6" }
            )
        })
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn address_families_are_honoured() {
        assert!(resolve("::1", 1, false, true).unwrap().is_ipv6());
        assert!(resolve("127.0.0.1", 1, true, false).unwrap().is_ipv4());
        assert!(resolve("127.0.0.1", 1, false, true).is_err());
    }
}
