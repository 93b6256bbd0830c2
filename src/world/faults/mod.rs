//! The fault schedule: waits for each fault's trigger, resolves its target, injects it.
//!
//! Each kind of fault is a small model in its own file ([`process`], [`clock`],
//! [`network`], [`nemesis`]); faults are data (see `scenario::fault`), and every random
//! choice a fault makes (which client, which majority) comes from its own seeded RNG.
//!
//! Overlapping faults compose by cover ([`cover`]): each fault claims what it covers, a
//! thing is under a kind of fault while any claim covers it, and the last claim to go
//! lifts it. The rules for every pair of kinds (docs/faults.md has the full table):
//!
//! | kinds on one target | what holds |
//! |---|---|
//! | pause + pause | paused for the union of the pauses |
//! | crash + crash (restart, power loss) | down from the first kill to the last restart due |
//! | partition + partition (stall) | cut for the union; `heal` lifts every cut |
//! | latency + latency | delays add |
//! | loss + loss | independent: through only if each lets it through |
//! | drift + drift | the latest drift still on sets the rate, then the rate before the first |
//! | jump + drift | independent: a jump moves the reading, a drift the rate |
//! | pause + crash | a restart under a pause comes back frozen until the last pause ends |
//! | power loss + crash | the page cache is lost even if the process was already down |
//! | crash + partition, latency, loss, clock | the node's links, NIC and clock outlive its process |
//! | pause + network or clock faults | independent: time, the clock and the network go on |
//! | partition + latency or loss | a message waits for the heal, then its delay |

mod clock;
pub mod cover;
mod nemesis;
mod network;

use network::Degradation;
mod process;
mod steps;
mod writes;

use process::Failure;
pub use process::delayed_restart_ms;
pub use steps::StepTraps;
pub use writes::WriteTraps;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use madsim::task::NodeId;
use rand_chacha::ChaCha8Rng;

use super::clock::{SimClock, true_now_ns};
use super::net::Nic;
use super::recorder::Recorder;
use super::topology::Group;
use crate::history::EventKind;
use crate::redis::node::Gate;
use crate::redis::persistence::Disk;
use crate::scenario::{
    Candidates, Fault, FaultAction, Target, Trigger, TriggerEvent, resolve_groups, resolve_names, words_among,
};
use cover::{Covers, FaultId};

/// The name faults are recorded under in the history.
pub const WORLD: &str = "world";

/// What the injector can reach: every node and clock by name, and the network.
pub struct Reach {
    pub nodes: BTreeMap<String, NodeId>,
    pub clocks: BTreeMap<String, SimClock>,
    pub recorder: Recorder,
    /// Client names, in order.
    pub clients: Vec<String>,
    /// Names of the masters at the start, in order (what `majority` and `minority` pick from).
    pub masters: Vec<String>,
    /// Names of every Redis node, masters and replicas.
    pub redis: Vec<String>,
    /// The Redis groups, for who is master now.
    pub groups: Vec<Group>,
    /// What the faults cover now, fault by fault: how overlapping faults compose.
    pub covers: Mutex<Composition>,
    /// The id the next fault to strike gets.
    pub next_fault: AtomicU64,
    /// Each Redis node's AOF as its machine holds it (nodes with an AOF only): a power
    /// loss drops what was not fsynced.
    pub disks: BTreeMap<String, Disk>,
    /// How long each crashed Redis node stays down at least.
    pub restart_delay_ms: BTreeMap<String, u64>,
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

/// What each kind of fault covers now. A process is paused while any pause covers it and
/// down while any crash does; a link is cut while any partition or stall covers it; a
/// clock runs at the rate of the latest drift still covering it. (Latency and loss are
/// claimed on the nodes' [`Nic`]s, the same way.)
#[derive(Debug, Default)]
pub struct Composition {
    pub paused: Covers<String>,
    pub down: Covers<String>,
    /// Links as (from, to) node names.
    pub cut: Covers<(String, String)>,
    /// Each drift's rate, in ppm.
    pub drifts: Covers<String, i64>,
    /// The rate of each drifting clock before its first drift.
    pub base_rates: BTreeMap<String, i64>,
}

impl Reach {
    /// A new fault's id.
    fn new_fault(&self) -> FaultId {
        self.next_fault.fetch_add(1, Ordering::Relaxed)
    }

    /// The composition of the faults now.
    fn covers(&self) -> MutexGuard<'_, Composition> {
        self.covers.lock().expect("covers lock poisoned")
    }

    /// Records a fault event under [`WORLD`], at true time.
    fn record(&self, kind: EventKind) {
        self.recorder.record(WORLD, (true_now_ns() / 1000) as i64, kind);
    }

    /// Records an event on a node, at that node's local time.
    fn record_on(&self, node: &str, kind: EventKind) {
        self.recorder.record(node, self.clocks[node].local_us(), kind);
    }

    /// The nodes a target names now. `event_node` is the node of the triggering event.
    async fn resolve(
        &self,
        target: &Target,
        event_node: Option<String>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<String> {
        let candidates = Candidates {
            clients: &self.clients,
            masters: &self.masters,
            redis: &self.redis,
            master: self.groups[0].master_name(),
        };
        match target.draw(&candidates, rng) {
            Some(nodes) => nodes,
            None => vec![match event_node {
                Some(node) => node,
                None => self.recorder.holder_or_next().await,
            }],
        }
    }
}

/// Waits for the trigger of the scenario's fault number `index`, then injects it.
pub async fn inject(index: usize, fault: Fault, reach: Arc<Reach>, mut rng: ChaCha8Rng) {
    let fired = wait_for(&fault, &reach).await;
    if let FaultAction::Random(nemesis) = fault.action {
        return nemesis::run(index, nemesis, reach, rng).await;
    }
    let targets = match (&fault.target, fired.held.is_some()) {
        (None, _) => Vec::new(),
        // A crash point's target is the client that reached the step.
        (Some(_), true) => fired.node.clone().into_iter().collect(),
        (Some(Target::Nodes(names)), false) => {
            let mut resolved = Vec::new();
            for word in words_among(names) {
                resolved.push(reach.resolve(&word, fired.node.clone(), &mut rng).await);
            }
            resolve_names(names, resolved)
        }
        (Some(target), false) => reach.resolve(target, fired.node.clone(), &mut rng).await,
    };
    // Words in groups (`[["holder"], ["redis-1"]]`) name nodes now, as targets do.
    let mut action = fault.action;
    if let Some(groups) = action.groups_mut() {
        let mut resolved = Vec::new();
        for word in words_among(groups.iter().flatten()) {
            resolved.push(reach.resolve(&word, fired.node.clone(), &mut rng).await);
        }
        *groups = resolve_groups(groups, resolved);
    }
    // The fault strikes now, not when its trigger fired: `holder` may have waited for the
    // next grant, and that grant came before the fault.
    reach.recorder.struck(index);
    let applying = apply(action, targets, &reach);
    tokio::pin!(applying);
    // The first poll strikes (pauses, kills, cuts, jumps) before any wait; a client held at
    // a crash point then goes on under the fault, unless the fault killed or froze it.
    // A write held from the replicas goes to them now, if its master still lives.
    let struck = futures::poll!(applying.as_mut());
    if let Some(gate) = fired.gate {
        gate.open();
    }
    if struck.is_pending() {
        drop(fired.held);
        applying.await;
    }
}

/// Injects one (non-random) fault on resolved targets, and undoes it when it has a
/// duration.
async fn apply(action: FaultAction, targets: Vec<String>, reach: &Reach) {
    match action {
        FaultAction::Pause { duration_ms } => process::pause(&targets, duration_ms, reach).await,
        FaultAction::Crash { restart_after_ms } => {
            process::crash(Failure::Process, &targets, restart_after_ms, reach).await
        }
        FaultAction::PowerLoss { restart_after_ms } => {
            process::crash(Failure::Machine, &targets, restart_after_ms, reach).await
        }
        FaultAction::Restart => process::crash(Failure::Process, &targets, Some(0), reach).await,
        FaultAction::ClockJump { by_ms } => clock::jump(&targets, by_ms, reach),
        FaultAction::ClockDrift {
            rate_ppm,
            duration_ms,
        } => clock::drift(&targets, rate_ppm, duration_ms, reach).await,
        FaultAction::Partition {
            groups,
            one_way,
            duration_ms,
        } => network::partition(&groups, one_way, duration_ms, reach).await,
        FaultAction::Heal => network::heal(reach),
        FaultAction::Latency {
            latency_ms,
            groups,
            one_way,
            duration_ms,
        } => {
            let links = groups.map(|groups| network::links_between(&groups, one_way));
            network::degrade(
                Degradation::Latency(latency_ms),
                &targets,
                links,
                duration_ms,
                reach,
            )
            .await
        }
        FaultAction::Loss {
            rate,
            groups,
            one_way,
            duration_ms,
        } => {
            let links = groups.map(|groups| network::links_between(&groups, one_way));
            network::degrade(Degradation::Loss(rate), &targets, links, duration_ms, reach).await
        }
        FaultAction::Reset => network::reset(&targets, reach),
        FaultAction::ReplicationStall { duration_ms } => network::stall(&targets, duration_ms, reach).await,
        FaultAction::Random(_) => unreachable!("the nemesis draws only concrete faults"),
    }
}

/// What fired a fault.
#[derive(Default)]
struct Fired {
    /// The node of the triggering event or step, if any: `holder` means this node.
    node: Option<String>,
    /// A client held at a crash point until the fault has been applied.
    held: Option<steps::Held>,
    /// A master's stream held back from its replicas until the fault has been applied.
    gate: Option<Gate>,
}

/// Waits until the fault's trigger fires.
async fn wait_for(fault: &Fault, reach: &Reach) -> Fired {
    match fault.trigger {
        Trigger::At { at_ms } => {
            sleep_until_true_ms(at_ms).await;
            Fired::default()
        }
        Trigger::On {
            event,
            after_ms,
            delay_ms,
        } => {
            sleep_until_true_ms(after_ms).await;
            let wanted = |kind: &EventKind| match event {
                TriggerEvent::Acquired => matches!(kind, EventKind::Acquired { .. }),
                TriggerEvent::Released => matches!(kind, EventKind::ReleaseSent { .. }),
                TriggerEvent::CrashPoint => unreachable!("crash points trigger `AtStep`"),
                TriggerEvent::WriteBeforeReplication => {
                    unreachable!("a write is not an event of the history")
                }
            };
            if event == TriggerEvent::WriteBeforeReplication {
                let (master, gate) = reach.writes.spring().await;
                sleep_ms(delay_ms).await;
                return Fired {
                    node: Some(master),
                    gate: Some(gate),
                    ..Fired::default()
                };
            }
            let from = reach.recorder.len();
            let event = reach.recorder.next_event(from, |e| wanted(&e.kind)).await;
            sleep_ms(delay_ms).await;
            Fired {
                node: Some(event.node),
                ..Fired::default()
            }
        }
        Trigger::AtStep { step, after_ms } => {
            sleep_until_true_ms(after_ms).await;
            let clients = match &fault.target {
                Some(Target::Nodes(names)) => Some(names.clone()),
                _ => None,
            };
            let (node, held) = reach.steps.spring(step, clients).await;
            Fired {
                node: Some(node),
                held: Some(held),
                ..Fired::default()
            }
        }
    }
}

/// Sleeps until true time `at_ms` since the start of the run.
async fn sleep_until_true_ms(at_ms: u64) {
    let at_ns = at_ms * 1_000_000;
    let now_ns = true_now_ns();
    if at_ns > now_ns {
        madsim::time::sleep(Duration::from_nanos(at_ns - now_ns)).await;
    }
}

/// Sleeps `ms` of true time (0 returns at once).
async fn sleep_ms(ms: u64) {
    if ms > 0 {
        madsim::time::sleep(Duration::from_millis(ms)).await;
    }
}
