//! The floor of the peer benchmark for open loops: one thread, `mio` (epoll) without a
//! runtime, a `timerfd` for the send deadlines, nonblocking sockets; per arrival one `read`
//! with a timestamp kept in memory (a read shorter than the buffer drained the socket, as
//! in the native client, so there is no second read per arrival), the records written at
//! the end; no PCM analysis, no statistics, no stall or request timers (one bound on the
//! whole loop). Same schedule as the native client (its default seed), warmups sent at
//! once before it as the native client does. Where the closed-loop floor blocks in `read`,
//! this one sleeps in `epoll_wait`: the least a client serving many streams on one thread
//! does per chunk.
//!
//! `--run-floor DIR BASE_URL r=RATE N WARMUPS pooled|fresh` (the closed-loop floor takes
//! `c=1`) writes what the closed-loop floor writes, with `lag_s` per request.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use super::floor_client::{Done, Scan, request, request_id, texts, write_out};

/// The timer's token; connections use their slot index.
const TIMER: Token = Token(usize::MAX);
/// The longest the loop waits for any event before it gives up on what is in flight.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// A request in flight on a connection.
struct Active {
    index: usize,
    sent: Instant,
    scan: Scan,
}

/// What one read on a connection left.
enum Step {
    /// The buffer filled: read again.
    More,
    /// Drained: wait for the next arrival.
    Wait,
    /// The response ended with this read.
    Ended,
    /// Closed or failed.
    Broken { was_active: bool },
}

struct Conn {
    stream: TcpStream,
    active: Option<Active>,
}

/// The loop's state: connection slots (the token is the index), idle pooled connections.
struct Floor {
    poll: Poll,
    timer: TimerFd,
    /// `Instant` and `CLOCK_MONOTONIC` read together, to arm the timer at an `Instant`.
    origin: (Instant, TimeSpec),
    addr: String,
    fresh: bool,
    slots: Vec<Option<Conn>>,
    idle: Vec<usize>,
    in_flight: usize,
    buf: Vec<u8>,
    /// Per-read timeline (seconds since send, bytes), kept as the native client keeps it.
    reads: Vec<(f64, usize)>,
}

/// The child side for an open loop at `rate`.
pub(crate) fn run_floor_open(args: &[String], rate: f64, dataset: &Path, vm_hwm_kib: fn() -> u64) {
    let [dir, base, n, warmups, conn] = args else {
        panic!("--run-floor DIR BASE_URL r=RATE N WARMUPS pooled|fresh");
    };
    let n: usize = n.parse().unwrap();
    let warmups: usize = warmups.parse().unwrap();
    let texts = texts(dataset);
    let addr = base.trim_start_matches("http://");
    let reqs: Vec<(String, String)> = (0..warmups + n)
        .map(|i| {
            let id = request_id(i);
            let req = request(addr, &id, &texts[i % texts.len()]);
            (id, req)
        })
        .collect();
    let mut floor = Floor::new(addr, conn == "fresh", n + warmups);
    let mut done: Vec<Done> = reqs
        .iter()
        .enumerate()
        .map(|(i, (id, _))| Done {
            id: id.clone(),
            ttfp_s: None,
            warmup: i < warmups,
            lag_s: None,
        })
        .collect();
    let now = Instant::now();
    let warm: Vec<Instant> = vec![now; warmups];
    floor.phase(&reqs[..warmups], &warm, 0, &mut done);
    let offsets = dfx_bench::native::schedule::arrival_offsets(n, rate, 1.0, 0).unwrap();
    let base_at = Instant::now() + Duration::from_millis(20);
    let planned: Vec<Instant> = offsets
        .iter()
        .map(|o| base_at + Duration::from_secs_f64(*o))
        .collect();
    floor.phase(&reqs[warmups..], &planned, warmups, &mut done);
    write_out(Path::new(dir), &done, vm_hwm_kib());
}

impl Floor {
    fn new(addr: &str, fresh: bool, n: usize) -> Floor {
        let poll = Poll::new().unwrap();
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .unwrap();
        let fd = timer.as_fd().as_raw_fd();
        poll.registry()
            .register(&mut SourceFd(&fd), TIMER, Interest::READABLE)
            .unwrap();
        let origin = (
            Instant::now(),
            nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap(),
        );
        Floor {
            poll,
            timer,
            origin,
            addr: addr.to_string(),
            fresh,
            slots: Vec::new(),
            idle: Vec::new(),
            in_flight: 0,
            buf: vec![0u8; 32 * 1024],
            reads: Vec::with_capacity(n * 8),
        }
    }

    /// Sends `reqs[k]` at `planned[k]` (request index `first + k`) and reads every
    /// response to its end; outcomes into `done`.
    fn phase(
        &mut self,
        reqs: &[(String, String)],
        planned: &[Instant],
        first: usize,
        done: &mut [Done],
    ) {
        let mut events = Events::with_capacity(1024);
        let mut next = 0;
        loop {
            let now = Instant::now();
            while next < reqs.len() && planned[next] <= now {
                let i = first + next;
                done[i].lag_s = Some(Instant::now().duration_since(planned[next]).as_secs_f64());
                self.start(i, reqs[next].1.as_bytes());
                next += 1;
            }
            if next == reqs.len() && self.in_flight == 0 {
                return;
            }
            if next < reqs.len() {
                self.arm(planned[next]);
            }
            self.poll.poll(&mut events, Some(IDLE_LIMIT)).unwrap();
            if events.is_empty() {
                // Nothing for the idle limit: what is in flight never ended, so its
                // `ttfp_s` is still `None` and it counts as failed.
                return;
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    let _ = nix::unistd::read(self.timer.as_fd(), &mut [0u8; 8]);
                } else {
                    self.readable(ev.token().0, done);
                }
            }
        }
    }

    fn arm(&self, t: Instant) {
        let at =
            self.origin.1 + TimeSpec::from_duration(t.saturating_duration_since(self.origin.0));
        self.timer
            .set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .unwrap();
    }

    /// Sends request `i` on an idle pooled connection or a new one (the clock starts
    /// before the connect, as in the native client).
    fn start(&mut self, i: usize, req: &[u8]) {
        let sent = Instant::now();
        let reuse = if self.fresh { None } else { self.idle.pop() };
        let slot = match reuse {
            Some(k) => {
                let c = self.slots[k].as_mut().unwrap();
                if c.stream.write(req).ok() != Some(req.len()) {
                    self.close(k);
                    return;
                }
                k
            }
            None => {
                let Some(stream) = connect(&self.addr, req) else {
                    return;
                };
                let k = self
                    .slots
                    .iter()
                    .position(Option::is_none)
                    .unwrap_or_else(|| {
                        self.slots.push(None);
                        self.slots.len() - 1
                    });
                let mut stream = TcpStream::from_std(stream);
                self.poll
                    .registry()
                    .register(&mut stream, Token(k), Interest::READABLE)
                    .unwrap();
                self.slots[k] = Some(Conn {
                    stream,
                    active: None,
                });
                k
            }
        };
        let c = self.slots[slot].as_mut().unwrap();
        c.active = Some(Active {
            index: i,
            sent,
            scan: Scan::default(),
        });
        self.in_flight += 1;
    }

    /// Reads what arrived on connection `k`: one read unless it filled the buffer.
    fn readable(&mut self, k: usize, done: &mut [Done]) {
        loop {
            match self.read_once(k, done) {
                Step::More => continue,
                Step::Wait => return,
                Step::Ended => {
                    self.in_flight -= 1;
                    if self.fresh {
                        self.close(k);
                    } else {
                        self.idle.push(k);
                    }
                    return;
                }
                Step::Broken { was_active } => {
                    self.in_flight -= usize::from(was_active);
                    self.close(k);
                    return;
                }
            }
        }
    }

    /// One `read` on connection `k`, timestamped.
    fn read_once(&mut self, k: usize, done: &mut [Done]) -> Step {
        let Some(c) = self.slots.get_mut(k).and_then(Option::as_mut) else {
            return Step::Wait;
        };
        let got = c.stream.read(&mut self.buf);
        let t = Instant::now();
        let len = match got {
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Wait,
            Ok(0) | Err(_) => {
                return Step::Broken {
                    was_active: c.active.take().is_some(),
                };
            }
            Ok(len) => len,
        };
        // Bytes with no request in flight: a broken exchange.
        let Some(a) = c.active.as_mut() else {
            return Step::Broken { was_active: false };
        };
        let since = t.duration_since(a.sent).as_secs_f64();
        self.reads.push((since, len));
        if a.scan.read(&self.buf[..len], since) {
            done[a.index].ttfp_s = a.scan.ttfp;
            c.active = None;
            return Step::Ended;
        }
        if len < self.buf.len() {
            Step::Wait
        } else {
            Step::More
        }
    }

    fn close(&mut self, k: usize) {
        if let Some(mut c) = self.slots[k].take() {
            let _ = self.poll.registry().deregister(&mut c.stream);
        }
        self.idle.retain(|&j| j != k);
    }
}

/// A new connection with `req` written (blocking), then made nonblocking.
fn connect(addr: &str, req: &[u8]) -> Option<std::net::TcpStream> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_nodelay(true).ok()?;
    s.write_all(req).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s)
}
