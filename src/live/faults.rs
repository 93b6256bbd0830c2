//! The scenario's faults in a live run, struck at their true times: on the proxies
//! (partition, latency, reset), on the processes (pause = SIGSTOP/SIGCONT, crash =
//! SIGKILL and a new start), and on locksim's nodes' clocks (a jump). Each strike and its
//! end go into the history as the simulator records them; targets are drawn from the seed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use tokio::sync::Notify;

use super::failover::{LiveGroup, Route};
use super::nodes::LiveNode;
use super::proxy::Proxy;
use super::recorder::LiveRecorder;
use super::supervisor::{Exited, Supervisor};
use crate::history::EventKind;
use crate::scenario::{
    Candidates, Fault, FaultAction, PersistenceMode, Scenario, Target, Trigger, TriggerEvent, resolve_groups,
    resolve_names, words_among,
};
use crate::world::faults::delayed_restart_ms;

/// The node name faults are recorded on, as the simulator records them.
const WORLD: &str = "world";

/// How often a `holder` target looks for a holder while none holds the lock.
const HOLDER_POLL: Duration = Duration::from_millis(5);

/// One proxied link: a client (a worker, a replica, the failover controller) to a node.
pub struct Link {
    pub client: String,
    pub node: String,
    pub proxy: Proxy,
}

/// Every client–node link of the run.
pub struct Links(pub Vec<Link>);

impl Links {
    /// The links between different groups (from the first group only is not possible on
    /// one TCP connection: a cut link is cut both ways).
    fn between<'a>(&'a self, groups: &'a [Vec<String>]) -> impl Iterator<Item = &'a Link> {
        let group_of = move |name: &str| groups.iter().position(|g| g.iter().any(|n| n == name));
        self.0.iter().filter(move |link| {
            matches!((group_of(&link.client), group_of(&link.node)), (Some(a), Some(b)) if a != b)
        })
    }

    /// The link from `client` to `node`, if the run has one.
    pub fn find(&self, client: &str, node: &str) -> Option<&Link> {
        self.0
            .iter()
            .find(|link| link.client == client && link.node == node)
    }

    /// The links that touch any of `nodes`.
    fn touching<'a>(&'a self, nodes: &'a [String]) -> impl Iterator<Item = &'a Link> {
        self.0
            .iter()
            .filter(move |link| nodes.contains(&link.client) || nodes.contains(&link.node))
    }
}

/// What the faults act on, shared by the tasks striking them.
pub struct Faults {
    pub(super) recorder: LiveRecorder,
    supervisor: RefCell<Supervisor>,
    nodes: RefCell<Vec<LiveNode>>,
    pub(super) links: Links,
    routes: Vec<Route>,
    pub(super) groups: Vec<LiveGroup>,
    /// Each worker's environment, to start it again after a crash.
    workers: BTreeMap<String, Vec<(String, String)>>,
    command: Vec<String>,
    scratch: PathBuf,
    scenario: Scenario,
    /// Woken by a `heal`: partitions without a duration end then.
    healed: Notify,
    /// The first thing that went wrong striking a fault (a node that would not restart).
    error: RefCell<Option<String>>,
}

/// The parts of a live run the faults act on, as the run set them up.
pub struct Parts {
    pub recorder: LiveRecorder,
    pub supervisor: Supervisor,
    pub nodes: Vec<LiveNode>,
    pub links: Links,
    pub routes: Vec<Route>,
    pub groups: Vec<LiveGroup>,
    pub workers: BTreeMap<String, Vec<(String, String)>>,
    pub command: Vec<String>,
    pub scratch: PathBuf,
    pub scenario: Scenario,
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
    match &fault.action {
        FaultAction::Pause { .. } if names_redis && !redis_server => {
            Err("pausing a Redis node needs --redis-server (locksim's nodes run inside locksim)".into())
        }
        FaultAction::PowerLoss { .. }
            if redis_server
                && scenario
                    .redis_names()
                    .iter()
                    .any(|n| matches!(scenario.persistence_of(n), PersistenceMode::AofEverysec | PersistenceMode::AofNo)) =>
        {
            Err("a power loss on redis-server: its AOF's page cache outlives a killed process (locksim's nodes lose it)".into())
        }
        FaultAction::ClockJump { .. } if names_client => Err(
            "a live clock jump steps the Redis nodes' clocks only (a worker's clock is its host's)".into(),
        ),
        FaultAction::Partition { one_way: true, .. } | FaultAction::Latency { one_way: true, .. } => {
            Err("live links are cut or slowed both ways (`one_way` does not run live yet)".into())
        }
        FaultAction::Pause { .. }
        | FaultAction::Crash { .. }
        | FaultAction::PowerLoss { .. }
        | FaultAction::Restart
        | FaultAction::ClockJump { .. }
        | FaultAction::Partition { .. }
        | FaultAction::Heal
        | FaultAction::Latency { .. }
        | FaultAction::Reset
        | FaultAction::ReplicationStall { .. } => Ok(()),
        other => Err(format!("`{}` does not run live yet", other.kind())),
    }
}

/// Whether `fault` strikes before the run's workers are let through: due at 0 ms on
/// targets known without waiting (not `holder`, which waits for a grant).
pub fn strikes_at_start(fault: &Fault) -> bool {
    let holder = |name: &String| name == "holder";
    let names_holder = match (&fault.target, &fault.action) {
        (Some(Target::Holder), _) => true,
        (Some(Target::Nodes(names)), _) if names.iter().any(holder) => true,
        (
            _,
            FaultAction::Partition { groups, .. }
            | FaultAction::Latency {
                groups: Some(groups), ..
            }
            | FaultAction::Loss {
                groups: Some(groups), ..
            },
        ) => groups.iter().flatten().any(holder),
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
            links: parts.links,
            routes: parts.routes,
            groups: parts.groups,
            workers: parts.workers,
            command: parts.command,
            scratch: parts.scratch,
            scenario: parts.scenario,
            healed: Notify::new(),
            error: RefCell::new(None),
        }
    }

    /// Points every worker's route to group `index` at its proxy to the group's master.
    pub(super) fn redirect_routes(&self, index: usize) {
        let master = self.groups[index].master_name();
        for route in self.routes.iter().filter(|r| r.group == index) {
            if let Some(link) = self.links.find(&route.client, master) {
                route.proxy.redirect(link.proxy.addr);
            }
        }
    }

    /// Where replica `from` reaches `to` as its master: its replication proxy.
    pub(super) fn replication_proxy(&self, from: &str, to: &str) -> Option<std::net::SocketAddr> {
        let redis = self.scenario.redis_names();
        let is_redis = |name: &str| redis.iter().any(|n| n == name);
        (is_redis(from) && is_redis(to))
            .then(|| self.links.find(from, to).map(|link| link.proxy.addr))
            .flatten()
    }

    /// A process that ended on its own, if any.
    pub fn exited(&self) -> Option<Exited> {
        self.supervisor.borrow_mut().exited()
    }

    /// The first error a fault met, if any.
    pub fn error(&self) -> Option<String> {
        self.error.borrow().clone()
    }

    fn record(&self, kind: EventKind) {
        self.recorder.record(WORLD, kind);
    }

    /// Waits for the fault's time, resolves its targets and strikes.
    pub async fn strike(self: Rc<Self>, index: usize, fault: Fault, mut rng: ChaCha8Rng) {
        let event_node = self.triggered(&fault.trigger).await;
        // `holder` is the client whose event fired the fault; words in a list target or
        // in groups (`[["holder"], ["redis-1"]]`) name nodes as a whole target would.
        let targets = match &fault.target {
            None => Vec::new(),
            Some(Target::Nodes(names)) => {
                let mut resolved = Vec::new();
                for word in words_among(names) {
                    resolved.push(self.resolve_word(&word, &event_node, &mut rng).await);
                }
                resolve_names(names, resolved)
            }
            Some(target) => self.resolve_word(target, &event_node, &mut rng).await,
        };
        let mut action = fault.action;
        if let Some(groups) = action.groups_mut() {
            let mut resolved = Vec::new();
            for word in words_among(groups.iter().flatten()) {
                resolved.push(self.resolve_word(&word, &event_node, &mut rng).await);
            }
            *groups = resolve_groups(groups, resolved);
        }
        self.recorder.struck(index);
        if let Err(e) = self.apply(action, &targets).await {
            self.error.borrow_mut().get_or_insert(e);
        }
    }

    /// Waits until `trigger` fires, as the simulator's faults wait: at a true time, or on
    /// the first event of its kind at or after `after_ms`, then `delay_ms` later. Returns
    /// the node of the event that fired it.
    async fn triggered(&self, trigger: &Trigger) -> Option<String> {
        // A time already come does not wait (not even for the timer's next tick): a fault
        // due at 0 ms strikes in the poll that starts it, before the workers' links open.
        let until_true_ms = |ms: u64| async move {
            let left_us = (ms * 1000).saturating_sub(self.recorder.true_us());
            if left_us > 0 {
                tokio::time::sleep(Duration::from_micros(left_us)).await;
            }
        };
        match *trigger {
            Trigger::At { at_ms } => {
                until_true_ms(at_ms).await;
                None
            }
            Trigger::On {
                event,
                after_ms,
                delay_ms,
            } => {
                until_true_ms(after_ms).await;
                let from = self.recorder.events_so_far();
                let event = self
                    .recorder
                    .next_event(from, |e| match event {
                        TriggerEvent::Acquired => matches!(e.kind, EventKind::Acquired { .. }),
                        TriggerEvent::Released => matches!(e.kind, EventKind::ReleaseSent { .. }),
                        TriggerEvent::CrashPoint | TriggerEvent::WriteBeforeReplication => false,
                    })
                    .await;
                sleep_ms(delay_ms).await;
                Some(event.node)
            }
            // Refused by `supported`: a crash point stops the client at a step of its
            // lock code, which a live worker's code does not report.
            Trigger::AtStep { .. } => std::future::pending().await,
        }
    }

    /// The nodes `target` names now; `holder` is the client of the event that fired the
    /// fault, if an event did.
    async fn resolve_word(
        &self,
        target: &Target,
        event_node: &Option<String>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<String> {
        match (target, event_node) {
            (Target::Holder, Some(node)) => vec![node.clone()],
            (target, _) => self.resolve(target, rng).await,
        }
    }

    async fn resolve(&self, target: &Target, rng: &mut ChaCha8Rng) -> Vec<String> {
        let (clients, masters, redis) = (
            self.scenario.client_names(),
            self.scenario.master_names(),
            self.scenario.redis_names(),
        );
        let candidates = Candidates {
            clients: &clients,
            masters: &masters,
            redis: &redis,
            master: self.groups[0].master_name(),
        };
        if let Some(nodes) = target.draw(&candidates, rng) {
            return nodes;
        }
        loop {
            if let Some(holder) = self.recorder.current_holder() {
                return vec![holder];
            }
            tokio::time::sleep(HOLDER_POLL).await;
        }
    }

    async fn apply(&self, action: FaultAction, targets: &[String]) -> Result<(), String> {
        let who = targets.join(",");
        match action {
            FaultAction::Pause { duration_ms } => {
                let description = format!("pause {who} for {duration_ms} ms");
                self.record(EventKind::FaultStarted {
                    fault: description.clone(),
                });
                for name in targets {
                    self.supervisor.borrow().pause(name);
                    self.recorder.record(name, EventKind::Paused);
                }
                sleep_ms(duration_ms).await;
                for name in targets {
                    self.supervisor.borrow().resume(name);
                    self.recorder.record(name, EventKind::Resumed);
                }
                self.record(EventKind::FaultEnded { fault: description });
            }
            // A restart is a crash and a start at once, as in the simulator: both wait out
            // a Redis node's `restart_delay_ms` before it serves again.
            FaultAction::Crash { .. } | FaultAction::PowerLoss { .. } | FaultAction::Restart => {
                let (power_loss, restart_after_ms) = match action {
                    FaultAction::PowerLoss { restart_after_ms } => (true, restart_after_ms),
                    FaultAction::Crash { restart_after_ms } => (false, restart_after_ms),
                    _ => (false, Some(0)),
                };
                let redis = self.scenario.redis_names();
                let restart_after_ms = restart_after_ms.map(|ms| {
                    delayed_restart_ms(ms, targets, |name| {
                        redis
                            .iter()
                            .any(|n| n == name)
                            .then(|| self.scenario.restart_delay_ms_of(name))
                    })
                });
                let what = if power_loss { "power loss of" } else { "crash" };
                let description = match restart_after_ms {
                    None => format!("{what} {who}"),
                    Some(ms) => format!("{what} {who}, restart after {ms} ms"),
                };
                self.record(EventKind::FaultStarted {
                    fault: description.clone(),
                });
                for name in targets {
                    self.crash(name, power_loss);
                }
                if let Some(after_ms) = restart_after_ms {
                    sleep_ms(after_ms).await;
                    for name in targets {
                        self.restart(name).await?;
                    }
                    self.record(EventKind::FaultEnded { fault: description });
                }
            }
            FaultAction::ClockJump { by_ms } => {
                self.record(EventKind::FaultStarted {
                    fault: format!("clock jump {who} by {by_ms} ms"),
                });
                for node in self.nodes.borrow().iter().filter(|n| targets.contains(&n.name)) {
                    node.jump_clock(by_ms)
                        .map_err(|e| format!("stepping {}'s clock: {e}", node.name))?;
                }
            }
            FaultAction::Partition {
                groups, duration_ms, ..
            } => {
                let description = format!("partition {groups:?}");
                self.record(EventKind::FaultStarted {
                    fault: description.clone(),
                });
                let cut: Vec<&Link> = self.links.between(&groups).collect();
                for link in &cut {
                    link.proxy.cut();
                    self.recorder.record(
                        &link.client,
                        EventKind::LinkCut {
                            to: link.node.clone(),
                        },
                    );
                }
                self.until_healed(duration_ms).await;
                for link in &cut {
                    link.proxy.heal();
                    self.recorder.record(
                        &link.client,
                        EventKind::LinkHealed {
                            to: link.node.clone(),
                        },
                    );
                }
                self.record(EventKind::FaultEnded { fault: description });
            }
            FaultAction::Heal => {
                self.record(EventKind::FaultStarted { fault: "heal".into() });
                self.healed.notify_waiters();
            }
            FaultAction::Latency {
                latency_ms,
                groups,
                duration_ms,
                ..
            } => {
                let description = format!(
                    "latency {latency_ms:?} ms on {}",
                    groups.as_ref().map_or(who.clone(), |g| format!("{g:?}"))
                );
                self.record(EventKind::FaultStarted {
                    fault: description.clone(),
                });
                let slowed: Vec<&Link> = match (&groups, targets.is_empty()) {
                    (Some(groups), _) => self.links.between(groups).collect(),
                    (None, false) => self.links.touching(targets).collect(),
                    (None, true) => self.links.0.iter().collect(),
                };
                for link in &slowed {
                    link.proxy.update(|f| f.latencies_ms.push(latency_ms));
                }
                let Some(ms) = duration_ms else { return Ok(()) };
                sleep_ms(ms).await;
                for link in &slowed {
                    link.proxy.update(|f| {
                        if let Some(at) = f.latencies_ms.iter().position(|l| *l == latency_ms) {
                            f.latencies_ms.remove(at);
                        }
                    });
                }
                self.record(EventKind::FaultEnded { fault: description });
            }
            FaultAction::ReplicationStall { duration_ms } => {
                let description = format!("replication to {who} stalls");
                // Each target replica's link to its group's master now.
                let stalled: Vec<(&str, &Link)> = targets
                    .iter()
                    .filter_map(|replica| {
                        let group = self.groups.iter().find(|g| g.names.contains(replica))?;
                        let master = group.master_name();
                        Some((master, self.links.find(replica, master)?))
                    })
                    .collect();
                for (master, link) in &stalled {
                    link.proxy.update(|f| f.stalls += 1);
                    let to = link.client.clone();
                    self.recorder.record(master, EventKind::LinkCut { to });
                }
                self.record(EventKind::FaultStarted {
                    fault: description.clone(),
                });
                self.until_healed(duration_ms).await;
                for (master, link) in &stalled {
                    link.proxy.update(|f| f.stalls = f.stalls.saturating_sub(1));
                    let to = link.client.clone();
                    self.recorder.record(master, EventKind::LinkHealed { to });
                }
                self.record(EventKind::FaultEnded { fault: description });
            }
            FaultAction::Reset => {
                self.record(EventKind::FaultStarted {
                    fault: format!("reset {who}"),
                });
                for link in self.links.touching(targets) {
                    link.proxy.reset();
                }
            }
            other => return Err(format!("`{}` does not run live", other.kind())),
        }
        Ok(())
    }

    /// Waits `duration_ms`, or for good when `None`, unless a `heal` comes first.
    async fn until_healed(&self, duration_ms: Option<u64>) {
        let healed = self.healed.notified();
        match duration_ms {
            Some(ms) => tokio::select! {
                biased;
                () = healed => {},
                () = sleep_ms(ms) => {},
            },
            None => healed.await,
        }
    }

    /// Kills a worker or a Redis node (with `power_loss`, also its AOF's page cache).
    fn crash(&self, name: &str, power_loss: bool) {
        let mut supervisor = self.supervisor.borrow_mut();
        match self.nodes.borrow_mut().iter_mut().find(|n| n.name == name) {
            Some(node) => node.crash(&mut supervisor, power_loss),
            None => supervisor.kill(name),
        }
        self.recorder.record(name, EventKind::Crashed);
    }

    /// Starts a crashed worker or Redis node again.
    async fn restart(&self, name: &str) -> Result<(), String> {
        let index = self.nodes.borrow().iter().position(|n| n.name == name);
        match index {
            Some(index) => {
                // Taken out while it restarts: no borrow of the list lives across the wait.
                let mut node = self.nodes.borrow_mut().remove(index);
                let restarted = node.restart(&self.scratch, &self.supervisor).await;
                let addr = node.addr;
                self.nodes.borrow_mut().insert(index, node);
                restarted.map_err(|e| format!("restarting {name}: {e}"))?;
                // It comes back in the role its configuration gives it (the controller's
                // last REPLICAOF, which Sentinel follows with CONFIG REWRITE): an old master
                // that was down at the failover comes back a master.
                if let Some(master) = self.groups.iter().find_map(|g| g.configured_master_of(name))
                    && let Some(via) = self.replication_proxy(name, master)
                {
                    super::failover::replicaof(addr, via)
                        .await
                        .map_err(|e| format!("restarting {name} as a replica: {e}"))?;
                }
            }
            None => {
                let vars = &self.workers[name];
                self.supervisor
                    .borrow_mut()
                    .start(name, &self.command, vars)
                    .map_err(|e| e.to_string())?;
            }
        }
        self.recorder.record(name, EventKind::Restarted);
        Ok(())
    }
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
