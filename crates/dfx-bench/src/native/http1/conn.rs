//! One TCP connection with its read and write buffers (allocated once, reused by every
//! request on it), and the response being read from it.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Error;
use super::body::Decoder;
use super::head::{self, Head};
use super::request::RequestHead;

/// Size of a connection's read buffer; a response head must fit in it.
pub(crate) const READ_BUF: usize = 32 * 1024;

/// An open connection.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    /// Bytes `pos..end` of `buf` were read and not yet used.
    pos: usize,
    end: usize,
    wbuf: Vec<u8>,
    /// When it was last returned idle to a pool.
    pub(crate) idle_since: Instant,
}

impl Conn {
    /// Connects to the first of `addrs` that accepts (`TCP_NODELAY` set).
    pub(crate) async fn open(addrs: &[SocketAddr]) -> Result<Conn, Error> {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    stream.set_nodelay(true).map_err(|source| Error::Connect {
                        addr: addr.to_string(),
                        source,
                    })?;
                    return Ok(Conn::new(stream));
                }
                Err(source) => last = Some((addr, source)),
            }
        }
        let (addr, source) = last.map_or_else(
            || ("(no address)".to_string(), io::ErrorKind::NotFound.into()),
            |(a, e)| (a.to_string(), e),
        );
        Err(Error::Connect { addr, source })
    }

    fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            pos: 0,
            end: 0,
            wbuf: Vec::with_capacity(512),
            idle_since: Instant::now(),
        }
    }

    /// Whether an idle connection can carry a request: nothing unread, and the server
    /// has not closed it (checked without a system call unless the socket is readable).
    pub(crate) fn still_open(&mut self) -> bool {
        if self.pos != self.end {
            return false;
        }
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Writes one request (head, then `body`) in as few system calls as the socket takes.
    pub(crate) async fn send(
        &mut self,
        head: &RequestHead,
        request_id: Option<&str>,
        body: &[u8],
    ) -> Result<(), Error> {
        head.write(&mut self.wbuf, request_id, body.len())?;
        let (h, total) = (self.wbuf.len(), self.wbuf.len() + body.len());
        let mut done = 0;
        while done < total {
            let n = if done < h {
                let parts = [IoSlice::new(&self.wbuf[done..]), IoSlice::new(body)];
                self.stream.write_vectored(&parts).await
            } else {
                self.stream.write(&body[done - h..]).await
            }
            .map_err(Error::Write)?;
            if n == 0 {
                return Err(Error::Write(io::ErrorKind::WriteZero.into()));
            }
            done += n;
        }
        Ok(())
    }

    /// Reads the response head (interim 1xx heads skipped) and returns the response,
    /// its body still to be read.
    pub(crate) async fn response(mut self) -> Result<Response, Error> {
        self.pos = 0;
        self.end = 0;
        let mut answered = false;
        loop {
            if let Some((h, len)) = head::parse(&self.buf[..self.end])? {
                answered = true;
                if (100..200).contains(&h.status) && h.status != 101 {
                    self.buf.copy_within(len..self.end, 0);
                    self.end -= len;
                    continue;
                }
                self.pos = len;
                return Ok(Response::new(self, h));
            }
            if self.end == self.buf.len() {
                return Err(Error::HeadTooLarge { limit: READ_BUF });
            }
            let got = self.stream.read(&mut self.buf[self.end..]).await;
            let nothing = !answered && self.end == 0;
            match got {
                Ok(0) if nothing => return Err(Error::NoResponse(None)),
                Ok(0) => return Err(Error::Eof { during: "head" }),
                Err(e) if nothing => return Err(Error::NoResponse(Some(e))),
                Err(e) => return Err(Error::Read(e)),
                Ok(n) => self.end += n,
            }
        }
    }
}

/// A response whose head was read; its body is read read by read.
#[derive(Debug)]
pub(crate) struct Response {
    conn: Conn,
    status: u16,
    body: Decoder,
    keep_alive: bool,
}

impl Response {
    fn new(conn: Conn, h: Head) -> Response {
        Response {
            conn,
            status: h.status,
            body: h.body,
            keep_alive: h.keep_alive,
        }
    }

    /// The status code.
    pub(crate) fn status(&self) -> u16 {
        self.status
    }

    /// Whether the whole body was read.
    pub(crate) fn is_done(&self) -> bool {
        self.body.is_done()
    }

    /// Whether bytes already read wait to be decoded (those after the head, or the
    /// rest of a read not yet taken by [`Response::next_data`]).
    pub(crate) fn has_pending(&self) -> bool {
        self.conn.pos < self.conn.end && !self.body.is_done()
    }

    /// One read from the socket (call when nothing is pending). A body without framing
    /// ends at end of file; any other body ending there is an error.
    pub(crate) async fn fill(&mut self) -> Result<(), Error> {
        let c = &mut self.conn;
        let n = c.stream.read(&mut c.buf).await.map_err(Error::Read)?;
        (c.pos, c.end) = (0, n);
        if n == 0 {
            if self.body != Decoder::UntilClose {
                return Err(Error::Eof { during: "body" });
            }
            self.body = Decoder::Done;
        }
        Ok(())
    }

    /// The next piece of body data among the bytes read, `None` when they hold no more.
    pub(crate) fn next_data(&mut self) -> Result<Option<&[u8]>, Error> {
        let c = &mut self.conn;
        while c.pos < c.end && !self.body.is_done() {
            let at = c.pos;
            let (used, data) = self.body.step(&c.buf[at..c.end])?;
            c.pos += used;
            if let Some(r) = data {
                return Ok(Some(&c.buf[at + r.start..at + r.end]));
            }
        }
        Ok(None)
    }

    /// The connection, if it can carry another request: the body was read to its end,
    /// nothing followed it, and neither side asked to close.
    pub(crate) fn into_reusable(self) -> Option<Conn> {
        let clean = self.body.is_done() && self.conn.pos == self.conn.end;
        (clean && self.keep_alive).then_some(self.conn)
    }
}
