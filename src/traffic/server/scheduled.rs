//! A server that serves one scheduled test only (pScheduler's server participant): the
//! client must bring the run's secret ticket (handed to both participants in pScheduler's
//! participant data) and, when the schedule names them, come from the client's addresses.
//! Anyone else is refused without taking the slot or ending the run, and iperf3 clients
//! (which cannot carry the ticket) are told busy.

use std::net::IpAddr;

/// The one test a server waits for.
#[derive(Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The run's secret; compared in constant time.
    pub ticket: String,
    /// The scheduled client's addresses; empty: any address with the ticket.
    pub clients: Vec<IpAddr>,
}

impl std::fmt::Debug for Scheduled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduled")
            .field("ticket", &"(secret)")
            .field("clients", &self.clients)
            .finish()
    }
}

impl Scheduled {
    /// Why a client from `ip` with `ticket` is not the scheduled one, or `None` when it is.
    pub fn stranger(&self, ip: IpAddr, ticket: Option<&str>) -> Option<String> {
        let ip = ip.to_canonical();
        if !self.clients.is_empty() && !self.clients.iter().any(|c| c.to_canonical() == ip) {
            return Some(format!(
                "{ip} is not the scheduled client ({}): this server serves one scheduled test",
                self.clients
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        match ticket {
            Some(t) if same(t.as_bytes(), self.ticket.as_bytes()) => None,
            Some(_) => Some("wrong ticket: this server serves one scheduled test".into()),
            None => Some(
                "no ticket: this server serves one scheduled test (pScheduler's netsweep tool)"
                    .into(),
            ),
        }
    }
}

/// Byte strings compared without an early exit on the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh ticket: 128 random bits in hex.
pub fn new_ticket() -> String {
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheduled(clients: &[&str]) -> Scheduled {
        Scheduled {
            ticket: "0123abcd".into(),
            clients: clients.iter().map(|c| c.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn only_the_scheduled_client_with_its_ticket_is_admitted() {
        let s = scheduled(&["127.0.0.1"]);
        let me: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(s.stranger(me, Some("0123abcd")), None);
        // An IPv4 client seen on a dual-stack listener.
        assert_eq!(
            s.stranger("::ffff:127.0.0.1".parse().unwrap(), Some("0123abcd")),
            None
        );
        assert!(
            s.stranger(me, Some("0123abce"))
                .unwrap()
                .contains("wrong ticket")
        );
        assert!(
            s.stranger(me, Some("0123abcd0"))
                .unwrap()
                .contains("wrong ticket")
        );
        assert!(s.stranger(me, None).unwrap().contains("no ticket"));
        let stray = s
            .stranger("127.0.0.5".parse().unwrap(), Some("0123abcd"))
            .unwrap();
        assert!(
            stray.contains("127.0.0.5 is not the scheduled client"),
            "{stray}"
        );
    }

    #[test]
    fn without_addresses_the_ticket_alone_admits() {
        let s = scheduled(&[]);
        assert_eq!(
            s.stranger("192.0.2.9".parse().unwrap(), Some("0123abcd")),
            None
        );
        assert!(s.stranger("192.0.2.9".parse().unwrap(), None).is_some());
    }

    #[test]
    fn tickets_are_fresh() {
        let (a, b) = (new_ticket(), new_ticket());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
