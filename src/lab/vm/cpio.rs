//! The initramfs format: a "newc" cpio archive (the kernel's `usr/gen_init_cpio` writes the
//! same), uncompressed, because decompressing inside an emulated guest costs seconds. Pure.

/// One entry of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir {
        path: String,
    },
    File {
        path: String,
        data: Vec<u8>,
        executable: bool,
    },
    Symlink {
        path: String,
        target: String,
    },
}

/// A newc archive of `entries`, in order, with the trailer.
pub fn archive(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let ino = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let (path, mode, data): (&str, u32, &[u8]) = match e {
            Entry::Dir { path } => (path, 0o040_755, &[]),
            Entry::File {
                path,
                data,
                executable,
            } => (path, if *executable { 0o100_755 } else { 0o100_644 }, data),
            Entry::Symlink { path, target } => (path, 0o120_777, target.as_bytes()),
        };
        let nlink = if matches!(e, Entry::Dir { .. }) { 2 } else { 1 };
        push_entry(
            &mut out,
            ino,
            mode,
            nlink,
            path.trim_start_matches('/'),
            data,
        );
    }
    push_entry(&mut out, 0, 0, 1, "TRAILER!!!", &[]);
    out
}

fn push_entry(out: &mut Vec<u8>, ino: u32, mode: u32, nlink: u32, name: &str, data: &[u8]) {
    let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
    let namesize = u32::try_from(name.len() + 1).unwrap_or(u32::MAX);
    // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
    // rdevminor, namesize, check
    let fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, namesize, 0];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad4(out);
    out.extend_from_slice(data);
    pad4(out);
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Entry> {
        vec![
            Entry::Dir { path: "bin".into() },
            Entry::File {
                path: "/bin/hello".into(),
                data: b"#!/bin/sh\necho hi\n".to_vec(),
                executable: true,
            },
            Entry::Symlink {
                path: "bin/sh".into(),
                target: "busybox".into(),
            },
        ]
    }

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let a = archive(&sample());
        assert_eq!(a.len() % 4, 0);
        assert!(a.starts_with(b"070701"));
        let tail = String::from_utf8_lossy(&a[a.len() - 16..]).to_string();
        assert!(tail.contains("TRAILER!!!"), "{tail}");
        // The first header: ino 1, a directory, nlink 2, name "bin" (4 bytes with its NUL).
        let h = std::str::from_utf8(&a[..110]).unwrap();
        assert_eq!(&h[6..14], "00000001");
        assert_eq!(&h[14..22], "000041ed");
        assert_eq!(&h[38..46], "00000002");
        assert_eq!(&h[94..102], "00000004");
    }

    /// The system's cpio reads what we write (when it is installed).
    #[test]
    fn cpio_lists_and_extracts_the_archive() {
        let Ok(out) = std::process::Command::new("cpio").arg("--version").output() else {
            eprintln!("skipped: no cpio");
            return;
        };
        assert!(out.status.success());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.cpio");
        std::fs::write(&file, archive(&sample())).unwrap();
        let x = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "cd {} && cpio -id < a.cpio 2>&1",
                dir.path().display()
            ))
            .output()
            .unwrap();
        assert!(x.status.success(), "{}", String::from_utf8_lossy(&x.stdout));
        let hello = dir.path().join("bin/hello");
        assert_eq!(std::fs::read(&hello).unwrap(), b"#!/bin/sh\necho hi\n");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&hello).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            std::fs::read_link(dir.path().join("bin/sh")).unwrap(),
            std::path::Path::new("busybox")
        );
    }
}
