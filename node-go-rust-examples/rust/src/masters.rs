//! Chapter 11's view of chapter 5's Redis Cluster: its masters read from CLUSTER NODES, each with the
//! lab's own connection, so an example can count what every master ran and group keys by master.

use redis::RedisResult;

use crate::{brief, stop, Counters, Login};

/// A master: its port, its slot ranges and the lab's own connection to it.
pub struct Master {
    pub port: u16,
    pub slots: Vec<(u16, u16)>,
    pub conn: redis::Connection,
}

/// Reads CLUSTER NODES on the seed: the masters (failed ones left out), sorted by port, each with
/// a connection of the lab's and checked to hold only lab keys.
pub fn discover(example: &str, host: &str, port: u16, login: &Login) -> Vec<Master> {
    let mut seed = crate::control(host, port, login);
    let nodes: RedisResult<String> = redis::cmd("CLUSTER").arg("NODES").query(&mut seed);
    let why = format!("{example}: pass a node of chapter 5's cluster; {host}:{port}");
    let text =
        nodes.unwrap_or_else(|e| stop(2, format!("{why} fails CLUSTER NODES: {}.", brief(&e))));
    let mut masters = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
            continue;
        }
        let addr = f[1].split('@').next().unwrap_or_default();
        let Some((h, Ok(port))) = addr.rsplit_once(':').map(|(h, p)| (h, p.parse())) else {
            continue;
        };
        let ranges = f[8..].iter().filter(|s| !s.starts_with('['));
        let slots = ranges.filter_map(|s| {
            let (lo, hi) = s.split_once('-').unwrap_or((s, s));
            Some((lo.parse().ok()?, hi.parse().ok()?))
        });
        let (slots, mut conn) = (slots.collect(), crate::control(h, port, login));
        crate::require_lab_only(&mut conn, &format!("{h}:{port}"));
        masters.push(Master { port, slots, conn });
    }
    if masters.is_empty() {
        stop(2, format!("{why} names no master."));
    }
    masters.sort_by_key(|m| m.port);
    masters
}

/// Every master's counters now.
pub fn snapshot(ms: &mut [Master]) -> Vec<Counters> {
    ms.iter_mut()
        .map(|m| crate::snapshot(&mut m.conn))
        .collect()
}

/// What each master counted since `before`.
pub fn since(ms: &mut [Master], before: &[Counters]) -> Vec<Counters> {
    let after = snapshot(ms);
    after.iter().zip(before).map(|(a, b)| a.since(b)).collect()
}

/// The keys grouped by the master that owns their slot, one group per master that owns any.
pub fn shares(ms: &[Master], keys: &[String]) -> Vec<Vec<String>> {
    let mut groups = vec![Vec::new(); ms.len()];
    for k in keys {
        let slot = fred::util::redis_keyslot(k.as_bytes());
        let owns = |m: &Master| m.slots.iter().any(|&(lo, hi)| (lo..=hi).contains(&slot));
        match ms.iter().position(owns) {
            Some(m) => groups[m].push(k.clone()),
            None => stop(1, format!("Slot {slot} has no master here.")),
        }
    }
    groups.retain(|g| !g.is_empty());
    groups
}
