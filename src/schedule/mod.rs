//! The fault schedule, written once for the simulator and live mode: when each of a
//! scenario's faults fires (a time, a grant or a release, a crash point, a write before
//! replication), whom it hits (`holder`, `master`, `any-redis`, `majority` … resolved when
//! it strikes, from the fault's own seeded RNG), and how it strikes and ends (durations,
//! restarts, overlapping faults composing by cover).
//!
//! What differs between the modes is only *how* a process is paused or a link cut: madsim
//! node pauses, kills and clogs in the simulated world (`world/faults`), SIGSTOP, SIGKILL
//! and TCP proxies live (`live/faults.rs`). Each mode implements the one small interface
//! [`Backend`] (FoundationDB's single `ISimulator` is the model), and everything above it is
//! here, so a seed strikes the same faults on the same kind of node in both modes, and a
//! new kind of fault is written once.
//!
//! Each kind of fault says in its own file (`scenario/fault_kinds/`) how it strikes, over
//! the schedule's primitives ([`Strike`], implemented here); the primitives are small
//! files too ([`process`]: pause and crash; [`clock`]: jumps and drifts; [`network`]: cuts,
//! latency, loss and resets), beside [`nemesis`] (random faults). Overlapping faults
//! compose by cover ([`cover`]): each fault claims what it covers, a thing is under a kind
//! of fault while any claim covers it, and the last claim to go lifts it (docs/faults.md
//! has the rules for every pair of kinds).

mod clock;
pub mod cover;
mod nemesis;
mod network;
mod process;

pub use crate::scenario::{Degradation, Failure, Link, Scope, links_between};
pub use process::delayed_restart_ms;

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use crate::client::Step;
use crate::history::{EventKind, StruckOn};
use crate::scenario::{
    Candidates, Fault, FaultAction, Scenario, Strike, Target, Trigger, TriggerEvent, resolve_groups,
    resolve_names, words_among,
};
use cover::{Composition, FaultId};

/// The name faults are recorded under in the history.
pub const WORLD: &str = "world";

/// What holds the run until a fault has struck: a client stopped at a step of its lock
/// code, or a master's write kept from its replicas.
pub enum Trap {
    /// The first client (of `clients`, or any) to reach `step`.
    Step {
        step: Step,
        clients: Option<Vec<String>>,
    },
    /// The next write of the lock key a master applies.
    WriteBeforeReplication,
}

/// What the schedule strikes with: one mode's clocks, processes and network. Everything a
/// fault decides (when, whom, how long, how it composes with others) is the schedule's;
/// each method here only does, at once, what it says.
pub trait Backend {
    /// What keeps a trapped client or write waiting until the fault has struck.
    type Hold;

    /// True time since the start of the run, in nanoseconds.
    fn true_ns(&self) -> u64;
    /// Sleeps `duration` of true time.
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
    /// The node of the next event of this kind recorded from now (`acquired`, `released`).
    fn next_event(&self, event: TriggerEvent) -> impl Future<Output = String>;
    /// Arms `trap` and waits until it springs: the node it caught, held there.
    fn spring(&self, trap: Trap) -> impl Future<Output = (String, Self::Hold)>;
    /// Lets a trapped client or write go on.
    fn release(&self, hold: Self::Hold);
    /// The client that holds the lock now, if any (live: once the reports already on their
    /// way have been read).
    fn current_holder(&self) -> impl Future<Output = Option<String>>;
    /// The current master of the group `node` belongs to (of the first group: `None`).
    fn master_of(&self, node: Option<&str>) -> Option<String>;
    /// Every node a random fault may hit, in order.
    fn nodes(&self) -> Vec<String>;
    /// Records an event on `node` now ([`WORLD`] for the faults' own).
    fn record(&self, node: &str, kind: EventKind);
    /// Notes that scheduled fault `index` strikes now, on what.
    fn struck(&self, index: usize, on: StruckOn);
    /// Keeps a fault the nemesis drew, as a scenario file writes it.
    fn drawn(&self, fault: String);
    /// Runs `strike` beside the schedule (a random fault while the nemesis goes on).
    fn spawn(&self, strike: impl Future<Output = ()> + 'static);
    /// Reports a strike that failed (live: a node that would not restart).
    fn failed(&self, error: String);

    /// Freezes a process (its node, in the simulator).
    fn pause(&self, node: &str);
    /// Lets a frozen process go on.
    fn resume(&self, node: &str);
    /// Kills a process (with [`Failure::Machine`], its machine: the page cache too).
    fn kill(&self, node: &str, failure: Failure);
    /// Drops what a node's machine had not written to disk, whether its process lives or not.
    fn lose_page_cache(&self, node: &str);
    /// Starts a killed process again.
    fn restart(&self, node: &str) -> impl Future<Output = Result<(), String>>;
    /// Steps a node's wall clock.
    fn jump_clock(&self, node: &str, by_ms: i64) -> Result<(), String>;
    /// A node's clock rate now, in ppm.
    fn clock_rate_ppm(&self, node: &str) -> i64;
    /// Makes a node's clock run at `rate_ppm`.
    fn set_clock_rate_ppm(&self, node: &str, rate_ppm: i64) -> Result<(), String>;
    /// Stops a link carrying anything.
    fn cut(&self, link: &Link);
    /// Lets a cut link carry again.
    fn mend(&self, link: &Link);
    /// Claims (`on`) or drops fault `id`'s degradation of the messages in `scope`.
    fn degrade(&self, degradation: Degradation, scope: &Scope, id: FaultId, on: bool) -> Result<(), String>;
    /// Closes every connection of the targets.
    fn reset(&self, targets: &[String]);
}

/// The scenario's nodes as the faults name them: clients, masters, every Redis node, the
/// replicas, and how long each Redis node stays down at least.
pub struct Cast {
    pub clients: Vec<String>,
    /// Every group's first master (what `majority` and `minority` pick from).
    pub masters: Vec<String>,
    /// Every Redis node, masters and replicas.
    pub redis: Vec<String>,
    /// The nodes that start as replicas.
    pub replicas: Vec<String>,
    pub restart_delay_ms: BTreeMap<String, u64>,
}

impl Cast {
    pub fn of(scenario: &Scenario) -> Cast {
        let redis = scenario.redis_names();
        Cast {
            clients: scenario.client_names(),
            masters: scenario.master_names(),
            replicas: scenario
                .redis_groups()
                .into_iter()
                .flat_map(|group| group.into_iter().skip(1))
                .collect(),
            restart_delay_ms: redis
                .iter()
                .map(|name| (name.clone(), scenario.restart_delay_ms_of(name)))
                .collect(),
            redis,
        }
    }
}

/// One run's faults over one backend: the cast, and what the faults cover now.
pub struct Schedule<B> {
    pub backend: B,
    cast: Cast,
    covers: Mutex<Composition>,
    /// The id the next fault to strike gets.
    next_fault: AtomicU64,
}

/// What fired a fault.
struct Fired<H> {
    /// The node of the triggering event or trap, if any: `holder` means this node.
    node: Option<String>,
    /// A client held at a crash point (it is the fault's target), or a master's write held
    /// from its replicas, until the fault has struck.
    hold: Option<(H, bool)>,
}

impl<B: Backend + 'static> Schedule<B> {
    pub fn new(backend: B, cast: Cast) -> Self {
        Schedule {
            backend,
            cast,
            covers: Mutex::default(),
            next_fault: AtomicU64::new(0),
        }
    }

    /// A new fault's id.
    fn new_fault(&self) -> FaultId {
        self.next_fault.fetch_add(1, Ordering::Relaxed)
    }

    /// The composition of the faults now.
    fn covers(&self) -> MutexGuard<'_, Composition> {
        self.covers.lock().expect("covers lock poisoned")
    }

    /// Records one of the faults' own events.
    fn record(&self, kind: EventKind) {
        self.backend.record(WORLD, kind);
    }

    /// Sleeps `ms` of true time (0 returns at once).
    async fn sleep_ms(&self, ms: u64) {
        if ms > 0 {
            self.backend.sleep(Duration::from_millis(ms)).await;
        }
    }

    /// Sleeps until true time `at_ms` since the start of the run.
    async fn sleep_until_ms(&self, at_ms: u64) {
        let at_ns = at_ms * 1_000_000;
        let now_ns = self.backend.true_ns();
        if at_ns > now_ns {
            self.backend.sleep(Duration::from_nanos(at_ns - now_ns)).await;
        }
    }

    /// Waits for the trigger of the scenario's fault number `index`, resolves its targets
    /// and strikes it.
    pub async fn run(self: Arc<Self>, index: usize, fault: Fault, mut rng: ChaCha8Rng) {
        let fired = self.fired(&fault).await;
        if let FaultAction::Random(nemesis) = fault.action {
            return nemesis::run(self, index, nemesis, rng).await;
        }
        let mut holder = None;
        let at_step = matches!(fired.hold, Some((_, true)));
        let targets = match (&fault.target, at_step) {
            (None, _) => Vec::new(),
            // A crash point's target is the client that reached the step.
            (Some(_), true) => fired.node.clone().into_iter().collect(),
            (Some(Target::Nodes(names)), false) => {
                let mut resolved = Vec::new();
                for word in words_among(names) {
                    resolved.push(self.resolve(&word, &fired.node, &mut holder, &mut rng).await);
                }
                resolve_names(names, resolved)
            }
            (Some(target), false) => self.resolve(target, &fired.node, &mut holder, &mut rng).await,
        };
        // Words in groups (`[["holder"], ["redis-1"]]`) name nodes now, as targets do.
        let mut action = fault.action;
        if let Some(groups) = action.groups_mut() {
            let mut resolved = Vec::new();
            for word in words_among(groups.iter().flatten()) {
                resolved.push(self.resolve(&word, &fired.node, &mut holder, &mut rng).await);
            }
            *groups = resolve_groups(groups, resolved);
        }
        // The fault strikes now, not when its trigger fired: `holder` may have waited for the
        // next grant, and that grant came before the fault.
        let groups = action.groups_mut().cloned().unwrap_or_default();
        self.backend.struck(
            index,
            StruckOn {
                targets: targets.clone(),
                groups,
                holder,
            },
        );
        let mut applying = pin!(self.apply(action, targets));
        // The first poll strikes (pauses, kills, cuts, jumps) before any wait; a client held
        // at a crash point then goes on under the fault, unless the fault killed or froze
        // it. A write held from the replicas goes to them now, if its master still lives.
        let struck = futures::poll!(applying.as_mut());
        if let Some((hold, _)) = fired.hold {
            self.backend.release(hold);
        }
        let done = match struck {
            std::task::Poll::Ready(done) => done,
            std::task::Poll::Pending => applying.await,
        };
        if let Err(e) = done {
            self.backend.failed(e);
        }
    }

    /// Waits until the fault's trigger fires.
    async fn fired(&self, fault: &Fault) -> Fired<B::Hold> {
        match fault.trigger {
            Trigger::At { at_ms } => {
                self.sleep_until_ms(at_ms).await;
                Fired {
                    node: None,
                    hold: None,
                }
            }
            Trigger::On {
                event: TriggerEvent::WriteBeforeReplication,
                after_ms,
                delay_ms,
            } => {
                self.sleep_until_ms(after_ms).await;
                let (master, hold) = self.backend.spring(Trap::WriteBeforeReplication).await;
                self.sleep_ms(delay_ms).await;
                Fired {
                    node: Some(master),
                    hold: Some((hold, false)),
                }
            }
            Trigger::On {
                event,
                after_ms,
                delay_ms,
            } => {
                self.sleep_until_ms(after_ms).await;
                let node = self.backend.next_event(event).await;
                self.sleep_ms(delay_ms).await;
                Fired {
                    node: Some(node),
                    hold: None,
                }
            }
            Trigger::AtStep { step, after_ms } => {
                self.sleep_until_ms(after_ms).await;
                let clients = match &fault.target {
                    Some(Target::Nodes(names)) => Some(names.clone()),
                    _ => None,
                };
                let (node, hold) = self.backend.spring(Trap::Step { step, clients }).await;
                Fired {
                    node: Some(node),
                    hold: Some((hold, true)),
                }
            }
        }
    }

    /// The nodes a target names now: drawn from `rng` where it draws; `holder` is the node
    /// of the triggering event (`event_node`), else the holder now, else the next client to
    /// acquire (noted in `holder`).
    async fn resolve(
        &self,
        target: &Target,
        event_node: &Option<String>,
        holder: &mut Option<String>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<String> {
        let master = self.backend.master_of(None).unwrap_or_default();
        let candidates = Candidates {
            clients: &self.cast.clients,
            masters: &self.cast.masters,
            redis: &self.cast.redis,
            master: &master,
        };
        if let Some(nodes) = target.draw(&candidates, rng) {
            return nodes;
        }
        let node = match event_node {
            Some(node) => node.clone(),
            None => match self.backend.current_holder().await {
                Some(node) => node,
                None => self.backend.next_event(TriggerEvent::Acquired).await,
            },
        };
        *holder = Some(node.clone());
        vec![node]
    }

    /// Strikes one (non-random) fault on resolved targets, and undoes it when it has a
    /// duration: the kind's own strike ([`FaultAction::strike`]) over this schedule's
    /// primitives.
    async fn apply(&self, action: FaultAction, targets: Vec<String>) -> Result<(), String> {
        action.strike(self, &targets).await
    }

    /// [`apply`](Self::apply), reporting a failure to the backend.
    async fn strike(&self, action: FaultAction, targets: Vec<String>) {
        if let Err(e) = self.apply(action, targets).await {
            self.backend.failed(e);
        }
    }
}

/// The primitives the kinds of fault strike with (`scenario/fault_kinds/`), each written in
/// the file of its kind of fault: [`process`], [`clock`], [`network`].
impl<B: Backend + 'static> Strike for Schedule<B> {
    async fn pause(&self, targets: &[String], duration_ms: u64) {
        Schedule::pause(self, targets, duration_ms).await
    }

    async fn crash(
        &self,
        failure: Failure,
        targets: &[String],
        restart_after_ms: Option<u64>,
    ) -> Result<(), String> {
        Schedule::crash(self, failure, targets, restart_after_ms).await
    }

    fn jump(&self, targets: &[String], by_ms: i64) -> Result<(), String> {
        Schedule::jump(self, targets, by_ms)
    }

    async fn drift(&self, targets: &[String], rate_ppm: i64, duration_ms: Option<u64>) -> Result<(), String> {
        Schedule::drift(self, targets, rate_ppm, duration_ms).await
    }

    async fn cut(&self, links: &[Link], description: &str, duration_ms: Option<u64>) {
        self.cut_for(links, description, duration_ms).await
    }

    fn heal(&self) {
        Schedule::heal(self)
    }

    fn master_of(&self, node: &str) -> Option<String> {
        self.backend.master_of(Some(node))
    }

    async fn degrade(
        &self,
        degradation: Degradation,
        scope: Scope,
        duration_ms: Option<u64>,
    ) -> Result<(), String> {
        Schedule::degrade(self, degradation, scope, duration_ms).await
    }

    fn reset(&self, targets: &[String]) {
        Schedule::reset(self, targets)
    }
}
