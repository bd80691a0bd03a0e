//! A same-host path's buffers. The receive buffer (`traffic::engine::rcvbuf`): TCP receivers
//! whose sender is on this host set a fixed buffer instead of the kernel's autotuning when they
//! are several; the result says which (each direction's under `--bidir`), and the receiving
//! kernel reports that buffer on the data sockets while the test runs. A test's only receiver,
//! a window set with `-w`, and a path that leaves the host (two namespaces joined by a veth
//! pair) keep the autotuning. The send buffer (`traffic::engine::sndbuf`): a test's lone
//! sender sets one, under the same checks, and several streams, `--bidir`, `-w` and a path off
//! the host keep the autotuning. Root (namespaces); CI runs it.

mod common;

use common::netns::{Netns, Pair};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

/// A netsweep server in `ns` on `bind`:5398 for one test.
fn server(ns: &Netns, bind: &str) -> common::KillOnDrop {
    server_with(ns, bind, &["-1"])
}

/// A netsweep server in `ns` on `bind`:5398 with `args`.
fn server_with(ns: &Netns, bind: &str, args: &[&str]) -> common::KillOnDrop {
    let child = ns
        .cmd(env!("CARGO_BIN_EXE_netsweep"))
        .args(["server", "--bind", bind, "--port", "5398"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let child = common::KillOnDrop(child);
    ns.wait_listening(5398);
    child
}

/// Whether the kernel's autotuning in `ns` could itself stop at `bytes` (`tcp_rmem`'s
/// maximum): then a buffer of that size says nothing.
fn autotuning_reaches(ns: &Netns, bytes: u64) -> bool {
    let out = ns.cmd("cat").arg("/proc/sys/net/ipv4/tcp_rmem").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).to_string());
    text.ok()
        .and_then(|t| {
            t.split_whitespace()
                .nth(2)
                .and_then(|m| m.parse::<u64>().ok())
        })
        .is_none_or(|max| max == bytes)
}

/// The receive buffers (`ss -tm`'s `rb`) of the connected TCP sockets on port 5398 in `ns`
/// that have received more than a megabyte.
fn receiving_buffers(ns: &Netns) -> Vec<u64> {
    buffers(ns, "bytes_received:", "rb")
}

/// The send buffers (`ss -tm`'s `tb`) of those that have sent more than a megabyte.
fn sending_buffers(ns: &Netns) -> Vec<u64> {
    buffers(ns, "bytes_sent:", "tb")
}

/// `buffer` (an `ss -tm` field) of the connected TCP sockets on port 5398 in `ns` whose
/// `counter` (an `ss -ti` field) passed a megabyte.
fn buffers(ns: &Netns, counter: &str, buffer: &str) -> Vec<u64> {
    let out = ns
        .cmd("ss")
        .args([
            "-tmiOH",
            "state",
            "established",
            "( sport = :5398 or dport = :5398 )",
        ])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |line: &str, key: &str| {
        line.split([' ', ',', '(', ')', '\t'])
            .find_map(|w| w.strip_prefix(key).and_then(|v| v.parse::<u64>().ok()))
    };
    text.lines()
        .filter(|l| field(l, counter).is_some_and(|b| b > 1 << 20))
        .filter_map(|l| field(l, buffer))
        .collect()
}

/// One client test from `ns` to `host`:5398, and the receive buffers `ns_receiving` reported
/// one second into it.
fn test(ns: &Netns, ns_receiving: &Netns, host: &str, args: &[&str]) -> (Value, Vec<u64>) {
    test_seeing(ns, ns_receiving, host, args, receiving_buffers)
}

/// As `test`, with what `seen` reports of `ns_seen` one second into the test.
fn test_seeing(
    ns: &Netns,
    ns_seen: &Netns,
    host: &str,
    args: &[&str],
    seen: fn(&Netns) -> Vec<u64>,
) -> (Value, Vec<u64>) {
    let client = ns
        .cmd(env!("CARGO_BIN_EXE_netsweep"))
        .args(["client", host, "-p", "5398", "--json=netsweep", "-t", "2"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("client");
    std::thread::sleep(Duration::from_millis(1200));
    let buffers = seen(ns_seen);
    let out = client.wait_with_output().expect("client output");
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{args:?}: {doc:#}");
    (doc, buffers)
}

#[test]
fn same_host_receivers_set_the_buffer_the_kernel_reports_and_other_paths_keep_autotuning() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("same_host_receivers_set_the_buffer") {
        return;
    }
    let _serial = common::loopback::serial();
    let asked = netsweep::traffic::engine::rcvbuf::SAME_HOST_ASK;
    let a = Netns::new("rba");
    // Several receivers (the server's, then the client's under -R) and a copying one set it;
    // the kernel's report while the data flows is the result's.
    for args in [
        &["-P", "2"][..],
        &["-P", "2", "-R"],
        &["-P", "3", "--rx-copy"],
    ] {
        let _server = server(&a, "127.0.0.1");
        let (doc, buffers) = test(&a, &a, "127.0.0.1", args);
        let said = doc["start"]["receive_buffer_bytes"].as_u64();
        assert_eq!(said, Some(2 * asked), "{args:?}: {:#}", doc["start"]);
        let streams: usize = args[1].parse().unwrap_or(0);
        assert_eq!(
            buffers,
            vec![2 * asked; streams],
            "{args:?}: the receiving sockets' rb while the test ran"
        );
        assert!(doc["summary"]["bytes"].as_u64().unwrap_or(0) > 0, "{doc:#}");
    }
    // Under --bidir each end's two receivers set it, and the result says so for each direction.
    {
        let _server = server(&a, "127.0.0.1");
        let (doc, buffers) = test(&a, &a, "127.0.0.1", &["-P", "2", "--bidir"]);
        let start = &doc["start"];
        assert_eq!(
            (
                start["receive_buffer_bytes"].as_u64(),
                start["other_receive_buffer_bytes"].as_u64()
            ),
            (Some(2 * asked), Some(2 * asked)),
            "{start:#}"
        );
        assert_eq!(
            buffers,
            vec![2 * asked; 4],
            "both directions' receiving sockets"
        );
    }
    // A lone receiver, copying or not, and a window set with -w keep the autotuning.
    for args in [&[][..], &["--rx-copy"], &["-P", "2", "-w", "1M"]] {
        let _server = server(&a, "127.0.0.1");
        let (doc, buffers) = test(&a, &a, "127.0.0.1", args);
        assert!(
            doc["start"].get("receive_buffer_bytes").is_none(),
            "{args:?}: {:#}",
            doc["start"]
        );
        assert!(
            !buffers.contains(&(2 * asked)) || autotuning_reaches(&a, 2 * asked),
            "{args:?}: {buffers:?}"
        );
    }
    // A path off the host: a veth pair between two namespaces.
    drop(a);
    let Pair { a, b, .. } = Pair::new("rb");
    let _server = server(&b, "198.18.0.2");
    let (doc, buffers) = test(&a, &b, "198.18.0.2", &["-P", "2"]);
    assert!(
        doc["start"].get("receive_buffer_bytes").is_none(),
        "{:#}",
        doc["start"]
    );
    assert_eq!(
        buffers.len(),
        2,
        "two receiving sockets in {}: {buffers:?}",
        b.0
    );
    assert!(
        buffers.iter().all(|&rb| rb != 2 * asked) || autotuning_reaches(&b, 2 * asked),
        "autotuned buffers across the veth pair: {buffers:?}"
    );
}

#[test]
fn a_lone_same_host_sender_sets_the_send_buffer_the_kernel_reports_and_others_keep_autotuning() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("a_lone_same_host_sender_sets") {
        return;
    }
    let _serial = common::loopback::serial();
    let asked = netsweep::traffic::engine::sndbuf::LONE_SENDER_ASK;
    let a = Netns::new("sba");
    // The client's lone sender, then the server's under -R, copying receiver or not: the
    // result's buffer is the one the sending kernel reports while the data flows.
    for args in [&[][..], &["-R"], &["--rx-copy"]] {
        let _server = server(&a, "127.0.0.1");
        let (doc, buffers) = test_seeing(&a, &a, "127.0.0.1", args, sending_buffers);
        let said = doc["start"]["send_buffer_bytes"].as_u64();
        assert_eq!(said, Some(2 * asked), "{args:?}: {:#}", doc["start"]);
        assert_eq!(
            buffers,
            vec![2 * asked],
            "{args:?}: the sending socket's tb while the test ran"
        );
        assert!(doc["summary"]["bytes"].as_u64().unwrap_or(0) > 0, "{doc:#}");
    }
    // Several streams, --bidir and -w keep the kernel's send buffers.
    for args in [&["-P", "2"][..], &["--bidir"], &["-w", "1M"]] {
        let _server = server(&a, "127.0.0.1");
        let (doc, buffers) = test_seeing(&a, &a, "127.0.0.1", args, sending_buffers);
        assert!(
            doc["start"].get("send_buffer_bytes").is_none(),
            "{args:?}: {:#}",
            doc["start"]
        );
        assert!(!buffers.is_empty(), "{args:?}: no sending socket seen");
        assert!(!buffers.contains(&(2 * asked)), "{args:?}: {buffers:?}");
    }
    // A path off the host.
    drop(a);
    let Pair { a, b, .. } = Pair::new("sb");
    let _server = server(&b, "198.18.0.2");
    let (doc, buffers) = test_seeing(&a, &a, "198.18.0.2", &[], sending_buffers);
    assert!(
        doc["start"].get("send_buffer_bytes").is_none(),
        "{:#}",
        doc["start"]
    );
    assert_eq!(
        buffers.len(),
        1,
        "one sending socket in {}: {buffers:?}",
        a.0
    );
    assert_ne!(
        buffers[0],
        2 * asked,
        "an autotuned buffer across the veth pair"
    );
}

/// A server left running while its host's profile changes (a campaign's `server_tuning`):
/// its data connections start from the kernel's defaults in force, not from the ones its
/// listener was made under (`traffic::listener`). A newcomer's trial measured 128 KiB
/// receive buffers and a 124 KB window under a profile whose `tcp_rmem` maximum was 64 KiB.
#[test]
fn a_server_left_running_takes_the_defaults_of_a_profile_applied_after_it_started() {
    if !cfg!(target_os = "linux") || !common::root_or_skip("a_server_left_running_takes") {
        return;
    }
    let ns = Netns::new("prof");
    // Serving test after test, as a server left running does.
    let _server = server_with(&ns, "127.0.0.1", &[]);
    let client = || test(&ns, &ns, "127.0.0.1", &[]).0;
    let server_rcvbuf = |doc: &Value| {
        doc["start"]["server_sockets"][0]["rcvbuf_bytes"]
            .as_u64()
            .unwrap()
    };
    // A first test under the defaults the server started with.
    let before = client();
    assert!(server_rcvbuf(&before) > 16384, "{before:#}");
    for (key, value) in [
        ("net.ipv4.tcp_rmem", "4096 16384 65536"),
        ("net.ipv4.tcp_wmem", "4096 8192 65536"),
    ] {
        let ok = ns
            .cmd("sysctl")
            .args(["-qw", &format!("{key}={value}")])
            .status();
        assert!(ok.is_ok_and(|s| s.success()), "{key}");
    }
    let after = client();
    assert_eq!(server_rcvbuf(&after), 16384, "{:#}", after["start"]);
    // The window the server advertised keeps within the profile's maximum (Linux advertises
    // at most about the buffer's maximum less its overhead share).
    let window = after["summary"]["snd_wnd_max_bytes"].as_u64().unwrap();
    assert!(
        window <= 65536,
        "advertised {window} under a 64 KiB tcp_rmem"
    );
    let before_window = before["summary"]["snd_wnd_max_bytes"].as_u64().unwrap();
    assert!(
        before_window > 65536,
        "the first test's window: {before_window}"
    );
}
