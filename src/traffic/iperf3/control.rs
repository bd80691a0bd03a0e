//! Reading and writing iperf3's control connection with deadlines and size caps (both roles).

use super::wire::{self, JsonError, State};
use crate::traffic::protocol::{ProtocolError, read_exact_by};
use serde_json::{Map, Value};
use std::io::Write;
use std::net::TcpStream;
use std::time::Instant;

/// What went wrong on an iperf3 control connection.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("{0}")]
    Io(#[from] ProtocolError),
    #[error("{0}")]
    Json(#[from] JsonError),
    #[error("an unknown state byte {0:#04x}")]
    UnknownState(u8),
}

pub fn write_state(s: &mut TcpStream, state: State) -> std::io::Result<()> {
    s.write_all(&[state.byte()])
}

pub fn write_json(s: &mut TcpStream, doc: &Value) -> std::io::Result<()> {
    s.write_all(&wire::encode_json(doc))
}

pub fn read_state(s: &mut TcpStream, deadline: Instant) -> Result<State, ControlError> {
    let mut b = [0u8; 1];
    read_exact_by(s, &mut b, deadline)?;
    State::from_byte(b[0]).ok_or(ControlError::UnknownState(b[0]))
}

/// Waits until the peer hangs up the control connection, or `limit` passes: what it sends
/// meanwhile is read and dropped (at most 64 KiB).
pub fn wait_hung_up(s: &mut TcpStream, limit: std::time::Duration) {
    let deadline = Instant::now() + limit;
    let mut sink = [0u8; 512];
    for _ in 0..128 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || !crate::platform::sockopt::wait_readable(s, left).unwrap_or(false) {
            return;
        }
        match std::io::Read::read(s, &mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The int32 after SERVER_ERROR: iperf3's error code, then the server's errno, which servers
/// before 3.21 leave out when they refuse a login (4 bytes, then they hang up).
pub fn read_server_error(
    s: &mut TcpStream,
    deadline: Instant,
) -> Result<(i32, Option<i32>), ControlError> {
    let mut code = [0u8; 4];
    read_exact_by(s, &mut code, deadline)?;
    let mut errno = [0u8; 4];
    let errno = match read_exact_by(s, &mut errno, deadline) {
        Ok(()) => Some(i32::from_be_bytes(errno)),
        Err(ProtocolError::Closed) => None,
        Err(ProtocolError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
        Err(e) => return Err(e.into()),
    };
    Ok((i32::from_be_bytes(code), errno))
}

/// A length-prefixed JSON object of at most `cap` bytes, refused before it is read if larger.
pub fn read_json(
    s: &mut TcpStream,
    cap: u32,
    deadline: Instant,
) -> Result<Map<String, Value>, ControlError> {
    let mut len = [0u8; 4];
    read_exact_by(s, &mut len, deadline)?;
    let len = wire::check_json_length(len, cap)?;
    let mut body = vec![0u8; len];
    read_exact_by(s, &mut body, deadline)?;
    Ok(wire::parse_json(&body)?)
}
