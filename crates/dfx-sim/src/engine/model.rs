//! The interface every performance model offers its driver (`crate::driver`): jobs in at
//! virtual times, emissions out, stamped with the virtual time they are due. The TTS
//! [`Engine`] and the omni engine (`crate::omni`) implement it; one driver runs either.

use super::{Emission, Engine, EngineSnapshot, Job, VTime};

/// A deterministic discrete-event model, free of clocks, threads and I/O.
pub(crate) trait Model: Send + 'static {
    /// One request, as the model takes it.
    type Job: Send + 'static;
    /// One output, due at a virtual time.
    type Emission: Copy + Send + 'static;
    /// What the driver keeps per job to route and finish its emissions.
    type Route: Send + 'static;
    /// Queue and occupancy figures, published every 100 ms.
    type Snapshot: Clone + Send + 'static;

    /// Gives the job its routing id and returns what its emissions are routed by.
    fn route(job: &mut Self::Job, id: u64) -> Self::Route;
    /// The job an emission belongs to and when it is due.
    fn due(e: &Self::Emission) -> (u64, VTime);
    /// Whether the emission is its job's last.
    fn finishes(e: &Self::Emission, route: &Self::Route) -> bool;
    /// The virtual time of the last processed event or arrival.
    fn now(&self) -> VTime;
    /// When the next stage step completes, if any stage is busy.
    fn next_event(&self) -> Option<VTime>;
    /// Queues a job at virtual time `at` (clamped to the model's clock).
    fn submit(&mut self, at: VTime, job: Self::Job, out: &mut Vec<Self::Emission>);
    /// Forgets a job (client gone).
    fn cancel(&mut self, id: u64);
    /// Processes every event due at or before `until`, appending the emissions.
    fn advance(&mut self, until: VTime, out: &mut Vec<Self::Emission>);
    /// The current figures.
    fn snapshot(&self) -> Self::Snapshot;
}

impl Model for Engine {
    type Job = Job;
    type Emission = Emission;
    type Route = ();
    type Snapshot = EngineSnapshot;

    fn route(job: &mut Job, id: u64) {
        job.id = id;
    }
    fn due(e: &Emission) -> (u64, VTime) {
        (e.id, e.at)
    }
    fn finishes(e: &Emission, (): &()) -> bool {
        e.last
    }
    fn now(&self) -> VTime {
        Engine::now(self)
    }
    fn next_event(&self) -> Option<VTime> {
        Engine::next_event(self)
    }
    fn submit(&mut self, at: VTime, job: Job, out: &mut Vec<Emission>) {
        Engine::submit(self, at, job, out);
    }
    fn cancel(&mut self, id: u64) {
        Engine::cancel(self, id);
    }
    fn advance(&mut self, until: VTime, out: &mut Vec<Emission>) {
        Engine::advance(self, until, out);
    }
    fn snapshot(&self) -> EngineSnapshot {
        Engine::snapshot(self)
    }
}
