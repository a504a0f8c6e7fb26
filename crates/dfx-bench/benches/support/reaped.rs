//! A benchmark's client child, reaped with `wait4` for its rusage: its CPU time (user +
//! system, its reaped children included), wall time and exit status; killed with its
//! whole process group when it overruns or the benchmark panics.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one client run may take before it is killed (its whole process group).
const RUN_LIMIT: Duration = Duration::from_secs(900);

/// This process's peak RSS (`VmHWM` of /proc/self/status, KiB). Not `ru_maxrss` from
/// `wait4`: a child spawned with `posix_spawn`/`vfork` starts on the parent's memory, and
/// Linux carries that memory's high-water mark into the child's `ru_maxrss` at `exec`, so
/// it would report at least the parent's RSS at spawn time.
pub(crate) fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// What a reaped child used.
pub(crate) struct Reaped {
    pub(crate) cpu_s: f64,
    pub(crate) wall_s: f64,
    pub(crate) status: i32,
}

/// Runs `cmd` in its own process group (on CPU `pin` when given), output to `log`.
// The child is reaped with wait4 (for its rusage), or killed and reaped by the guard.
#[allow(clippy::zombie_processes)]
pub(crate) fn run_child(mut cmd: Command, log: &Path, pin: Option<usize>) -> Reaped {
    let out = std::fs::File::create(log).unwrap();
    let err = out.try_clone().unwrap();
    if let Some(cpu) = pin {
        super::pin::to_cpus(&mut cmd, &[cpu]);
    }
    let t0 = Instant::now();
    let child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start a client child");
    let pid = child.id() as libc::pid_t;
    struct Guard(libc::pid_t, bool);
    impl Drop for Guard {
        fn drop(&mut self) {
            if !self.1 {
                // SAFETY: signals our own child's process group, then reaps the child.
                unsafe {
                    libc::kill(-self.0, libc::SIGKILL);
                    libc::waitpid(self.0, std::ptr::null_mut(), 0);
                }
            }
        }
    }
    let mut guard = Guard(pid, false);
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 writes into the two locals.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            guard.1 = true;
            break;
        }
        assert!(r == 0, "wait4 failed: {}", std::io::Error::last_os_error());
        if t0.elapsed() > RUN_LIMIT {
            drop(guard);
            panic!(
                "a client run took over {RUN_LIMIT:?}; killed (log: {})",
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Anything the client left in its group goes too.
    // SAFETY: signals a process group we created; ESRCH when it is empty.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Reaped {
        cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime),
        wall_s: t0.elapsed().as_secs_f64(),
        status,
    }
}
