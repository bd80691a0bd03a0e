//! The receive buffer of a same-host path: a TCP receiver whose sender is on this host asks
//! for a fixed buffer (`SAME_HOST_ASK`) instead of the kernel's autotuning, unless `-w` set
//! one, when its end of the test receives on more than one stream.
//!
//! # Why (loopback, 2-vCPU AMD EPYC VM, 32 MiB L3, Linux 6.18, 2026-11-30)
//! Over loopback the window holds nothing but memory: the round trip is tens of microseconds,
//! so a few megabytes cover any rate the cores can carry. Linux's autotuning grows a fast
//! receiver's buffer to `tcp_rmem`'s maximum anyway (`ss -tm`: `rb33554432` behind a
//! receiver dropping 40 Gbit/s, on a host whose maximum is 32 MiB), and the pages queued behind
//! it are written by one core and freed by the other long after they left the caches (the
//! likeliest cause of what follows; not traced further). Two bare
//! pairs (`examples/ceiling.rs --paths write --chunks 4M --discard --streams 2`, 2 s runs, six
//! interleaved rounds) carried 72-98 Gbit/s with a 4 MiB low-water mark and autotuning, 80-111
//! with a 2 MiB `--rcvbuf` (4 MiB granted) whatever the batching (blocking reads, the mark,
//! 100 us naps); eight pairs napping 46-61 against 55-73 (1 MiB asked: 34-52, 4 MiB: 51-61). One
//! pair: 30-42 against 30-42, no change. In netsweep (`-w 2M` sets what this module asks,
//! and a 2 MiB send buffer, which is what the autotuned one reaches here), medians of 8-10
//! interleaved rounds of 3 s, Gbit/s and the test processes' CPU-s per GB:
//!
//! | case | autotuned | 2 MiB asked |
//! |---|---|---|
//! | 2 streams, default (no copy) | 72.7, 0.232 | 81.3, 0.193 |
//! | 2 streams, `--rx-copy` | 48.7, 0.343 | 56.7, 0.280 |
//! | 8 streams, default (5 rounds) | 73.7, 0.221 | 79.2, 0.205 |
//! | 1 stream, default | 37.1, 0.279 | 33.8, 0.304 |
//! | 1 stream, `--rx-copy` | 27.3, 0.442 | 30.8, 0.383 |
//!
//! Then this module against the build before it (the same 8 rounds, separate servers): two
//! streams 72.5 against 77.1 Gbit/s, 0.232 against 0.198 CPU-s/GB; eight 67.8 against 77.5,
//! 0.247 against 0.214; one copying stream 29.4 against 26.3 (rounds of 20-22 and 30-40 on
//! both sides: the one-stream gain of the first run did not hold). So a lone receiver keeps
//! the autotuning (its sender, not memory, is what it is short of); several ask. Paths that
//! leave the host keep the autotuning: their round trip is what the window must cover, and
//! nothing here was measured on one. The ask is made only where it is granted in full (`sockopt::cap_buffer`:
//! as root past `net.core.rmem_max`, otherwise only when that maximum allows it): a buffer the
//! kernel clamped lower would cost far more than the caches win. Results say the buffer
//! (`StartInfo::receive_buffer_bytes`).

use std::net::IpAddr;

/// SO_RCVBUF asked of a same-host receiver, bytes (Linux grants twice this).
pub const SAME_HOST_ASK: u64 = 2 << 20;

/// Whether a connection from `local` to `peer` stays on this host: a loopback peer, or one of
/// this host's own addresses (the socket's local one; routed through loopback as well).
pub fn same_host(local: IpAddr, peer: IpAddr) -> bool {
    let (local, peer) = (local.to_canonical(), peer.to_canonical());
    peer.is_loopback() || peer == local
}

/// The SO_RCVBUF a TCP receiver asks for, or `None` to keep the kernel's autotuning: only on a
/// same-host path, without a window the user set, when this end receives on several streams
/// (the module's table).
pub fn ask(window_set: bool, same_host: bool, receivers: usize) -> Option<u64> {
    (!window_set && same_host && receivers > 1).then_some(SAME_HOST_ASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_the_hosts_own_address_are_the_same_host() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(same_host(ip("127.0.0.1"), ip("127.0.0.1")));
        assert!(same_host(ip("::1"), ip("::1")));
        assert!(same_host(ip("::ffff:127.0.0.1"), ip("::ffff:127.0.0.1")));
        assert!(same_host(ip("198.18.0.1"), ip("198.18.0.1")));
        assert!(same_host(ip("::ffff:198.18.0.1"), ip("198.18.0.1")));
        assert!(!same_host(ip("198.18.0.1"), ip("198.18.0.2")));
        assert!(!same_host(ip("fd00::1"), ip("fd00::2")));
    }

    #[test]
    fn only_several_same_host_receivers_without_a_window_ask() {
        assert_eq!(ask(false, true, 2), Some(SAME_HOST_ASK));
        assert_eq!(ask(false, true, 8), Some(SAME_HOST_ASK));
        assert_eq!(ask(false, true, 1), None, "a lone receiver");
        assert_eq!(ask(true, true, 2), None, "-w decides");
        assert_eq!(ask(false, false, 8), None, "a path off the host");
    }
}
