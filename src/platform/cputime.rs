//! CPU time. The host's, from `/proc/stat` (Linux): busy and total ticks over all cores, so the
//! campaign runner can say how busy the host was during a run. Elsewhere (FreeBSD has no
//! `/proc/stat`) the reading is `None`. Parsing is pure; `read` takes the proc root.
//! A thread's, from getrusage(2) (`thread_cpu`), summed per test end into `CpuUsage`, which
//! the engine reports and both protocols carry.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Ticks of all cores since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub total: u64,
    pub cores: usize,
}

/// Parses `/proc/stat`: the `cpu` line's user nice system idle iowait irq softirq steal; idle
/// and iowait are not busy.
pub fn parse(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if f.len() < 4 {
        return None;
    }
    let total: u64 = f.iter().fold(0u64, |a, x| a.saturating_add(*x));
    let idle = f[3].saturating_add(f.get(4).copied().unwrap_or(0));
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some(CpuTicks {
        busy: total.saturating_sub(idle),
        total,
        cores,
    })
}

/// Reads `ROOT/stat` (`/proc` on a live host).
pub fn read(proc_root: &Path) -> Option<CpuTicks> {
    parse(&std::fs::read_to_string(proc_root.join("stat")).ok()?)
}

/// Percent of all cores busy between two readings.
pub fn busy_percent(before: CpuTicks, after: CpuTicks) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let busy = after.busy.checked_sub(before.busy)?;
    (total > 0).then(|| busy as f64 / total as f64 * 100.0)
}

/// CPU used by one end's test threads, over the test's wall time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuUsage {
    pub user_s: f64,
    pub system_s: f64,
    pub wall_s: f64,
}

impl CpuUsage {
    /// Percent of one core: 100 means one core fully busy.
    pub fn percent(&self) -> f64 {
        if self.wall_s <= 0.0 {
            0.0
        } else {
            (self.user_s + self.system_s) / self.wall_s * 100.0
        }
    }

    pub fn add(&mut self, other: &CpuUsage) {
        self.user_s += other.user_s;
        self.system_s += other.system_s;
    }
}

/// User and system CPU time of the calling thread so far (`wall_s` left at zero).
pub fn thread_cpu() -> CpuUsage {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return CpuUsage::default();
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    CpuUsage {
        user_s: secs(ru.ru_utime),
        system_s: secs(ru.ru_stime),
        wall_s: 0.0,
    }
}

/// The calling thread's CPU time so far in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`: the
/// scheduler's own count, not ticks); `None` when the clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    // SAFETY: clock_gettime fills the struct we pass.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64)
}

/// CPU used by the calling thread since `start` (a value from `thread_cpu`).
pub fn thread_cpu_since(start: &CpuUsage) -> CpuUsage {
    let now = thread_cpu();
    CpuUsage {
        user_s: now.user_s - start.user_s,
        system_s: now.system_s - start.system_s,
        wall_s: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_share_over_all_cores() {
        let a = parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0\ncpu1 50 0 25 400 25 0 0 0\nintr 1\n").unwrap();
        assert_eq!((a.busy, a.total, a.cores), (150, 1000, 2));
        let b = parse("cpu  400 0 150 1300 150 0 0 0 0 0\n").unwrap();
        // 400 busy ticks of 1000.
        assert_eq!(busy_percent(a, b), Some(40.0));
        assert!(parse("intr 1\n").is_none());
        assert!(
            busy_percent(b, a).is_none(),
            "a counter that went back is no reading"
        );
    }
}
