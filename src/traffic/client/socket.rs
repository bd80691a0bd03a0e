//! The client's sockets, shared by netsweep's session and iperf3's: where they are bound, how
//! long a connect may take, `--cport`'s numbering, MPTCP, `-L`'s flow label, the spec's socket
//! options set before connect, and the words for a connection that failed.

use crate::traffic::measure::SocketInfo;
use crate::traffic::protocol;
use crate::traffic::result::TestResult;
use crate::traffic::session;
use crate::traffic::spec::{
    Flow, IPERF3_UDP_LENGTH, Protocol, TestSpec, UDP_HEADER_BYTES, UDP_MAX_PAYLOAD,
};
use socket2::{Domain, SockAddr, Socket, Type};
use std::net::{IpAddr, SocketAddr, SocketAddrV6, TcpStream, UdpSocket};
use std::time::Duration;

/// Where the client's sockets are bound (`-B`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    Address(IpAddr),
    Device(String),
}

/// Which protocol the server speaks. A netsweep server and an iperf3 server answer netsweep's
/// greeting differently at once (`greeting`), so either is found without a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeerProtocol {
    /// A netsweep server; an iperf3 server that answers instead runs the test in iperf3's
    /// protocol, with a warning.
    #[default]
    Netsweep,
    /// An iperf3 server (`--iperf3`): iperf3's protocol from the first byte.
    Iperf3,
    /// Either, as on iperf3's port 5201: an iperf3 server there is no surprise.
    Detect,
}

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub server: SocketAddr,
    pub peer: PeerProtocol,
    pub bind: Option<Bind>,
    pub connect_timeout: Duration,
    /// `--cport`: data stream `i` binds this local port plus `i` (iperf3's numbering).
    pub cport: Option<u16>,
    /// `-m`/`--mptcp`: data connections are MPTCP (the kernel's `net.mptcp.enabled`).
    pub mptcp: bool,
    /// `-Z`: an iperf3 server that sends (`-R`, `--bidir`) is asked to send with sendfile(2),
    /// as iperf3's client asks it (the `zerocopy` parameter). This end's senders choose their
    /// own path either way.
    pub far_zerocopy: bool,
    /// No `-l` on iperf3's command line: an iperf3 server that sends (`-R`) is asked for
    /// iperf3's 128 KiB blocks, as iperf3's client asks it, not netsweep's 1 MiB writes (the
    /// same command gave it other writes, and another rate, than iperf3's client does).
    pub iperf3_blocks: bool,
    /// `-u` without `-l` on the command line: datagrams of the control connection's MSS, as
    /// iperf3's client picks them (1448 bytes on a 1500-byte path, 8948 with 9000-byte jumbo
    /// frames; iperf3's 1460 when the MSS is unknown), not netsweep's own 1400.
    pub udp_path_datagrams: bool,
    /// `--get-server-output`: keep the far end's own account of the test in the result.
    pub server_output: bool,
    /// What the command line's conversion chose for the user and should tell them at the start
    /// (a default rate, a flag accepted as a no-op).
    pub notes: Vec<String>,
    /// iperf3 authentication (`--username`): sent to iperf3 servers only.
    pub auth: Option<std::sync::Arc<crate::traffic::iperf3::login::ClientAuth>>,
    /// `--rcv-timeout`: a test whose receiving streams get nothing for this long ends with
    /// iperf3's "idle timeout for receiving data" (iperf3's default, 120 s).
    pub rcv_timeout: Duration,
    /// The scheduled test's secret a netsweep server admits it by (pScheduler's server
    /// participant: `traffic::server::Scheduled`), sent with the request and the check.
    pub ticket: Option<String>,
    /// What is known of the path for RFC 6349's metrics (`--path-rate`, `--baseline-rtt`, a
    /// lab's rate and RTT); the MTU is read from the route when not given.
    pub path: crate::analysis::rfc6349::PathFacts,
    /// `--udp-counters-64bit`: UDP datagrams to an iperf3 server carry 64-bit sequence
    /// numbers (the `udp_counters_64bit` parameter); netsweep's own always do.
    pub udp_counters_64bit: bool,
    /// `-L`: the IPv6 flow label of the data connections (this end's packets; as iperf3, the
    /// control connection keeps the kernel's own).
    pub flowlabel: Option<u32>,
    /// `-T` and `--extra-data`: told to an iperf3 server (its `-J` document carries them, as
    /// with iperf3's client).
    pub title: Option<String>,
    pub extra_data: Option<String>,
    /// `--cntl-ka` and `--snd-timeout`: set on the connections this client opens.
    pub liveness: crate::traffic::liveness::Liveness,
    /// `netsweep -c HOST` without `-p`: the port tried, telling either server apart, when
    /// nothing listens on netsweep's (iperf3's 5201).
    pub port_fallback: Option<u16>,
    /// Told this end's data connections once they are up, before the test starts (iperf3's
    /// "local ... connected to ..." lines, printed then).
    pub connected: Option<OnConnected>,
    /// The interactive command line's Ctrl-C: the first ends a timed netsweep test at the end
    /// of the interval running, with both ends' counts, as it ends a `-t 0` test, and is told
    /// here when heard with where the measured part now ends; a second stops the test at
    /// once. Absent (campaigns, the lab, tune): an interrupt stops the test at once and the
    /// flag stays up for the caller (a `-t 0` test still ends at its interval's end).
    pub interrupt: Option<OnInterrupt>,
}

/// What is called when an interrupt was heard, with where the test's measured part now ends.
pub type InterruptFn = dyn Fn(Duration) + Send + Sync;

/// Called when a first interrupt was heard (`ClientConfig::interrupt`).
#[derive(Clone)]
pub struct OnInterrupt(pub std::sync::Arc<InterruptFn>);

impl std::fmt::Debug for OnInterrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnInterrupt")
    }
}

/// What is called with this end's data connections once they are up, and whether the far
/// end reports its figures each interval (a netsweep server does, iperf3's does not).
pub type ConnectedFn = dyn Fn(&[SocketInfo], bool) + Send + Sync;

/// Called with this end's data connections once they are up (on the test's own thread).
#[derive(Clone)]
pub struct OnConnected(pub std::sync::Arc<ConnectedFn>);

impl std::fmt::Debug for OnConnected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnConnected")
    }
}

impl ClientConfig {
    pub fn new(server: SocketAddr) -> ClientConfig {
        ClientConfig {
            server,
            peer: PeerProtocol::default(),
            bind: None,
            connect_timeout: Duration::from_secs(5),
            cport: None,
            mptcp: false,
            far_zerocopy: false,
            iperf3_blocks: false,
            udp_path_datagrams: false,
            server_output: false,
            notes: Vec::new(),
            auth: None,
            rcv_timeout: crate::traffic::session::DEFAULT_RCV_TIMEOUT,
            ticket: None,
            path: crate::analysis::rfc6349::PathFacts::default(),
            udp_counters_64bit: false,
            flowlabel: None,
            title: None,
            extra_data: None,
            liveness: crate::traffic::liveness::Liveness::default(),
            port_fallback: None,
            connected: None,
            interrupt: None,
        }
    }

    /// Tells `connected` (when asked) this end's data connections.
    pub(crate) fn tell_connected(&self, sockets: &[SocketInfo], far_intervals: bool) {
        if let Some(told) = &self.connected {
            (told.0)(sockets, far_intervals);
        }
    }

    /// `spec` with the datagrams `udp_path_datagrams` asks for, once the control connection
    /// `ctrl` is open: its MSS (iperf3's `ctrl_sck_mss`), as iperf3's client reads it.
    pub(crate) fn path_datagrams<'a>(
        &self,
        spec: &'a TestSpec,
        ctrl: &TcpStream,
    ) -> std::borrow::Cow<'a, TestSpec> {
        if !self.udp_path_datagrams || spec.protocol != Protocol::Udp {
            return std::borrow::Cow::Borrowed(spec);
        }
        let mss = crate::platform::sockopt::tcp_info(ctrl)
            .ok()
            .map(|i| i.snd_mss)
            .filter(|m| *m > 0);
        let mut spec = spec.clone();
        spec.length_bytes = mss
            .unwrap_or(IPERF3_UDP_LENGTH)
            .clamp(UDP_HEADER_BYTES, UDP_MAX_PAYLOAD);
        std::borrow::Cow::Owned(spec)
    }

    /// The same client towards `port` of the same server, telling an iperf3 server from a
    /// netsweep one by itself unless iperf3's protocol was asked: `port_fallback`'s move.
    pub fn on_port(&self, port: u16) -> ClientConfig {
        let mut moved = self.clone();
        moved.server.set_port(port);
        moved.port_fallback = None;
        if moved.peer == PeerProtocol::Netsweep {
            moved.peer = PeerProtocol::Detect;
        }
        moved
    }
}

/// A test that failed; `partial` holds what was measured before the failure.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct TestError {
    pub message: String,
    pub partial: Option<Box<TestResult>>,
    /// The control connection was refused: nothing listens on the server's port.
    pub refused: bool,
}

impl TestError {
    pub(crate) fn new(message: impl Into<String>) -> TestError {
        TestError {
            message: message.into(),
            partial: None,
            refused: false,
        }
    }

    /// The control connection to `server` failed with `e`: the advice for it.
    pub(crate) fn connect(server: SocketAddr, e: &std::io::Error) -> TestError {
        TestError {
            refused: e.kind() == std::io::ErrorKind::ConnectionRefused,
            ..TestError::new(connect_advice(server, e))
        }
    }
}

impl From<protocol::ProtocolError> for TestError {
    fn from(e: protocol::ProtocolError) -> Self {
        match e {
            protocol::ProtocolError::Closed => TestError::new(
                "the server closed the control connection (this end did not): the server's log \
                 says why",
            ),
            e => TestError::new(e.to_string()),
        }
    }
}

/// A control-channel failure while `stage` ("before answering the test request"), naming
/// which end ended it and where to look.
pub(crate) fn control_failed(
    server: std::net::SocketAddr,
    stage: &str,
    e: protocol::ProtocolError,
) -> TestError {
    let gone = "the server's log says why; a server that stopped or restarted (a VM guest's, \
                when its guest restarts) drops the tests it runs";
    match e {
        protocol::ProtocolError::Closed => TestError::new(format!(
            "the server {server} closed the control connection {stage} (this end did not): {gone}"
        )),
        protocol::ProtocolError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionReset => {
            TestError::new(format!(
                "the server {server}'s host reset the control connection {stage}: {gone}"
            ))
        }
        e => TestError::new(format!("{server}: {e} ({stage})")),
    }
}

pub(crate) fn new_socket(
    cfg: &ClientConfig,
    ty: Type,
    proto: socket2::Protocol,
    local_port: Option<u16>,
) -> std::io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(cfg.server), ty, Some(proto))?;
    let any = || match cfg.server {
        SocketAddr::V4(_) => IpAddr::from([0u8; 4]),
        SocketAddr::V6(_) => IpAddr::from([0u16; 8]),
    };
    match &cfg.bind {
        Some(Bind::Address(ip)) => sock.bind(&SockAddr::from(SocketAddr::new(
            *ip,
            local_port.unwrap_or(0),
        )))?,
        Some(Bind::Device(dev)) => {
            crate::platform::sockopt::bind_device(&sock, dev, cfg.server.is_ipv6()).map_err(
                |e| std::io::Error::new(e.kind(), format!("binding to device {dev:?}: {e}")),
            )?;
            if let Some(port) = local_port {
                sock.bind(&SockAddr::from(SocketAddr::new(any(), port)))?;
            }
        }
        None => {
            if let Some(port) = local_port {
                sock.bind(&SockAddr::from(SocketAddr::new(any(), port)))?;
            }
        }
    }
    Ok(sock)
}

/// The local port of data stream `stream` with `--cport`: iperf3's numbering, one port per
/// stream from the given one up (the client's sending streams first).
fn stream_port(cfg: &ClientConfig, stream: u16) -> std::io::Result<Option<u16>> {
    cfg.cport
        .map(|p| {
            p.checked_add(stream).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("--cport {p}: stream {stream} would need a port above 65535"),
                )
            })
        })
        .transpose()
}

/// A TCP connection to the server: the control connection (`data` absent), or data stream
/// `data.1` of a test, with the spec's socket options set before connect, the `--cport`
/// numbering and, with `-m`, MPTCP.
pub(crate) fn connect_tcp(
    cfg: &ClientConfig,
    data: Option<(&TestSpec, u16)>,
) -> std::io::Result<TcpStream> {
    let (proto, port) = match data {
        Some((_, i)) if cfg.mptcp => (
            crate::platform::sockopt::mptcp_protocol().ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "-m/--mptcp: this system has no MPTCP",
                )
            })?,
            stream_port(cfg, i)?,
        ),
        Some((_, i)) => (socket2::Protocol::TCP, stream_port(cfg, i)?),
        None => (socket2::Protocol::TCP, None),
    };
    let sock = new_socket(cfg, Type::STREAM, proto, port).map_err(|e| match port {
        Some(p) if e.kind() == std::io::ErrorKind::AddrInUse => {
            std::io::Error::new(e.kind(), format!("--cport: local port {p} is in use ({e})"))
        }
        _ if proto != socket2::Protocol::TCP => std::io::Error::new(
            e.kind(),
            format!("-m/--mptcp: this kernel refused an MPTCP socket ({e}): see net.mptcp.enabled"),
        ),
        _ => e,
    })?;
    if let Some((spec, _)) = data {
        // Before connect: the window scale and the advertised MSS are fixed by the SYN.
        if let Some(mss) = spec.mss_bytes {
            sock.set_tcp_mss(mss)?;
        }
        let stream: TcpStream = sock.try_clone()?.into();
        session::prepare_tcp(&stream, spec)?;
        cfg.liveness.data(&sock)?;
    } else {
        cfg.liveness.control(&sock)?;
    }
    let to = match data {
        Some(_) => data_destination(cfg, &sock, cfg.server.port())?,
        None => cfg.server,
    };
    sock.connect_timeout(&SockAddr::from(to), cfg.connect_timeout)?;
    Ok(sock.into())
}

/// Where a data socket connects: the server's address and `port`, with `-L`'s flow label as
/// the destination's flowinfo once it is leased on `sock` (iperf3's `iperf_tcp_connect`).
fn data_destination(cfg: &ClientConfig, sock: &Socket, port: u16) -> std::io::Result<SocketAddr> {
    let to = SocketAddr::new(cfg.server.ip(), port);
    let Some(label) = cfg.flowlabel else {
        return Ok(to);
    };
    let SocketAddr::V6(v6) = to else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            flowlabel_needs_ipv6(cfg.server.ip()),
        ));
    };
    crate::platform::sockopt::lease_flowlabel(sock, *v6.ip(), label).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("-L/--flowlabel {label}: the kernel refused the flow label ({e})"),
        )
    })?;
    // sockaddr_in6's flowinfo is in network byte order; socket2 copies it as given.
    Ok(SocketAddr::V6(SocketAddrV6::new(
        *v6.ip(),
        port,
        label.to_be(),
        v6.scope_id(),
    )))
}

/// Why `-L` cannot be used towards `server`.
pub fn flowlabel_needs_ipv6(server: IpAddr) -> String {
    format!(
        "-L/--flowlabel: {server} is not an IPv6 address, and flow labels are IPv6's (give the \
         server's IPv6 address, or -6 with its name)"
    )
}

pub(crate) fn connect_advice(server: SocketAddr, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused
            if server.port() == crate::traffic::protocol::DEFAULT_PORT =>
        {
            format!(
                "unable to connect to server {server}: Connection refused: nothing listens on \
                 {server} (netsweep's default port; iperf3's is 5201: add -p 5201 --iperf3 to \
                 test an iperf3 server); is `netsweep server` running there?"
            )
        }
        std::io::ErrorKind::ConnectionRefused => {
            // Either program may be the server a client in iperf3's mode meets.
            format!(
                "unable to connect to server {server}: Connection refused: is a server \
                 (`netsweep server -p {0}`, or `iperf3 -s -p {0}`) running there?",
                server.port()
            )
        }
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!(
                "unable to connect to server {server}: timed out: check the address and any \
                 firewall"
            )
        }
        _ => format!("unable to connect to server {server}: {e}"),
    }
}

/// A UDP socket of one stream, connected to the server's port for it; `end` says whose
/// receive buffer a receiving stream keeps (`UdpEnd::netsweep` or `UdpEnd::iperf3` of
/// whether the stream is the server's to send).
pub(crate) fn udp_socket(
    cfg: &ClientConfig,
    spec: &TestSpec,
    (flow, stream): (Flow, u16),
    port: u16,
    end: fn(bool) -> session::UdpEnd,
) -> std::io::Result<UdpSocket> {
    let local = stream_port(cfg, stream)?;
    let sock = new_socket(cfg, Type::DGRAM, socket2::Protocol::UDP, local)?;
    if local.is_none() && !matches!(cfg.bind, Some(Bind::Address(_))) {
        let any: SocketAddr = if cfg.server.is_ipv4() {
            "0.0.0.0:0".parse()
        } else {
            "[::]:0".parse()
        }
        .map_err(|_| std::io::Error::other("address literal"))?;
        sock.bind(&SockAddr::from(any))?;
    }
    let to = data_destination(cfg, &sock, port)?;
    let sock: UdpSocket = sock.into();
    session::prepare_udp(&sock, spec, end(flow == Flow::ServerToClient))?;
    socket2::SockRef::from(&sock).connect(&SockAddr::from(to))?;
    Ok(sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-L`'s flow label is on the data connections' packets, TCP and UDP: the receiving end
    /// reads it back from its kernel (TCP: the label of the last segment in order, IPV6_FL_F_REMOTE;
    /// UDP: the IPV6_FLOWINFO control message); the control connection keeps the kernel's own.
    #[cfg(target_os = "linux")]
    #[test]
    fn data_sockets_carry_the_flow_label_asked() {
        use crate::platform::sockopt;
        use std::io::{Read, Write};
        let Ok(listener) = std::net::TcpListener::bind("[::1]:0") else {
            eprintln!("skipped: this host has no IPv6 loopback");
            return;
        };
        sockopt::keep_remote_flowlabel(&listener).unwrap();
        let mut cfg = ClientConfig::new(listener.local_addr().unwrap());
        cfg.flowlabel = Some(0x12345);
        let spec = TestSpec::tcp(Duration::from_secs(1));
        let label_seen = |data: Option<(&TestSpec, u16)>| {
            let mut out = connect_tcp(&cfg, data).unwrap();
            out.write_all(b"labelled").unwrap();
            let (mut got, _) = listener.accept().unwrap();
            got.read_exact(&mut [0u8; 8]).unwrap();
            sockopt::remote_flowlabel(&got).unwrap()
        };
        assert_eq!(label_seen(Some((&spec, 0))), 0x12345);
        assert_ne!(label_seen(None), 0x12345);

        let rx = UdpSocket::bind("[::1]:0").unwrap();
        sockopt::keep_remote_flowlabel(&rx).unwrap();
        let udp = TestSpec::udp(Duration::from_secs(1));
        let port = rx.local_addr().unwrap().port();
        let end = session::UdpEnd::netsweep;
        let tx = udp_socket(&cfg, &udp, (Flow::ClientToServer, 0), port, end).unwrap();
        tx.send(b"labelled").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut label = None;
        sockopt::recv_with_cmsgs(&rx, &mut [0u8; 64], 0, |level, kind, data| {
            if level == libc::IPPROTO_IPV6 && kind == libc::IPV6_FLOWINFO && data.len() >= 4 {
                label = Some(u32::from_be_bytes([data[0], data[1], data[2], data[3]]) & 0xf_ffff);
            }
        })
        .unwrap();
        assert_eq!(label, Some(0x12345));

        // Towards IPv4 the label cannot be set: the error says why.
        let mut v4 = ClientConfig::new("127.0.0.1:9".parse().unwrap());
        v4.flowlabel = Some(7);
        let e = connect_tcp(&v4, Some((&spec, 0))).unwrap_err();
        assert!(e.to_string().contains("not an IPv6 address"), "{e}");
    }

    /// `--bind-dev`/`-B DEV` naming a device this host lacks says which device.
    #[test]
    fn a_missing_device_is_named() {
        let mut cfg = ClientConfig::new("127.0.0.1:5201".parse().unwrap());
        cfg.bind = Some(Bind::Device("nosuchdev0".into()));
        let Err(e) = new_socket(&cfg, Type::STREAM, socket2::Protocol::TCP, None) else {
            panic!("a socket bound to a device this host lacks");
        };
        assert!(e.to_string().contains("device \"nosuchdev0\""), "{e}");
    }
}
