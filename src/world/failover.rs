//! The failover controller of replicated groups, shaped as Redis Sentinel: it probes every
//! node, declares a master down after `down_after_ms` without an answer, promotes the
//! replica with the most replication data, points the old master's other replicas at it,
//! and moves the group's address so clients reconnect to the new master. Every node it
//! reconfigures also gets `CLIENT KILL TYPE normal` and `TYPE pubsub`, as
//! `sentinelSendSlaveOf` sends them "to trigger the ask-master-on-reconnection protocol":
//! its clients reconnect and ask for the master again.
//!
//! The old master is left alone at the failover, as Sentinel's leader leaves it (it
//! reconfigures the old master's replicas only). When it answers again as a master (it was
//! frozen, cut off, or restarted from its own configuration), it is converted only once it
//! has reported that role for longer than [`CONVERT_WAIT_MS`], as Sentinel learns it from
//! `INFO` ([`Instance`], every [`INFO_PERIOD_MS`]): about ten seconds during which it still
//! takes writes from the clients it has.
//!
//! One controller stands in for a Sentinel quorum: it never fails and decides alone.
//! It runs on its own node, `sentinel`, so partitions can cut it off like anything else.
//! It has no `failover_timeout`: a replica that follows another node than the master is
//! repointed as soon as it is seen (Sentinel's `+fix-slave-config` waits `failover_timeout`).
//! [`control`] is its whole decision loop, over any connections and clock: the simulator
//! runs it here on simulated links, live mode (live/failover.rs) on real sockets through
//! proxies, each group saying through [`Controlled`] how it promotes and where its nodes
//! reach the master.

use std::cmp::Reverse;
use std::net::SocketAddr;

use super::clock::SimClock;
use super::net::{Address, Nic, SimConnector};
use super::recorder::Recorder;
use super::topology::Group;
use crate::client::Conn;
use crate::history::EventKind;
use crate::platform::{Clock, Connect};
use crate::redis::Frame;
use crate::redis::cmd::{Replicaof, Role};
use crate::redis::request::build;

/// The controller's node name in traces.
pub use crate::scenario::SENTINEL;

/// Who promoted or reconfigured a node, named for a story from the node that recorded
/// the event: [`SENTINEL`] is the failover controller, `sentinel-N` a Sentinel of a quorum.
pub fn actor(node: &str) -> String {
    match node {
        SENTINEL => "the failover controller".to_string(),
        sentinel if sentinel.starts_with("sentinel-") => format!("Sentinel {sentinel}"),
        other => other.to_string(),
    }
}

/// How often every node is probed.
pub const PROBE_INTERVAL_MS: u64 = 100;

/// How long a probe waits for its answer.
pub const PROBE_TIMEOUT_MS: u64 = 200;

/// How often Sentinel sends `INFO` to an instance (`sentinel_info_period`), and so how
/// often it learns the role the instance reports.
pub(crate) const INFO_PERIOD_MS: u64 = 10_000;

/// How often instead to a replica whose master is down or being failed over, or whose own
/// link to its master is down.
pub(crate) const HURRIED_INFO_PERIOD_MS: u64 = 1_000;

/// How long a node the configuration makes a replica must have reported the master role,
/// and been up, before it is converted (`SENTINEL_PUBLISH_PERIOD * 4` in
/// `sentinelRefreshInstanceInfo`: time to hear of newer configurations first).
pub(crate) const CONVERT_WAIT_MS: u64 = 8_000;

/// What a probe learned of a node (Sentinel's instances probe the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    Master,
    /// A replica of `of`, at replication `offset`; `linked` while its link to `of` is up.
    Replica {
        of: Option<SocketAddr>,
        offset: i64,
        linked: bool,
    },
}

/// What a controller knows of one node from its `INFO` replies, kept as Sentinel keeps it
/// for an instance (`sentinelRefreshInstanceInfo`): the role it reported and since when
/// (`role_reported_time`), the master it follows and since when (`slave_conf_change_time`),
/// and when it last went down (`s_down_since_time`). A new view starts with every new
/// configuration (a failover), as Sentinel recreates its instances then
/// (`sentinelResetMasterAndChangeAddress`).
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    /// When its last `INFO` came; `None`: none since the view began (the next is sent at once).
    info_ms: Option<u64>,
    master_role: bool,
    role_since_ms: u64,
    replica_of: Option<SocketAddr>,
    conf_since_ms: u64,
    link_down: bool,
    down: bool,
    down_since_ms: Option<u64>,
}

impl Instance {
    /// A fresh view at `now_ms` of a node the configuration makes the master (`as_master`)
    /// or a replica: it is taken to report that role from now (`createSentinelRedisInstance`).
    pub fn new(as_master: bool, now_ms: u64) -> Self {
        Instance {
            info_ms: None,
            master_role: as_master,
            role_since_ms: now_ms,
            replica_of: None,
            conf_since_ms: now_ms,
            link_down: false,
            down: false,
            down_since_ms: None,
        }
    }

    /// Fresh views of a group's `count` nodes whose master is `master`.
    pub fn fresh(count: usize, master: usize, now_ms: u64) -> Vec<Self> {
        (0..count).map(|i| Instance::new(i == master, now_ms)).collect()
    }

    /// Whether the node is down (SDOWN: silent for longer than `down_after_ms`) at `now_ms`.
    pub fn set_down(&mut self, down: bool, now_ms: u64) {
        if down && !self.down {
            self.down_since_ms = Some(now_ms);
        }
        self.down = down;
    }

    /// Whether an `INFO` is due at `now_ms`: none yet, or the last is older than the period,
    /// [`HURRIED_INFO_PERIOD_MS`] when `hurried` (a replica whose master is down or being
    /// failed over) or while its link to its master is down, else [`INFO_PERIOD_MS`].
    pub fn info_due(&self, hurried: bool, now_ms: u64) -> bool {
        let period = match hurried || self.link_down {
            true => HURRIED_INFO_PERIOD_MS,
            false => INFO_PERIOD_MS,
        };
        self.info_ms.is_none_or(|at| now_ms.saturating_sub(at) > period)
    }

    /// Takes what the node answered at `now_ms` as its `INFO`.
    pub fn refresh(&mut self, seen: Seen, now_ms: u64) {
        let master_role = seen == Seen::Master;
        if master_role != self.master_role {
            self.master_role = master_role;
            self.role_since_ms = now_ms;
            if !master_role {
                self.conf_since_ms = now_ms;
            }
        }
        if let Seen::Replica { of, linked, .. } = seen {
            if of != self.replica_of {
                self.replica_of = of;
                self.conf_since_ms = now_ms;
            }
            self.link_down = !linked;
        }
        self.info_ms = Some(now_ms);
    }

    /// `sentinelRedisInstanceNoDownFor`: it has not gone down within the last `ms`.
    fn no_down_for(&self, ms: u64, now_ms: u64) -> bool {
        self.down_since_ms
            .is_none_or(|since| now_ms.saturating_sub(since) > ms)
    }

    /// Whether the node, which the configuration makes a replica, is to be converted at
    /// `now_ms`: it has reported the master role for longer than [`CONVERT_WAIT_MS`] and
    /// has not gone down meanwhile (`+convert-to-slave`).
    pub fn convert_due(&self, now_ms: u64) -> bool {
        self.master_role
            && now_ms.saturating_sub(self.role_since_ms) > CONVERT_WAIT_MS
            && self.no_down_for(CONVERT_WAIT_MS, now_ms)
    }

    /// Whether the node, a replica of another node than `master`, is to be repointed at
    /// `now_ms`: it has reported so for longer than `wait_ms` and has not gone down
    /// meanwhile (`+fix-slave-config`, after `failover_timeout`).
    pub fn misdirected(&self, master: SocketAddr, wait_ms: u64, now_ms: u64) -> bool {
        !self.master_role
            && self.replica_of != Some(master)
            && now_ms.saturating_sub(self.conf_since_ms) > wait_ms
            && self.no_down_for(wait_ms, now_ms)
    }

    /// The instance's part of `sentinelMasterLooksSane`: it reports the master role, is not
    /// down, and its last `INFO` is less than two periods old.
    pub fn looks_sane_master(&self, now_ms: u64) -> bool {
        self.master_role
            && !self.down
            && self
                .info_ms
                .is_some_and(|at| now_ms.saturating_sub(at) < 2 * INFO_PERIOD_MS)
    }
}

/// What Sentinel sends a node to make it follow `master` (or, with `None`, become the
/// master), as `sentinelSendSlaveOf` does, without its `MULTI`/`CONFIG REWRITE`/`EXEC`
/// wrapping: `REPLICAOF`, then `CLIENT KILL TYPE normal` and `TYPE pubsub`, which close its
/// clients' connections so that they reconnect and ask for the master.
pub(crate) fn reconfigure(master: Option<SocketAddr>) -> Vec<Frame> {
    let replicaof = match master {
        Some(addr) => Replicaof::Master(addr),
        None => Replicaof::NoOne,
    };
    let kill = |kind: &str| build(["CLIENT", "KILL", "TYPE", kind].map(|w| w.as_bytes().to_vec()));
    vec![replicaof.into_frame(), kill("normal"), kill("pubsub")]
}

/// Sends [`reconfigure`]`(master)` on `conn`; whether the node took the `REPLICAOF`.
pub(crate) async fn send_reconfigure<C: Connect, K: Clock>(
    conn: &mut Conn<C, K>,
    master: Option<SocketAddr>,
) -> bool {
    let mut commands = reconfigure(master).into_iter();
    let replicaof = commands.next().expect("REPLICAOF comes first");
    let took = matches!(conn.request(&replicaof).await, Ok(reply) if !matches!(reply, Frame::Error(_)));
    if took {
        for command in commands {
            let _ = conn.request(&command).await;
        }
    }
    took
}

/// A replicated group as its controller acts on it. What differs between the simulator
/// and live mode is only how a promotion takes effect and where a node reaches the master.
pub(crate) trait Controlled {
    /// Index of the current master.
    fn master(&self) -> usize;
    /// Node `index`'s name.
    fn name(&self, index: usize) -> &str;
    /// Makes node `index`, which took `REPLICAOF NO ONE`, the master: clients go there now.
    fn promote(&self, index: usize);
    /// Node `index` took `REPLICAOF` of node `master` (`None`: `NO ONE`), which Sentinel
    /// follows with `CONFIG REWRITE`: it comes back in that role after a restart.
    fn configured(&self, index: usize, master: Option<usize>);
    /// Records `event` as the controller's.
    fn record(&self, event: EventKind);
    /// Where node `node` reaches node `master` to replicate from it; `None` if it cannot.
    fn master_addr_from(&self, node: usize, master: usize) -> Option<SocketAddr>;
}

/// The controller's loop over `group`, one connection per node in `conns` (in the group's
/// order), until the run ends: probe every node every [`PROBE_INTERVAL_MS`]; when the
/// master has not answered for `down_after_ms`, promote the most up-to-date replica that
/// answers; point every replica that follows another node at the current master; convert
/// a node that answers as a master in its place once [`Instance::convert_due`].
pub(crate) async fn control<C: Connect, K: Clock, G: Controlled>(
    group: &G,
    mut conns: Vec<Conn<C, K>>,
    clock: &K,
    down_after_ms: u64,
) {
    let start_ms = clock.monotonic_ms();
    let mut master_seen_ms = start_ms;
    let mut last_ok_ms = vec![start_ms; conns.len()];
    let mut instances = Instance::fresh(conns.len(), group.master(), start_ms);
    loop {
        clock.sleep_ms(PROBE_INTERVAL_MS).await;
        let mut seen = Vec::with_capacity(conns.len());
        for conn in &mut conns {
            seen.push(probe(conn).await);
        }
        let now_ms = clock.monotonic_ms();
        for (i, instance) in instances.iter_mut().enumerate() {
            if seen[i].is_some() {
                last_ok_ms[i] = now_ms;
            }
            instance.set_down(now_ms - last_ok_ms[i] > down_after_ms, now_ms);
        }
        let master = group.master();
        if seen[master].is_some() {
            master_seen_ms = now_ms;
        } else if now_ms - master_seen_ms >= down_after_ms
            && let Some(best) = most_up_to_date_replica(&seen, master)
            && send_reconfigure(&mut conns[best], None).await
        {
            group.configured(best, None);
            group.promote(best);
            seen[best] = Some(Seen::Master);
            master_seen_ms = now_ms;
            group.record(EventKind::Failover {
                promoted: group.name(best).to_string(),
                replaced: group.name(master).to_string(),
            });
            // A new configuration: every node is seen afresh, the old master as a replica.
            instances = Instance::fresh(conns.len(), best, now_ms);
        }
        // What each node that answers reports, when its INFO is due.
        let master = group.master();
        let hurried = instances[master].down;
        let mut refreshed = vec![false; conns.len()];
        for (i, instance) in instances.iter_mut().enumerate() {
            if let Some(node) = seen[i]
                && instance.info_due(hurried && i != master, now_ms)
            {
                instance.refresh(node, now_ms);
                refreshed[i] = true;
            }
        }
        let sane = instances[master].looks_sane_master(now_ms);
        for i in (0..conns.len()).filter(|&i| i != master) {
            let Some(via) = group.master_addr_from(i, master) else {
                continue;
            };
            let demote = match seen[i] {
                // The old master (or another node answering as one): only once Sentinel
                // would convert it, at an INFO.
                Some(Seen::Master) if refreshed[i] && sane && instances[i].convert_due(now_ms) => true,
                Some(Seen::Replica { of, .. }) if of != Some(via) => false,
                _ => continue,
            };
            if send_reconfigure(&mut conns[i], Some(via)).await {
                group.configured(i, Some(master));
                group.record(EventKind::Reconfigured {
                    node: group.name(i).to_string(),
                    master: group.name(master).to_string(),
                    demoted: demote,
                });
            }
        }
    }
}

/// A simulated group, its clock and the run's recorder.
struct SimGroup {
    group: Group,
    clock: SimClock,
    recorder: Recorder,
}

impl Controlled for SimGroup {
    fn master(&self) -> usize {
        self.group.master()
    }

    fn name(&self, index: usize) -> &str {
        &self.group.names[index]
    }

    fn promote(&self, index: usize) {
        self.group.promote(index);
    }

    fn configured(&self, index: usize, master: Option<usize>) {
        self.group.configure(index, master);
    }

    fn record(&self, event: EventKind) {
        self.recorder.record(SENTINEL, self.clock.local_us(), event);
    }

    /// Every node reaches the master at its own address.
    fn master_addr_from(&self, _node: usize, master: usize) -> Option<SocketAddr> {
        Some(self.group.addrs[master])
    }
}

/// Watches one group until the run ends, probing over the controller's `nic`.
pub async fn watch(group: Group, down_after_ms: u64, clock: SimClock, nic: Nic, recorder: Recorder) {
    let conns = group
        .addrs
        .iter()
        .map(|addr| {
            let connector = SimConnector(Address::new(*addr), nic.clone());
            Conn::new(connector, clock.clone(), PROBE_TIMEOUT_MS)
        })
        .collect();
    let group = SimGroup {
        group,
        clock: clock.clone(),
        recorder,
    };
    control(&group, conns, &clock, down_after_ms).await;
}

/// The replica to promote in place of node `master`: the one with the most replication
/// data that answered, the first of those on a tie.
fn most_up_to_date_replica(seen: &[Option<Seen>], master: usize) -> Option<usize> {
    (0..seen.len())
        .filter(|&i| i != master)
        .filter_map(|i| match seen[i] {
            Some(Seen::Replica { offset, .. }) => Some((offset, Reverse(i))),
            _ => None,
        })
        .max()
        .map(|(_, Reverse(i))| i)
}

/// Asks a node its role; `None` when it does not answer.
pub(crate) async fn probe<C: Connect, K: Clock>(conn: &mut Conn<C, K>) -> Option<Seen> {
    let Ok(Frame::Array(role)) = conn.request(&Role.into_frame()).await else {
        return None;
    };
    let text = |frame: Option<&Frame>| match frame {
        Some(Frame::BulkString(bytes) | Frame::SimpleString(bytes)) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        _ => None,
    };
    match text(role.first()).as_deref() {
        Some("master") => Some(Seen::Master),
        Some("slave") => {
            let ip = text(role.get(1)).and_then(|ip| ip.parse().ok());
            let port = match role.get(2) {
                Some(Frame::Integer(port)) => u16::try_from(*port).ok(),
                _ => None,
            };
            let linked = text(role.get(3)).as_deref() == Some("connected");
            let offset = match role.get(4) {
                Some(Frame::Integer(offset)) => *offset,
                _ => -1,
            };
            Some(Seen::Replica {
                of: ip.zip(port).map(|(ip, port)| SocketAddr::new(ip, port)),
                offset,
                linked,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica_of(port: u16) -> Seen {
        Seen::Replica {
            of: Some(SocketAddr::from(([10, 0, 0, 1], port))),
            offset: 0,
            linked: true,
        }
    }

    #[test]
    fn every_reconfiguration_closes_the_nodes_clients_as_sentinel_send_slave_of_does() {
        let words = |words: &[&str]| build(words.iter().map(|w| w.as_bytes().to_vec()));
        let kills = [
            words(&["CLIENT", "KILL", "TYPE", "normal"]),
            words(&["CLIENT", "KILL", "TYPE", "pubsub"]),
        ];
        let new_master = SocketAddr::from(([10, 0, 0, 2], 6379));
        for (master, replicaof) in [
            (None, Replicaof::NoOne),
            (Some(new_master), Replicaof::Master(new_master)),
        ] {
            let mut expected = vec![replicaof.into_frame()];
            expected.extend(kills.iter().cloned());
            assert_eq!(reconfigure(master), expected);
        }
    }

    #[test]
    fn an_old_master_is_converted_only_at_an_info_more_than_eight_seconds_after_it_reported_master() {
        // Recreated as a replica at the failover (0 s); its first INFO says master (0.1 s).
        let mut old = Instance::new(false, 0);
        assert!(old.info_due(false, 100));
        old.refresh(Seen::Master, 100);
        assert!(!old.convert_due(100));
        // The next INFO is ten seconds later, not one.
        assert!(!old.info_due(false, 8_200));
        assert!(old.info_due(false, 10_101));
        old.refresh(Seen::Master, 10_101);
        assert!(old.convert_due(10_101));
    }

    #[test]
    fn a_node_that_went_down_waits_eight_seconds_from_then() {
        let mut old = Instance::new(false, 0);
        old.refresh(Seen::Master, 100);
        old.set_down(true, 5_000);
        old.set_down(false, 6_000);
        assert!(!old.convert_due(12_000), "down 7 s ago");
        assert!(old.convert_due(13_001));
    }

    #[test]
    fn a_replica_of_the_wrong_master_waits_its_own_time_and_info_comes_each_second_while_its_link_is_down() {
        let master = SocketAddr::from(([10, 0, 0, 1], 2));
        let mut replica = Instance::new(false, 0);
        replica.refresh(replica_of(1), 100);
        assert!(!replica.misdirected(master, 3_000, 3_000));
        assert!(replica.misdirected(master, 3_000, 3_101));
        replica.refresh(replica_of(2), 3_200);
        assert!(!replica.misdirected(master, 3_000, 10_000));
        let mut unlinked = Instance::new(false, 0);
        unlinked.refresh(
            Seen::Replica {
                of: Some(master),
                offset: 0,
                linked: false,
            },
            0,
        );
        assert!(unlinked.info_due(false, 1_001));
    }
}
