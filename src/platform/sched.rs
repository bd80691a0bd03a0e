//! Platform leaf: the scheduling class of the calling thread, and the CPUs it runs on.

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

// CPU pinning through libc, which carries both platforms' calls: the `core_affinity` crate
// answers a failed pin with `false`, and a refused test has to say why (errno).

/// Pins the calling thread to CPU `cpu`.
#[cfg(target_os = "linux")]
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays within it (checked above);
    // sched_setaffinity(0, ..) applies to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs the calling thread may run on, in order.
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: sched_getaffinity fills the zeroed set we own; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Pins the calling thread to CPU `cpu`.
#[cfg(target_os = "freebsd")]
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpuset_t is an empty set; CPU_SET stays within it (checked above);
    // id -1 with CPU_WHICH_TID is the calling thread.
    unsafe {
        let mut set: libc::cpuset_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::cpuset_setaffinity(
            libc::CPU_LEVEL_WHICH,
            libc::CPU_WHICH_TID,
            -1,
            std::mem::size_of::<libc::cpuset_t>(),
            &set,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs the calling thread may run on, in order.
#[cfg(target_os = "freebsd")]
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: cpuset_getaffinity fills the zeroed set we own; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpuset_t = std::mem::zeroed();
        if libc::cpuset_getaffinity(
            libc::CPU_LEVEL_WHICH,
            libc::CPU_WHICH_TID,
            -1,
            std::mem::size_of::<libc::cpuset_t>(),
            &mut set,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}
