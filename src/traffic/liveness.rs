//! What ends a test whose peer went away without a word, as iperf3's options do it: TCP
//! keepalive on the control connection (`--cntl-ka[=IDLE/INTV/CNT]`, for long tests whose
//! control connection is silent: UDP, or `-t 3600`) and a limit on how long sent data may stay
//! unacknowledged (`--snd-timeout MS`: TCP_USER_TIMEOUT on the control connection and on every
//! TCP data connection). Each end sets its own, in both roles, as iperf3 3.21 does
//! (`iperf_set_control_keepalive`, `iperf_tcp_connect`, `iperf_tcp_accept`): neither is sent to
//! the peer.
//!
//! Parsing and checking the values is calculation (`KeepaliveAsk`, `user_timeout`); setting
//! them is `Liveness`'s calls on a socket (`control`, `data`, and `keepalive` alone).

use crate::platform::sockopt::{self, Keepalive};
use std::os::fd::AsFd;
use std::time::Duration;

/// The largest keepalive idle time and interval Linux takes (`MAX_TCP_KEEPIDLE`,
/// `MAX_TCP_KEEPINTVL`), seconds.
pub const MAX_KEEPALIVE_S: u32 = 32767;
/// The most keepalive probes Linux takes (`MAX_TCP_KEEPCNT`).
pub const MAX_KEEPALIVE_COUNT: u32 = 127;
/// The longest `--snd-timeout`, as iperf3's (a day, in milliseconds).
pub const MAX_USER_TIMEOUT_MS: u64 = 86_400_000;

/// `--cntl-ka`'s value as given: each part left out (or 0, as iperf3's `atoi` reads it) takes
/// the system's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeepaliveAsk {
    pub idle_s: Option<u32>,
    pub interval_s: Option<u32>,
    pub count: Option<u32>,
}

impl KeepaliveAsk {
    /// Reads `IDLE/INTV/CNT` (seconds, seconds, probes), any part empty or left out: "" (the
    /// bare `--cntl-ka`), "60", "60/5", "60/5/3", "/5/3".
    pub fn parse(text: &str) -> Result<KeepaliveAsk, String> {
        let parts: Vec<&str> = text.split('/').collect();
        if parts.len() > 3 {
            return Err(format!(
                "--cntl-ka={text}: give at most IDLE/INTERVAL/COUNT (seconds, seconds, probes), \
                 e.g. --cntl-ka=60/10/3"
            ));
        }
        let part = |i: usize, what: &str, max: u32| -> Result<Option<u32>, String> {
            let Some(p) = parts.get(i).map(|p| p.trim()).filter(|p| !p.is_empty()) else {
                return Ok(None);
            };
            let v: u32 = p.parse().map_err(|_| {
                format!(
                    "--cntl-ka={text}: {what} {p:?} is not a whole number; give \
                     IDLE/INTERVAL/COUNT, e.g. --cntl-ka=60/10/3"
                )
            })?;
            if v > max {
                return Err(format!(
                    "--cntl-ka={text}: {what} {v} is above the kernel's most, {max}"
                ));
            }
            Ok(Some(v).filter(|v| *v > 0))
        };
        Ok(KeepaliveAsk {
            idle_s: part(0, "the idle time", MAX_KEEPALIVE_S)?,
            interval_s: part(1, "the interval", MAX_KEEPALIVE_S)?,
            count: part(2, "the count", MAX_KEEPALIVE_COUNT)?,
        })
    }

    /// The settings to use: what was given, the system's `defaults` for the rest. As iperf3
    /// checks it, an idle time given must be longer than the probes' whole retry period
    /// (interval times count): otherwise some systems probe only once.
    pub fn resolve(self, defaults: Keepalive) -> Result<Keepalive, String> {
        let k = Keepalive {
            idle: self
                .idle_s
                .map_or(defaults.idle, |s| Duration::from_secs(u64::from(s))),
            interval: self
                .interval_s
                .map_or(defaults.interval, |s| Duration::from_secs(u64::from(s))),
            count: self.count.unwrap_or(defaults.count),
        };
        let Some(idle) = self.idle_s else {
            return Ok(k);
        };
        let interval = k.interval.as_secs();
        let retries = interval * u64::from(k.count);
        if u64::from(idle) > retries {
            return Ok(k);
        }
        let defaulted = match (self.interval_s, self.count) {
            (Some(_), Some(_)) => "",
            (None, None) => "; both are the system's defaults",
            (None, Some(_)) => "; the interval is the system's default",
            (Some(_), None) => "; the count is the system's default",
        };
        let hint = if idle < 2 {
            "give an idle time of at least 2 s".to_string()
        } else {
            let count = k.count.clamp(1, idle - 1);
            let interval = ((idle - 1) / count).max(1);
            format!("e.g. --cntl-ka={idle}/{interval}/{count}")
        };
        Err(format!(
            "--cntl-ka: the idle time ({idle} s) must be longer than the probes' interval times \
             their count ({interval} s x {} = {retries} s{defaulted}), as iperf3 requires: {hint}",
            k.count
        ))
    }
}

/// `--snd-timeout MS`: None for 0 (the system's behaviour, as iperf3's 0).
pub fn user_timeout(ms: u64) -> Result<Option<Duration>, String> {
    if ms > MAX_USER_TIMEOUT_MS {
        return Err(format!(
            "--snd-timeout {ms}: give at most {MAX_USER_TIMEOUT_MS} milliseconds (a day, \
             iperf3's most)"
        ));
    }
    Ok(Some(Duration::from_millis(ms)).filter(|d| !d.is_zero()))
}

/// One end's settings, applied to each TCP connection as it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Liveness {
    /// `--cntl-ka`: keepalive on the control connection.
    pub control_keepalive: Option<Keepalive>,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on the control connection and TCP data connections.
    pub user_timeout: Option<Duration>,
}

impl Liveness {
    /// Sets both on a control connection.
    pub fn control<S: AsFd>(&self, sock: &S) -> std::io::Result<()> {
        self.keepalive(sock)?;
        self.data(sock)
    }

    /// Sets the keepalive alone (a server sets the user timeout on every connection as it
    /// accepts it, before it knows which are control connections).
    pub fn keepalive<S: AsFd>(&self, sock: &S) -> std::io::Result<()> {
        let Some(k) = self.control_keepalive else {
            return Ok(());
        };
        sockopt::set_keepalive(sock, k).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("--cntl-ka: the kernel refused the keepalive settings ({e})"),
            )
        })
    }

    /// Sets the user timeout on a TCP data connection (the control connection's too).
    pub fn data<S: AsFd>(&self, sock: &S) -> std::io::Result<()> {
        let Some(t) = self.user_timeout else {
            return Ok(());
        };
        sockopt::set_user_timeout(sock, t).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "--snd-timeout {}: the kernel refused TCP_USER_TIMEOUT ({e})",
                    t.as_millis()
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINUX_DEFAULTS: Keepalive = Keepalive {
        idle: Duration::from_secs(7200),
        interval: Duration::from_secs(75),
        count: 9,
    };

    fn ask(idle: Option<u32>, interval: Option<u32>, count: Option<u32>) -> KeepaliveAsk {
        KeepaliveAsk {
            idle_s: idle,
            interval_s: interval,
            count,
        }
    }

    #[test]
    fn parses_iperf3s_forms_with_parts_left_out() {
        for (text, want) in [
            ("", ask(None, None, None)),
            ("60", ask(Some(60), None, None)),
            ("60/5", ask(Some(60), Some(5), None)),
            ("60/5/3", ask(Some(60), Some(5), Some(3))),
            ("/5/3", ask(None, Some(5), Some(3))),
            ("//3", ask(None, None, Some(3))),
            ("60//3", ask(Some(60), None, Some(3))),
            // iperf3's atoi reads 0 as "not given".
            ("0/5/3", ask(None, Some(5), Some(3))),
        ] {
            assert_eq!(KeepaliveAsk::parse(text), Ok(want), "{text:?}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_keepalive() {
        for (text, says) in [
            ("sixty", "not a whole number"),
            ("60/5/3/1", "at most IDLE/INTERVAL/COUNT"),
            ("-1", "not a whole number"),
            ("40000", "above the kernel's most, 32767"),
            ("60/5/200", "above the kernel's most, 127"),
        ] {
            let e = KeepaliveAsk::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn fills_the_systems_defaults_for_parts_left_out() {
        assert_eq!(
            ask(None, None, None).resolve(LINUX_DEFAULTS),
            Ok(LINUX_DEFAULTS)
        );
        assert_eq!(
            ask(None, Some(5), None).resolve(LINUX_DEFAULTS),
            Ok(Keepalive {
                interval: Duration::from_secs(5),
                ..LINUX_DEFAULTS
            })
        );
        assert_eq!(
            ask(Some(60), Some(10), Some(3)).resolve(LINUX_DEFAULTS),
            Ok(Keepalive {
                idle: Duration::from_secs(60),
                interval: Duration::from_secs(10),
                count: 3
            })
        );
    }

    #[test]
    fn an_idle_time_within_the_retry_period_is_refused_as_iperf3_does() {
        // 60 s against the defaults' 75 s x 9: iperf3's IECNTLKA.
        let e = ask(Some(60), None, None)
            .resolve(LINUX_DEFAULTS)
            .unwrap_err();
        assert!(
            e.contains("75 s x 9 = 675 s; both are the system's defaults"),
            "{e}"
        );
        // Equal is refused too (iperf3: idle <= interval * count).
        let e = ask(Some(30), Some(10), Some(3))
            .resolve(LINUX_DEFAULTS)
            .unwrap_err();
        assert!(e.contains("10 s x 3 = 30 s)"), "{e}");
        // The suggestion it prints is itself accepted.
        for idle in [2u32, 3, 30, 60, 600] {
            let e = ask(Some(idle), None, None)
                .resolve(LINUX_DEFAULTS)
                .unwrap_err();
            let suggested = e.rsplit("--cntl-ka=").next().unwrap();
            let again = KeepaliveAsk::parse(suggested).unwrap();
            assert!(again.resolve(LINUX_DEFAULTS).is_ok(), "{idle}: {e}");
        }
        assert!(
            ask(Some(1), None, None)
                .resolve(LINUX_DEFAULTS)
                .unwrap_err()
                .contains("at least 2 s")
        );
        // With no idle time given there is nothing to check (iperf3 checks only a given one).
        assert!(
            ask(None, Some(5000), Some(100))
                .resolve(LINUX_DEFAULTS)
                .is_ok()
        );
    }

    #[test]
    fn snd_timeout_is_milliseconds_up_to_a_day_and_zero_is_the_systems() {
        assert_eq!(user_timeout(0), Ok(None));
        assert_eq!(user_timeout(1500), Ok(Some(Duration::from_millis(1500))));
        assert!(user_timeout(MAX_USER_TIMEOUT_MS).is_ok());
        assert!(
            user_timeout(MAX_USER_TIMEOUT_MS + 1)
                .unwrap_err()
                .contains("at most 86400000")
        );
    }

    #[test]
    fn sets_both_on_a_connected_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let k = Keepalive {
            idle: Duration::from_secs(40),
            interval: Duration::from_secs(7),
            count: 4,
        };
        let on = Liveness {
            control_keepalive: Some(k),
            user_timeout: sockopt::HAS_USER_TIMEOUT.then_some(Duration::from_millis(2500)),
        };
        on.control(&c).unwrap();
        let s = socket2::SockRef::from(&c);
        assert!(s.keepalive().unwrap());
        assert_eq!(sockopt::keepalive(&c).unwrap(), k);
        #[cfg(target_os = "linux")]
        assert_eq!(
            s.tcp_user_timeout().unwrap(),
            Some(Duration::from_millis(2500))
        );
        // A data connection gets the user timeout only.
        let d = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        on.data(&d).unwrap();
        assert!(!socket2::SockRef::from(&d).keepalive().unwrap());
        // Nothing asked, nothing set.
        let n = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        Liveness::default().control(&n).unwrap();
        assert!(!socket2::SockRef::from(&n).keepalive().unwrap());
        #[cfg(target_os = "linux")]
        assert_eq!(socket2::SockRef::from(&n).tcp_user_timeout().unwrap(), None);
    }
}
