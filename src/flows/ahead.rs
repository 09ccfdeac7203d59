//! Carrying a run ahead: executing its function with an answer *before* the answer is claimed,
//! up to its next question, so that the claim stores the answer, the run parked on its next
//! question and that question in one store step (one Redis script) instead of two.
//!
//! Why this is safe: code outside steps re-runs on every resume anyway, so running it once more
//! changes nothing a flow may rely on. The attempt writes nothing; it is polled once, and dropped
//! at the first thing it would wait for — a step (whose work must follow the claim), an approval
//! (stored at once, since a rule may decide it), the end of the run, I/O or a timer. Then the
//! claim takes the run as it always did and the run executes after it. If the claim loses, or
//! the run changed since this process last heard of it (the claim compares its `updated_at`),
//! the attempt is discarded the same way.

use super::context::Suspension;
use super::{Flow, FlowContext, Interrupt};
use crate::bridge::{Ahead, Bridge};
use askbridge_core::run::Run;
use askbridge_core::{Millis, Question};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// `run`, waiting on `answered` (as the claim would resolve it), carried to its next question;
/// `None` when it cannot get there without waiting or writing.
pub(super) fn carry(
    bridge: &Bridge,
    flow: Arc<dyn Flow>,
    mut run: Run,
    answered: &Question,
) -> Option<Ahead> {
    if !flow.may_run_ahead() {
        return None;
    }
    let was = run.updated_at;
    run.absorb(answered);
    let ctx = FlowContext::ahead(bridge, run);
    // One poll: everything up to the next question is replay and pure code. A panic is left to
    // the execution after the claim, which fails the run with it.
    let polled =
        std::panic::catch_unwind(AssertUnwindSafe(|| flow.run(ctx.clone()).now_or_never()));
    let Ok(Some(Err(Interrupt::Suspended { .. }))) = polled else {
        return None;
    };
    if ctx.broken() {
        return None;
    }
    let (mut carried, suspension) = ctx.finish();
    let Some(Suspension {
        question: next,
        stored: false,
    }) = suspension
    else {
        return None;
    };
    // A later `updated_at` than the run's, even within its millisecond: the claim tells the
    // two apart by it.
    let at = Millis::now().max(was.after(std::time::Duration::from_millis(1)));
    carried.park_on(next.id.clone(), at);
    Some(Ahead {
        was,
        run: carried,
        next,
    })
}
