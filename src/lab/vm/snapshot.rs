//! Saved boots: under TCG a guest's kernel takes about 3.5 s of a core to boot, and a campaign
//! that compares NIC models boots one guest per model. So the first guest of each kind (NIC
//! model, vCPUs, memory, queues) is saved once its NIC is bound, before it has any lab's
//! settings, and later guests of that kind resume from the saved state (about 0.5 s of a core).
//!
//! The save goes through QEMU's own migration (QMP `migrate` to a file, then `cont`); a resume
//! starts QEMU with `-incoming` from that file and the same devices. The guest then waits for its
//! settings on its console (`image::init_script`), so what is saved holds no address, port or
//! command-channel token. A saved boot belongs to one kernel and initramfs (`Image::stamp`, in
//! its name), and one that does not resume is removed and the guest booted. At most `MAX_SAVES`
//! are kept, the least recently used removed first, so another build's saves age out. KVM
//! guests boot in well under a second and are not saved.

use super::Accel;
use super::image::Image;
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The folder of saved boots in an image directory.
const DIR: &str = "saved";

/// The most saved boots kept: each holds its guest's memory as written (about 100 MB for a
/// 256 MiB guest), so a sweep over memory sizes or vCPU counts would otherwise fill the disk.
/// The least recently used go first.
const MAX_SAVES: usize = 8;

/// How long a save may take (256 MiB of guest memory: about 1 s here).
const SAVE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the saved boot of a guest of `kind` (`GuestSpec::kind`) would be; none under KVM.
pub fn path(image: &Image, kind: &str, accel: Accel) -> Option<PathBuf> {
    (accel == Accel::Tcg).then(|| {
        image
            .dir
            .join(DIR)
            .join(format!("{kind}-{}.qemu", image.stamp))
    })
}

/// A QMP connection (QEMU's JSON monitor), one command at a time. Replies are read line by
/// line, each at most `MAX_LINE` bytes; events between them are skipped.
pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

const MAX_LINE: u64 = 1 << 20;

impl Qmp {
    /// Connects to the QMP socket at `path` and leaves the greeting's capabilities mode.
    pub fn connect(path: &Path) -> anyhow::Result<Qmp> {
        let stream = UnixStream::connect(path)
            .with_context(|| format!("cannot connect to QEMU's monitor {}", path.display()))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let writer = stream.try_clone()?;
        let mut qmp = Qmp {
            reader: BufReader::new(stream),
            writer,
        };
        let greeting = qmp.line()?;
        if greeting.get("QMP").is_none() {
            bail!("QEMU's monitor did not greet as QMP: {greeting}");
        }
        qmp.execute("qmp_capabilities", Value::Null)?;
        Ok(qmp)
    }

    fn line(&mut self) -> anyhow::Result<Value> {
        let mut text = String::new();
        let n = std::io::Read::take(&mut self.reader, MAX_LINE)
            .read_line(&mut text)
            .context("reading QEMU's monitor")?;
        if n == 0 {
            bail!("QEMU's monitor closed");
        }
        serde_json::from_str(&text).context("QEMU's monitor sent a line that is not JSON")
    }

    /// Runs one command; its `return` value, or its error as the error.
    pub fn execute(&mut self, command: &str, arguments: Value) -> anyhow::Result<Value> {
        let mut msg = json!({ "execute": command });
        if !arguments.is_null() {
            msg["arguments"] = arguments;
        }
        writeln!(self.writer, "{msg}")?;
        loop {
            let v = self.line()?;
            if let Some(r) = v.get("return") {
                return Ok(r.clone());
            }
            if let Some(e) = v.get("error") {
                bail!(
                    "QEMU refused {command}: {}",
                    e["desc"].as_str().unwrap_or("?")
                );
            }
        }
    }
}

/// Saves the running guest behind `qmp` to `file` (through a temporary name, so a reader never
/// sees half a save), tidies the saves beside it (`tidy`), and lets the guest go on.
/// The guest goes on even when the save fails.
pub fn save(qmp_path: &Path, file: &Path) -> anyhow::Result<()> {
    let mut qmp = Qmp::connect(qmp_path)?;
    let dir = file.parent().context("a saved boot's path has a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // A lab of two guests saves both at once.
    let tmp = super::image::own_temp(file);
    let saved = save_to(&mut qmp, &tmp).and_then(|()| Ok(std::fs::rename(&tmp, file)?));
    let went_on = qmp.execute("cont", Value::Null);
    match &saved {
        Ok(()) => tidy(dir, file, MAX_SAVES),
        Err(_) => {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    saved.and(went_on.map(|_| ()))
}

fn save_to(qmp: &mut Qmp, tmp: &Path) -> anyhow::Result<()> {
    // QEMU 7.2 writes a migration to a file only through a command: `exec:cat > FILE`, run by
    // /bin/sh, with the path quoted for it.
    let uri = format!("exec:cat > {}", crate::paste::quote(&tmp.to_string_lossy()));
    qmp.execute("migrate", json!({ "uri": uri }))?;
    let t0 = Instant::now();
    loop {
        let status = qmp.execute("query-migrate", Value::Null)?;
        match status["status"].as_str() {
            Some("completed") => return Ok(()),
            Some("failed") | Some("cancelled") => bail!(
                "saving the guest failed: {}",
                status["error-desc"].as_str().unwrap_or("no reason given")
            ),
            _ if t0.elapsed() > SAVE_TIMEOUT => {
                let _ = qmp.execute("migrate_cancel", Value::Null);
                bail!(
                    "saving the guest took more than {} s",
                    SAVE_TIMEOUT.as_secs()
                );
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Marks the save at `file` used now (its modification time), so `tidy` keeps it longest:
/// called before a resume starts. Never through a link, and never anything but a regular file:
/// a save is netsweep's own file, and a link in its place must not make netsweep touch its
/// target.
pub fn mark_used(file: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(f) = std::fs::File::options()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        && f.metadata().is_ok_and(|m| m.is_file())
    {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Whether `file` is a save this netsweep may resume: a regular file, not a link (QEMU would
/// read its target) nor a FIFO or device. Anything else in its place is removed (the link
/// itself, never its target), and the guest boots and is saved anew.
pub fn resumable(file: &Path) -> bool {
    match std::fs::symlink_metadata(file) {
        Ok(m) if m.file_type().is_file() => true,
        Ok(_) => {
            crate::errln!(
                "netsweep: {} is not a regular file (a link or other file in a saved boot's \
                 place): it is removed, and the guest boots and is saved anew",
                file.display()
            );
            let _ = std::fs::remove_file(file);
            false
        }
        Err(_) => false,
    }
}

/// Removes temporary files left by killed writers (`image::stale_temp`) and, beyond `max` saves,
/// the least recently used (never `kept`, the one just written; a save another lab resumes is
/// marked used before its QEMU starts, so it is among the newest). A campaign that cycles
/// through more kinds than `max` therefore saves each anew. Saves of other kernels or initramfs
/// images (another netsweep build) are never resumed by this one and go first in time, but not
/// at once: two builds used in turn keep theirs.
fn tidy(dir: &Path, kept: &Path, max: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut others = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "qemu") {
            if p != kept {
                others.push((e.metadata().and_then(|m| m.modified()).ok(), p));
            }
        } else if super::image::stale_temp(&e) {
            let _ = std::fs::remove_file(&p);
        }
    }
    // Newest first; `kept` is one of the `max`.
    others.sort_by_key(|o| std::cmp::Reverse(o.0));
    for (_, p) in others.iter().skip(max.saturating_sub(1)) {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_boot_is_named_by_kind_and_stamp_and_only_under_tcg() {
        let image = Image {
            dir: "/c".into(),
            vmlinux: "/c/kernel/vmlinux".into(),
            initrd: "/c/initrd.cpio".into(),
            kernel_version: "6.1".into(),
            stamp: "0123456789abcdef".into(),
        };
        let kind = "e1000-1cpu-256mib-1q";
        assert_eq!(
            path(&image, kind, Accel::Tcg).unwrap(),
            Path::new("/c/saved/e1000-1cpu-256mib-1q-0123456789abcdef.qemu")
        );
        assert_eq!(path(&image, kind, Accel::Kvm), None);
    }

    #[test]
    fn dead_writers_are_removed_and_other_builds_saves_kept_within_the_most() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let kept = d.join("virtio-1cpu-256mib-1q-aaaa.qemu");
        let same = d.join("e1000-1cpu-256mib-1q-aaaa.qemu");
        let other_build = d.join("virtio-1cpu-256mib-1q-bbbb.qemu");
        let dead = d.join("rtl8139-1cpu-256mib-1q-aaaa.tmp4194304-0");
        let live = d.join(format!(
            "rtl8139-1cpu-256mib-1q-aaaa.tmp{}-1",
            std::process::id()
        ));
        for f in [&kept, &same, &other_build, &dead, &live] {
            std::fs::write(f, b"x").unwrap();
        }
        tidy(d, &kept, 8);
        assert!(kept.exists() && same.exists() && other_build.exists() && live.exists());
        assert!(!dead.exists());
    }

    #[test]
    fn beyond_the_most_saves_the_least_recently_used_go() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let at = |secs: u64| std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
        let save = |mib: u64| d.join(format!("virtio-1cpu-{mib}mib-1q-aaaa.qemu"));
        for mib in 1..=5 {
            std::fs::write(save(mib), b"x").unwrap();
            let f = std::fs::File::options()
                .append(true)
                .open(save(mib))
                .unwrap();
            f.set_modified(at(mib)).unwrap();
        }
        // Save 2 was resumed last; save 1, the oldest, was just written (its time is old here
        // only to show that the one just written is never removed).
        mark_used(&save(2));
        tidy(d, &save(1), 3);
        let left: Vec<bool> = (1..=5).map(|m| save(m).exists()).collect();
        assert_eq!(left, [true, true, false, false, true]);
    }

    /// Regression: a saved boot that was a symlink made netsweep open its target for append and
    /// set its time.
    #[test]
    fn a_link_in_a_saves_place_is_never_followed_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, b"keep").unwrap();
        let old = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        std::fs::File::options()
            .append(true)
            .open(&target)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let save = dir.path().join("virtio-1cpu-256mib-1q-aaaa.qemu");
        std::os::unix::fs::symlink(&target, &save).unwrap();
        mark_used(&save);
        assert_eq!(std::fs::metadata(&target).unwrap().modified().unwrap(), old);
        assert!(!resumable(&save));
        assert!(std::fs::symlink_metadata(&save).is_err(), "the link stays");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        std::fs::write(&save, b"x").unwrap();
        assert!(resumable(&save));
    }

    /// A QMP exchange as QEMU has it: greeting, capabilities, an event between a command and
    /// its reply, and an error.
    #[test]
    fn qmp_skips_events_and_reports_errors() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("qmp");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            writeln!(w, r#"{{"QMP": {{"version": {{}}, "capabilities": []}}}}"#).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(line.contains("qmp_capabilities"), "{line}");
            writeln!(w, r#"{{"return": {{}}}}"#).unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            assert!(line.contains("query-migrate"), "{line}");
            writeln!(w, r#"{{"event": "STOP", "timestamp": {{}}}}"#).unwrap();
            writeln!(w, r#"{{"return": {{"status": "completed"}}}}"#).unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            writeln!(
                w,
                r#"{{"error": {{"class": "GenericError", "desc": "no"}}}}"#
            )
            .unwrap();
        });
        let mut qmp = Qmp::connect(&sock).unwrap();
        let r = qmp.execute("query-migrate", Value::Null).unwrap();
        assert_eq!(r["status"], "completed");
        let e = qmp.execute("cont", Value::Null).unwrap_err();
        assert_eq!(e.to_string(), "QEMU refused cont: no");
        server.join().unwrap();
    }
}
