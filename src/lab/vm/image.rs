//! The guest image: built from this machine's Debian packages, cached in a directory.
//!
//! `kernel/` holds `vmlinux` (the ELF inside Debian's `vmlinuz`), the NIC driver modules and
//! the kernel's version; it is made once (`apt-get download` of the package that
//! `linux-image-amd64` depends on, `dpkg -x`, `xz -dc` from the XZ stream's magic). `initrd.cpio`
//! is rebuilt on every boot preparation, because it carries the running netsweep binary.

use super::cpio::{self, Entry};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where images are kept unless `NETSWEEP_VM_DIR` says otherwise.
pub const DEFAULT_DIR: &str = "/var/cache/netsweep/vm";

/// The NIC driver modules, in load order (each after the modules it depends on; the package
/// has no usable modules.dep for a hand-made initramfs).
pub const MODULES: [&str; 13] = [
    "mii",
    "8139too",
    "8139cp",
    "e1000",
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "failover",
    "net_failover",
    "virtio_net",
    // BBR, so a congestion-control dimension runs in guests as on the host.
    "tcp_bbr",
];

/// This machine's tools the guest gets beside busybox where this machine has them (in the
/// guest's /bin, with their libraries), so `netsweep doctor` inside the guest can read its
/// NIC's offloads, rings and coalescing (`ethtool`) and its qdisc (`tc`; busybox's lacks
/// `-s`), which it otherwise reported as "not checked". `.ci/run` installs both packages.
pub const GUEST_TOOLS: [&str; 2] = ["ethtool", "tc"];

/// Where this machine keeps a guest tool, if it has it.
fn host_tool(name: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// What to install when a tool is missing.
pub const PACKAGES: &str = "qemu-system-x86 busybox-static xz-utils";

/// A built image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub dir: PathBuf,
    pub vmlinux: PathBuf,
    pub initrd: PathBuf,
    pub kernel_version: String,
    /// What this exact kernel and initramfs are (a hash of both), for the saved boots made
    /// from them (`snapshot`).
    pub stamp: String,
}

/// The image directory in use.
pub fn dir() -> PathBuf {
    std::env::var_os("NETSWEEP_VM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// The kernel if already cached, without building anything.
pub fn cached_kernel(dir: &Path) -> Option<(PathBuf, String)> {
    let k = dir.join("kernel");
    let version = std::fs::read_to_string(k.join("version")).ok()?;
    let vmlinux = k.join("vmlinux");
    // A cache made before a module joined the list is made again.
    let complete = MODULES
        .iter()
        .all(|m| k.join("modules").join(format!("{m}.ko")).is_file());
    (vmlinux.is_file() && complete).then(|| (vmlinux, version.trim().to_string()))
}

/// The image directory's lock (`DIR/.lock`), held while the kernel is fetched or the
/// accelerator probed; waits for another holder.
pub fn lock(dir: &Path) -> anyhow::Result<crate::platform::filelock::FileLock> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(".lock");
    crate::platform::filelock::FileLock::acquire(&path)
        .with_context(|| format!("cannot lock {}", path.display()))
}

/// Makes sure the kernel is cached and writes a fresh initramfs with `netsweep` in it.
pub fn prepare(dir: &Path, netsweep: &Path, log: &dyn Fn(&str)) -> anyhow::Result<Image> {
    let (vmlinux, kernel_version) = match cached_kernel(dir) {
        Some(k) => k,
        None => {
            // Two labs building the image for the first time at once: one downloads, the
            // other waits for it and finds the kernel cached.
            let _lock = lock(dir)?;
            match cached_kernel(dir) {
                Some(k) => k,
                None => fetch_kernel(dir, log)?,
            }
        }
    };
    let initrd = dir.join("initrd.cpio");
    let entries = initramfs(&dir.join("kernel/modules"), netsweep)?;
    // What a process killed while writing left (its own name, so never removed).
    remove_stale_temp(dir);
    // Two labs may prepare the image at once, from two processes or from two threads of one
    // (a campaign booting its guests together).
    let tmp = own_temp(&initrd);
    let archive = cpio::archive(&entries);
    let stamp = stamp(&vmlinux, &archive)?;
    std::fs::write(&tmp, archive).with_context(|| format!("cannot write {}", tmp.display()))?;
    crate::lab::test_pause("image-written");
    std::fs::rename(&tmp, &initrd)?;
    Ok(Image {
        dir: dir.to_path_buf(),
        vmlinux,
        initrd,
        kernel_version,
        stamp,
    })
}

/// The first 16 hex digits of SHA-256 over the kernel's size and modification time and the
/// initramfs's bytes: the kernel is written once (`fetch_kernel`), the initramfs carries the
/// running netsweep and the init script.
fn stamp(vmlinux: &Path, initrd: &[u8]) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};
    let meta =
        std::fs::metadata(vmlinux).with_context(|| format!("cannot read {}", vmlinux.display()))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut h = Sha256::new();
    h.update(meta.len().to_le_bytes());
    h.update(modified.to_le_bytes());
    h.update(initrd);
    Ok(h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A temporary name beside `path` of this process's and this call's own (`NAME.tmpPID-N`), for
/// a file written whole and then renamed into place.
pub(super) fn own_temp(path: &Path) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    path.with_extension(format!("tmp{}-{call}", std::process::id()))
}

/// The process that is writing `path`, when it is a name `own_temp` made.
pub(super) fn temp_writer(path: &Path) -> Option<u32> {
    path.extension()?
        .to_str()?
        .strip_prefix("tmp")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// How long an unfinished file (an initramfs, a saved boot) may stay, even if a process of its
/// PID runs (a reused PID): writing one takes well under a second, a save at most a minute.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether `entry` is a temporary file (`own_temp`) of another process that no longer runs or
/// that has been at it longer than `STALE_TEMP`: left by a kill while it was written.
pub(super) fn stale_temp(entry: &std::fs::DirEntry) -> bool {
    let Some(pid) = temp_writer(&entry.path()) else {
        return false;
    };
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > STALE_TEMP);
    pid != std::process::id() && (old || !crate::platform::process::alive(pid))
}

/// Removes `initrd.tmpPID` (and `initrd.tmpPID-N`) files left by a kill while the image was
/// written (`stale_temp`). Returns the removed names.
pub fn remove_stale_temp(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("initrd.tmp")
            && stale_temp(&e)
            && std::fs::remove_file(e.path()).is_ok()
        {
            removed.push(name);
        }
    }
    removed
}

fn output(program: &str, args: &[&str], cwd: Option<&Path>) -> anyhow::Result<String> {
    let mut c = Command::new(program);
    c.args(args);
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let out = c.output().with_context(|| {
        format!("cannot run {program}: the guest image needs Debian's apt and {PACKAGES}")
    })?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Downloads and unpacks the kernel package, keeps vmlinux and the NIC modules.
fn fetch_kernel(dir: &Path, log: &dyn Fn(&str)) -> anyhow::Result<(PathBuf, String)> {
    let package = kernel_package(&output(
        "apt-cache",
        &["depends", "linux-image-amd64"],
        None,
    )?)
    .context("apt-cache names no kernel package for linux-image-amd64 (run apt-get update)")?;
    let work = dir.join("download");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    log(&format!("downloading {package} (about 70 MB, once)"));
    output("apt-get", &["download", &package], Some(&work))?;
    let deb = std::fs::read_dir(&work)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download left no .deb")?;
    let root = work.join("root");
    output(
        "dpkg",
        &["-x", &deb.to_string_lossy(), &root.to_string_lossy()],
        None,
    )?;
    let vmlinuz = std::fs::read_dir(root.join("boot"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .context("the kernel package has no boot/vmlinuz-*")?;
    let version = vmlinuz
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .trim_start_matches("vmlinuz-")
                .to_string()
        })
        .unwrap_or_default();
    let kernel = dir.join("kernel");
    let _ = std::fs::remove_dir_all(&kernel);
    std::fs::create_dir_all(kernel.join("modules"))?;
    log("taking the uncompressed kernel out of vmlinuz");
    let packed = std::fs::read(&vmlinuz)?;
    let at = xz_stream(&packed).context("no XZ stream in vmlinuz (not a Debian x86 kernel?)")?;
    let elf = unxz(&packed[at..])?;
    if !elf.starts_with(b"\x7fELF") {
        bail!(
            "the XZ stream in {} is not an ELF kernel",
            vmlinuz.display()
        );
    }
    std::fs::write(kernel.join("vmlinux"), elf)?;
    let tree = root.join("lib/modules").join(&version);
    for m in MODULES {
        let found = find_module(&tree, m)
            .with_context(|| format!("module {m} is not in {}", tree.display()))?;
        std::fs::copy(&found, kernel.join("modules").join(format!("{m}.ko")))?;
    }
    std::fs::write(kernel.join("version"), &version)?;
    let _ = std::fs::remove_dir_all(&work);
    Ok((kernel.join("vmlinux"), version))
}

/// `xz -dc --single-stream` of `data`.
fn unxz(data: &[u8]) -> anyhow::Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new("xz")
        .args(["-dc", "--single-stream"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run xz (install {PACKAGES})"))?;
    let mut stdin = child.stdin.take().context("xz stdin")?;
    let data = data.to_vec();
    // Fed from a thread: xz writes while it reads, and both pipes must keep moving.
    let feeder = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output()?;
    let _ = feeder.join();
    if out.stdout.is_empty() {
        bail!("xz: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

fn find_module(tree: &Path, name: &str) -> Option<PathBuf> {
    let want = format!("{name}.ko");
    let mut stack = vec![tree.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if e.file_name().to_string_lossy() == want {
                return Some(p);
            }
        }
    }
    None
}

/// Where the XZ stream inside a compressed kernel starts (its magic FD 37 7A 58 5A 00).
pub fn xz_stream(bytes: &[u8]) -> Option<usize> {
    const MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0];
    bytes.windows(MAGIC.len()).position(|w| w == MAGIC)
}

/// The kernel package in `apt-cache depends linux-image-amd64` output.
pub fn kernel_package(depends: &str) -> Option<String> {
    depends.lines().find_map(|l| {
        let p = l.trim().strip_prefix("Depends:")?.trim();
        p.starts_with("linux-image-").then(|| p.to_string())
    })
}

/// The libraries `ldd` names, at their absolute paths (the loader included).
pub fn ldd_libraries(ldd: &str) -> Vec<PathBuf> {
    ldd.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// The guest's /init.
pub fn init_script() -> String {
    let modules = MODULES.join(" ");
    let exec_port = super::channel::EXEC_PORT;
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
export PATH=/bin
for m in {modules}; do insmod /lib/modules/$m.ko 2>/dev/null; done
# Started to be saved or resumed (`netsweep.settings=console`): the NIC is bound, then the guest
# waits for its settings (address, port, command channel) as one line on its console, so a
# saved boot holds no lab's settings and no token (the line is not echoed).
SETTINGS=
case " $(cat /proc/cmdline) " in *" netsweep.settings=console "*)
  i=0
  while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
  stty -echo < /dev/ttyS0 2>/dev/null
  echo "netsweep-guest: waiting for settings"
  read -r SETTINGS < /dev/ttyS0
  ;;
esac
IP=198.18.0.2/24
PORT=5201
CTL=
PEER=
TOKEN=
for w in $(cat /proc/cmdline) $SETTINGS; do
  case "$w" in
    netsweep.ip=*) IP="${{w#netsweep.ip=}}" ;;
    netsweep.port=*) PORT="${{w#netsweep.port=}}" ;;
    netsweep.ctl=*) CTL="${{w#netsweep.ctl=}}" ;;
    netsweep.peer=*) PEER="${{w#netsweep.peer=}}" ;;
    netsweep.token=*) TOKEN="${{w#netsweep.token=}}" ;;
  esac
done
ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
ip addr add "$IP" dev eth0
ip link set eth0 up
DRIVER=$(basename "$(readlink /sys/class/net/eth0/device/driver)")
echo "netsweep-guest: driver=$DRIVER"
/bin/netsweep server --port "$PORT" > /dev/console 2>&1 &
# The lab's command channel (`lab exec NAME b`): a shell per connection that sent the lab's
# token, on the control address only (the host namespace's side of the TAP device).
if [ -n "$CTL" ]; then
  ip addr add "$CTL/32" dev eth0
  (umask 077; echo "$TOKEN" > /tmp/channel.token)
  /bin/netsweep lab guest-channel --listen "$CTL:{exec_port}" --peer "$PEER" \
    --token-file /tmp/channel.token > /dev/console 2>&1 &
fi
# Ready once both listen.
i=0
while [ $i -lt 600 ]; do
  L=$(netstat -ltn 2>/dev/null)
  case "$L" in *":$PORT "*) [ -z "$CTL" ] && break; case "$L" in *":{exec_port} "*) break ;; esac ;; esac
  sleep 0.1; i=$((i+1))
done
# And once the NIC has a link: an emulated e1000 reports it about 2 s after it is set up (its
# driver's link watchdog), and until then no test gets through (at most 10 s).
i=0
while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] && [ $i -lt 200 ]; do
  sleep 0.05; i=$((i+1))
done
echo "netsweep-guest: ready"
while true; do sleep 3600; done
"#
    )
}

/// The initramfs: busybox, netsweep and their libraries, the modules, /init.
fn initramfs(modules: &Path, netsweep: &Path) -> anyhow::Result<Vec<Entry>> {
    let busybox = Path::new("/bin/busybox");
    if !busybox.is_file() {
        bail!("no /bin/busybox: install {PACKAGES}");
    }
    let mut entries: Vec<Entry> = ["bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules"]
        .iter()
        .map(|d| Entry::Dir {
            path: d.to_string(),
        })
        .collect();
    let mut dirs: Vec<String> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Dir { path } => Some(path.clone()),
            _ => None,
        })
        .collect();
    let mut add_file = |entries: &mut Vec<Entry>, at: &Path, from: &Path, executable: bool| {
        let data =
            std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
        let mut parent = PathBuf::new();
        for c in at.parent().into_iter().flat_map(|p| p.components()).skip(1) {
            parent.push(c);
            let p = parent.to_string_lossy().to_string();
            if !dirs.contains(&p) {
                entries.push(Entry::Dir { path: p.clone() });
                dirs.push(p);
            }
        }
        entries.push(Entry::File {
            path: at.to_string_lossy().to_string(),
            data,
            executable,
        });
        anyhow::Ok(())
    };
    add_file(&mut entries, Path::new("/bin/busybox"), busybox, true)?;
    // Before busybox installs its applets, which leaves a name already taken to the tool.
    // Each program, where it goes, and whether the guest cannot do without it.
    let mut programs = vec![(PathBuf::from("/bin/netsweep"), netsweep.to_path_buf(), true)];
    programs.extend(
        GUEST_TOOLS
            .iter()
            .filter_map(|t| Some((Path::new("/bin").join(t), host_tool(t)?, false))),
    );
    let mut libs: Vec<PathBuf> = Vec::new();
    for (at, from, required) in &programs {
        let ldd = match output("ldd", &[&from.to_string_lossy()], None) {
            Ok(ldd) => ldd,
            Err(e) if *required => return Err(e),
            // A tool whose libraries are unknown stays out; doctor then says it is missing.
            Err(_) => continue,
        };
        add_file(&mut entries, at, from, true)?;
        for lib in ldd_libraries(&ldd) {
            if !libs.contains(&lib) {
                add_file(&mut entries, &lib, &lib, true)?;
                libs.push(lib);
            }
        }
    }
    for m in MODULES {
        let from = modules.join(format!("{m}.ko"));
        add_file(
            &mut entries,
            &Path::new("/lib/modules").join(format!("{m}.ko")),
            &from,
            false,
        )?;
    }
    entries.push(Entry::File {
        path: "init".into(),
        data: init_script().into_bytes(),
        executable: true,
    });
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 31, item 7): a kill while the guest image was written left
    /// `initrd.tmpPID` files (2-4 MB each) forever.
    #[test]
    fn stale_initrd_temp_files_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Above any pid_max Linux allows: no such process.
        let dead = dir.path().join("initrd.tmp4999999");
        // One of a thread's own calls (a campaign booting guests at once).
        let dead_call = dir.path().join("initrd.tmp4999998-3");
        let own = dir
            .path()
            .join(format!("initrd.tmp{}-0", std::process::id()));
        let other = dir.path().join("initrd.cpio");
        for f in [&dead, &dead_call, &own, &other] {
            std::fs::write(f, b"x").unwrap();
        }
        let mut removed = remove_stale_temp(dir.path());
        removed.sort();
        assert_eq!(removed, vec!["initrd.tmp4999998-3", "initrd.tmp4999999"]);
        assert!(!dead.exists() && !dead_call.exists() && own.exists() && other.exists());
    }

    #[test]
    fn the_kernel_package_is_read_from_apt_cache() {
        let text = "linux-image-amd64\n  Depends: linux-image-6.1.0-56-amd64\n";
        assert_eq!(
            kernel_package(text).as_deref(),
            Some("linux-image-6.1.0-56-amd64")
        );
        assert_eq!(kernel_package("linux-image-amd64\n"), None);
    }

    #[test]
    fn ldd_output_gives_absolute_library_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007f0f5c5c1000)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f0f5c58f000)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0f5bc1e000)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f0f5c5c3000)\n";
        assert_eq!(
            ldd_libraries(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert!(ldd_libraries("\tnot a dynamic executable\n").is_empty());
    }

    #[test]
    fn the_xz_stream_is_found_after_the_setup_code() {
        let mut k = vec![0u8; 1000];
        k.extend_from_slice(&[0xfd, b'7', b'z', b'X', b'Z', 0, 1, 2]);
        assert_eq!(xz_stream(&k), Some(1000));
        assert_eq!(xz_stream(&[0u8; 100]), None);
    }

    #[test]
    fn init_loads_every_module_and_reads_its_address_from_the_command_line() {
        let s = init_script();
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("mii 8139too 8139cp e1000 virtio_ring"), "{s}");
        assert!(s.contains("netsweep.ip=*) IP=\"${w#netsweep.ip=}\""), "{s}");
        assert!(s.contains("netsweep-guest: ready"));
        // Ready only once the server and the command channel both listen.
        assert!(
            s.contains(
                "*\":$PORT \"*) [ -z \"$CTL\" ] && break; case \"$L\" in *\":5311 \"*) break"
            ),
            "{s}"
        );
        // The channel: netsweep's, on the control address, asking for the token; no
        // unauthenticated busybox shell.
        assert!(
            s.contains("lab guest-channel --listen \"$CTL:5311\" --peer \"$PEER\""),
            "{s}"
        );
        assert!(!s.contains("nc -ll"), "{s}");
    }
}
