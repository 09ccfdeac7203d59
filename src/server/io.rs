//! The socket as hyper sees it, with two duties hyper has no setting for:
//!
//! - **a write timeout**: a write that waits for the client to take bytes for longer than
//!   [`super::ServeOptions::write_timeout`] fails, and the connection closes. A client that
//!   pipelines requests and reads nothing, or an event stream nobody reads, stops where the
//!   socket's buffers fill (its backlog is those buffers and hyper's), as Redis's client output
//!   buffer limit does, and no other client waits on it;
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
    /// Running while a write waits for the client.
    stall: Option<Pin<Box<Sleep>>>,
    /// The number of requests whose every byte had been flushed with none in flight, if no
    /// byte has been written since.
    settled: Option<u64>,
    /// A JSON answer written in place of hyper's own, and how far.
    replacing: Option<(Vec<u8>, usize)>,
}

impl Io {
    pub(super) fn new(inner: TcpStream, conn: Arc<Conn>, write_timeout: Duration) -> Self {
        Io {
            inner,
            conn,
            write_timeout,
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
