//! One TCP connection of the event loop and the request on it: write the request, read
//! the response head, then the body read by read, each read timestamped when it returned.
//! No method blocks: each does what the socket allows now and says what it waits for.
//!
//! Reads stop at a read shorter than the buffer: it emptied the socket, and the next
//! arrival is a new edge of the (edge-triggered) epoll registration, so there is no
//! second read per arrival that would only return `EAGAIN`.

use std::io::{self, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;

use super::super::client::{BodyCheck, Exchange, FailureClass, Limits, http_message};
use super::super::driver::Job;
use super::super::http1::body::Decoder;
use super::super::http1::head;
use super::super::http1::{Error, request::RequestHead};
use super::super::record::Dispatch;
use super::super::stall::Progress;

/// Size of a connection's read buffer; a response head must fit in it.
pub(crate) const READ_BUF: usize = 32 * 1024;
/// Most bytes of an error body kept for its message.
const EXCERPT: usize = 512;

/// A connection's read and write buffers.
pub(super) type Buffers = (Box<[u8]>, Vec<u8>);

/// A request on its connection.
pub(super) struct Request {
    pub job: Job,
    pub dispatch: Dispatch,
    pub x: Exchange,
    /// The total timeout's end.
    pub deadline: Instant,
    /// Sent on a reused idle connection: sent once more on a new one if the server
    /// answered nothing (the close raced the request).
    pub reused: bool,
    /// Tells this request's timeouts from those of earlier requests on the same token.
    pub generation: u64,
    /// The output sample rate (PCM analysis).
    pub sample_rate: u32,
    /// The connection being opened for this request, until it is up.
    pub connecting: Option<Connecting>,
    /// The body's progress against the stall rule.
    pub progress: Progress,
    pub state: State,
}

/// A connection being opened.
#[derive(Debug, Clone, Copy)]
pub(super) struct Connecting {
    /// When its set-up began.
    pub since: Instant,
    /// The address tried.
    pub addr: SocketAddr,
    /// The index of the next address to try should this one fail.
    pub next: usize,
}

/// Where a request stands.
pub(super) enum State {
    /// Waiting for the connection to be writable (or the bytes to fit the socket).
    Writing { done: usize },
    /// Waiting for the response head.
    Head { answered: bool },
    /// Reading the body of a 200 response.
    Body {
        body: Decoder,
        keep_alive: bool,
        check: Box<BodyCheck>,
        /// The last read that carried body bytes (the stall clock).
        last: Instant,
    },
    /// Reading the start of an error body, for its message, until `until`.
    Excerpt {
        body: Decoder,
        until: Instant,
        text: Vec<u8>,
    },
}

/// What a request waits for after a step.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// The next readable event.
    Read,
    /// Room in the socket (or the connection to come up).
    Write,
    /// Nothing: the request ended (its [`Exchange`] is complete); `reusable` when the
    /// connection can carry another request.
    Ended { reusable: bool },
}

/// An open connection.
pub(super) struct Stream {
    pub sock: TcpStream,
    buf: Box<[u8]>,
    /// Bytes `pos..end` of `buf` were read and not yet used.
    pos: usize,
    end: usize,
    /// The last read returned less than asked: the socket was empty then.
    drained: bool,
    wbuf: Vec<u8>,
    /// A readable event arrived while nothing was reading (idle, or still writing).
    pub readable_seen: bool,
    /// The peer closed its side (an event said so): every read goes on to end of file.
    peer_closed: bool,
    /// Registered for writability too (only while a write waits for room).
    pub wants_write: bool,
    /// When it was last returned idle.
    pub idle_since: Instant,
    pub req: Option<Request>,
}

impl Stream {
    /// A connection over `sock` (connected or still connecting), with the buffers of a
    /// closed one when there are some ([`Stream::into_buffers`]).
    pub(super) fn new(sock: TcpStream, spare: Option<Buffers>) -> Stream {
        let (buf, wbuf) = spare.unwrap_or_else(|| {
            (
                vec![0; READ_BUF].into_boxed_slice(),
                Vec::with_capacity(512),
            )
        });
        Stream {
            sock,
            buf,
            pos: 0,
            end: 0,
            drained: true,
            wbuf,
            readable_seen: false,
            peer_closed: false,
            wants_write: false,
            idle_since: Instant::now(),
            req: None,
        }
    }

    /// Closes the connection and keeps its buffers for the next one: a fresh connection
    /// per request then costs no allocation and no new pages.
    pub(super) fn into_buffers(self) -> Buffers {
        (self.buf, self.wbuf)
    }

    /// Whether an idle connection can carry a request: nothing unread, and the server has
    /// not closed it (a read only when a readable event came while it was idle).
    pub(super) fn still_open(&mut self) -> bool {
        if self.pos != self.end {
            return false;
        }
        if !self.readable_seen {
            return true;
        }
        let mut probe = [0u8; 1];
        let open =
            matches!(self.sock.read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
        self.readable_seen = !open;
        open
    }

    /// Puts `req` on this connection and builds its head; the first write is the
    /// caller's ([`Stream::write`]). A head that cannot be built leaves the request on
    /// the connection, to be failed.
    pub(super) fn attach(&mut self, head: &RequestHead, req: Request) -> Result<(), Error> {
        (self.pos, self.end, self.drained) = (0, 0, true);
        let r = self.req.insert(req);
        let id = r.job.sample.request_id.as_deref();
        head.write(&mut self.wbuf, id, r.job.body.len())
    }

    /// The request ended and the connection waits idle: a probe before its next use
    /// unless its last read emptied the socket.
    pub(super) fn going_idle(&mut self) {
        self.readable_seen = !self.drained;
    }

    /// Writes what the socket takes of the request; then reads the response when a
    /// readable event already came. A connection still coming up counts as full.
    pub(super) fn write(&mut self, limits: &Limits) -> Result<Wait, Error> {
        let Some(req) = self.req.as_mut() else {
            return Ok(Wait::Read);
        };
        let State::Writing { done } = &mut req.state else {
            return Ok(Wait::Read);
        };
        let body = &req.job.body[..];
        let (h, total) = (self.wbuf.len(), self.wbuf.len() + body.len());
        let before = Instant::now();
        while *done < total {
            let n = if *done < h {
                let parts = [IoSlice::new(&self.wbuf[*done..]), IoSlice::new(body)];
                self.sock.write_vectored(&parts)
            } else {
                self.sock.write(&body[*done - h..])
            };
            match n {
                Ok(0) => return Err(Error::Write(io::ErrorKind::WriteZero.into())),
                Ok(n) => *done += n,
                Err(e) if still_connecting(&e) && req.connecting.is_some() => {
                    return Ok(Wait::Write);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Wait::Write),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.write_error(e)),
            }
            if let Some(c) = req.connecting.take() {
                // The connection was up before the write that went through began.
                req.x.connect = Some(before.saturating_duration_since(c.since));
            }
        }
        req.state = State::Head { answered: false };
        if std::mem::take(&mut self.readable_seen) {
            return self.read(limits, false);
        }
        Ok(Wait::Read)
    }

    /// A failed write: the connection's own error when it never came up.
    fn write_error(&mut self, e: io::Error) -> Error {
        let Some(c) = self.req.as_ref().and_then(|r| r.connecting) else {
            return Error::Write(e);
        };
        let source = match self.sock.take_error() {
            Ok(Some(cause)) => cause,
            _ => e,
        };
        Error::Connect {
            addr: c.addr.to_string(),
            source,
        }
    }

    /// The connection reported writable while coming up: its error if it failed.
    pub(super) fn connect_error(&mut self) -> Option<Error> {
        let c = self.req.as_ref()?.connecting?;
        match self.sock.take_error() {
            Ok(Some(source)) | Err(source) => Some(Error::Connect {
                addr: c.addr.to_string(),
                source,
            }),
            Ok(None) => None,
        }
    }

    /// Whether a read that returned less than asked (`short`) emptied the socket: not once
    /// the peer closed its side, whose end of file no later event would announce.
    fn short(&self, short: bool) -> bool {
        short && !self.peer_closed
    }

    /// Reads what arrived and moves the request on (a readable event, or right after the
    /// write when one came early). `closed`: the event said the peer closed its side.
    pub(super) fn read(&mut self, limits: &Limits, closed: bool) -> Result<Wait, Error> {
        self.peer_closed |= closed;
        let Some(req) = self.req.as_ref() else {
            self.readable_seen = true;
            return Ok(Wait::Read);
        };
        if let State::Writing { .. } = req.state {
            self.readable_seen = true;
            return Ok(Wait::Read);
        }
        // An event: something arrived since the last read emptied the socket.
        self.drained = false;
        match req.state {
            State::Head { .. } => self.read_head(limits),
            State::Body { .. } => Ok(self.body_from(Instant::now())),
            _ => Ok(self.read_excerpt()),
        }
    }

    fn read_head(&mut self, limits: &Limits) -> Result<Wait, Error> {
        loop {
            let Some(req) = self.req.as_mut() else {
                return Ok(Wait::Read);
            };
            let State::Head { answered } = &mut req.state else {
                return Ok(Wait::Read);
            };
            if let Some((h, len)) = head::parse(&self.buf[..self.end])? {
                *answered = true;
                if (100..200).contains(&h.status) && h.status != 101 {
                    self.buf.copy_within(len..self.end, 0);
                    self.end -= len;
                    continue;
                }
                self.pos = len;
                let now = Instant::now();
                req.x.status = Some(h.status);
                let ok = h.status == 200;
                req.state = if ok {
                    let check = BodyCheck::new(req.sample_rate, limits.max_body_bytes);
                    State::Body {
                        body: h.body,
                        keep_alive: h.keep_alive,
                        check: Box::new(check),
                        last: now,
                    }
                } else {
                    State::Excerpt {
                        body: h.body,
                        until: limits.excerpt_until(now, req.deadline),
                        text: Vec::new(),
                    }
                };
                return Ok(if ok {
                    self.body_from(now)
                } else {
                    self.read_excerpt()
                });
            }
            if self.end == self.buf.len() {
                return Err(Error::HeadTooLarge { limit: READ_BUF });
            }
            if self.drained {
                return Ok(Wait::Read);
            }
            let nothing = !*answered && self.end == 0;
            match self.sock.read(&mut self.buf[self.end..]) {
                Ok(0) if nothing => return Err(Error::NoResponse(None)),
                Ok(0) => return Err(Error::Eof { during: "head" }),
                Ok(n) => {
                    self.drained = self.short(self.end + n < self.buf.len());
                    self.end += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    return Ok(Wait::Read);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if nothing => return Err(Error::NoResponse(Some(e))),
                Err(e) => return Err(Error::Read(e)),
            }
        }
    }

    /// Reads the body: the bytes already read (stamped `read_at`), then the socket read by
    /// read until it is empty or the body ended.
    fn body_from(&mut self, mut read_at: Instant) -> Wait {
        loop {
            if let Some(wait) = self.decode_body(read_at) {
                return wait;
            }
            if self.drained {
                return Wait::Read;
            }
            let got = self.sock.read(&mut self.buf);
            read_at = Instant::now();
            match got {
                Ok(n) => {
                    (self.pos, self.end) = (0, n);
                    self.drained = self.short(n < self.buf.len());
                    if n == 0 {
                        return self.body_eof();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    return Wait::Read;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail_transport(&Error::Read(e)),
            }
        }
    }

    /// Decodes the unread bytes (read at `read_at`): `Some` when the request ended.
    fn decode_body(&mut self, read_at: Instant) -> Option<Wait> {
        let req = self.req.as_mut()?;
        let State::Body {
            body, check, last, ..
        } = &mut req.state
        else {
            return Some(Wait::Read);
        };
        let mut first = true;
        while self.pos < self.end && !body.is_done() {
            let at = self.pos;
            let (used, data) = match body.step(&self.buf[at..self.end]) {
                Ok(s) => s,
                Err(e) => return Some(self.fail_transport(&Error::Body(e))),
            };
            self.pos += used;
            let Some(r) = data else { continue };
            if first {
                first = false;
                *last = read_at;
                let since = (read_at - req.x.send_at).as_secs_f64();
                req.x.chunks.push((since, 0));
            }
            if let Err((class, msg)) = check.feed(&mut req.x, &self.buf[at + r.start..at + r.end]) {
                req.x.fail(class, msg);
                return Some(Wait::Ended { reusable: false });
            }
        }
        body.is_done().then(|| self.body_done())
    }

    /// End of file in the body: its end for a body without framing, else an error.
    fn body_eof(&mut self) -> Wait {
        if let Some(Request {
            state: State::Body { body, .. },
            ..
        }) = self.req.as_mut()
            && *body == Decoder::UntilClose
        {
            *body = Decoder::Done;
            return self.body_done();
        }
        self.fail_transport(&Error::Eof { during: "body" })
    }

    /// The body was read to its end: the PCM verdict, and whether the connection is reusable.
    fn body_done(&mut self) -> Wait {
        let Some(req) = self.req.as_mut() else {
            return Wait::Read;
        };
        let State::Body {
            check, keep_alive, ..
        } = std::mem::replace(&mut req.state, State::Head { answered: true })
        else {
            return Wait::Read;
        };
        match check.finish() {
            Ok(pcm) => {
                req.x.end_at = Instant::now();
                req.x.pcm = pcm;
                Wait::Ended {
                    reusable: keep_alive && self.pos == self.end,
                }
            }
            Err((class, msg)) => {
                req.x.fail(class, msg);
                Wait::Ended { reusable: false }
            }
        }
    }

    /// Reads the error body until it ended, `EXCERPT` bytes were kept, the socket
    /// failed or closed, or (the loop's timeout) its time ran out.
    fn read_excerpt(&mut self) -> Wait {
        loop {
            let Some(Request {
                state: State::Excerpt { body, text, .. },
                ..
            }) = self.req.as_mut()
            else {
                return Wait::Read;
            };
            while self.pos < self.end && !body.is_done() && text.len() < EXCERPT {
                let at = self.pos;
                let Ok((used, data)) = body.step(&self.buf[at..self.end]) else {
                    return self.excerpt_done();
                };
                self.pos += used;
                if let Some(r) = data {
                    text.extend_from_slice(&self.buf[at + r.start..at + r.end]);
                }
            }
            if body.is_done() || text.len() >= EXCERPT {
                return self.excerpt_done();
            }
            if self.drained {
                return Wait::Read;
            }
            match self.sock.read(&mut self.buf) {
                Ok(n @ 1..) => {
                    (self.pos, self.end) = (0, n);
                    self.drained = self.short(n < self.buf.len());
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    return Wait::Read;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // End of file or a failure: the message has what arrived.
                Ok(0) | Err(_) => return self.excerpt_done(),
            }
        }
    }

    /// Ends a non-200 request with its status and the excerpt read.
    pub(super) fn excerpt_done(&mut self) -> Wait {
        if let Some(req) = self.req.as_mut() {
            let status = req.x.status.unwrap_or_default();
            let text = match &mut req.state {
                State::Excerpt { text, .. } => std::mem::take(text),
                _ => Vec::new(),
            };
            req.x
                .fail(FailureClass::Http(status), http_message(status, &text));
        }
        Wait::Ended { reusable: false }
    }

    /// Ends the request as a transport failure.
    fn fail_transport(&mut self, e: &Error) -> Wait {
        if let Some(req) = self.req.as_mut() {
            req.x.fail(
                FailureClass::Transport,
                super::super::client::error_chain(e),
            );
        }
        Wait::Ended { reusable: false }
    }
}

/// A write on a socket whose connection is not up yet.
fn still_connecting(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::NotConnected
}
