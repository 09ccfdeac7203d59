//! Creates sent with an `Idempotency-Key`: a client whose create got no response (a timeout, a
//! dropped connection) sends it again with the same key, and gets what the first one made
//! instead of a second question or run.
//!
//! The key is reserved before the create, briefly ([`RESERVED_FOR`]), so that a crash between
//! the two frees it soon; once the create has made something, the key records its id for a day.
//! The record lives in the store, so a retry that reaches another process finds it too.

use super::roles::IdempotentRoles;
use crate::Error;
use askbridge_core::error::Chain;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a key records what its create made.
pub const KEY_KEPT: Duration = Duration::from_secs(24 * 3600);
/// How long a key is held while its create runs; a crash in between frees it after this.
const RESERVED_FOR: Duration = Duration::from_secs(60);

/// What a key held when a create came with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// Nothing: the key is now held for this create, which goes ahead.
    Fresh,
    /// The same request made this (a question's or a run's id): answer with it.
    Again(String),
    /// The same request is being made right now, by another call.
    InFlight,
}

/// A key's record in the store.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// A digest of the request the key came with.
    request: String,
    /// What it made, once made.
    made: Option<String>,
}

/// The part of the bridge that keeps `Idempotency-Key`s: see the module documentation.
pub(super) struct Idempotent {
    store: IdempotentRoles,
}

impl Idempotent {
    pub(super) fn new(store: IdempotentRoles) -> Self {
        Idempotent { store }
    }

    /// Reserves `key` (already scoped to its route) for a request whose digest is `request`.
    /// The same key with another request is refused, naming the header.
    pub(super) async fn reserve_key(&self, key: &str, request: &str) -> Result<Reserved, Error> {
        let record = Record {
            request: request.to_owned(),
            made: None,
        };
        let keys = &self.store.keys;
        let Some(held) = keys
            .remember_key(key, &encode(&record), RESERVED_FOR)
            .await?
        else {
            return Ok(Reserved::Fresh);
        };
        let held: Record = serde_json::from_str(&held)
            .map_err(|e| crate::store::Error::corrupt(format!("idempotency key {key}"), e))?;
        if held.request != request {
            return Err(askbridge_core::Error::Invalid {
                field: "Idempotency-Key",
                reason: "this key was sent before with a different request; a new request needs a new key".into(),
            }
            .into());
        }
        Ok(match held.made {
            Some(id) => Reserved::Again(id),
            None => Reserved::InFlight,
        })
    }

    /// After the create a [`Reserved::Fresh`] key went ahead with: records what it made (for
    /// [`KEY_KEPT`]), or frees the key when it made nothing, so that a retry tries again.
    pub(super) async fn settle_key(&self, key: &str, request: &str, made: Option<&str>) {
        let keys = &self.store.keys;
        let settled = match made {
            Some(id) => {
                let record = Record {
                    request: request.to_owned(),
                    made: Some(id.to_owned()),
                };
                keys.replace_key(key, &encode(&record), KEY_KEPT).await
            }
            None => keys.forget_key(key).await,
        };
        if let Err(error) = settled {
            tracing::warn!(error = %Chain(&error), "cannot record what an idempotent create made");
        }
    }
}

fn encode(record: &Record) -> String {
    serde_json::to_string(record).expect("a key's record serializes")
}
