//! The simulator's side of the fault schedule: how a fault strikes in the simulated world.
//!
//! When each fault fires, whom it hits and how it strikes, ends and composes with others
//! are the shared schedule's ([`crate::schedule`]); this module is its [`Backend`] for the
//! world: madsim node pauses, kills and restarts, clogged links, the nodes' NICs (latency,
//! loss, resets) and simulated clocks, and the traps only the simulator can set: crash
//! points in the clients' lock code ([`steps`]) and writes held from the replicas
//! ([`writes`]).
//!
//! madsim's TCP never loses bytes: over a cut link they wait and arrive after the heal,
//! as in a real partition with long TCP timeouts. Nor does a cut link let a close through:
//! a peer that closes its connection or dies behind it is seen only after the heal (see
//! patches/madsim/PATCH.md).

mod steps;
mod writes;

pub use steps::StepTraps;
pub use writes::WriteTraps;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;

use super::clock::{SimClock, true_now_ns};
use super::net::Nic;
use super::recorder::Recorder;
use super::topology::Group;
use crate::history::{EventKind, StruckOn};
use crate::redis::node::Gate;
use crate::redis::persistence::Disk;
use crate::scenario::TriggerEvent;
use crate::schedule::cover::FaultId;
use crate::schedule::{Backend, Degradation, Failure, Link, Scope, Trap, WORLD};

/// What the faults can reach in the simulated world: every node and clock by name, and
/// the network.
pub struct Reach {
    pub nodes: BTreeMap<String, NodeId>,
    pub clocks: BTreeMap<String, SimClock>,
    pub recorder: Recorder,
    /// Client names, in order.
    pub clients: Vec<String>,
    /// Names of every Redis node, masters and replicas.
    pub redis: Vec<String>,
    /// The Redis groups, for who is master now.
    pub groups: Vec<Group>,
    /// Each Redis node's AOF as its machine holds it (nodes with an AOF only): a power
    /// loss drops what was not fsynced.
    pub disks: BTreeMap<String, Disk>,
    /// Crash-point traps the clients' step hooks check.
    pub steps: StepTraps,
    /// Every node's network interface, for latency, loss and reset faults on nodes and
    /// links (the sentinel and the fencing counter are nodes like any other).
    pub nics: BTreeMap<String, Nic>,
    /// Each node's IP address (a link's latency is keyed by its far end).
    pub ips: BTreeMap<String, IpAddr>,
    /// `write_before_replication` traps the Redis nodes' write hooks check.
    pub writes: WriteTraps,
}

/// What holds the world until a fault has struck.
pub enum Hold {
    /// A client stopped at a crash point; dropping it lets the client go on.
    Step(steps::Held),
    /// A master's stream held from its replicas; opening it lets the write go to them.
    Write(Gate),
}

impl Degradation {
    /// Claims (`on`) or drops fault `id`'s degradation of `nic`'s messages to `peer`
    /// (`None`: to anyone).
    fn set_on(self, nic: &Nic, peer: Option<IpAddr>, id: FaultId, on: bool) {
        match self {
            Degradation::Latency(range) => nic.set_latency(peer, id, on.then_some(range)),
            Degradation::Loss(rate) => nic.set_loss(peer, id, on.then_some(rate)),
        }
    }
}

impl Backend for Reach {
    type Hold = Hold;

    fn true_ns(&self) -> u64 {
        true_now_ns()
    }

    async fn sleep(&self, duration: Duration) {
        madsim::time::sleep(duration).await;
    }

    async fn next_event(&self, event: TriggerEvent) -> String {
        let wanted = move |kind: &EventKind| match event {
            TriggerEvent::Acquired => matches!(kind, EventKind::Acquired { .. }),
            TriggerEvent::Released => matches!(kind, EventKind::ReleaseSent { .. }),
            TriggerEvent::CrashPoint | TriggerEvent::WriteBeforeReplication => {
                unreachable!("traps, not events of the history")
            }
        };
        let from = self.recorder.len();
        self.recorder
            .next_event(from, |e| wanted(&e.kind))
            .await
            .node
            .to_string()
    }

    async fn spring(&self, trap: Trap) -> (String, Hold) {
        match trap {
            Trap::Step { step, clients } => {
                let (client, held) = self.steps.spring(step, clients).await;
                (client, Hold::Step(held))
            }
            Trap::WriteBeforeReplication => {
                let (master, gate) = self.writes.spring().await;
                (master, Hold::Write(gate))
            }
        }
    }

    fn release(&self, hold: Hold) {
        match hold {
            Hold::Step(held) => drop(held),
            Hold::Write(gate) => gate.open(),
        }
    }

    /// Known at once: a simulated client's events are recorded as it acts.
    fn current_holder(&self) -> impl Future<Output = Option<String>> {
        std::future::ready(self.recorder.current_holder())
    }

    fn master_of(&self, node: Option<&str>) -> Option<String> {
        let group = match node {
            None => self.groups.first(),
            Some(node) => self.groups.iter().find(|g| g.names.iter().any(|n| n == node)),
        };
        group.map(|group| group.master_name().to_string())
    }

    fn nodes(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// A fault's own event at true time; a node's at its local time.
    fn record(&self, node: &str, kind: EventKind) {
        let local_us = match node {
            WORLD => (true_now_ns() / 1000) as i64,
            node => self.clocks[node].local_us(),
        };
        self.recorder.record(node, local_us, kind);
    }

    fn struck(&self, index: usize, on: StruckOn) {
        self.recorder.struck(index, on);
    }

    fn drawn(&self, fault: String) {
        self.recorder.drawn(fault);
    }

    fn spawn(&self, strike: impl Future<Output = ()> + 'static) {
        madsim::task::spawn_local(strike);
    }

    fn failed(&self, error: String) {
        unreachable!("a simulated strike cannot fail: {error}");
    }

    fn pause(&self, node: &str) {
        Handle::current().pause(self.nodes[node]);
    }

    fn resume(&self, node: &str) {
        Handle::current().resume(self.nodes[node]);
    }

    fn kill(&self, node: &str, _failure: Failure) {
        Handle::current().kill(self.nodes[node]);
    }

    fn lose_page_cache(&self, node: &str) {
        if let Some(disk) = self.disks.get(node) {
            disk.lose_page_cache();
        }
    }

    async fn restart(&self, node: &str) -> Result<(), String> {
        Handle::current().restart(self.nodes[node]);
        Ok(())
    }

    fn jump_clock(&self, node: &str, by_ms: i64) -> Result<(), String> {
        self.clocks[node].jump_ms(by_ms);
        Ok(())
    }

    fn clock_rate_ppm(&self, node: &str) -> i64 {
        self.clocks[node].rate_ppm()
    }

    fn set_clock_rate_ppm(&self, node: &str, rate_ppm: i64) -> Result<(), String> {
        self.clocks[node].set_rate_ppm(rate_ppm);
        Ok(())
    }

    fn cut(&self, (from, to): &Link) {
        NetSim::current().clog_link(self.nodes[from], self.nodes[to]);
    }

    fn mend(&self, (from, to): &Link) {
        NetSim::current().unclog_link(self.nodes[from], self.nodes[to]);
    }

    fn degrade(&self, degradation: Degradation, scope: &Scope, id: FaultId, on: bool) -> Result<(), String> {
        match scope {
            Scope::Links(links) => {
                for (from, to) in links {
                    degradation.set_on(&self.nics[from], Some(self.ips[to]), id, on);
                }
            }
            Scope::Everywhere => self
                .nics
                .values()
                .for_each(|nic| degradation.set_on(nic, None, id, on)),
            Scope::Nodes(nodes) => nodes
                .iter()
                .for_each(|node| degradation.set_on(&self.nics[node], None, id, on)),
        }
        Ok(())
    }

    /// madsim's reset closes a node's listening socket too, which no real reset does; so a
    /// Redis node's connections are closed from the other end, by resetting its clients.
    fn reset(&self, targets: &[String]) {
        let mut nodes: Vec<&String> = targets
            .iter()
            .filter(|name| self.clients.contains(name))
            .collect();
        if targets.iter().any(|name| self.redis.contains(name)) {
            nodes.extend(&self.clients);
        }
        nodes.sort();
        nodes.dedup();
        for name in nodes {
            // madsim drops what is in flight to the node; our NIC makes its streams refuse
            // further use, as a connection that received a RST does.
            NetSim::current().reset_node(self.nodes[name]);
            self.nics[name].reset_connections();
        }
    }
}
