//! The summary's line about each end's socket buffers: what `-w` was granted, or where the
//! kernel's autotuning started, each end's congestion control, and the window the receiving
//! end's kernel advertised from its grant.

use crate::traffic::result::TestResult;
use crate::traffic::spec::Direction;
use crate::units::Bytes;
use std::fmt::Write;

/// The buffers line, when the client reported its sockets.
pub(super) fn buffers_line(result: &TestResult) -> Option<String> {
    let s = result.start.client_sockets.first()?;
    let mut out = String::new();
    // Linux reports twice what it grants: what -w was granted beside them, or "-w 8M"
    // granted 4 MiB read as "sndbuf 8.00 MBytes" in full (a trial's finding). Not "a
    // window": the window each kernel advertises from it differs (a 6.18 host advertised
    // 79 KB for -w 64K where a 6.1 guest advertised 63 KB; the largest advertised window
    // line has the figure).
    // The receiving end's kernel advertises its own window from that grant (a VM
    // trial's finding: "granted 64.0 KBytes" where the window was 79.2 KBytes), named
    // beside it when it differs by more than 2%: one stream one way, where the senders'
    // largest advertised window is that end's.
    let advertised = result.summary.snd_wnd_max_bytes.filter(|&a| {
        a > 0 && result.spec.streams == 1 && result.spec.direction != Direction::Bidir
    });
    let window = |k: &crate::traffic::measure::SocketInfo, receives: bool| match k.window_bytes {
        Some(w) if result.spec.window_bytes.is_some() && w != k.rcvbuf_bytes => {
            match advertised.filter(|&a| receives && a.abs_diff(w) * 50 > w) {
                Some(a) => format!(
                    " (-w granted {}; it advertised up to {})",
                    Bytes(w),
                    Bytes(a)
                ),
                None => format!(" (-w granted {})", Bytes(w)),
            }
        }
        _ => String::new(),
    };
    let reverse = result.spec.direction == Direction::Reverse;
    // Each end's own congestion control: under -R the server sends, and a guest's kernel
    // may run another one than the host's (a trial's campaign compared bbr with cubic
    // senders, the line naming only the client's).
    let congestion = |k: &crate::traffic::measure::SocketInfo| {
        k.congestion
            .as_ref()
            .map(|c| format!(", congestion control {c}"))
            .unwrap_or_default()
    };
    let server = match result.start.server_sockets.first() {
        Some(r) => format!(
            "server sndbuf {} rcvbuf {}{}{}",
            Bytes(r.sndbuf_bytes),
            Bytes(r.rcvbuf_bytes),
            window(r, !reverse),
            congestion(r)
        ),
        None => "server's not reported".to_string(),
    };
    // Read as each connection was set up: what -w was granted, or else where the kernel's
    // autotuning started (it grows them as the test runs; the windows above say how far),
    // unless a same-host path then set one (`engine::rcvbuf`, `engine::sndbuf`: their
    // lines follow).
    let st = &result.start;
    let set_later = st.send_buffer_bytes.is_some()
        || st.receive_buffer_bytes.is_some()
        || st.other_receive_buffer_bytes.is_some();
    let when = match (result.spec.window_bytes.is_some(), set_later) {
        (true, _) => "Buffers granted (-w)",
        (false, false) => "Buffers at the start (autotuned as the test runs)",
        (false, true) => {
            "Buffers at the start (autotuned as the test runs, except those set below)"
        }
    };
    let _ = writeln!(
        out,
        "{when}: client sndbuf {} rcvbuf {}{}{}; {server}",
        Bytes(s.sndbuf_bytes),
        Bytes(s.rcvbuf_bytes),
        window(s, reverse),
        congestion(s),
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (a trial's finding): `-w 8M` capped to a 4 MiB window read "Buffers granted
    /// (-w): client sndbuf 8.00 MBytes rcvbuf 8.00 MBytes", Linux's doubled figures, as if in
    /// full. The window they allow stands beside them.
    #[test]
    fn granted_buffers_say_the_window_they_allow() {
        use crate::traffic::result::{CpuResult, StartInfo};
        let mut spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(5));
        spec.window_bytes = Some(8 << 20);
        let sock = crate::traffic::measure::SocketInfo {
            sndbuf_bytes: 8 << 20,
            rcvbuf_bytes: 8 << 20,
            window_bytes: Some(4 << 20),
            congestion: Some("bbr".into()),
            ..Default::default()
        };
        // A guest's server with its kernel's own congestion control (each end says its own).
        let guest = crate::traffic::measure::SocketInfo {
            congestion: Some("cubic".into()),
            ..sock.clone()
        };
        let start = StartInfo {
            client_sockets: vec![sock],
            server_sockets: vec![guest],
            ..StartInfo::default()
        };
        let r = crate::traffic::result::build(&spec, start, &[], CpuResult::default(), None);
        let text = buffers_line(&r).unwrap();
        assert!(
            text.contains(
                "Buffers granted (-w): client sndbuf 8.00 MBytes rcvbuf 8.00 MBytes (-w granted \
                 4.00 MBytes), congestion control bbr; server sndbuf 8.00 MBytes rcvbuf 8.00 \
                 MBytes (-w granted 4.00 MBytes), congestion control cubic"
            ),
            "{text}"
        );
    }

    /// Regression (a VM trial's finding): `-R -w 64K` to a 6.18 host printed "(-w granted
    /// 64.0 KBytes)" where its kernel advertised 79.2 KBytes; the receiving end names it.
    #[test]
    fn the_receiving_end_names_the_window_its_kernel_advertised() {
        use crate::traffic::result::{CpuResult, StartInfo};
        let sock = |window: u64| crate::traffic::measure::SocketInfo {
            sndbuf_bytes: 2 * window,
            rcvbuf_bytes: 2 * window,
            window_bytes: Some(window),
            ..Default::default()
        };
        let start = StartInfo {
            client_sockets: vec![sock(64 << 10)],
            server_sockets: vec![sock(64 << 10)],
            ..StartInfo::default()
        };
        let line = |direction: Direction, advertised: u64| {
            let mut spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(3));
            spec.window_bytes = Some(64 << 10);
            spec.direction = direction;
            let mut r = crate::traffic::result::build(
                &spec,
                start.clone(),
                &[],
                CpuResult::default(),
                None,
            );
            r.summary.snd_wnd_max_bytes = Some(advertised);
            buffers_line(&r).unwrap()
        };
        let reverse = line(Direction::Reverse, 81_100);
        assert!(
            reverse.contains(
                "client sndbuf 128 KBytes rcvbuf 128 KBytes (-w granted 64.0 KBytes; it \
                 advertised up to 79.2 KBytes); server sndbuf 128 KBytes rcvbuf 128 KBytes \
                 (-w granted 64.0 KBytes)"
            ),
            "{reverse}"
        );
        let forward = line(Direction::Forward, 81_100);
        assert!(
            forward.contains(
                "client sndbuf 128 KBytes rcvbuf 128 KBytes (-w granted 64.0 KBytes); server \
                 sndbuf 128 KBytes rcvbuf 128 KBytes (-w granted 64.0 KBytes; it advertised up \
                 to 79.2 KBytes)"
            ),
            "{forward}"
        );
        // Within 2% of the grant, or both ways at once (whose figure is a sum), nothing more.
        assert!(!line(Direction::Forward, 65_000).contains("advertised"));
        assert!(!line(Direction::Bidir, 81_100).contains("advertised"));
    }
}
