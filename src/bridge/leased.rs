//! Sessions that `askbridge exec` holds: a lease it renews while its command runs, and a close
//! when it ends.
//!
//! exec cancels its command's pending questions when the command ends, but that left two holes:
//! a background process of the command could ask after the end (and wait for ever), and an exec
//! killed outright (SIGKILL, the machine gone) cancelled nothing. So a closed session refuses
//! new asks, and a session whose lease lapses is closed by the sweeper of any process sharing the
//! store. Both live in the store, not in a process: the process that refuses an ask or sweeps is
//! often not the one exec talked to.

use super::Bridge;
use super::roles::LeasedRoles;
use crate::Error;
use askbridge_core::error::Chain;
use askbridge_core::request::check_session_id;
use askbridge_core::{Actor, Millis};
use std::time::Duration;

/// How long a closed session is remembered (and so refuses asks): as long as a resolved
/// question is kept by default.
const CLOSED_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);
/// How many lapsed sessions one sweep closes.
const LAPSED_BATCH: usize = 64;

/// The part of the bridge for sessions `askbridge exec` holds: see the module documentation.
pub(super) struct ExecSessions {
    store: LeasedRoles,
}

impl ExecSessions {
    pub(super) fn new(store: LeasedRoles) -> Self {
        ExecSessions { store }
    }

    /// Leases `session` for the configured lease (`ASKBRIDGE_SESSION_LEASE_S`), starting or
    /// extending it. Returns when the lease lapses unless renewed. With `open`, a closed session
    /// is opened again (a new exec naming a session an earlier one closed); without, a renewal of
    /// a closed session is refused, so that a renewal that crosses the close cannot undo it.
    pub(super) async fn hold_session(
        &self,
        bridge: &Bridge,
        session: &str,
        open: bool,
    ) -> Result<Millis, Error> {
        check_session_id(session)?;
        let sessions = &self.store.sessions;
        if open {
            sessions.reopen_session(session).await?;
        } else if sessions.session_closed(session).await? {
            return Err(closed(session).into());
        }
        let until = Millis::now().after(bridge.options().session_lease);
        sessions.hold_session(session, until).await?;
        Ok(until)
    }

    /// Closes `session`: asks in it are refused from now on, and its pending questions are
    /// cancelled. Returns how many were.
    pub(super) async fn close_session(
        &self,
        bridge: &Bridge,
        session: &str,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<usize, Error> {
        check_session_id(session)?;
        // Closed first: an ask racing the close is then refused rather than left pending.
        self.store
            .sessions
            .close_session(session, CLOSED_KEPT)
            .await?;
        bridge.cancel_session(session, actor, reason).await
    }

    /// Closes the sessions whose lease lapsed: their exec died without closing them.
    pub(super) async fn close_lapsed(&self, bridge: &Bridge) {
        let lapsed = match self
            .store
            .sessions
            .lapsed_sessions(Millis::now(), LAPSED_BATCH)
            .await
        {
            Ok(lapsed) => lapsed,
            Err(error) => {
                tracing::warn!(error = %Chain(&error), "cannot read lapsed session leases");
                return;
            }
        };
        for session in lapsed {
            let reason = "the command that asked it stopped (its askbridge exec no longer renews the session)";
            let actor = Actor::askbridge("session lease");
            match self
                .close_session(bridge, &session, actor, Some(reason.into()))
                .await
            {
                Ok(cancelled) => {
                    tracing::info!(session_id = %session, cancelled, "session lease lapsed; closed")
                }
                Err(error) => {
                    tracing::warn!(session_id = %session, error = %Chain(&error), "cannot close a lapsed session")
                }
            }
        }
    }
}

/// The refusal of an ask (or a lease) in a closed session.
pub(super) fn closed(session: &str) -> askbridge_core::Error {
    askbridge_core::Error::Invalid {
        field: "session_id",
        reason: format!(
            "session `{session}` is closed: the `askbridge exec` that ran it has ended; ask in another session"
        ),
    }
}
