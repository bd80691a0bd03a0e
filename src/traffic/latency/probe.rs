//! The probe datagrams. A probe is `NSPROBE1`, the test's token, a sequence number and the
//! client's send time (ns on its own monotonic clock); the echo is the probe followed by the
//! server's receive and send times (ns on the server's clock). Anything else is ignored.

use crate::traffic::protocol::Token;

pub const PROBE_MAGIC: &[u8; 8] = b"NSPROBE1";
/// Size of a probe: magic, token, sequence number, send time.
pub const PROBE_LEN: usize = 8 + 16 + 8 + 8;
/// Size of an echo: the probe, then the server's receive and send times.
pub const ECHO_LEN: usize = PROBE_LEN + 16;

/// What the client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub seq: u64,
    pub sent_ns: u64,
}

/// What comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    pub probe: Probe,
    pub server_rx_ns: u64,
    pub server_tx_ns: u64,
}

fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(d.get(at..at + 8)?.try_into().ok()?))
}

pub fn encode_probe(token: &Token, p: Probe) -> [u8; PROBE_LEN] {
    let mut out = [0u8; PROBE_LEN];
    out[..8].copy_from_slice(PROBE_MAGIC);
    out[8..24].copy_from_slice(&token.0);
    out[24..32].copy_from_slice(&p.seq.to_be_bytes());
    out[32..40].copy_from_slice(&p.sent_ns.to_be_bytes());
    out
}

/// A probe of this test (`token`), or `None`.
pub fn parse_probe(d: &[u8], token: &Token) -> Option<Probe> {
    if d.len() != PROBE_LEN || &d[..8] != PROBE_MAGIC || d[8..24] != token.0 {
        return None;
    }
    Some(Probe {
        seq: u64_at(d, 24)?,
        sent_ns: u64_at(d, 32)?,
    })
}

/// The echo of a probe, stamped with the server's times.
pub fn encode_echo(token: &Token, e: Echo) -> [u8; ECHO_LEN] {
    let mut out = [0u8; ECHO_LEN];
    out[..PROBE_LEN].copy_from_slice(&encode_probe(token, e.probe));
    out[PROBE_LEN..PROBE_LEN + 8].copy_from_slice(&e.server_rx_ns.to_be_bytes());
    out[PROBE_LEN + 8..].copy_from_slice(&e.server_tx_ns.to_be_bytes());
    out
}

/// An echo of this test's probes, or `None`.
pub fn parse_echo(d: &[u8], token: &Token) -> Option<Echo> {
    if d.len() != ECHO_LEN {
        return None;
    }
    Some(Echo {
        probe: parse_probe(&d[..PROBE_LEN], token)?,
        server_rx_ns: u64_at(d, PROBE_LEN)?,
        server_tx_ns: u64_at(d, PROBE_LEN + 8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_and_echoes_round_trip_and_junk_is_ignored() {
        let t = Token::random();
        let p = Probe {
            seq: 7,
            sent_ns: 123_456_789,
        };
        let d = encode_probe(&t, p);
        assert_eq!(parse_probe(&d, &t), Some(p));
        assert_eq!(
            parse_probe(&d, &Token::random()),
            None,
            "another test's token"
        );
        assert_eq!(parse_probe(&d[..39], &t), None);
        let e = Echo {
            probe: p,
            server_rx_ns: 5,
            server_tx_ns: 9,
        };
        let d = encode_echo(&t, e);
        assert_eq!(parse_echo(&d, &t), Some(e));
        assert_eq!(parse_echo(&d[..PROBE_LEN], &t), None);
        let mut bad = d;
        bad[0] = b'X';
        assert_eq!(parse_echo(&bad, &t), None);
        assert_eq!(parse_echo(&[0u8; ECHO_LEN], &t), None);
    }
}
