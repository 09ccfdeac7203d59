//! One node or a Redis Cluster, behind one connection type.
//!
//! On one node every command and pipeline goes to that node. On a cluster each command goes to
//! the master of its first key's slot; the store's scripts keep all their keys in one slot (see
//! `keys.rs`). Pipelines that span buckets (a page of every bucket's pending questions, the
//! summary counts) are split by slot here, sent to their nodes at once, and put back in order,
//! so the callers read the same reply either way.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

/// A connection to one node or to a cluster.
#[derive(Clone)]
pub(super) enum Connection {
    /// One node (reconnecting).
    Single(ConnectionManager),
    /// A cluster (routing by slot, following MOVED/ASK, refreshing its map after a failover).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

/// The slot of a command's first key (its first argument after the name).
fn slot_of(cmd: &Cmd) -> u16 {
    let key = match cmd.args_iter().nth(1) {
        Some(redis::Arg::Simple(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::new(),
    };
    super::keys::slot(&key)
}

impl Connection {
    /// Whether this is a cluster.
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    /// Sends `pipeline`: as it is on one node; on a cluster, split by slot and reassembled.
    pub(super) async fn pipeline(&mut self, pipeline: &Pipeline) -> RedisResult<Value> {
        let Connection::Cluster(cluster) = self else {
            return pipeline.query_async(self).await;
        };
        let commands: Vec<&Cmd> = pipeline.cmd_iter().collect();
        let first = commands.first().map(|cmd| slot_of(cmd));
        if commands.iter().all(|cmd| Some(slot_of(cmd)) == first) {
            // One slot (MULTI/EXEC included): as it is.
            return pipeline.query_async(cluster).await;
        }
        let mut groups: Vec<(u16, Vec<usize>)> = Vec::new();
        for (index, cmd) in commands.iter().enumerate() {
            let slot = slot_of(cmd);
            match groups.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, members)) => members.push(index),
                None => groups.push((slot, vec![index])),
            }
        }
        let sends = groups.iter().map(|(_, members)| {
            let mut part = redis::pipe();
            for index in members {
                part.add_command(commands[*index].clone());
            }
            let mut connection = cluster.clone();
            async move { part.query_async::<Vec<Value>>(&mut connection).await }
        });
        let replies = futures_util::future::join_all(sends).await;
        let mut values = vec![Value::Nil; commands.len()];
        for ((_, members), reply) in groups.iter().zip(replies) {
            for (index, value) in members.iter().zip(reply?) {
                values[*index] = value;
            }
        }
        Ok(Value::Array(values))
    }
}
