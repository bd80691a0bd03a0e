//! UDP streams. Every datagram starts with its sequence number and the sender's send time
//! (nanoseconds since the sender's start, both big-endian u64). The sender paces batches of
//! datagrams at the target rate, as one UDP_SEGMENT send where the kernel allows; the receiver
//! reads coalesced batches (UDP_GRO) and attributes every datagram to the interval in which it
//! was *sent*, so per-interval loss is exact: sent in interval k minus received of interval k.

use super::quota::TopUp;
use super::{Datagrams, POLL, Pacer, StreamCtx, UDP_LINGER, payload};
use crate::platform::{sockopt, udpbatch};
use crate::traffic::histogram::UdpTiming;
use crate::traffic::measure::{IntervalReport, StreamReport, UdpReceived};
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
        let arrival = self.tracker.record(seq);
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
        let Some(slot) = index.and_then(|i| self.counts.get_mut(i)) else {
            if arrival != Arrival::Duplicate {
                self.tail_bytes += len as u64;
            }
            return;
        };
        let udp = slot.udp.get_or_insert_with(UdpReceived::default);
        match arrival {
            Arrival::Duplicate => {
                udp.duplicates += 1;
                return;
            }
            Arrival::OutOfOrder => udp.out_of_order += 1,
            Arrival::InOrder => {}
        }
        let arrival_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        if let Some(last) = self.last_arrival_ns {
            self.timing
                .inter_arrival
                .record_ns(arrival_ns.saturating_sub(last));
        }
        self.last_arrival_ns = Some(arrival_ns);
        let transit = i128::from(arrival_ns) - i128::from(send_ns);
        let floor = self.min_transit_ns.map_or(transit, |m| m.min(transit));
        self.min_transit_ns = Some(floor);
        self.timing
            .delay_above_min
            .record_ns(u64::try_from(transit - floor).unwrap_or(u64::MAX));
        self.jitter.update(send_ns, arrival_ns);
        udp.jitter_ms = self.jitter.millis();
        slot.packets += 1;
        slot.bytes += len as u64;
        if let Some(q) = &self.ctx.quota
            && index.is_some_and(|i| self.ctx.counts_in(i))
        {
            q.count(len as u64, now);
        }
    }
}

pub(super) fn receive(ctx: &StreamCtx, sock: UdpSocket) -> StreamReport {
    let mut report = ctx.new_report();
    // Skipping the copy reads each datagram's header alone (MSG_TRUNC returns the whole
    // length), one datagram a call: no GRO, whose segments would go uncounted.
    let gro = !ctx.skip_rx_copy && ctx.udp_offload && udpbatch::enable_udp_gro(&sock);
    let size = if ctx.skip_rx_copy {
        HEADER_READ
    } else if gro {
        1 << 16
    } else {
        ctx.length.max(2048)
    };
    let mut buf = vec![0u8; size];
    report.skipped_rx_copy = ctx.skip_rx_copy;
    let _ = sock.set_read_timeout(Some(POLL));
    let mut rx = Receiver::new(ctx);
    let mut emitted = 0;
    let mut stopped_early = false;
    loop {
        let got = if ctx.skip_rx_copy {
            sockopt::recv_trunc(&sock, &mut buf).map(|n| (n, None))
        } else {
            udpbatch::recv_coalesced(&sock, &mut buf)
        };
        match got {
            Ok((n, _)) if ctx.skip_rx_copy => {
                let arrived = ctx.elapsed();
                ctx.arrivals.note(arrived);
                rx.datagram(&buf[..n.min(buf.len())], n, arrived);
            }
            Ok((n, segment)) => {
                let segment = segment.unwrap_or(n).max(1);
                let arrived = ctx.elapsed();
                ctx.arrivals.note(arrived);
                for d in buf[..n].chunks(segment) {
                    rx.datagram(d, d.len(), arrived);
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
        let slots = ctx.slots();
        while emitted < slots.len() && now >= slots[emitted].end + LIVE_GRACE {
            rx.grow_to(emitted);
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
    report.intervals = counts;
    report.tail_bytes = rx.tail_bytes;
    report.highest_seq = rx.tracker.highest();
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

    /// Regression: on a lossy path the client repeats its hello, and the extra copies wait in
    /// the server's socket; read as data they would have been a datagram with a huge sequence.
    #[test]
    fn queued_hellos_are_not_counted_as_data() {
        use crate::traffic::measure::Role;
        use crate::traffic::spec::Flow;
        use std::sync::Arc;
        use std::sync::atomic::AtomicBool;
        let (tx, _rx) = std::sync::mpsc::channel();
        let ctx = StreamCtx {
            stream: 0,
            flow: Flow::ClientToServer,
            role: Role::Receiver,
            timeline: Arc::new(crate::traffic::timeline::Timeline::new(
                Duration::ZERO,
                Duration::from_secs(1),
                Duration::from_secs(1),
            )),
            start: std::time::Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            events: tx,
            rate: crate::units::BitRate(0.0),
            length: 1400,
            udp_offload: false,
            zerocopy: false,
            repeating_payload: false,
            source: None,
            send_pool: None,
            read_bytes: 0,
            mark_probe: None,
            calibration: Duration::ZERO,
            datagrams: super::Datagrams::Netsweep,
            open_ended: false,
            quota: None,
            cut: Arc::new(crate::traffic::timeline::Cut::new(1)),
            arrivals: Arc::new(crate::traffic::engine::Arrivals::new(
                std::time::Instant::now(),
            )),
            skip_rx_copy: false,
            window_clamp: None,
            cpu: None,
            end_gate: None,
        };
        let mut rx = Receiver {
            counts: vec![ctx.empty_interval(0)],
            ..Receiver::new(&ctx)
        };
        let hello =
            crate::traffic::protocol::udp_hello(&crate::traffic::protocol::Token([7; 16]), 0);
        rx.datagram(&hello, hello.len(), Duration::from_secs(1));
        for seq in 0..3 {
            let mut d = vec![0u8; 1400];
            write_header(Datagrams::Netsweep, &mut d, seq, 1_000_000 * (seq + 1));
            rx.datagram(&d, d.len(), Duration::from_secs(1));
            rx.datagram(&hello, hello.len(), Duration::from_secs(1));
        }
        let c = &rx.counts[0];
        assert_eq!((c.packets, c.bytes), (3, 3 * 1400));
        let udp = c.udp.as_ref().expect("udp counts");
        assert_eq!((udp.out_of_order, udp.duplicates), (0, 0));
        assert_eq!(rx.tail_bytes, 0);
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
