//! FreeBSD's `struct tcp_info` (sys/netinet/tcp.h), decoded from the bytes `getsockopt`
//! returns. Plain byte decoding, so it is compiled and tested on every system.
//!
//! Its first part copies Linux's layout (seven `u8` fields, then `u32`s from offset 8), but
//! the meaning differs: `tcpi_snd_cwnd` is in bytes, not segments; retransmissions are
//! `tcpi_snd_rexmitpack`, a FreeBSD extension (the Linux-compatible `tcpi_retrans` slot is
//! never filled); there is no `tcpi_min_rtt` and no time-limited fields.

use super::TcpInfo;

/// Byte offsets of the fields used, from the header's declaration order (all `u32`).
pub const SND_MSS: usize = 16;
pub const RTT: usize = 68;
pub const RTTVAR: usize = 72;
pub const SND_CWND: usize = 80;
/// `tcpi_snd_wnd`: the peer's advertised window in bytes (FreeBSD extension).
pub const SND_WND: usize = 100;
pub const SND_REXMITPACK: usize = 120;
/// The struct's size on FreeBSD 12 to 14 (fields, then `__tcpi_pad` up to this size).
pub const STRUCT_SIZE: usize = 240;
/// Room given to `getsockopt`: a larger struct of a later release still fits.
pub const BUFFER: usize = 512;
/// Bytes that must be present: up to the end of `tcpi_snd_zerowin` (FreeBSD 10 and later).
pub const MIN_LEN: usize = 132;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// Translates the bytes of one `struct tcp_info`; `None` when fewer than `MIN_LEN` came.
pub fn decode(b: &[u8]) -> Option<TcpInfo> {
    if b.len() < MIN_LEN {
        return None;
    }
    Some(TcpInfo {
        total_retrans: u32_at(b, SND_REXMITPACK)?,
        rtt_us: u32_at(b, RTT)?,
        rttvar_us: u32_at(b, RTTVAR)?,
        min_rtt_us: None,
        cwnd_bytes: u64::from(u32_at(b, SND_CWND)?),
        snd_mss: u32_at(b, SND_MSS)?,
        snd_wnd: u32_at(b, SND_WND)?,
        rwnd_limited_us: None,
        sndbuf_limited_us: None,
        bytes_acked: None,
        bytes_received: None,
        bytes_sent: None,
        bytes_retrans: None,
        dsack_dups: None,
    })
}

#[cfg(all(test, target_endian = "little"))]
mod tests {
    use super::*;

    /// A `struct tcp_info` of an established FreeBSD 14 amd64 connection, as bytes, written
    /// field by field in the header's order: state 4 (ESTABLISHED), options 0x07, wscales
    /// 0x76; rto 201000 us; snd_mss 1448; rcv_mss 1448; the Linux-compatible
    /// unacked..fackets slots 0 (FreeBSD leaves them, `tcpi_retrans` included, empty);
    /// last_data_recv 12; rtt 1250 us; rttvar 300 us; snd_ssthresh 1073725440; snd_cwnd
    /// 144800 bytes; rcv_space 65536; snd_wnd 262144; snd_bwnd 0; snd_nxt 0x1234abcd;
    /// rcv_nxt 0x99; toe_tid 0; snd_rexmitpack 37; rcv_ooopack 5; snd_zerowin 0; then the
    /// FreeBSD 14 ECN and TLP fields and padding, zero, up to 240 bytes.
    fn fixture() -> Vec<u8> {
        let head: [u8; 8] = [4, 0, 0, 0, 0, 0x07, 0x76, 0];
        let words: [u32; 31] = [
            201_000,       // 8   tcpi_rto
            0,             // 12  __tcpi_ato
            1448,          // 16  tcpi_snd_mss
            1448,          // 20  tcpi_rcv_mss
            0,             // 24  __tcpi_unacked
            0,             // 28  __tcpi_sacked
            0,             // 32  __tcpi_lost
            0,             // 36  __tcpi_retrans (never filled on FreeBSD)
            0,             // 40  __tcpi_fackets
            0,             // 44  __tcpi_last_data_sent
            0,             // 48  __tcpi_last_ack_sent
            12,            // 52  tcpi_last_data_recv
            0,             // 56  __tcpi_last_ack_recv
            0,             // 60  __tcpi_pmtu
            0,             // 64  __tcpi_rcv_ssthresh
            1250,          // 68  tcpi_rtt
            300,           // 72  tcpi_rttvar
            1_073_725_440, // 76  tcpi_snd_ssthresh
            144_800,       // 80  tcpi_snd_cwnd (bytes)
            0,             // 84  __tcpi_advmss
            0,             // 88  __tcpi_reordering
            0,             // 92  __tcpi_rcv_rtt
            65_536,        // 96  tcpi_rcv_space
            262_144,       // 100 tcpi_snd_wnd
            0,             // 104 tcpi_snd_bwnd
            0x1234_abcd,   // 108 tcpi_snd_nxt
            0x99,          // 112 tcpi_rcv_nxt
            0,             // 116 tcpi_toe_tid
            37,            // 120 tcpi_snd_rexmitpack
            5,             // 124 tcpi_rcv_ooopack
            0,             // 128 tcpi_snd_zerowin
        ];
        let mut b = head.to_vec();
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.resize(STRUCT_SIZE, 0);
        b
    }

    #[test]
    fn decodes_freebsd_fields_with_their_own_meaning() {
        let b = fixture();
        // The offsets the decoder uses hold the fixture's bytes, little-endian.
        assert_eq!(&b[SND_REXMITPACK..SND_REXMITPACK + 4], &[37, 0, 0, 0]);
        assert_eq!(&b[SND_CWND..SND_CWND + 4], &[0xa0, 0x35, 0x02, 0x00]);
        let i = decode(&b).unwrap();
        assert_eq!(i.total_retrans, 37, "from tcpi_snd_rexmitpack");
        assert_eq!(
            i.cwnd_bytes, 144_800,
            "already bytes: not multiplied by the MSS"
        );
        assert_eq!((i.rtt_us, i.rttvar_us, i.snd_mss), (1250, 300, 1448));
        assert_eq!(i.snd_wnd, 262_144);
        assert_eq!(
            i.min_rtt_us, None,
            "FreeBSD has no min RTT: unavailable, not 0"
        );
        assert_eq!((i.rwnd_limited_us, i.sndbuf_limited_us), (None, None));
    }

    #[test]
    fn a_short_struct_is_refused_and_an_older_one_is_enough() {
        let b = fixture();
        assert!(decode(&b[..MIN_LEN - 1]).is_none());
        assert!(decode(&[]).is_none());
        // FreeBSD 13's struct ends its named fields at tcpi_snd_zerowin.
        assert_eq!(decode(&b[..MIN_LEN]).unwrap().total_retrans, 37);
    }
}
