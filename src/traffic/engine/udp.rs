//! UDP streams. Every datagram starts with its sequence number and the sender's send time
//! (nanoseconds since the sender's start, both big-endian u64). The sender paces batches of
//! datagrams at the target rate, as one UDP_SEGMENT send where the kernel allows; the receiver
//! reads coalesced batches (UDP_GRO) and attributes every datagram to the interval in which it
//! was *sent*, so per-interval loss is sent in interval k minus received of interval k (exact
//! when the receiver reads every header; see `VERIFY_EVERY` for one that skips the copy). Its
//! bytes count in the interval in which they *arrived*, the receiver's own seconds, as iperf3's
//! receiver counts them: by send time, the first interval behind a full queue also held the
//! queue's worth that arrived after it ended (a numbers audit read 103 Mbit/s on a path whose
//! payload ceiling was 98.1), and the summary what was still in flight at the end.

use super::quota::TopUp;
use super::udpnap::ReadNap;
use super::{Datagrams, POLL, Pacer, StreamCtx, UDP_LINGER, payload};
use crate::platform::{sockopt, udpbatch};
use crate::traffic::histogram::UdpTiming;
use crate::traffic::measure::{
    IntervalReport, SequenceCount, StreamReport, UdpReceived, count_sequences,
};
use crate::traffic::spec::{Flow, UDP_HEADER_BYTES};
use std::io::ErrorKind;
use std::net::UdpSocket;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Arrival, Jitter, SequenceTracker};

/// How long after an interval ends the receiver waits for its stragglers before reporting it live.
const LIVE_GRACE: Duration = Duration::from_millis(100);
/// How far ahead of the receiver's clock a sender's timestamp may be (the two ends start one
/// control round trip apart).
const CLOCK_LEAD: Duration = Duration::from_secs(2);
/// Traffic released per wake-up of a paced sender, as time at the target rate.
const PACING_QUANTUM: Duration = Duration::from_micros(200);
/// Most datagrams in one send.
const MAX_BATCH: usize = 64;
/// Largest UDP_SEGMENT super-datagram (the kernel's limit is 64 KiB with headers).
const MAX_GSO_BYTES: usize = 65_000;
/// Bytes a receiver that skips the copy reads of each datagram: the longest header (iperf3's
/// with 64-bit counters, 16 bytes) and a hello (26), with room.
const HEADER_READ: usize = 64;

/// A receiver that skips the copy counts a coalesced batch from its first header (`batch`):
/// netsweep's sender writes a batch's datagrams in sequence with one send time (`send`), and
/// one segmented send arrives as one coalesced read (loopback, veth), so the count is the
/// sender's (an iperf3 sender's later datagrams of a batch are taken as sent with its first).
/// Coalescing on a NIC joins datagrams as they arrive, and a datagram lost between two it
/// joined shows as the gap before the next batch (the loss total stays true) but one out of
/// order within a batch would not, nor would one read joining several sends (their send times
/// differ). So every this-many-th read (the first among them) copies the batch whole and checks
/// each header against the count (consecutive numbers, one send time), every read checks that
/// its first datagram comes after every one counted so far, and a read failing either turns
/// the copy on for the rest of the stream (its result then says the copy was not skipped; the
/// batch that showed it, and the one before, may be miscounted by their length). iperf3's
/// datagrams, each stamped on its own, are never counted this way: a receiver that skips
/// their copy reads them one at a time, without GRO. On loopback this receiver carried
/// 1.7-1.9x the copying one (UDP, 1400-byte datagrams, unlimited).
const VERIFY_EVERY: u64 = 64;

/// Whether the datagrams of `segment` bytes in `whole` carry consecutive sequence numbers and
/// one send time: one segmented send, as `Receiver::batch` counts it.
fn in_sequence(format: Datagrams, whole: &[u8], segment: usize) -> bool {
    let mut seqs = whole.chunks(segment).map(|d| read_header(format, d));
    let Some(Some((first, sent))) = seqs.next() else {
        return false;
    };
    seqs.zip(1..)
        .all(|(h, i)| h.is_some_and(|(seq, ns)| Some(seq) == first.checked_add(i) && ns == sent))
}

/// Writes the header of datagram `seq` (counted from 0 in every format); `stamp_ns` is the
/// send time in the format's clock (`stamp_ns`).
fn write_header(format: Datagrams, d: &mut [u8], seq: u64, stamp_ns: u64) {
    match format {
        Datagrams::Netsweep => {
            d[..8].copy_from_slice(&seq.to_be_bytes());
            d[8..16].copy_from_slice(&stamp_ns.to_be_bytes());
        }
        Datagrams::Iperf3 { seq64 } => {
            let sec = (stamp_ns / 1_000_000_000) as u32;
            let usec = (stamp_ns % 1_000_000_000 / 1_000) as u32;
            d[..4].copy_from_slice(&sec.to_be_bytes());
            d[4..8].copy_from_slice(&usec.to_be_bytes());
            let wire = seq.wrapping_add(1);
            if seq64 {
                d[8..16].copy_from_slice(&wire.to_be_bytes());
            } else {
                d[8..12].copy_from_slice(&(wire as u32).to_be_bytes());
            }
        }
    }
}

/// The sequence number (from 0) and send time (ns) of a datagram, if it has a whole header.
fn read_header(format: Datagrams, d: &[u8]) -> Option<(u64, u64)> {
    let be32 = |r: std::ops::Range<usize>| -> Option<u64> {
        Some(u64::from(u32::from_be_bytes(d.get(r)?.try_into().ok()?)))
    };
    let be64 = |r: std::ops::Range<usize>| -> Option<u64> {
        Some(u64::from_be_bytes(d.get(r)?.try_into().ok()?))
    };
    match format {
        Datagrams::Netsweep => Some((be64(0..8)?, be64(8..16)?)),
        Datagrams::Iperf3 { seq64 } => {
            let ns = be32(0..4)? * 1_000_000_000 + be32(4..8)? * 1_000;
            let wire = if seq64 { be64(8..16)? } else { be32(8..12)? };
            // iperf3 counts from 1; a zero is not a datagram of the test.
            Some((wire.checked_sub(1)?, ns))
        }
    }
}

/// A send time in the clock of `format`: this end's elapsed time for netsweep's header,
/// the wall clock for iperf3's.
fn stamp(format: Datagrams, elapsed: Duration) -> u64 {
    let t = match format {
        Datagrams::Netsweep => elapsed,
        Datagrams::Iperf3 { .. } => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default(),
    };
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}

/// Most bytes in one batch of plain sends: large datagrams get fewer per batch, so the send
/// buffer of a stream stays small (64 datagrams of 64 KB would be 4 MiB per stream).
const MAX_PLAIN_BATCH_BYTES: usize = 256 << 10;

fn batch_size(len: usize, offload: bool) -> usize {
    let bytes = if offload {
        MAX_GSO_BYTES
    } else {
        MAX_PLAIN_BATCH_BYTES
    };
    (bytes / len.max(1)).clamp(1, MAX_BATCH)
}

pub(super) fn send(ctx: &StreamCtx, sock: UdpSocket) -> StreamReport {
    let mut report = ctx.new_report();
    let len = ctx.length.max(UDP_HEADER_BYTES as usize);
    let mut gso = ctx.udp_offload && udpbatch::SEGMENTATION && len <= usize::from(u16::MAX);
    let mut max_batch = batch_size(len, gso);
    // Big enough for a batch either way: GSO can fall back to plain sends mid-test.
    let mut buf = payload(
        len * batch_size(len, false).max(batch_size(len, true)),
        ctx.repeating_payload.then_some(len),
    );
    let mut pacer = (!ctx.rate.is_unlimited()).then(|| {
        sockopt::tighten_timer_slack();
        Pacer::new(ctx.rate.bits_per_second(), Duration::ZERO, len * max_batch)
    });
    let mut current = ctx.empty_interval(0);
    let mut seq: u64 = 0;
    // Serving an iperf3 client that receives a count: top up after the count (`quota`).
    let tops_up = ctx.quota.is_some()
        && matches!(ctx.datagrams, Datagrams::Iperf3 { .. })
        && ctx.flow == Flow::ServerToClient;
    let mut top_up: Option<TopUp> = None;
    loop {
        let now = ctx.elapsed();
        // Read on every turn: a `duration = "auto"` test may cut the grid short.
        let slots = ctx.slots();
        while report.intervals.len() < slots.len() && now >= slots[report.intervals.len()].end {
            ctx.emit(&current);
            let next = ctx.empty_interval(report.intervals.len() + 1);
            report.intervals.push(std::mem::replace(&mut current, next));
        }
        if report.intervals.len() >= slots.len() {
            break;
        }
        let ended = if tops_up {
            ctx.stop.load(Ordering::Relaxed)
        } else {
            ctx.stopped()
        };
        if ended {
            ctx.keep_open(&mut report, current);
            break;
        }
        let mut n = max_batch;
        if let Some(t) = top_up.as_mut() {
            if let Some(wait) = t.due(now) {
                std::thread::sleep(wait.min(POLL));
                continue;
            }
            if !ctx
                .quota
                .as_ref()
                .is_some_and(|q| q.claim_extra(len as u64))
            {
                ctx.keep_open(&mut report, current);
                break;
            }
            n = 1;
        } else if let Some(p) = pacer.as_mut() {
            let allowed = (p.allowance(now) / len as u64) as usize;
            if allowed == 0 {
                // Sleep until a batch of about PACING_QUANTUM is due: far fewer wake-ups than
                // one per datagram, and bursts stay in the tens of microseconds.
                let quantum = (ctx.rate.bits_per_second() / 8.0 * PACING_QUANTUM.as_secs_f64()
                    / len as f64) as usize;
                let wake = p
                    .next_time((quantum.clamp(1, max_batch) * len) as u64)
                    .min(slots[report.intervals.len()].end);
                std::thread::sleep(wake.saturating_sub(now).min(POLL));
                continue;
            }
            n = n.min(allowed);
        }
        // A count (-n/-k) is claimed in whole datagrams before they are sent.
        let quota = ctx
            .quota
            .as_ref()
            .filter(|_| top_up.is_none() && ctx.counts_in(report.intervals.len()));
        if let Some(q) = quota {
            n = (q.claim((n * len) as u64, len as u64) / len as u64) as usize;
            if n == 0 && tops_up {
                let rate = (!ctx.rate.is_unlimited()).then(|| ctx.rate.bits_per_second());
                top_up = Some(TopUp::new(now, rate, len));
                continue;
            }
            if n == 0 {
                ctx.keep_open(&mut report, current);
                break;
            }
        }
        let ts = stamp(ctx.datagrams, now);
        for i in 0..n {
            write_header(ctx.datagrams, &mut buf[i * len..], seq + i as u64, ts);
        }
        let sent = if gso {
            match udpbatch::send_segmented(&sock, &buf[..n * len], len as u16) {
                Ok(_) => n,
                Err(e) if transient(&e) => 0,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    report.error =
                        Some("the receiver's port is closed (ICMP port unreachable)".into());
                    break;
                }
                Err(_) => {
                    // No segmentation offload on this path: fall back to one datagram per call.
                    gso = false;
                    max_batch = batch_size(len, false);
                    0
                }
            }
        } else {
            let mut sent = 0;
            for i in 0..n {
                match sock.send(&buf[i * len..(i + 1) * len]) {
                    Ok(_) => sent += 1,
                    Err(_) => break,
                }
            }
            sent
        };
        if let Some(q) = quota {
            q.unclaim(((n - sent) * len) as u64);
            q.count((sent * len) as u64, ctx.elapsed());
        }
        seq += sent as u64;
        current.packets += sent as u64;
        current.bytes += (sent * len) as u64;
        if let Some(p) = pacer.as_mut() {
            p.record((sent * len) as u64);
        }
    }
    report
}

fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::Interrupted | ErrorKind::TimedOut
    ) || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// Receiver state for one stream.
struct Receiver<'a> {
    ctx: &'a StreamCtx,
    counts: Vec<IntervalReport>,
    tracker: SequenceTracker,
    jitter: Jitter,
    tail_bytes: u64,
    timing: UdpTiming,
    /// When the previous datagram was read, ns since this end's start.
    last_arrival_ns: Option<u64>,
    /// The lowest one-way transit so far (between the two ends' clocks), ns.
    min_transit_ns: Option<i128>,
}

impl<'a> Receiver<'a> {
    fn new(ctx: &'a StreamCtx) -> Receiver<'a> {
        Receiver {
            ctx,
            counts: Vec::new(),
            tracker: SequenceTracker::default(),
            jitter: Jitter::default(),
            tail_bytes: 0,
            timing: UdpTiming::default(),
            last_arrival_ns: None,
            min_transit_ns: None,
        }
    }

    /// Makes room for interval `index` (and every one before it).
    fn grow_to(&mut self, index: usize) {
        while self.counts.len() <= index {
            let i = self.counts.len();
            self.counts.push(self.ctx.empty_interval(i));
        }
    }

    /// One datagram that arrived at `now` (time since this end's start; one clock reading per
    /// received batch, not per datagram: this is the receive hot path).
    /// One datagram of `len` bytes whose first bytes are `d` (all of it, or its head when the
    /// receiver skips the copy).
    fn datagram(&mut self, d: &[u8], len: usize, now: Duration) {
        // A repeated hello (or its late echo) queued before the test is not test data.
        if len == d.len() && crate::traffic::protocol::parse_udp_hello(d).is_some() {
            return;
        }
        let Some((seq, send_ns)) = read_header(self.ctx.datagrams, d) else {
            return;
        };
        self.arrive(seq, send_ns, len, now);
    }

    /// A read copied whole, `whole`: datagrams of `segment` bytes (the last may be shorter),
    /// each read from its own header. Consecutive datagrams new and in order that were sent
    /// together (one send time) are counted at once, as in `batch`.
    fn datagrams(&mut self, whole: &[u8], segment: usize, now: Duration) {
        // The run being gathered: first sequence number, count, send time, bytes.
        let mut run: Option<(u64, u64, u64, usize)> = None;
        for d in whole.chunks(segment) {
            // As in `datagram`: a queued hello is not test data.
            if crate::traffic::protocol::parse_udp_hello(d).is_some() {
                continue;
            }
            let Some((seq, send_ns)) = read_header(self.ctx.datagrams, d) else {
                continue;
            };
            let arrival = self.tracker.record(seq);
            match run.as_mut() {
                Some((first, count, sent, bytes))
                    if arrival == Arrival::InOrder
                        && *sent == send_ns
                        && first.checked_add(*count) == Some(seq) =>
                {
                    *count += 1;
                    *bytes += d.len();
                }
                _ => {
                    if let Some((first, count, sent, bytes)) = run.take() {
                        self.settle(Arrival::InOrder, (first, count), sent, bytes, now);
                    }
                    if arrival == Arrival::InOrder {
                        run = Some((seq, 1, send_ns, d.len()));
                    } else {
                        self.settle(arrival, (seq, 1), send_ns, d.len(), now);
                    }
                }
            }
        }
        if let Some((first, count, sent, bytes)) = run {
            self.settle(Arrival::InOrder, (first, count), sent, bytes, now);
        }
    }

    /// A read of `total` bytes, datagrams of `segment` bytes coalesced by the kernel (the last
    /// may be shorter), of which only the head `head` was copied: counted as the sender wrote
    /// them, in sequence from the first datagram's header and with its send time (see
    /// `VERIFY_EVERY` for how that is checked). False when the first datagram does not come
    /// after every one counted so far: a batch reordered or repeated, where counting from heads
    /// cannot be trusted.
    fn batch(&mut self, head: &[u8], total: usize, segment: Option<usize>, now: Duration) -> bool {
        let segment = segment.unwrap_or(total).max(1);
        if total <= segment {
            self.datagram(head, total, now);
            return true;
        }
        let Some((first, send_ns)) = read_header(self.ctx.datagrams, head) else {
            return true;
        };
        let in_turn = self.tracker.highest().is_none_or(|h| first > h);
        if !in_turn {
            let (mut left, mut seq) = (total, first);
            while left > 0 {
                let len = left.min(segment);
                self.arrive(seq, send_ns, len, now);
                (left, seq) = (left - len, seq.saturating_add(1));
            }
            return false;
        }
        // Every datagram of the batch is new and in order, sent together and read together:
        // counted at once, as many one-by-one arrivals would be (a batch of 64 KiB is 44
        // datagrams of 1448 bytes; per datagram, the histograms' logarithms were most of the
        // receiver's time at 4 million datagrams a second).
        let count = total.div_ceil(segment) as u64;
        for seq in first..first.saturating_add(count) {
            self.tracker.record(seq);
        }
        self.settle(Arrival::InOrder, (first, count), send_ns, total, now);
        true
    }

    /// Datagram `seq` of `len` bytes, sent at `send_ns` (the sender's clock), read at `now`.
    fn arrive(&mut self, seq: u64, send_ns: u64, len: usize, now: Duration) {
        let arrival = self.tracker.record(seq);
        self.settle(arrival, (seq, 1), send_ns, len, now);
    }

    /// `count` datagrams numbered from `first`, of `bytes` in all, each `arrival`, sent at
    /// `send_ns` (the sender's clock) and read at `now`: counted in their interval, their
    /// timing and jitter recorded as `count` arrivals one after another would be.
    fn settle(
        &mut self,
        arrival: Arrival,
        (first, count): (u64, u64),
        send_ns: u64,
        bytes: usize,
        now: Duration,
    ) {
        let index = match self.ctx.datagrams {
            Datagrams::Netsweep => {
                let sent_at = Duration::from_nanos(send_ns);
                // A send time far beyond this end's clock is a damaged or forged header:
                // attributing it would make the receiver keep intervals not yet happened.
                (sent_at <= now + CLOCK_LEAD)
                    .then(|| self.ctx.index_at(sent_at))
                    .flatten()
            }
            // The sender's clock is another host's wall clock: attribute by arrival.
            Datagrams::Iperf3 { .. } => self.ctx.index_at(now),
        };
        if let Some(i) = index {
            self.grow_to(i);
        }
        // Bytes by arrival (read at `now`, on this end's grid); what arrives outside the
        // grid, before it or in the linger after it, is in no interval's bytes.
        if arrival != Arrival::Duplicate
            && let Some(a) = self.ctx.index_at(now)
        {
            self.grow_to(a);
            self.counts[a].bytes += bytes as u64;
        }
        let Some(slot) = index.and_then(|i| self.counts.get_mut(i)) else {
            if arrival != Arrival::Duplicate {
                self.tail_bytes += bytes as u64;
            }
            return;
        };
        let udp = slot.udp.get_or_insert_with(UdpReceived::default);
        match arrival {
            Arrival::Duplicate => {
                udp.duplicates += count;
                return;
            }
            Arrival::OutOfOrder => udp.out_of_order += count,
            Arrival::InOrder => {}
        }
        let arrival_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        if let Some(last) = self.last_arrival_ns {
            self.timing
                .inter_arrival
                .record_ns(arrival_ns.saturating_sub(last));
        }
        // The rest of a batch came with the first: no gap between them.
        self.timing
            .inter_arrival
            .record_ns_n(0, count.saturating_sub(1));
        self.last_arrival_ns = Some(arrival_ns);
        let transit = i128::from(arrival_ns) - i128::from(send_ns);
        let floor = self.min_transit_ns.map_or(transit, |m| m.min(transit));
        self.min_transit_ns = Some(floor);
        self.timing
            .delay_above_min
            .record_ns_n(u64::try_from(transit - floor).unwrap_or(u64::MAX), count);
        for _ in 0..count {
            self.jitter.update(send_ns, arrival_ns);
        }
        udp.jitter_ms = self.jitter.millis();
        let last = first.saturating_add(count.saturating_sub(1));
        udp.highest_seq = Some(udp.highest_seq.map_or(last, |h| h.max(last)));
        slot.packets += count;
        if let Some(q) = &self.ctx.quota
            && index.is_some_and(|i| self.ctx.counts_in(i))
        {
            q.count(bytes as u64, now);
        }
    }
}

pub(super) fn receive(ctx: &StreamCtx, sock: UdpSocket) -> StreamReport {
    let mut report = ctx.new_report();
    // iperf3's datagrams are never counted from batch heads (`VERIFY_EVERY`).
    let heads_only = ctx.skip_rx_copy && ctx.datagrams == Datagrams::Netsweep;
    let gro =
        ctx.udp_offload && (heads_only || !ctx.skip_rx_copy) && udpbatch::enable_udp_gro(&sock);
    let mut buf = vec![0u8; if gro { 1 << 16 } else { ctx.length.max(2048) }];
    // Skipping the copy, each read copies the head of what arrived (one datagram, or a
    // coalesced batch) and drops the rest uncopied (MSG_TRUNC), except the batches read whole
    // to check the count (`VERIFY_EVERY`); one found out of sequence ends the skipping.
    let mut skip = ctx.skip_rx_copy;
    let mut reads: u64 = 0;
    let _ = sock.set_read_timeout(Some(POLL));
    // Fast streams nap between drains rather than being woken by each batch (`udpnap`).
    let rcvbuf = socket2::SockRef::from(&sock)
        .recv_buffer_size()
        .unwrap_or_default();
    let mut nap = ReadNap::new(rcvbuf as u64, ctx.elapsed());
    let mut rx = Receiver::new(ctx);
    let mut emitted = 0;
    // Each interval's sequences as it is emitted, counted on from the last (once each).
    let mut live_count = SequenceCount::default();
    let mut stopped_early = false;
    loop {
        let verify = skip && gro && reads.is_multiple_of(VERIFY_EVERY);
        let truncate = skip && !verify;
        let room = if truncate { HEADER_READ } else { buf.len() };
        match udpbatch::recv_coalesced(&sock, &mut buf[..room], truncate) {
            Ok((n, segment)) => {
                reads += 1;
                nap.read(n);
                let arrived = ctx.elapsed();
                ctx.arrivals.note(arrived);
                if truncate {
                    if !rx.batch(&buf[..n.min(room)], n, segment, arrived) {
                        skip = false;
                    }
                } else {
                    let whole = &buf[..n.min(room)];
                    let segment = segment.unwrap_or(n).max(1);
                    if verify && !in_sequence(ctx.datagrams, whole, segment) {
                        skip = false;
                    }
                    rx.datagrams(whole, segment, arrived);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                // Empty: a napping receiver sleeps; a blocking one's read timed out.
                if let Some(d) = nap.nap() {
                    std::thread::sleep(d);
                }
            }
            Err(e) if transient(&e) || e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => {
                report.error = Some(format!("receive failed: {e}"));
                stopped_early = true;
                break;
            }
        }
        let now = ctx.elapsed();
        if nap.update(now) {
            let napping = nap.nap().is_some();
            if napping {
                sockopt::tighten_timer_slack();
            }
            let _ = sock.set_nonblocking(napping);
        }
        let slots = ctx.slots();
        while emitted < slots.len() && now >= slots[emitted].end + LIVE_GRACE {
            rx.grow_to(emitted);
            live_count.count(&mut rx.counts[emitted]);
            ctx.emit(&rx.counts[emitted]);
            emitted += 1;
        }
        if ctx.stopped() {
            stopped_early = true;
            break;
        }
        if now >= slots.last().map(|s| s.end).unwrap_or_default() + UDP_LINGER {
            break;
        }
    }
    // Every interval that passed is in the report, with zero counts where nothing arrived
    // (and the one under way, for an open-ended stream).
    let slots = ctx.slots();
    let passed = if stopped_early {
        let now = ctx.elapsed();
        let closed = slots.iter().take_while(|s| s.end <= now).count();
        if ctx.open_ended {
            (closed + 1).min(slots.len())
        } else {
            closed
        }
    } else {
        slots.len()
    };
    if passed > 0 {
        rx.grow_to(passed - 1);
    }
    let mut counts = rx.counts;
    counts.truncate(passed);
    count_sequences(&mut counts, passed);
    report.intervals = counts;
    report.skipped_rx_copy = skip;
    report.tail_bytes = rx.tail_bytes;
    report.highest_seq = rx.tracker.highest();
    rx.timing.read_nap_us = nap.longest().map(|d| d.as_micros() as u64);
    report.udp_timing = Some(rx.timing);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_short_datagrams_are_ignored() {
        let mut d = vec![0u8; 32];
        let ns = Datagrams::Netsweep;
        write_header(ns, &mut d, 42, 1_000_000_007);
        assert_eq!(read_header(ns, &d), Some((42, 1_000_000_007)));
        assert_eq!(read_header(ns, &d[..15]), None);
    }

    /// iperf3's header, byte for byte as iperf_udp.c writes it: big-endian seconds,
    /// microseconds, then the sequence from 1 in 32 or 64 bits.
    #[test]
    fn iperf3_header_matches_its_layout() {
        let mut d = vec![0u8; 32];
        let short = Datagrams::Iperf3 { seq64: false };
        write_header(short, &mut d, 0, 1_700_000_000_123_456_789);
        assert_eq!(&d[..4], &1_700_000_000u32.to_be_bytes());
        assert_eq!(&d[4..8], &123_456u32.to_be_bytes());
        assert_eq!(&d[8..12], &1u32.to_be_bytes());
        assert_eq!(read_header(short, &d), Some((0, 1_700_000_000_123_456_000)));
        assert_eq!(read_header(short, &d[..11]), None);
        let long = Datagrams::Iperf3 { seq64: true };
        write_header(long, &mut d, (1 << 40) - 1, 5_000_001_000);
        assert_eq!(&d[8..16], &(1u64 << 40).to_be_bytes());
        assert_eq!(read_header(long, &d), Some(((1 << 40) - 1, 5_000_001_000)));
        // Sequence 0 is not an iperf3 datagram (it counts from 1).
        d[8..16].fill(0);
        assert_eq!(read_header(long, &d), None);
    }

    /// A receiving stream's context (1400-byte netsweep datagrams, one-second intervals).
    fn receiver_ctx(
        duration: Duration,
        offload: bool,
        skip: bool,
        events: std::sync::mpsc::Sender<crate::traffic::engine::EngineEvent>,
    ) -> StreamCtx {
        use crate::traffic::measure::Role;
        use crate::traffic::spec::Flow;
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        StreamCtx {
            stream: 0,
            flow: Flow::ClientToServer,
            role: Role::Receiver,
            timeline: Arc::new(crate::traffic::timeline::Timeline::new(
                Duration::ZERO,
                Duration::from_secs(1),
                duration,
            )),
            start: std::time::Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            events,
            rate: crate::units::BitRate(0.0),
            length: 1400,
            udp_offload: offload,
            zerocopy: false,
            repeating_payload: false,
            source: None,
            send_pool: None,
            read_bytes: 0,
            mark_target: Duration::ZERO,
            mark_probe: None,
            calibration: Duration::ZERO,
            live_path_choice: false,
            datagrams: super::Datagrams::Netsweep,
            open_ended: false,
            quota: None,
            cut: Arc::new(crate::traffic::timeline::Cut::new(1)),
            arrivals: Arc::new(crate::traffic::engine::Arrivals::new(
                std::time::Instant::now(),
            )),
            skip_rx_copy: skip,
            window_clamp: None,
            receive_buffer: None,
            send_buffer: None,
            cpu: None,
            end_gate: None,
            starts_at_data: None,
        }
    }

    /// Each interval's datagrams as iperf3's receiver counts them: how far its sequence numbers
    /// advanced, so a datagram lost at an interval's end is counted in the next, a late one
    /// in its own, a duplicate nowhere, and an interval where nothing came has no figures.
    #[test]
    fn an_intervals_sequences_are_how_far_it_took_the_highest_seen() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = StreamCtx {
            cut: std::sync::Arc::new(crate::traffic::timeline::Cut::new(3)),
            ..receiver_ctx(Duration::from_secs(3), false, false, tx)
        };
        let mut rx = Receiver::new(&ctx);
        let at = |s: f64| Duration::from_secs_f64(s);
        let send = |rx: &mut Receiver, seq: u64, sent: f64| {
            let mut d = vec![0u8; 1400];
            let ns = at(sent).as_nanos() as u64;
            write_header(Datagrams::Netsweep, &mut d, seq, ns);
            rx.datagram(&d, d.len(), at(sent + 0.01));
        };
        // Interval 0 sends 0-9 and loses 3 and 9 (its last); interval 1 sends 10-19, 12
        // arriving after 15 and 14 twice; interval 2 sends nothing.
        for seq in (0..9).filter(|s| *s != 3) {
            send(&mut rx, seq, 0.1 * seq as f64);
        }
        for seq in [10, 11, 13, 14, 15, 12, 14, 16, 17, 18, 19] {
            send(&mut rx, seq, 1.0 + 0.05 * seq as f64);
        }
        rx.grow_to(2);
        count_sequences(&mut rx.counts, 3);
        let seen: Vec<(u64, Option<u64>)> = rx
            .counts
            .iter()
            .map(|c| (c.packets, c.udp.and_then(|u| u.sequences)))
            .collect();
        // Nothing arrived in interval 2: no UDP figures there (a jitter of 0 would be false).
        assert_eq!(seen, vec![(8, Some(9)), (10, Some(11)), (0, None)]);
        assert!(rx.counts[2].udp.is_none());
        // Lost per interval, 1 and 1: the two missing of 20 sent.
        let lost: Vec<u64> = seen.iter().map(|(got, s)| s.unwrap_or(0) - got).collect();
        assert_eq!(lost, vec![1, 1, 0]);
        // Counted only up to `upto` (a live report's): the intervals after it are left as
        // they were.
        let mut first = rx.counts.clone();
        for c in &mut first {
            if let Some(u) = c.udp.as_mut() {
                u.sequences = None;
            }
        }
        count_sequences(&mut first, 1);
        let seqs: Vec<Option<u64>> = first
            .iter()
            .map(|c| c.udp.and_then(|u| u.sequences))
            .collect();
        assert_eq!(seqs, vec![Some(9), None, None]);
    }

    /// Regression: on a lossy path the client repeats its hello, and the extra copies wait in
    /// the server's socket; read as data they would have been a datagram with a huge sequence.
    #[test]
    fn queued_hellos_are_not_counted_as_data() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = receiver_ctx(Duration::from_secs(1), false, false, tx);
        let mut rx = Receiver {
            counts: vec![ctx.empty_interval(0)],
            ..Receiver::new(&ctx)
        };
        let hello =
            crate::traffic::protocol::udp_hello(&crate::traffic::protocol::Token([7; 16]), 0);
        let at = Duration::from_millis(500);
        rx.datagram(&hello, hello.len(), at);
        for seq in 0..3 {
            let mut d = vec![0u8; 1400];
            write_header(Datagrams::Netsweep, &mut d, seq, 1_000_000 * (seq + 1));
            rx.datagram(&d, d.len(), at);
            rx.datagram(&hello, hello.len(), at);
        }
        let c = &rx.counts[0];
        assert_eq!((c.packets, c.bytes), (3, 3 * 1400));
        let udp = c.udp.as_ref().expect("udp counts");
        assert_eq!((udp.out_of_order, udp.duplicates), (0, 0));
        assert_eq!(rx.tail_bytes, 0);
    }

    /// Regression (a numbers audit): behind a full 50 ms queue on a 100 Mbit/s path, the first
    /// interval read 103 Mbit/s, its bytes counted by send time with the queue's worth that
    /// arrived after it ended. Datagrams count where they were sent (loss), their bytes where
    /// they arrived; what arrives after the grid, in the linger, is in no interval's bytes.
    #[test]
    fn bytes_count_where_they_arrived_and_datagrams_where_they_were_sent() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = StreamCtx {
            cut: std::sync::Arc::new(crate::traffic::timeline::Cut::new(2)),
            ..receiver_ctx(Duration::from_secs(2), false, false, tx)
        };
        let mut rx = Receiver::new(&ctx);
        let ms = Duration::from_millis;
        // (sequence, sent at, read at): queued 50 ms, across the first interval's end; then
        // the last one read in the linger after the grid.
        for (seq, sent, read) in [(0, 100, 150), (1, 980, 1030), (2, 1990, 2040)] {
            let mut d = vec![0u8; 1400];
            write_header(Datagrams::Netsweep, &mut d, seq, sent * 1_000_000);
            rx.datagram(&d, d.len(), ms(read));
        }
        let got: Vec<(u64, u64)> = rx.counts.iter().map(|c| (c.packets, c.bytes)).collect();
        assert_eq!(got, vec![(2, 1400), (1, 1400)]);
        // A duplicate adds neither.
        let mut d = vec![0u8; 1400];
        write_header(Datagrams::Netsweep, &mut d, 1, 980_000_000);
        rx.datagram(&d, d.len(), ms(1500));
        assert_eq!((rx.counts[1].packets, rx.counts[1].bytes), (1, 1400));
    }

    /// `n` datagrams of 1400 bytes with headers of `seqs`, sent at 1 ms, back to back.
    fn datagrams(seqs: &[u64]) -> Vec<u8> {
        let mut buf = vec![0u8; seqs.len() * 1400];
        for (d, &seq) in buf.chunks_mut(1400).zip(seqs) {
            write_header(Datagrams::Netsweep, d, seq, 1_000_000);
        }
        buf
    }

    #[test]
    fn only_consecutive_headers_are_in_sequence() {
        let seqs: Vec<u64> = (7..53).collect();
        assert!(in_sequence(Datagrams::Netsweep, &datagrams(&seqs), 1400));
        let mut shorter = datagrams(&seqs);
        shorter.truncate(45 * 1400 + 100);
        assert!(in_sequence(Datagrams::Netsweep, &shorter, 1400));
        for bad in [vec![7, 9, 8, 10], vec![7, 8, 8, 9], vec![7, 9, 10, 11]] {
            assert!(!in_sequence(Datagrams::Netsweep, &datagrams(&bad), 1400));
        }
        // One read joining two sends (their times differ) is not one batch.
        let mut joined = datagrams(&[7, 8, 9, 10]);
        write_header(Datagrams::Netsweep, &mut joined[2 * 1400..], 9, 2_000_000);
        write_header(Datagrams::Netsweep, &mut joined[3 * 1400..], 10, 2_000_000);
        assert!(!in_sequence(Datagrams::Netsweep, &joined, 1400));
        // A datagram too short for a header is not counted as in sequence.
        let mut cut = datagrams(&[7, 8]);
        cut.truncate(1400 + 10);
        assert!(!in_sequence(Datagrams::Netsweep, &cut, 1400));
    }

    /// A batch counted from its head gives what reading each of its datagrams gives when the
    /// sender wrote them in sequence: packets, bytes, the highest sequence, and a datagram
    /// missing between two batches as the gap before the next.
    #[test]
    fn a_batch_counted_from_its_head_is_its_datagrams() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = receiver_ctx(Duration::from_secs(1), true, true, tx);
        let (mut whole, mut heads) = (Receiver::new(&ctx), Receiver::new(&ctx));
        let mut copied = Receiver::new(&ctx);
        let batches: [Vec<u64>; 3] = [(0..46).collect(), (47..93).collect(), (93..100).collect()];
        let mut now = Duration::from_millis(2);
        for seqs in &batches {
            // Read at different times, so gaps, delays and jitter differ from batch to batch.
            now += Duration::from_micros(137);
            let mut buf = datagrams(seqs);
            buf.truncate(buf.len() - 300);
            for d in buf.chunks(1400) {
                whole.datagram(d, d.len(), now);
            }
            copied.datagrams(&buf, 1400, now);
            assert!(heads.batch(&buf[..HEADER_READ], buf.len(), Some(1400), now));
        }
        let (a, b) = (&whole.counts[0], &heads.counts[0]);
        assert_eq!((b.packets, b.bytes), (a.packets, a.bytes));
        assert_eq!((b.packets, b.bytes), (99, 99 * 1400 - 3 * 300));
        assert_eq!(heads.tracker.highest(), whole.tracker.highest());
        assert_eq!(heads.tracker.highest(), Some(99));
        let (ua, ub) = (a.udp.as_ref().unwrap(), b.udp.as_ref().unwrap());
        assert_eq!(
            (ub.out_of_order, ub.duplicates),
            (ua.out_of_order, ua.duplicates)
        );
        // Counted at once, a batch leaves the timing and jitter that one-by-one arrivals do.
        assert_eq!(heads.timing, whole.timing);
        assert_eq!(copied.timing, whole.timing);
        assert_eq!(copied.counts, whole.counts);
        assert_eq!(copied.tracker.highest(), whole.tracker.highest());
        assert_eq!(heads.timing.inter_arrival.total(), 98);
        assert_eq!(heads.timing.delay_above_min.total(), 99);
        assert_eq!(ub.jitter_ms, ua.jitter_ms);
        assert!(ub.jitter_ms > 0.0);
        // One datagram alone is read as itself.
        let one = datagrams(&[100]);
        assert!(heads.batch(&one[..HEADER_READ], one.len(), None, now));
        assert_eq!(heads.counts[0].packets, 100);
    }

    /// Copied whole, reordered and repeated datagrams among in-order runs are counted as they
    /// would be one by one: runs at once, the others each by itself.
    #[test]
    fn a_copied_read_counts_runs_at_once_and_the_rest_one_by_one() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = receiver_ctx(Duration::from_secs(1), true, false, tx);
        let (mut one, mut runs) = (Receiver::new(&ctx), Receiver::new(&ctx));
        let mut now = Duration::from_millis(2);
        for seqs in [&[0, 1, 2, 5, 3, 3, 6, 7][..], &[4, 8, 9, 9, 12, 10]] {
            now += Duration::from_micros(90);
            let buf = datagrams(seqs);
            for d in buf.chunks(1400) {
                one.datagram(d, d.len(), now);
            }
            runs.datagrams(&buf, 1400, now);
        }
        assert_eq!(runs.counts, one.counts);
        assert_eq!(runs.timing, one.timing);
        let udp = runs.counts[0].udp.as_ref().unwrap();
        assert_eq!((udp.out_of_order, udp.duplicates), (3, 2));
        assert_eq!(runs.counts[0].packets, 12);
    }

    /// A NIC's coalescing can join 10, 11, 14, 15 and then 12, 13: counted from heads the first
    /// read would take 14 and 15 for 12 and 13. The second read's head comes before what was
    /// counted, and says so, so the receiver turns the copy on.
    #[test]
    fn a_batch_that_starts_before_what_was_counted_is_flagged() {
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = receiver_ctx(Duration::from_secs(1), true, true, tx);
        let mut rx = Receiver::new(&ctx);
        let now = Duration::from_millis(2);
        let a = datagrams(&[10, 11, 14, 15]);
        assert!(rx.batch(&a[..HEADER_READ], a.len(), Some(1400), now));
        let b = datagrams(&[12, 13]);
        assert!(!rx.batch(&b[..HEADER_READ], b.len(), Some(1400), now));
        let c = datagrams(&[16, 17]);
        assert!(rx.batch(&c[..HEADER_READ], c.len(), Some(1400), now));
    }

    /// Through a real socket: segmented sends on loopback arrive coalesced and are counted
    /// from their heads; a first batch out of sequence (checked whole) turns the copy on, and
    /// the stream then says it did not skip it. Every datagram is counted either way.
    #[test]
    fn a_batch_out_of_sequence_turns_the_copy_on() {
        for (first, skipped) in [((0..46).collect::<Vec<u64>>(), true), {
            let mut s: Vec<u64> = (0..46).collect();
            s.swap(3, 4);
            (s, false)
        }] {
            let rx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let tx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            tx_sock.connect(rx_sock.local_addr().unwrap()).unwrap();
            if !udpbatch::enable_udp_gro(&rx_sock) {
                eprintln!("skipped: no UDP_GRO here");
                return;
            }
            let (tx, _events) = std::sync::mpsc::channel();
            let ctx = receiver_ctx(Duration::from_millis(100), true, true, tx);
            let report = std::thread::scope(|scope| {
                let receiver = scope.spawn(|| receive(&ctx, rx_sock));
                let mut seq = 46;
                for batch in 0..200 {
                    let seqs: Vec<u64> = if batch == 0 {
                        first.clone()
                    } else {
                        (seq..seq + 46).collect()
                    };
                    seq += if batch == 0 { 0 } else { 46 };
                    udpbatch::send_segmented(&tx_sock, &datagrams(&seqs), 1400).unwrap();
                    if batch % 20 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                receiver.join().unwrap()
            });
            assert_eq!(report.skipped_rx_copy, skipped, "{report:?}");
            let packets: u64 = report.intervals.iter().map(|i| i.packets).sum();
            let lost = report.highest_seq.map_or(0, |h| h + 1) - packets;
            // The kernel may drop whole batches on a busy host; what arrived is counted.
            assert!(packets.is_multiple_of(46), "{report:?}");
            assert!(packets >= 46 && lost.is_multiple_of(46), "{packets} {lost}");
        }
    }

    /// iperf3's datagrams are stamped one by one: a receiver that skips their copy reads them
    /// one at a time (no GRO), and counts every one.
    #[test]
    fn iperf3_datagrams_are_never_counted_from_batch_heads() {
        let rx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx_sock.connect(rx_sock.local_addr().unwrap()).unwrap();
        let (tx, _events) = std::sync::mpsc::channel();
        let format = Datagrams::Iperf3 { seq64: false };
        let ctx = StreamCtx {
            datagrams: format,
            ..receiver_ctx(Duration::from_millis(100), true, true, tx)
        };
        let report = std::thread::scope(|scope| {
            let receiver = scope.spawn(|| receive(&ctx, rx_sock));
            std::thread::sleep(Duration::from_millis(20));
            for batch in 0..20u64 {
                let mut buf = vec![0u8; 46 * 1400];
                for (i, d) in buf.chunks_mut(1400).enumerate() {
                    // A microsecond apart, as iperf3 stamps them: never one send time.
                    let at = stamp(format, ctx.elapsed()) + 1_000 * i as u64;
                    write_header(format, d, batch * 46 + i as u64, at);
                }
                if udpbatch::send_segmented(&tx_sock, &buf, 1400).is_err() {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Some(receiver.join().unwrap())
        });
        let Some(report) = report else {
            eprintln!("skipped: no UDP segmentation here");
            return;
        };
        // Counted from heads, the first read (checked whole) would have shown several send
        // times and turned the copy on.
        assert!(report.skipped_rx_copy, "{report:?}");
        let packets: u64 = report.intervals.iter().map(|i| i.packets).sum();
        let highest = report.highest_seq.map_or(0, |h| h + 1);
        // Every datagram read is counted (a loaded host's full buffer may drop some).
        assert!(
            highest <= 20 * 46 && packets <= highest,
            "{packets} of {highest}"
        );
        assert!(packets >= 46, "{report:?}");
    }

    #[test]
    fn batches_fit_one_segmented_send() {
        assert_eq!(batch_size(1400, true), 46);
        assert!(batch_size(1400, true) * 1400 <= MAX_GSO_BYTES);
        assert_eq!(batch_size(60_000, true), 1);
        assert_eq!(batch_size(1400, false), MAX_BATCH);
        assert!(batch_size(65_507, false) * 65_507 <= MAX_PLAIN_BATCH_BYTES);
    }
}
