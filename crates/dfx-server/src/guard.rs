//! The suite's side of a guard ([`crate::guardian`]): starting it right after the group it
//! watches, and dismissing it once the suite has torn that group down.
//!
//! The pipe is created close-on-exec (`std::io::pipe`), so the only copy of its write end
//! that survives an exec is none: the server, the bench client and other guards never hold
//! it, and the guard sees end of file exactly when the suite process is gone, however it
//! ended. (`PR_SET_PDEATHSIG` is not used: it fires when the *thread* that forked exits,
//! which in the suite can be long before the process ends.)

use std::io::{PipeWriter, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{SigHandler, Signal};

use crate::guardian::{DONE, Orders};
use crate::supervision_error::SupervisionError;

/// How long a dismissed guard may take to exit before it is killed.
const DISMISS_WAIT: Duration = Duration::from_secs(3);

/// A running guard, owned by the suite; dropping it dismisses it.
#[derive(Debug)]
pub(crate) struct Guard {
    child: Child,
    pipe: Option<PipeWriter>,
}

impl Guard {
    /// Starts `bin` with `orders`, in a session of its own, the pipe on its stdin, its
    /// stdout discarded and its stderr the suite's.
    pub(crate) fn spawn(bin: &Path, orders: &Orders) -> Result<Guard, SupervisionError> {
        let io = |source| SupervisionError::GuardSpawn {
            bin: bin.to_path_buf(),
            source,
        };
        let (reader, writer) = std::io::pipe().map_err(io)?;
        let mut cmd = Command::new(bin);
        cmd.args(orders.to_args())
            .stdin(Stdio::from(reader))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // SAFETY: between fork and exec the closure only calls setsid(2) and signal(2),
        // both async-signal-safe, and allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid()?;
                for sig in [
                    Signal::SIGINT,
                    Signal::SIGTERM,
                    Signal::SIGHUP,
                    Signal::SIGQUIT,
                ] {
                    nix::sys::signal::signal(sig, SigHandler::SigIgn)?;
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(io)?;
        // `cmd` (and with it the read end) is dropped here: only the guard holds it now.
        Ok(Guard {
            child,
            pipe: Some(writer),
        })
    }

    /// The guard's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Says `done`, closes the pipe and waits (at most 3 s) for the guard to exit; a guard
    /// that lingers is killed by its pid (it is our child and unreaped, so the pid is
    /// still its own). Reaps it. Idempotent.
    pub(crate) fn dismiss(&mut self) {
        let Some(mut pipe) = self.pipe.take() else {
            return;
        };
        let _ = pipe.write_all(DONE);
        drop(pipe);
        let deadline = Instant::now() + DISMISS_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        tracing::warn!(
            pid = self.child.id(),
            "guard did not exit after `done`; killing it"
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.dismiss();
    }
}
