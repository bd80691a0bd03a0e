//! A user's own libvirt domain as a campaign target (root; CI runs these): a real `libvirtd`
//! and `virtlogd` from Debian's packages, started inside a network namespace this test makes
//! (so every TAP libvirt creates is inside it, on a bridge with 198.18.0.1), and netsweep's
//! own guest image as the domain, defined with an rtl8139 NIC. The campaign sweeps virtio,
//! e1000 and rtl8139 over it in both directions and must put the user's definition back byte
//! for byte: at the end, after Ctrl-C, and at the next start after a kill -9. `doctor
//! --libvirt` gives the exact virsh commands of the fix, which the test runs as printed.

mod common;

use common::sshd::Sshd;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// One libvirtd at a time (its pidfile and socket are the system's).
static SERIAL: Mutex<()> = Mutex::new(());

const URI: &str = "qemu:///system";
const MAC: &str = "52:54:00:12:34:02";

fn run(program: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn virsh(args: &[&str]) -> (bool, String) {
    let mut all = vec!["-c", URI];
    all.extend_from_slice(args);
    run("virsh", &all)
}

fn pid_in(file: &str) -> Option<u32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// A libvirtd in a namespace of its own with one domain of netsweep's guest image; all of it
/// removed on drop.
struct Libvirt {
    ns: String,
    domain: String,
    dir: tempfile::TempDir,
    original: String,
}

impl Libvirt {
    fn up(test: &str) -> Option<Libvirt> {
        if !common::root_or_skip(test)
            || !["virsh", "libvirtd", "virtlogd", "qemu-system-x86_64"]
                .iter()
                .all(|t| common::tool_or_skip(test, t))
        {
            return None;
        }
        if pid_in("/run/libvirtd.pid").is_some_and(|p| Path::new(&format!("/proc/{p}")).exists()) {
            // Its TAPs would be in its own namespace, maybe the host's: never used here.
            eprintln!("SKIPPED {test}: a libvirtd already runs on this machine");
            return None;
        }
        // The guest image (kernel unpacked from Debian's package, initramfs with netsweep).
        common::netsweep_ok(std::env::temp_dir().as_path(), &["lab", "vm-image"]);
        let ns = format!("nslv{}", std::process::id() % 100_000);
        let domain = format!("netsweep-test-{}", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        // libvirt's QEMU runs as its own user: it must reach the kernel, initrd and console.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let image = netsweep::lab::vm::image::dir();
        for (from, to) in [
            (image.join("kernel/vmlinux"), "vmlinux"),
            (image.join("initrd.cpio"), "initrd.cpio"),
        ] {
            std::fs::copy(&from, dir.path().join(to)).unwrap();
        }
        let mut me = Libvirt {
            ns: ns.clone(),
            domain: domain.clone(),
            dir,
            original: String::new(),
        };
        for args in [
            vec!["netns", "add", &ns],
            vec!["-n", &ns, "link", "set", "lo", "up"],
            vec!["-n", &ns, "link", "add", "br0", "type", "bridge"],
            vec!["-n", &ns, "addr", "add", "198.18.0.1/24", "dev", "br0"],
            vec!["-n", &ns, "link", "set", "br0", "up"],
        ] {
            let (ok, out) = run("ip", &args);
            assert!(ok, "ip {args:?}: {out}");
        }
        for daemon in ["virtlogd", "libvirtd"] {
            let (ok, out) = run("ip", &["netns", "exec", &ns, daemon, "-d"]);
            assert!(ok, "{daemon}: {out}");
        }
        common::wait_bounded_until(Duration::from_secs(30), "libvirtd", || {
            virsh(&["version"]).0
        });
        let d = me.dir.path().display().to_string();
        let xml = format!(
            "<domain type='qemu'>\n  <name>{domain}</name>\n  <memory unit='MiB'>256</memory>\n  \
             <vcpu>1</vcpu>\n  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n    \
             <kernel>{d}/vmlinux</kernel>\n    <initrd>{d}/initrd.cpio</initrd>\n    \
             <cmdline>console=ttyS0 loglevel=3 panic=-1 netsweep.ip=198.18.0.2/24 netsweep.port=5201</cmdline>\n  \
             </os>\n  <on_reboot>destroy</on_reboot>\n  <devices>\n    \
             <interface type='bridge'>\n      <mac address='{MAC}'/>\n      <source bridge='br0'/>\n      \
             <model type='rtl8139'/>\n    </interface>\n    <serial type='file'>\n      \
             <source path='{d}/console.log' append='on'/>\n      <target port='0'/>\n    </serial>\n  \
             </devices>\n</domain>\n"
        );
        std::fs::write(me.dir.path().join("domain.xml"), xml).unwrap();
        let (ok, out) = virsh(&["define", &format!("{d}/domain.xml")]);
        assert!(ok, "define: {out}");
        let (ok, out) = virsh(&["start", &domain]);
        assert!(ok, "start: {out}");
        me.original = me.definition();
        // As a user's domain is found: up, its server answering.
        me.wait_server();
        Some(me)
    }

    /// Until the guest's server answers a short test from the namespace.
    fn wait_server(&self) {
        common::wait_bounded_until(Duration::from_secs(120), "the guest's server", || {
            self.netsweep(&["-c", "198.18.0.2", "-p", "5201", "-t", "0.2"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    }

    fn definition(&self) -> String {
        let (ok, xml) = virsh(&["dumpxml", "--inactive", &self.domain]);
        assert!(ok, "{xml}");
        xml
    }

    /// The model the running domain has.
    fn live_model(&self) -> String {
        let (ok, xml) = virsh(&["dumpxml", &self.domain]);
        assert!(ok, "{xml}");
        netsweep::host::libvirt::xml::interfaces(&xml).unwrap()[0]
            .model
            .clone()
            .unwrap_or_default()
    }

    fn state(&self) -> String {
        virsh(&["domstate", &self.domain]).1.trim().to_string()
    }

    fn console(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("console.log")).unwrap_or_default()
    }

    /// The journal netsweep keeps for the domain: named by its UUID, as `Session::open` names
    /// it.
    fn journal(&self) -> PathBuf {
        use netsweep::host::libvirt::{journal, virsh::Virsh};
        let uuid = Virsh::new(Some(URI.to_string())).uuid(&self.domain);
        journal::path_of(uuid.as_deref(), &self.domain, Some(URI))
    }

    /// `netsweep ARGS` inside the namespace, where the bridge to the guest is.
    fn netsweep(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, env!("CARGO_BIN_EXE_netsweep")])
            .args(args)
            .current_dir(self.dir.path());
        cmd
    }

    fn plan(&self, name: &str, server: &str, models: &str, count: u32) -> String {
        let path = self.dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[target]\nkind = \"libvirt\"\ndomain = \"{}\"\nuri = \"{URI}\"\n\
                 host = \"198.18.0.2:5201\"\nserver = \"{server}\"\nshutdown_timeout = \"0s\"\n\
                 [test]\nduration = \"1s\"\n[matrix]\nnic = [{models}]\nreverse = [false, true]\n\
                 [repeat]\ncount = {count}\n",
                self.domain
            ),
        )
        .unwrap();
        path.display().to_string()
    }

    /// Bytes through the bridge both ways (what the guest's traffic put on the wire).
    fn bridge_bytes(&self) -> u64 {
        ["rx_bytes", "tx_bytes"]
            .iter()
            .map(|c| {
                let (ok, out) = run(
                    "ip",
                    &[
                        "netns",
                        "exec",
                        &self.ns,
                        "cat",
                        &format!("/sys/class/net/br0/statistics/{c}"),
                    ],
                );
                assert!(ok, "{out}");
                out.trim().parse::<u64>().unwrap()
            })
            .sum()
    }
}

impl Drop for Libvirt {
    fn drop(&mut self) {
        // Named while libvirt still knows the domain.
        let journal = self.journal();
        let _ = virsh(&["destroy", &self.domain]);
        let _ = virsh(&["undefine", &self.domain]);
        // Networks libvirt may have autostarted in the namespace (their dnsmasq with them).
        if let (true, nets) = virsh(&["net-list", "--name"]) {
            for n in nets.lines().map(str::trim).filter(|n| !n.is_empty()) {
                let _ = virsh(&["net-destroy", n]);
            }
        }
        for pidfile in ["/run/libvirtd.pid", "/run/virtlogd.pid"] {
            if let Some(pid) = pid_in(pidfile) {
                netsweep::platform::process::terminate(pid);
                for _ in 0..100 {
                    if !Path::new(&format!("/proc/{pid}")).exists()
                        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                            .is_ok_and(|s| s.contains(") Z "))
                    {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        let _ = run("ip", &["netns", "del", &self.ns]);
        let _ = std::fs::remove_file(&journal);
        let _ = std::fs::remove_file(netsweep::host::libvirt::journal::saved_definition(&journal));
    }
}

impl Libvirt {
    /// `netsweep doctor --libvirt` of this domain: (standard output, standard error, exit
    /// status).
    fn doctor(&self) -> (String, String, Option<i32>) {
        let out = self
            .netsweep(&["doctor", "--libvirt", &self.domain, "--connect", URI])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code(),
        )
    }
}

/// Rate of each configuration from the campaign's CSV export: (nic, reverse) -> bits/s.
fn rates(lv: &Libvirt, db: &str) -> Vec<(String, String, f64)> {
    let out = lv
        .netsweep(&["export", "--db", db, "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let csv = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (nic, rev, bps, status) = (
        col("nic"),
        col("reverse"),
        col("bits_per_second"),
        col("status"),
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[status], "ok", "{l}");
            (
                f[nic].to_string(),
                f[rev].to_string(),
                f[bps].parse().unwrap(),
            )
        })
        .collect()
}

/// The README's `# needs: libvirt` lines, as printed, with the README's domain `vm1` this
/// test's and `examples/libvirt-nic.toml` made short (1 s runs, two rounds, no shutdown wait).
fn readme_lines(lv: &Libvirt) -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("examples/libvirt-nic.toml")).unwrap();
    let short = example
        .replace("domain = \"vm1\"", &format!("domain = \"{}\"", lv.domain))
        .replace("duration = \"10s\"", "duration = \"1s\"")
        .replace("omit = \"2s\"", "omit = \"0s\"")
        .replace("count = 3", "count = 2")
        .replace("shutdown_timeout = \"60s\"", "shutdown_timeout = \"0s\"");
    assert_ne!(short, example);
    let plan = lv.dir.path().join("libvirt-nic.toml");
    std::fs::write(&plan, short).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines: Vec<Vec<String>> = readme
        .lines()
        .filter(|l| l.contains("# needs: libvirt"))
        .map(|l| {
            let command = l.split('#').next().unwrap().trim();
            let words: Vec<String> = command
                .split_whitespace()
                .map(|w| match w {
                    "vm1" => lv.domain.clone(),
                    "examples/libvirt-nic.toml" => plan.display().to_string(),
                    w => w.to_string(),
                })
                .collect();
            assert_eq!(words[0], "netsweep", "{l}");
            words[1..].to_vec()
        })
        .collect();
    assert!(lines.len() >= 2, "the README's libvirt lines: {lines:?}");
    lines
}

#[test]
fn a_nic_sweep_of_a_users_domain_measures_each_model_and_puts_it_back() {
    let test = "a_nic_sweep_of_a_users_domain_measures_each_model_and_puts_it_back";
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lv) = Libvirt::up(test) else { return };
    let wire_before = lv.bridge_bytes();
    let mut text = String::new();
    for args in readme_lines(&lv) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lv.netsweep(&args).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if args[0] == "doctor" {
            // The emulated NIC is a problem: doctor's exit status says so.
            assert_eq!(out.status.code(), Some(2), "README line {args:?}: {said}");
            assert!(said.contains("uses the emulated rtl8139"), "{said}");
        } else {
            assert!(out.status.success(), "README line {args:?}: {said}");
        }
        text.push_str(&said);
    }
    // Two rounds: the answer names the model's effect, decided or found by the F test.
    assert!(
        text.contains("nic matters most") || text.contains("the F test finds that nic changes"),
        "{text}"
    );
    let wire = lv.bridge_bytes() - wire_before;
    // Every model was booted and bound its own driver in the guest.
    let console = lv.console();
    for driver in ["virtio_net", "e1000", "8139cp"] {
        assert!(
            console.contains(&format!("driver={driver}")),
            "{driver} never bound:\n{console}"
        );
    }
    let r = rates(&lv, "vm1.db");
    assert_eq!(r.len(), 12, "{r:?}");
    // Physics: what the runs measured went through the bridge, headers on top.
    let payload: f64 = r.iter().map(|(_, _, bps)| bps / 8.0).sum();
    assert!(
        wire as f64 >= 0.95 * payload,
        "the bridge carried {wire} bytes, less than the {payload} the runs measured"
    );
    // The paravirtual NIC beats the emulated one by a wide margin (about 6x measured here).
    let rate = |nic: &str| {
        let v: Vec<f64> = r
            .iter()
            .filter(|(n, rev, _)| n == nic && rev == "false")
            .map(|x| x.2)
            .collect();
        assert_eq!(v.len(), 2, "{r:?}");
        v.iter().sum::<f64>() / 2.0
    };
    assert!(rate("virtio") > 1.5 * rate("rtl8139"), "{r:?}");
    // The user's definition is back, byte for byte, and the domain runs it.
    assert_eq!(lv.definition(), lv.original);
    assert_eq!(lv.state(), "running");
    assert_eq!(lv.live_model(), "rtl8139");
    assert!(!lv.journal().exists());
    assert!(
        text.contains(&format!("libvirt domain {}", lv.domain)),
        "{text}"
    );
    // The report's fix for the emulated models is this domain's doctor, pasteable (a trial's
    // report printed a template for a domain "guest" on network "default").
    let out = lv
        .netsweep(&["report", "--db", "vm1.db", "-o", "vm1.md"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let md = std::fs::read_to_string(lv.dir.path().join("vm1.md")).unwrap();
    assert!(
        md.contains(&format!(
            "netsweep doctor --libvirt {} --connect {URI}",
            lv.domain
        )) && !md.contains("virsh edit guest"),
        "{md}"
    );
    // Regression (a trial's finding): a wrong port on a domain found running was waited out
    // for the whole boot_timeout (180 s), silently, and said "of its start". At most 30 s now,
    // saying it waits, and why it gave up.
    let plan = lv.plan("typo", "netsweep", "\"rtl8139\"", 1);
    let typo = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("198.18.0.2:5201", "198.18.0.2:5299");
    std::fs::write(&plan, typo).unwrap();
    let t0 = std::time::Instant::now();
    let out = lv
        .netsweep(&["run", &plan, "--db", "typo.db", "--check"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("waiting for the server in libvirt domain")
            && said.contains("(the domain was running already)")
            && said.contains("refused"),
        "{said}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(lv.definition(), lv.original);
}

#[test]
fn doctor_names_the_emulated_nic_and_its_printed_fix_works() {
    let test = "doctor_names_the_emulated_nic_and_its_printed_fix_works";
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lv) = Libvirt::up(test) else { return };
    let (text, _, code) = lv.doctor();
    assert!(
        text.contains(&format!(
            "PROBLEM interface {MAC} uses the emulated rtl8139"
        )),
        "{text}"
    );
    assert_eq!(code, Some(2), "a problem found: {text}");
    // The fix as printed: from the `virsh ... update-device` line to the restart line.
    let start = text.find("virsh -c").expect("a virsh command");
    let fix: String = text[start..]
        .lines()
        .take_while(|l| !l.starts_with(|c: char| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        fix.contains("update-device") && fix.ends_with(&format!("start {}; fi", lv.domain)),
        "{fix}"
    );
    // This guest has no ACPI daemon: the test powers it off when asked to shut down, as a
    // guest that honours the request would.
    let mut sh = Command::new("sh").args(["-c", &fix]).spawn().unwrap();
    common::wait_bounded_until(Duration::from_secs(30), "shutdown asked", || {
        // The fix's loop polls the state: once the update is in, power the guest off.
        lv.definition().contains("<model type='virtio'/>")
    });
    std::thread::sleep(Duration::from_millis(500));
    let _ = virsh(&["destroy", &lv.domain]);
    common::wait_bounded(&mut sh, Duration::from_secs(60), "the printed fix");
    assert!(sh.wait().unwrap().success());
    assert_eq!(lv.state(), "running");
    assert_eq!(lv.live_model(), "virtio");
    common::wait_bounded_until(Duration::from_secs(60), "virtio_net bound", || {
        lv.console().contains("driver=virtio_net")
    });
    let (text, _, code) = lv.doctor();
    assert_eq!(code, Some(0), "no problem left: {text}");
    assert!(
        text.contains(&format!("ok      interface {MAC} uses virtio"))
            || text.contains(&format!("interface {MAC} uses virtio")),
        "{text}"
    );
    assert!(!text.contains("PROBLEM"), "{text}");
}

#[test]
fn a_domain_left_changed_by_ctrl_c_or_kill_9_is_put_back() {
    let test = "a_domain_left_changed_by_ctrl_c_or_kill_9_is_put_back";
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lv) = Libvirt::up(test) else { return };
    let plan = lv.plan("kill", "netsweep", "\"virtio\", \"e1000\"", 2);
    // Regression: a second campaign started while the first held the domain on its first model
    // (no journal yet) ran too, and each stored runs under the other's model.
    let first = common::paused_at(
        lv.netsweep(&["run", &plan, "--db", "held.db"]),
        "libvirt-opened",
        Duration::from_secs(120),
    );
    let mut first = common::KillOnDrop(first);
    // The second spells the domain another way: by its UUID and without `uri` (root's default
    // connection is the same qemu:///system). Both spellings hold one lock.
    let uuid = virsh(&["domuuid", &lv.domain]).1.trim().to_string();
    let other_spelling = std::fs::read_to_string(&plan)
        .unwrap()
        .replace(
            &format!("domain = \"{}\"", lv.domain),
            &format!("domain = \"{uuid}\""),
        )
        .replace(&format!("uri = \"{URI}\"\n"), "");
    assert!(other_spelling.contains(&uuid) && !other_spelling.contains("uri ="));
    let second_plan = lv.dir.path().join("second.toml");
    std::fs::write(&second_plan, other_spelling).unwrap();
    let second = lv
        .netsweep(&[
            "run",
            &second_plan.display().to_string(),
            "--db",
            "second.db",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&second.stderr).to_string()
        + &String::from_utf8_lossy(&second.stdout);
    assert!(
        !second.status.success() && text.contains("is in use by another netsweep campaign"),
        "{text}"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.0.id() as i32, libc::SIGINT) };
    common::wait_bounded(&mut first.0, Duration::from_secs(120), "the held run");
    assert_eq!(lv.definition(), lv.original);
    // kill -9 just after the domain was redefined and restarted with another model.
    let mut child = common::paused_at(
        lv.netsweep(&["run", &plan, "--db", "kill.db"]),
        "libvirt-switched",
        Duration::from_secs(120),
    );
    common::kill9(&mut child);
    assert_ne!(lv.definition(), lv.original, "the model was not changed");
    assert!(lv.journal().exists());
    // The next start puts it back, and says so.
    let (_, err, _) = lv.doctor();
    assert!(
        err.contains(&format!(
            "left changed by process {} that ended without restoring it",
            child.id()
        )),
        "{err}"
    );
    assert_eq!(lv.definition(), lv.original);
    assert_eq!(lv.live_model(), "rtl8139");
    assert_eq!(lv.state(), "running");
    assert!(!lv.journal().exists());
    // Regression (a trial's findings): a `run --check` put such a domain back (powering it
    // off), and a later `doctor` undid the admin's edits made after the kill. A check only
    // says so; an edited domain is left as it is, with the recovery by hand printed.
    let mut child = common::paused_at(
        lv.netsweep(&["run", &plan, "--db", "kill2.db"]),
        "libvirt-switched",
        Duration::from_secs(120),
    );
    common::kill9(&mut child);
    let swept = lv.definition();
    let check = lv
        .netsweep(&["run", &plan, "--db", "check.db", "--check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stderr).to_string()
        + &String::from_utf8_lossy(&check.stdout);
    assert!(
        !check.status.success()
            && text.contains("nothing was done to it")
            && text.contains("puts it back"),
        "{text}"
    );
    assert_eq!(lv.definition(), swept, "a check changed the domain");
    assert!(lv.journal().exists());
    let (ok, out) = virsh(&[
        "desc",
        &lv.domain,
        "--config",
        "--new-desc",
        "an admin's edit",
    ]);
    assert!(ok, "{out}");
    let edited = lv.definition();
    let (_, err, _) = lv.doctor();
    assert!(
        err.contains("changed since beyond the NIC model") && err.contains("define"),
        "{err}"
    );
    assert_eq!(lv.definition(), edited, "the admin's edit was undone");
    // The recovery as printed: the saved original back, then the journal removed.
    let saved = netsweep::host::libvirt::journal::saved_definition(&lv.journal());
    let (ok, out) = virsh(&["define", &saved.display().to_string()]);
    assert!(ok, "{out}");
    std::fs::remove_file(lv.journal()).unwrap();
    std::fs::remove_file(&saved).unwrap();
    assert_eq!(lv.definition(), lv.original);
    let _ = virsh(&["destroy", &lv.domain]);
    let (ok, out) = virsh(&["start", &lv.domain]);
    assert!(ok, "{out}");
    lv.wait_server();
    // Ctrl-C at the same point: the campaign stops and puts the domain back itself.
    let mut child = common::paused_at(
        lv.netsweep(&["run", &plan, "--db", "int.db"]),
        "libvirt-switched",
        Duration::from_secs(120),
    );
    assert_ne!(lv.definition(), lv.original);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    common::wait_bounded(&mut child, Duration::from_secs(120), "the interrupted run");
    assert_eq!(lv.definition(), lv.original);
    assert_eq!(lv.live_model(), "rtl8139");
    assert_eq!(lv.state(), "running");
    assert!(!lv.journal().exists());
}

/// A throwaway OpenSSH server on 198.18.0.1:2222 in the namespace: it stands in for a guest's
/// sshd (netsweep's guest image has none), to check that `server_start = "ssh:..."` runs the
/// plan's command after every start of the domain, and that a command that fails fails the
/// runs with its words while the domain is still put back. Returns the server and its ssh
/// options as TOML strings.
fn start_sshd(lv: &Libvirt) -> (Sshd, Vec<String>) {
    let sshd = Sshd::start(
        &lv.ns,
        std::net::Ipv4Addr::new(198, 18, 0, 1),
        lv.dir.path(),
    );
    let options = sshd.options().iter().map(|o| format!("\"{o}\"")).collect();
    (sshd, options)
}

#[test]
fn a_server_started_over_ssh_is_started_after_every_boot() {
    let test = "a_server_started_over_ssh_is_started_after_every_boot";
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lv) = Libvirt::up(test) else { return };
    if !common::tool_or_skip(test, "/usr/sbin/sshd") {
        return;
    }
    // Ended even when an assertion fails.
    let (_sshd, options) = start_sshd(&lv);
    let starts = lv.dir.path().join("starts");
    let plan_with = |name: &str, command: &str| {
        let path = lv.dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[target]\nkind = \"libvirt\"\ndomain = \"{}\"\nuri = \"{URI}\"\n\
                 host = \"198.18.0.2:5201\"\nshutdown_timeout = \"0s\"\n\
                 server_start = \"ssh:root@198.18.0.1\"\nserver_command = \"{command}\"\n\
                 ssh_options = [{}]\n[test]\nduration = \"1s\"\n[matrix]\n\
                 nic = [\"virtio\", \"e1000\"]\n[repeat]\ncount = 1\norder = \"sequential\"\n",
                lv.domain,
                options.join(", ")
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let plan = plan_with("ssh", &format!("echo started >> {}", starts.display()));
    let out = lv
        .netsweep(&["run", &plan, "--db", "ssh.db"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The domain runs with its server when the campaign begins: rtl8139 to virtio, then to
    // e1000 are the campaign's two starts, and the command ran after each.
    let said = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(said.lines().count(), 2, "{said:?}");
    assert_eq!(lv.definition(), lv.original);
    // A command that fails: the runs that needed it fail with its words, and the domain is
    // still put back.
    // The end of the campaign restarted the domain with its own model: as found again.
    lv.wait_server();
    let plan = plan_with("broken", "echo no server here >&2; exit 3");
    let out = lv
        .netsweep(&["run", &plan, "--db", "broken.db"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = lv
        .netsweep(&["export", "--db", "broken.db", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    assert!(
        csv.contains("over ssh") && csv.contains("no server here"),
        "{csv}\n{text}"
    );
    assert_eq!(lv.definition(), lv.original);
    assert_eq!(lv.live_model(), "rtl8139");
    assert!(!lv.journal().exists());
}
