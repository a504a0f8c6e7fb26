//! CPU pinning of a benchmark's child processes (`sched_setaffinity` in the child before
//! `exec`), so a client's figures are what it does on one core; at a raised priority, so
//! other work on a shared machine seldom preempts it (a preemption of a few ms is a p99).

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The CPUs this process may run on, in order (its affinity mask).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return vec![0];
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// The client's core (the last allowed CPU) and the server's (the others; all of them on
/// a one-CPU machine, where the two share it).
pub(crate) fn split() -> (usize, Vec<usize>) {
    let mut all = allowed_cpus();
    let client = all.pop().unwrap_or(0);
    if all.is_empty() {
        all.push(client);
    }
    (client, all)
}

/// The nice value of a pinned child (when the user may raise priority; else it keeps its
/// own).
const NICE: libc::c_int = -15;

/// Runs `cmd`'s process on `cpus` only, at nice [`NICE`] when permitted (its threads and
/// children inherit both).
pub(crate) fn to_cpus(cmd: &mut Command, cpus: &[usize]) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes within it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: between fork and exec the closure only calls sched_setaffinity and
    // setpriority, both async-signal-safe, on a set copied into the closure.
    unsafe {
        cmd.pre_exec(move || {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            if libc::sched_setaffinity(0, size, &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Without CAP_SYS_NICE this fails with EACCES: the child runs at its own nice.
            let _ = libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
            Ok(())
        });
    }
}
