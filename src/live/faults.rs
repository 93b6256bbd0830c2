//! Live mode's side of the fault schedule: how a fault strikes on real processes and
//! sockets. When each fault fires, whom it hits and how it strikes, ends and composes with
//! others are the shared schedule's ([`crate::schedule`]); this is its [`Backend`] for a
//! live run: the proxies (partition, stall, latency, reset), the processes (pause =
//! SIGSTOP/SIGCONT, crash = SIGKILL and a new start), and locksim's nodes' clocks (a
//! jump). Each strike and its end go into the history as the simulator records them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use super::nodes::LiveNode;
use super::recorder::LiveRecorder;
use super::supervisor::{Exited, Supervisor};
use super::topology::{LiveTopology, replicaof};
use crate::history::{EventKind, StruckOn};
use crate::scenario::{Fault, LiveCheck, PersistenceMode, Scenario, Target, Trigger, TriggerEvent};
use crate::schedule::cover::FaultId;
use crate::schedule::{Backend, Degradation, Failure, Link, Scope, Trap};

/// What the faults act on in a live run.
pub struct Faults {
    recorder: LiveRecorder,
    supervisor: RefCell<Supervisor>,
    nodes: RefCell<Vec<LiveNode>>,
    topology: Rc<LiveTopology>,
    /// Each worker's environment, to start it again after a crash.
    workers: BTreeMap<String, Vec<(String, String)>>,
    command: Vec<String>,
    scratch: PathBuf,
    /// The first thing that went wrong striking a fault (a node that would not restart).
    error: RefCell<Option<String>>,
}

/// The parts of a live run the faults act on, as the run set them up.
pub struct Parts {
    pub recorder: LiveRecorder,
    pub supervisor: Supervisor,
    pub nodes: Vec<LiveNode>,
    pub topology: Rc<LiveTopology>,
    pub workers: BTreeMap<String, Vec<(String, String)>>,
    pub command: Vec<String>,
    pub scratch: PathBuf,
}

/// Whether live mode can strike `fault`; `Err` says why not.
pub fn supported(scenario: &Scenario, fault: &Fault, redis_server: bool) -> Result<(), String> {
    match fault.trigger {
        Trigger::At { .. }
        | Trigger::On {
            event: TriggerEvent::Acquired | TriggerEvent::Released,
            ..
        } => {}
        Trigger::On {
            event: TriggerEvent::WriteBeforeReplication,
            ..
        } => {
            return Err("`on: write_before_replication` needs the master to hold a write back from its replicas, which a live node does not do (a `partition` or `replication_stall` of the replica before an `on: acquired` fault does the same live)".into());
        }
        Trigger::On { .. } | Trigger::AtStep { .. } => {
            return Err("crash points stop a client at a step of its lock code, which a live worker does not report; live faults strike at a time or `on: acquired` / `on: released`".into());
        }
    }
    let redis = scenario.redis_names();
    // A word in a list (`["holder", "redis-2"]`) names what the whole target would.
    let is_redis = |target: &Target| {
        matches!(
            target,
            Target::Master | Target::AnyRedis | Target::Majority | Target::Minority
        )
    };
    let names_redis = match &fault.target {
        Some(Target::Nodes(names)) => names
            .iter()
            .any(|n| redis.contains(n) || Target::word(n).is_some_and(|w| is_redis(&w))),
        Some(target) => is_redis(target),
        None => false,
    };
    let names_client = match &fault.target {
        Some(Target::Nodes(names)) => names
            .iter()
            .any(|n| Target::word(n).map_or(!redis.contains(n), |w| !is_redis(&w))),
        Some(target) => !is_redis(target),
        None => false,
    };
    let cached_aof = scenario.redis_names().iter().any(|n| {
        matches!(
            scenario.persistence_of(n),
            PersistenceMode::AofEverysec | PersistenceMode::AofNo
        )
    });
    fault.action.runs_live(&LiveCheck {
        names_redis,
        names_client,
        redis_server,
        cached_aof,
    })
}

/// Whether `fault` strikes before the run's workers are let through: due at 0 ms on
/// targets known without waiting (not `holder`, which waits for a grant).
pub fn strikes_at_start(fault: &Fault) -> bool {
    let holder = |name: &String| name == "holder";
    let mut action = fault.action.clone();
    let names_holder = match (&fault.target, action.groups_mut()) {
        (Some(Target::Holder), _) => true,
        (Some(Target::Nodes(names)), _) if names.iter().any(holder) => true,
        (_, Some(groups)) => groups.iter().flatten().any(holder),
        _ => false,
    };
    matches!(fault.trigger, Trigger::At { at_ms: 0 }) && !names_holder
}

impl Faults {
    pub fn new(parts: Parts) -> Self {
        Faults {
            recorder: parts.recorder,
            supervisor: RefCell::new(parts.supervisor),
            nodes: RefCell::new(parts.nodes),
            topology: parts.topology,
            workers: parts.workers,
            command: parts.command,
            scratch: parts.scratch,
            error: RefCell::new(None),
        }
    }

    /// A process that ended on its own, if any.
    pub fn exited(&self) -> Option<Exited> {
        self.supervisor.borrow_mut().exited()
    }

    /// The first error a fault met, if any.
    pub fn error(&self) -> Option<String> {
        self.error.borrow().clone()
    }

    /// Changes the faults of the proxy from `client` to `node`, if the run has one.
    fn on_proxy(&self, client: &str, node: &str, change: impl FnOnce(&mut super::proxy::LinkFaults)) {
        if let Some(link) = self.topology.links.find(client, node) {
            link.proxy.update(change);
        }
    }
}

/// The runtime's turns a report sent now needs to be recorded (one per hop, proxy then
/// resource), and one to spare.
const REPORT_HOPS: usize = 3;

impl Backend for Faults {
    /// Live mode sets no traps (`supported` refuses crash points and held writes).
    type Hold = std::convert::Infallible;

    fn true_ns(&self) -> u64 {
        self.recorder.true_us() * 1000
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn next_event(&self, event: TriggerEvent) -> String {
        let from = self.recorder.events_so_far();
        let wanted = move |kind: &EventKind| match event {
            TriggerEvent::Acquired => matches!(kind, EventKind::Acquired { .. }),
            TriggerEvent::Released => matches!(kind, EventKind::ReleaseSent { .. }),
            TriggerEvent::CrashPoint | TriggerEvent::WriteBeforeReplication => false,
        };
        self.recorder
            .next_event(from, |e| wanted(&e.kind))
            .await
            .node
            .to_string()
    }

    /// Refused by `supported`: a crash point stops the client at a step of its lock code,
    /// which a live worker's code does not report, and a live node holds no write back.
    async fn spring(&self, _trap: Trap) -> (String, Self::Hold) {
        std::future::pending().await
    }

    fn release(&self, hold: Self::Hold) {
        match hold {}
    }

    /// The holder by the workers' reports, once those already sent have been read. A report
    /// goes through a proxy to the resource, tasks on this thread that the schedule's timer
    /// can come before: without the wait, a worker that had just said it let the lock go
    /// was still named, and a pause aimed at the holder froze a worker outside its critical
    /// section (3 runs in 60 of one scenario, on a loaded machine). Each yield lets the
    /// runtime poll its sockets and run the tasks they woke: the proxy forwards the report,
    /// then the resource records it.
    async fn current_holder(&self) -> Option<String> {
        for _ in 0..REPORT_HOPS {
            tokio::task::yield_now().await;
        }
        self.recorder.current_holder()
    }

    fn master_of(&self, node: Option<&str>) -> Option<String> {
        let groups = &self.topology.groups;
        let group = match node {
            None => groups.first(),
            Some(node) => groups.iter().find(|g| g.names.iter().any(|n| n == node)),
        };
        group.map(|group| group.master_name().to_string())
    }

    fn nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = self.workers.keys().cloned().collect();
        nodes.extend(self.nodes.borrow().iter().map(|node| node.name.clone()));
        nodes.sort();
        nodes
    }

    fn record(&self, node: &str, kind: EventKind) {
        self.recorder.record(node, kind);
    }

    fn struck(&self, index: usize, on: StruckOn) {
        self.recorder.struck(index, on);
    }

    fn drawn(&self, fault: String) {
        self.recorder.drawn(fault);
    }

    fn spawn(&self, strike: impl Future<Output = ()> + 'static) {
        tokio::task::spawn_local(strike);
    }

    fn failed(&self, error: String) {
        self.error.borrow_mut().get_or_insert(error);
    }

    fn pause(&self, node: &str) {
        self.supervisor.borrow().pause(node);
    }

    fn resume(&self, node: &str) {
        self.supervisor.borrow().resume(node);
    }

    /// Kills a worker or a Redis node (a machine's failure also loses its AOF's page
    /// cache, with the process).
    fn kill(&self, node: &str, failure: Failure) {
        let mut supervisor = self.supervisor.borrow_mut();
        match self.nodes.borrow_mut().iter_mut().find(|n| n.name == node) {
            Some(live) => live.crash(&mut supervisor, failure == Failure::Machine),
            None => supervisor.kill(node),
        }
    }

    /// A live node loses its page cache as it is killed ([`kill`](Self::kill)); one
    /// already down has nothing left to lose.
    fn lose_page_cache(&self, _node: &str) {}

    /// Starts a crashed worker or Redis node again.
    async fn restart(&self, name: &str) -> Result<(), String> {
        let index = self.nodes.borrow().iter().position(|n| n.name == name);
        let Some(index) = index else {
            let vars = &self.workers[name];
            return self
                .supervisor
                .borrow_mut()
                .start(name, &self.command, vars)
                .map_err(|e| e.to_string());
        };
        // Taken out while it restarts: no borrow of the list lives across the wait.
        let mut node = self.nodes.borrow_mut().remove(index);
        let restarted = node.restart(&self.scratch, &self.supervisor).await;
        let addr = node.addr;
        self.nodes.borrow_mut().insert(index, node);
        restarted.map_err(|e| format!("restarting {name}: {e}"))?;
        // It comes back in the role its configuration gives it (the controller's last
        // REPLICAOF, which Sentinel follows with CONFIG REWRITE): an old master that was
        // down at the failover comes back a master.
        let topology = &self.topology;
        if let Some(master) = topology.groups.iter().find_map(|g| g.configured_master_of(name))
            && let Some(via) = topology.replication_proxy(name, master)
        {
            replicaof(addr, via)
                .await
                .map_err(|e| format!("restarting {name} as a replica: {e}"))?;
        }
        Ok(())
    }

    /// Steps a locksim node's clock (a worker's clock is its host's: `supported` refuses).
    fn jump_clock(&self, node: &str, by_ms: i64) -> Result<(), String> {
        let nodes = self.nodes.borrow();
        let Some(live) = nodes.iter().find(|n| n.name == node) else {
            return Ok(());
        };
        live.jump_clock(by_ms)
            .map_err(|e| format!("stepping {node}'s clock: {e}"))
    }

    fn clock_rate_ppm(&self, _node: &str) -> i64 {
        0
    }

    fn set_clock_rate_ppm(&self, node: &str, _rate_ppm: i64) -> Result<(), String> {
        Err(format!("{node}: a clock drift does not run live"))
    }

    /// The link from → to carries nothing: the proxy from `from` to `to` holds its bytes
    /// both ways (one TCP connection cannot be cut one way), and the proxy from `to` to
    /// `from` holds what comes back from `from` (a replica's stream from its master).
    fn cut(&self, (from, to): &Link) {
        self.on_proxy(from, to, |f| f.cuts += 1);
        self.on_proxy(to, from, |f| f.stalls += 1);
    }

    fn mend(&self, (from, to): &Link) {
        self.on_proxy(from, to, |f| f.cuts = f.cuts.saturating_sub(1));
        self.on_proxy(to, from, |f| f.stalls = f.stalls.saturating_sub(1));
    }

    /// Latency on the proxies in scope, never a worker's link to the resource
    /// ([`Link::on_the_network`](super::topology::Link::on_the_network); loss does not run
    /// live: `supported` refuses it).
    fn degrade(&self, degradation: Degradation, scope: &Scope, _id: FaultId, on: bool) -> Result<(), String> {
        let Degradation::Latency(latency_ms) = degradation else {
            return Err("packet loss does not run live".into());
        };
        let links = &self.topology.links;
        let slowed: Vec<&super::topology::Link> = match scope {
            Scope::Links(pairs) => pairs
                .iter()
                .filter_map(|(from, to)| links.find(from, to))
                .collect(),
            Scope::Nodes(nodes) => links.touching(nodes).collect(),
            Scope::Everywhere => links.on_the_network().collect(),
        };
        for link in slowed {
            link.proxy.update(|f| match on {
                true => f.latencies_ms.push(latency_ms),
                false => {
                    if let Some(at) = f.latencies_ms.iter().position(|l| *l == latency_ms) {
                        f.latencies_ms.remove(at);
                    }
                }
            });
        }
        Ok(())
    }

    /// Resets the targets' connections on the network (not a worker's to the resource).
    fn reset(&self, targets: &[String]) {
        for link in self.topology.links.touching(targets) {
            link.proxy.reset();
        }
    }
}
