//! A netsweep test's data streams on the server: binding its UDP sockets and collecting its TCP and UDP streams as they arrive, each against the test's token and deadlines.

use super::*;

/// What the collectors of a test's data connections check them against.
pub(super) struct Setup<'a> {
    /// The control connection: when it closes, setup ends at once.
    pub(super) ctrl: &'a TcpStream,
    pub(super) flows: &'a [Flow],
    pub(super) peer_ip: IpAddr,
}

impl Setup<'_> {
    /// Why setup ends early or late, if it does.
    fn gave_up(&self, clock: &StreamClock, got: usize) -> Option<String> {
        admission::setup_gave_up(self.ctrl, clock, got, self.flows.len(), "data connections")
    }
}

/// Where a test's UDP streams greet the server: on its port, or on a socket of their own each.
pub(super) enum UdpStreams<'a> {
    /// The hellos that reach the port's socket (`at`) for this test's token, until the
    /// registration drops.
    OnPort {
        at: SocketAddr,
        hellos: Receiver<(u16, SocketAddr)>,
        registration: Registration<'a, Sender<(u16, SocketAddr)>>,
    },
    Own(Vec<UdpSocket>),
}

/// How a stream's socket is made ready for its flow once it is its own.
pub(super) type PrepareUdp<'a> = &'a dyn Fn(&UdpSocket, Flow) -> std::io::Result<()>;

impl<'a> UdpStreams<'a> {
    /// The test's UDP streams greet the server's own port where it takes datagrams there (as
    /// iperf3's do: one port to open in a firewall), else a socket each that `own` binds.
    pub(super) fn open(
        shared: &'a Shared,
        ctrl: &TcpStream,
        token: Token,
        own: impl FnOnce(IpAddr) -> anyhow::Result<Vec<UdpSocket>>,
    ) -> anyhow::Result<UdpStreams<'a>> {
        let local = ctrl.local_addr()?;
        Ok(match shared.iperf3.udp_addr(local.port()) {
            Some(at) => {
                let (tx, rx) = mpsc::channel();
                UdpStreams::OnPort {
                    at,
                    hellos: rx,
                    registration: Registration::new(&shared.udp_hellos, token, tx),
                }
            }
            None => UdpStreams::Own(own(local.ip())?),
        })
    }

    /// The port each of `n` streams greets, for the client.
    pub(super) fn ports(&self, n: usize) -> std::io::Result<Vec<u16>> {
        match self {
            UdpStreams::OnPort { at, .. } => Ok(vec![at.port(); n]),
            UdpStreams::Own(socks) => socks
                .iter()
                .map(|s| s.local_addr().map(|a| a.port()))
                .collect(),
        }
    }

    /// Waits for each stream's hello; a stream greeting the server's port gets its own socket
    /// there, readied by `prepare`.
    pub(super) fn collect(
        self,
        token: &Token,
        setup: &Setup<'_>,
        clock: &mut StreamClock,
        prepare: PrepareUdp<'_>,
    ) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
        match self {
            UdpStreams::OnPort {
                at,
                hellos,
                registration,
            } => {
                let got = collect_udp_on_port((&hellos, token), at, setup, clock, prepare);
                drop(registration);
                got
            }
            UdpStreams::Own(socks) => collect_udp(socks, token, setup, clock),
        }
    }
}

/// Binds one UDP socket per stream on the control connection's local address.
pub(super) fn bind_udp(
    spec: &TestSpec,
    flows: &[Flow],
    ip: IpAddr,
) -> anyhow::Result<Vec<UdpSocket>> {
    flows
        .iter()
        .map(|flow| {
            let s = UdpSocket::bind(SocketAddr::new(ip, 0))?;
            let end = session::UdpEnd::netsweep(*flow == Flow::ClientToServer);
            session::prepare_udp(&s, spec, end)?;
            Ok(s)
        })
        .collect()
}

/// Waits for every TCP data connection of the test, while the client is alive and its
/// connections keep coming (`clock`).
pub(super) fn collect_tcp(
    rx: &Receiver<(u16, TcpStream)>,
    spec: &TestSpec,
    setup: &Setup<'_>,
    clock: &mut StreamClock,
    expecting: Option<&mut Expecting<'_>>,
) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
    let mut got: Vec<Option<TcpStream>> = (0..setup.flows.len()).map(|_| None).collect();
    // A data connection must name a stream of this test, once.
    let want = (setup.ctrl, setup.peer_ip, setup.flows.len());
    admission::collect_connections(rx, want, clock, expecting, |id, sock| {
        match got.get_mut(usize::from(id)) {
            Some(slot @ None) => {
                session::prepare_tcp(&sock, spec)?;
                *slot = Some(sock);
                Ok(true)
            }
            _ => Ok(false),
        }
    })?;
    Ok(numbered(got, setup.flows, StreamSocket::Tcp))
}

/// The streams that arrived, each with its number and flow.
fn numbered<S>(
    got: Vec<Option<S>>,
    flows: &[Flow],
    wrap: fn(S) -> StreamSocket,
) -> Vec<(u16, Flow, StreamSocket)> {
    got.into_iter()
        .zip(flows)
        .enumerate()
        .filter_map(|(i, (s, f))| s.map(|s| (i as u16, *f, wrap(s))))
        .collect()
}

/// Waits for each UDP socket's hello (with the test's token and the stream's number) from the
/// control peer, then connects it to that sender: a datagram from anyone else, or without the
/// token, never takes a stream.
fn collect_udp(
    sockets: Vec<UdpSocket>,
    token: &Token,
    setup: &Setup<'_>,
    clock: &mut StreamClock,
) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
    let mut out = Vec::with_capacity(sockets.len());
    for (i, (sock, flow)) in sockets.into_iter().zip(setup.flows).enumerate() {
        let mut buf = [0u8; 64];
        loop {
            if let Some(why) = setup.gave_up(clock, i) {
                anyhow::bail!("{why}: is UDP blocked on the path?");
            }
            let wait = clock.wait(Duration::from_millis(100));
            sock.set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let hello = protocol::parse_udp_hello(&buf[..n]);
            if from.ip().to_canonical() == setup.peer_ip.to_canonical()
                && hello == Some((*token, i as u16))
            {
                sock.connect(from)?;
                // The echo tells the client the path works (and opens NATs for reverse mode).
                sock.send(&buf[..n])?;
                clock.progressed();
                break;
            }
        }
        out.push((i as u16, *flow, StreamSocket::Udp(sock)));
    }
    Ok(out)
}

/// Gives each stream whose hello reached the server's port (`at`) from the control peer a
/// socket of its own on that port, connected to the sender, and echoes the hello: the kernel
/// then delivers that sender's datagrams to it, as iperf3's server does with its streams.
/// A hello from another address, for a stream out of range or already given, takes nothing.
fn collect_udp_on_port(
    (hellos, token): (&Receiver<(u16, SocketAddr)>, &Token),
    at: SocketAddr,
    setup: &Setup<'_>,
    clock: &mut StreamClock,
    prepare: PrepareUdp<'_>,
) -> anyhow::Result<Vec<(u16, Flow, StreamSocket)>> {
    let mut got: Vec<Option<UdpSocket>> = (0..setup.flows.len()).map(|_| None).collect();
    loop {
        let given = got.iter().flatten().count();
        if given == got.len() {
            break;
        }
        if let Some(why) = setup.gave_up(clock, given) {
            anyhow::bail!("{why}: is UDP blocked on the path?");
        }
        let wait = clock.wait(Duration::from_millis(100));
        let Ok((i, from)) = hellos.recv_timeout(wait.max(Duration::from_millis(1))) else {
            continue;
        };
        let (Some(slot @ None), Some(flow)) =
            (got.get_mut(usize::from(i)), setup.flows.get(usize::from(i)))
        else {
            continue;
        };
        if from.ip().to_canonical() != setup.peer_ip.to_canonical() {
            continue;
        }
        let sock = crate::traffic::iperf3::server::bind_udp(at)?;
        prepare(&sock, *flow)?;
        sock.connect(from)?;
        // The echo tells the client the path works (and opens NATs for reverse mode).
        sock.send(&protocol::udp_hello(token, i))?;
        *slot = Some(sock);
        clock.progressed();
    }
    Ok(numbered(got, setup.flows, StreamSocket::Udp))
}
