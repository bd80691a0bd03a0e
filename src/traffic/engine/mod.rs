//! The data plane: one thread per stream that sends or receives on one socket and reports every
//! interval of the test's `Timeline` into a channel; unpaced TCP senders beyond one per CPU
//! share threads (`sendgroup`).
//!
//! `client` and `server` set up the sockets, then call `spawn_streams`; the engine knows
//! nothing of terminals, JSON or control messages. Stream threads stop at the end of the grid,
//! when the shared `stop` flag is raised, or on a socket error (reported in the stream's report).
//!
//! TCP senders of a test share one `SendSource` (at most 4 MiB of pattern and its in-memory
//! files); by default they spend the test's first 0.3 s choosing their send path, which
//! `sendpath` documents with what was measured on these machines and why it varies. A TCP
//! test's only receiving stream reads 1 MiB per call, several read 4 MiB each (`read_size`);
//! they batch their wake-ups with a low-water mark that follows their rate, or nap between
//! drains, as their probe finds best (`lowater`). On a same-host path they ask for a fixed
//! receive buffer instead of the kernel's autotuning (`rcvbuf`).
//! Receivers note when bytes last arrived (`Arrivals`), for the owner's receive timeout.

pub mod arrivals;
pub mod drain;
pub mod lowater;
pub mod pacer;
pub mod quota;
pub mod rcvbuf;
mod sendgroup;
pub mod sendpath;
mod sequence;
pub mod sndbuf;
mod tcp;
mod udp;
mod udpnap;

pub use arrivals::Arrivals;
pub use pacer::Pacer;
pub use quota::Quota;
pub use sequence::{Arrival, Jitter, SequenceTracker};

use crate::platform::cputime::{self, CpuUsage};
use crate::traffic::measure::{IntervalReport, Role, StreamReport};
use crate::traffic::spec::Flow;
use crate::traffic::timeline::{Cut, Slot, Timeline};
use crate::units::BitRate;
use std::net::{TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What stream threads tell their owner.
#[derive(Debug)]
pub enum EngineEvent {
    /// An interval closed on this end (sent as it happens, for live output).
    Interval(IntervalReport),
    /// A stream finished; its full report and the CPU its thread used.
    StreamDone(Box<StreamReport>, CpuUsage),
}

/// The socket a stream runs on.
pub enum StreamSocket {
    Tcp(TcpStream),
    /// A connected UDP socket.
    Udp(UdpSocket),
}

impl StreamSocket {
    /// Another descriptor of the same socket (keeps it open while the stream's own is closed).
    pub fn try_clone(&self) -> std::io::Result<StreamSocket> {
        Ok(match self {
            StreamSocket::Tcp(s) => StreamSocket::Tcp(s.try_clone()?),
            StreamSocket::Udp(s) => StreamSocket::Udp(s.try_clone()?),
        })
    }
}

/// Everything a stream thread needs besides its socket.
#[derive(Clone)]
pub struct StreamCtx {
    pub stream: u16,
    pub flow: Flow,
    pub role: Role,
    pub timeline: Arc<Timeline>,
    /// Time zero of the grid on this end.
    pub start: Instant,
    /// Raised by the owner to end the stream early (peer gone, Ctrl-C).
    pub stop: Arc<AtomicBool>,
    pub events: Sender<EngineEvent>,
    /// Target rate of this stream; zero is unlimited.
    pub rate: BitRate,
    /// TCP write size or UDP payload size.
    pub length: usize,
    /// Use UDP_SEGMENT on send / UDP_GRO on receive where available.
    pub udp_offload: bool,
    /// TCP sender: send from an in-memory file with sendfile(2).
    pub zerocopy: bool,
    /// Sender: iperf3's repeating "0123456789" payload (`--repeating-payload`).
    pub repeating_payload: bool,
    /// TCP sender: the data it sends, shared by every sending stream of the test.
    pub source: Option<Arc<SendSource>>,
    /// TCP sender: the calibration shared by every sending stream of the test on this end.
    pub send_pool: Option<Arc<sendpath::Pool>>,
    /// TCP receiver: bytes asked for per read.
    pub read_bytes: usize,
    /// TCP receiver: the data time per read its low-water mark aims at (`lowater::target`).
    pub mark_target: Duration,
    /// TCP receivers on Linux: the probe of their low-water mark this test's receivers on this
    /// end share (`lowater::MarkProbe`); none when the test ends before it would.
    pub mark_probe: Option<Arc<lowater::MarkProbe>>,
    /// TCP sender: how long to try the send paths before keeping the fastest (`sendpath`).
    pub calibration: Duration,
    /// TCP sender without a calibration: start on the host's record's pick and re-check the
    /// path while the test runs (`TestSpec::live_path_choice`).
    pub live_path_choice: bool,
    /// UDP: the header every datagram carries (netsweep's, or iperf3's for an iperf3 peer).
    pub datagrams: Datagrams,
    /// The stream runs until `stop` (an iperf3 peer ends the test when it wants), and the
    /// interval open at the stop is kept in the report instead of dropped.
    pub open_ended: bool,
    /// Where this end's grid stops (`Cut`): the whole timeline unless a `duration = "auto"`
    /// test ends early.
    pub cut: Arc<Cut>,
    /// A test that ends at a byte or block count (`-n`/`-k`): the bytes this stream's direction
    /// moves after the warm-up, shared by its streams on this end. The stream ends once it is
    /// reached (a sender: once it is handed out), keeping its last interval like `open_ended`.
    pub quota: Option<Arc<Quota>>,
    /// Receiver: where it notes each read that brought bytes, shared by this end's receiving
    /// streams (the owner's `--rcv-timeout` watches it).
    pub arrivals: Arc<Arrivals>,
    /// Receiver: drop the data in the kernel instead of copying it (`--skip-rx-copy`; where
    /// the platform can, `sockopt::RECV_TRUNC_DISCARDS`).
    pub skip_rx_copy: bool,
    /// TCP receiver: the advertised window it holds with TCP_WINDOW_CLAMP
    /// (`--window-mode clamp`), set again as the kernel recomputes it.
    pub window_clamp: Option<u64>,
    /// TCP receiver: the SO_RCVBUF it asks for before its first read instead of the kernel's
    /// autotuning (`rcvbuf`: a same-host path), where granted in full.
    pub receive_buffer: Option<u64>,
    /// TCP sender: the SO_SNDBUF it asks for before its first write instead of the kernel's
    /// autotuning (`sndbuf`: a same-host path), where granted in full.
    pub send_buffer: Option<u64>,
    /// The CPU this stream's thread pins itself to (`-A`/`--affinity`), if any.
    pub cpu: Option<usize>,
    /// TCP sender of an iperf3 client: lets the far end settle before TEST_END (`drain`).
    pub end_gate: Option<Arc<drain::EndGate>>,
    /// A client's receiver: its grid's time zero is when the server's first data arrives,
    /// from `start` (when the client said Start) to at most this long after it, as iperf3's
    /// client starts its timers when the server says it runs. A zero fixed by a round trip
    /// guessed at the start was a second late behind a QEMU guest whose first answers were
    /// slow: a reverse test's receiver counted 20% of the data in its warm-up and its last
    /// second nearly empty.
    pub starts_at_data: Option<Duration>,
}

/// The header UDP datagrams carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Datagrams {
    /// Sequence number from 0 and the sender's time since its start, both big-endian u64.
    /// Receivers attribute each datagram to the interval it was sent in.
    #[default]
    Netsweep,
    /// iperf3's: big-endian wall-clock seconds and microseconds, then the sequence number from
    /// 1 (32 bits, or 64 with `udp_counters_64bit`). The sender's clock is unknown, so receivers
    /// attribute datagrams to the interval they arrived in, as iperf3 does.
    Iperf3 { seq64: bool },
}

/// Largest buffer a TCP sender keeps, whatever `-l` says: a write larger than this repeats it
/// (one `writev`), so `-l 64M` costs 4 MiB per test, not 128 MiB per stream.
pub const SEND_BUFFER_MAX: usize = 4 << 20;
/// Read size of a test's only TCP receiving stream.
pub const READ_ONE: usize = 1 << 20;
/// Read size of each of several receiving streams...
pub const READ_MAX: usize = 4 << 20;
/// ...but at most this much over all of them...
pub const READ_TOTAL_MAX: usize = 64 << 20;
/// ...and never less than this.
pub const READ_MIN: usize = 64 << 10;

/// Read size of each of `streams` receiving streams, whatever the sender's write size (`-l`),
/// which the receiver cannot know when the sender calibrates. A larger read never waits longer
/// (it returns once the low-water mark is met and nothing more is queued); what it changes is
/// how much data one call copies. Loopback on this 2-core VM, 4 s tests in interleaved rounds,
/// 2026-11-23, medians of 5 (with reads of 1 MiB / 4 MiB):
/// - one stream: write 1 MiB 46.3 / 46.3 Gbit/s, sendfile 64 KiB 47.6 / 38.9, write 4 MiB
///   47.1 / 35.2: with 4 MiB reads the paths the calibration may keep differ by a quarter, so
///   one stream reads 1 MiB;
/// - two streams: write 1 MiB 56.2 / 59.3, write 4 MiB 59.4 / 71.0, calibrated 58.6 / 75.6
///   (the calibration kept write 4 MiB in 5 tests of 6 with 4 MiB reads, in 1 of 6 with 1 MiB).
///
/// A likely cause, not confirmed (this VM exposes no cache counters to `perf`): a 1 MiB buffer
/// stays in the receiving core's cache, which a copy from sendfile's cache-hot 64 KiB file
/// makes the most of, while four busy threads on two cores evict each other's caches anyway
/// and then fewer, larger copies win.
pub fn read_size(streams: usize) -> usize {
    if streams <= 1 {
        return READ_ONE;
    }
    (READ_TOTAL_MAX / streams).clamp(READ_MIN, READ_MAX)
}

/// The bytes TCP senders send: a pattern buffer and, for zero-copy, in-memory files with the
/// same bytes, one per sendfile size in use. The buffer is at most `SEND_BUFFER_MAX` long;
/// senders share one source per test.
pub struct SendSource {
    pub bytes: Vec<u8>,
    /// How much of `bytes` a write copies from: a larger write repeats it (`WRITE_UNIT`).
    write_unit: usize,
    files: Vec<(usize, std::fs::File)>,
}

/// The part of the pattern a write(2) copies from, repeated (one writev) for larger writes: the
/// kernel's copy then reads a buffer that stays in the core's cache instead of up to 4 MiB.
/// Measured (2026-11-29, loopback, 2-vCPU AMD EPYC VM, Linux 6.18, netsweep against netsweep,
/// 6 interleaved rounds of 5 s, medians, Gbit/s and CPU-seconds per GB of both ends): eight
/// streams on their default path 76.41 (0.212) against 67.04 (0.240) writing from the whole
/// buffer, more in each of the six rounds; `-l 4M --no-zerocopy` 73.34 (0.209) against 63.11
/// (0.239); one stream fixed on write 4 MiB 36.45 (0.280) against 33.07 (0.305); both more in
/// four rounds of six; one and two streams on their default paths the same within the noise. A
/// profile of eight streams had the write's copy (`_copy_from_iter`) at 32% of both CPUs' time.
/// The stream's bytes then repeat every 64 KiB, as iperf3's repeat its 128 KiB block and
/// sendfile's its file; with `--repeating-payload` the pattern restarts at every block as
/// iperf3's does, so the whole buffer is used.
pub const WRITE_UNIT: usize = 64 << 10;

impl SendSource {
    /// The source for writes of `length` bytes (a file too if `zerocopy` and memfd works), or
    /// for every one of the `candidates` the senders choose among.
    pub fn new(
        length: usize,
        zerocopy: bool,
        candidates: Option<&sendpath::Candidates>,
        repeating: bool,
    ) -> SendSource {
        let copy_len = match candidates {
            Some(c) => c.iter().map(|c| c.chunk_bytes).max().unwrap_or(length),
            None => length,
        };
        let bytes = payload(
            copy_len.clamp(1, SEND_BUFFER_MAX),
            repeating.then_some(length),
        );
        let write_unit = if repeating {
            bytes.len()
        } else {
            bytes.len().min(WRITE_UNIT)
        };
        let sizes: Vec<usize> = if let Some(c) = candidates {
            c.iter()
                .filter(|c| c.call == sendpath::SendCall::Sendfile)
                .map(|c| c.chunk_bytes)
                .collect()
        } else if zerocopy {
            vec![bytes.len()]
        } else {
            Vec::new()
        };
        let files = sizes
            .into_iter()
            .filter_map(|n| {
                // Every file size is at most the buffer's: the file holds its first bytes.
                let n = n.clamp(1, bytes.len());
                crate::platform::zerocopy::payload_file(&bytes[..n])
                    .ok()
                    .map(|f| (n, f))
            })
            .collect();
        SendSource {
            bytes,
            write_unit,
            files,
        }
    }

    /// What a write copies from: the first `write_unit` bytes of the pattern.
    pub fn write_part(&self) -> &[u8] {
        &self.bytes[..self.write_unit.min(self.bytes.len())]
    }

    /// The in-memory file for sendfile calls of `chunk` bytes: the smallest that holds a chunk,
    /// else the largest (calls then move at most its length).
    pub fn file(&self, chunk: usize) -> Option<(usize, &std::fs::File)> {
        self.files
            .iter()
            .filter(|(n, _)| *n >= chunk)
            .min_by_key(|(n, _)| *n)
            .or_else(|| self.files.iter().max_by_key(|(n, _)| *n))
            .map(|(n, f)| (*n, f))
    }
}

/// How often a blocked stream wakes to close intervals and check `stop`.
pub(crate) const POLL: Duration = Duration::from_millis(20);
/// How long a UDP receiver waits for stragglers after the grid ends.
pub(crate) const UDP_LINGER: Duration = Duration::from_millis(500);
/// How long a TCP receiver drains after the grid ends before giving up on EOF.
pub(crate) const TCP_DRAIN: Duration = Duration::from_secs(5);

impl StreamCtx {
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// The slots this stream measures: the timeline up to the cut.
    pub(crate) fn slots(&self) -> &[Slot] {
        let all = self.timeline.slots();
        &all[..self.cut.slots().min(all.len())]
    }

    /// The slot containing `elapsed`, or `None` at or after the cut.
    pub(crate) fn index_at(&self, elapsed: Duration) -> Option<usize> {
        self.timeline
            .index_at(elapsed)
            .filter(|&i| i < self.cut.slots())
    }

    /// The owner stopped the stream, or its direction's count was reached.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.quota.as_ref().is_some_and(|q| q.reached().is_some())
    }

    /// Whether slot `index` is measured (after the warm-up), where a count is counted.
    pub(crate) fn counts_in(&self, index: usize) -> bool {
        self.timeline.slots().get(index).is_some_and(|s| !s.omitted)
    }

    /// An open-ended stream that was stopped keeps the interval under way (when the grid has
    /// room for it); other streams report closed intervals only.
    pub(crate) fn keep_open(&self, report: &mut StreamReport, current: IntervalReport) {
        if self.open_ended && report.intervals.len() < self.slots().len() {
            report.intervals.push(current);
        }
    }

    pub(crate) fn emit(&self, report: &IntervalReport) {
        // The owner may have gone (client aborted); nothing to do then.
        let _ = self.events.send(EngineEvent::Interval(report.clone()));
    }

    pub(crate) fn empty_interval(&self, index: usize) -> IntervalReport {
        IntervalReport {
            stream: self.stream,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            role: self.role,
            bytes: 0,
            packets: 0,
            tcp: None,
            udp: None,
        }
    }

    pub(crate) fn new_report(&self) -> StreamReport {
        // Grows as intervals close: memory follows the time that passed, not the grid asked for.
        StreamReport::empty(self.stream, self.flow, self.role, None)
    }
}

/// Starts a test's streams on this end: a thread each, except that unpaced TCP senders beyond
/// `sending_threads` (one per CPU; `usize::MAX` keeps a thread each) share threads (`sendgroup`).
pub fn spawn_streams(
    streams: Vec<(StreamCtx, StreamSocket)>,
    sending_threads: usize,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let (mut senders, mut others) = (Vec::new(), Vec::new());
    for (ctx, socket) in streams {
        match socket {
            StreamSocket::Tcp(t) if ctx.role == Role::Sender && sendgroup::groupable(&ctx) => {
                senders.push(Some((ctx, t)))
            }
            socket => others.push((ctx, socket)),
        }
    }
    let mut handles = Vec::new();
    for group in sendgroup::groups(senders.len(), sending_threads) {
        let members: Vec<_> = group.iter().filter_map(|&i| senders[i].take()).collect();
        handles.push(match <[_; 1]>::try_from(members) {
            // A stream alone keeps the plain thread and its blocking socket.
            Ok([(ctx, sock)]) => spawn_stream(ctx, StreamSocket::Tcp(sock))?,
            Err(members) => sendgroup::spawn(members)?,
        });
    }
    for (ctx, socket) in others {
        handles.push(spawn_stream(ctx, socket)?);
    }
    Ok(handles)
}

/// Starts the thread of one stream.
pub fn spawn_stream(ctx: StreamCtx, socket: StreamSocket) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("stream-{}", ctx.stream))
        .spawn(move || {
            let mut ctx = ctx;
            if let Some(within) = ctx.starts_at_data.filter(|_| ctx.role == Role::Receiver) {
                ctx.start = first_data(&ctx, &socket, within);
            }
            let pinned = ctx.cpu.map(|cpu| {
                crate::platform::sched::pin_current_thread(cpu)
                    .map_err(|e| format!("could not pin the stream to CPU {cpu}: {e}"))
            });
            let cpu_start = cputime::thread_cpu();
            let mut report = match (socket, ctx.role) {
                (StreamSocket::Tcp(s), Role::Sender) => tcp::send(&ctx, s),
                (StreamSocket::Tcp(s), Role::Receiver) => tcp::receive(&ctx, s),
                (StreamSocket::Udp(s), Role::Sender) => udp::send(&ctx, s),
                (StreamSocket::Udp(s), Role::Receiver) => udp::receive(&ctx, s),
            };
            if let Some(Err(e)) = pinned {
                // Checked before the test (`sched::allowed_cpus`): a CPU gone offline since.
                report.error.get_or_insert(e);
            }
            let cpu = cputime::thread_cpu_since(&cpu_start);
            let _ = ctx
                .events
                .send(EngineEvent::StreamDone(Box::new(report), cpu));
        })
}

/// When the first data reached `socket` (`StreamCtx::starts_at_data`): the moment it became
/// readable, from `ctx.start` to `within` after it (a stop ends the wait there).
fn first_data(ctx: &StreamCtx, socket: &StreamSocket, within: Duration) -> Instant {
    let deadline = ctx.start + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return deadline.min(Instant::now());
        }
        let wait = left.min(Duration::from_millis(50));
        let readable = match socket {
            StreamSocket::Tcp(s) => crate::platform::sockopt::wait_readable(s, wait),
            StreamSocket::Udp(s) => crate::platform::sockopt::wait_readable(s, wait),
        };
        if readable.unwrap_or(false) {
            return Instant::now().max(ctx.start);
        }
    }
}

/// The fill pattern of data buffers: not all zeroes, so compressing links cannot flatter us;
/// with `repeating`, iperf3's `--repeating-payload` ("0123456789" again and again, from '0'
/// at every block of `block` bytes, as iperf3's `fill_with_repeating_pattern` fills its
/// buffer of one block).
pub(crate) fn payload(len: usize, repeating: Option<usize>) -> Vec<u8> {
    match repeating {
        Some(block) => (0..len)
            .map(|i| b'0' + ((i % block.max(1)) % 10) as u8)
            .collect(),
        None => (0..len)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repeating_payload_is_iperf3s_digits_from_0_at_every_block() {
        let p = payload(25, Some(12));
        assert_eq!(&p, b"0123456789010123456789010");
        assert!(payload(64, None).iter().any(|b| !b.is_ascii_digit()));
    }

    #[test]
    fn writes_copy_from_a_small_part_unless_the_pattern_restarts_at_each_block() {
        let all = Some(&sendpath::CANDIDATES);
        let s = SendSource::new(1 << 20, false, all, false);
        assert_eq!(s.bytes.len(), 4 << 20);
        assert_eq!(s.write_part(), &s.bytes[..WRITE_UNIT]);
        // iperf3's digits restart at every block of 1 MiB: a 64 KiB part repeated would
        // restart them every 64 KiB.
        let r = SendSource::new(1 << 20, false, all, true);
        assert_eq!(r.write_part().len(), 4 << 20);
        // A short -l writes what it asks from the start of the pattern.
        let short = SendSource::new(100, false, None, false);
        assert_eq!(short.write_part().len(), 100);
    }

    #[test]
    fn one_receiver_reads_1_mib_several_as_much_as_the_test_memory_allows() {
        assert_eq!(read_size(0), READ_ONE);
        assert_eq!(read_size(1), READ_ONE);
        // Two to sixteen streams read 4 MiB each, more share 64 MiB, none reads under 64 KiB.
        assert_eq!(read_size(2), READ_MAX);
        assert_eq!(read_size(16), READ_MAX);
        assert_eq!(read_size(32), 2 << 20);
        assert_eq!(read_size(128), 512 << 10);
        assert_eq!(read_size(4096), READ_MIN);
        assert!((1..=4096).all(|n| n * read_size(n) <= READ_TOTAL_MAX.max(n * READ_MIN)));
    }
}
