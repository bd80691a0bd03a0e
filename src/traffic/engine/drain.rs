//! A TCP sender's end: an iperf3 client's senders let the far end settle before TEST_END, and
//! senders between netsweep's ends wait for the tail's acknowledgement (`await_tail`).
//!
//! An iperf3 server counts what its application read when TEST_END arrives: what still waits in
//! its receive buffer is left out, so its count can fall short of what its kernel acknowledged
//! by as much as the buffer holds. The buffer's size is the far end's (`tcp_rmem`'s maximum,
//! 32 MiB here), which this end cannot see, and a starved honest reader on a busy host did
//! leave 32 MB unread (measured in CI); Debian's iperf3 3.12 on an idle host left 1.1 MB of
//! `-n 50M` unread. So the check of a server's count allowed the whole buffer, and a server
//! claiming half of a 50 MB test passed.
//!
//! Here each sender, after its last write and before the client says TEST_END, waits (at most
//! `WAIT`, within the client's `SENDERS_GRACE`) until the far end has acknowledged everything
//! written and its advertised window has reopened to at least half the largest it advertised
//! during the test (sampled every `SAMPLE_EVERY` while writing). A window that reopened means
//! the far application was reading; what can still wait unread is then bounded by the far
//! receive buffer's usable space minus the window, and Linux grows that space (receive-buffer
//! autotuning, `tcp_rcv_space_adjust`) to at most about four times what the application reads
//! in a round trip, itself at most one window: `peer_checks::below_acked` allows four of the
//! largest windows. The sample counts only if taken before TEST_END went out (`EndGate`): a
//! window the far end opened after it stopped counting would make the bound too tight.
//!
//! What this cannot tell: a test smaller than half the far window leaves the window above half
//! its largest whether the far application read it or not, so below about four windows
//! (1 to 6 MB on loopback, and `peer_checks`' floor of 4 MiB) a count can still be understated
//! unseen. Waiting longer would not help (Linux announces a reopened window only once it
//! doubles), and a tighter allowance would fail honest servers that a busy host starves for
//! longer than `WAIT`.

use crate::platform::sockopt;
use crate::traffic::measure::Drained;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a sender waits for the far end to settle after its last write.
pub const WAIT: Duration = Duration::from_millis(100);
/// Longest a netsweep sender waits after its last write for the receiver to acknowledge the
/// tail, so the kernel's final counts hold the tail's retransmissions (its receiver reads the
/// tail anyway before the test's end).
const TAIL_WAIT: Duration = Duration::from_secs(5);
/// How often a settling sender reads TCP_INFO.
const POLL: Duration = Duration::from_millis(1);
/// How often a sender reads the far end's window while it writes: often enough to see the
/// largest window it advertises, seldom enough to cost nothing (one TCP_INFO per millisecond
/// where a 40 Gbit/s stream makes some 5000 writes).
pub const SAMPLE_EVERY: Duration = Duration::from_millis(1);

/// Shut once, by the client, right before it says TEST_END.
#[derive(Debug, Default)]
pub struct EndGate(AtomicBool);

impl EndGate {
    /// The client is about to say TEST_END: later samples no longer count.
    pub fn shut(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_shut(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The far end acknowledged every byte written and its window reopened to half its largest.
/// The kernel's count of acknowledged bytes also holds the SYN and what was written before the
/// stream's thread took over (iperf3's 37-byte cookie), so up to 38 bytes may still be on
/// their way: nothing the bound in `peer_checks` notices.
pub fn settled(acked: u64, written: u64, window: u64, window_max: u64) -> bool {
    acked >= written && window > 0 && window.saturating_mul(2) >= window_max
}

/// The largest window sampled while writing, kept by the sender.
#[derive(Debug, Default)]
pub struct WindowWatch {
    pub max: u64,
    last: Option<Instant>,
}

impl WindowWatch {
    /// Reads the far end's window if `SAMPLE_EVERY` has passed since the last read.
    pub fn after_write(&mut self, sock: &TcpStream) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < SAMPLE_EVERY)
        {
            return;
        }
        self.last = Some(now);
        if let Ok(info) = sockopt::tcp_info(sock) {
            self.max = self.max.max(u64::from(info.snd_wnd));
        }
    }
}

/// Waits at most `WAIT` for the far end to settle after `written` bytes; the window it settled
/// at, if it did before `gate` shut (or `stop` was raised).
pub fn settle(
    sock: &TcpStream,
    written: u64,
    watch: &mut WindowWatch,
    gate: &EndGate,
    stop: &AtomicBool,
) -> Option<Drained> {
    let until = Instant::now() + WAIT;
    loop {
        let info = sockopt::tcp_info(sock).ok()?;
        let window = u64::from(info.snd_wnd);
        watch.max = watch.max.max(window);
        // Nothing to wait for where the kernel gives no window (Linux before 5.4) or no
        // acknowledged count (FreeBSD), nor on a path whose round trip is half the wait or
        // more: TEST_END then goes out when it did before.
        let acked = info.bytes_acked?;
        if watch.max == 0 || u128::from(info.rtt_us) * 2 >= WAIT.as_micros() {
            return None;
        }
        // Read after the sample: the sample was taken before TEST_END went out.
        if gate.is_shut() || stop.load(Ordering::Relaxed) {
            return None;
        }
        if settled(acked, written, window, watch.max) {
            return Some(Drained {
                window_bytes: window,
                window_max_bytes: watch.max,
            });
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Waits at most `TAIL_WAIT` (or until `stop`) for the far end to acknowledge the `written`
/// bytes. The kernel retransmits lost segments of the tail after the last interval: on a
/// 100 Mbit/s lab with 1% loss, 27 of 366 segments of a 3 s test, which the counts read at once
/// left out. Nothing to wait for where the kernel gives no acknowledged count (FreeBSD).
pub fn await_tail(sock: &TcpStream, written: u64, stop: &AtomicBool) {
    let until = Instant::now() + TAIL_WAIT;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        match sockopt::tcp_info(sock).ok().and_then(|i| i.bytes_acked) {
            Some(acked) if acked < written => std::thread::sleep(Duration::from_millis(5)),
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_needs_everything_acked_and_the_window_reopened() {
        assert!(settled(1001, 1000, 600, 1200));
        assert!(settled(1000, 1000, 600, 1200));
        assert!(!settled(999, 1000, 1200, 1200), "a byte unacknowledged");
        assert!(
            !settled(1001, 1000, 599, 1200),
            "the window under half its largest"
        );
        assert!(!settled(1001, 1000, 0, 0), "a closed window");
    }

    #[test]
    fn a_sample_after_the_gate_shut_does_not_count() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_peer, _) = l.accept().unwrap();
        let info = sockopt::tcp_info(&s).unwrap();
        if info.bytes_acked.is_none() || info.snd_wnd == 0 {
            eprintln!("skipped: this kernel's TCP_INFO has no acknowledged count or window");
            return;
        }
        let (gate, stop) = (EndGate::default(), AtomicBool::new(false));
        let mut watch = WindowWatch::default();
        // Nothing written: settled at once while the gate is open.
        let d = settle(&s, 0, &mut watch, &gate, &stop).expect("an idle connection settles");
        assert!(d.window_bytes > 0 && d.window_bytes <= d.window_max_bytes);
        gate.shut();
        assert_eq!(settle(&s, 0, &mut watch, &gate, &stop), None);
        // Unacknowledged bytes that never come: gives up after `WAIT`.
        let t0 = Instant::now();
        let open = EndGate::default();
        assert_eq!(settle(&s, u64::MAX, &mut watch, &open, &stop), None);
        assert!(t0.elapsed() >= WAIT && t0.elapsed() < WAIT * 20);
    }
}
