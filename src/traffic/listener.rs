//! The server's listening socket and the socket buffers its data connections are born with.
//!
//! A TCP receiver's window is fixed in two places at the handshake: the window scale in the
//! SYN-ACK, and the window clamp the kernel derives from the receive buffer when the
//! connection is established. A buffer set on an accepted socket after that raises the clamp
//! only on kernels that recompute it (Linux 6.x recent enough, as on the host here); on
//! others (the Debian 6.1 guests of the VM labs, measured: 64 KB advertised with a 2 MB
//! buffer) the window never opens past what the default buffer gave, and autotuning is off
//! because the buffer was set. So a test that asks for a window has it set on the listening
//! socket while its data connections arrive: accepted sockets inherit the listener's buffers
//! and their lock. iperf3 re-opens its listener with the buffer set for the same reason.
//!
//! `ListenerBuffers` is shared by the accept loop (which owns the socket) and the tests in
//! stream setup. A test takes a `Lease` for its window (or for none) before it tells its client
//! to connect; leases of one window share the listener, others wait (bounded). When the last
//! lease of a window ends, the accept loop re-opens the listener (`reopen`) so later tests get
//! the kernel's defaults and autotuning again: a buffer set once cannot be unset.
//!
//! The kernel's defaults are the listener's too: it took `tcp_rmem`'s and `tcp_wmem`'s middle
//! values when it was made, and accepted sockets start from those, not from the values in
//! force. A server left running while its host's profile changes (a campaign's
//! `server_tuning`, or the seeds' "change a sysctl on both hosts, repeat") kept the old ones: a
//! newcomer's trial measured 128 KiB receive buffers under a profile whose `tcp_rmem` maximum
//! was 16 KiB (a server started after the change: 16 KiB). So the accept loop re-opens a
//! listener whose buffers are no longer the kernel's defaults when no test is setting up.

use crate::traffic::spec::{Protocol, TestSpec};
use socket2::{Domain, SockRef, Socket, Type};
use std::net::TcpListener;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The backlog of a re-opened listener (the binary's, and std's).
pub const BACKLOG: i32 = 128;

/// Buffers a test's data connections must be born with: `None` for the kernel's defaults.
pub type Want = Option<(u64, bool)>;

/// How long a test waits for other tests' stream setups that need the listener otherwise.
const LEASE_WAIT: Duration = Duration::from_secs(2);

/// The log's words for a lease that could not be had.
const AFTER_HANDSHAKE: &str = "another test's stream setup held the listener: this test's \
    socket buffers are set after the handshake, where some kernels keep the window small";

/// What a TCP test's data connections must be born with.
fn want(spec: &TestSpec) -> Want {
    let m = spec.window_mode;
    spec.window_bytes.map(|w| (m.buffer_for(w), m.forced()))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The kernel's defaults: autotuning on.
    Defaults,
    /// Buffers of this size (forced or asked) set on the listener.
    Set(u64, bool),
    /// Buffers were set and nobody needs them now: the listener must be re-opened.
    Stale,
}

struct State {
    mode: Mode,
    holders: usize,
    /// A handle on the listening socket for setting its options (a duplicate of the accept
    /// loop's descriptor; replaced when the listener is re-opened).
    handle: Option<TcpListener>,
    /// The kernel's defaults the listener was last re-opened for: a listener whose buffers
    /// still differ from them (a kernel that sets a listener's otherwise) is not re-opened
    /// again, every 100 ms, until they change.
    renewed_for: Option<(u64, u64)>,
}

/// The listener's buffers, leased to tests in stream setup (see the module's text).
pub struct ListenerBuffers {
    state: Mutex<State>,
    changed: Condvar,
    /// The receive and send buffers a new socket starts with now
    /// (`sysctl::tcp_socket_defaults`; injected by tests).
    kernel_defaults: fn() -> Option<(u64, u64)>,
}

/// How a lease ended up: whether the test's data connections are born with what it asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// The listener carries the asked buffers (or the defaults) until the lease ends.
    BeforeHandshake,
    /// Another test's setup held the listener too long, or the option failed: the buffers are
    /// set on each accepted socket, after its handshake.
    AfterHandshake,
}

/// A test's hold on the listener's buffers during its stream setup; released on drop.
pub struct Lease<'a> {
    owner: Option<&'a ListenerBuffers>,
    pub placed: Placed,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(owner) = self.owner else { return };
        if let Ok(mut s) = owner.state.lock() {
            s.holders = s.holders.saturating_sub(1);
            if s.holders == 0 && matches!(s.mode, Mode::Set(..)) {
                s.mode = Mode::Stale;
            }
        }
        owner.changed.notify_all();
    }
}

impl ListenerBuffers {
    /// The buffers of `listener` (a handle is kept for setting its options).
    pub fn new(listener: &TcpListener) -> ListenerBuffers {
        ListenerBuffers {
            state: Mutex::new(State {
                mode: Mode::Defaults,
                holders: 0,
                renewed_for: None,
                handle: listener.try_clone().ok(),
            }),
            changed: Condvar::new(),
            kernel_defaults: crate::platform::sysctl::tcp_socket_defaults,
        }
    }

    /// As `new`, with the kernel's defaults read by `kernel_defaults`.
    pub fn with_kernel_defaults(
        listener: &TcpListener,
        kernel_defaults: fn() -> Option<(u64, u64)>,
    ) -> ListenerBuffers {
        ListenerBuffers {
            kernel_defaults,
            ..ListenerBuffers::new(listener)
        }
    }

    /// The kernel's defaults now, when a listener on the defaults was made under other ones
    /// (see the module's text): its buffers are not what a new socket would start with.
    fn defaults_moved(&self, listener: &TcpListener) -> Option<(u64, u64)> {
        let now = (self.kernel_defaults)()?;
        let (snd, rcv) = crate::platform::sockopt::buffer_sizes(listener);
        (snd > 0 && rcv > 0 && (rcv, snd) != now).then_some(now)
    }

    /// A lease for `want` (window bytes and force, or the defaults), waiting at most `wait`
    /// for other tests' setups that need the listener otherwise.
    pub fn lease(&self, want: Want, wait: Duration) -> Lease<'_> {
        let give_up = Instant::now() + wait;
        let after = Lease {
            owner: None,
            placed: Placed::AfterHandshake,
        };
        let Ok(mut s) = self.state.lock() else {
            return after;
        };
        loop {
            let free = s.holders == 0;
            let target = want.map_or(Mode::Defaults, |(w, f)| Mode::Set(w, f));
            let ready = match (s.mode, want) {
                (m, _) if m == target => true,
                // Nobody holds the defaults: set the buffers for this window.
                (Mode::Defaults, Some((w, force))) if free => {
                    let set = s.handle.as_ref().is_some_and(|h| {
                        crate::platform::sockopt::set_buffers(h, w, force).is_ok()
                    });
                    if !set {
                        // The listener may carry part of it: have it re-opened.
                        s.mode = Mode::Stale;
                        self.changed.notify_all();
                        return after;
                    }
                    s.mode = target;
                    true
                }
                // A window nobody holds any more, wanted again: still on the listener.
                _ => false,
            };
            if ready {
                s.holders += 1;
                return Lease {
                    owner: Some(self),
                    placed: Placed::BeforeHandshake,
                };
            }
            let now = Instant::now();
            if now >= give_up {
                return after;
            }
            match self.changed.wait_timeout(s, give_up - now) {
                Ok((guard, _)) => s = guard,
                Err(_) => return after,
            }
        }
    }

    /// Lets go of the listener's handle when the server stops: the port is free once the
    /// accept loop's own descriptor closes, though a test's thread may still hold these
    /// buffers (a server started on the port again at once, as a lab's next test does, found it
    /// in use under load). A lease after this sets nothing: the buffers go on after the
    /// handshake.
    pub fn close(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.handle = None;
        }
    }

    /// The lease of a test's stream setup: its window for TCP, none for UDP (no listener);
    /// `log` hears when the buffers can only be set after the handshake.
    pub fn lease_for(&self, spec: &TestSpec, log: impl Fn(&str)) -> Option<Lease<'_>> {
        if spec.protocol != Protocol::Tcp {
            return None;
        }
        let lease = self.lease(want(spec), LEASE_WAIT);
        if lease.placed == Placed::AfterHandshake {
            log(AFTER_HANDSHAKE);
        }
        Some(lease)
    }

    /// Called by the accept loop between accepts: when the listener carries buffers nobody
    /// needs, or (`after_accept`: a connection, perhaps a test's, just came) defaults the
    /// kernel no longer has, drains its queue into `dispatch` and re-opens it with the
    /// kernel's defaults. The defaults are read only after an accept, not on every idle turn
    /// of the loop. A listener that could not be re-opened stays as it is, and the error says
    /// why.
    pub fn refresh(
        &self,
        listener: &mut TcpListener,
        after_accept: bool,
        dispatch: impl FnMut(std::net::TcpStream, std::net::SocketAddr),
    ) -> std::io::Result<()> {
        let Ok(mut s) = self.state.lock() else {
            return Ok(());
        };
        let moved = match s.mode {
            Mode::Defaults if after_accept => self
                .defaults_moved(listener)
                .filter(|now| s.renewed_for != Some(*now)),
            _ => None,
        };
        if (s.mode != Mode::Stale && moved.is_none()) || s.holders > 0 {
            return Ok(());
        }
        if moved.is_some() {
            s.renewed_for = moved;
        }
        drain(listener, dispatch);
        let fresh = reopen(listener);
        if let Ok(fresh) = &fresh {
            s.handle = fresh.try_clone().ok();
        }
        // Defaults again, or (the listener kept) no use retrying at every accept.
        s.mode = Mode::Defaults;
        drop(s);
        self.changed.notify_all();
        *listener = fresh?;
        Ok(())
    }
}

/// Accepts what waits in `listener`'s queue now, without blocking.
fn drain(
    listener: &TcpListener,
    mut dispatch: impl FnMut(std::net::TcpStream, std::net::SocketAddr),
) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    // Bounded: a queue holds at most the backlog (and a flood is no reason to never re-open).
    for _ in 0..BACKLOG {
        match listener.accept() {
            Ok((conn, peer)) => {
                let _ = conn.set_nonblocking(false);
                dispatch(conn, peer);
            }
            Err(_) => break,
        }
    }
    let _ = listener.set_nonblocking(false);
}

/// A new listening socket on `old`'s address, with the kernel's default buffers. On Linux
/// `old` stops listening first but keeps its port (shutdown of a listener), so if the new one
/// cannot be bound the old one listens again; elsewhere the old one is closed first, as
/// iperf3 does. A connection arriving in between is refused.
fn reopen(old: &mut TcpListener) -> std::io::Result<TcpListener> {
    let addr = old.local_addr()?;
    let sref = SockRef::from(&*old);
    let v6only = if addr.is_ipv6() {
        sref.only_v6().ok()
    } else {
        None
    };
    let fresh = || -> std::io::Result<TcpListener> {
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
        s.set_reuse_address(true)?;
        if let Some(v) = v6only {
            s.set_only_v6(v)?;
        }
        s.bind(&addr.into())?;
        s.listen(BACKLOG)?;
        Ok(s.into())
    };
    if cfg!(target_os = "linux") && sref.shutdown(std::net::Shutdown::Read).is_ok() {
        return fresh().inspect_err(|_| {
            let _ = sref.listen(BACKLOG);
        });
    }
    // Close the old listener (a placeholder takes its place until the new one is bound).
    let placeholder = std::net::TcpListener::bind((addr.ip(), 0))?;
    drop(std::mem::replace(old, placeholder));
    let mut last = None;
    for _ in 0..10 {
        match fresh() {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("could not re-open the listener")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::sockopt;
    use std::net::TcpStream;

    fn rcvbuf_of_accepted(l: &mut TcpListener) -> u64 {
        let addr = l.local_addr().unwrap();
        let _c = TcpStream::connect(addr).unwrap();
        let (s, _) = l.accept().unwrap();
        sockopt::buffer_sizes(&s).1
    }

    #[test]
    fn a_lease_sets_the_buffers_accepted_sockets_are_born_with_and_the_listener_is_renewed() {
        let mut l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let defaults = rcvbuf_of_accepted(&mut l);
        let bufs = ListenerBuffers::new(&l);
        let want = 96 * 1024;
        {
            let lease = bufs.lease(Some((want, false)), Duration::from_millis(100));
            assert_eq!(lease.placed, Placed::BeforeHandshake);
            let got = rcvbuf_of_accepted(&mut l);
            assert!(got >= want && got != defaults, "{got} vs asked {want}");
            // Another test of the same window shares it; one of another waits, then gives up.
            let same = bufs.lease(Some((want, false)), Duration::from_millis(50));
            assert_eq!(same.placed, Placed::BeforeHandshake);
            let other = bufs.lease(None, Duration::from_millis(50));
            assert_eq!(other.placed, Placed::AfterHandshake);
        }
        let mut drained = 0;
        bufs.refresh(&mut l, true, |_, _| drained += 1).unwrap();
        assert_eq!(l.local_addr().unwrap().port(), port, "the same port");
        assert_eq!(rcvbuf_of_accepted(&mut l), defaults, "the defaults again");
        assert_eq!(
            bufs.lease(None, Duration::ZERO).placed,
            Placed::BeforeHandshake
        );
    }

    /// A listener made under other kernel defaults than the ones in force is re-opened (its
    /// queue handed on first); one on the defaults in force is left alone.
    #[test]
    fn a_listener_made_under_other_kernel_defaults_is_renewed() {
        fn moved() -> Option<(u64, u64)> {
            Some((4096, 4096))
        }
        let queued = |l: &TcpListener| TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let mut l = TcpListener::bind("127.0.0.1:0").unwrap();
        if cfg!(target_os = "linux") {
            let kept = ListenerBuffers::new(&l);
            let _c = queued(&l);
            let mut drained = 0;
            kept.refresh(&mut l, true, |_, _| drained += 1).unwrap();
            assert_eq!(drained, 0, "the defaults in force: left alone");
        }
        let port = l.local_addr().unwrap().port();
        let renewed = ListenerBuffers::with_kernel_defaults(&l, moved);
        let _c = queued(&l);
        let mut drained = 0;
        renewed.refresh(&mut l, true, |_, _| drained += 1).unwrap();
        assert!(drained >= 1, "re-opened, its queue handed on first");
        assert_eq!(l.local_addr().unwrap().port(), port, "the same port");
        // Once re-opened for those defaults, a listener that still differs (a kernel that
        // sets a listener's buffers otherwise) is not re-opened again and again.
        let _c = queued(&l);
        let mut drained = 0;
        renewed.refresh(&mut l, true, |_, _| drained += 1).unwrap();
        assert_eq!(drained, 0, "re-opened once for one change of the defaults");
        // Without the kernel's word nothing is renewed.
        let unknown = ListenerBuffers::with_kernel_defaults(&l, || None);
        let _c = queued(&l);
        let mut drained = 0;
        unknown.refresh(&mut l, true, |_, _| drained += 1).unwrap();
        assert_eq!(drained, 0);
    }

    #[test]
    fn a_waiting_lease_gets_the_listener_once_the_other_window_is_released() {
        let mut l = TcpListener::bind("127.0.0.1:0").unwrap();
        let bufs = ListenerBuffers::new(&l);
        std::thread::scope(|scope| {
            let first = bufs.lease(Some((200_000, false)), Duration::ZERO);
            assert_eq!(first.placed, Placed::BeforeHandshake);
            let waiter = scope.spawn(|| {
                bufs.lease(Some((300_000, false)), Duration::from_secs(5))
                    .placed
            });
            std::thread::sleep(Duration::from_millis(50));
            drop(first);
            // The accept loop renews the listener between accepts.
            let until = Instant::now() + Duration::from_secs(5);
            while !waiter.is_finished() && Instant::now() < until {
                bufs.refresh(&mut l, true, |_, _| {}).unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(waiter.join().unwrap(), Placed::BeforeHandshake);
        });
        assert!(rcvbuf_of_accepted(&mut l) >= 300_000);
    }

    #[test]
    fn a_closed_server_frees_its_port_while_a_test_still_holds_the_buffers() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let buffers = std::sync::Arc::new(ListenerBuffers::new(&l));
        let held = buffers.clone(); // a test's thread, still finishing
        drop(l);
        assert!(TcpListener::bind(addr).is_err(), "the kept handle listens");
        buffers.close();
        drop(buffers);
        let again = TcpListener::bind(addr).expect("the port is free");
        assert_eq!(again.local_addr().unwrap(), addr);
        let lease = held.lease(Some((1 << 20, false)), Duration::ZERO);
        assert_eq!(
            lease.placed,
            Placed::AfterHandshake,
            "nothing to set any more"
        );
    }
}
