//! TCP senders that share a thread: when a test sends on more streams than this process has
//! CPUs, each CPU's worth of streams is turned by one thread on sockets that do not block,
//! which waits in poll(2) only once every one of its sockets is full.
//!
//! # Why (loopback, 2-vCPU AMD EPYC VM, Linux 6.18, 2026-11-29)
//! Eight bare sender/receiver pairs with 4 MiB writes and a 4 MiB low-water mark on the
//! receivers carried 61.0 Gbit/s with a thread per sender (6 rounds of 4 s, median) and 72.0
//! with two sending threads of four sockets each (four threads: 67.8). Where the gain lies was
//! measured by grouping one side at a time (5 rounds): grouped senders, a thread per receiver
//! 72.8; a thread per sender, grouped receivers 55.9; both grouped 78.2; neither 63.5. A sender
//! whose socket is full blocks and is woken by the ACKs that free it, eight times over on two
//! cores; a thread with four sockets finds another one with room instead. Receivers batch their
//! wake-ups already (`lowater`), and grouping them lost, so only senders share threads.
//!
//! Only unpaced senders without a pinned CPU or an iperf3 end gate are grouped: a pacer sleeps
//! between writes, `-A` pins each stream's own thread, and the end gate's settling waits for
//! the far end. The group's CPU time is reported with its last stream to finish (owners sum
//! their streams' CPU).

use super::tcp::{Sender, Step};
use super::{EngineEvent, POLL, StreamCtx};
use crate::platform::cputime::{self, CpuUsage};
use crate::platform::sockopt;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;

/// Whether a sending stream may share a thread.
pub fn groupable(ctx: &StreamCtx) -> bool {
    ctx.rate.is_unlimited() && ctx.cpu.is_none() && ctx.end_gate.is_none()
}

/// How `streams` groupable senders share threads on `cpus` CPUs: the streams (indices) each
/// thread turns. One thread per stream up to `cpus` streams; beyond that `cpus` threads, the
/// streams dealt out in turn.
pub fn groups(streams: usize, cpus: usize) -> Vec<Vec<usize>> {
    let threads = streams.min(cpus.max(1));
    (0..threads)
        .map(|t| (t..streams).step_by(threads.max(1)).collect())
        .collect()
}

/// Starts one thread that turns `members` until each is done.
pub fn spawn(members: Vec<(StreamCtx, TcpStream)>) -> std::io::Result<JoinHandle<()>> {
    let name = format!(
        "senders-{}",
        members.first().map_or(0, |(ctx, _)| ctx.stream)
    );
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run(members))
}

fn run(members: Vec<(StreamCtx, TcpStream)>) {
    let cpu_start = cputime::thread_cpu();
    let (ctxs, socks): (Vec<StreamCtx>, Vec<TcpStream>) = members.into_iter().unzip();
    let mut senders: Vec<Option<Sender>> = ctxs
        .iter()
        .zip(socks)
        .map(|(ctx, sock)| {
            // A socket that stays blocking still works, its write timing out after `POLL`.
            let _ = sock.set_nonblocking(true);
            Some(Sender::new(ctx, sock))
        })
        .collect();
    let mut live = senders.len();
    while live > 0 {
        let mut moved = false;
        for (slot, ctx) in senders.iter_mut().zip(&ctxs) {
            let Some(sender) = slot.as_mut() else {
                continue;
            };
            match sender.step() {
                Step::Moved => moved = true,
                Step::Blocked => {}
                Step::Done => {
                    moved = true;
                    live -= 1;
                    let report = slot.take().map(Sender::finish);
                    let cpu = if live == 0 {
                        cputime::thread_cpu_since(&cpu_start)
                    } else {
                        CpuUsage::default()
                    };
                    if let Some(report) = report {
                        let _ = ctx
                            .events
                            .send(EngineEvent::StreamDone(Box::new(report), cpu));
                    }
                }
            }
        }
        if !moved {
            let fds: Vec<_> = senders
                .iter()
                .flatten()
                .map(|s| s.socket().as_raw_fd())
                .collect();
            // Woken by room on any socket, or after `POLL` to close intervals and see `stop`;
            // an error here only makes the next round come sooner.
            let _ = sockopt::poll_writable(&fds, POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_share_threads_only_beyond_one_per_cpu_and_are_dealt_out_in_turn() {
        assert_eq!(groups(2, 2), vec![vec![0], vec![1]]);
        assert_eq!(groups(1, 4), vec![vec![0]]);
        assert_eq!(groups(8, 2), vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]);
        assert_eq!(groups(5, 2), vec![vec![0, 2, 4], vec![1, 3]]);
        assert_eq!(groups(3, 0), vec![vec![0, 1, 2]]);
        assert!(groups(0, 2).is_empty());
        // Every stream is turned by exactly one thread.
        for (n, c) in [(7, 3), (16, 2), (128, 8)] {
            let mut all: Vec<usize> = groups(n, c).into_iter().flatten().collect();
            all.sort_unstable();
            assert_eq!(all, (0..n).collect::<Vec<_>>());
        }
    }
}
