//! Bounded-time fuzzing of everything netsweep parses from outside (control frames, plans,
//! tuning profiles, number files for `stats`, iperf3 JSON documents), and a property test that
//! `stats` finishes within a second on any 2 to 50 finite values per set.
//!
//! The fuzzer is mutational, not coverage-guided (cargo-fuzz needs a nightly toolchain this
//! project does not have): each target starts from valid inputs and applies random byte and
//! token mutations, splices and truncations. Every input must return (an error is fine) without
//! a panic, within `SLOW_INPUT`; a watchdog aborts the run, printing the input, if one hangs.
//!
//! Time per target: `NETSWEEP_FUZZ_SECONDS`, else 60 s under CI and 3 s otherwise. The seed is
//! printed (`NETSWEEP_FUZZ_SEED` replays a run).

use netsweep::traffic::protocol::{self, ClientMsg, ServerMsg};
use netsweep::traffic::spec::ServerLimits;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An input slower than this fails the run (it is a hang in the making).
const SLOW_INPUT: Duration = Duration::from_secs(1);
/// An input slower than this aborts the process with the input printed.
const HANG: Duration = Duration::from_secs(20);

fn budget() -> Duration {
    let secs = std::env::var("NETSWEEP_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(
            if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
                60.0
            } else {
                3.0
            },
        );
    Duration::from_secs_f64(secs.clamp(0.1, 86_400.0))
}

fn seed() -> u64 {
    std::env::var("NETSWEEP_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random)
}

/// Tokens that break parsers more often than random bytes do.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "inf",
    "-inf",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "4294967296",
    "65536",
    "0.0000001",
    "\"",
    "\\",
    "\\u0000",
    "\\u001b",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "=",
    "\n",
    "\r\n",
    "#",
    "'''",
    "\"\"\"",
    "[[",
    "]]",
    "[matrix]\n",
    "[test]\n",
    "[target]\n",
    "[repeat]\n",
    "[profiles.x]\n",
    "null",
    "true",
    "false",
    "{}",
    "[]",
    "\u{202e}",
    "\u{1b}[2J",
    "\u{ffff}",
    "é",
];

fn mutate(rng: &mut StdRng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = if v.is_empty() {
            0
        } else {
            rng.gen_range(0..=v.len())
        };
        match rng.gen_range(0..8) {
            0 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = rng.gen_range(0..v.len());
                v[i] = rng.r#gen();
            }
            2 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())].as_bytes();
                v.splice(at..at, t.iter().copied());
            }
            3 if !v.is_empty() => {
                let end = (at + rng.gen_range(1..=16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            4 if !v.is_empty() => {
                let start = rng.gen_range(0..v.len());
                let end = (start + rng.gen_range(1..=32)).min(v.len());
                let piece: Vec<u8> = v[start..end].to_vec();
                for _ in 0..rng.gen_range(1..=8) {
                    v.splice(at..at, piece.iter().copied());
                }
            }
            5 => {
                let other = &corpus[rng.gen_range(0..corpus.len())];
                if !other.is_empty() {
                    let start = rng.gen_range(0..other.len());
                    let end = rng.gen_range(start..=other.len());
                    v.splice(at..at, other[start..end].iter().copied());
                }
            }
            6 => v.truncate(at),
            _ => {
                let n = rng.gen_range(1..=8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.r#gen()).collect();
                v.splice(at..at, bytes);
            }
        }
    }
    v.truncate(1 << 16);
    v
}

/// Runs `target` on mutations of `seeds` for the budget; `target` says whether the input was
/// accepted (parsed), so the run shows it reached past the first error. Returns how many inputs
/// ran.
fn fuzz(name: &str, seeds: &[&[u8]], target: impl Fn(&[u8]) -> bool) -> u64 {
    let seed = seed();
    eprintln!(
        "fuzz {name}: seed {seed} (NETSWEEP_FUZZ_SEED replays), {:?}",
        budget()
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let mut corpus: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_vec()).collect();
    // The watchdog sees the input in progress and when it started.
    let current: Arc<Mutex<Vec<u8>>> = Arc::default();
    let started = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (current, started, done) = (current.clone(), started.clone(), done.clone());
        let name = name.to_string();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let since = Duration::from_millis(started.load(Ordering::Relaxed));
                if epoch.elapsed().saturating_sub(since) > HANG && !done.load(Ordering::Relaxed) {
                    let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                    eprintln!(
                        "fuzz {name}: input hangs: {:?}",
                        String::from_utf8_lossy(&input)
                    );
                    std::process::abort();
                }
            }
        })
    };
    let deadline = Instant::now() + budget();
    let mut runs = 0u64;
    let mut accepted = 0u64;
    while Instant::now() < deadline {
        let input = if runs < seeds.len() as u64 {
            corpus[runs as usize].clone()
        } else {
            // Half the time a valid seed, so the corpus cannot drift to trivial inputs.
            let base = if rng.r#gen() {
                &corpus[rng.gen_range(0..seeds.len())]
            } else {
                &corpus[rng.gen_range(0..corpus.len())]
            };
            mutate(&mut rng, base, &corpus)
        };
        if let Ok(mut c) = current.lock() {
            c.clone_from(&input);
        }
        started.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
        let t0 = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| target(&input)));
        let took = t0.elapsed();
        match outcome {
            Ok(true) => {
                accepted += 1;
                // Accepted mutants are the best seeds for deeper ones (a cheap stand-in for
                // coverage feedback); the corpus stays bounded, and trivial inputs (an empty
                // plan is a valid plan) teach nothing.
                let worth_keeping = input.len() >= 16;
                if worth_keeping && corpus.len() < 256 {
                    corpus.push(input.clone());
                } else if worth_keeping {
                    let k = rng.gen_range(seeds.len()..corpus.len());
                    corpus[k] = input.clone();
                }
            }
            Ok(false) => {}
            Err(_) => {
                done.store(true, Ordering::Relaxed);
                panic!(
                    "fuzz {name}: panicked on {:?}",
                    String::from_utf8_lossy(&input)
                );
            }
        }
        assert!(
            took < SLOW_INPUT,
            "fuzz {name}: {took:?} on {:?}",
            String::from_utf8_lossy(&input)
        );
        runs += 1;
    }
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    eprintln!(
        "fuzz {name}: {runs} inputs ({accepted} accepted), no panic, none slower than {SLOW_INPUT:?}"
    );
    runs
}

/// Panics inside `catch_unwind` would print a backtrace per input; keep the output readable.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn fuzz_control_protocol() {
    quiet_panics();
    let spec = netsweep::traffic::spec::TestSpec::udp(Duration::from_secs(3));
    let request = serde_json::to_vec(&ClientMsg::Request { spec, ticket: None }).unwrap();
    let accepted =
        br#"{"type":"accepted","token":"0102030405060708090a0b0c0d0e0f10","udp_ports":[5000]}"#;
    let intervals = br#"{"type":"intervals","stream":0,"intervals":[{"stream":0,"index":0,"role":"receiver","bytes":5,"packets":1,"tcp":null,"udp":{"jitter_ms":0.1,"out_of_order":0,"duplicates":0}}]}"#;
    let refused = br#"{"type":"refused","refusal":{"kind":"limit","reason":"x"}}"#;
    let hello = protocol::udp_hello(&protocol::Token([9; 16]), 3);
    let pre = protocol::control_preamble();
    let greeting = protocol::client_greeting();
    let seeds: Vec<&[u8]> = vec![
        &request, accepted, intervals, refused, &hello, &pre, &greeting,
    ];
    let limits = ServerLimits::default();
    let runs = fuzz("control", &seeds, |b| {
        let client = protocol::decode::<ClientMsg>(b);
        if let Ok(ClientMsg::Request { spec, .. }) = &client {
            // What the server does with a request: validate, check caps, build the grid.
            if spec.validate().is_ok() && limits.refusal(spec).is_none() {
                let grid = spec.timeline();
                assert!(
                    grid.len() as u64 * spec.flows().len() as u64 <= limits.max_interval_records
                );
            }
        }
        let server = protocol::decode::<ServerMsg>(b);
        let hello = protocol::parse_udp_hello(b);
        if let Ok(p) = <[u8; 8]>::try_from(b.get(..8).unwrap_or_default()) {
            let _ = protocol::check_control_preamble(&p, true);
        }
        client.is_ok() || server.is_ok() || hello.is_some()
    });
    assert!(runs > 100, "{runs}");
}

#[test]
fn fuzz_plan_parser() {
    quiet_panics();
    let quickstart = include_bytes!("../examples/quickstart.toml");
    let issue = include_bytes!("fixtures/issue-plan.toml");
    let users = b"[target]\nkind = \"loopback\"\n[dimensions.q]\nsmall = { setup = \"true\" }\n[test]\nprotocol = \"udp\"\nbitrate = \"10M\"\n[repeat]\ncount = 5\nseed = 7\n";
    let runs =
        fuzz(
            "plan",
            &[quickstart, issue, users],
            |b| match netsweep::campaigns::plan::Plan::parse("fuzz.toml", &text(b)) {
                Ok(plan) => {
                    assert!(
                        plan.configurations().len() as u64
                            <= netsweep::campaigns::plan::MAX_CONFIGURATIONS
                    );
                    true
                }
                Err(_) => false,
            },
        );
    assert!(runs > 100, "{runs}");
}

#[test]
fn fuzz_profile_parser() {
    quiet_panics();
    let p = b"[profiles.big]\ndescription = \"big buffers\"\nlinux = { \"net.ipv4.tcp_rmem\" = \"4096 131072 16777216\" }\nfreebsd = { \"kern.ipc.maxsockbuf\" = \"16777216\" }\n";
    let runs = fuzz("profile", &[p], |b| {
        netsweep::host::tuning::profile::parse_file(&text(b)).is_ok()
    });
    assert!(runs > 100, "{runs}");
}

#[test]
fn fuzz_stats_input() {
    quiet_panics();
    let seeds: &[&[u8]] = &[
        b"1\n2\n3\n4\n",
        b"# comment\n1.5 x\n2.5 y\n1e3 z\n-4 w\n",
        b"10,20\n11,21\n12,22\n",
    ];
    let runs = fuzz("stats", seeds, |b| {
        let t = text(b);
        let (Ok(a), Ok(c)) = (
            netsweep::analysis::ministat::parse_values("a", &t, 1, " \t,"),
            netsweep::analysis::ministat::parse_values("b", &t.replace('1', "7"), 1, " \t,"),
        ) else {
            return false;
        };
        let sets = vec![("a".to_string(), a.clone()), ("b".to_string(), c.clone())];
        if let Ok(analysis) =
            netsweep::analysis::sets::analyze(&sets, &netsweep::analysis::sets::Config::default())
        {
            let opts = netsweep::analysis::ministat::PlotOptions {
                width: 74,
                separate_bars: false,
            };
            let _ = netsweep::analysis::ministat::render(&analysis, &[a, c], Some(opts));
        }
        true
    });
    assert!(runs > 100, "{runs}");
}

#[test]
fn fuzz_iperf3_json_importer() {
    quiet_panics();
    let tcp = br#"{"start":{"version":"iperf 3.12"},"end":{"sum_sent":{"retransmits":3,"bits_per_second":9.5e8},"sum_received":{"bits_per_second":9.4e8,"bytes":117500000,"seconds":1},"cpu_utilization_percent":{"host_total":12.5,"remote_total":30}}}"#;
    let udp = br#"{"end":{"sum":{"bits_per_second":1e6,"bytes":125000,"seconds":1,"lost_percent":0.5,"jitter_ms":0.01,"lost_packets":18446744073709551615}}}"#;
    let runs =
        fuzz(
            "iperf3-json",
            &[tcp, udp],
            |b| match netsweep::traffic::iperf3::parse_json_result(&text(b)) {
                Ok(i) => {
                    assert!(i.bits_per_second.is_finite() && i.bits_per_second >= 0.0);
                    assert!(i.lost_percent.is_none_or(|l| (0.0..=100.0).contains(&l)));
                    true
                }
                Err(_) => false,
            },
        );
    assert!(runs > 100, "{runs}");
}

/// Finite values of every shape a user's file can hold: ordinary, huge, tiny, negative,
/// repeated, and tied.
fn finite_value(rng: &mut StdRng, base: f64) -> f64 {
    match rng.gen_range(0..10) {
        0 => (rng.r#gen::<f64>() * 2.0 - 1.0) * 1e308,
        1 => rng.gen_range(-1e-300..1e-300),
        2 => base,
        3 => 0.0,
        4 => f64::MAX * if rng.r#gen() { 1.0 } else { -1.0 },
        5 => f64::MIN_POSITIVE,
        6 => (rng.gen_range(0..5) as f64) * 1e9,
        _ => base * rng.gen_range(0.5..1.5),
    }
}

/// Regression of the hang in `stats` (runs needed at ~10^8 degrees of freedom): any 2 to 50
/// finite values per set, 2 to 4 sets, analysed and rendered (plot included) within a second.
#[test]
fn stats_finishes_within_a_second_on_any_finite_sets() {
    let seed = seed();
    eprintln!("stats property: seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let deadline = Instant::now() + budget().min(Duration::from_secs(20));
    let mut cases = 0;
    while Instant::now() < deadline || cases < 200 {
        let base = rng.gen_range(-1e12..1e12);
        let sets: Vec<(String, Vec<f64>)> = (0..rng.gen_range(2..=4))
            .map(|k| {
                let n = rng.gen_range(2..=50);
                (
                    format!("s{k}"),
                    (0..n).map(|_| finite_value(&mut rng, base)).collect(),
                )
            })
            .collect();
        let t0 = Instant::now();
        if let Ok(a) =
            netsweep::analysis::sets::analyze(&sets, &netsweep::analysis::sets::Config::default())
        {
            let values: Vec<Vec<f64>> = sets.iter().map(|(_, v)| v.clone()).collect();
            let opts = netsweep::analysis::ministat::PlotOptions {
                width: 74,
                separate_bars: cases % 2 == 0,
            };
            let _ = netsweep::analysis::ministat::render(&a, &values, Some(opts));
        }
        assert!(t0.elapsed() < SLOW_INPUT, "{:?} on {sets:?}", t0.elapsed());
        cases += 1;
    }
    eprintln!("stats property: {cases} cases, each under {SLOW_INPUT:?}");
}

/// iperf3's control documents from a peer: parameters (what a netsweep server does with them:
/// refuse with a code, or build a test within its limits) and results.
#[test]
fn fuzz_iperf3_control_documents() {
    use netsweep::traffic::iperf3::{server, wire};
    quiet_panics();
    let fixture = |name: &str| {
        std::fs::read(format!(
            "{}/tests/fixtures/iperf3/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let params = fixture("udp-reverse-params.json");
    let results = fixture("udp-reverse-server-results.json");
    let tcp = br#"{"tcp":true,"omit":1,"time":10,"num":0,"blockcount":0,"parallel":4,"reverse":true,"window":262144,"len":131072,"bandwidth":18446744073709551615,"congestion":"bbr","client_version":"3.21"}"#;
    let limits = ServerLimits::default();
    let seeds: Vec<&[u8]> = vec![&params, &results, tcp];
    let runs = fuzz("iperf3-control", &seeds, |b| {
        let Ok(doc) = wire::parse_json(b) else {
            return false;
        };
        if let Ok(p) = wire::Params::from_json(&doc) {
            if let Ok(spec) = server::spec_for(&p, &limits) {
                assert!(spec.validate().is_ok());
                assert!(spec.total_time() <= limits.max_duration + Duration::from_secs(10));
                assert!(spec.interval_records() <= limits.max_interval_records);
            }
            // What a netsweep client would send for it reads back the same (peer text aside:
            // it is escaped and capped on every reading).
            let mut back = wire::Params::from_json(p.to_json().as_object().unwrap()).unwrap();
            let mut p = p.clone();
            for q in [&mut back, &mut p] {
                q.client_version = None;
                q.congestion = None;
            }
            assert_eq!(back, p);
        }
        if let Ok(r) = wire::Results::from_json(&doc) {
            assert!(r.streams.len() <= 2 * usize::from(wire::MAX_STREAMS));
            for s in &r.streams {
                let _ = (s.seconds(), s.measured_packets(), s.measured_errors());
            }
        }
        true
    });
    assert!(runs > 100, "{runs}");
}
