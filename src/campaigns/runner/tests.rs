use super::*;
use crate::campaigns::plan::{Order, Plan};
use crate::traffic::measure::{IntervalReport, Role, StreamReport};
use crate::traffic::result::{CpuResult, StartInfo, StreamPair};
use crate::traffic::spec::Flow;
use std::collections::HashMap;

const PLAN: &str = r#"
[target]
kind = "loopback"
[test]
duration = "1s"
[matrix]
window = ["64K", "256K"]
parallel = [1, 2]
[dimensions.nic]
virtio = { setup = "setup virtio", teardown = "teardown virtio" }
e1000 = { setup = "setup e1000", teardown = "teardown e1000" }
[repeat]
count = 3
seed = 7
"#;

/// A synthetic result moving `bytes` per second for `spec.duration`.
pub fn fake_result(spec: &TestSpec, bytes_per_s: u64) -> TestResult {
    // Every slot of the grid (calibration and warm-up included) at `bytes_per_s`.
    let intervals = spec
        .timeline()
        .slots()
        .iter()
        .enumerate()
        .map(|(i, slot)| IntervalReport {
            stream: 0,
            index: i as u32,
            role: Role::Sender,
            bytes: (bytes_per_s as f64 * (slot.end - slot.start).as_secs_f64()).round() as u64,
            packets: 0,
            tcp: None,
            udp: None,
        })
        .collect::<Vec<_>>();
    let report = |role| StreamReport {
        stream: 0,
        flow: Flow::ClientToServer,
        role,
        intervals: intervals
            .iter()
            .cloned()
            .map(|mut i| {
                i.role = role;
                i
            })
            .collect(),
        tail_bytes: 0,
        tcp_total_retransmits: None,
        tcp_bytes_sent: None,
        tcp_bytes_retrans: None,
        tcp_dsack_dups: None,
        tcp_min_rtt_us: None,
        tcp_bytes_received: None,
        skipped_rx_copy: false,
        bytes_acked: None,
        drained: None,
        rtt_min_us: None,
        rtt_max_us: None,
        error: None,
        saw_end: false,
        highest_seq: None,
        udp_timing: None,
        send: None,
        receive: None,
    };
    let (s, r) = (report(Role::Sender), report(Role::Receiver));
    let spec1 = TestSpec {
        streams: 1,
        direction: crate::traffic::spec::Direction::Forward,
        ..spec.clone()
    };
    crate::traffic::result::build(
        &spec1,
        StartInfo::default(),
        &[StreamPair {
            flow: Flow::ClientToServer,
            sender: &s,
            receiver: &r,
        }],
        CpuResult::default(),
        None,
    )
}

#[derive(Default)]
struct Mock {
    runs: Vec<TestSpec>,
    shell: Vec<String>,
    fail_every: Option<usize>,
    stop_after: Option<usize>,
    /// Runs of this window (bytes; 0 = every run) fail with an error that names the run.
    broken_window: Option<u64>,
    /// Every k-th run ends without an error but with nothing arrived (a stalled path).
    silent_every: Option<usize>,
    /// The lab's guest dies after every k-th run (its runs fail until it is built again).
    dies_every: Option<usize>,
    dead: bool,
    rebuilt: usize,
}

impl Executor for Mock {
    fn describe(&self) -> String {
        "mock".into()
    }
    fn host_facts(&mut self) -> serde_json::Value {
        serde_json::json!({"host": "mock"})
    }
    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome {
        self.runs.push(spec.clone());
        let n = self.runs.len();
        if self.stop_after == Some(n) {
            stop.store(true, Ordering::Relaxed);
        }
        if let Some(w) = self.broken_window
            && (w == 0 || spec.window_bytes == Some(w))
        {
            return ExecOutcome::failed(format!(
                "run {n}: setsockopt: Permission denied (os error 13)"
            ));
        }
        if self.dead {
            return ExecOutcome::failed("host b's guest is no longer running".into());
        }
        if self.dies_every.is_some_and(|k| n.is_multiple_of(k)) {
            self.dead = true;
        }
        if self.fail_every.is_some_and(|k| n.is_multiple_of(k)) {
            return ExecOutcome {
                result: Err(format!("mock failure {n}")),
                counters: None,
                engine_time: Duration::ZERO,
            };
        }
        let bps = match self.silent_every {
            Some(k) if n.is_multiple_of(k) => 0,
            _ => spec.window_bytes.unwrap_or(1) * u64::from(spec.streams),
        };
        ExecOutcome {
            result: Ok(fake_result(spec, bps)),
            counters: Some(serde_json::json!({"n": n})),
            engine_time: Duration::ZERO,
        }
    }
    fn shell(&mut self, command: &str) -> Result<(), String> {
        self.shell.push(command.to_string());
        Ok(())
    }
    fn dead_guests(&self) -> Vec<String> {
        match self.dead {
            true => vec!["host b's guest (mock) is no longer running".into()],
            false => Vec::new(),
        }
    }
    fn revive(&mut self) -> Result<String, String> {
        self.dead = false;
        self.rebuilt += 1;
        Ok("its console".into())
    }
}

/// A guest that dies is built again before the next run, at most `MAX_REVIVALS` times; the
/// fourth death is said once, and its runs then fail until fail-fast stops the campaign.
#[test]
fn a_dead_guest_is_built_again_a_bounded_number_of_times() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let mut mock = Mock {
        dies_every: Some(2),
        ..Mock::default()
    };
    let mut notes = Vec::new();
    let out = run_campaign(
        &plan,
        &mut store,
        id,
        7,
        &mut mock,
        &AtomicBool::new(false),
        &mut |p| {
            if let Progress::Note(n) = p {
                notes.push(n.clone());
            }
        },
    )
    .unwrap();
    assert_eq!(mock.rebuilt, MAX_REVIVALS as usize);
    let again = "host b's guest (mock) is no longer running: the lab was built again with a new \
                 guest, and the campaign goes on\nits console";
    assert_eq!(notes.iter().filter(|n| *n == again).count(), 3, "{notes:?}");
    let not = notes
        .iter()
        .filter(|n| n.contains("its lab is not built again (guests died 3 times"))
        .count();
    assert_eq!(not, 1, "{notes:?}");
    // Runs 1-8 ran on live guests (each death after an even run, each revival before the next);
    // from the fourth death on every run failed, until every configuration was skipped.
    let runs = store.runs(id).unwrap();
    assert!(runs[..8].iter().all(|r| r.status == "ok"), "{runs:?}");
    assert!(runs[8..].iter().all(|r| r.status != "ok"), "{runs:?}");
    assert!(out.all_failing, "{out:?}");
}

fn setup(dir: &tempfile::TempDir) -> (Plan, Store, i64) {
    let plan = Plan::parse("p.toml", PLAN).unwrap();
    let mut store = Store::open(&dir.path().join("c.db")).unwrap();
    let id = store
        .create_campaign(&plan, Some("p.toml"), "mock", 7, &serde_json::json!({}))
        .unwrap();
    (plan, store, id)
}

/// Runs the campaign with seed 7 to its end, without progress output.
fn run_uninterrupted(plan: &Plan, store: &mut Store, id: i64, exec: &mut Mock) -> Outcome {
    run_campaign(
        plan,
        store,
        id,
        7,
        exec,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn interleaved_rounds_run_every_configuration_once_each() {
    let order = schedule(8, 3, Order::Interleaved, 7, None);
    assert_eq!(order.len(), 24);
    for r in 0..3 {
        let mut round: Vec<usize> = order
            .iter()
            .filter(|(_, x)| *x == r)
            .map(|(c, _)| *c)
            .collect();
        assert_eq!(
            order[(r * 8) as usize..((r + 1) * 8) as usize]
                .iter()
                .filter(|(_, x)| *x == r)
                .count(),
            8
        );
        round.sort();
        assert_eq!(round, (0..8).collect::<Vec<_>>());
    }
    // Freshly shuffled: rounds differ; the same seed gives the same order, another seed not.
    assert_ne!(
        order[0..8].iter().map(|x| x.0).collect::<Vec<_>>(),
        order[8..16].iter().map(|x| x.0).collect::<Vec<_>>()
    );
    assert_eq!(order, schedule(8, 3, Order::Interleaved, 7, None));
    assert_ne!(order, schedule(8, 3, Order::Interleaved, 8, None));
    let seq = schedule(2, 2, Order::Sequential, 7, None);
    // Grouping keeps each group's configurations together within a round.
    let grouped = schedule(6, 4, Order::Interleaved, 3, Some(&[0, 1, 0, 1, 0, 1]));
    for round in grouped.chunks(6) {
        let g: Vec<usize> = round.iter().map(|(c, _)| c % 2).collect();
        assert!(
            g[..3].iter().all(|x| *x == g[0]) && g[3..].iter().all(|x| *x != g[0]),
            "{round:?}"
        );
    }
    assert_eq!(seq, vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
}

#[test]
fn every_run_is_stored_with_its_configuration_and_commands_run_on_switches() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let mut mock = Mock::default();
    let out = run_uninterrupted(&plan, &mut store, id, &mut mock);
    assert_eq!(
        out,
        Outcome {
            ran: 24,
            failed: 0,
            interrupted: false,
            skipped: 0,
            skipped_left: 0,
            all_failing: false,
        }
    );
    let runs = store.runs(id).unwrap();
    assert_eq!(runs.len(), 24);
    for r in &runs {
        let w: u64 = if r.configuration.contains("window=64K") {
            65536
        } else {
            262144
        };
        let p: u64 = if r.configuration.contains("parallel=2") {
            2
        } else {
            1
        };
        assert_eq!(r.bits_per_second, Some((w * p * 8) as f64), "{r:?}");
    }
    // Each setup is followed by its teardown before another value's setup; all torn down at the end.
    let mut active: Option<String> = None;
    for c in &mock.shell {
        if let Some(v) = c.strip_prefix("setup ") {
            assert!(
                active.is_none(),
                "setup while {active:?} is active: {:?}",
                mock.shell
            );
            active = Some(v.into());
        } else if let Some(v) = c.strip_prefix("teardown ") {
            assert_eq!(active.as_deref(), Some(v));
            active = None;
        }
    }
    assert!(active.is_none());
    assert!(store.campaign(id).unwrap().finished_unix.is_some());
}

#[test]
fn failures_are_stored_and_the_campaign_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let mut mock = Mock {
        fail_every: Some(5),
        ..Mock::default()
    };
    let out = run_uninterrupted(&plan, &mut store, id, &mut mock);
    assert_eq!((out.ran, out.failed), (24, 4));
    let failed: Vec<_> = store
        .runs(id)
        .unwrap()
        .into_iter()
        .filter(|r| r.status == "failed")
        .collect();
    assert_eq!(failed.len(), 4);
    assert!(
        failed[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("mock failure")
    );
}

/// Regression (a trial's finding): a test in which nothing arrived (the guest stopped passing
/// traffic) was stored as a successful 0 bits/sec and ranked among "the fastest". It is a
/// failed run, its result kept beside the failure.
#[test]
fn a_test_in_which_nothing_arrived_is_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let mut mock = Mock {
        silent_every: Some(6),
        ..Mock::default()
    };
    let out = run_uninterrupted(&plan, &mut store, id, &mut mock);
    assert_eq!((out.ran, out.failed), (24, 4));
    let runs = store.runs(id).unwrap();
    let failed: Vec<_> = runs.iter().filter(|r| r.status == "failed").collect();
    assert_eq!(failed.len(), 4);
    assert!(
        failed.iter().all(|r| r
            .error
            .as_deref()
            .unwrap()
            .starts_with("no data arrived in the test's")),
        "{failed:?}"
    );
    assert!(
        runs.iter()
            .filter(|r| r.status == "ok")
            .all(|r| r.bits_per_second > Some(0.0))
    );
}

#[test]
fn resume_skips_finished_runs_and_keeps_the_original_order() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let stop = AtomicBool::new(false);
    let mut first = Mock {
        stop_after: Some(10),
        ..Mock::default()
    };
    let out = run_campaign(&plan, &mut store, id, 7, &mut first, &stop, &mut |_| {}).unwrap();
    assert!(out.interrupted);
    assert_eq!(out.ran, 9, "the interrupted 10th run is not stored");
    assert!(store.campaign(id).unwrap().finished_unix.is_none());
    let mut second = Mock::default();
    let out = run_uninterrupted(&plan, &mut store, id, &mut second);
    assert_eq!(out.ran, 15);
    let runs = store.runs(id).unwrap();
    assert_eq!(runs.len(), 24);
    // Stored sequence numbers are exactly the schedule positions, each once.
    let seqs: Vec<u64> = runs.iter().map(|r| r.sequence).collect();
    assert_eq!(seqs, (0..24).collect::<Vec<_>>());
    let mut seen = HashMap::new();
    for r in &runs {
        *seen.entry((r.configuration.clone(), r.round)).or_insert(0) += 1;
    }
    assert!(seen.values().all(|&n| n == 1));
    let expected: Vec<(usize, u32)> = schedule(8, 3, Order::Interleaved, 7, None);
    let configs = store.configurations(id).unwrap();
    for (r, (pos, round)) in runs.iter().zip(expected) {
        assert_eq!(
            (r.configuration.as_str(), r.round),
            (configs[pos].label.as_str(), round)
        );
    }
}

#[test]
fn plan_values_that_will_not_mean_what_they_say_are_warned_of() {
    let plan = |text: &str| Plan::parse("p.toml", text).unwrap();
    let host = HostLimits {
        root: false,
        rmem_max: Some(212_992),
        wmem_max: Some(212_992),
        netem: false,
    };
    let p = plan(
        "[target]\nkind = \"lab\"\nrate = \"10G\"\nrtt = \"1ms\"\n[test]\nduration = \"500ms\"\ninterval = \"1s\"\n\
         [matrix]\nwindow = [\"64K\", \"4M\"]\n[repeat]\ncount = 2\n",
    );
    let w = value_warnings(&p, &host).join("\n");
    for words in [
        "count = 2",
        "shorter than the interval",
        "window 4.00 MBytes is above net.core.rmem_max/wmem_max (208 KBytes)",
        "rate 10.0 Gbits/sec is above what the userspace delay line carries",
    ] {
        assert!(w.contains(words), "{words}: {w}");
    }
    // As root the caps do not bind (SO_*BUFFORCE), and netem carries the rate.
    let root = HostLimits {
        root: true,
        netem: true,
        ..host.clone()
    };
    let w = value_warnings(&p, &root).join("\n");
    assert!(!w.contains("rmem_max") && !w.contains("delay line"), "{w}");
    // A rate swept in the matrix is judged by its fastest value.
    let p = plan(
        "[target]\nkind = \"lab\"\nrtt = \"10ms\"\n[matrix]\nrate = [\"100M\", \"5G\"]\n[repeat]\ncount = 3\n",
    );
    let w = value_warnings(&p, &host).join("\n");
    assert!(
        w.contains("rate 5.00 Gbits/sec is above what the userspace delay line carries"),
        "{w}"
    );
    let p = plan(
        "[target]\nkind = \"lab\"\nrtt = \"10ms\"\n[matrix]\nrate = [\"100M\", \"1G\"]\n[repeat]\ncount = 3\n",
    );
    assert!(
        value_warnings(&p, &host).is_empty(),
        "{:?}",
        value_warnings(&p, &host)
    );
    // An address target's grants are the server's: not judged here.
    let p = plan(
        "[target]\nkind = \"address\"\nhost = \"198.18.0.2:5310\"\n[test]\nduration = \"2s\"\n\
         [matrix]\nwindow = [\"8M\"]\n[repeat]\ncount = 3\n",
    );
    assert!(value_warnings(&p, &host).is_empty());
}

/// A congestion control the host has but a guest's kernel lacks is refused before any traffic,
/// naming the end; one every end has passes.
#[test]
fn congestion_controls_are_checked_against_the_far_ends() {
    let plan = Plan::parse(
        "p.toml",
        "[target]\nkind = \"loopback\"\n[matrix]\ncongestion = [\"cubic\", \"bbr\"]\n[repeat]\ncount = 3\n",
    )
    .unwrap();
    let ends = [("host b's guest".to_string(), "reno cubic".to_string())];
    let problems = far_congestion_problems(&plan, &ends);
    assert_eq!(
        problems,
        vec![
            "congestion control \"bbr\" is not available on host b's guest (available: reno cubic)"
                .to_string()
        ]
    );
    let all = [("host a's guest".to_string(), "reno cubic bbr".to_string())];
    assert!(far_congestion_problems(&plan, &all).is_empty());
}

/// A netsweep server is asked about each distinct test of the plan before any traffic: each
/// refusal is reported once with the first configuration that met it, and a server that cannot
/// be asked gives one warning and no more questions.
#[test]
fn a_far_server_is_asked_about_every_distinct_test_once() {
    use crate::traffic::client::Admission;
    let plan = Plan::parse(
        "p.toml",
        "[target]\nkind = \"address\"\nhost = \"198.18.0.2:5310\"\n[matrix]\n\
         congestion = [\"cubic\", \"bbrr\"]\nwindow = [\"64K\", \"128K\"]\n\
         [dimensions.label]\nx = { setup = \"true\" }\ny = { setup = \"true\" }\n[repeat]\ncount = 3\n",
    )
    .unwrap();
    let mut asked = Vec::new();
    let (problems, warnings) = far_refusals(&plan, |spec| {
        asked.push((spec.congestion.clone(), spec.window_bytes));
        match spec.congestion.as_deref() {
            Some("bbrr") => Admission::Refused("no bbrr there".into()),
            _ => Admission::Admissible,
        }
    });
    // 8 configurations, 4 distinct tests (the label is not part of the test).
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("congestion=bbrr window=64K")
            && problems[0].ends_with(": no bbrr there"),
        "{problems:?}"
    );
    assert!(warnings.is_empty());
    let mut calls = 0;
    let (problems, warnings) = far_refusals(&plan, |_| {
        calls += 1;
        Admission::Unknown("198.18.0.2:5310: connection refused".into())
    });
    assert_eq!(calls, 1);
    assert!(problems.is_empty());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("connection refused"), "{warnings:?}");
}

/// Runs a campaign of `plan` to its end, keeping its notes.
fn run_noting(plan: &Plan, store: &mut Store, id: i64, exec: &mut Mock) -> (Outcome, Vec<String>) {
    let mut notes = Vec::new();
    let out = run_campaign(
        plan,
        store,
        id,
        7,
        exec,
        &AtomicBool::new(false),
        &mut |p| {
            if let Progress::Note(n) = p {
                notes.push(n.clone());
            }
        },
    )
    .unwrap();
    (out, notes)
}

#[test]
fn a_configuration_failing_the_same_way_twice_is_skipped_and_resume_retries_it() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    // window=64K fails in 4 of the 8 configurations (x parallel x nic).
    let mut mock = Mock {
        broken_window: Some(64 << 10),
        ..Mock::default()
    };
    let (out, notes) = run_noting(&plan, &mut store, id, &mut mock);
    // Rounds 1 and 2 fail; round 3 of those four is skipped; the others run all their rounds.
    assert_eq!((out.ran, out.failed, out.skipped), (20, 8, 4), "{notes:?}");
    assert!(!out.all_failing && !out.interrupted);
    let skips: Vec<&String> = notes.iter().filter(|n| n.starts_with("skipping")).collect();
    assert_eq!(skips.len(), 4, "once per configuration: {notes:?}");
    assert!(
        skips.iter().all(|n| n.contains("window=64K")
            && n.contains("rounds 1 and 2")
            && n.contains("Permission denied (os error 13)")),
        "{skips:?}"
    );
    let stored = store.skipped(id).unwrap();
    assert_eq!(stored.len(), 4);
    assert!(
        store.campaign(id).unwrap().finished_unix.is_none(),
        "left open for --resume"
    );
    // After the fix, resume runs the skipped rounds and finishes the campaign.
    let mut fixed = Mock::default();
    let (out, notes) = run_noting(&plan, &mut store, id, &mut fixed);
    assert_eq!((out.ran, out.failed, out.skipped), (4, 0, 0), "{notes:?}");
    assert!(
        notes[0].starts_with("retrying 4 configuration(s)"),
        "{notes:?}"
    );
    assert!(fixed.runs.iter().all(|s| s.window_bytes == Some(64 << 10)));
    assert!(store.skipped(id).unwrap().is_empty());
    assert!(store.campaign(id).unwrap().finished_unix.is_some());
    assert_eq!(store.runs(id).unwrap().len(), 24);
}

#[test]
fn when_every_configuration_is_failing_the_campaign_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut store, id) = setup(&dir);
    let mut mock = Mock {
        broken_window: Some(0),
        ..Mock::default()
    };
    let (out, notes) = run_noting(&plan, &mut store, id, &mut mock);
    assert!(out.all_failing, "{notes:?}");
    assert_eq!((out.ran, out.failed, out.skipped), (16, 16, 8));
    assert!(
        notes
            .last()
            .is_some_and(|n| n.starts_with("every configuration is failing")),
        "{notes:?}"
    );
}
