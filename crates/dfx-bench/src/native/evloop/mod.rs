//! The speech client's event loop: one thread, `mio` (epoll, edge-triggered) without an
//! async runtime, a `timerfd` for the open loop's send deadlines, nonblocking sockets and
//! the purpose-built HTTP/1.1 pieces of [`super::http1`] (request head, response head,
//! body decoder). It runs a step's phases on the calling thread; a pooled step's idle
//! connections live in the [`Engine`] from the warmups to the measured phase.
//!
//! Why not tokio: every wake-up on a virtual machine starts on cold caches, so what a
//! request costs is mostly how much code and data each of its wake-ups touches. The same
//! client on a one-worker tokio runtime ran 2.5× the user-space instructions per request
//! of a bare epoll loop, and cost about 1.5× this loop's CPU per request at 50 req/s
//! (BENCHMARKS.md, "The native bench beside vllm bench").
//!
//! What a request does: its clock starts right before it is handed to a connection (an
//! idle pooled one, or a new one whose set-up is then inside its TTFP, as in upstream's
//! client), the head and body go out in one vectored write, every read that carried body
//! bytes is one timeline entry stamped when the read returned. A request sent on a reused
//! connection that the server closed before answering is sent once more on a new one. The
//! read timeout (stall) and the total timeout end a request as the tokio client did, with
//! the same failure classes and messages.

mod stalls;
mod stream;
mod timers;

#[cfg(test)]
mod stall_tests;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dfx_core::plan::ConnectionMode;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use self::stream::{Buffers, Connecting, Request, State, Stream, Wait};
use self::timers::{Due, Timeouts};
use super::client::{Exchange, FailureClass, Target, error_chain};
use super::deadline::Clock;
use super::driver::plan::{Admit, Arrival, Plan};
use super::driver::{Job, Load};
use super::http1::Error;
use super::record::{Dispatch, Sample};
use super::stall::{ServerStalled, StepWatch};
use crate::native::BenchError;

/// Idle connections older than this are closed, not reused (reqwest's default).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The most closed connections' buffers kept for new ones (32 KiB each).
const MAX_SPARE: usize = 1024;
/// The open loop's deadline timer; streams use their slot index.
const TIMER: Token = Token(usize::MAX);
/// The longest the loop sleeps without an event or a due timeout (every request in flight
/// has a timeout, so this only bounds a wait that nothing else would end).
const MAX_SLEEP: Duration = Duration::from_secs(10);

/// Where the loop hands each finished request.
pub(crate) trait Outlet {
    /// One request ended, or was refused by the saturation gate (`base`: the phase's
    /// start). Returns when [`Outlet::flush`] is due, if a records write now waits.
    fn ended(
        &mut self,
        d: Dispatch,
        sample: Sample,
        x: Exchange,
        base: Instant,
        others_in_flight: bool,
    ) -> Option<Instant>;
    /// The records write that [`Outlet::ended`] asked for is due.
    fn flush(&mut self);
}

/// What a phase left: its start, the largest number of requests in flight at once and,
/// when the server stalled, why the phase ended early.
#[derive(Debug, Clone)]
pub(crate) struct PhaseRun {
    pub base: Instant,
    pub peak_in_flight: usize,
    pub stalled: Option<ServerStalled>,
}

/// The event loop of one step, for one [`Target`] (a soak's batches share one).
pub(crate) struct Engine {
    target: Arc<Target>,
    sample_rate: u32,
    poll: Poll,
    /// Taken out while a batch is handled (the handlers borrow the engine).
    events: Option<Events>,
    clock: Clock,
    timeouts: Timeouts,
    streams: Vec<Option<Stream>>,
    /// Free slots; closed ones join after the event batch that closed them, so no event
    /// of that batch reaches a new connection in an old one's slot.
    free: Vec<usize>,
    closed: Vec<usize>,
    /// Idle pooled connections, most recently used last.
    idle: Vec<usize>,
    /// Buffers of closed connections, for the next ones.
    spare: Vec<Buffers>,
    /// The server's addresses, resolved once (or why they could not be).
    addrs: Option<Result<Vec<SocketAddr>, String>>,
    in_flight: usize,
    peak: usize,
    generation: u64,
    flush_at: Option<Instant>,
    /// Requests that ended and are not yet handed to the outlet, in the order they ended.
    ended: VecDeque<Request>,
    /// The phase's stall rule at the step level.
    watch: StepWatch,
    /// Why the phase ended early, once it did.
    stalled: Option<ServerStalled>,
}

impl Engine {
    /// An event loop for `target`'s requests (`sample_rate`: the PCM analysis's).
    pub(crate) fn new(target: Arc<Target>, sample_rate: u32) -> Result<Engine, BenchError> {
        let setup = |what| move |source| BenchError::Setup { what, source };
        let poll = Poll::new().map_err(setup("cannot create the event loop"))?;
        let clock = Clock::new().map_err(setup("cannot create the send timer"))?;
        poll.registry()
            .register(&mut SourceFd(&clock.as_raw_fd()), TIMER, Interest::READABLE)
            .map_err(setup("cannot register the send timer"))?;
        Ok(Engine {
            sample_rate,
            poll,
            events: Some(Events::with_capacity(1024)),
            clock,
            timeouts: Timeouts::default(),
            streams: Vec::new(),
            free: Vec::new(),
            closed: Vec::new(),
            idle: Vec::new(),
            spare: Vec::new(),
            addrs: None,
            in_flight: 0,
            peak: 0,
            generation: 0,
            flush_at: None,
            ended: VecDeque::new(),
            watch: StepWatch::new(target.limits.stall),
            stalled: None,
            target,
        })
    }

    /// Runs all `jobs` under `load` and hands every request to `out` as it ends.
    pub(crate) fn run(
        &mut self,
        jobs: Vec<Job>,
        load: Load,
        warmup: bool,
        out: &mut dyn Outlet,
    ) -> PhaseRun {
        let mut plan = Plan::new(jobs, load);
        let base = plan.base;
        self.peak = 0;
        self.watch = StepWatch::new(self.target.limits.stall);
        self.stalled = None;
        while let Some(a) = plan.ramp() {
            self.launch(a, warmup);
            self.settle(&mut plan, warmup, base, out);
            // Reads of the requests already sent before the next worker starts.
            self.turn(Some(Duration::ZERO));
            self.settle(&mut plan, warmup, base, out);
        }
        loop {
            while let Some(admit) = plan.due(Instant::now(), self.in_flight) {
                match admit {
                    Admit::Send(a) => self.launch(a, warmup),
                    Admit::Refuse(a, cap) => self.refuse(a, cap, warmup, base, out),
                    Admit::Queued => {}
                }
                self.settle(&mut plan, warmup, base, out);
            }
            if plan.exhausted() && self.in_flight == 0 && self.ended.is_empty() {
                break;
            }
            if let Some(t) = plan.next_deadline()
                && let Err(e) = self.clock.arm(t)
            {
                tracing::warn!("send timer: {e}; waiting on epoll's millisecond timeout");
            }
            let wait = self.sleep_for(plan.next_deadline());
            self.turn(Some(wait));
            self.settle(&mut plan, warmup, base, out);
        }
        if self.flush_at.take().is_some() {
            out.flush();
        }
        self.timeouts.clear();
        PhaseRun {
            base,
            peak_in_flight: self.peak,
            stalled: self.stalled.take(),
        }
    }

    /// How long the loop may sleep: until the next timeout, records write or (when the
    /// timer could not be armed) deadline, at most `MAX_SLEEP`.
    fn sleep_for(&self, deadline: Option<Instant>) -> Duration {
        let now = Instant::now();
        let mut wait = MAX_SLEEP;
        if let Some(w) = self.timeouts.wait(now) {
            wait = wait.min(w);
        }
        if let Some(f) = self.flush_at {
            wait = wait.min(f.saturating_duration_since(now));
        }
        if self.clock.armed().is_none()
            && let Some(d) = deadline
        {
            wait = wait.min(d.saturating_duration_since(now));
        }
        wait
    }

    /// Hands the ended requests to `out` and sends what the plan has next for each.
    fn settle(&mut self, plan: &mut Plan<Job>, warmup: bool, base: Instant, out: &mut dyn Outlet) {
        self.give_up(plan);
        while let Some(req) = self.ended.pop_front() {
            let others = self.in_flight > 0;
            let Request {
                job, dispatch, x, ..
            } = req;
            let flush = out.ended(dispatch, job.sample, x, base, others);
            self.flush_by(flush);
            self.give_up(plan);
            if let Some(a) = plan.after_end(self.in_flight) {
                self.launch(a, warmup);
            }
        }
        if self.flush_at.is_some_and(|f| f <= Instant::now()) {
            self.flush_at = None;
            out.flush();
        }
    }

    /// Records an arrival the saturation gate did not send.
    fn refuse(
        &mut self,
        a: Arrival<Job>,
        cap: usize,
        warmup: bool,
        base: Instant,
        out: &mut dyn Outlet,
    ) {
        let now = Instant::now();
        let d = Dispatch {
            index: a.index,
            warmup,
            planned: a.planned,
            dispatched: a.dispatched,
            slot: now,
            saturated: Some(cap),
        };
        let x = Exchange::saturated(cap);
        let flush = out.ended(d, a.job.sample, x, base, self.in_flight > 0);
        self.flush_by(flush);
    }

    /// Keeps the earliest records write the outlet asked for.
    fn flush_by(&mut self, at: Option<Instant>) {
        if let Some(at) = at {
            self.flush_at = Some(self.flush_at.map_or(at, |f| f.min(at)));
        }
    }

    /// Sends one request: its slot is taken now, its clock starts now.
    fn launch(&mut self, a: Arrival<Job>, warmup: bool) {
        if dfx_core::stop::requested() {
            // The run is being interrupted: nothing more is sent.
            return;
        }
        // The slot is taken and the clock starts at the same instant.
        let send_at = Instant::now();
        self.in_flight += 1;
        self.peak = self.peak.max(self.in_flight);
        self.generation += 1;
        let limits = &self.target.limits;
        let req = Request {
            dispatch: Dispatch {
                index: a.index,
                warmup,
                planned: a.planned,
                dispatched: a.dispatched,
                slot: send_at,
                saturated: None,
            },
            job: a.job,
            x: Exchange::start(send_at, self.target.capture),
            deadline: send_at
                .checked_add(limits.request_timeout)
                .unwrap_or(send_at),
            reused: false,
            generation: self.generation,
            sample_rate: self.sample_rate,
            connecting: None,
            progress: Default::default(),
            state: State::Writing { done: 0 },
        };
        self.send(req);
    }

    /// Puts `req` on an idle pooled connection, or on a new one.
    fn send(&mut self, mut req: Request) {
        if self.target.connection == ConnectionMode::Pooled
            && let Some(k) = self.take_idle()
        {
            req.reused = true;
            self.put(k, req);
            return;
        }
        self.open(req, 0, Instant::now());
    }

    /// Opens a connection for `req` to the first address from `from` that takes the
    /// connect (its set-up clock started at `since`).
    fn open(&mut self, mut req: Request, from: usize, since: Instant) {
        let addrs = match self.addrs() {
            Ok(a) => a,
            Err(msg) => return self.fail(req, FailureClass::Transport, msg),
        };
        let mut last = None;
        for (i, addr) in addrs.iter().enumerate().skip(from) {
            match TcpStream::connect(*addr).and_then(|s| s.set_nodelay(true).map(|()| s)) {
                Ok(mut sock) => {
                    let k = self.free.pop().unwrap_or(self.streams.len());
                    let registered =
                        self.poll
                            .registry()
                            .register(&mut sock, Token(k), Interest::READABLE);
                    if let Err(source) = registered {
                        last = Some((*addr, source));
                        continue;
                    }
                    if k == self.streams.len() {
                        self.streams.push(None);
                    }
                    self.streams[k] = Some(Stream::new(sock, self.spare.pop()));
                    req.connecting = Some(Connecting {
                        since,
                        addr: *addr,
                        next: i + 1,
                    });
                    return self.put(k, req);
                }
                Err(source) => last = Some((*addr, source)),
            }
        }
        let e = match last {
            Some((a, source)) => Error::Connect {
                addr: a.to_string(),
                source,
            },
            None => Error::Connect {
                addr: "(no address)".into(),
                source: std::io::ErrorKind::NotFound.into(),
            },
        };
        self.fail(req, FailureClass::Transport, error_chain(&e));
    }

    /// The server's addresses: the literal, or the host name resolved once per step. The
    /// error is the failed requests' error text (a string is the domain: every request of
    /// the step records it).
    fn addrs(&mut self) -> Result<Vec<SocketAddr>, String> {
        let ep = &self.target.endpoint;
        let got = self
            .addrs
            .get_or_insert_with(|| ep.addrs().map_err(|e| error_chain(&e)));
        got.clone()
    }

    /// Attaches `req` to stream `k`, arms its timeout and writes what the socket takes.
    fn put(&mut self, k: usize, req: Request) {
        let due = Due {
            at: self.target.limits.wait_until(req.x.send_at, req.deadline),
            token: k,
            generation: req.generation,
        };
        let Some(s) = self.streams[k].as_mut() else {
            return;
        };
        if let Err(e) = s.attach(&self.target.head, req) {
            return self.step(k, Err(e));
        }
        self.timeouts.push(due);
        let step = s.write(&self.target.limits);
        self.step(k, step);
    }

    /// Acts on what a stream's request waits for after a step.
    fn step(&mut self, k: usize, step: Result<Wait, Error>) {
        let Some(s) = self.streams[k].as_mut() else {
            return;
        };
        match step {
            Ok(Wait::Read) => {}
            Ok(Wait::Write) => {
                if !s.wants_write {
                    s.wants_write = true;
                    let both = Interest::READABLE | Interest::WRITABLE;
                    if let Err(e) = self.poll.registry().reregister(&mut s.sock, Token(k), both) {
                        self.step(k, Err(Error::Write(e)));
                    }
                }
            }
            Ok(Wait::Ended { reusable }) => self.finish(k, reusable),
            Err(e) => self.broken(k, e),
        }
    }

    /// A request's connection failed: sent again where that is safe, else failed.
    fn broken(&mut self, k: usize, e: Error) {
        let Some(mut req) = self.streams[k].as_mut().and_then(|s| s.req.take()) else {
            return self.close(k);
        };
        self.close(k);
        if req.reused && e.unanswered() {
            // The server closed the idle connection as the request went out: once more on
            // a new connection, the clock still running from the first send.
            req.reused = false;
            req.state = State::Writing { done: 0 };
            return self.open(req, 0, Instant::now());
        }
        if let (Error::Connect { .. }, Some(c)) = (&e, req.connecting) {
            let more = self.addrs().map(|a| c.next < a.len()).unwrap_or(false);
            if more {
                req.state = State::Writing { done: 0 };
                return self.open(req, c.next, c.since);
            }
        }
        self.fail(req, FailureClass::Transport, error_chain(&e));
    }

    /// Ends `req` as failed.
    fn fail(&mut self, mut req: Request, class: FailureClass, msg: String) {
        req.x.fail(class, msg);
        self.end(req);
    }

    /// Stream `k`'s request ended: its connection goes idle when it can be reused.
    fn finish(&mut self, k: usize, reusable: bool) {
        let Some(s) = self.streams[k].as_mut() else {
            return;
        };
        let Some(req) = s.req.take() else {
            return;
        };
        if reusable && self.target.connection == ConnectionMode::Pooled && req.x.ok() {
            s.idle_since = Instant::now();
            s.going_idle();
            self.idle.push(k);
        } else {
            self.close(k);
        }
        self.end(req);
    }

    fn end(&mut self, req: Request) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.watch_end(&req.x);
        self.ended.push_back(req);
    }

    /// The most recently used idle connection still open; closes the stale ones.
    fn take_idle(&mut self) -> Option<usize> {
        while let Some(k) = self.idle.pop() {
            let Some(s) = self.streams[k].as_mut() else {
                continue;
            };
            if s.idle_since.elapsed() < IDLE_TIMEOUT && s.still_open() {
                return Some(k);
            }
            self.close(k);
        }
        None
    }

    /// Closes stream `k` (closing the socket also ends its epoll registration).
    fn close(&mut self, k: usize) {
        if let Some(s) = self.streams.get_mut(k).and_then(Option::take) {
            if self.spare.len() < MAX_SPARE {
                self.spare.push(s.into_buffers());
            }
            self.closed.push(k);
            self.idle.retain(|&j| j != k);
        }
    }

    /// Waits up to `wait` for events and handles them, then the timeouts that came due.
    fn turn(&mut self, wait: Option<Duration>) {
        let Some(mut events) = self.events.take() else {
            return;
        };
        if let Err(e) = self.poll.poll(&mut events, wait)
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            tracing::warn!("epoll_wait: {e}");
        }
        for e in events.iter() {
            if e.token() == TIMER {
                // A stale event finds no expiry: the timer then stays armed.
                let _ = self.clock.read_expiry();
                continue;
            }
            let closed = e.is_read_closed() || e.is_error();
            let read = e.is_readable() || closed;
            self.on_event(e.token().0, read, closed, e.is_writable());
        }
        self.events = Some(events);
        self.expire(Instant::now());
        self.free.append(&mut self.closed);
    }

    fn on_event(&mut self, k: usize, read: bool, closed: bool, write: bool) {
        let limits = self.target.limits;
        if write && let Some(s) = self.streams.get_mut(k).and_then(Option::as_mut) {
            let step = match s.connect_error() {
                Some(e) => Err(e),
                None => s.write(&limits),
            };
            self.step(k, step);
        }
        if read && let Some(s) = self.streams.get_mut(k).and_then(Option::as_mut) {
            let step = s.read(&limits, closed);
            self.progressed(k);
            self.step(k, step);
        }
    }

    /// Ends the requests whose wait ran out; moves on the timeouts that came up early.
    fn expire(&mut self, now: Instant) {
        let limits = self.target.limits;
        while let Some(due) = self.timeouts.pop_due(now) {
            let k = due.token;
            let Some(s) = self.streams.get_mut(k).and_then(Option::as_mut) else {
                continue;
            };
            let Some(req) = s.req.as_mut().filter(|r| r.generation == due.generation) else {
                continue;
            };
            let (since, what, progress_due) = match &req.state {
                State::Body { last, .. } => {
                    (*last, "next body byte", req.progress.due(&limits.stall))
                }
                State::Excerpt { until, .. } => {
                    if now < *until {
                        self.timeouts.push(Due { at: *until, ..due });
                    } else {
                        let step = Ok(s.excerpt_done());
                        self.step(k, step);
                    }
                    continue;
                }
                _ => (req.x.send_at, "response head", None),
            };
            let read_at = limits.wait_until(since, req.deadline);
            // The minimum-progress rule, when it comes before the read and total timeouts.
            let stall_at = progress_due.filter(|d| *d < read_at);
            let at = stall_at.unwrap_or(read_at);
            if now < at {
                self.timeouts.push(Due { at, ..due });
                continue;
            }
            let (class, msg) = match stall_at {
                Some(_) => (
                    FailureClass::Stall,
                    req.progress.message(&limits.stall, req.x.bytes),
                ),
                None => {
                    let class = limits.expired_class(since, req.deadline);
                    (class, limits.timeout_message(class, what))
                }
            };
            req.x.fail(class, msg);
            self.step(k, Ok(Wait::Ended { reusable: false }));
        }
    }
}
