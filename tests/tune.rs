//! `netsweep tune` against a network namespace this test creates (root; CI runs it): apply,
//! status and restore; kill -9 of a holding process and recovery by the next command; signals;
//! and rejected profiles writing nothing.

mod common;

use common::sshd::Sshd;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A namespace of our own, deleted on drop.
struct Ns(String);

impl Ns {
    fn new(tag: &str) -> Ns {
        let name = format!("nswt-{tag}-{}", std::process::id());
        assert!(
            Command::new("ip")
                .args(["netns", "add", &name])
                .status()
                .unwrap()
                .success()
        );
        Ns(name)
    }

    fn read(&self, key: &str) -> String {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.0,
                "cat",
                &format!("/proc/sys/{}", key.replace('.', "/")),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn target(&self) -> String {
        format!("netns:{}", self.0)
    }

    /// Sets `key` to `value` in the namespace (by hand, as a user would), which must succeed.
    fn set(&self, key: &str, value: &str) {
        let ok = Command::new("ip")
            .args(["netns", "exec", &self.0, "sysctl", "-qw"])
            .arg(format!("{key}={value}"))
            .status()
            .unwrap();
        assert!(ok.success(), "{key}={value}");
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

const KEYS: [&str; 6] = [
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_no_metrics_save",
    "net.core.somaxconn",
];

fn snapshot(ns: &Ns) -> Vec<String> {
    KEYS.iter().map(|k| ns.read(k)).collect()
}

fn tune(runtime: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .env("NETSWEEP_RUNTIME_DIR", runtime)
        .arg("tune")
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

fn profile_file(dir: &Path, body: &str) -> String {
    let p = dir.join("profiles.toml");
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

const BIGBUF: &str = "[profiles.bigbuf.linux]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 16777216\"\n\"net.ipv4.tcp_wmem\" = \"4096 16384 16777216\"\n\"net.ipv4.tcp_no_metrics_save\" = \"1\"\n\n[profiles.bigbuf.freebsd]\n\"kern.ipc.maxsockbuf\" = \"16777216\"\n\"net.inet.tcp.sendbuf_max\" = \"16777216\"\n\"net.inet.tcp.recvbuf_max\" = \"16777216\"\n";

#[test]
fn apply_status_restore_in_a_namespace() {
    if !common::root_or_skip("apply_status_restore_in_a_namespace") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("a");
    let before = snapshot(&ns);
    let file = profile_file(dir.path(), BIGBUF);
    let t = ns.target();
    let o = tune(
        dir.path(),
        &["apply", "bigbuf", "--profiles", &file, "--target", &t],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ns.read("net.ipv4.tcp_rmem"), "4096 131072 16777216");
    assert_eq!(ns.read("net.ipv4.tcp_no_metrics_save"), "1");
    let o = tune(dir.path(), &["status", "--target", &t]);
    assert!(text(&o).contains("profile bigbuf applied"), "{}", text(&o));
    // A second profile on a tuned target is refused.
    let o = tune(
        dir.path(),
        &["apply", "bigbuf", "--profiles", &file, "--target", &t],
    );
    assert!(
        !o.status.success() && text(&o).contains("already tuned"),
        "{}",
        text(&o)
    );
    // Someone changes a key after the apply: the restore puts it back and says so.
    ns.set("net.ipv4.tcp_wmem", "4096 20000 5000000");
    let o = tune(dir.path(), &["restore", "--target", &t]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("note: net.ipv4.tcp_wmem held \"4096 20000 5000000\""),
        "{}",
        text(&o)
    );
    assert_eq!(snapshot(&ns), before);
    let o = tune(dir.path(), &["restore", "--target", &t]);
    assert!(
        text(&o).contains("nothing to restore"),
        "restore is idempotent"
    );
    // FreeBSD names are understood and shown with their Linux meaning.
    let o = tune(dir.path(), &["show", "bigbuf", "--profiles", &file]);
    assert!(
        text(&o).contains("kern.ipc.maxsockbuf") && text(&o).contains("net.core.rmem_max"),
        "{}",
        text(&o)
    );
}

/// Regression (issue 31, item 11): after a `tune apply` killed between its writes, `tune
/// status` said "profile X applied". The journal state of such an apply is made here by
/// putting the last key back to its original value after a complete apply.
#[test]
fn an_interrupted_tune_apply_is_reported_partially_applied() {
    if !common::root_or_skip("an_interrupted_tune_apply_is_reported_partially_applied") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("p");
    let before = snapshot(&ns);
    let original = ns.read("net.ipv4.tcp_no_metrics_save");
    let file = profile_file(dir.path(), BIGBUF);
    let t = ns.target();
    let o = tune(
        dir.path(),
        &["apply", "bigbuf", "--profiles", &file, "--target", &t],
    );
    assert!(o.status.success(), "{}", text(&o));
    let key = "/proc/sys/net/ipv4/tcp_no_metrics_save";
    let ok = Command::new("ip")
        .args(["netns", "exec", &ns.0, "sh", "-c"])
        .arg(format!("echo {original} > {key}"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "cannot put the key back");
    let o = tune(dir.path(), &["status", "--target", &t]);
    let out = text(&o);
    assert!(out.contains("PARTIALLY applied: 2 of 3 keys"), "{out}");
    assert!(!out.contains("profile bigbuf applied"), "{out}");
    assert!(out.contains("[NOT applied]"), "{out}");
    let o = tune(dir.path(), &["restore", "--target", &t]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(snapshot(&ns), before);
}

fn wait_for_journal(runtime: &Path) {
    let t0 = Instant::now();
    while std::fs::read_dir(runtime.join("tuning"))
        .map(|d| d.count())
        .unwrap_or(0)
        == 0
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no journal appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
}

/// `tune apply bigbuf --hold` on `ns`: applies, then holds until a signal restores.
fn hold_bigbuf(runtime: &Path, file: &str, ns: &Ns) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .env("NETSWEEP_RUNTIME_DIR", runtime)
        .args(["tune", "apply", "bigbuf", "--profiles", file, "--target"])
        .arg(ns.target())
        .arg("--hold")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_of_a_holder_is_restored_by_the_next_command() {
    if !common::root_or_skip("kill_9_of_a_holder_is_restored_by_the_next_command") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("k");
    let before = snapshot(&ns);
    let file = profile_file(dir.path(), BIGBUF);
    let mut holder = hold_bigbuf(dir.path(), &file, &ns);
    wait_for_journal(dir.path());
    assert_eq!(ns.read("net.ipv4.tcp_rmem"), "4096 131072 16777216");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_ne!(snapshot(&ns), before, "a kill -9 cannot restore by itself");
    let o = tune(dir.path(), &["status", "--target", &ns.target()]);
    assert!(text(&o).contains("ended without restoring"), "{}", text(&o));
    assert_eq!(snapshot(&ns), before);
}

#[test]
fn sigint_sigterm_and_sighup_restore_a_holder() {
    if !common::root_or_skip("sigint_sigterm_and_sighup_restore_a_holder") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("s");
    let before = snapshot(&ns);
    let file = profile_file(dir.path(), BIGBUF);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let holder = hold_bigbuf(dir.path(), &file, &ns);
        wait_for_journal(dir.path());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(holder.id() as i32, sig) };
        let out = holder.wait_with_output().unwrap();
        assert!(out.status.success(), "signal {sig}");
        assert_eq!(snapshot(&ns), before, "after signal {sig}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("tuning"))
                .unwrap()
                .count(),
            0,
            "journal removed"
        );
    }
}

/// Root is refused a host-wide key from inside a network namespace (the file is read-only
/// there): the reason says so, not "needs root" (what a remote netsweep running in a
/// namespace told a root user).
#[test]
fn root_refused_a_read_only_key_is_told_why() {
    if !common::root_or_skip("root_refused_a_read_only_key_is_told_why") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("ro");
    let file = profile_file(
        dir.path(),
        "[profiles.hw.linux]\n\"net.core.rmem_max\" = \"16777216\"\n\"net.ipv4.tcp_rmem\" = \"4096 131072 16777216\"\n",
    );
    let before = snapshot(&ns);
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.0,
            env!("CARGO_BIN_EXE_netsweep"),
            "tune",
        ])
        .args(["apply", "hw", "--profiles", &file, "--target", "local"])
        .env("NETSWEEP_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("net.core.rmem_max cannot be changed")
            && t.contains("read-only here, even for root"),
        "{t}"
    );
    assert!(!t.contains("needs root"), "{t}");
    assert_eq!(snapshot(&ns), before, "nothing written");
}

/// `tune show` of a raising profile with a target reads that target's values (an ssh
/// target's showed this host's and called them the server's).
#[test]
fn show_reads_the_values_of_the_target_it_is_given() {
    if !common::root_or_skip("show_reads_the_values_of_the_target_it_is_given") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("sh");
    let big = "4096 16384 9000000";
    ns.set("net.ipv4.tcp_wmem", big);
    ns.set("net.ipv4.tcp_rmem", "4096 131072 1048576");
    ns.set("net.ipv4.tcp_no_metrics_save", "0");
    let o = tune(
        dir.path(),
        &[
            "show",
            "high-bdp-ns",
            "--rate",
            "1G",
            "--rtt",
            "20ms",
            "--target",
            &ns.target(),
        ],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("net.ipv4.tcp_wmem"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        line.contains(&format!("(on {}: \"{big}\")", ns.target())),
        "{line}"
    );
    // Applied, the key already above the profile's value is counted and marked as kept.
    let profile = ["high-bdp-ns", "--rate", "1G", "--rtt", "20ms"];
    let o = tune(
        dir.path(),
        &[&["apply"], &profile[..], &["--target", &ns.target()]].concat(),
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("(2 settings changed, 1 kept;"), "{t}");
    let o = tune(dir.path(), &["status", "--target", &ns.target()]);
    let t = text(&o);
    let line = t
        .lines()
        .find(|l| l.trim_start().starts_with("net.ipv4.tcp_wmem"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(line.contains("[kept]"), "{line}");
    let o = tune(dir.path(), &["restore", "--target", &ns.target()]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ns.read("net.ipv4.tcp_wmem"), big);
}

#[test]
fn rejected_keys_and_values_write_nothing() {
    if !common::root_or_skip("rejected_keys_and_values_write_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("r");
    let before = snapshot(&ns);
    let t = ns.target();
    for (body, why) in [
        // A good key with a host-wide one: refused as a whole on a namespace, with the true
        // reason on this kernel (read-only there) or on kernels without it in a namespace.
        (
            "[profiles.p.linux]\n\"net.ipv4.tcp_sack\" = \"0\"\n\"net.core.rmem_max\" = \"9999999\"\n",
            "read-only inside a network namespace|host-wide",
        ),
        // A value that does not parse.
        (
            "[profiles.p.linux]\n\"net.ipv4.tcp_sack\" = \"0\"\n\"net.ipv4.tcp_rmem\" = \"lots\"\n",
            "does not parse",
        ),
        // A key off the allowlist, and path tricks.
        (
            "[profiles.p.linux]\n\"net.ipv4.tcp_sack\" = \"0\"\n\"kernel.panic\" = \"1\"\n",
            "allowlist",
        ),
        (
            "[profiles.p.linux]\n\"net.ipv4.tcp_sack\" = \"0\"\n\"net/../kernel.panic\" = \"1\"\n",
            "not accepted",
        ),
    ] {
        let file = profile_file(dir.path(), body);
        let o = tune(
            dir.path(),
            &["apply", "p", "--profiles", &file, "--target", &t],
        );
        assert!(!o.status.success(), "{body}");
        assert!(
            why.split('|').any(|w| text(&o).contains(w)),
            "{why}: {}",
            text(&o)
        );
        assert_eq!(snapshot(&ns), before, "nothing written for {why}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("tuning"))
                .map(|d| d.count())
                .unwrap_or(0),
            0
        );
    }
}

/// Without root nothing can be written: the profile is refused up front with the reason, and
/// no journal is left (not "permission denied" half-way through).
#[test]
fn a_user_without_root_is_told_before_anything_is_written() {
    if !common::root_or_skip("a_user_without_root_is_told_before_anything_is_written")
        || !common::tool_or_skip(
            "a_user_without_root_is_told_before_anything_is_written",
            "setpriv",
        )
    {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = profile_file(
        dir.path(),
        "[profiles.p.linux]\n\"net.ipv4.tcp_no_metrics_save\" = \"1\"\n",
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A copy the unprivileged user can reach whatever the permissions of the checkout.
    let exe = dir.path().join("netsweep");
    std::fs::copy(env!("CARGO_BIN_EXE_netsweep"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = || {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&exe)
            .args(["tune", "apply", "p", "--profiles", &file])
            .env("NETSWEEP_RUNTIME_DIR", dir.path())
            .output()
            .unwrap()
    };
    // A child another test thread forks while the copy is open for writing holds that
    // descriptor until it execs, and exec of the copy then fails with ETXTBSY: retry.
    let mut o = run();
    for _ in 0..50 {
        if !text(&o).contains("Text file busy") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        o = run();
    }
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("needs root") && t.contains("nothing was written"),
        "{t}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("tuning"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "no journal may be left"
    );
}

/// A tuned campaign run inside a lab host: SIGINT at 50 random moments (and one kill -9)
/// always leaves every touched key at its original value, and every run records the values
/// in force.
#[test]
fn sigint_at_50_random_moments_of_a_tuned_campaign_restores_everything() {
    if !common::root_or_skip("sigint_at_50_random_moments_of_a_tuned_campaign_restores_everything")
    {
        return;
    }
    use netsweep::lab::{Host, Lab, LabOptions, PathConfig};
    let dir = tempfile::tempdir().unwrap();
    let lab_opts = LabOptions {
        state_dir: dir.path().join("labs"),
        ..LabOptions::default()
    };
    let lab = Lab::up(
        &format!("tq{}", std::process::id() % 100_000),
        PathConfig::default(),
        &lab_opts,
    )
    .unwrap();
    let _server = lab
        .start_server(Host::B, netsweep::traffic::spec::ServerLimits::default())
        .unwrap();
    let ns = Ns(lab.namespace(Host::A));
    let before = snapshot(&ns);
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[target]\nkind = \"address\"\nhost = \"198.18.0.2:5310\"\n[test]\nduration = \"300ms\"\ninterval = \"100ms\"\n\
             [matrix]\nwindow = [\"64K\", \"256K\"]\nprofile = [\"default\", \"bigbuf\"]\n[repeat]\ncount = 40\nseed = 5\n\n{BIGBUF}"
        ),
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let runtime = dir.path().join("rt");
    let runner = |resume: bool| {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &ns.0,
            env!("CARGO_BIN_EXE_netsweep"),
            "run",
        ])
        .arg(&plan)
        .arg("--db")
        .arg(&db)
        .env("NETSWEEP_RUNTIME_DIR", &runtime)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if resume {
            c.arg("--resume");
        }
        c
    };
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..50 {
        let started = db.exists();
        let child = runner(started).spawn().unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(150 + rng % 1200));
        // `ip netns exec` execs netsweep, so the pid is netsweep's own.
        let sig = if i == 25 { libc::SIGKILL } else { libc::SIGINT };
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        if sig == libc::SIGKILL {
            // The next tuning command (here: the next runner) restores from the journal.
            continue;
        }
        let _ = out;
        assert_eq!(
            snapshot(&ns),
            before,
            "a key was left changed after SIGINT number {i}"
        );
    }
    let o = runner(true).status().unwrap();
    assert!(o.success() || o.code() == Some(2), "final run");
    assert_eq!(snapshot(&ns), before, "after the campaign");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (n, tuned): (i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(tuning_json LIKE '%\"profile\":\"bigbuf\"%' AND tuning_json LIKE '%16777216%') FROM run",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(n, 160, "every run stored once");
    assert_eq!(tuned, 80, "bigbuf runs record the values in force");
}

/// A throwaway OpenSSH server on 198.18.0.2:2222 inside host b of `lab`.
fn start_sshd(lab: &netsweep::lab::Lab, d: &Path) -> Sshd {
    let ns = lab.namespace(netsweep::lab::Host::B);
    Sshd::start(&ns, std::net::Ipv4Addr::new(198, 18, 0, 2), d)
}

/// A lab with a plain path, its state under `dir`.
fn plain_lab(tag: &str, dir: &Path) -> netsweep::lab::Lab {
    use netsweep::lab::{Lab, LabOptions, PathConfig};
    let opts = LabOptions {
        state_dir: dir.join("labs"),
        ..LabOptions::default()
    };
    Lab::up(
        &format!("{tag}{}", std::process::id() % 100_000),
        PathConfig::default(),
        &opts,
    )
    .unwrap()
}

fn ssh_tools(test: &str) -> bool {
    common::root_or_skip(test)
        && common::tool_or_skip(test, "ssh-keygen")
        && common::tool_or_skip(test, "/usr/sbin/sshd")
}

/// The command after `restore with:` in a tune's output.
fn restore_hint(o: &Output) -> String {
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .find_map(|l| l.strip_prefix("restore with: "))
        .unwrap_or_else(|| panic!("no restore hint: {}", text(o)))
        .to_string()
}

/// `command` run by a shell in lab host a, as a user pastes it there.
fn pasted_in_a(lab: &netsweep::lab::Lab, command: &str) -> Output {
    Command::new("ip")
        .args(["netns", "exec", &lab.namespace(netsweep::lab::Host::A)])
        .args(["sh", "-c", command])
        .output()
        .unwrap()
}

/// `netsweep tune ARGS --target ssh:root@198.18.0.2` run in lab host a, with `remote` as
/// the netsweep command on host b and `runtime` (if any) as this end's runtime directory.
fn tune_over_ssh(
    lab: &netsweep::lab::Lab,
    sshd: &Sshd,
    remote: &str,
    runtime: Option<&Path>,
    args: &[&str],
) -> Output {
    tune_over_ssh_as(lab, sshd, (remote, "ssh:root@198.18.0.2"), runtime, args)
}

/// `tune_over_ssh` with the target named `target`.
fn tune_over_ssh_as(
    lab: &netsweep::lab::Lab,
    sshd: &Sshd,
    (remote, target): (&str, &str),
    runtime: Option<&Path>,
    args: &[&str],
) -> Output {
    let mut c = Command::new("ip");
    c.args([
        "netns",
        "exec",
        &lab.namespace(netsweep::lab::Host::A),
        env!("CARGO_BIN_EXE_netsweep"),
        "tune",
    ])
    .args(args)
    .args(["--target", target, "--remote-netsweep", remote]);
    for o in sshd.options() {
        c.args(["--ssh-option", &o]);
    }
    if let Some(r) = runtime {
        c.env("NETSWEEP_RUNTIME_DIR", r);
    }
    c.output().unwrap()
}

/// A remote host without netsweep is tuned with plain `sysctl -w` over ssh: the profile's
/// Linux table there, the journal kept on this end, and restore puts every value back.
#[test]
fn a_remote_host_without_netsweep_is_tuned_with_plain_sysctl() {
    if !ssh_tools("a_remote_host_without_netsweep_is_tuned_with_plain_sysctl") {
        return;
    }
    use netsweep::lab::Host;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lab = plain_lab("tp", d);
    let nb = Ns(lab.namespace(Host::B));
    let before = snapshot(&nb);
    let sshd = start_sshd(&lab, d);
    let file = profile_file(d, BIGBUF);
    let rt = d.join("rt");
    let run = |args: &[&str]| tune_over_ssh(&lab, &sshd, "/nonexistent/netsweep", Some(&rt), args);
    let o = run(&["apply", "bigbuf", "--profiles", &file]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("plain sysctl commands"), "{}", text(&o));
    // The restore it suggests reaches the host through the same ssh options (it dropped
    // them, and ssh went to port 22).
    let hint = restore_hint(&o);
    for o in sshd.options() {
        assert!(hint.contains(&format!("--ssh-option {o}")), "{hint}");
    }
    assert_eq!(nb.read("net.ipv4.tcp_rmem"), "4096 131072 16777216");
    assert_eq!(nb.read("net.ipv4.tcp_no_metrics_save"), "1");
    // The journal is on this end, under this end's runtime directory, named by the login ssh
    // resolves (its user, address and port).
    let journal = rt.join(format!(
        "tuning/ssh-root_198.18.0.2_{}.json",
        common::sshd::PORT
    ));
    let j = std::fs::read_to_string(&journal).expect("local journal");
    assert!(j.contains("net.ipv4.tcp_wmem"), "{j}");
    assert!(
        !j.contains("kern.ipc.maxsockbuf"),
        "the FreeBSD table is not for a Linux host"
    );
    let o = run(&["status"]);
    assert!(text(&o).contains("4096 131072 16777216"), "{}", text(&o));
    // The same login named without its user (ssh's `User` option gives it): the same journal
    // (it was another, and said the host was not tuned).
    let o = tune_over_ssh_as(
        &lab,
        &sshd,
        ("/nonexistent/netsweep", "ssh:198.18.0.2"),
        Some(&rt),
        &["status", "--ssh-option", "User=root"],
    );
    assert!(text(&o).contains("profile bigbuf applied"), "{}", text(&o));
    // netsweep installed there since (or named right): the journal here still answers
    // (the remote's own said "not tuned" of a host that was).
    let now_with =
        |args: &[&str]| tune_over_ssh(&lab, &sshd, env!("CARGO_BIN_EXE_netsweep"), Some(&rt), args);
    let o = now_with(&["status"]);
    assert!(text(&o).contains("profile bigbuf applied"), "{}", text(&o));
    let o = run(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(snapshot(&nb), before);
    assert!(!journal.exists());
}

/// The ssh target end to end: `netsweep tune ... --target ssh:root@198.18.0.2` from host a
/// tunes host b through a real OpenSSH server.
#[test]
fn the_ssh_target_tunes_and_restores_a_remote_host() {
    if !ssh_tools("the_ssh_target_tunes_and_restores_a_remote_host") {
        return;
    }
    use netsweep::lab::Host;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lab = plain_lab("ts", d);
    let nb = Ns(lab.namespace(Host::B));
    let before = snapshot(&nb);
    let sshd = start_sshd(&lab, d);
    let file = profile_file(d, BIGBUF);
    let ssh_tune =
        |args: &[&str]| tune_over_ssh(&lab, &sshd, env!("CARGO_BIN_EXE_netsweep"), None, args);
    // The profile file is this end's, sent over (the remote opened the path on its side).
    let o = ssh_tune(&["apply", "bigbuf", "--profiles", "p.toml"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("cannot read p.toml"), "{}", text(&o));
    let o = ssh_tune(&["apply", "bigbuf", "--profiles", &file]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        nb.read("net.ipv4.tcp_rmem"),
        "4096 131072 16777216",
        "applied on the remote host (host b)"
    );
    let o = ssh_tune(&["status"]);
    assert!(text(&o).contains("profile bigbuf applied"), "{}", text(&o));
    // The restore the remote suggests, printed as it reaches host b from here (the remote's
    // own `--target local` restored host a, "nothing to restore"), pasted as printed.
    let o = ssh_tune(&["apply", "bigbuf", "--profiles", &file]);
    assert!(text(&o).contains("already tuned"), "{}", text(&o));
    let o = ssh_tune(&["restore"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(snapshot(&nb), before);
    let o = ssh_tune(&["apply", "bigbuf", "--profiles", &file]);
    let hint = restore_hint(&o);
    assert!(hint.contains("--target ssh:root@198.18.0.2"), "{hint}");
    let pasted = pasted_in_a(&lab, &hint);
    assert!(pasted.status.success(), "{hint}: {}", text(&pasted));
    assert!(
        text(&pasted).contains("restored profile bigbuf"),
        "{}",
        text(&pasted)
    );
    assert_eq!(snapshot(&nb), before, "restored by the pasted command");
    // `--hold` holds here and restores there on Ctrl-C (the remote holder outlived this end).
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &lab.namespace(Host::A)])
        .args([env!("CARGO_BIN_EXE_netsweep"), "tune", "apply", "bigbuf"])
        .args([
            "--profiles",
            &file,
            "--hold",
            "--target",
            "ssh:root@198.18.0.2",
        ])
        .args(["--remote-netsweep", env!("CARGO_BIN_EXE_netsweep")]);
    for o in sshd.options() {
        c.args(["--ssh-option", &o]);
    }
    let holder = c.stdout(Stdio::piped()).spawn().unwrap();
    let held = common::wait_bounded_check(Duration::from_secs(20), || {
        nb.read("net.ipv4.tcp_rmem") == "4096 131072 16777216"
    });
    assert!(held, "applied while holding");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child (ip netns exec runs netsweep in its place).
    unsafe { libc::kill(holder.id() as i32, libc::SIGINT) };
    let out = holder.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(snapshot(&nb), before, "restored there: {}", text(&out));
}

/// A campaign against a remote `netsweep server` tunes both ends: this host directly, the
/// server through `[target] server_tuning = "ssh:..."`, and restores both.
#[test]
fn a_campaign_tunes_the_server_of_an_address_target_over_ssh() {
    if !ssh_tools("a_campaign_tunes_the_server_of_an_address_target_over_ssh") {
        return;
    }
    use netsweep::lab::Host;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lab = plain_lab("tc", d);
    let _server = lab
        .start_server(Host::B, netsweep::traffic::spec::ServerLimits::default())
        .unwrap();
    let (na, nb) = (Ns(lab.namespace(Host::A)), Ns(lab.namespace(Host::B)));
    let (before_a, before_b) = (snapshot(&na), snapshot(&nb));
    let sshd = start_sshd(&lab, d);
    let opts: Vec<String> = sshd.options().iter().map(|o| format!("\"{o}\"")).collect();
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[target]\nkind = \"address\"\nhost = \"198.18.0.2:5310\"\nserver_tuning = \"ssh:root@198.18.0.2\"\n\
             ssh_options = [{}]\nremote_netsweep = \"{}\"\n[test]\nduration = \"300ms\"\ninterval = \"100ms\"\n\
             [matrix]\nprofile = [\"default\", \"bigbuf\"]\n[repeat]\ncount = 2\nseed = 3\n\n{BIGBUF}",
            opts.join(", "),
            env!("CARGO_BIN_EXE_netsweep")
        ),
    )
    .unwrap();
    let db = d.join("c.db");
    // `netsweep run PLAN --db DB [EXTRA]` in host a.
    let run = |db: &Path, extra: &[&str]| {
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &na.0,
                env!("CARGO_BIN_EXE_netsweep"),
                "run",
            ])
            .arg(&plan)
            .arg("--db")
            .arg(db)
            .args(extra)
            .env("NETSWEEP_RUNTIME_DIR", d.join("rt"))
            .output()
            .unwrap()
    };
    let out = run(&db, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(snapshot(&na), before_a, "client side restored");
    assert_eq!(snapshot(&nb), before_b, "server side restored");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let tuned: i64 = conn
        .query_row("SELECT count(*) FROM run WHERE tuning_json LIKE '%\"profile\":\"bigbuf\"%' AND tuning_json LIKE '%ssh:root@198.18.0.2%16777216%'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tuned, 2, "bigbuf runs record the server's values too");
    // Every run records the server's values in force as the kernel reads them, the default
    // profile's runs too (they held a status text, or ssh's error where netsweep was absent).
    let mut stmt = conn.prepare("SELECT tuning_json FROM run").unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let v: serde_json::Value = serde_json::from_str(row).unwrap();
        let server = &v["ssh:root@198.18.0.2"];
        let rmem = server["net.ipv4.tcp_rmem"]
            .as_str()
            .unwrap_or_else(|| panic!("{v:#}"));
        let want = if v["profile"] == "bigbuf" {
            "4096 131072 16777216".to_string()
        } else {
            let i = KEYS.iter().position(|k| *k == "net.ipv4.tcp_rmem").unwrap();
            before_b[i].clone()
        };
        assert_eq!(rmem, want, "{v:#}");
    }
    // With the server's sshd gone, `--check` says so before any traffic.
    drop(sshd);
    let out = run(&d.join("check.db"), &["--check"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("server_tuning ssh:root@198.18.0.2:"),
        "{}",
        text(&out)
    );
}

/// Starts `netsweep run` on a plan in `dir`: a lab of 100 Mbit/s and 40 ms, one 1 s run each of
/// the `default` profile and `profile`. Returns the runner, its database and runtime directory.
fn start_lab_campaign(dir: &Path, profile: &str) -> (std::process::Child, PathBuf, PathBuf) {
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[target]\nkind = \"lab\"\nrate = \"100M\"\nrtt = \"40ms\"\n[test]\nduration = \"1s\"\n\
             [matrix]\nprofile = [\"default\", \"{profile}\"]\n[repeat]\ncount = 1\n"
        ),
    )
    .unwrap();
    let (db, runtime) = (dir.join("t.db"), dir.join("rt"));
    let child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .arg("run")
        .arg(&plan)
        .arg("--db")
        .arg(&db)
        .env("NETSWEEP_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, db, runtime)
}

/// A lab host is a namespace: a profile with host-wide keys would change the whole machine, so
/// the plan is refused before any traffic, with every offending key, and the lab is removed.
#[test]
fn a_lab_plan_whose_profile_changes_host_wide_keys_is_refused_before_any_run() {
    if !common::root_or_skip(
        "a_lab_plan_whose_profile_changes_host_wide_keys_is_refused_before_any_run",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, db, _) = start_lab_campaign(dir.path(), "large-buffers");
    // The runner names its lab after its pid (other tests make namespaces at the same time).
    let lab = format!("nsw-r{}-", child.id() % 10_000_000);
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("nothing was run"), "{t}");
    // The true reason, found by trying: read-only in a namespace (Linux 6.18) or absent there.
    for key in ["net.core.rmem_max", "net.core.wmem_max"] {
        assert!(
            t.contains(&format!("{key} is read-only inside a network namespace"))
                || t.contains(&format!("{key} does not exist inside a network namespace"))
                || t.contains(&format!("{key} is host-wide")),
            "{key} not named:\n{t}"
        );
    }
    assert!(
        t.contains("vm = \"both\"") || t.contains("allow_host_wide = true"),
        "{t}"
    );
    assert!(!t.contains("net.ipv4.tcp_rmem is"), "{t}");
    if db.exists() {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let runs: i64 = conn
            .query_row("SELECT count(*) FROM run", [], |r| r.get(0))
            .unwrap_or(0);
        assert_eq!(runs, 0, "no run may be stored");
    }
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(!left.contains(&lab), "the lab was not removed:\n{left}");
}

/// The per-namespace variant of `high-bdp` is what a lab campaign can sweep: sized from the
/// lab's rate and RTT, applied on both hosts, recorded with every run, and the journals gone.
#[test]
fn a_lab_plan_sweeps_the_per_namespace_high_bdp_profile() {
    if !common::root_or_skip("a_lab_plan_sweeps_the_per_namespace_high_bdp_profile") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (child, db, runtime) = start_lab_campaign(dir.path(), "high-bdp-ns");
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(String, String, String)> = conn
        .prepare(
            "SELECT c.label, r.status, coalesce(r.tuning_json, '') FROM run r \
             JOIN configuration c ON c.id = r.configuration_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}\n{t}");
    // 2 x BDP of 100 Mbit/s at 40 ms is 1,000,000 bytes; the profile never goes below 4 MiB,
    // and never lowers a larger setting (a namespace's tcp_rmem maximum is 32 MiB).
    let tuned = rows
        .iter()
        .find(|(label, _, _)| label.contains("high-bdp-ns"))
        .unwrap();
    assert_eq!(tuned.1, "ok", "{rows:?}");
    assert!(
        tuned
            .2
            .contains("\"net.ipv4.tcp_wmem\":\"4096 16384 4194304\""),
        "{}",
        tuned.2
    );
    assert!(
        tuned
            .2
            .contains("\"net.ipv4.tcp_rmem\":\"4096 131072 33554432\""),
        "{}",
        tuned.2
    );
    assert_eq!(
        std::fs::read_dir(runtime.join("tuning"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "journals left behind"
    );
}

/// Regression: after `kill -9` of a lab campaign its namespaces, tuning journals and lab state
/// stayed, and `run --resume` built a new lab and recovered none of it. Now the next run (or
/// any lab command) restores the tuning and removes the orphaned lab, saying so.
#[test]
fn resume_after_kill_9_of_a_lab_campaign_removes_its_lab_and_restores_its_tuning() {
    if !common::root_or_skip(
        "resume_after_kill_9_of_a_lab_campaign_removes_its_lab_and_restores_its_tuning",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut child, db, runtime) = start_lab_campaign(dir.path(), "high-bdp-ns");
    let pid = child.id();
    wait_for_journal(&runtime);
    child.kill().unwrap();
    child.wait().unwrap();
    let lab = format!("r{}", pid % 10_000_000);
    let ns_a = format!("nsw-{lab}-a");
    let netns_list = || {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(
        netns_list().contains(&ns_a),
        "kill -9 cannot clean up by itself"
    );
    assert!(Path::new(&format!("/run/netsweep/labs/{lab}.json")).exists());
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .arg("run")
        .arg(dir.path().join("plan.toml"))
        .arg("--db")
        .arg(&db)
        .arg("--resume")
        .env("NETSWEEP_RUNTIME_DIR", &runtime)
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(&format!("lab {lab} was left by process {pid}")),
        "{t}"
    );
    assert!(t.contains("restored"), "{t}");
    assert!(
        !netns_list().contains(&format!("nsw-{lab}-")),
        "orphan lab still there"
    );
    assert!(!Path::new(&format!("/run/netsweep/labs/{lab}.json")).exists());
    assert_eq!(
        std::fs::read_dir(runtime.join("tuning"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "journals left behind"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let ok: i64 = conn
        .query_row("SELECT count(*) FROM run WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ok, 2, "the resumed campaign finished\n{t}");
}

/// Regression: `tune apply high-bdp-ns --rate 1G --rtt 20ms` lowered tcp_rmem's max from
/// 33554432 to 5000000 without a word. Built-in profiles only raise, and say what they kept.
#[test]
fn a_builtin_profile_never_lowers_a_larger_setting() {
    if !common::root_or_skip("a_builtin_profile_never_lowers_a_larger_setting") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ns = Ns::new("raise");
    let set = |key: &str, v: &str| {
        let ok = Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns.0,
                "sysctl",
                "-qw",
                &format!("{key}={v}"),
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot set {key}");
    };
    set("net.ipv4.tcp_rmem", "4096 131072 33554432");
    set("net.ipv4.tcp_wmem", "4096 16384 1048576");
    let t = ns.target();
    let o = tune(
        dir.path(),
        &[
            "apply",
            "high-bdp-ns",
            "--rate",
            "1G",
            "--rtt",
            "20ms",
            "--target",
            &t,
        ],
    );
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert_eq!(
        ns.read("net.ipv4.tcp_rmem"),
        "4096 131072 33554432",
        "{out}"
    );
    assert!(
        out.contains("net.ipv4.tcp_rmem = \"4096 131072 33554432\" kept"),
        "{out}"
    );
    // The smaller one is raised to the profile's: 2 x BDP of 1 Gbit/s at 20 ms.
    assert_eq!(ns.read("net.ipv4.tcp_wmem"), "4096 16384 5000000", "{out}");
    let o = tune(dir.path(), &["restore", "--target", &t]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(ns.read("net.ipv4.tcp_wmem"), "4096 16384 1048576");
}

/// Regression: with `allow_host_wide = true`, `run --check` said "plan is valid" for a lab
/// profile with net.core.rmem_max, and then every run of that profile failed with "Permission
/// denied". The key is tried in a scratch namespace: refused with the true reason and the
/// alternative that works, and nothing is left changed.
#[test]
fn check_refuses_a_read_only_key_on_a_namespace_lab_with_the_true_reason() {
    if !common::root_or_skip(
        "check_refuses_a_read_only_key_on_a_namespace_lab_with_the_true_reason",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nkind = \"lab\"\nrate = \"100M\"\nrtt = \"10ms\"\nallow_host_wide = true\n\
         [test]\nduration = \"1s\"\n[matrix]\nprofile = [\"default\", \"bigmax\"]\n\
         [profiles.bigmax.linux]\n\"net.core.rmem_max\" = \"16777216\"\n\
         \"net.ipv4.tcp_rmem\" = \"4096 131072 16777216\"\n",
    )
    .unwrap();
    let before = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["run", "--check"])
        .arg(&plan)
        .arg("--db")
        .arg(dir.path().join("c.db"))
        .env("NETSWEEP_RUNTIME_DIR", dir.path().join("rt"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The runner names its lab after its pid (other tests make namespaces at the same time).
    let lab = format!("nsw-r{}-", child.id() % 10_000_000);
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    // Detected, not assumed: a kernel where the key is the namespace's own may accept it.
    let writable_in_ns = out.status.success();
    if writable_in_ns {
        assert!(out.status.success(), "{t}");
        eprintln!("this kernel lets a namespace write net.core.rmem_max: nothing to refuse");
    } else {
        assert_eq!(out.status.code(), Some(2), "{t}");
        assert!(
            t.contains(
                "net.core.rmem_max is read-only inside a network namespace on this kernel (Linux "
            ) || t.contains("net.core.rmem_max does not exist inside a network namespace"),
            "{t}"
        );
        assert!(t.contains("vm = \"both\""), "the alternative: {t}");
        assert!(!t.contains("is valid"), "{t}");
        // tcp_rmem is the namespace's own: not refused.
        assert!(!t.contains("net.ipv4.tcp_rmem cannot"), "{t}");
    }
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap(),
        before,
        "the host's value changed"
    );
    let left: Vec<String> = netsweep::platform::netns::list()
        .into_iter()
        .filter(|n| n.starts_with(&lab))
        .collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
}

/// Regression (a trial's finding): `tune bdp --rate 50M --rtt 80` took 80 s (a 477 MB window)
/// where ping's 80 ms was meant, and `--rate 0` sized buffers of 0 bytes. Both are refused with
/// what to write; with the unit the figures are the arithmetic's (50 Mbit/s x 80 ms = 500000 B).
#[test]
fn tune_bdp_refuses_an_rtt_without_its_unit_and_a_zero_rate() {
    let dir = tempfile::tempdir().unwrap();
    let o = tune(dir.path(), &["bdp", "--rate", "50M", "--rtt", "80"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--rtt 80: give its unit, e.g. 80ms"),
        "{}",
        text(&o)
    );
    for (rate, rtt) in [("0", "10ms"), ("1G", "0ms")] {
        let o = tune(dir.path(), &["bdp", "--rate", rate, "--rtt", rtt]);
        assert!(!o.status.success(), "{rate} {rtt}: {}", text(&o));
    }
    let o = tune(dir.path(), &["bdp", "--rate", "50M", "--rtt", "80ms"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("= 488 KBytes (500000 bytes)"),
        "{}",
        text(&o)
    );
}
