//! How a test's window (`-w`) is asked of the kernel: the window modes and the parsing of a
//! window as a user writes it.

use serde::{Deserialize, Serialize};

/// How a window (`-w`) is asked of the kernel (`--window-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowMode {
    /// `SO_SNDBUFFORCE`/`SO_RCVBUFFORCE` where allowed (root on Linux): the window is what was
    /// asked whatever the host's maxima, so a profile raising them cannot change the test.
    #[default]
    Force,
    /// Plain `SO_SNDBUF`/`SO_RCVBUF`, as a non-root iperf: the kernel caps the request at its
    /// maxima (`net.core.wmem_max`/`rmem_max`, `kern.ipc.maxsockbuf`) and the granted sizes
    /// are reported; a profile raising the maxima can then let a larger window through.
    Ask,
    /// The receive window is exactly `-w` (RFC 6349's tests): buffers are forced to twice the
    /// window and each TCP receiver holds TCP_WINDOW_CLAMP at it. Linux derives the advertised
    /// window from the receive buffer times a ratio it learns from the arriving packets
    /// (`tcp_win_from_space`), so `-w X` alone advertises anything from X to 2X: 1.25X was
    /// measured across a 1 Gbit/s, 20 ms lab (TUN, 1500-byte frames). It also recomputes the
    /// clamp from the buffer whenever that ratio changes, so the receiver sets it again.
    /// FreeBSD advertises at most the receive buffer: the window there is the buffer itself.
    Clamp,
}

impl WindowMode {
    pub fn name(self) -> &'static str {
        match self {
            WindowMode::Force => "force",
            WindowMode::Ask => "ask",
            WindowMode::Clamp => "clamp",
        }
    }

    /// Whether the buffers are set past the kernel's maxima where allowed.
    pub fn forced(self) -> bool {
        self != WindowMode::Ask
    }

    /// The socket buffer asked of the kernel for a window of `window` bytes.
    pub fn buffer_for(self, window: u64) -> u64 {
        match self {
            WindowMode::Clamp => window.saturating_mul(crate::platform::sockopt::CLAMP_HEADROOM),
            WindowMode::Force | WindowMode::Ask => window,
        }
    }
}

impl std::str::FromStr for WindowMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "force" => Ok(WindowMode::Force),
            "ask" => Ok(WindowMode::Ask),
            "clamp" => Ok(WindowMode::Clamp),
            _ => Err(format!(
                "window mode {s:?} is not ask (capped by the kernel's maxima, as a non-root iperf), \
                 force (past them, as root) or clamp (the advertised window exactly -w)"
            )),
        }
    }
}

/// Parses a window as a user writes it: a size, or `auto`/`default` for none (the kernel's
/// autotuning, no `-w` at all).
pub fn parse_window(v: &str) -> Result<Option<u64>, crate::units::ParseError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "auto" | "default" => Ok(None),
        _ => v.parse::<crate::units::Bytes>().map(|b| Some(b.0)),
    }
}
