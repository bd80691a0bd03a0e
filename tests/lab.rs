//! Physics of the lab path (root; CI runs these): rate, delay, window/RTT, loss, plus the
//! cross-check of netsweep's byte counts against the kernel's interface counters, and cleanup
//! after success, failure and interruption.

mod common;

use netsweep::lab::{EmulatorChoice, Host, Lab, LabOptions, PathConfig};
use netsweep::traffic::client::{self, ClientConfig};
use netsweep::traffic::result::TestResult;
use netsweep::traffic::spec::{Direction, ServerLimits, TestSpec, WindowMode};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Traffic tests share two cores: run them one at a time so each sees the whole machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn name(tag: &str) -> String {
    format!("{tag}{}", std::process::id() % 100_000)
}

fn options(dir: &tempfile::TempDir) -> LabOptions {
    LabOptions {
        state_dir: dir.path().to_path_buf(),
        emulator: EmulatorChoice::Userspace,
        ..LabOptions::default()
    }
}

fn run(lab: &Lab, spec: &TestSpec) -> TestResult {
    let server = lab
        .start_server(Host::B, ServerLimits::default())
        .expect("server on b");
    let cfg = ClientConfig::new(server.addr);
    lab.run_in(Host::A, || {
        client::run_test(&cfg, spec, &AtomicBool::new(false), &mut |_| {})
    })
    .expect("thread in a")
    .expect("test across the lab")
}

/// A lab whose path is limited to `rate` bit/s with 1 ms of delay each way.
fn rate_lab(tag: &str, dir: &tempfile::TempDir, rate: f64) -> Lab {
    let path = PathConfig {
        rate_bps: Some(rate),
        delay: Duration::from_millis(1),
        ..PathConfig::default()
    };
    Lab::up(&name(tag), path, &options(dir)).expect("lab up")
}

fn namespaces() -> Vec<String> {
    let mut v = netsweep::platform::netns::list();
    v.sort();
    v
}

fn tcp(secs: u64, omit: u64) -> TestSpec {
    TestSpec {
        omit: Duration::from_secs(omit),
        ..TestSpec::tcp(Duration::from_secs(secs))
    }
}

#[test]
fn a_200_mbit_path_carries_90_to_102_percent_of_its_rate() {
    if !common::root_or_skip("a_200_mbit_path_carries_90_to_102_percent_of_its_rate") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = rate_lab("rt", &dir, 200e6);
    let r = run(&lab, &tcp(4, 1));
    let share = r.summary.bits_per_second / 200e6;
    assert!(
        (0.90..=1.02).contains(&share),
        "goodput {} = {share:.3} of the rate",
        r.summary.bits_per_second
    );
    // Every interval obeys the rate too, not just the average.
    for iv in r.intervals.iter().filter(|i| !i.omitted) {
        assert!(iv.total.bits_per_second <= 200e6 * 1.02, "{iv:?}");
    }
}

/// Behind a slow path the sender's socket holds seconds of data, so what it wrote in the
/// warm-up still arrives in the first measured seconds: the receiver's goodput is what it read
/// in its measured seconds, every interval at the path's rate. (Moving those bytes out of the
/// measured count, so that no receiver counted more bytes than its sender wrote in its own
/// seconds, read a 50 Mbit/s path's first second as 30.1 and the test as 7% below the wire, a
/// numbers audit found.)
#[test]
fn after_a_warm_up_every_measured_interval_reads_a_slow_paths_rate() {
    if !common::root_or_skip("after_a_warm_up_every_measured_interval_reads_a_slow_paths_rate") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let rate = 20e6;
    let lab = rate_lab("wu", &dir, rate);
    let r = run(&lab, &tcp(3, 1));
    for iv in r.intervals.iter().filter(|i| !i.omitted) {
        let share = iv.total.bits_per_second / rate;
        eprintln!(
            "{:.1}-{:.1} s: {share:.3} of the path's rate",
            iv.start_s, iv.end_s
        );
        assert!(
            (0.92..=1.02).contains(&share),
            "{:.1}-{:.1} s: {share:.3} of the path's rate",
            iv.start_s,
            iv.end_s
        );
    }
}

#[test]
fn a_20_ms_path_measures_20_ms() {
    if !common::root_or_skip("a_20_ms_path_measures_20_ms") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = PathConfig {
        delay: Duration::from_millis(10),
        ..PathConfig::default()
    };
    let lab = Lab::up(&name("rtt"), path, &options(&dir)).expect("lab up");
    if common::tool_or_skip("a_20_ms_path_measures_20_ms", "ping") {
        let out = lab
            .command(Host::A, "ping")
            .args(["-c", "20", "-i", "0.1", "198.18.0.2"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // The median of the replies: on this shared 2-core machine one late wake-up of the
        // delay line can add 20 ms to a single reply, which would move the mean of a few.
        let mut times: Vec<f64> = text
            .lines()
            .filter_map(|l| l.split("time=").nth(1))
            .filter_map(|t| t.split_whitespace().next()?.parse().ok())
            .collect();
        assert!(times.len() >= 15, "too few ping replies:\n{text}");
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        assert!(
            (median - 20.0).abs() <= 2.0,
            "ping median {median} ms for a 20 ms path; all replies: {times:?}"
        );
    }
    // A light TCP flow's smallest RTT from TCP_INFO agrees.
    let r = run(
        &lab,
        &TestSpec {
            bitrate_bps: 10e6,
            ..tcp(2, 0)
        },
    );
    let min = f64::from(r.summary.rtt_min_us.unwrap()) / 1000.0;
    assert!((min - 20.0).abs() <= 2.0, "TCP_INFO minimum RTT {min} ms");
}

/// A lab of 1 Gbit/s and 20 ms round trip.
fn gigabit_20ms_lab(tag: &str, dir: &tempfile::TempDir) -> Lab {
    let path = PathConfig {
        rate_bps: Some(1e9),
        delay: Duration::from_millis(10),
        ..PathConfig::default()
    };
    Lab::up(&name(tag), path, &options(dir)).expect("lab up")
}

#[test]
fn a_window_limits_a_flow_to_window_over_rtt() {
    if !common::root_or_skip("a_window_limits_a_flow_to_window_over_rtt") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = gigabit_20ms_lab("win", &dir);
    let mut rates = Vec::new();
    for window in [64u64 << 10, 256 << 10, 1 << 20, 8 << 20] {
        let r = run(
            &lab,
            &TestSpec {
                window_bytes: Some(window),
                ..tcp(3, 2)
            },
        );
        // Physics: no flow beats the window the receiver actually advertised, per RTT.
        let wnd = r.summary.snd_wnd_max_bytes.unwrap() as f64;
        let rtt = f64::from(r.summary.rtt_min_us.unwrap()) / 1e6;
        assert!(
            wnd > 0.0,
            "TCP_INFO carries the advertised window on this kernel"
        );
        assert!(
            r.summary.bits_per_second <= wnd * 8.0 / rtt * 1.02,
            "window {window}: {:?}",
            r.summary
        );
        rates.push((window, r.summary.bits_per_second));
    }
    // Linux grants twice the request and advertises part of it (its payload/truesize ratio),
    // so a 64 KiB window lands near, not exactly at, 64 KiB / 20 ms = 26.2 Mbit/s.
    let limit_64k = (64u64 << 10) as f64 * 8.0 / 0.020;
    let (_, r64) = rates[0];
    assert!(
        r64 <= limit_64k * 1.3,
        "64 KiB window at 20 ms: {r64} vs {limit_64k}"
    );
    assert!(
        r64 >= limit_64k * 0.7,
        "64 KiB window at 20 ms: {r64} far below {limit_64k}"
    );
    for pair in rates.windows(2) {
        assert!(
            pair[1].1 > pair[0].1 * 1.2,
            "larger windows must go faster: {rates:?}"
        );
    }
    for (w, r) in &rates {
        assert!(*r <= 1e9 * 1.02, "window {w}: {r} above the 1 Gbit/s rate");
        assert!(
            *r <= *w as f64 * 2.0 * 8.0 / 0.020,
            "window {w}: {r} above what even the doubled buffer allows"
        );
    }
    let (_, big) = rates[3];
    assert!(
        big >= 0.7e9,
        "an 8 MiB window should come near the 1 Gbit/s rate: {rates:?}"
    );
}

#[test]
fn a_clamped_window_is_exactly_the_window_advertised_both_ways() {
    if !common::root_or_skip("a_clamped_window_is_exactly_the_window_advertised_both_ways") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = gigabit_20ms_lab("cl", &dir);
    for direction in [Direction::Forward, Direction::Reverse] {
        for window in [256u64 << 10, 1 << 20] {
            let r = run(
                &lab,
                &TestSpec {
                    window_bytes: Some(window),
                    window_mode: WindowMode::Clamp,
                    direction,
                    ..tcp(3, 1)
                },
            );
            // The sender saw the receiver advertise the window and no more (window scaling
            // rounds it up to a multiple of 2^wscale), where a plain -w advertises up to 2x.
            let wnd = r.summary.snd_wnd_max_bytes.unwrap() as f64;
            let w = window as f64;
            assert!(
                wnd <= w * 1.01 + 1024.0 && wnd >= w * 0.9,
                "{direction:?} window {window}: advertised {wnd}: {:?}",
                r.summary
            );
            // And the flow runs at the window per RTT: 105 and 419 Mbit/s at 20 ms.
            let rtt = f64::from(r.summary.rtt_min_us.unwrap()) / 1e6;
            let bound = w * 8.0 / rtt;
            let got = r.summary.bits_per_second;
            assert!(
                got <= bound * 1.02 && got >= bound * 0.75,
                "{direction:?} window {window}: {got} bit/s against window/RTT {bound}"
            );
        }
    }
    lab.down().expect("lab down");
}

/// A lab whose path loses `percent` of the packets in each direction, 1 ms each way.
fn lossy_lab(tag: &str, dir: &tempfile::TempDir, percent: f64) -> Lab {
    let path = PathConfig {
        delay: Duration::from_millis(1),
        loss_percent: percent,
        ..PathConfig::default()
    };
    Lab::up(&name(tag), path, &options(dir)).expect("lab up")
}

#[test]
fn one_percent_loss_loses_about_one_percent_of_datagrams() {
    if !common::root_or_skip("one_percent_loss_loses_about_one_percent_of_datagrams") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = lossy_lab("loss", &dir, 1.0);
    let r = run(
        &lab,
        &TestSpec {
            bitrate_bps: 50e6,
            ..TestSpec::udp(Duration::from_secs(5))
        },
    );
    let packets = r.summary.packets.unwrap();
    assert!(packets >= 20_000, "{packets} datagrams");
    let loss = r.summary.lost_percent.unwrap();
    assert!(
        (0.5..=1.5).contains(&loss),
        "configured 1%, measured {loss}%"
    );
    // The delay line's own count of random drops matches what the receiver missed. Its count
    // also includes the few other packets it dropped on the way from a to b (UDP hellos, the
    // control connection's TCP segments), so it may exceed the loss by a handful, never fall short.
    let [(_, dropped), _] = lab.delay_line_counts().unwrap();
    let lost = r.summary.lost_packets.unwrap();
    assert!(
        (lost..=lost + 3).contains(&dropped),
        "delay-line drops {dropped} vs measured loss {lost}"
    );
}

/// The retransmits a TCP test prints, its rows (warm-up included) and the tail's after the last
/// interval, are the kernel's: a numbers audit found the tail's (27 of 366 on a 100 Mbit/s path
/// with 1% loss) in no figure. Namespace a's `Tcp.RetransSegs` also counts the control
/// connection's few, so the test's count may fall short of it by a handful, never exceed it.
#[test]
fn a_lossy_paths_retransmits_are_the_kernels_tail_included() {
    if !common::root_or_skip("a_lossy_paths_retransmits_are_the_kernels_tail_included") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = PathConfig {
        rate_bps: Some(100e6),
        delay: Duration::from_millis(10),
        loss_percent: 1.0,
        ..PathConfig::default()
    };
    let lab = Lab::up(&name("rtx"), path, &options(&dir)).expect("lab up");
    let retrans_segs = || {
        lab.run_in(Host::A, || {
            let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap();
            let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
            let (names, values) = (tcp.next().unwrap(), tcp.next().unwrap());
            let at = names
                .split_whitespace()
                .position(|n| n == "RetransSegs")
                .unwrap();
            values
                .split_whitespace()
                .nth(at)
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .unwrap()
    };
    let before = retrans_segs();
    let r = run(&lab, &tcp(3, 1));
    let kernel = retrans_segs() - before;
    let rows: u64 = r
        .intervals
        .iter()
        .map(|i| i.total.retransmits.unwrap_or(0))
        .sum();
    let counted = rows + r.summary.tail_retransmits.unwrap_or(0);
    assert!(
        kernel >= 50,
        "1% loss over 3 s at 100 Mbit/s: {kernel} retransmitted"
    );
    assert!(
        counted <= kernel && kernel <= counted + 5,
        "rows {rows} + tail {:?} against the kernel's {kernel}",
        r.summary.tail_retransmits
    );
}

/// Regression: the server echoed each UDP hello once; when a lossy path dropped that echo the
/// client gave up with "is UDP blocked on the path?". At 10% loss a tenth of the echoes are
/// lost; the old client failed this test in about half of the runs here (higher loss would
/// stall the TCP control connection instead).
#[test]
fn udp_tests_start_on_a_lossy_path() {
    if !common::root_or_skip("udp_tests_start_on_a_lossy_path") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = lossy_lab("lsy", &dir, 10.0);
    for _ in 0..3 {
        let r = run(
            &lab,
            &TestSpec {
                bitrate_bps: 20e6,
                streams: 8,
                ..TestSpec::udp(Duration::from_secs(1))
            },
        );
        let loss = r.summary.lost_percent.unwrap();
        assert!(
            (5.0..=15.0).contains(&loss),
            "configured 10%, measured {loss}%"
        );
    }
}

/// Receive bytes of `dev` as the kernel counts them in the calling thread's namespace.
fn rx_bytes(dev: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{dev}:")))
        .unwrap();
    line.split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn byte_counts_agree_with_the_kernels_interface_counters() {
    if !common::root_or_skip("byte_counts_agree_with_the_kernels_interface_counters") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let opts = LabOptions {
        emulator: EmulatorChoice::Auto,
        ..options(&dir)
    };
    let n = name("ctr");
    let lab = Lab::up(
        &n,
        PathConfig {
            rate_bps: Some(500e6),
            ..PathConfig::default()
        },
        &opts,
    )
    .expect("lab up");
    let dev = format!("nsw-{n}-b");
    let before = lab.run_in(Host::B, || rx_bytes(&dev)).unwrap();
    // No warm-up of any kind: every byte on the wire belongs to the summary or its tail.
    let r = run(
        &lab,
        &TestSpec {
            calibration: Duration::ZERO,
            ..tcp(2, 0)
        },
    );
    let after = lab.run_in(Host::B, || rx_bytes(&dev)).unwrap();
    let wire = after - before;
    let payload = r.summary.bytes + r.summary.tail_bytes;
    assert_eq!(
        payload, r.summary.sent_bytes,
        "receiver got exactly what the sender wrote"
    );
    // Interface bytes carry the payload plus headers (at most ~6% at MTU 1500) and the
    // control connection; netsweep can never have received more than the wire carried.
    assert!(
        payload <= wire,
        "netsweep counted {payload} bytes, the interface saw {wire}"
    );
    assert!(
        (wire as f64) <= payload as f64 * 1.06 + 200_000.0,
        "interface {wire} vs payload {payload}"
    );
    // And the rate limit holds on the kernel's own count.
    assert!(
        wire as f64 * 8.0 / 2.0 <= 500e6 * 1.25,
        "wire rate {}",
        wire as f64 * 4.0
    );
}

#[test]
fn labs_leave_nothing_behind_after_success_failure_and_interruption() {
    if !common::root_or_skip("labs_leave_nothing_behind_after_success_failure_and_interruption") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let before = namespaces();
    // Success, then an explicit down.
    let lab = Lab::up(&name("ok"), PathConfig::default(), &options(&dir)).expect("lab up");
    assert!(namespaces().len() == before.len() + 2);
    let removed = lab.down().unwrap();
    assert!(removed.iter().any(|r| r.starts_with("namespace")));
    assert_eq!(namespaces(), before);
    // A failure half way (a sysctl the kernel does not have) removes what was made.
    let bad = PathConfig {
        sysctls_b: vec![("net.ipv4.no_such_key".into(), "1".into())],
        ..PathConfig::default()
    };
    let err = Lab::up(&name("bad"), bad, &options(&dir))
        .err()
        .expect("must fail");
    assert!(format!("{err:#}").contains("no_such_key"), "{err:#}");
    assert_eq!(namespaces(), before);
    // A name that exists is refused with the way out.
    let lab = Lab::up(&name("dup"), PathConfig::default(), &options(&dir)).unwrap();
    let err = Lab::up(&name("dup"), PathConfig::default(), &options(&dir))
        .err()
        .expect("exists");
    // The way out names the running binary (this test's, here), as printed commands do.
    assert!(
        format!("{err:#}").contains(&format!(" lab down {}", name("dup"))),
        "{err:#}"
    );
    drop(lab);
    assert_eq!(namespaces(), before);
    // Interrupting `netsweep lab test` mid-test still tears everything down.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["lab", "test", "--rtt", "10ms", "--", "-t", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        namespaces().len(),
        before.len() + 2,
        "the lab test should be running"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("receiver"), "partial results printed: {text}");
    assert_eq!(
        namespaces(),
        before,
        "namespaces left after an interrupted lab test"
    );
}

#[test]
fn lab_commands_up_list_exec_down() {
    if !common::root_or_skip("lab_commands_up_list_exec_down") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let exe = env!("CARGO_BIN_EXE_netsweep");
    let n = name("cli");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(exe).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // Removed even when an assertion below fails (a second `lab down` says nothing to remove).
    struct Down<'a>(&'a str, &'a str);
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new(self.0)
                .args(["lab", "down", self.1])
                .output();
        }
    }
    let _down = Down(exe, &n);
    let (ok, text) = run(&[
        "lab",
        "up",
        &n,
        "--rate",
        "100M",
        "--rtt",
        "4ms",
        "--emulator",
        "userspace",
    ]);
    assert!(ok, "{text}");
    let (ok, text) = run(&["lab", "up", &n]);
    assert!(!ok && text.contains("already exists"), "{text}");
    // Other labs may exist (other tests', a user's): only this one's line counts.
    let (_, text) = run(&["lab", "list"]);
    let ours = text
        .lines()
        .find(|l| l.starts_with(&format!("{n}: ")))
        .unwrap_or_else(|| panic!("{n} not listed: {text}"));
    assert!(
        ours.contains("Userspace") && !ours.contains("LEFTOVER"),
        "{text}"
    );
    let (ok, text) = run(&["lab", "exec", &n, "a", "--", "ip", "-4", "addr"]);
    assert!(ok && text.contains("198.18.0.1"), "{text}");
    // The README's tour: a server started on host b in the background, a test from host a,
    // and `lab down` ends the server (deleting the namespace alone would only hide it).
    let mut server = std::process::Command::new(exe)
        .args(["lab", "exec", &n, "b", "--", exe, "server"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    common::wait_bounded_until(
        std::time::Duration::from_secs(10),
        "the lab's server",
        || {
            run(&[
                "lab",
                "exec",
                &n,
                "a",
                "--",
                exe,
                "-c",
                "198.18.0.2",
                "-t",
                "1",
            ])
            .0
        },
    );
    let (ok, text) = run(&["lab", "down", &n]);
    assert!(ok && text.contains("delay line process"), "{text}");
    assert!(text.contains("left running in"), "{text}");
    common::wait_bounded(&mut server, std::time::Duration::from_secs(10), "lab exec");
    let (ok, text) = run(&["lab", "down", &n]);
    assert!(ok && text.contains("nothing to remove"), "{text}");
}

/// A UDP sender held back on its own host (here a 200 Mbit/s `tbf` on the sender's own egress
/// device; the lab's path rate is a router's, further on) must not pass for a sender at the
/// asked rate: the result warns, names the rate it reached, and the loss figure is for that
/// rate.
#[test]
fn a_udp_sender_below_its_target_rate_is_flagged() {
    if !common::root_or_skip("a_udp_sender_below_its_target_rate_is_flagged") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lab = Lab::up(
        &name("uf"),
        PathConfig {
            delay: Duration::from_millis(1),
            ..PathConfig::default()
        },
        &options(&dir),
    )
    .expect("lab up");
    let ns = lab.namespace(Host::A);
    let out = lab
        .command(Host::A, "tc")
        .args([
            "qdisc", "add", "dev", &ns, "root", "tbf", "rate", "200mbit", "burst", "32k",
            "latency", "50ms",
        ])
        .output()
        .expect("tc");
    assert!(out.status.success(), "{out:?}");
    let spec = TestSpec {
        bitrate_bps: 400e6,
        ..TestSpec::udp(Duration::from_secs(3))
    };
    let r = run(&lab, &spec);
    let sent = r.summary.sent_bits_per_second;
    assert!(
        sent < 400e6 * 0.97,
        "sender at {sent}: the lab did not hold it back"
    );
    assert!(
        r.summary.bits_per_second <= 200e6 * 1.02,
        "{}",
        r.summary.bits_per_second
    );
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].contains("of the 400 Mbits/sec asked"),
        "{}",
        r.warnings[0]
    );
    let text = netsweep::traffic::output::summary(&r, Default::default());
    assert!(text.contains("WARNING: sender (client) reached"), "{text}");
    assert!(
        text.contains("  sender") && text.contains("  receiver"),
        "{text}"
    );
    // A sender that reaches its rate is not flagged.
    let calm = TestSpec {
        bitrate_bps: 50e6,
        ..TestSpec::udp(Duration::from_secs(2))
    };
    assert!(run(&lab, &calm).warnings.is_empty());
}

/// Regression (issue 31, item 6): `run` on a lab target installed its signal handlers only
/// after the lab was built, so a SIGTERM in its first 0.05-2.5 s left both namespaces. A
/// SIGTERM at any of these moments must leave nothing of the campaign's lab.
#[test]
fn sigterm_while_a_lab_campaign_starts_leaves_nothing() {
    if !common::root_or_skip("sigterm_while_a_lab_campaign_starts_leaves_nothing") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"lab\"\nrate = \"100M\"\nrtt = \"10ms\"\nemulator = \"userspace\"\n\
         [test]\nduration = \"3s\"\n[repeat]\ncount = 2\n",
    )
    .unwrap();
    let state_dir = std::path::Path::new(netsweep::lab::STATE_DIR);
    let mut built_when_signalled = 0;
    for (i, ms) in [50u64, 150, 300, 600, 1000, 1600, 2500]
        .into_iter()
        .enumerate()
    {
        let db = dir.path().join(format!("p{i}.db"));
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["run", plan.to_str().unwrap(), "--db", db.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // A campaign names its lab after its process id.
        let lab = format!("r{}", child.id() % 10_000_000);
        let _down = common::LabDown(lab.clone());
        std::thread::sleep(Duration::from_millis(ms));
        if netsweep::platform::netns::exists(&format!("nsw-{lab}-a")) {
            built_when_signalled += 1;
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        common::wait_bounded(
            &mut child,
            Duration::from_secs(60),
            "the signalled campaign",
        );
        let left = common::lab_leftovers(&lab, state_dir);
        assert!(left.is_empty(), "SIGTERM after {ms} ms left {left:?}");
    }
    // The delays must have met the build, not only the time before or after it.
    assert!(
        built_when_signalled > 0,
        "no signal arrived while the lab existed"
    );
}

/// Regression (issue 31, item 7): a kill -9 of `lab up` between the delay line's start and the
/// state write left `netsweep lab relay NAME` running, holding both TUN devices, invisible to
/// `lab list` and `lab down`. The next command's recovery finds and stops it; a relay whose
/// namespaces are removed behind its back ends by itself.
#[test]
fn a_lab_up_killed_after_the_relay_started_leaves_no_relay() {
    if !common::root_or_skip("a_lab_up_killed_after_the_relay_started_leaves_no_relay") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state_dir = std::path::Path::new(netsweep::lab::STATE_DIR);
    let relays = |n: &str| {
        netsweep::lab::processes::of_lab(n, state_dir)
            .into_iter()
            .filter(|p| p.kind == netsweep::lab::processes::Kind::Relay)
            .count()
    };
    for recovery in ["next command", "namespaces removed"] {
        let n = name(if recovery == "next command" {
            "krel"
        } else {
            "kns"
        });
        let _down = common::LabDown(n.clone());
        let args = [
            "lab",
            "up",
            n.as_str(),
            "--rate",
            "100M",
            "--rtt",
            "4ms",
            "--emulator",
            "userspace",
        ];
        let mut child =
            common::netsweep_paused_at(&args, &[], "relay-started", Duration::from_secs(60));
        common::kill9(&mut child);
        assert_eq!(
            relays(&n),
            1,
            "the relay should run, unrecorded ({recovery})"
        );
        if recovery == "next command" {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
                .args(["lab", "list"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(
                text.contains(&format!("lab {n} was left by process"))
                    && text.contains("delay line process"),
                "the recovery should say what it removed: {text}"
            );
        } else {
            // What a recovery that could not see the relay did (or a user's `ip netns del`).
            for h in ["a", "b"] {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", &format!("nsw-{n}-{h}")])
                    .output();
            }
            let _ = std::fs::remove_file(state_dir.join(format!("{n}.json")));
            let t0 = std::time::Instant::now();
            while relays(&n) > 0 && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let left = common::lab_leftovers(&n, state_dir);
        assert!(left.is_empty(), "{recovery}: left {left:?}");
    }
}

/// Issue 31, item 6, for `lab up`: a SIGTERM while it builds (namespaces, the relay process)
/// stops the build and removes what was made, the relay included.
#[test]
fn sigterm_while_lab_up_builds_leaves_nothing() {
    if !common::root_or_skip("sigterm_while_lab_up_builds_leaves_nothing") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state_dir = std::path::Path::new(netsweep::lab::STATE_DIR);
    let mut interrupted = 0;
    // `lab up` of this path takes about 0.2 s here: the delays fall inside it.
    for (i, ms) in [10u64, 40, 80, 130, 200].into_iter().enumerate() {
        let n = name(&format!("su{i}"));
        let _down = common::LabDown(n.clone());
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["lab", "up", &n, "--rate", "100M", "--rtt", "4ms"])
            .args(["--emulator", "userspace"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        common::wait_bounded(&mut child, Duration::from_secs(30), "the signalled lab up");
        // A `lab up` that finished before the signal keeps its lab, as asked; anything else
        // must have left nothing.
        let status = child.wait().unwrap();
        let left = common::lab_leftovers(&n, state_dir);
        if status.success() {
            eprintln!("lab up was done before the signal after {ms} ms");
            continue;
        }
        interrupted += 1;
        assert!(left.is_empty(), "SIGTERM after {ms} ms left {left:?}");
    }
    assert!(interrupted > 0, "every lab up was done before its signal");
}

/// Regression: UDP through a lab lost datagrams with nothing saying whether the path or the
/// emulator on a busy host dropped them. `lab test` now names each place: here the path's own
/// loss setting accounts for the datagrams the receiver missed.
#[test]
fn a_lab_udp_test_says_where_its_lost_datagrams_went() {
    if !common::root_or_skip("a_lab_udp_test_says_where_its_lost_datagrams_went") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["lab", "test", "--rtt", "2ms", "--loss", "3%", "--"])
        .args(["-u", "-b", "20M", "-t", "2"])
        .output()
        .expect("netsweep lab test");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let receiver = text
        .lines()
        .find(|l| l.contains(" sec ") && l.ends_with("receiver"))
        .unwrap_or_else(|| panic!("no receiver line: {text}"));
    let lost: u64 = receiver
        .split_whitespace()
        .find_map(|w| w.split_once('/').and_then(|(l, _)| l.parse().ok()))
        .unwrap_or_else(|| panic!("no lost/total in {receiver}"));
    let line = text
        .lines()
        .find(|l| l.starts_with("Lab path from host a to b:"))
        .unwrap_or_else(|| panic!("no account of the lost datagrams: {text}"));
    let by_loss: u64 = line
        .split("dropped on the way: ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(line.contains("to the path's loss setting"), "{line}");
    // The control connection crosses the same path, so a few drops may be its packets.
    assert!(
        lost > 0 && by_loss + 2 >= lost && by_loss <= lost + 20,
        "{lost} datagrams lost, the path's loss setting dropped {by_loss}: {line}"
    );
}

/// Regression (a numbers audit): a UDP test sending 150 Mbit/s into a 100 Mbit/s path behind a
/// 50 ms queue read its first interval at 103 Mbit/s, past the path's payload ceiling (98.1),
/// and its summary at 99.1: the receiver's bytes were counted by send time, the first interval
/// holding the queue's worth that arrived after it ended. Bytes count where they arrived:
/// every receiver interval and the summary within the ceiling, and the receiver's bytes within
/// what host b's interface took in.
#[test]
fn udp_receiver_rates_stay_within_the_paths_payload_ceiling() {
    if !common::root_or_skip("udp_receiver_rates_stay_within_the_paths_payload_ceiling") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let rate = 100e6;
    let n = name("uc");
    let lab = Lab::up(
        &n,
        PathConfig {
            rate_bps: Some(rate),
            delay: Duration::from_millis(10),
            ..PathConfig::default()
        },
        &options(&dir),
    )
    .expect("lab up");
    let dev = format!("nsw-{n}-b");
    let before = lab.run_in(Host::B, || rx_bytes(&dev)).unwrap();
    let r = run(
        &lab,
        &TestSpec {
            bitrate_bps: 150e6,
            ..TestSpec::udp(Duration::from_secs(3))
        },
    );
    let wire = lab.run_in(Host::B, || rx_bytes(&dev)).unwrap() - before;
    let len = f64::from(r.spec.length_bytes);
    // The path's rate is of IP packets: 28 bytes of IPv4 and UDP headers per datagram.
    let ceiling = rate * len / (len + 28.0);
    for iv in &r.intervals {
        let share = iv.total.bits_per_second / ceiling;
        eprintln!(
            "{:.1}-{:.1} s: {share:.4} of the payload ceiling",
            iv.start_s, iv.end_s
        );
        assert!(
            share <= 1.02,
            "{:.1}-{:.1} s: {} bit/s on a path whose payload ceiling is {ceiling}",
            iv.start_s,
            iv.end_s,
            iv.total.bits_per_second
        );
    }
    let share = r.summary.bits_per_second / ceiling;
    assert!(
        (0.9..=1.01).contains(&share),
        "summary {} bit/s: {share:.4} of the payload ceiling {ceiling}",
        r.summary.bits_per_second
    );
    assert!(
        r.summary.bytes as f64 * (len + 28.0) / len <= wire as f64,
        "the receiver counted {} bytes of payload, b's interface took in {wire}",
        r.summary.bytes
    );
    assert!(r.summary.lost_percent.unwrap() > 20.0, "{:?}", r.summary);
}
