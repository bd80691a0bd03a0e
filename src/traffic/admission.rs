//! What a server lets its clients hold, and for how long. Both servers (`traffic::server` for
//! netsweep's protocol and `traffic::iperf3::server`) admit through one `Admission`:
//!
//! - `Slot`: one of `--max-tests`, held from the test's admission until its last byte of
//!   results is exchanged and its data sockets are closed; it carries the test's descriptor
//!   reservation (a budget under the open-file limit, so `accept` never meets EMFILE) and its
//!   entry in the list of running tests (logged as aborted if the server stops under them).
//! - `Pending`: a connection not yet admitted nor matched to a test, capped by `--max-pending`.
//!   The data connections an admitted test still expects from its peer (`Expecting`) never
//!   count against that cap.
//! - `StreamClock`: stream setup's deadline, which moves with every arrival and is capped.
//!
//! The deadlines of each stage are constants here, so `docs/server-limits.md` can state them.

use crate::traffic::spec::ServerLimits;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a document of one stage (iperf3's parameters or results) may take to arrive in
/// full, counted from the stage's start, and how long an admitted client may stay silent
/// before it says anything at all.
pub const STAGE_DEADLINE: Duration = Duration::from_secs(5);
/// Stream setup: the first data connection must arrive within this of the request, and each
/// next one within this of the one before.
pub const STREAM_IDLE: Duration = Duration::from_secs(3);
/// Stream setup as a whole: `STAGE_DEADLINE` plus this per stream (or two control round trips
/// per stream, when more), so a client that trickles its connections cannot hold a slot long.
pub const STREAM_SETUP_PER_STREAM: Duration = Duration::from_millis(100);
/// Descriptors kept back from tests' data sockets: listeners, control connections, pending
/// connections, the process's own files.
const FD_RESERVE: u64 = 64;
/// Descriptors one test needs besides its streams: control connection, UDP or echo sockets.
const FDS_PER_TEST: usize = 4;
/// How long a new client waits for a slot that is being freed (a client that starts its next
/// test the moment the last one ends) before it is told "busy".
const SLOT_WAIT: Duration = Duration::from_millis(500);

/// The server's admission state, shared by every connection.
pub struct Admission {
    max_tests: usize,
    max_pending: usize,
    running: AtomicUsize,
    pending: AtomicUsize,
    /// Data connections admitted tests still expect, by their peer's address.
    expected: Mutex<HashMap<IpAddr, usize>>,
    /// Descriptors tests may reserve in all, and how many they hold.
    fd_budget: usize,
    fds: AtomicUsize,
    active: Mutex<BTreeMap<u64, Active>>,
    next_id: AtomicU64,
}

/// A running test, for the log if the server stops under it.
struct Active {
    peer: SocketAddr,
    what: String,
    since: Instant,
}

impl Admission {
    /// Admission under `limits`; descriptors are budgeted under `open_files` (the soft
    /// RLIMIT_NOFILE), or `limits.max_open_files` when that is set.
    pub fn new(limits: &ServerLimits, open_files: Option<u64>) -> Admission {
        let limit = match limits.max_open_files {
            0 => open_files.unwrap_or(u64::MAX),
            n => n,
        };
        let reserve = FD_RESERVE
            .saturating_add(limits.max_pending as u64)
            .saturating_add((limits.max_tests.saturating_mul(FDS_PER_TEST)) as u64);
        Admission {
            max_tests: limits.max_tests,
            max_pending: limits.max_pending,
            running: AtomicUsize::new(0),
            pending: AtomicUsize::new(0),
            expected: Mutex::new(HashMap::new()),
            fd_budget: usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX),
            fds: AtomicUsize::new(0),
            active: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(0),
        }
    }

    /// A just-accepted connection from `peer`: one a test of that peer expects (`Some(false)`),
    /// or counted as pending (`Some(true)`; hand it to `pending`), or `None` when
    /// `max_pending` connections already wait (drop it).
    pub fn connection(&self, peer: IpAddr) -> Option<bool> {
        let peer = peer.to_canonical();
        if let Ok(mut e) = self.expected.lock()
            && let Some(n) = e.get_mut(&peer)
            && *n > 0
        {
            *n -= 1;
            return Some(false);
        }
        let max = self.max_pending;
        self.pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| true)
    }

    /// The guard of a connection `connection` admitted: it stops counting as pending when
    /// released or dropped.
    pub fn pending(&self, counted: bool) -> Pending<'_> {
        Pending(counted.then_some(&self.pending))
    }

    /// `max_pending`, for messages.
    pub fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// `max_tests`, for messages.
    pub fn max_tests(&self) -> usize {
        self.max_tests
    }

    /// One of the `max_tests` slots for a test of `peer`, waiting up to `SLOT_WAIT` for one
    /// being freed; `Err(running)` when all stay taken.
    pub fn slot(&self, peer: SocketAddr) -> Result<Slot<'_>, usize> {
        let give_up = Instant::now() + SLOT_WAIT;
        loop {
            let max = self.max_tests;
            match self
                .running
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < max).then_some(n + 1)
                }) {
                Ok(_) => break,
                Err(running) if Instant::now() >= give_up => return Err(running),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut a) = self.active.lock() {
            a.insert(
                id,
                Active {
                    peer,
                    what: "a test being set up".into(),
                    since: Instant::now(),
                },
            );
        }
        Ok(Slot {
            adm: self,
            id,
            fds: 0,
        })
    }

    /// One line per test still running (for the log when the server stops under them).
    pub fn running_tests(&self) -> Vec<String> {
        let Ok(a) = self.active.lock() else {
            return Vec::new();
        };
        a.values()
            .map(|t| {
                format!(
                    "{}: {} aborted after {:.1} s: the server is stopping",
                    t.peer,
                    t.what,
                    t.since.elapsed().as_secs_f64()
                )
            })
            .collect()
    }

    /// Tests holding slots now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Descriptors reserved by tests now.
    pub fn fds_reserved(&self) -> usize {
        self.fds.load(Ordering::SeqCst)
    }
}

/// Holds one of the `max_tests` slots and the test's descriptor reservation; both are freed on
/// drop, whatever happens to the test. Drop it after the results are exchanged and the data
/// sockets closed.
pub struct Slot<'a> {
    adm: &'a Admission,
    id: u64,
    fds: usize,
}

impl Slot<'_> {
    /// Names the test in the list of running tests ("TCP forward test, 4 streams, 10 s").
    pub fn describe(&self, what: String) {
        if let Ok(mut a) = self.adm.active.lock()
            && let Some(t) = a.get_mut(&self.id)
        {
            t.what = what;
            t.since = Instant::now();
        }
    }

    /// Reserves descriptors for a test of `streams` data sockets (each may be held twice while
    /// the results are exchanged), or says why the server cannot take them now.
    pub fn reserve_streams(&mut self, streams: usize) -> Result<(), String> {
        let want = streams.saturating_mul(2).saturating_add(FDS_PER_TEST);
        let budget = self.adm.fd_budget;
        self.adm
            .fds
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                n.checked_add(want).filter(|total| *total <= budget)
            })
            .map(|_| self.fds += want)
            .map_err(|held| {
                format!(
                    "{streams} streams need {want} open files and this server's tests hold \
                     {held} of its {budget} (ulimit -n): try fewer streams or later"
                )
            })
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.adm.fds.fetch_sub(self.fds, Ordering::SeqCst);
        if let Ok(mut a) = self.adm.active.lock() {
            a.remove(&self.id);
        }
        self.adm.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a connection as pending until it is admitted or closed.
pub struct Pending<'a>(Option<&'a AtomicUsize>);

impl Pending<'_> {
    /// The connection is admitted to a test (or handed to one): it no longer counts.
    pub fn release(&mut self) {
        if let Some(c) = self.0.take() {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// An admitted test's data connections still to come from its peer: while it lives, that
/// many connections from the peer's address are accepted without counting as pending.
pub struct Expecting<'a> {
    adm: &'a Admission,
    peer: IpAddr,
    left: usize,
}

impl<'a> Expecting<'a> {
    pub fn new(adm: &'a Admission, peer: IpAddr, streams: usize) -> Expecting<'a> {
        let peer = peer.to_canonical();
        if let Ok(mut e) = adm.expected.lock() {
            *e.entry(peer).or_default() += streams;
        }
        Expecting {
            adm,
            peer,
            left: streams,
        }
    }

    /// One of the test's data connections arrived.
    pub fn arrived(&mut self) {
        self.left = self.left.saturating_sub(1);
    }
}

impl Drop for Expecting<'_> {
    fn drop(&mut self) {
        if let Ok(mut e) = self.adm.expected.lock()
            && let Some(n) = e.get_mut(&self.peer)
        {
            *n = n.saturating_sub(self.left);
            if *n == 0 {
                e.remove(&self.peer);
            }
        }
    }
}

/// Stream setup's deadline: `STREAM_IDLE` after the start or the last arrival, and never past
/// `STAGE_DEADLINE` plus a share per stream.
pub struct StreamClock {
    last: Instant,
    end: Instant,
}

impl StreamClock {
    /// The clock for `streams` data connections, over a control connection of round trip `rtt`.
    pub fn new(streams: usize, rtt: Duration) -> StreamClock {
        let per = STREAM_SETUP_PER_STREAM.max(rtt * 2);
        let n = u32::try_from(streams).unwrap_or(u32::MAX);
        let now = Instant::now();
        StreamClock {
            last: now,
            end: now + STAGE_DEADLINE + per.saturating_mul(n),
        }
    }

    /// A data connection arrived: the next one has `STREAM_IDLE` from now.
    pub fn progressed(&mut self) {
        self.last = Instant::now();
    }

    /// The latest the setup can end, however the connections arrive.
    pub fn latest(&self) -> Instant {
        self.end
    }

    pub fn deadline(&self) -> Instant {
        (self.last + STREAM_IDLE).min(self.end)
    }

    /// Time left, at most `slice` (so the caller can look at its control connection between).
    pub fn wait(&self, slice: Duration) -> Duration {
        self.deadline()
            .saturating_duration_since(Instant::now())
            .min(slice)
    }

    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline()
    }
}

/// Why a test's stream setup ends early (the client closed its control connection) or late
/// (`clock` ran out) with `got` of `want` streams, if it does.
pub fn setup_gave_up(
    ctrl: &TcpStream,
    clock: &StreamClock,
    got: usize,
    want: usize,
    what: &str,
) -> Option<String> {
    if control_closed(ctrl) {
        return Some(format!(
            "the client closed its control connection with {got} of {want} {what} open"
        ));
    }
    clock.expired().then(|| {
        format!(
            "only {got} of {want} {what} arrived (each must follow the last within {} s)",
            STREAM_IDLE.as_secs()
        )
    })
}

/// Waits for `want` TCP data connections of a test (each as its server's acceptor hands it
/// over, with the key it came with) while the client is alive and its connections keep coming
/// (`clock`). Only connections from the control peer count; `take` files each one and says
/// whether it took it (a second connection for one stream is not taken). Both servers, netsweep's
/// and iperf3's, collect their streams here.
pub fn collect_connections<K>(
    rx: &std::sync::mpsc::Receiver<(K, TcpStream)>,
    (ctrl, peer_ip, want): (&TcpStream, IpAddr, usize),
    clock: &mut StreamClock,
    mut expecting: Option<&mut Expecting<'_>>,
    mut take: impl FnMut(K, TcpStream) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    use std::sync::mpsc::RecvTimeoutError;
    let mut got = 0;
    while got < want {
        if let Some(why) = setup_gave_up(ctrl, clock, got, want, "data connections") {
            anyhow::bail!(why);
        }
        let (key, sock) = match rx.recv_timeout(clock.wait(Duration::from_millis(100))) {
            Ok(a) => a,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => anyhow::bail!("the server is stopping"),
        };
        let from_peer = sock
            .peer_addr()
            .map(|a| a.ip().to_canonical() == peer_ip.to_canonical())
            .unwrap_or(false);
        if from_peer && take(key, sock)? {
            got += 1;
            clock.progressed();
            if let Some(e) = expecting.as_deref_mut() {
                e.arrived();
            }
        }
    }
    Ok(())
}

/// Whether the peer has closed (or reset) the control connection. Never blocks; bytes waiting
/// are left for the reader.
pub fn control_closed(ctrl: &TcpStream) -> bool {
    if !crate::platform::sockopt::wait_readable(ctrl, Duration::ZERO).unwrap_or(false) {
        return false;
    }
    let mut b = [0u8; 1];
    if ctrl.set_nonblocking(true).is_err() {
        return false;
    }
    let closed = match ctrl.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = ctrl.set_nonblocking(false);
    closed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_tests: usize, max_pending: usize, files: u64) -> ServerLimits {
        ServerLimits {
            max_tests,
            max_pending,
            max_open_files: files,
            ..ServerLimits::default()
        }
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:9".parse().unwrap()
    }

    #[test]
    fn a_slot_is_freed_on_drop_with_its_descriptors() {
        let adm = Admission::new(&limits(1, 4, 1000), None);
        let mut s = adm.slot(peer()).unwrap();
        s.reserve_streams(100).unwrap();
        assert_eq!(adm.fds_reserved(), 204);
        assert_eq!(adm.slot(peer()).err(), Some(1));
        assert_eq!(adm.running_tests().len(), 1);
        drop(s);
        assert_eq!((adm.running(), adm.fds_reserved()), (0, 0));
        assert!(adm.running_tests().is_empty());
        assert!(adm.slot(peer()).is_ok());
    }

    #[test]
    fn streams_beyond_the_descriptor_budget_are_refused_with_the_numbers() {
        // 1000 files, less 64 + 4 pending + 8 for two tests' control: a budget of 924.
        let adm = Admission::new(&limits(2, 4, 1000), Some(1 << 20));
        let mut a = adm.slot(peer()).unwrap();
        let mut b = adm.slot(peer()).unwrap();
        a.reserve_streams(256).unwrap();
        let e = b.reserve_streams(256).unwrap_err();
        assert!(e.contains("ulimit -n"), "{e}");
        b.reserve_streams(100).unwrap();
    }

    #[test]
    fn expected_data_connections_do_not_count_as_pending() {
        let adm = Admission::new(&limits(1, 2, 0), None);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let mut held = Vec::new();
        {
            let mut e = Expecting::new(&adm, ip, 5);
            for _ in 0..5 {
                assert_eq!(adm.connection(ip), Some(false));
                e.arrived();
            }
            // The test's connections are in: others count again.
            for _ in 0..2 {
                let counted = adm.connection(ip).expect("below the cap");
                held.push(adm.pending(counted));
            }
            assert!(adm.connection(ip).is_none());
        }
        drop(held);
        let _e = Expecting::new(&adm, ip, 1);
        drop(_e);
        assert!(adm.expected.lock().unwrap().is_empty());
    }

    #[test]
    fn the_stream_clock_moves_with_arrivals_and_stops_at_its_cap() {
        let mut c = StreamClock::new(1, Duration::ZERO);
        let first = c.deadline();
        assert!(first <= Instant::now() + STREAM_IDLE);
        std::thread::sleep(Duration::from_millis(20));
        c.progressed();
        assert!(c.deadline() > first);
        c.last += Duration::from_secs(3600);
        assert!(c.deadline() <= c.end);
    }
}
