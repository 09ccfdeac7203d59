//! The event streams: scripts append to their bucket's stream (asks, resolutions, runs that
//! park or end), and every process reads all of them into its own broadcast channel, so a waiter
//! in one process hears of an answer given in another.
//!
//! On one node all buckets are read with one blocking XREAD. On a cluster, streams of different
//! slots cannot share a command, and a blocking read holds up its connection: each bucket has a
//! reader and a connection of its own (sixteen blocking reads in all, each on the node that owns
//! its bucket).

use super::EventSource;
use super::RedisStore;
use super::keys::BUCKETS;
use crate::store::{Error, Event, Result};
use redis::aio::{ConnectionLike, ConnectionManagerConfig};
use redis::streams::{StreamRangeReply, StreamReadOptions, StreamReadReply};
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::broadcast;

/// Each bucket's stream keeps about this many entries.
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
                tokio::spawn(read_events(
                    reader,
                    keys,
                    starts,
                    self.events.clone(),
                    alive,
                ));
            }
            EventSource::Cluster(client) => {
                for (key, start) in keys.into_iter().zip(starts) {
                    let reader = client.get_async_connection().await.map_err(unreachable)?;
                    let (events, alive) = (self.events.clone(), alive.clone());
                    tokio::spawn(read_events(reader, vec![key], vec![start], events, alive));
                }
            }
        }
        Ok(())
    }
}

/// Copies the shared event streams into this process's broadcast channel until the store is gone.
async fn read_events<C: ConnectionLike + Send + Sync>(
    mut connection: C,
    keys: Vec<String>,
    mut last_ids: Vec<String>,
    events: broadcast::Sender<Event>,
    alive: Weak<()>,
) {
    let options = StreamReadOptions::default()
        .block(EVENTS_BLOCK.as_millis() as usize)
        .count(256);
    let mut failures = 0u32;
    while alive.strong_count() > 0 {
        let reply: redis::RedisResult<Option<StreamReadReply>> =
            redis::AsyncCommands::xread_options(&mut connection, &keys, &last_ids, &options).await;
        match reply {
            Ok(reply) => {
                failures = 0;
                for stream in reply.into_iter().flat_map(|r| r.keys) {
                    let Some(at) = keys.iter().position(|k| *k == stream.key) else {
                        continue;
                    };
                    for entry in stream.ids {
                        last_ids[at] = entry.id.clone();
                        let Some(data) = entry.get::<String>("data") else {
                            continue;
                        };
                        match serde_json::from_str::<Event>(&data) {
                            Ok(event) => {
                                let _ = events.send(event);
                            }
                            Err(error) => {
                                tracing::warn!(%error, id = %entry.id, "skipping an unreadable event")
                            }
                        }
                    }
                }
            }
            Err(error) => {
                failures += 1;
                if failures == 1 || failures % 30 == 0 {
                    tracing::warn!(%error, "cannot read events from Redis; retrying");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}
