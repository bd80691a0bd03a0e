//! Every command of README.md's shell blocks, run as a reader would type it.
//!
//! The fenced blocks marked `sh`, `bash` or `shell` are read from the README at test time, one
//! command a line, and run in order with `sh -c` in one temporary directory (so a database one
//! block makes is there for the next), with the built binary first on `PATH` as `netsweep`,
//! `examples/` linked in, and the input files the README names (`before.txt`, `after.txt`,
//! `a`, `b`, `c`) written with sample numbers. Each command has a time limit (`timeout`
//! kills its whole process group) and must exit 0.
//!
//! Conventions, so the README stays plain:
//! - `cargo run --release -- ARGS` runs `netsweep ARGS`; `cargo test` and `cargo install` are
//!   not run (the suite itself, and an install into ~/.cargo: CI does both its own way).
//! - `netsweep -s` / `netsweep server`, and any line ending in `&`, start in the background for
//!   the rest of their block (their process group is ended then; a server started with `-D`
//!   and `-I FILE` is ended by the process ID in FILE, even when a command after it failed).
//! - A line with the placeholder `HOST` or the comment `# needs: peer` needs a second host and
//!   is skipped with that reason; a command whose program is not netsweep (`pscheduler`) runs
//!   only where that program is installed.
//! - Labs and VMs need root (network namespaces): `netsweep lab ...`, a `lab:NAME:` target, a
//!   lab address `198.18.x.x`, a plan with a `vm`. A block that names a lab it does not bring up
//!   itself gets one from the test (`netsweep lab up NAME --rate 1G --rtt 20ms`, taken down at
//!   the block's end even when a command fails); a lab address is then reached from host a
//!   (`netsweep lab exec NAME a -- ...`). Without root these are skipped with a line why (in CI
//!   that is a failure). VM plans run only in CI (they build a guest image).
//! - A command reading `--db FILE` that no earlier command made is skipped with that reason.
//! - A line with the comment `# needs: libvirt` needs a libvirt domain: `tests/libvirt.rs`
//!   runs those lines, as printed, against a real libvirtd and a domain it makes.
//! - `netsweep doctor` exits 2 when it finds a problem on this machine: that is its answer,
//!   so its lines may exit 0 or 2.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// README commands known to fail, with why, until the README is mended (it is kept apart from
/// the code). A listed command that starts to pass fails the test, so the list stays true.
const KNOWN_BROKEN: &[(&str, &str)] = &[];

/// One command of the README, with its line number.
#[derive(Debug, Clone)]
struct Line {
    number: usize,
    text: String,
}

/// The commands of each shell block, in order (comment-only and empty lines left out).
fn shell_blocks(readme: &str) -> Vec<Vec<Line>> {
    enum State {
        Outside,
        Shell(Vec<Line>),
        Other,
    }
    let mut blocks = Vec::new();
    let mut state = State::Outside;
    for (i, raw) in readme.lines().enumerate() {
        let t = raw.trim();
        if let Some(lang) = t.strip_prefix("```") {
            state = match state {
                State::Outside if matches!(lang.trim(), "sh" | "bash" | "shell") => {
                    State::Shell(Vec::new())
                }
                State::Outside => State::Other,
                State::Shell(b) => {
                    blocks.push(b);
                    State::Outside
                }
                State::Other => State::Outside,
            };
            continue;
        }
        if let State::Shell(b) = &mut state
            && !t.is_empty()
            && !t.starts_with('#')
        {
            b.push(Line {
                number: i + 1,
                text: t.to_string(),
            });
        }
    }
    blocks.retain(|b| !b.is_empty());
    blocks
}

/// What the test does with one command.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Run `command` with `sh -c`, within `limit`.
    Run {
        command: String,
        limit: Duration,
    },
    /// Start `command` in the background until the block ends; wait for `port` on
    /// 127.0.0.1 when it is a local server.
    Serve {
        command: String,
        port: Option<u16>,
    },
    Skip(String),
}

/// What a block needs before its commands.
struct Context<'a> {
    root: bool,
    ci: bool,
    dir: &'a Path,
    /// The lab the test brought up for this block, if any.
    lab: Option<&'a str>,
}

fn has_tool(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

/// The lab a line names: `lab:NAME:x`, or `netsweep lab up|exec|down NAME`.
fn lab_named(text: &str) -> Option<String> {
    if let Some(i) = text.find("lab:") {
        let rest = &text[i + 4..];
        return rest.split(':').next().map(str::to_string);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(4)
        .find(|w| w[0] == "netsweep" && w[1] == "lab" && matches!(w[2], "up" | "exec" | "down"))
        .map(|w| w[3].to_string())
}

fn needs_lab(text: &str) -> bool {
    text.contains("netsweep lab ") || text.contains("lab:") || text.contains("198.18.")
}

fn word_after<'t>(text: &'t str, flag: &str) -> Option<&'t str> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.windows(2).find(|w| w[0] == flag).map(|w| w[1])
}

fn plan(line: &Line, cx: &Context) -> Plan {
    let mut text = line.text.clone();
    if let Some(rest) = text.strip_prefix("cargo run --release -- ") {
        text = format!("netsweep {rest}");
    }
    let command = text.split('#').next().unwrap_or("").trim().to_string();
    if text.contains("# needs: peer") || command.split_whitespace().any(|w| w == "HOST") {
        return Plan::Skip("needs a second host (HOST placeholder or `# needs: peer`)".into());
    }
    if text.contains("# needs: libvirt") {
        return Plan::Skip(
            "needs a libvirt domain: tests/libvirt.rs runs it against a real libvirtd".into(),
        );
    }
    if command.starts_with("cargo test") {
        return Plan::Skip("the test suite itself (CI runs it)".into());
    }
    if command.starts_with("cargo install") {
        return Plan::Skip("installs into ~/.cargo/bin (CI builds the same binary)".into());
    }
    // Every program of a pipeline or `&&` chain must be here (jq, pscheduler).
    for part in command.split(['|', '&']) {
        let p = part.split_whitespace().next().unwrap_or("");
        if !p.is_empty() && p != "netsweep" && !has_tool(p) {
            return Plan::Skip(format!("{p} is not installed here"));
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    if matches!(words.get(1), Some(&"-s") | Some(&"server")) && words[0] == "netsweep" {
        let port = word_after(&command, "-p")
            .or(word_after(&command, "--port"))
            .and_then(|p| p.parse().ok())
            .unwrap_or(netsweep::traffic::protocol::DEFAULT_PORT);
        return Plan::Serve {
            command,
            port: Some(port),
        };
    }
    if let Some(background) = command.strip_suffix('&')
        && !background.ends_with('&')
    {
        return Plan::Serve {
            command: background.trim().to_string(),
            port: None,
        };
    }
    if let Some(db) = word_after(&command, "--db")
        && words.get(1) != Some(&"run")
        && !cx.dir.join(db).exists()
    {
        return Plan::Skip(format!(
            "reads {db}, which an earlier command makes and which did not run here"
        ));
    }
    let mut limit = Duration::from_secs(120);
    if words.get(1) == Some(&"run")
        && let Some(plan) = words.get(2)
    {
        let toml = std::fs::read_to_string(cx.dir.join(plan)).unwrap_or_default();
        if toml.lines().any(|l| l.trim_start().starts_with("vm ")) {
            if !(cx.ci && cx.root && has_tool("qemu-system-x86_64")) {
                return Plan::Skip(format!(
                    "{plan} runs a VM lab: CI only, as root with QEMU (it builds a guest image)"
                ));
            }
            limit = Duration::from_secs(1200);
        } else {
            // As root the plan's "auto" target is a lab; otherwise loopback.
            limit = Duration::from_secs(600);
        }
    }
    if needs_lab(&command) && !cx.root {
        assert!(
            !cx.ci,
            "README:{}: needs root and CI must run it: {command}",
            line.number
        );
        return Plan::Skip("needs root (a lab's network namespaces)".into());
    }
    // A lab address from outside the lab: reach it from host a of the lab brought up here.
    let command = match cx.lab {
        Some(lab) if command.contains("198.18.") && !command.contains("netsweep lab ") => {
            format!(
                "netsweep lab exec {lab} a -- sh -c {}",
                netsweep::paste::quote(&command)
            )
        }
        _ => command,
    };
    Plan::Run { command, limit }
}

/// Sample inputs for the commands that read files (`netsweep stats before.txt after.txt`).
fn write_inputs(dir: &Path) {
    let sample = |base: f64| -> String {
        (0..12)
            .map(|i| format!("{}\n", base + f64::from(i % 5) * 0.7 - f64::from(i % 3)))
            .collect()
    };
    for (name, base) in [
        ("before.txt", 100.0),
        ("after.txt", 108.0),
        ("a", 100.0),
        ("b", 101.0),
        ("c", 115.0),
    ] {
        std::fs::write(dir.join(name), sample(base)).expect("write an input");
    }
}

/// The binary as `netsweep` on a PATH of its own, first.
fn path_with_netsweep(dir: &Path) -> String {
    let bin = dir.join(".bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_netsweep"), bin.join("netsweep"))
        .expect("link netsweep");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn shell(command: &str, dir: &Path, path: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null());
    c
}

/// Background servers and labs of one block, stopped and removed when it ends.
struct BlockGuard {
    servers: Vec<Child>,
    /// Pidfiles of `-D` servers, which leave the process group.
    daemons: Vec<PathBuf>,
    labs: Vec<String>,
    dir: PathBuf,
    path: String,
}

impl Drop for BlockGuard {
    fn drop(&mut self) {
        for s in &mut self.servers {
            // The server leads its own process group: end the group (sh and netsweep).
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", s.id())])
                .status();
            common::wait_bounded(s, Duration::from_secs(10), "a README server");
        }
        for pidfile in &self.daemons {
            let Some(pid) = std::fs::read_to_string(pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            else {
                continue;
            };
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let t0 = Instant::now();
            while std::path::Path::new(&format!("/proc/{pid}")).exists()
                && t0.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        for lab in &self.labs {
            let _ = shell(&format!("netsweep lab down {lab}"), &self.dir, &self.path)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn wait_port(port: u16) -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(15) {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Runs `command` within `limit` (timeout(1) ends its whole process group); its status
/// and the end of its output.
fn run_bounded(command: &str, limit: Duration, dir: &Path, path: &str) -> (bool, String) {
    let limited = format!(
        "timeout -k 5 {} sh -c {}",
        limit.as_secs(),
        netsweep::paste::quote(command)
    );
    match shell(&limited, dir, path).output() {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            let tail: String = text
                .lines()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            let why = match o.status.code() {
                Some(124) => format!("timed out after {} s\n{tail}", limit.as_secs()),
                _ => format!("{}\n{tail}", o.status),
            };
            let answered = o.status.code() == Some(2) && command.contains("netsweep doctor");
            (o.status.success() || answered, why)
        }
        Err(e) => (false, format!("cannot start sh: {e}")),
    }
}

#[test]
fn every_readme_command_runs() {
    let root_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root_dir.join("README.md")).expect("README.md");
    let blocks = shell_blocks(&readme);
    assert!(!blocks.is_empty(), "README.md has no sh blocks");
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    std::os::unix::fs::symlink(root_dir.join("examples"), dir.join("examples"))
        .expect("link examples");
    write_inputs(dir);
    let path = path_with_netsweep(dir);
    let (root, ci) = (common::is_root(), common::in_ci());
    let mut failed = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    for block in &blocks {
        let mut guard = BlockGuard {
            servers: Vec::new(),
            daemons: Vec::new(),
            labs: Vec::new(),
            dir: dir.to_path_buf(),
            path: path.clone(),
        };
        // A lab the block uses without bringing it up: the test brings it up.
        let brings_up = block.iter().any(|l| l.text.contains("netsweep lab up "));
        let wanted = block
            .iter()
            .find(|l| needs_lab(&l.text))
            .map(|l| lab_named(&l.text).unwrap_or_else(|| "wan".into()));
        let mut lab = None;
        if let Some(name) = wanted.filter(|_| !brings_up && root) {
            let up = format!("netsweep lab up {name} --rate 1G --rtt 20ms");
            let (ok, why) = run_bounded(&up, Duration::from_secs(60), dir, &path);
            guard.labs.push(name.clone());
            assert!(ok, "the lab for README:{}: {up}: {why}", block[0].number);
            lab = Some(name);
        }
        for line in block {
            if line.text.contains("netsweep lab up ")
                && let Some(name) = lab_named(&line.text)
            {
                guard.labs.push(name);
            }
            let cx = Context {
                root,
                ci,
                dir,
                lab: lab.as_deref(),
            };
            match plan(line, &cx) {
                Plan::Skip(why) => {
                    skipped += 1;
                    eprintln!("SKIPPED README:{} `{}`: {why}", line.number, line.text);
                }
                Plan::Serve { command, port } => {
                    use std::os::unix::process::CommandExt;
                    let child = shell(&command, dir, &path)
                        .process_group(0)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("start the server");
                    guard.servers.push(child);
                    if command.split_whitespace().any(|w| w == "-D")
                        && let Some(pidfile) = word_after(&command, "-I")
                    {
                        guard.daemons.push(dir.join(pidfile));
                    }
                    // A server elsewhere (in a lab) is given a moment; a local one is waited for.
                    let listening = match port {
                        Some(port) => wait_port(port),
                        None => {
                            std::thread::sleep(Duration::from_secs(2));
                            true
                        }
                    };
                    if listening {
                        ran += 1;
                        eprintln!("started README:{} `{command}`", line.number);
                    } else {
                        failed.push(format!(
                            "README:{} `{command}`: not listening on 127.0.0.1:{port:?} after 15 s",
                            line.number
                        ));
                    }
                }
                Plan::Run { command, limit } => {
                    let t0 = Instant::now();
                    let (ok, why) = run_bounded(&command, limit, dir, &path);
                    ran += 1;
                    eprintln!(
                        "ran README:{} `{command}` in {:.1} s: {}",
                        line.number,
                        t0.elapsed().as_secs_f64(),
                        if ok { "ok" } else { "FAILED" }
                    );
                    match (ok, KNOWN_BROKEN.iter().find(|(c, _)| *c == command)) {
                        (true, Some(_)) => failed.push(format!(
                            "README:{} `{command}` works now: take it off KNOWN_BROKEN",
                            line.number
                        )),
                        (false, Some((_, reason))) => {
                            eprintln!("KNOWN BROKEN README:{} `{command}`: {reason}", line.number)
                        }
                        (false, None) => {
                            failed.push(format!("README:{} `{command}`: {why}", line.number))
                        }
                        (true, None) => {}
                    }
                }
            }
        }
        drop(guard);
    }
    eprintln!("README commands: {ran} ran, {skipped} skipped");
    assert!(ran > 0, "no README command ran");
    assert!(
        failed.is_empty(),
        "README commands that failed:\n{}",
        failed.join("\n\n")
    );
}

#[test]
fn the_shell_blocks_are_read_and_other_blocks_are_not() {
    let readme = "text\n```sh\nnetsweep -s   # a server\n# a comment\n\nnetsweep stats a b\n```\n\
                  ```toml\nname = \"x\"\n```\n```\noutput\n```\n```bash\nnetsweep tune bdp --rate 1G --rtt 1ms\n```\n";
    let blocks = shell_blocks(readme);
    let texts: Vec<Vec<&str>> = blocks
        .iter()
        .map(|b| b.iter().map(|l| l.text.as_str()).collect())
        .collect();
    assert_eq!(
        texts,
        vec![
            vec!["netsweep -s   # a server", "netsweep stats a b"],
            vec!["netsweep tune bdp --rate 1G --rtt 1ms"],
        ]
    );
    assert_eq!(blocks[0][1].number, 6);
}

#[test]
fn commands_are_planned_by_the_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let cx = Context {
        root: false,
        ci: false,
        dir: dir.path(),
        lab: None,
    };
    let plan_of = |t: &str| {
        plan(
            &Line {
                number: 1,
                text: t.into(),
            },
            &cx,
        )
    };
    assert!(matches!(plan_of("cargo test --release"), Plan::Skip(_)));
    assert!(matches!(
        plan_of("pscheduler task --tool netsweep throughput --dest HOST"),
        Plan::Skip(w) if w.contains("second host")
    ));
    assert!(matches!(
        plan_of("netsweep -s   # a server"),
        Plan::Serve {
            port: Some(5310),
            ..
        }
    ));
    assert!(matches!(
        plan_of("netsweep stats a b &"),
        Plan::Serve { port: None, .. }
    ));
    assert!(matches!(
        plan_of("netsweep explain --db q.db"),
        Plan::Skip(w) if w.contains("q.db")
    ));
    assert!(matches!(
        plan_of("netsweep lab down wan"),
        Plan::Skip(w) if w.contains("root")
    ));
    match plan_of("cargo run --release -- stats a b   # x") {
        Plan::Run { command, .. } => assert_eq!(command, "netsweep stats a b"),
        other => panic!("{other:?}"),
    }
}
