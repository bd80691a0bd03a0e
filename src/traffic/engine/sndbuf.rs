//! The send buffer of a same-host path: a lone TCP sender whose receiver is a netsweep one on
//! this host asks for a fixed buffer (`LONE_SENDER_ASK`) instead of the kernel's autotuning,
//! unless `-w` set one. The counterpart of `rcvbuf`, which serves several receivers.
//!
//! # Why (loopback, 2-vCPU AMD EPYC VM, 32 MiB L3, Linux 6.18, 2026-11-30)
//! Autotuning grows a fast loopback sender's buffer to `tcp_wmem`'s maximum (4 MiB here), and
//! `ss -tm` during `netsweep client 127.0.0.1` showed 2.5-4.2 MB queued at the sender
//! (`w`) beside 0.8-3.8 MB at the receiver (`r`), and the receiver dropping segments from its
//! backlog (`d` 150-230 per test: retransmitted, although loopback loses nothing). With 256 KiB
//! asked (512 KiB granted) about 0.5 MB stayed queued at the sender, 1-1.5 MB at the receiver,
//! and it dropped 13. A build that took the ask from an environment variable, against its own
//! server, 10 interleaved rounds of 3 s, medians of the per-round ratios to the autotuned
//! buffer (Gbit/s; CPU-seconds per GB of both processes):
//!
//! | case | asked | rate | CPU per byte | retransmits a test |
//! |---|---|---|---|---|
//! | 1 stream | 128 KiB | 0.88x (0 of 10 rounds faster) | 0.90x | 0-1 |
//! | 1 stream | 256 KiB | 1.08x (7 of 10) | **0.82x** (9 of 10 cheaper) | 3-14 (37-3144 autotuned) |
//! | 1 stream | 512 KiB | 1.01x | 0.89x | 8-77 |
//! | 1 stream, `--rx-copy` (7 rounds) | 256 KiB | 1.00x | 0.88x | |
//! | 2 streams | 256 KiB | 1.06x | 1.03x | |
//! | 2 streams (8 rounds) | 512 KiB / 1 MiB | 0.90x / 0.88x | 1.15x / 1.09x | |
//! | 8 streams | 256 KiB | 1.00x | 1.05x | |
//! | 8 streams (8 rounds) | 512 KiB / 1 MiB | 1.02x / 0.85x | 1.03x / 1.10x | |
//! | 1 stream to iperf3 3.21+'s server (8 rounds) | 256 KiB | 0.84x | 1.12x | |
//!
//! So only a lone sender asks (several streams' receivers already hold their footprint with a
//! 2 MiB receive buffer, `rcvbuf`), and only towards netsweep's receivers, which batch their
//! reads (`lowater`): iperf3's, reading each 128 KiB as it comes, carried less behind the
//! smaller buffer. Bare pairs (`examples/ceiling.rs --paths write --chunks 4M --discard
//! --rcvlowat 1M --sndbuf SIZE`, 3 s, 3-4 interleaved rounds) agreed at one stream (256-512 KiB:
//! 34-49 Gbit/s against 35-40 autotuned) and, with eight blocking pairs and 2 MiB receive
//! buffers, gained far more (128 KiB: 69-85 against 52-64) than netsweep's eight streams, whose
//! two sending threads do not block on a full buffer (`sendgroup`). Paths that leave the host
//! keep the autotuning: their round trip is what the buffer must cover. The ask is made only
//! where it is granted in full (`sockopt::cap_buffer`); results say the buffer
//! (`StartInfo::send_buffer_bytes`).

/// SO_SNDBUF asked of a lone same-host sender, bytes (Linux grants twice this).
pub const LONE_SENDER_ASK: u64 = 256 << 10;

/// The SO_SNDBUF a TCP sender asks for, or `None` to keep the kernel's autotuning: on a
/// same-host path, without a window the user set, when this end runs one stream, which sends,
/// to a netsweep receiver (`iperf3_receiver` false; the module's table).
pub fn ask(
    window_set: bool,
    same_host: bool,
    senders: usize,
    receivers: usize,
    iperf3_receiver: bool,
) -> Option<u64> {
    (!window_set && same_host && senders == 1 && receivers == 0 && !iperf3_receiver)
        .then_some(LONE_SENDER_ASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lone_same_host_sender_to_a_netsweep_receiver_asks() {
        assert_eq!(ask(false, true, 1, 0, false), Some(LONE_SENDER_ASK));
        assert_eq!(ask(false, true, 2, 0, false), None, "several streams");
        assert_eq!(ask(false, true, 1, 1, false), None, "--bidir");
        assert_eq!(ask(true, true, 1, 0, false), None, "-w decides");
        assert_eq!(ask(false, false, 1, 0, false), None, "a path off the host");
        assert_eq!(ask(false, true, 1, 0, true), None, "iperf3's receiver");
        assert_eq!(ask(false, true, 0, 1, false), None, "a receiver");
    }
}
