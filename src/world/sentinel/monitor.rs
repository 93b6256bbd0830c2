//! One Sentinel's view of the groups it monitors, its votes, and its failover state
//! machine (`sentinelHandleRedisInstance`, `sentinelFailoverStateMachine` of sentinel.c).
//!
//! [`State`] decides; [`watch`](super::watch) does the talking: each tick it probes every
//! instance, asks the other Sentinels about masters it finds down, sends its hellos, and
//! sends the commands the state machine asks for. The state is shared with the Sentinel's server
//! (other Sentinels' questions and votes, clients' questions), and never held across an
//! await.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::net::SocketAddr;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::redis::Frame;
use crate::redis::request::build as request;
use crate::scenario::SentinelSettings;
use crate::world::failover::{Instance, Seen};
use crate::world::topology::Group;

/// How often a Sentinel pings each instance (`SENTINEL_PING_PERIOD`), at most: with a
/// shorter `down_after_ms` it pings that often.
const PING_PERIOD_MS: u64 = 1000;

/// How long another Sentinel's "it is down" counts (`SENTINEL_ASK_PERIOD * 5`).
const OPINION_VALIDITY_MS: u64 = 5000;

/// A failover starts up to this much later than ODOWN (`SENTINEL_MAX_DESYNC`), so that
/// Sentinels seldom ask for votes at the same instant.
const MAX_DESYNC_MS: u64 = 1000;

/// Each tick comes up to this much later than the ping period, drawn per tick: Redis runs
/// Sentinel's timer at a randomised `hz` so that Sentinels do not act in lockstep.
const TIMER_JITTER_MS: u64 = 100;

/// The longest an election may take (`SENTINEL_ELECTION_TIMEOUT`), or `failover_timeout`
/// if shorter.
const ELECTION_TIMEOUT_MS: u64 = 10_000;

/// Where a failover of one group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failover {
    None,
    /// Asking for votes under `epoch` since `since_ms`.
    Electing {
        epoch: u64,
        since_ms: u64,
    },
    /// Elected: `REPLICAOF NO ONE` sent to `replica`, waiting until it reports master.
    Promoting {
        epoch: u64,
        replica: usize,
        since_ms: u64,
    },
}

/// Another Sentinel's last answer about a master.
#[derive(Debug, Clone, Default)]
struct Opinion {
    down: bool,
    at_ms: u64,
    /// Whom it voted for, and in which epoch.
    leader: Option<(String, u64)>,
}

/// What one Sentinel knows of one group.
pub(super) struct Monitor {
    /// The name clients ask for: the group's first master's node name.
    pub name: String,
    addrs: Vec<SocketAddr>,
    /// The master in this Sentinel's configuration, and that configuration's epoch.
    master: usize,
    config_epoch: u64,
    /// Per node: when it last answered, what it said this tick (its PING, and its INFO in
    /// a failover), what its INFO replies said ([`Instance`]: the role it reports and since
    /// when), and whether one came this tick.
    last_ok_ms: Vec<u64>,
    seen: Vec<Option<Seen>>,
    instances: Vec<Instance>,
    informed: Vec<bool>,
    /// Per Sentinel (by index; this one's own entry unused).
    opinions: Vec<Opinion>,
    /// This Sentinel's vote: for whom, in which epoch.
    vote: Option<(String, u64)>,
    failover: Failover,
    /// When the last failover began (or a vote for another's did): none starts before
    /// twice `failover_timeout` after it.
    failover_start_ms: Option<u64>,
}

/// One Sentinel's state.
pub(super) struct State {
    pub name: String,
    settings: SentinelSettings,
    current_epoch: u64,
    pub monitors: Vec<Monitor>,
    rng: ChaCha8Rng,
}

/// What the state machine asks [`watch`](super::watch::watch) to do.
pub(super) enum Order {
    /// Make node `node` of group `monitor` a replica of node `follow` (`None`: the master),
    /// with the `CLIENT KILL`s; `demoted` when it answered as a master.
    Reconfigure {
        monitor: usize,
        node: usize,
        follow: Option<usize>,
        demoted: bool,
    },
    /// Node `promoted` of group `monitor` is its master now, in place of `replaced`.
    Promoted {
        monitor: usize,
        promoted: usize,
        replaced: usize,
    },
    /// This Sentinel's election to fail over group `monitor`'s master in `epoch` ended.
    ElectionOver {
        monitor: usize,
        epoch: u64,
        votes: usize,
        needed: usize,
        elected: bool,
    },
}

impl State {
    pub fn new(name: String, settings: SentinelSettings, groups: &[Group], rng: ChaCha8Rng) -> Self {
        let count = settings.count as usize;
        let monitors = groups
            .iter()
            .map(|group| {
                let n = group.addrs.len();
                Monitor {
                    name: group.names[0].clone(),
                    addrs: group.addrs.clone(),
                    master: group.master(),
                    config_epoch: 0,
                    last_ok_ms: vec![0; n],
                    seen: vec![None; n],
                    instances: Instance::fresh(n, group.master(), 0),
                    informed: vec![false; n],
                    opinions: vec![Opinion::default(); count],
                    vote: None,
                    failover: Failover::None,
                    failover_start_ms: None,
                }
            })
            .collect();
        State {
            name,
            settings,
            current_epoch: 0,
            monitors,
            rng,
        }
    }

    /// After a (re)start: everything is presumed up from `now_ms`, nothing heard yet, and a
    /// failover under way is dropped (Redis keeps its configuration and epochs across a
    /// restart, and forgets the rest).
    pub fn restart(&mut self, now_ms: u64) {
        for monitor in &mut self.monitors {
            monitor.last_ok_ms.fill(now_ms);
            monitor.seen.fill(None);
            monitor.renew(now_ms);
            monitor.opinions.fill(Opinion::default());
            monitor.failover = Failover::None;
        }
    }

    pub(super) fn ping_period_ms(&self) -> u64 {
        PING_PERIOD_MS.min(self.settings.down_after_ms)
    }

    /// Whether node `node` of `monitor` has been silent longer than `down_after_ms` (SDOWN).
    fn sdown(&self, monitor: &Monitor, node: usize, now_ms: u64) -> bool {
        now_ms.saturating_sub(monitor.last_ok_ms[node]) > self.settings.down_after_ms
    }

    /// The master's address in this Sentinel's configuration (`get-master-addr-by-name`).
    pub fn master_addr(&self, name: &[u8]) -> Option<SocketAddr> {
        let monitor = self.monitors.iter().find(|m| m.name.as_bytes() == name)?;
        Some(monitor.addrs[monitor.master])
    }

    /// `SENTINEL is-master-down-by-addr`: whether this Sentinel finds the master at `addr`
    /// down and, when `runid` is not `*`, its vote for `runid` in `epoch` (it votes once
    /// per epoch, for the first that asks: `sentinelVoteLeader`). The reply's leader and
    /// epoch are that vote (`*` and 0 without one).
    pub fn is_master_down(&mut self, addr: SocketAddr, epoch: u64, runid: &str, now_ms: u64) -> Frame {
        let Some(i) = self.monitors.iter().position(|m| m.addrs[m.master] == addr) else {
            return Frame::Array(vec![Frame::Integer(0), bulk("*"), Frame::Integer(0)]);
        };
        let down = self.sdown(&self.monitors[i], self.monitors[i].master, now_ms);
        let mut leader = None;
        if runid != "*" {
            leader = self.vote(i, epoch, runid, now_ms);
        }
        let (leader, leader_epoch) = leader.unwrap_or_else(|| ("*".to_string(), 0));
        Frame::Array(vec![
            Frame::Integer(i64::from(down)),
            bulk(&leader),
            Frame::Integer(leader_epoch as i64),
        ])
    }

    /// Votes for `candidate` in `epoch` unless this Sentinel already voted in it (or a
    /// later one); returns the vote it holds. Voting for another holds this Sentinel's own
    /// failovers back, as a failover it started would.
    fn vote(&mut self, monitor: usize, epoch: u64, candidate: &str, now_ms: u64) -> Option<(String, u64)> {
        self.current_epoch = self.current_epoch.max(epoch);
        let monitor = &mut self.monitors[monitor];
        let voted_epoch = monitor.vote.as_ref().map_or(0, |(_, e)| *e);
        if voted_epoch < epoch && self.current_epoch <= epoch {
            monitor.vote = Some((candidate.to_string(), self.current_epoch));
            if candidate != self.name {
                let desync = self.rng.random_range(0..MAX_DESYNC_MS);
                monitor.failover_start_ms = Some(now_ms + desync);
            }
        }
        monitor.vote.clone()
    }

    /// Another Sentinel's hello: its epoch, and its configuration of group `name`; a newer
    /// configuration (a higher config epoch) replaces this one's (`+switch-master`).
    pub fn hello(&mut self, epoch: u64, name: &[u8], master: SocketAddr, config_epoch: u64, now_ms: u64) {
        self.current_epoch = self.current_epoch.max(epoch);
        let Some(monitor) = self.monitors.iter_mut().find(|m| m.name.as_bytes() == name) else {
            return;
        };
        let Some(node) = monitor.addrs.iter().position(|a| *a == master) else {
            return;
        };
        if config_epoch > monitor.config_epoch {
            monitor.master = node;
            monitor.config_epoch = config_epoch;
            monitor.renew(now_ms);
            monitor.failover = Failover::None;
        }
    }

    /// Records what the probes of group `i` found at `now_ms`: who answered, and, from
    /// those whose `INFO` is due, the role they report (every ten seconds; every second
    /// for a replica while its master is ODOWN or being failed over).
    pub(super) fn observe(&mut self, i: usize, seen: Vec<Option<Seen>>, now_ms: u64) {
        for (node, seen) in seen.iter().enumerate() {
            if seen.is_some() {
                self.monitors[i].last_ok_ms[node] = now_ms;
            }
        }
        let hurried = self.odown(i, now_ms) || self.monitors[i].failover != Failover::None;
        let down_after_ms = self.settings.down_after_ms;
        let monitor = &mut self.monitors[i];
        for (node, seen) in seen.into_iter().enumerate() {
            let down = now_ms.saturating_sub(monitor.last_ok_ms[node]) > down_after_ms;
            let instance = &mut monitor.instances[node];
            instance.set_down(down, now_ms);
            monitor.informed[node] = false;
            if let Some(seen) = seen
                && instance.info_due(hurried && node != monitor.master, now_ms)
            {
                instance.refresh(seen, now_ms);
                monitor.informed[node] = true;
            }
            monitor.seen[node] = seen;
        }
    }

    /// Whether group `i`'s master is ODOWN at `now_ms`: down for this Sentinel and, within
    /// the last few seconds, for `quorum` of them counting itself.
    fn odown(&self, i: usize, now_ms: u64) -> bool {
        let monitor = &self.monitors[i];
        if !self.sdown(monitor, monitor.master, now_ms) {
            return false;
        }
        let agreeing = monitor
            .opinions
            .iter()
            .filter(|o| o.down && now_ms.saturating_sub(o.at_ms) <= OPINION_VALIDITY_MS)
            .count();
        1 + agreeing >= self.settings.quorum as usize
    }

    /// The questions to ask every other Sentinel this tick: about each master this one
    /// finds down, with its own name as the candidate while it runs an election.
    pub(super) fn questions(&self, now_ms: u64) -> Vec<(usize, Frame)> {
        self.monitors
            .iter()
            .enumerate()
            .filter(|(_, m)| self.sdown(m, m.master, now_ms))
            .map(|(i, m)| {
                let runid = match m.failover {
                    Failover::Electing { .. } => self.name.clone(),
                    _ => "*".to_string(),
                };
                let addr = m.addrs[m.master];
                let words = [
                    "SENTINEL".to_string(),
                    "is-master-down-by-addr".to_string(),
                    addr.ip().to_string(),
                    addr.port().to_string(),
                    self.current_epoch.to_string(),
                    runid,
                ];
                (i, request(words.map(String::into_bytes)))
            })
            .collect()
    }

    /// Records Sentinel `peer`'s answer about `monitor`'s master.
    pub(super) fn answered(&mut self, peer: usize, monitor: usize, reply: &Frame, now_ms: u64) {
        let Frame::Array(items) = reply else { return };
        let [Frame::Integer(down), leader, Frame::Integer(epoch)] = items.as_slice() else {
            return;
        };
        let opinion = &mut self.monitors[monitor].opinions[peer];
        opinion.down = *down == 1;
        opinion.at_ms = now_ms;
        if let Some(leader) = text(leader).filter(|l| l != "*") {
            opinion.leader = Some((leader, *epoch as u64));
        }
    }

    /// This Sentinel's hellos: its epoch and its configuration of every group.
    pub(super) fn hellos(&self) -> Vec<Frame> {
        self.monitors
            .iter()
            .map(|m| {
                let addr = m.addrs[m.master];
                let words = [
                    "SENTINEL".to_string(),
                    "hello".to_string(),
                    self.name.clone(),
                    self.current_epoch.to_string(),
                    m.name.clone(),
                    addr.ip().to_string(),
                    addr.port().to_string(),
                    m.config_epoch.to_string(),
                ];
                request(words.map(String::into_bytes))
            })
            .collect()
    }

    /// Starts a failover of every group whose master is ODOWN (down for this Sentinel and,
    /// within the last few seconds, for `quorum` of them counting itself), unless one began
    /// less than twice `failover_timeout` ago: a new epoch, and this Sentinel's vote for
    /// itself (`sentinelStartFailoverIfNeeded`, then the first `sentinelGetLeader`).
    pub(super) fn start_failovers(&mut self, now_ms: u64) {
        let settings = self.settings;
        for i in 0..self.monitors.len() {
            let monitor = &self.monitors[i];
            if monitor.failover != Failover::None {
                continue;
            }
            let odown = self.odown(i, now_ms);
            let retry_after_ms = 2 * settings.failover_timeout_ms;
            let may_start = monitor
                .failover_start_ms
                .is_none_or(|start| now_ms >= start.saturating_add(retry_after_ms));
            if !(odown && may_start) {
                continue;
            }
            self.current_epoch += 1;
            let epoch = self.current_epoch;
            let desync = self.rng.random_range(0..MAX_DESYNC_MS);
            let monitor = &mut self.monitors[i];
            monitor.failover = Failover::Electing {
                epoch,
                since_ms: now_ms,
            };
            monitor.failover_start_ms = Some(now_ms + desync);
            let me = self.name.clone();
            self.vote(i, epoch, &me, now_ms);
        }
    }

    /// How much later than the ping period the next tick comes.
    pub(super) fn timer_jitter_ms(&mut self) -> u64 {
        self.rng.random_range(0..=TIMER_JITTER_MS)
    }

    /// One step of every group's state machine at `now_ms`.
    pub(super) fn step(&mut self, now_ms: u64) -> Vec<Order> {
        let mut orders = Vec::new();
        for i in 0..self.monitors.len() {
            match self.monitors[i].failover {
                Failover::None => self.watch_over(i, now_ms, &mut orders),
                Failover::Electing { epoch, since_ms } => self.elect(i, epoch, since_ms, now_ms, &mut orders),
                Failover::Promoting {
                    epoch,
                    replica,
                    since_ms,
                } => self.promote(i, epoch, replica, since_ms, now_ms, &mut orders),
            }
        }
        orders
    }

    /// No failover under way: at each node's `INFO`, reconfigure it if its role disagrees
    /// with the configuration for long enough (`sentinelRefreshInstanceInfo`): a node that
    /// reports the master role (the old master) after [`Instance::convert_due`]
    /// (`+convert-to-slave`), a replica of another node after `failover_timeout`
    /// (`+fix-slave-config`).
    fn watch_over(&mut self, i: usize, now_ms: u64, orders: &mut Vec<Order>) {
        let monitor = &self.monitors[i];
        let master = monitor.master;
        // `sentinelMasterLooksSane`: act only while the configured master is one.
        if self.sdown(monitor, master, now_ms) || !monitor.instances[master].looks_sane_master(now_ms) {
            return;
        }
        let master_addr = monitor.addrs[master];
        for node in (0..monitor.addrs.len()).filter(|&n| n != master && monitor.informed[n]) {
            let instance = &monitor.instances[node];
            let demoted = match monitor.seen[node] {
                Some(Seen::Master) if instance.convert_due(now_ms) => true,
                Some(Seen::Replica { .. })
                    if instance.misdirected(master_addr, self.settings.failover_timeout_ms, now_ms) =>
                {
                    false
                }
                _ => continue,
            };
            orders.push(Order::Reconfigure {
                monitor: i,
                node,
                follow: Some(master),
                demoted,
            });
        }
    }

    /// An election under way: count the votes; the winner needs a majority of all
    /// Sentinels and at least the quorum (`sentinelGetLeader`). This Sentinel votes for
    /// the one with most votes so far, or for itself.
    fn elect(&mut self, i: usize, epoch: u64, since_ms: u64, now_ms: u64, orders: &mut Vec<Order>) {
        let mut votes: BTreeMap<String, usize> = BTreeMap::new();
        for opinion in &self.monitors[i].opinions {
            if let Some((leader, e)) = &opinion.leader
                && *e == epoch
            {
                *votes.entry(leader.clone()).or_default() += 1;
            }
        }
        let favourite = most_voted(&votes).unwrap_or_else(|| self.name.clone());
        if let Some((mine, e)) = self.vote(i, epoch, &favourite, now_ms)
            && e == epoch
        {
            *votes.entry(mine).or_default() += 1;
        }
        let needed = (self.settings.count as usize / 2 + 1).max(self.settings.quorum as usize);
        let elected = most_voted(&votes).filter(|winner| votes[winner] >= needed);
        let timeout_ms = ELECTION_TIMEOUT_MS.min(self.settings.failover_timeout_ms);
        let my_votes = votes.get(&self.name).copied().unwrap_or(0);
        let monitor = &mut self.monitors[i];
        if elected.as_deref() != Some(self.name.as_str()) {
            if now_ms.saturating_sub(since_ms) > timeout_ms {
                monitor.failover = Failover::None;
                orders.push(Order::ElectionOver {
                    monitor: i,
                    epoch,
                    votes: my_votes,
                    needed,
                    elected: false,
                });
            }
            return;
        }
        orders.push(Order::ElectionOver {
            monitor: i,
            epoch,
            votes: my_votes,
            needed,
            elected: true,
        });
        // `sentinelSelectSlave`: an answering replica with the most replication data.
        let best = (0..monitor.addrs.len())
            .filter(|&n| n != monitor.master)
            .filter_map(|n| match monitor.seen[n] {
                Some(Seen::Replica { offset, .. }) => Some((offset, Reverse(n))),
                _ => None,
            })
            .max()
            .map(|(_, Reverse(n))| n);
        let Some(replica) = best else {
            monitor.failover = Failover::None;
            return;
        };
        monitor.failover = Failover::Promoting {
            epoch,
            replica,
            since_ms: now_ms,
        };
        orders.push(Order::Reconfigure {
            monitor: i,
            node: replica,
            follow: None,
            demoted: false,
        });
    }

    /// A promotion under way: once the replica reports master, switch the configuration
    /// to it and repoint the old master's other replicas that answer (the leader's
    /// `sentinelFailoverReconfNextSlave`: the old master itself is left to
    /// [`State::watch_over`]); give up after `failover_timeout`.
    fn promote(
        &mut self,
        i: usize,
        epoch: u64,
        replica: usize,
        since_ms: u64,
        now_ms: u64,
        orders: &mut Vec<Order>,
    ) {
        let timeout_ms = self.settings.failover_timeout_ms;
        let monitor = &mut self.monitors[i];
        if monitor.seen[replica] != Some(Seen::Master) {
            if now_ms.saturating_sub(since_ms) > timeout_ms {
                monitor.failover = Failover::None;
            }
            return;
        }
        let replaced = monitor.master;
        monitor.master = replica;
        monitor.config_epoch = epoch;
        monitor.failover = Failover::None;
        orders.push(Order::Promoted {
            monitor: i,
            promoted: replica,
            replaced,
        });
        let replicas = (0..monitor.addrs.len()).filter(|&n| n != replica && n != replaced);
        for node in replicas.filter(|&n| monitor.seen[n].is_some()) {
            orders.push(Order::Reconfigure {
                monitor: i,
                node,
                follow: Some(replica),
                demoted: false,
            });
        }
        monitor.renew(now_ms);
    }
}

impl Monitor {
    /// A new configuration (or a restart) at `now_ms`: every node is seen afresh, as Sentinel
    /// recreates its instances (`sentinelResetMasterAndChangeAddress`): the master as one,
    /// the others, the old master among them, as replicas, each asked for its `INFO` at once.
    fn renew(&mut self, now_ms: u64) {
        self.instances = Instance::fresh(self.addrs.len(), self.master, now_ms);
        self.informed.fill(false);
    }
}

/// The name with the most votes; a tie goes to the greater name, as sentinel.c's does.
fn most_voted(votes: &BTreeMap<String, usize>) -> Option<String> {
    votes
        .iter()
        .max_by_key(|(name, count)| (**count, (*name).clone()))
        .map(|(name, _)| name.clone())
}

fn bulk(text: &str) -> Frame {
    Frame::BulkString(text.as_bytes().to_vec())
}

fn text(frame: &Frame) -> Option<String> {
    match frame {
        Frame::BulkString(bytes) | Frame::SimpleString(bytes) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        _ => None,
    }
}
