//! TCP streams: a sender that writes `length`-byte buffers (optionally paced) and samples
//! TCP_INFO at every interval, and a receiver that counts bytes by arrival time. Bytes that
//! arrive after the grid ends are drained but only counted as `tail_bytes`, so goodput is the
//! bytes delivered inside the measured window divided by that window: a rate-limited path can
//! never appear faster than its rate.

use super::lowater::{self, LowWater, ReceiverMark};
use super::sendpath::{self, SendCall, SendPath, SendReport};
use super::{POLL, Pacer, SendSource, StreamCtx, TCP_DRAIN};
use crate::platform::sockopt;
use crate::traffic::measure::{IntervalReport, ReceiveReport, StreamReport, TcpSample};
use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use std::net::{Shutdown, TcpStream};

/// How often a receiver holding a window clamp looks whether the kernel moved it: a moved
/// clamp lets the window grow to the buffer's for at most this long.
const CLAMP_RECHECK: Duration = Duration::from_millis(5);

/// Tracks TCP_INFO between interval boundaries on the sender.
struct InfoSampler {
    last: sockopt::TcpInfo,
    last_at: std::time::Instant,
    rtt_min: Option<u32>,
    rtt_max: Option<u32>,
}

impl InfoSampler {
    fn new(sock: &TcpStream) -> InfoSampler {
        let last = sockopt::tcp_info(sock).unwrap_or_default();
        InfoSampler {
            last,
            last_at: std::time::Instant::now(),
            rtt_min: None,
            rtt_max: None,
        }
    }

    fn sample(&mut self, sock: &TcpStream) -> Option<TcpSample> {
        let info = sockopt::tcp_info(sock).ok()?;
        let now = std::time::Instant::now();
        let span_us = now.duration_since(self.last_at).as_micros().max(1) as f64;
        let share = |now: u64, before: u64| {
            (now.saturating_sub(before) as f64 / span_us * 100.0).min(100.0)
        };
        let retransmits = u64::from(info.total_retrans.saturating_sub(self.last.total_retrans));
        // Unavailable on this system (FreeBSD) or kernel: reported as unavailable, not 0%.
        let limited =
            |now: Option<u64>, before: Option<u64>| Some(share(now?, before.unwrap_or(0)));
        let rwnd_limited_percent = limited(info.rwnd_limited_us, self.last.rwnd_limited_us);
        let sndbuf_limited_percent = limited(info.sndbuf_limited_us, self.last.sndbuf_limited_us);
        self.last = info;
        self.last_at = now;
        if info.rtt_us > 0 {
            let low = info.min_rtt_us.unwrap_or(info.rtt_us);
            self.rtt_min = Some(self.rtt_min.map_or(low, |m| m.min(low)));
            self.rtt_max = Some(self.rtt_max.map_or(info.rtt_us, |m| m.max(info.rtt_us)));
        }
        Some(TcpSample {
            retransmits,
            rtt_us: info.rtt_us,
            rttvar_us: info.rttvar_us,
            cwnd_bytes: info.cwnd_bytes,
            snd_wnd_bytes: u64::from(info.snd_wnd),
            rwnd_limited_percent,
            sndbuf_limited_percent,
        })
    }
}

/// The sender's choice of send path: given, or calibrated, kept, and re-checked on the warm
/// connection while the test runs (`sendpath::recheck_turn`).
struct PathChooser {
    fixed: SendPath,
    calibration: Duration,
    /// Without a calibration: start on the record's pick (else `fixed`) and re-check.
    live: bool,
    /// What every sending stream of the test wrote in each candidate's measured turns.
    pool: Arc<sendpath::Pool>,
    /// The host's record's pick, sent through the calibration's time when it is confident
    /// (`sendpath::Pool::remembered_best`).
    remembered: Option<SendPath>,
    chosen: Option<SendPath>,
    /// The path later re-checks try against the kept one (the first re-check's runner-up, or
    /// the record's when the first re-check tries two).
    runner_up: Option<SendPath>,
    /// Whether the first re-check tries every candidate (`sendpath::Pool::first_full`).
    first_full: bool,
    /// Re-checks whose verdicts this stream has applied (or passed over).
    applied: usize,
    report: SendReport,
}

/// Which path a send call uses, and what it counts for.
#[derive(Debug, Clone, Copy)]
enum Use {
    /// A calibration turn, measured for candidate `Some(i)`.
    Calibrating(Option<usize>),
    /// The kept path, outside calibration and the other paths' re-check turns.
    Kept,
    /// A re-check `k`'s turn of path `who` (0 the kept one), and whether it is measured.
    Rechecking(usize, usize, bool),
}

impl PathChooser {
    fn new(ctx: &StreamCtx, source: &SendSource) -> PathChooser {
        let length = ctx.length.max(1);
        let call = if ctx.zerocopy && source.file(length).is_some() {
            SendCall::Sendfile
        } else {
            SendCall::Write
        };
        let pool: Arc<sendpath::Pool> = ctx.send_pool.clone().unwrap_or_default();
        PathChooser {
            // Once per stream: the record does not change during the test.
            remembered: pool.remembered_best(),
            fixed: SendPath {
                call,
                chunk_bytes: length,
            },
            // Already zero for paced senders (`TestSpec::effective_calibration`).
            calibration: ctx.calibration,
            live: ctx.live_path_choice,
            pool,
            chosen: None,
            runner_up: None,
            first_full: true,
            applied: 0,
            report: SendReport::default(),
        }
    }

    /// Whether the path is chosen (calibrated or live) and re-checked, not given.
    fn chooses(&self) -> bool {
        !self.calibration.is_zero() || self.live
    }

    /// The path to use at `now` in a test whose grid ends at `end`, and what the call counts for.
    fn path_at(&mut self, now: Duration, end: Duration) -> (SendPath, Use) {
        if let Some((idx, measuring)) = sendpath::turn(now, self.calibration) {
            if let Some(best) = self.remembered {
                return (best, Use::Calibrating(None));
            }
            let candidates = self.pool.candidates();
            return (candidates[idx], Use::Calibrating(measuring.then_some(idx)));
        }
        let kept = match self.chosen {
            Some(p) => p,
            None => {
                let p = if !self.calibration.is_zero() {
                    let (path, trials) = self.pool.decision(self.calibration);
                    self.report.trials = trials.clone();
                    *path
                } else if self.live {
                    self.remembered.unwrap_or(self.fixed)
                } else {
                    self.fixed
                };
                if self.chooses() {
                    self.report.remembered_tests = self
                        .remembered
                        .and(self.pool.remembered_tests())
                        .map(|n| n as u64);
                    self.first_full = self.pool.first_full();
                    if !self.first_full {
                        self.runner_up = self.pool.record_runner_up(p);
                    }
                }
                self.chosen = Some(p);
                self.report.path = Some(p);
                p
            }
        };
        if !self.chooses() {
            return (kept, Use::Kept);
        }
        let since = now.saturating_sub(self.calibration).as_secs_f64();
        // A re-check runs only if it ends inside the test (the grid's end, after calibration).
        let fits = |k: usize| {
            sendpath::recheck_span(k, self.first_full)
                .is_some_and(|(_, e)| self.calibration.as_secs_f64() + e <= end.as_secs_f64())
        };
        let mut kept = kept;
        while let Some((_, e)) = sendpath::recheck_span(self.applied, self.first_full)
            && since >= e
        {
            let paths = sendpath::paths_of(
                self.pool.candidates(),
                self.applied,
                self.first_full,
                kept,
                self.runner_up,
            );
            if fits(self.applied)
                && !paths.is_empty()
                && let Some(verdict) = self.pool.recheck(self.applied, &paths)
            {
                if self.applied == 0 {
                    self.runner_up = verdict.runner_up();
                } else if verdict.switched {
                    self.runner_up = Some(kept);
                }
                if verdict.switched {
                    // The calls counted were the old path's: count the new one's from here.
                    kept = verdict.kept;
                    self.chosen = Some(kept);
                    self.report.path = Some(kept);
                    self.report.calls = 0;
                    self.report.bytes = 0;
                }
                self.report.rechecks.push(verdict.clone());
            }
            self.applied += 1;
        }
        match sendpath::recheck_turn(Duration::from_secs_f64(since), self.first_full) {
            Some((k, who, measuring)) if k == self.applied && fits(k) => {
                let candidates = self.pool.candidates();
                match sendpath::paths_of(candidates, k, self.first_full, kept, self.runner_up)
                    .get(who)
                {
                    Some(path) => (*path, Use::Rechecking(k, who, measuring)),
                    None => (kept, Use::Kept),
                }
            }
            _ => (kept, Use::Kept),
        }
    }

    fn record(&mut self, used: Use, bytes: usize) {
        match used {
            Use::Calibrating(Some(i)) => self.pool.record(i, bytes as u64),
            Use::Calibrating(None) => {}
            Use::Rechecking(k, who, measuring) => {
                if measuring {
                    self.pool.record_recheck(k, who, bytes as u64);
                }
                if who == 0 {
                    self.record(Use::Kept, bytes);
                }
            }
            Use::Kept => {
                self.report.calls += 1;
                self.report.bytes += bytes as u64;
            }
        }
    }
}

/// One send system call on `path` of at most `chunk` bytes.
fn send_once(
    sock: &TcpStream,
    source: &SendSource,
    path: SendPath,
    chunk: usize,
) -> std::io::Result<usize> {
    let buf = source.write_part();
    match (path.call, source.file(path.chunk_bytes)) {
        // Zero-copy: the kernel references these pages instead of copying every write.
        (SendCall::Sendfile, Some((len, f))) => {
            crate::platform::zerocopy::send_file(sock, f, 0, chunk.min(len))
        }
        _ if chunk <= buf.len() => (&*sock).write(&buf[..chunk]),
        _ => sockopt::write_repeated(sock, buf, chunk),
    }
}

/// What one turn of a sender did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// It wrote, or waited for its pacer: turn it again.
    Moved,
    /// The socket took nothing (full, or its write timed out).
    Blocked,
    /// The stream is over: `finish` it.
    Done,
}

/// A TCP sending stream, one write per `step`: a thread of its own turns it until it is done
/// (`send`), or one thread turns several on sockets that do not block (`sendgroup`).
pub(super) struct Sender<'a> {
    ctx: &'a StreamCtx,
    sock: TcpStream,
    report: StreamReport,
    source: Arc<SendSource>,
    chooser: PathChooser,
    sampler: InfoSampler,
    pacer: Option<Pacer>,
    whole_blocks: bool,
    current: IntervalReport,
    /// For an iperf3 client: the far end's largest window and what was written (`drain`).
    watch: super::drain::WindowWatch,
    written: u64,
}

impl<'a> Sender<'a> {
    pub(super) fn new(ctx: &'a StreamCtx, sock: TcpStream) -> Sender<'a> {
        let source = ctx.source.clone().unwrap_or_else(|| {
            let candidates = ctx
                .send_pool
                .as_ref()
                .map_or(&sendpath::CANDIDATES, |p| p.candidates());
            let chooses = !ctx.calibration.is_zero() || ctx.live_path_choice;
            Arc::new(SendSource::new(
                ctx.length,
                ctx.zerocopy,
                chooses.then_some(candidates),
                ctx.repeating_payload,
            ))
        });
        let mut chooser = PathChooser::new(ctx, &source);
        if let Some(b) = ctx.send_buffer
            && sockopt::cap_buffer(&sock, sockopt::Buffer::Send, b).unwrap_or(false)
        {
            chooser.report.buffer_bytes = Some(sockopt::buffer_sizes(&sock).0);
        }
        let _ = sock.set_write_timeout(Some(POLL));
        let sampler = InfoSampler::new(&sock);
        let pacer = (!ctx.rate.is_unlimited()).then(|| {
            sockopt::tighten_timer_slack();
            Pacer::new(
                ctx.rate.bits_per_second(),
                Duration::ZERO,
                ctx.length.max(1),
            )
        });
        Sender {
            ctx,
            sock,
            report: ctx.new_report(),
            source,
            chooser,
            sampler,
            pacer,
            whole_blocks: matches!(ctx.datagrams, super::Datagrams::Iperf3 { .. }),
            current: ctx.empty_interval(0),
            watch: super::drain::WindowWatch::default(),
            written: 0,
        }
    }

    pub(super) fn socket(&self) -> &TcpStream {
        &self.sock
    }

    /// Closes the intervals that ended, then writes once (a paced sender may sleep instead).
    pub(super) fn step(&mut self) -> Step {
        let ctx = self.ctx;
        let now = ctx.elapsed();
        // Read on every turn: a `duration = "auto"` test may cut the grid short.
        let slots = ctx.slots();
        let report = &mut self.report;
        while report.intervals.len() < slots.len() && now >= slots[report.intervals.len()].end {
            self.current.tcp = self.sampler.sample(&self.sock);
            ctx.emit(&self.current);
            let next = ctx.empty_interval(report.intervals.len() + 1);
            report
                .intervals
                .push(std::mem::replace(&mut self.current, next));
        }
        if report.intervals.len() >= slots.len() {
            return Step::Done;
        }
        if ctx.stopped() {
            return self.stop_here();
        }
        let grid_end = slots.last().map(|s| s.end).unwrap_or_default();
        let (path, used) = self.chooser.path_at(now, grid_end);
        let mut chunk = path.chunk_bytes;
        if let Some(p) = self.pacer.as_mut() {
            let allowed = p.allowance(now) as usize;
            // An iperf3 receiver reads whole blocks of -l bytes, waiting for all of one: a
            // block the pacer split keeps it waiting for the rest at the paced rate (one
            // thread, 128 streams: an iperf3 3.12 server received 0.17 of 2 Gbit/s). So an
            // iperf3 peer gets whole blocks, each sent when the rate allows it, as iperf3's
            // own paced senders write them.
            // Others write once a unit is due (`pacer::write_unit`), and then what is due.
            let need = if self.whole_blocks {
                chunk
            } else {
                p.write_unit(chunk)
            };
            if allowed < need {
                let wake = p
                    .next_time(need as u64)
                    .min(slots[report.intervals.len()].end);
                std::thread::sleep(wake.saturating_sub(now).min(POLL));
                return Step::Moved;
            }
            if !self.whole_blocks {
                chunk = chunk.min(allowed);
            }
        }
        // A count (-n/-k) is claimed before it is written, so the streams send it exactly.
        let quota = ctx
            .quota
            .as_ref()
            .filter(|_| ctx.counts_in(report.intervals.len()));
        if let Some(q) = quota {
            chunk = q.claim(chunk as u64, 1) as usize;
            if chunk == 0 {
                return self.stop_here();
            }
        }
        let sent = loop {
            match send_once(&self.sock, &self.source, path, chunk) {
                Ok(n) => {
                    self.current.bytes += n as u64;
                    self.written += n as u64;
                    if ctx.end_gate.is_some() {
                        self.watch.after_write(&self.sock);
                    }
                    self.chooser.record(used, n);
                    if let Some(p) = self.pacer.as_mut() {
                        p.record(n as u64);
                    }
                    break n;
                }
                // The send timeout's EAGAIN; ETIMEDOUT is the connection's end (TCP_USER_TIMEOUT,
                // keepalive, retransmissions given up), not a wait.
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    break 0;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    report.error = Some(format!("write failed: {e}"));
                    if let Some(q) = quota {
                        q.unclaim(chunk as u64);
                    }
                    // What it wrote before the far end went (an iperf3 client interrupted
                    // mid-interval) stays counted where the streams run open-ended.
                    return self.stop_here();
                }
            }
        };
        if let Some(q) = quota {
            q.unclaim((chunk - sent) as u64);
            q.count(sent as u64, ctx.elapsed());
        }
        if sent == 0 {
            Step::Blocked
        } else {
            Step::Moved
        }
    }

    /// The stream stops before its grid's end (stopped, or its count is sent).
    fn stop_here(&mut self) -> Step {
        self.current.tcp = self.sampler.sample(&self.sock);
        let current = std::mem::replace(&mut self.current, self.ctx.empty_interval(0));
        self.ctx.keep_open(&mut self.report, current);
        Step::Done
    }

    /// The stream's report, once `step` said `Done`: the far end settled for an iperf3 client,
    /// the sending half shut, the kernel's totals read.
    pub(super) fn finish(mut self) -> StreamReport {
        let ctx = self.ctx;
        let sock = &self.sock;
        let report = &mut self.report;
        if let Some(gate) = ctx.end_gate.as_ref().filter(|_| report.error.is_none()) {
            report.drained =
                super::drain::settle(sock, self.written, &mut self.watch, gate, &ctx.stop);
        }
        // After an early stop or an error the report holds only the intervals that closed.
        let _ = sock.shutdown(Shutdown::Write);
        // Between netsweep's ends (an iperf3 server may stop reading at its end).
        if !self.whole_blocks && report.error.is_none() {
            super::drain::await_tail(sock, self.written, &ctx.stop);
        }
        let info = sockopt::tcp_info(sock).ok();
        report.tcp_total_retransmits = info.as_ref().map(|i| u64::from(i.total_retrans));
        report.bytes_acked = info.and_then(|i| i.bytes_acked);
        report.tcp_bytes_sent = info.and_then(|i| i.bytes_sent);
        report.tcp_bytes_retrans = info.and_then(|i| i.bytes_retrans);
        report.tcp_dsack_dups = info.and_then(|i| i.dsack_dups).map(u64::from);
        report.tcp_min_rtt_us = info.and_then(|i| i.min_rtt_us);
        report.rtt_min_us = self.sampler.rtt_min;
        report.rtt_max_us = self.sampler.rtt_max;
        report.send = Some(self.chooser.report);
        self.report
    }
}

/// One sending stream on a thread of its own, its socket blocking (for at most `POLL`).
pub(super) fn send(ctx: &StreamCtx, sock: TcpStream) -> StreamReport {
    let mut sender = Sender::new(ctx, sock);
    while sender.step() != Step::Done {}
    sender.finish()
}

pub(super) fn receive(ctx: &StreamCtx, mut sock: TcpStream) -> StreamReport {
    let mut report = ctx.new_report();
    let mut buf = vec![0u8; ctx.read_bytes.max(1)];
    let _ = sock.set_read_timeout(Some(POLL));
    let mut mark = ReceiverMark::new(
        LowWater::new(buf.len(), ctx.mark_target, ctx.elapsed()),
        ctx.mark_probe.clone(),
    );
    // When the previous read returned: where the next one starts.
    let mut last = ctx.elapsed();
    let mut received = ReceiveReport::default();
    let mut total = 0u64;
    let mut current = ctx.empty_interval(0);
    let close_due = |report: &mut StreamReport, current: &mut IntervalReport, now| {
        let slots = ctx.slots();
        while report.intervals.len() < slots.len() && now >= slots[report.intervals.len()].end {
            ctx.emit(current);
            let next = ctx.empty_interval(report.intervals.len() + 1);
            report.intervals.push(std::mem::replace(current, next));
        }
    };
    report.skipped_rx_copy = ctx.skip_rx_copy;
    if let Some(b) = ctx.receive_buffer
        && sockopt::cap_buffer(&sock, sockopt::Buffer::Receive, b).unwrap_or(false)
    {
        received.buffer_bytes = Some(sockopt::buffer_sizes(&sock).1);
    }
    let mut clamp_checked = Duration::ZERO;
    // Napping (`lowater::Batching::Nap`): the socket does not block, and the receiver sleeps
    // only once a read found it empty.
    let (mut nonblocking, mut drained) = (false, false);
    loop {
        if let Some(w) = ctx.window_clamp {
            // The kernel moves the clamp when it relearns its buffer ratio (the first full
            // segments, a change of segment sizes): look again every CLAMP_RECHECK.
            let now = ctx.elapsed();
            if clamp_checked.is_zero() || now >= clamp_checked + CLAMP_RECHECK {
                let _ = sockopt::hold_window_clamp(&sock, w);
                clamp_checked = now.max(Duration::from_nanos(1));
            }
        }
        let plan = if lowater::ENABLED {
            mark.before_read(last)
        } else {
            lowater::Plan::default()
        };
        if let Some(m) = plan.set_mark {
            // Without the mark the reads are only smaller: nothing to report.
            let _ = sockopt::set_rcvlowat(&sock, m);
        }
        let napping = !plan.nap.is_zero();
        if napping != nonblocking && sock.set_nonblocking(napping).is_ok() {
            nonblocking = napping;
        }
        if nonblocking && drained {
            // The data arriving while it sleeps is read in one go: `lowater`.
            std::thread::sleep(plan.nap);
        }
        let got = if ctx.skip_rx_copy {
            sockopt::recv_trunc(&sock, &mut buf)
        } else {
            sock.read(&mut buf)
        };
        let now = ctx.elapsed();
        last = now;
        close_due(&mut report, &mut current, now);
        match got {
            Ok(0) => {
                report.saw_end = true;
                // The sender finished (its clock runs slightly ahead): the rest of the grid
                // saw no more data.
                close_due(&mut report, &mut current, std::time::Duration::MAX);
                break;
            }
            Ok(n) => {
                drained = false;
                ctx.arrivals.note(now);
                if report.intervals.len() < ctx.slots().len() {
                    current.bytes += n as u64;
                    if let Some(q) = &ctx.quota
                        && ctx.counts_in(report.intervals.len())
                    {
                        q.count(n as u64, now);
                    }
                } else {
                    report.tail_bytes += n as u64;
                }
                received.reads += 1;
                total += n as u64;
                if lowater::ENABLED {
                    mark.after_read(now, n as u64, total, || {
                        sockopt::buffer_sizes(&sock).1 as usize
                    });
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                drained = true;
                if lowater::ENABLED {
                    mark.after_empty_read(now, total, || sockopt::buffer_sizes(&sock).1 as usize);
                }
            }
            Err(e) => {
                if report.intervals.len() < ctx.slots().len() {
                    report.error = Some(format!("read failed: {e}"));
                }
                break;
            }
        }
        if ctx.stopped() {
            ctx.keep_open(&mut report, current);
            break;
        }
        let end = ctx.slots().last().map(|s| s.end).unwrap_or_default();
        if now >= end + TCP_DRAIN {
            break;
        }
    }
    // After an early stop or an error the report holds only the intervals that closed.
    // tcpi_bytes_received counts the sequence space taken in, the FIN's one number included:
    // data alone is one less once the end was read.
    report.tcp_bytes_received = sockopt::tcp_info(&sock)
        .ok()
        .and_then(|i| i.bytes_received)
        .map(|b| {
            if report.saw_end {
                b.saturating_sub(1)
            } else {
                b
            }
        });
    (received.low_water_bytes, received.low_water_probe) = mark.report();
    report.receive = Some(received);
    report
}
