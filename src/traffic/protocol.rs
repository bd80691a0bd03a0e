//! The control protocol shared by `client` and `server`.
//!
//! Every TCP connection to a server starts with an 8-byte preamble: `NSCTRL` plus the protocol
//! version for a control connection, `NSDATA01` plus the test's 16-byte token and a stream id
//! for a data connection. A client's control preamble is the start of a greeting as long as an
//! iperf3 cookie (`GREETING_LEN`): a netsweep server answers with its own preamble, an iperf3
//! server takes the greeting as a cookie and asks for the parameters, so the client knows at
//! the first answer which server it reached, with no wait. Control messages then travel as frames: a 4-byte big-endian
//! length, checked against `MAX_FRAME` before anything is allocated, and a JSON body holding a
//! typed message (`ClientMsg`, `ServerMsg`). UDP streams open with a `NSHELLO1` datagram that
//! carries the token, so data from any other sender is ignored. The client repeats every
//! stream's hello until the server echoes it or sends `Ready` (which it does only once every
//! hello arrived), so a lost hello or echo on a lossy path does not fail the test; receivers
//! skip hello copies still queued when the data starts.
//!
//! Every read here has a deadline: a peer that sends nothing, or half a frame, is dropped.

use crate::platform::cputime::CpuUsage;
use crate::traffic::measure::{SocketInfo, StreamReport};
use crate::traffic::spec::TestSpec;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Default port of `netsweep server` (beside iperf3's 5201).
pub const DEFAULT_PORT: u16 = 5310;
/// Version of this protocol; both ends must speak the same one. Version 2 sends the server's
/// final interval reports in `Intervals` frames of at most `INTERVALS_PER_FRAME` before `Done`
/// (version 1 put them all in `Done`, which outgrew the frame cap on long or fine-grained tests).
/// Version 3: the client's greeting (`client_greeting`), written as two ASCII digits so that
/// the greeting has no NUL before its end (iperf3 servers compare cookies as C strings).
pub const VERSION: u16 = 3;
/// Length of a client's greeting: an iperf3 cookie's (36 characters and a NUL).
pub const GREETING_LEN: usize = 37;
/// Interval reports per `Intervals` frame; at most about 400 bytes each as JSON, so a frame
/// stays well under `MAX_FRAME` (tested).
pub const INTERVALS_PER_FRAME: usize = 1000;
/// Largest control frame body accepted, checked before allocating.
pub const MAX_FRAME: u32 = 1 << 20;
/// How long a peer may take to send a preamble or finish a frame.
pub const IO_DEADLINE: Duration = Duration::from_secs(10);

pub const CONTROL_MAGIC: &[u8; 6] = b"NSCTRL";
pub const DATA_MAGIC: &[u8; 8] = b"NSDATA01";
pub const UDP_HELLO_MAGIC: &[u8; 8] = b"NSHELLO1";
/// Size of a UDP hello: magic, token, stream id.
pub const UDP_HELLO_LEN: usize = 8 + 16 + 2;

/// A random per-test secret that every data connection and UDP hello must present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Token(#[serde(with = "hex16")] pub [u8; 16]);

impl Token {
    pub fn random() -> Token {
        Token(rand::random())
    }

    /// The token in lowercase hex, as it goes on the wire in JSON.
    pub fn hex(&self) -> String {
        hex16::encode(&self.0)
    }
}

/// Why a server turned a test down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// All `--max-tests` slots are taken.
    Busy { running: usize },
    /// The spec exceeds a cap or is invalid.
    Limit {
        #[serde(deserialize_with = "crate::inputs::de_peer_text")]
        reason: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Busy { running } => {
                // iperf3's words first, for the scripts that retry on them.
                write!(
                    f,
                    "the server is busy running a test. try again later ({running} tests \
                     running, its limit)"
                )
            }
            Refusal::Limit { reason } => write!(f, "server refused the test: {reason}"),
        }
    }
}

/// Messages from client to server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// Ask for a test. `ticket`: the scheduled test's secret, for a server that admits only
    /// it (pScheduler's server participant); older clients send none.
    Request {
        spec: TestSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
    },
    /// Ask whether a test would be admitted (its spec valid, within the server's caps, its
    /// congestion control usable there), without running it: the server answers `Admissible`
    /// or `Refused`, takes no slot and opens nothing. Campaigns ask before any traffic.
    Check {
        spec: TestSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
    },
    /// Ask for a request/response test (`traffic::rr`): answered `RrAccepted` or `Refused`.
    Transactions {
        spec: crate::traffic::rr::RrSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ticket: Option<String>,
    },
    /// All data connections are open: start traffic now.
    Start,
    /// A `duration = "auto"` test is steady: end the grid after this many slots (warm-up
    /// included). Sent only to a server that said `ends_early`; a cut already passed ends at
    /// the end of the server's current slot.
    End { slots: u32 },
    /// The client has read the result (the server keeps the test's slot until it says so or
    /// hangs up). It carries no reports: the server's log and document are its own account.
    Done,
    /// The client gives up (Ctrl-C, local error); the server stops its streams.
    Abort {
        #[serde(deserialize_with = "crate::inputs::de_peer_text")]
        reason: String,
    },
}

/// Messages from server to client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// The test is admitted; data connections must present `token`. For UDP, `udp_ports[i]` is
    /// where stream `i` sends its hello. `echo_port` answers latency probes when the spec asks
    /// for them (a server that predates them leaves it out).
    Accepted {
        token: Token,
        udp_ports: Vec<u16>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        echo_port: Option<u16>,
        /// This server ends a test early when the client sends `End` (`duration = "auto"`);
        /// an older server leaves it out and runs every test to its duration.
        #[serde(default)]
        ends_early: bool,
    },
    Refused {
        refusal: Refusal,
    },
    /// A request/response test is admitted: rr's TCP connections present `token` (stream ids
    /// from 0), its UDP sockets greet `udp_ports[i]` with it; crr connects to `crr_port`, a
    /// listener of this test alone that answers only the control connection's address.
    RrAccepted {
        token: Token,
        udp_ports: Vec<u16>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        crr_port: Option<u16>,
    },
    /// A request/response test's end on the server: what it counted.
    RrDone {
        counts: crate::traffic::rr::ServerCounts,
    },
    /// The answer to `Check`: the test would be admitted (if a slot is free then).
    Admissible,
    /// Every data connection arrived; `sockets` are the server's granted buffer sizes.
    Ready {
        sockets: Vec<SocketInfo>,
    },
    /// One stream's interval on the server's side, sent as it closes.
    Interval {
        report: crate::traffic::measure::IntervalReport,
    },
    /// Final interval reports of one stream, in order, continuing the previous frame of that
    /// stream; sent before `Done`.
    Intervals {
        stream: u16,
        intervals: Vec<crate::traffic::measure::IntervalReport>,
    },
    /// The server's streams finished: their reports (intervals already sent in `Intervals`
    /// frames) and the server's CPU use.
    Done {
        streams: Vec<StreamReport>,
        cpu: CpuUsage,
    },
    /// Something failed on the server.
    Error {
        #[serde(deserialize_with = "crate::inputs::de_peer_text")]
        message: String,
    },
}

/// Errors of the control channel, with what to do about them.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("peer sent a frame of {0} bytes, more than the {MAX_FRAME}-byte cap")]
    FrameTooLarge(u32),
    #[error("peer is not a netsweep peer (unexpected preamble {0:?})")]
    BadMagic(Vec<u8>),
    #[error("peer speaks netsweep protocol {peer}, this side speaks {ours}: {advice}")]
    Version {
        peer: u16,
        ours: u16,
        advice: &'static str,
    },
    #[error("peer sent a malformed message: {0}")]
    Malformed(String),
    #[error("peer sent nothing for {0:?}")]
    Timeout(Duration),
    #[error("peer closed the connection")]
    Closed,
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl ProtocolError {
    pub fn is_timeout(&self) -> bool {
        matches!(self, ProtocolError::Timeout(_))
    }
}

/// A read that waited out its SO_RCVTIMEO (EAGAIN on Linux and FreeBSD). ETIMEDOUT is not
/// one: it is the connection's end (keepalive, `--snd-timeout`, retransmissions given up) and
/// is reported as the kernel words it.
fn is_timeout_kind(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Fills `buf` completely or fails once `deadline` has passed.
pub fn read_exact_by(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<(), ProtocolError> {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProtocolError::Timeout(IO_DEADLINE));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(ProtocolError::Closed),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if is_timeout_kind(&e) => return Err(ProtocolError::Timeout(IO_DEADLINE)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes one frame: length then JSON body.
pub fn write_frame<T: Serialize>(stream: &mut TcpStream, msg: &T) -> Result<(), ProtocolError> {
    let body = serde_json::to_vec(msg).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
    let len = u32::try_from(body.len()).map_err(|_| ProtocolError::FrameTooLarge(u32::MAX))?;
    if len > MAX_FRAME {
        return Err(ProtocolError::FrameTooLarge(len));
    }
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    stream.set_write_timeout(Some(IO_DEADLINE))?;
    stream.write_all(&out)?;
    Ok(())
}

/// Reads one frame. The first byte may take until `first_byte_by` (`None`: wait forever); once
/// it arrives, the rest of the frame must follow within `IO_DEADLINE`.
pub fn read_frame<T: for<'de> Deserialize<'de>>(
    stream: &mut TcpStream,
    first_byte_by: Option<Instant>,
) -> Result<T, ProtocolError> {
    let mut len_buf = [0u8; 4];
    match first_byte_by {
        Some(deadline) => read_exact_by(stream, &mut len_buf[..1], deadline)?,
        None => {
            stream.set_read_timeout(None)?;
            loop {
                match stream.read(&mut len_buf[..1]) {
                    Ok(0) => return Err(ProtocolError::Closed),
                    Ok(_) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    let deadline = Instant::now() + IO_DEADLINE;
    read_exact_by(stream, &mut len_buf[1..], deadline)?;
    let len = u32::from_be_bytes(len_buf);
    if len > MAX_FRAME {
        return Err(ProtocolError::FrameTooLarge(len));
    }
    let mut body = vec![0u8; len as usize];
    read_exact_by(stream, &mut body, deadline)?;
    decode(&body)
}

/// Decodes one frame body (the part after the length) into a typed message.
pub fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, ProtocolError> {
    if body.len() > MAX_FRAME as usize {
        return Err(ProtocolError::FrameTooLarge(
            u32::try_from(body.len()).unwrap_or(u32::MAX),
        ));
    }
    // serde's message can quote the peer's text ("unknown variant ..."): escape it.
    serde_json::from_slice(body)
        .map_err(|e| ProtocolError::Malformed(crate::inputs::peer_text(&e.to_string())))
}

/// The control preamble a server answers with (and a client's greeting starts with):
/// `NSCTRL` and the version as two ASCII digits.
pub fn control_preamble() -> [u8; 8] {
    let mut p = [0u8; 8];
    p[..6].copy_from_slice(CONTROL_MAGIC);
    // VERSION < 100: two digits.
    p[6] = b'0' + (VERSION / 10 % 10) as u8;
    p[7] = b'0' + (VERSION % 10) as u8;
    p
}

/// A client's greeting: the control preamble, 28 random lowercase letters and a NUL, the shape
/// of an iperf3 cookie. A netsweep server reads the rest after the preamble; an iperf3 server
/// keeps it as the test's cookie, which the data connections then repeat.
pub fn client_greeting() -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[..8].copy_from_slice(&control_preamble());
    for b in &mut g[8..GREETING_LEN - 1] {
        *b = b'a' + rand::random::<u8>() % 26;
    }
    g
}

/// The version in a peer's control preamble: two ASCII digits from version 3 on, a big-endian
/// number before (so an older peer is told which of the two to upgrade).
fn preamble_version(p: &[u8; 8]) -> u16 {
    if p[6].is_ascii_digit() && p[7].is_ascii_digit() {
        u16::from(p[6] - b'0') * 10 + u16::from(p[7] - b'0')
    } else {
        u16::from_be_bytes([p[6], p[7]])
    }
}

/// Checks a peer's control preamble. `peer_is_server` picks the advice in the message.
pub fn check_control_preamble(p: &[u8; 8], peer_is_server: bool) -> Result<(), ProtocolError> {
    if &p[..6] != CONTROL_MAGIC {
        return Err(ProtocolError::BadMagic(p.to_vec()));
    }
    let peer = preamble_version(p);
    if peer != VERSION {
        let advice = match (peer_is_server, peer < VERSION) {
            (true, true) => "upgrade the server",
            (true, false) => "upgrade this client",
            (false, true) => "upgrade the client",
            (false, false) => "upgrade this server",
        };
        return Err(ProtocolError::Version {
            peer,
            ours: VERSION,
            advice,
        });
    }
    Ok(())
}

/// The preamble of a data connection: magic, token, stream id.
pub fn data_preamble(token: &Token, stream: u16) -> [u8; 26] {
    let mut p = [0u8; 26];
    p[..8].copy_from_slice(DATA_MAGIC);
    p[8..24].copy_from_slice(&token.0);
    p[24..].copy_from_slice(&stream.to_be_bytes());
    p
}

/// The stream id in the hello of a test's latency prober (`--latency`), which greets the
/// server's echo as a UDP stream greets its socket (on the server's port, as UDP streams do).
pub const LATENCY_STREAM: u16 = u16::MAX;

/// The UDP hello datagram of stream `stream`.
pub fn udp_hello(token: &Token, stream: u16) -> [u8; UDP_HELLO_LEN] {
    let mut p = [0u8; UDP_HELLO_LEN];
    p[..8].copy_from_slice(UDP_HELLO_MAGIC);
    p[8..24].copy_from_slice(&token.0);
    p[24..].copy_from_slice(&stream.to_be_bytes());
    p
}

/// Parses a UDP hello; `None` for anything else.
pub fn parse_udp_hello(d: &[u8]) -> Option<(Token, u16)> {
    if d.len() != UDP_HELLO_LEN || &d[..8] != UDP_HELLO_MAGIC {
        return None;
    }
    let mut t = [0u8; 16];
    t.copy_from_slice(&d[8..24]);
    Some((Token(t), u16::from_be_bytes([d[24], d[25]])))
}

mod hex16 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn encode(b: &[u8; 16]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    pub fn serialize<S: Serializer>(b: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(b))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let s = String::deserialize(d)?;
        if s.len() != 32 || !s.is_ascii() {
            return Err(D::Error::custom("token must be 32 hex digits"));
        }
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(D::Error::custom)?;
        }
        Ok(out)
    }
}

/// Reads a peer's control messages on a clone of its control socket into a channel (the
/// server reads its client's this way, and the client its server's).
pub fn spawn_reader<T>(mut sock: TcpStream) -> std::sync::mpsc::Receiver<Result<T, ProtocolError>>
where
    T: for<'de> serde::Deserialize<'de> + Send + 'static,
{
    // Bounded: a peer that floods frames is held back by TCP, not by this process's memory.
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    let _ = std::thread::Builder::new()
        .name("control-reader".into())
        .spawn(move || {
            loop {
                let msg = read_frame::<T>(&mut sock, None);
                let failed = msg.is_err();
                if tx.send(msg).is_err() || failed {
                    break;
                }
            }
        });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn frames_round_trip() {
        let (mut a, mut b) = pair();
        let msg = ClientMsg::Abort {
            reason: "test".into(),
        };
        write_frame(&mut a, &msg).unwrap();
        let got: ClientMsg =
            read_frame(&mut b, Some(Instant::now() + Duration::from_secs(1))).unwrap();
        assert_eq!(got, msg);
    }

    #[test]
    fn oversized_frame_is_refused_before_allocating() {
        let (mut a, mut b) = pair();
        a.write_all(&(u32::MAX).to_be_bytes()).unwrap();
        let err = read_frame::<ClientMsg>(&mut b, Some(Instant::now() + Duration::from_secs(1)))
            .unwrap_err();
        assert!(
            matches!(err, ProtocolError::FrameTooLarge(u32::MAX)),
            "{err}"
        );
    }

    #[test]
    fn malformed_frame_is_an_error_not_a_panic() {
        let (mut a, mut b) = pair();
        a.write_all(&5u32.to_be_bytes()).unwrap();
        a.write_all(b"{{{{{").unwrap();
        let err = read_frame::<ClientMsg>(&mut b, Some(Instant::now() + Duration::from_secs(1)))
            .unwrap_err();
        assert!(matches!(err, ProtocolError::Malformed(_)), "{err}");
    }

    /// The largest `Intervals` frame (every field at its longest) stays under the cap.
    #[test]
    fn a_full_intervals_frame_fits_under_the_cap() {
        use crate::traffic::measure::{IntervalReport, Role, TcpSample, UdpReceived};
        let worst = IntervalReport {
            stream: u16::MAX,
            index: u32::MAX,
            role: Role::Receiver,
            bytes: u64::MAX,
            packets: u64::MAX,
            tcp: Some(TcpSample {
                retransmits: u64::MAX,
                rtt_us: u32::MAX,
                rttvar_us: u32::MAX,
                cwnd_bytes: u64::MAX,
                snd_wnd_bytes: u64::MAX,
                rwnd_limited_percent: Some(-1.234_567_890_123_456_7e-300),
                sndbuf_limited_percent: None,
            }),
            udp: Some(UdpReceived {
                jitter_ms: -1.234_567_890_123_456_7e-300,
                out_of_order: u64::MAX,
                duplicates: u64::MAX,
                highest_seq: Some(u64::MAX),
                sequences: Some(u64::MAX),
            }),
        };
        let msg = ServerMsg::Intervals {
            stream: u16::MAX,
            intervals: vec![worst; INTERVALS_PER_FRAME],
        };
        let len = serde_json::to_vec(&msg).unwrap().len();
        assert!(len < MAX_FRAME as usize, "{len} bytes");
    }

    #[test]
    fn version_mismatch_says_what_to_upgrade() {
        let mut p = control_preamble();
        p[7] = p[7].wrapping_add(1);
        let msg = check_control_preamble(&p, true).unwrap_err().to_string();
        assert!(msg.contains("upgrade this client"), "{msg}");
        assert!(check_control_preamble(&control_preamble(), true).is_ok());
        assert!(matches!(
            check_control_preamble(b"GET / HT", false),
            Err(ProtocolError::BadMagic(_))
        ));
    }

    #[test]
    fn a_version_2_peer_is_told_apart_both_ways() {
        // Version 2's preamble: the version as a big-endian number.
        let old = *b"NSCTRL\x00\x02";
        let msg = check_control_preamble(&old, false).unwrap_err().to_string();
        assert!(msg.contains("upgrade the client"), "{msg}");
        assert_eq!(preamble_version(&control_preamble()), VERSION);
        // What a version 2 peer makes of ours: 0x3033, a newer version than its own.
        let ours = control_preamble();
        assert!(u16::from_be_bytes([ours[6], ours[7]]) > 2);
    }

    #[test]
    fn the_greeting_is_shaped_as_an_iperf3_cookie_with_no_early_nul() {
        let g = client_greeting();
        assert_eq!(GREETING_LEN, crate::traffic::iperf3::wire::COOKIE_LEN);
        assert_eq!(&g[..8], &control_preamble());
        assert_eq!(g[GREETING_LEN - 1], 0);
        assert!(!g[..GREETING_LEN - 1].contains(&0), "{g:?}");
        assert!(g[8..GREETING_LEN - 1].iter().all(u8::is_ascii_lowercase));
        // Two greetings differ, so an iperf3 server tells two netsweep clients' tests apart.
        assert_ne!(client_greeting(), client_greeting());
    }

    #[test]
    fn hello_round_trips_and_rejects_junk() {
        let t = Token::random();
        let h = udp_hello(&t, 3);
        assert_eq!(parse_udp_hello(&h), Some((t, 3)));
        assert_eq!(parse_udp_hello(&h[..10]), None);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json.len(), 34);
        assert_eq!(serde_json::from_str::<Token>(&json).unwrap(), t);
        assert!(serde_json::from_str::<Token>("\"zz\"").is_err());
    }
}
