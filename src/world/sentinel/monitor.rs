//! One Sentinel's view of the groups it monitors, its votes, and its failover state
//! machine (`sentinelHandleRedisInstance`, `sentinelFailoverStateMachine` of sentinel.c).
//!
//! [`State`] decides; [`watch`] does the talking: each tick it probes every instance,
//! asks the other Sentinels about masters it finds down, sends its hellos, and sends the
//! commands the state machine asks for. The state is shared with the Sentinel's server
//! (other Sentinels' questions and votes, clients' questions), and never held across an
//! await.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::net::SocketAddr;

use futures::future::join_all;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::{Sentinel, address};
use crate::client::Conn;
use crate::history::EventKind;
use crate::platform::Clock;
use crate::redis::Frame;
use crate::redis::cmd::Replicaof;
use crate::redis::request::build as request;
use crate::scenario::SentinelSettings;
use crate::world::clock::SimClock;
use crate::world::failover::{Seen, probe};
use crate::world::net::{Address, SimConnector};
use crate::world::topology::Group;

/// How often a Sentinel pings each instance (`SENTINEL_PING_PERIOD`), at most: with a
/// shorter `down_after_ms` it pings that often.
const PING_PERIOD_MS: u64 = 1000;

/// How long a Sentinel waits for another Sentinel's answer. Redis talks to the others
/// asynchronously, so one that is cut off never holds up the rest; here each tick waits
/// this long at most for one, and asks it nothing more that tick once it failed.
const PEER_TIMEOUT_MS: u64 = 200;

/// How often a Sentinel sends its hello to the others (`SENTINEL_PUBLISH_PERIOD`).
const HELLO_PERIOD_MS: u64 = 2000;

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

/// How long a node must report a role the configuration does not give it, and how long
/// after a configuration change, before a Sentinel reconfigures it (`SENTINEL_PUBLISH_PERIOD
/// * 4`: time to hear newer configurations first).
const RECONFIGURE_WAIT_MS: u64 = 4 * HELLO_PERIOD_MS;

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
    config_changed_ms: u64,
    /// Per node: when it last answered, since when it has answered without a gap of
    /// `down_after_ms`, what it said this tick, the role it last reported and since when
    /// it reports it.
    last_ok_ms: Vec<u64>,
    up_since_ms: Vec<u64>,
    seen: Vec<Option<Seen>>,
    reported: Vec<Option<Seen>>,
    role_since_ms: Vec<u64>,
    /// Per Sentinel (by index; this one's own entry unused).
    opinions: Vec<Opinion>,
    /// This Sentinel's vote: for whom, in which epoch.
    vote: Option<(String, u64)>,
    failover: Failover,
    /// When the last failover began (or a vote for another's did): none starts before
    /// twice `failover_timeout` after it.
    failover_start_ms: Option<u64>,
}

/// A reported role as it matters for reconfiguration (the offset changes all the time).
fn role(seen: Seen) -> Seen {
    match seen {
        Seen::Replica { of, .. } => Seen::Replica { of, offset: 0 },
        master => master,
    }
}

/// One Sentinel's state.
pub(super) struct State {
    pub name: String,
    settings: SentinelSettings,
    current_epoch: u64,
    pub monitors: Vec<Monitor>,
    rng: ChaCha8Rng,
}

/// What the state machine asks [`watch`] to do.
enum Order {
    /// Send these commands, in order, to node `node` of group `monitor`.
    Send {
        monitor: usize,
        node: usize,
        commands: Vec<Frame>,
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

/// The commands Sentinel sends to make a node follow `master` (or become the master), as
/// `sentinelSendSlaveOf` does, without its `MULTI`/`CONFIG REWRITE`/`EXEC` wrapping:
/// `CLIENT KILL TYPE normal` drops every client, so they reconnect and ask for the master.
fn reconfigure(master: Option<SocketAddr>) -> Vec<Frame> {
    let replicaof = match master {
        Some(addr) => Replicaof::Master(addr),
        None => Replicaof::NoOne,
    };
    let kill = ["CLIENT", "KILL", "TYPE", "normal"].map(|w| w.as_bytes().to_vec());
    vec![replicaof.into_frame(), request(kill)]
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
                    config_changed_ms: 0,
                    last_ok_ms: vec![0; n],
                    up_since_ms: vec![0; n],
                    seen: vec![None; n],
                    reported: vec![None; n],
                    role_since_ms: vec![0; n],
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
            monitor.up_since_ms.fill(now_ms);
            monitor.seen.fill(None);
            monitor.reported.fill(None);
            monitor.role_since_ms.fill(now_ms);
            monitor.opinions.fill(Opinion::default());
            monitor.failover = Failover::None;
        }
    }

    fn ping_period_ms(&self) -> u64 {
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
            monitor.config_changed_ms = now_ms;
            monitor.failover = Failover::None;
        }
    }

    /// Records what the probes of `monitor` found at `now_ms`.
    fn observe(&mut self, monitor: usize, seen: Vec<Option<Seen>>, now_ms: u64) {
        let down_after_ms = self.settings.down_after_ms;
        let monitor = &mut self.monitors[monitor];
        for (node, seen) in seen.into_iter().enumerate() {
            if let Some(seen) = seen {
                if now_ms.saturating_sub(monitor.last_ok_ms[node]) > down_after_ms {
                    monitor.up_since_ms[node] = now_ms;
                }
                monitor.last_ok_ms[node] = now_ms;
                if monitor.reported[node] != Some(role(seen)) {
                    monitor.role_since_ms[node] = now_ms;
                }
                monitor.reported[node] = Some(role(seen));
            }
            monitor.seen[node] = seen;
        }
    }

    /// The questions to ask every other Sentinel this tick: about each master this one
    /// finds down, with its own name as the candidate while it runs an election.
    fn questions(&self, now_ms: u64) -> Vec<(usize, Frame)> {
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
    fn answered(&mut self, peer: usize, monitor: usize, reply: &Frame, now_ms: u64) {
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
    fn hellos(&self) -> Vec<Frame> {
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
    fn start_failovers(&mut self, now_ms: u64) {
        let settings = self.settings;
        for i in 0..self.monitors.len() {
            let monitor = &self.monitors[i];
            if monitor.failover != Failover::None || !self.sdown(monitor, monitor.master, now_ms) {
                continue;
            }
            let agreeing = monitor
                .opinions
                .iter()
                .filter(|o| o.down && now_ms.saturating_sub(o.at_ms) <= OPINION_VALIDITY_MS)
                .count();
            let odown = 1 + agreeing >= settings.quorum as usize;
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
    fn timer_jitter_ms(&mut self) -> u64 {
        self.rng.random_range(0..=TIMER_JITTER_MS)
    }

    /// One step of every group's state machine at `now_ms`.
    fn step(&mut self, now_ms: u64) -> Vec<Order> {
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

    /// No failover under way: reconfigure nodes whose role disagrees with the
    /// configuration, once both have stood for a while.
    fn watch_over(&mut self, i: usize, now_ms: u64, orders: &mut Vec<Order>) {
        let monitor = &self.monitors[i];
        let master = monitor.master;
        // `sentinelMasterLooksSane`: act only while the configured master answers as one.
        if self.sdown(monitor, master, now_ms) || monitor.seen[master] != Some(Seen::Master) {
            return;
        }
        let settled = |since_ms: u64| now_ms.saturating_sub(since_ms) > RECONFIGURE_WAIT_MS;
        if !settled(monitor.config_changed_ms) {
            return;
        }
        let master_addr = monitor.addrs[master];
        for (node, seen) in monitor.seen.iter().enumerate() {
            let astray = match seen {
                Some(Seen::Master) => node != master,
                Some(Seen::Replica { of, .. }) => *of != Some(master_addr),
                None => false,
            };
            // `sentinelRedisInstanceNoDownFor` and `role_reported_time`: up, and in that role,
            // for the whole wait.
            if astray && settled(monitor.role_since_ms[node]) && settled(monitor.up_since_ms[node]) {
                orders.push(Order::Send {
                    monitor: i,
                    node,
                    commands: reconfigure(Some(master_addr)),
                });
            }
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
        orders.push(Order::Send {
            monitor: i,
            node: replica,
            commands: reconfigure(None),
        });
    }

    /// A promotion under way: once the replica reports master, switch the configuration
    /// to it and repoint every other node that answers; give up after `failover_timeout`.
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
        monitor.config_changed_ms = now_ms;
        monitor.failover = Failover::None;
        orders.push(Order::Promoted {
            monitor: i,
            promoted: replica,
            replaced,
        });
        let new_master = monitor.addrs[replica];
        for node in (0..monitor.addrs.len()).filter(|&n| n != replica && monitor.seen[n].is_some()) {
            orders.push(Order::Send {
                monitor: i,
                node,
                commands: reconfigure(Some(new_master)),
            });
        }
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

type SimConn = Conn<SimConnector, SimClock>;

/// A Sentinel's main loop: every ping period, probe, ask, greet, and act.
pub(super) async fn watch(sentinel: Sentinel) {
    let Sentinel {
        index,
        settings,
        groups,
        clock,
        nic,
        recorder,
        state,
    } = sentinel;
    let lock = || state.lock().expect("sentinel state poisoned");
    let (name, period_ms) = {
        let state = lock();
        (state.name.clone(), state.ping_period_ms())
    };
    let conn = |addr: SocketAddr, timeout_ms: u64| -> SimConn {
        Conn::new(
            SimConnector(Address::new(addr), nic.clone()),
            clock.clone(),
            timeout_ms,
        )
    };
    let mut nodes: Vec<Vec<SimConn>> = groups
        .iter()
        .map(|group| group.addrs.iter().map(|addr| conn(*addr, period_ms)).collect())
        .collect();
    let mut peers: Vec<(usize, SimConn)> = (0..settings.count as usize)
        .filter(|&j| j != index)
        .map(|j| (j, conn(address(j), PEER_TIMEOUT_MS.min(period_ms))))
        .collect();
    let mut next_hello_ms = clock.monotonic_ms();
    loop {
        let tick_ms = clock.monotonic_ms();
        // Probe every instance at once.
        let probes = join_all(nodes.iter_mut().flatten().map(probe)).await;
        let now_ms = clock.monotonic_ms();
        let mut probes = probes.into_iter();
        for (i, group) in groups.iter().enumerate() {
            let seen = probes.by_ref().take(group.addrs.len()).collect();
            lock().observe(i, seen, now_ms);
        }
        // Start the failovers due, then ask every other Sentinel about the masters this one
        // finds down (for its vote, where it started one), and greet them.
        let questions = {
            let mut state = lock();
            state.start_failovers(now_ms);
            state.questions(now_ms)
        };
        let hellos = match now_ms >= next_hello_ms {
            true => {
                next_hello_ms = now_ms + HELLO_PERIOD_MS;
                lock().hellos()
            }
            false => Vec::new(),
        };
        let answers = join_all(peers.iter_mut().map(|(j, conn)| {
            let (questions, hellos) = (&questions, &hellos);
            async move {
                let mut answers = Vec::new();
                for (monitor, question) in questions {
                    match conn.request(question).await {
                        Ok(reply) => answers.push((*j, *monitor, reply)),
                        Err(_) => return answers,
                    }
                }
                for hello in hellos {
                    if conn.request(hello).await.is_err() {
                        break;
                    }
                }
                answers
            }
        }))
        .await;
        let now_ms = clock.monotonic_ms();
        let orders = {
            let mut state = lock();
            for (peer, monitor, reply) in answers.iter().flatten() {
                state.answered(*peer, *monitor, reply, now_ms);
            }
            state.step(now_ms)
        };
        for order in orders {
            match order {
                Order::Send {
                    monitor,
                    node,
                    commands,
                } => {
                    for command in commands {
                        let _ = nodes[monitor][node].request(&command).await;
                    }
                }
                Order::Promoted {
                    monitor,
                    promoted,
                    replaced,
                } => {
                    let group = &groups[monitor];
                    group.promote(promoted);
                    let event = EventKind::Failover {
                        promoted: group.names[promoted].clone(),
                        replaced: group.names[replaced].clone(),
                    };
                    recorder.record(&name, clock.local_us(), event);
                }
                Order::ElectionOver {
                    monitor,
                    epoch,
                    votes,
                    needed,
                    elected,
                } => {
                    let group = &groups[monitor];
                    let event = EventKind::SentinelElection {
                        master: group.names[0].clone(),
                        epoch,
                        votes,
                        needed,
                        elected,
                    };
                    recorder.record(&name, clock.local_us(), event);
                }
            }
        }
        let jitter_ms = lock().timer_jitter_ms();
        clock.sleep_until_monotonic(tick_ms + period_ms + jitter_ms).await;
    }
}
