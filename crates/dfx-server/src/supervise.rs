//! Supervision of a process group this process has just started (a server, the external
//! bench client): the registry entry that the SIGINT/SIGTERM handler and
//! [`crate::teardown_all`] ([`crate::registry`]) tear down, a guard process that stops the group if this process
//! dies without doing so (even `kill -9`, [`crate::guard`]), and a state file in the
//! results folder that lets the next run stop it if the guard died too ([`crate::live`]).
//!
//! The owner of the group tears it down itself and then calls [`Watch::release`] (also on
//! drop), which removes the state file and dismisses the guard.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::guard::Guard;
use crate::guardian::Orders;
use crate::live::{self, LiveRecord};
use crate::procfs;
use crate::registry::{self, Entry};
use crate::supervision_error::SupervisionError;

/// Where the guard executable is and where state files go; the default supervises
/// through the registry only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Supervision {
    /// The guard executable (`dfx-perf-guard`); `None`: no guard.
    pub guard_bin: Option<PathBuf>,
    /// The state folder (`<results-dir>/.dfx-live-servers`); `None`: no state files.
    pub live_dir: Option<PathBuf>,
}

/// The group to watch.
#[derive(Debug, Clone, Copy)]
pub struct WatchSpec<'a> {
    /// The leader's pid (= the group id); it must lead a group of its own.
    pub leader: i32,
    /// What the group is, for messages (`server`, `vllm bench`).
    pub what: &'a str,
    /// SIGTERM→SIGKILL grace.
    pub grace: Duration,
    /// A log the guard appends its messages to.
    pub log: Option<&'a Path>,
}

impl Supervision {
    /// Starts supervising the group `spec.leader` leads. Problems are printed as warnings
    /// and leave the group registered (torn down on SIGINT/SIGTERM and by its owner).
    pub fn watch(&self, spec: WatchSpec<'_>) -> Watch {
        // Registered before the guard starts (a fork and exec, slow on a loaded machine):
        // a signal in between tears the group down with the rest and names it.
        registry::register(
            spec.leader,
            Entry {
                what: spec.what.to_string(),
                grace: spec.grace,
                guard: None,
                state: None,
            },
        );
        let (mut built, problems) = self.entry(&spec);
        for p in &problems {
            tracing::warn!(pgid = spec.leader, "{p}");
            eprintln!(
                "dfx-perf: warning: {p}; if the suite is killed with SIGKILL, its {} (process group {}) may be left running",
                spec.what, spec.leader
            );
        }
        let attached = registry::with_entry(spec.leader, |e| {
            e.guard = built.guard.take();
            e.state = built.state.take();
        });
        if attached.is_none() {
            // Torn down (and unregistered) by a signal meanwhile: nothing is left to guard.
            built.finish();
        }
        Watch {
            pgid: spec.leader,
            released: false,
        }
    }

    fn entry(&self, spec: &WatchSpec<'_>) -> (Entry, Vec<SupervisionError>) {
        let mut entry = Entry {
            what: spec.what.to_string(),
            grace: spec.grace,
            guard: None,
            state: None,
        };
        let mut problems = Vec::new();
        if self.guard_bin.is_none() && self.live_dir.is_none() {
            return (entry, problems);
        }
        let Some(record) = LiveRecord::capture(spec.leader, spec.what, spec.grace) else {
            problems.push(SupervisionError::NoProcess(spec.leader));
            return (entry, problems);
        };
        if let Some(dir) = &self.live_dir {
            match live::write(dir, &record) {
                Ok(path) => entry.state = Some((path, record.clone())),
                Err(e) => problems.push(e),
            }
        }
        if let Some(bin) = &self.guard_bin {
            let orders = Orders {
                leader: record.leader(),
                grace: spec.grace,
                what: spec.what.to_string(),
                state_file: entry.state.as_ref().map(|(p, _)| p.clone()),
                log: spec.log.map(Path::to_path_buf),
            };
            match Guard::spawn(bin, &orders) {
                Ok(g) => entry.guard = Some(g),
                Err(e) => problems.push(e),
            }
        }
        (entry, problems)
    }
}

/// A supervised group; [`Watch::release`] (or dropping it) ends the supervision once the
/// owner has torn the group down.
#[derive(Debug)]
pub struct Watch {
    pgid: i32,
    released: bool,
}

impl Watch {
    /// The process group id.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The guard's pid, if one runs.
    pub fn guard_pid(&self) -> Option<u32> {
        registry::with_entry(self.pgid, |e| e.guard.as_ref().map(Guard::pid)).flatten()
    }

    /// Re-records the leader's command line (a server may retitle itself while starting),
    /// so the next run's check compares against what it shows once ready.
    pub(crate) fn refresh(&self) {
        registry::with_entry(self.pgid, |e| {
            let Some((path, record)) = &mut e.state else {
                return;
            };
            let now = procfs::cmdline(self.pgid).unwrap_or_default();
            if !now.is_empty() && now != record.cmdline {
                record.cmdline = now;
                if let Some(dir) = path.parent()
                    && let Err(err) = live::write(dir, record)
                {
                    tracing::warn!(pgid = self.pgid, "{err}");
                }
            }
        });
    }

    /// Ends the supervision: unregisters the group, removes its state file, dismisses its
    /// guard. Call it only once the group is gone. Idempotent.
    pub fn release(&mut self) {
        if !self.released {
            self.released = true;
            registry::unregister(self.pgid);
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.release();
    }
}
