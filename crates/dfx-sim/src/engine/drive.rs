//! One virtual-time client loop for every [`Model`] (the TTS engine and the omni engine):
//! jobs sent at planned virtual times, or closed loop a turnaround after each completion,
//! every emission handed to the caller with the index of its job. The virtual benches
//! (`crate::vbench`, `crate::omni::vbench`) measure on it; no wall clock, no I/O.

use super::{Model, VTime};

/// When jobs are sent.
#[derive(Debug, Clone)]
pub(crate) struct Sends {
    /// `(virtual time, job index)` of the sends planned up front.
    pub planned: Vec<(VTime, usize)>,
    /// Closed loop: each completion sends the next unsent job this much later.
    pub closed_loop: Option<VTime>,
}

/// Runs `jobs` on `engine` as `sends` says; `seen(index, emission, finishes)` gets every
/// emission in the order the model emits them. Jobs get their ids in send order (as a
/// server numbers requests in arrival order); a send due at the same virtual time as a
/// model event goes first. Returns each job's send time (0 for a job never sent).
pub(crate) fn drive<M: Model>(
    mut engine: M,
    jobs: &[M::Job],
    sends: Sends,
    mut seen: impl FnMut(usize, &M::Emission, bool),
) -> Vec<VTime>
where
    M::Job: Clone,
{
    let Sends {
        planned: mut pending,
        closed_loop,
    } = sends;
    let n = jobs.len();
    let mut next = pending.len();
    let mut sent = vec![0; n];
    let mut index_of_id: Vec<usize> = Vec::with_capacity(n);
    let mut routes: Vec<M::Route> = Vec::with_capacity(n);
    let mut out: Vec<M::Emission> = Vec::new();
    loop {
        pending.sort_by_key(|s| std::cmp::Reverse(*s));
        let due_send = pending.last().map(|s| s.0);
        let t = match (engine.next_event(), due_send) {
            (None, None) => break,
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or_default(),
        };
        if due_send == Some(t) {
            let Some((at, i)) = pending.pop() else { break };
            sent[i] = at;
            index_of_id.push(i);
            let mut job = jobs[i].clone();
            routes.push(M::route(&mut job, index_of_id.len() as u64));
            engine.submit(at, job, &mut out);
        } else {
            engine.advance(t, &mut out);
        }
        for e in out.drain(..) {
            let slot = M::due(&e).0 as usize - 1;
            let finishes = M::finishes(&e, &routes[slot]);
            seen(index_of_id[slot], &e, finishes);
            if finishes
                && let Some(turnaround) = closed_loop
                && next < n
            {
                pending.push((M::due(&e).1 + turnaround, next));
                next += 1;
            }
        }
    }
    sent
}
