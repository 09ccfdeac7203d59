//! The event stream: scripts append to it (asks, resolutions), and every process reads it into
//! its own broadcast channel, so a waiter in one process hears of an answer given in another.

use super::RedisStore;
use crate::store::{Error, Event, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{StreamRangeReply, StreamReadOptions, StreamReadReply};
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::broadcast;

/// The event stream keeps about this many entries.
pub(super) const EVENTS_MAXLEN: usize = 10_000;
/// How long one XREAD waits for new events.
const EVENTS_BLOCK: Duration = Duration::from_secs(2);

impl RedisStore {
    /// Starts copying the stream, from its current end, into this process's channel. The reader
    /// has a connection of its own: a blocking XREAD would hold up every command behind it.
    pub(super) async fn start_event_reader(
        &self,
        client: &redis::Client,
        alive: Weak<()>,
    ) -> Result<()> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(EVENTS_BLOCK + Duration::from_secs(5)))
            .set_max_delay(Duration::from_millis(500));
        let reader = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| Error::unavailable("connecting the event reader", e))?;
        let mut last = redis::cmd("XREVRANGE");
        last.arg(self.keys.events())
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1);
        let reply: StreamRangeReply = self.query("xrevrange", &last).await?;
        let start = reply
            .ids
            .first()
            .map_or_else(|| "0-0".to_owned(), |entry| entry.id.clone());
        tokio::spawn(read_events(
            reader,
            self.keys.events(),
            start,
            self.events.clone(),
            alive,
        ));
        Ok(())
    }
}

/// Copies the shared event stream into this process's broadcast channel until the store is gone.
async fn read_events(
    mut connection: ConnectionManager,
    key: String,
    mut last_id: String,
    events: broadcast::Sender<Event>,
    alive: Weak<()>,
) {
    let options = StreamReadOptions::default()
        .block(EVENTS_BLOCK.as_millis() as usize)
        .count(256);
    let mut failures = 0u32;
    while alive.strong_count() > 0 {
        let reply: redis::RedisResult<Option<StreamReadReply>> =
            redis::AsyncCommands::xread_options(
                &mut connection,
                &[key.as_str()],
                &[last_id.as_str()],
                &options,
            )
            .await;
        match reply {
            Ok(reply) => {
                failures = 0;
                for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                    last_id = entry.id.clone();
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
