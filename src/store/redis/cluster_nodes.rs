//! Reading `CLUSTER NODES`: one line per node, `<id> <ip:port@bus> <flags> <master> <ping>
//! <pong> <epoch> <link> <slot ranges>...`. Both the store's shape (`/healthz`, the start log) and
//! the replica waits' grouping of slots by master (`replica_wait/`) read it; in one place, so
//! they agree on what a failing node or a serving master is.

use std::ops::RangeInclusive;

/// One line of `CLUSTER NODES`.
#[derive(Debug, PartialEq)]
pub(super) struct Node {
    /// `ip:port`, without the bus port.
    pub(super) address: String,
    pub(super) master: bool,
    /// Flagged `fail` or `fail?`.
    pub(super) failing: bool,
    /// The slots it serves (migrating ones, in brackets, left out).
    pub(super) slots: Vec<RangeInclusive<u16>>,
}

impl Node {
    /// A master not failing that serves `slot`.
    pub(super) fn serves(&self, slot: u16) -> bool {
        self.master && !self.failing && self.slots.iter().any(|range| range.contains(&slot))
    }
}

/// Every node of a `CLUSTER NODES` reply (lines too short to be a node left out).
pub(super) fn parse(nodes: &str) -> Vec<Node> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags: Vec<&str> = fields.get(2)?.split(',').collect();
            let slots = fields
                .iter()
                .skip(8)
                .filter_map(|range| {
                    let (low, high) = range.split_once('-').unwrap_or((range, range));
                    Some(low.parse().ok()?..=high.parse().ok()?)
                })
                .collect();
            Some(Node {
                address: fields[1].split('@').next().unwrap_or_default().to_owned(),
                master: flags.contains(&"master"),
                failing: flags.iter().any(|f| *f == "fail" || *f == "fail?"),
                slots,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_flags_and_slots_are_read_from_their_lines() {
        let nodes = "\
            a1 127.0.0.1:7001@17001 master,fail - 0 0 1 connected 0-5460\n\
            b2 127.0.0.1:7002@17002 myself,master - 0 0 2 connected 5461-10922 16000 [93->-a1]\n\
            c3 127.0.0.1:7003@17003 slave b2 0 0 2 connected\n\
            \n";
        let parsed = parse(nodes);
        assert_eq!(parsed.len(), 3);
        assert!(parsed[0].failing && !parsed[0].serves(3));
        assert_eq!(parsed[1].address, "127.0.0.1:7002");
        assert_eq!(parsed[1].slots, vec![5461..=10922, 16000..=16000]);
        assert!(parsed[1].serves(16000) && !parsed[1].serves(93));
        assert!(!parsed[2].master && parsed[2].slots.is_empty());
    }
}
