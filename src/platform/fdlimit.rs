//! Platform leaf: the process's open-file limit (RLIMIT_NOFILE), read and raised to its hard
//! ceiling, so the server can budget descriptors instead of finding out at `accept` (EMFILE).

/// Raises the soft open-file limit to the hard one (as far as the kernel allows) and returns
/// the soft limit in force afterwards; `None` if it cannot be read.
pub fn raise_to_hard() -> Option<u64> {
    let mut lim = read()?;
    if lim.rlim_cur < lim.rlim_max {
        let wanted = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: a valid rlimit for the duration of the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } == 0 {
            lim = wanted;
        }
    }
    Some(as_count(lim.rlim_cur))
}

/// The soft open-file limit in force.
pub fn soft() -> Option<u64> {
    read().map(|l| as_count(l.rlim_cur))
}

/// Descriptors this process has open now (`/proc/self/fd` or `/dev/fd`), if they can be counted.
pub fn open_now() -> Option<u64> {
    ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|d| std::fs::read_dir(d).ok())
        .map(|entries| entries.count() as u64)
}

fn read() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer for the duration of the call.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim)
}

// rlim_t is u64 on Linux but i64 on FreeBSD, so the cast is needed there.
#[allow(clippy::unnecessary_cast)]
fn as_count(v: libc::rlim_t) -> u64 {
    if v == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        v as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_read_and_counts_what_is_open() {
        let soft = soft().expect("RLIMIT_NOFILE");
        let open = open_now().expect("an fd directory");
        assert!(open >= 3 && open <= soft, "open {open}, soft {soft}");
    }
}
