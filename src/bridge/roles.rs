//! The store roles each part of the bridge holds.
//!
//! A store is one object implementing every role (see [`crate::store::roles`]), but no part of
//! the bridge needs all of them. Each part gets handles to only the roles it uses, taken from the
//! one store by trait upcasting, so its struct says what it may touch: the registry reads and
//! writes questions and nothing else; the runs part reads runs; only effects and the sweeper see
//! the outbox's due work. Each part keeps its handles in a private field, so the compiler keeps
//! every other file off them; [`super::Bridge::store`] is the facade's, for the layers above.

use crate::store::{
    Admin, AuditLog, Dedupe, Deliveries, Drafts, Events, Idempotency, Outbox, Questions, Rules,
    Runs, Sessions, Store, Votes,
};
use std::sync::Arc;

/// Every part's handles.
pub(super) struct Roles {
    pub(super) registry: RegistryRoles,
    pub(super) resolver: ResolverRoles,
    pub(super) effects: EffectsRoles,
    pub(super) approvals: ApprovalRoles,
    pub(super) inbox: InboxRoles,
    pub(super) runs: RunRoles,
    pub(super) leased: LeasedRoles,
    pub(super) idempotent: IdempotentRoles,
}

/// `registry.rs` (`Registry`): creating, reading and listing questions (an insert in a closed
/// session is refused by the store).
pub(super) struct RegistryRoles {
    pub(super) questions: Arc<dyn Questions>,
}

/// `leased.rs` (`ExecSessions`): the leases of sessions `askbridge exec` holds, and closing them.
pub(super) struct LeasedRoles {
    pub(super) sessions: Arc<dyn Sessions>,
}

/// `idempotent.rs` (`Idempotent`): what creates sent with an `Idempotency-Key` made.
pub(super) struct IdempotentRoles {
    pub(super) keys: Arc<dyn Idempotency>,
}

/// `resolve/` (`Resolver`), the one reply path: claims and votes, refusals audited, and where
/// a quorum's question was shown (to redraw its progress).
pub(super) struct ResolverRoles {
    pub(super) questions: Arc<dyn Questions>,
    pub(super) votes: Arc<dyn Votes>,
    pub(super) drafts: Arc<dyn Drafts>,
    pub(super) audit: Arc<dyn AuditLog>,
    pub(super) deliveries: Arc<dyn Deliveries>,
}

/// `effects/` (`Effects`, with the sweeper and reminders): showing questions, what follows a
/// resolution, due work (expiry, reminders, interrupted effects), purging, and the events that
/// wake waiters.
pub(super) struct EffectsRoles {
    pub(super) questions: Arc<dyn Questions>,
    pub(super) deliveries: Arc<dyn Deliveries>,
    pub(super) outbox: Arc<dyn Outbox>,
    pub(super) dedupe: Arc<dyn Dedupe>,
    pub(super) runs: Arc<dyn Runs>,
    pub(super) audit: Arc<dyn AuditLog>,
    pub(super) events: Arc<dyn Events>,
    pub(super) admin: Arc<dyn Admin>,
}

/// `approvals.rs` (`Approvals`): "always allow" rules, the audit trail, and the rule effect of
/// an answer.
pub(super) struct ApprovalRoles {
    pub(super) questions: Arc<dyn Questions>,
    pub(super) votes: Arc<dyn Votes>,
    pub(super) rules: Arc<dyn Rules>,
    pub(super) audit: Arc<dyn AuditLog>,
    pub(super) outbox: Arc<dyn Outbox>,
}

/// `inbox/` (`Messages`, with its commands and forms): what a chat message reads, form drafts,
/// and dropped re-deliveries.
pub(super) struct InboxRoles {
    pub(super) questions: Arc<dyn Questions>,
    pub(super) deliveries: Arc<dyn Deliveries>,
    pub(super) drafts: Arc<dyn Drafts>,
    pub(super) dedupe: Arc<dyn Dedupe>,
}

/// `runs.rs` (`Runs`): runs as the HTTP API and chats read them.
pub(super) struct RunRoles {
    pub(super) runs: Arc<dyn Runs>,
}

impl Roles {
    /// Each part's handles on `store`, with `questions` for the questions role (the store's own,
    /// or a decorator of it: see [`super::BridgeBuilder::questions`]).
    pub(super) fn of(store: &Arc<dyn Store>, questions: &Arc<dyn Questions>) -> Self {
        Roles {
            registry: RegistryRoles {
                questions: questions.clone(),
            },
            resolver: ResolverRoles {
                questions: questions.clone(),
                votes: store.clone(),
                drafts: store.clone(),
                audit: store.clone(),
                deliveries: store.clone(),
            },
            effects: EffectsRoles {
                questions: questions.clone(),
                deliveries: store.clone(),
                outbox: store.clone(),
                dedupe: store.clone(),
                runs: store.clone(),
                audit: store.clone(),
                events: store.clone(),
                admin: store.clone(),
            },
            approvals: ApprovalRoles {
                questions: questions.clone(),
                votes: store.clone(),
                rules: store.clone(),
                audit: store.clone(),
                outbox: store.clone(),
            },
            inbox: InboxRoles {
                questions: questions.clone(),
                deliveries: store.clone(),
                drafts: store.clone(),
                dedupe: store.clone(),
            },
            runs: RunRoles {
                runs: store.clone(),
            },
            leased: LeasedRoles {
                sessions: store.clone(),
            },
            idempotent: IdempotentRoles {
                keys: store.clone(),
            },
        }
    }
}
