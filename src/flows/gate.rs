//! The gate a run's function executes behind: a step's result is not written the moment the
//! step returns, but with the run's next write — the park on its next question, its end, the
//! next step (which writes the earlier one before its own work runs) — or, at the latest, as
//! soon as the function waits on anything (I/O, a timer, a store call): the gate sees it return
//! `Pending` with a result unwritten, writes it, and polls the function again only once it is
//! written.
//!
//! Why: the example flow's last answer cost three writes one after another (claim, the step's
//! record, the end); now the step and the end are one. What a step promises is unchanged: its
//! work runs once unless the process dies between the work and the write of its result; in that
//! window only the function's own synchronous code runs, never a wait and never another step.

use super::{BoxFuture, FlowContext, FlowResult, Interrupt};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

/// See the module documentation.
pub(super) struct Gate {
    function: BoxFuture<FlowResult>,
    ctx: FlowContext,
    writing: Option<BoxFuture<Result<(), Interrupt>>>,
}

impl Gate {
    pub(super) fn new(function: BoxFuture<FlowResult>, ctx: FlowContext) -> Self {
        Gate {
            function,
            ctx,
            writing: None,
        }
    }
}

impl Future for Gate {
    type Output = FlowResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<FlowResult> {
        let this = &mut *self;
        loop {
            if let Some(writing) = &mut this.writing {
                ready!(writing.as_mut().poll(cx))?;
                this.writing = None;
            }
            match this.function.as_mut().poll(cx) {
                Poll::Ready(result) => return Poll::Ready(result),
                Poll::Pending if this.ctx.unsaved() => {
                    let ctx = this.ctx.clone();
                    this.writing = Some(Box::pin(async move { ctx.write_unsaved().await }));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
