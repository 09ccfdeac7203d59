//! The socket as hyper sees it, with two duties hyper has no setting for:
//!
//! - **a write timeout**: a write that waits for the client to take bytes for longer than
//!   [`super::ServeOptions::write_timeout`] fails, and the connection closes. A client that
//!   pipelines requests and reads nothing, or an event stream nobody reads, stops where the
//!   socket's buffers fill (its backlog is those buffers and hyper's), as Redis's client output
//!   buffer limit does, and no other client waits on it;
//! - **an event stream's backlog bound**: once a response is an event stream
//!   ([`crate::http::EventBacklog::follow`]) its socket's send buffer is sized to
//!   [`super::ServeOptions::event_backlog`] (the kernel grows a socket's buffer to 4 MB and more
//!   when left alone, so a client that never reads would otherwise never fill it), and a write
//!   that finds it full closes the connection at once: the client has left the bound untaken,
//!   as Redis cuts a subscriber past its client output buffer limit. The stream marks itself
//!   once its replay (at most half the bound) is handed over, so the replay is written under the
//!   write timeout; it holds nothing more (live events wait in the shared channel), so a client
//!   that does not read costs the server a constant, and the others are not slowed;
//! - **JSON for hyper's own errors**: a request that does not parse (414, 431, a bad
//!   `Content-Length`, HTTP/0.9) is answered by hyper with an empty body before askbridge sees it.
//!   A response written while no request of askbridge's is in flight, and after everything before
//!   it was flushed, can only be one of those: it is replaced by the same status with a JSON body.

use super::conn::Conn;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// A served connection's socket.
#[derive(Debug)]
pub(super) struct Io {
    inner: TcpStream,
    conn: Arc<Conn>,
    write_timeout: Duration,
    event_backlog: usize,
    /// The send buffer has been sized for an event stream.
    sized: bool,
    /// Running while a write waits for the client.
    stall: Option<Pin<Box<Sleep>>>,
    /// The number of requests whose every byte had been flushed with none in flight, if no
    /// byte has been written since.
    settled: Option<u64>,
    /// A JSON answer written in place of hyper's own, and how far.
    replacing: Option<(Vec<u8>, usize)>,
}

impl Io {
    pub(super) fn new(inner: TcpStream, conn: Arc<Conn>, options: &super::ServeOptions) -> Self {
        Io {
            inner,
            conn,
            write_timeout: options.write_timeout,
            event_backlog: options.event_backlog,
            sized: false,
            stall: None,
            settled: Some(0),
            replacing: None,
        }
    }

    /// The error a write that waits too long fails with, once `cx` has been registered.
    fn poll_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let (conn, limit) = (&self.conn, self.write_timeout);
        let stall = self.stall.get_or_insert_with(|| {
            conn.set_blocked(true);
            Box::pin(tokio::time::sleep(limit))
        });
        ready!(stall.as_mut().poll(cx));
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the client took no bytes for {} s (ASKBRIDGE_WRITE_TIMEOUT_S)",
                limit.as_secs_f64()
            ),
        ))
    }

    /// Sizes the send buffer once the response is an event stream. Linux doubles the size asked
    /// for (its own bookkeeping), so half the bound is asked.
    fn size_for_events(&mut self) {
        if self.sized || !self.conn.event_stream() {
            return;
        }
        self.sized = true;
        let size = (self.event_backlog / 2).max(4096);
        if let Err(error) = socket2::SockRef::from(&self.inner).set_send_buffer_size(size) {
            tracing::debug!(%error, "cannot size an event stream's send buffer");
        }
    }

    /// The error that cuts an event stream whose socket is full.
    fn backlog_passed(&self) -> io::Error {
        tracing::info!(
            peer = ?self.inner.peer_addr().ok(),
            limit_kb = self.event_backlog / 1024,
            "an event stream's client left its backlog untaken; cut (ASKBRIDGE_EVENT_BACKLOG_KB)"
        );
        io::Error::other(format!(
            "the client left over {} KB of events untaken (ASKBRIDGE_EVENT_BACKLOG_KB)",
            self.event_backlog / 1024
        ))
    }

    /// Accounts for a write's outcome: progress, or the start (or end) of a stall.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match polled {
            Poll::Ready(result) => {
                if self.stall.take().is_some() {
                    self.conn.set_blocked(false);
                }
                if matches!(result, Ok(n) if n > 0) {
                    self.conn.progressed();
                }
                Poll::Ready(result)
            }
            Poll::Pending if self.sized => Poll::Ready(Err(self.backlog_passed())),
            Poll::Pending => self.poll_stall(cx).map(Err),
        }
    }

    /// Whether the bytes hyper is about to write are its own answer to a request that did not
    /// parse (see the module documentation); starts the replacement if so.
    fn hyper_s_own(&mut self, first: &[u8]) -> bool {
        if self.replacing.is_some() {
            return true;
        }
        let settled =
            self.settled.take() == Some(self.conn.requests()) && self.conn.in_flight() == 0;
        let status = first
            .strip_prefix(b"HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| std::str::from_utf8(code).ok())
            .and_then(|code| code.parse::<u16>().ok());
        match status {
            Some(status) if settled => {
                self.replacing = Some((super::refusal::response(status), 0));
                true
            }
            _ => false,
        }
    }

    /// Writes the replacement; `claimed` is what hyper is told was written.
    fn poll_replace(&mut self, cx: &mut Context<'_>, claimed: usize) -> Poll<io::Result<usize>> {
        loop {
            let Some((bytes, at)) = &mut self.replacing else {
                return Poll::Ready(Ok(claimed));
            };
            if *at == bytes.len() {
                // Later writes (there should be none: hyper closes) pass through.
                self.replacing = None;
                return Poll::Ready(Ok(claimed));
            }
            let polled = Pin::new(&mut self.inner).poll_write(cx, &bytes[*at..]);
            match ready!(self.wrote(cx, polled)) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    if let Some((_, at)) = &mut self.replacing {
                        *at += n;
                    }
                }
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.conn.progressed();
        }
        polled
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.hyper_s_own(buf) {
            return this.poll_replace(cx, buf.len());
        }
        this.size_for_events();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        if this.hyper_s_own(first) {
            return this.poll_replace(cx, bufs.iter().map(|b| b.len()).sum());
        }
        this.size_for_events();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        if this.conn.in_flight() == 0 {
            this.settled = Some(this.conn.requests());
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
