//! The event streams: scripts append to their bucket's stream (asks, resolutions, runs that
//! park or end; a script's events as one entry, a `data` field each), and every process reads
//! all of them into its own broadcast channel, so a waiter in one process hears of an answer
//! given in another.
//!
//! On one node all buckets are read with one blocking XREAD. On a cluster, streams of different
//! slots cannot share a command, and a blocking read holds up its connection: each bucket has a
//! reader and a connection of its own (sixteen blocking reads in all, each on the node that owns
//! its bucket).
//!
//! A read that brought entries is followed by a pause of [`RedisOptions::events_gather`] before
//! the next, so that under load one read carries the events of a moment rather than a few.
//! Why: a blocking XREAD of the sixteen buckets costs Redis about 28 µs however few entries it
//! returns, and a reader that went straight back read once per 2.6 approvals asked (10.5 µs of
//! Redis per ask, issue 32's benchmark). The pause starts once a read is handled, not when it was
//! sent: under load a read's round trip alone can outlast it. A waiter in another process hears
//! of an answer at most that much later; one in this process hears at once (its store delivers its own events), and
//! the first event after a quiet spell is not held back at all (the read that brings it has
//! been waiting since).
//!
//! A store tags every event it writes with an origin of its own, and hands the event to its
//! own channel as soon as the write returns; its reader skips entries with that tag without
//! decoding them. Every event still reaches every
//! process, each exactly once, and a process no longer decodes, for each of its own answers, the
//! question and the whole run it has in hand (most of what its reader spent). A script retried
//! after a lost reply may have announced before: its waiters recheck then (see `retry.rs`).

use super::EventSource;
#[cfg(doc)]
use super::RedisOptions;
use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Error, Event, Result};
use askbridge_core::error::Chain;
use redis::aio::{ConnectionLike, ConnectionManagerConfig};
use redis::streams::StreamRangeReply;
use redis::{ScriptInvocation, Value};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// Each bucket's stream keeps about this many events: an entry of n events trims it to this many
/// over n entries (`lua/lib/announce.lua`).
pub(super) const EVENTS_MAXLEN: usize = 1_000;
/// How long one XREAD waits for new events.
const EVENTS_BLOCK: Duration = Duration::from_secs(2);

impl RedisStore {
    /// Starts copying the streams, from their current ends, into this process's channel. The
    /// reader has a connection of its own: a blocking XREAD would hold up every command behind
    /// it.
    pub(super) async fn start_event_reader(
        &self,
        source: EventSource,
        gather: Duration,
        alive: Weak<()>,
    ) -> Result<()> {
        let keys: Vec<String> = (0..BUCKETS).map(|b| self.keys.events(b)).collect();
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("XREVRANGE")
                .arg(key)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1);
        }
        let ends: Vec<StreamRangeReply> = self.query_pipe("xrevrange", &pipe).await?;
        let starts: Vec<String> = ends
            .iter()
            .map(|end| {
                end.ids
                    .first()
                    .map_or_else(|| "0-0".to_owned(), |entry| entry.id.clone())
            })
            .collect();
        let unreachable = |e| Error::unavailable("connecting the event reader", e);
        match source {
            EventSource::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(5)))
                    .set_response_timeout(Some(EVENTS_BLOCK + Duration::from_secs(5)))
                    .set_max_delay(Duration::from_millis(500));
                let reader = client
                    .get_connection_manager_with_config(config)
                    .await
                    .map_err(unreachable)?;
                let sinks = self.sinks(gather);
                tokio::spawn(read_events(reader, keys, starts, sinks, alive));
            }
            EventSource::Cluster(client) => {
                for (key, start) in keys.into_iter().zip(starts) {
                    let reader = client.get_async_connection().await.map_err(unreachable)?;
                    let (sinks, alive) = (self.sinks(gather), alive.clone());
                    tokio::spawn(read_events(reader, vec![key], vec![start], sinks, alive));
                }
            }
        }
        Ok(())
    }

    /// What one reader writes to: this process's channel and its missed-events counter.
    fn sinks(&self, gather: Duration) -> Sinks {
        Sinks {
            events: self.events.clone(),
            missed: self.missed.clone(),
            origin: self.origin.clone(),
            gather,
        }
    }

    /// Ends a script's arguments with this store's tag: its events are delivered here by
    /// [`RedisStore::deliver`], and skipped by this store's reader (`lua/lib/announce.lua`).
    pub(super) fn tag(&self, invocation: &mut ScriptInvocation<'_>) {
        invocation.arg(&*self.origin);
    }

    /// Hands events this store announced with its tag to its own channel.
    pub(super) fn deliver(&self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            let _ = self.events.send(event);
        }
    }

    /// A script ran again after a connection error: an earlier attempt may have announced
    /// events that this store's reader skips and that were never delivered here, so its
    /// waiters re-read the store, as after an outage of the reader.
    pub(super) fn may_have_missed(&self) {
        bump(&self.missed);
    }
}

/// Tells the waiters of this process that events may have been missed (see [`Events::missed`]).
///
/// [`Events::missed`]: crate::store::Events::missed
fn bump(missed: &watch::Sender<u64>) {
    missed.send_modify(|n| *n += 1);
}

/// Where a reader puts what it reads, and says that it may have missed some.
struct Sinks {
    events: broadcast::Sender<Event>,
    missed: Arc<watch::Sender<u64>>,
    /// The entries this store delivered itself, to skip.
    origin: Arc<str>,
    /// How soon after a read the next may be sent (see the module documentation).
    gather: Duration,
}

/// Copies the shared event streams into this process's broadcast channel until the store is gone.
async fn read_events<C: ConnectionLike + Send + Sync>(
    mut connection: C,
    keys: Vec<String>,
    mut last_ids: Vec<String>,
    Sinks {
        events,
        missed,
        origin,
        gather,
    }: Sinks,
    alive: Weak<()>,
) {
    let count = 256;
    let block = EVENTS_BLOCK.as_millis() as usize;
    let mut failures = 0u32;
    while alive.strong_count() > 0 {
        let mut xread = redis::cmd("XREAD");
        xread.arg("COUNT").arg(count);
        // After a failure the first read does not block, so that its success (and the waiters'
        // recheck it calls for) comes at once.
        if failures == 0 {
            xread.arg("BLOCK").arg(block);
        }
        xread.arg("STREAMS").arg(&keys).arg(&last_ids);
        let reply: redis::RedisResult<Value> = xread.query_async(&mut connection).await;
        match reply {
            Ok(reply) => {
                if failures > 0 {
                    // Back after losing Redis: what was written meanwhile is in the stream from
                    // `last_ids` on, unless Redis restarted (events are not in its AOF). Waiters
                    // re-read the store rather than trust that nothing happened.
                    tracing::info!(failures, "reading events from Redis again");
                    bump(&missed);
                }
                failures = 0;
                if hand_out(reply, &keys, &mut last_ids, &events, &origin) {
                    tokio::time::sleep(gather).await;
                }
            }
            Err(error) => {
                failures += 1;
                if failures == 1 || failures.is_multiple_of(30) {
                    tracing::warn!(error = %Chain(&error), "cannot read events from Redis; retrying");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Sends the events of an XREAD reply to this process's channel, skipping those tagged `origin`,
/// and moves `last_ids` past them: true when the reply held any entry.
fn hand_out(
    reply: Value,
    keys: &[String],
    last_ids: &mut [String],
    events: &broadcast::Sender<Event>,
    origin: &str,
) -> bool {
    let mut any = false;
    for (key, entries) in stream_entries(reply, origin.as_bytes()) {
        let Some(at) = keys.iter().position(|k| k.as_bytes() == key) else {
            continue;
        };
        for (id, data) in entries {
            for data in data {
                match serde_json::from_slice::<Event>(&data) {
                    Ok(event) => {
                        let _ = events.send(event);
                    }
                    Err(error) => {
                        tracing::warn!(error = %Chain(&error), %id, "skipping an unreadable event")
                    }
                }
            }
            last_ids[at] = id;
            any = true;
        }
    }
    any
}

/// One stream's part of an XREAD reply: its key, and each entry's id and `data` fields (none
/// for an entry tagged `own`).
type StreamEntries = (Vec<u8>, Vec<(String, Vec<Vec<u8>>)>);

/// The entries of an XREAD reply, taken apart without a map per entry or a copy of its data:
/// every process reads every event, and the `data` field is all it needs. A reply the reader
/// does not recognise reads as no entries (RESP2 gives the streams as an array, RESP3 as a map).
fn stream_entries(reply: Value, own: &[u8]) -> Vec<StreamEntries> {
    let streams: Vec<(Value, Value)> = match reply {
        Value::Array(streams) => streams
            .into_iter()
            .filter_map(|stream| match stream {
                Value::Array(pair) if pair.len() == 2 => {
                    let mut pair = pair.into_iter();
                    Some((pair.next()?, pair.next()?))
                }
                _ => None,
            })
            .collect(),
        Value::Map(streams) => streams,
        _ => Vec::new(),
    };
    streams
        .into_iter()
        .filter_map(|(key, entries)| {
            let (Value::BulkString(key), Value::Array(entries)) = (key, entries) else {
                return None;
            };
            let entries = entries.into_iter().filter_map(|e| entry(e, own));
            Some((key, entries.collect()))
        })
        .collect()
}

/// An entry's id and its `data` fields, one event each, in order (none when its origin `o` is
/// `own`). A script that announces several events at once writes them as one entry
/// (`lua/lib/announce.lua`).
fn entry(entry: Value, own: &[u8]) -> Option<(String, Vec<Vec<u8>>)> {
    let Value::Array(parts) = entry else {
        return None;
    };
    let mut parts = parts.into_iter();
    let (Some(Value::BulkString(id)), Some(Value::Array(fields))) = (parts.next(), parts.next())
    else {
        return None;
    };
    let id = String::from_utf8(id).ok()?;
    let mut fields = fields.into_iter();
    let mut data = Vec::new();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        let (Value::BulkString(name), Value::BulkString(value)) = (name, value) else {
            continue;
        };
        match name.as_slice() {
            b"data" => data.push(value),
            b"o" if value == own => return Some((id, Vec::new())),
            _ => {}
        }
    }
    Some((id, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn an_xread_reply_gives_each_entry_its_id_and_events_unless_it_is_our_own() {
        let entries = Value::Array(vec![
            Value::Array(vec![
                bulk("1-0"),
                Value::Array(vec![bulk("data"), bulk("{}")]),
            ]),
            Value::Array(vec![
                bulk("1-1"),
                Value::Array(vec![bulk("other"), bulk("x")]),
            ]),
            Value::Array(vec![
                bulk("1-2"),
                Value::Array(vec![
                    bulk("data"),
                    bulk("{\"a\":1}"),
                    bulk("o"),
                    bulk("s-me"),
                ]),
            ]),
            Value::Array(vec![
                bulk("1-3"),
                Value::Array(vec![bulk("data"), bulk("[]"), bulk("o"), bulk("s-you")]),
            ]),
            // A script's events announced together: one entry, its events in order.
            Value::Array(vec![
                bulk("1-4"),
                Value::Array(vec![
                    bulk("data"),
                    bulk("1"),
                    bulk("data"),
                    bulk("2"),
                    bulk("data"),
                    bulk("3"),
                    bulk("o"),
                    bulk("s-you"),
                ]),
            ]),
            Value::Array(vec![
                bulk("1-5"),
                Value::Array(vec![
                    bulk("data"),
                    bulk("1"),
                    bulk("data"),
                    bulk("2"),
                    bulk("o"),
                    bulk("s-me"),
                ]),
            ]),
        ]);
        let expected = vec![(
            b"k".to_vec(),
            vec![
                ("1-0".to_owned(), vec![b"{}".to_vec()]),
                ("1-1".to_owned(), vec![]),
                // Delivered by this store itself: skipped, but its id still moves the reader on.
                ("1-2".to_owned(), vec![]),
                ("1-3".to_owned(), vec![b"[]".to_vec()]),
                (
                    "1-4".to_owned(),
                    vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()],
                ),
                ("1-5".to_owned(), vec![]),
            ],
        )];
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("k"), entries.clone()])]);
        assert_eq!(stream_entries(resp2, b"s-me"), expected);
        let resp3 = Value::Map(vec![(bulk("k"), entries)]);
        assert_eq!(stream_entries(resp3, b"s-me"), expected);
        assert!(stream_entries(Value::Nil, b"s-me").is_empty());
    }
}
