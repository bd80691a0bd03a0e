//! Platform leaf: the scheduling class of the calling thread.

/// Moves the calling thread to the lowest real-time priority (SCHED_FIFO 1), for threads that
/// timestamp packets and do microseconds of work per wake-up: the latency probe and its echo.
/// They then run as soon as a packet or their timer is due instead of queueing behind the
/// test's own busy threads, so their timestamps do not carry the host's CPU load, and their
/// brief runs disturb the placement of the busy threads less. Needs CAP_SYS_NICE; returns
/// false (and changes nothing) without it. The kernel's real-time throttling
/// (`kernel.sched_rt_runtime_us`) bounds such threads in any case.
pub fn prefer_timely() -> bool {
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}
