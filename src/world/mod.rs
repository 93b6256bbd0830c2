//! One seeded run of a scenario: builds the simulated nodes, lets them run for the
//! scenario's duration under its faults, and returns the history.
//!
//! Every random choice of a run comes from its seed: madsim's own generator (network
//! latency, scheduling) and the world's ChaCha generator (clocks, per-client seeds).
//! Nothing here reads the host's clock or iterates an unordered map.

pub mod clock;
pub mod draws;
pub mod events;
pub mod failover;
pub mod faults;
pub mod key_watch;
pub mod net;
pub mod recorder;
pub mod sentinel;
pub mod topology;
pub mod workload;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use madsim::runtime::{Handle, Runtime};
use madsim::task::NodeId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use self::clock::{ClockModel, SimClock};
use self::draws::{ClockDraw, Draws};
use self::failover::SENTINEL;
use self::faults::{Reach, StepTraps, WriteTraps};
use self::net::{Nic, REDIS_PORT};
use self::recorder::Recorder;
use self::sentinel::Sentinel;
use self::sentinel::discovery::SentinelRoute;
use self::topology::Group;
use self::workload::{ClientProcess, LOCK_KEY, Register, Route};
use crate::client::Fencing;
use crate::history::{History, WireRecord};
use crate::scenario::Scenario;
use crate::schedule::{Cast, Schedule};

pub use crate::scenario::FENCE_COUNTER;
const FENCE_COUNTER_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 1));

/// The failover controller's address.
const SENTINEL_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));

/// Runs one seed of a scenario on the current thread and returns its history.
///
/// Run seeds one at a time on a thread, as `crate::sweep` does (on long-lived threads:
/// see `crate::seed_thread` for why a thread may run seed after seed): madsim's runtime
/// state is thread-local. [`events::take`] afterwards, on the same
/// thread, says how many events the run processed; a run past the scenario's event
/// budget panics.
pub fn run(scenario: &Arc<Scenario>, seed: u64) -> History {
    run_recording(scenario, seed, Recorder::default())
}

/// [`run`], keeping every frame the clients wrote and read too (`replay --commands`).
/// Watching the wire is passive: the history is the one [`run`] returns.
pub fn run_keeping_wire(scenario: &Arc<Scenario>, seed: u64) -> (History, Vec<WireRecord>) {
    let recorder = Recorder::keeping_wire();
    let history = run_recording(scenario, seed, recorder.clone());
    (history, recorder.take_wire())
}

fn run_recording(scenario: &Arc<Scenario>, seed: u64, recorder: Recorder) -> History {
    events::start(scenario.event_budget());
    let runtime = Runtime::with_seed_and_config(seed, net::net_config(&scenario.network));
    runtime.block_on(build_and_run(scenario.clone(), seed, recorder))
}

/// The nodes of a run as they are created: madsim's id, the address, the clock and the
/// network interface of each, by name (what the fault injector reaches them by).
struct Nodes {
    handle: Handle,
    ids: BTreeMap<String, NodeId>,
    ips: BTreeMap<String, IpAddr>,
    clocks: BTreeMap<String, SimClock>,
    nics: BTreeMap<String, Nic>,
}

impl Nodes {
    fn new(handle: Handle) -> Self {
        Nodes {
            handle,
            ids: BTreeMap::new(),
            ips: BTreeMap::new(),
            clocks: BTreeMap::new(),
            nics: BTreeMap::new(),
        }
    }

    /// Creates node `name` at `ip`, reading `clock`, whose streams are on `nic`, that runs
    /// `start()` when it starts and again at each restart.
    fn add<F: Future + 'static>(
        &mut self,
        name: &str,
        ip: IpAddr,
        clock: SimClock,
        nic: Nic,
        start: impl Fn() -> F + Send + Sync + 'static,
    ) {
        // Each start's future boxed: madsim's task is then small, and spawning it at every
        // (re)start copies a pointer rather than the node's whole future.
        let start = move || Box::pin(start());
        let node = self.handle.create_node().name(name).ip(ip).init(start).build();
        nic.attach(node.id());
        self.ids.insert(name.to_string(), node.id());
        self.ips.insert(name.to_string(), ip);
        self.clocks.insert(name.to_string(), clock);
        self.nics.insert(name.to_string(), nic);
    }
}

async fn build_and_run(scenario: Arc<Scenario>, seed: u64, recorder: Recorder) -> History {
    let handle = Handle::current();
    let draws = Draws::of(&scenario, seed);
    let mut redis_clocks = draws.redis_clocks.into_iter();
    let mut client_draws = draws.clients.into_iter();
    let mut sentinel_draws = draws.sentinels.into_iter();
    let resource = Register::default();
    let mut nodes = Nodes::new(handle.clone());
    let steps = StepTraps::default();
    let writes = WriteTraps::default();

    let groups: Vec<Group> = scenario
        .redis_groups()
        .into_iter()
        .enumerate()
        .map(|(i, names)| Group::new(i, names, &scenario))
        .collect();
    // The Redis key the lock lives in, as the clients' protocol names it.
    let lock_key = scenario.lock.options().protocol.redis_key(LOCK_KEY);
    for group in &groups {
        for (index, name) in group.names.iter().enumerate() {
            let clock = new_clock(redis_clocks.next().expect("a clock per Redis node"), &scenario);
            let (group_of_node, node_clock, node_recorder) = (group.clone(), clock.clone(), recorder.clone());
            let (hook, node_name, node_key) = (writes.hook(name, &lock_key), name.clone(), lock_key.clone());
            nodes.add(
                name,
                group.addrs[index].ip(),
                clock,
                group.nics[index].clone(),
                move || {
                    // Each incarnation watches its keys afresh: a restart starts empty.
                    let watch = key_watch::key_watch(
                        &node_name,
                        node_key.clone(),
                        node_clock.clone(),
                        node_recorder.clone(),
                    );
                    group_of_node
                        .clone()
                        .serve(index, node_clock.clone(), Some(hook.clone()), Some(watch))
                },
            );
        }
    }
    let sentinel_settings = scenario.sentinel();
    let sentinels: Vec<SocketAddr> = (0..sentinel_settings.map_or(0, |s| s.count as usize))
        .map(sentinel::address)
        .collect();
    let redis: Vec<Route> = groups
        .iter()
        .map(|group| match group.names.len() > 1 && !sentinels.is_empty() {
            false => Route::Direct(group.address.clone()),
            true => Route::Sentinel(SentinelRoute {
                master_name: group.names[0].clone(),
                first_master: group.addrs[0],
                sentinels: sentinels.clone(),
            }),
        })
        .collect();
    let redis_nodes = Arc::new(
        groups
            .iter()
            .flat_map(|group| group.names.iter().zip(&group.addrs))
            .map(|(name, addr)| {
                (
                    *addr,
                    (
                        recorder.name(name),
                        nodes.clocks[name].clone(),
                        nodes.nics[name].clone(),
                    ),
                )
            })
            .collect(),
    );
    let fence_counter = (scenario.lock.options().fencing == Fencing::Counter).then(|| {
        // A single node that never fails over: INCR there never hands out a number twice.
        let clock = new_clock(draws.counter_clock.expect("a clock for the counter"), &scenario);
        let addr = SocketAddr::new(FENCE_COUNTER_IP, REDIS_PORT);
        let (counter, node_clock) = (Group::standalone(FENCE_COUNTER, addr), clock.clone());
        let nic = counter.nics[0].clone();
        nodes.add(FENCE_COUNTER, FENCE_COUNTER_IP, clock, nic, move || {
            counter.clone().serve(0, node_clock.clone(), None, None)
        });
        addr
    });

    for (i, name) in scenario.client_names().into_iter().enumerate() {
        let (clock, seed) = client_draws.next().expect("a clock and a seed per client");
        let clock = new_clock(clock, &scenario);
        let nic = Nic::default();
        let process = ClientProcess {
            name: recorder.name(&name),
            clock: clock.clone(),
            recorder: recorder.clone(),
            resource: resource.clone(),
            scenario: scenario.clone(),
            redis: redis.clone(),
            redis_nodes: Arc::clone(&redis_nodes),
            fence_counter,
            steps: steps.hook(&name),
            nic: nic.clone(),
            seed,
        };
        // A restarted process must not repeat its tokens: each incarnation gets its own seed.
        let incarnation = Arc::new(AtomicU64::new(0));
        nodes.add(&name, client_ip(i), clock, nic, move || {
            let n = incarnation.fetch_add(1, Ordering::Relaxed);
            ClientProcess {
                seed: process.seed.wrapping_add(n),
                ..process.clone()
            }
            .run()
        });
    }

    let replicated: Vec<Group> = groups
        .iter()
        .filter(|group| group.names.len() > 1)
        .cloned()
        .collect();
    if let Some(settings) = sentinel_settings {
        for (index, name) in scenario.sentinel_names().iter().enumerate() {
            let (clock, seed) = sentinel_draws.next().expect("a clock and a seed per Sentinel");
            let clock = new_clock(clock, &scenario);
            let nic = Nic::default();
            let sentinel = Sentinel::new(
                index,
                settings,
                replicated.clone(),
                clock.clone(),
                nic.clone(),
                recorder.clone(),
                seed,
            );
            let ip = sentinel::address(index).ip();
            nodes.add(name, ip, clock, nic, move || sentinel.clone().run());
        }
    } else if !replicated.is_empty() {
        let clock = new_clock(
            draws.controller_clock.expect("a clock for the controller"),
            &scenario,
        );
        let nic = Nic::default();
        let (watched, down_after_ms, node_recorder, node_clock, node_nic) = (
            groups.clone(),
            scenario.down_after_ms(),
            recorder.clone(),
            clock.clone(),
            nic.clone(),
        );
        nodes.add(SENTINEL, SENTINEL_IP, clock, nic, move || {
            let watches = watched.iter().filter(|group| group.names.len() > 1).map(|group| {
                failover::watch(
                    group.clone(),
                    down_after_ms,
                    node_clock.clone(),
                    node_nic.clone(),
                    node_recorder.clone(),
                )
            });
            futures::future::join_all(watches.collect::<Vec<_>>())
        });
    }

    let disks = groups
        .iter()
        .flat_map(|group| (0..group.names.len()).map(move |i| (group, i)))
        .filter_map(|(group, i)| Some((group.names[i].clone(), group.disk(i)?)))
        .collect();
    let reach = Reach {
        nodes: nodes.ids,
        clocks: nodes.clocks,
        recorder: recorder.clone(),
        clients: scenario.client_names(),
        redis: scenario.redis_names(),
        groups,
        disks,
        steps,
        nics: nodes.nics,
        ips: nodes.ips,
        writes,
    };
    let schedule = Arc::new(Schedule::new(reach, Cast::of(&scenario)));
    // The fault injector runs on a node of its own, which no fault names, so that it can
    // be killed with the others at the end.
    let injector = handle.create_node().name("fault-injector").build();
    for ((index, fault), seed) in scenario.faults.iter().cloned().enumerate().zip(draws.fault_seeds) {
        let fault_rng = ChaCha8Rng::seed_from_u64(seed);
        injector.spawn(schedule.clone().run(index, fault, fault_rng));
    }

    madsim::time::sleep(Duration::from_millis(scenario.duration_ms)).await;
    let mut history = recorder.finish();
    let reach = &schedule.backend;
    history.clocks = reach
        .clocks
        .iter()
        .map(|(name, clock)| (name.clone(), clock.log()))
        .collect();
    // madsim does not drop the tasks of nodes still running when `block_on` returns: kill
    // every node and let the executor drop them, or each seed leaks its nodes' memory (and,
    // through the injector's tasks, the whole world's).
    for id in reach.nodes.values().chain([&injector.id()]) {
        handle.kill(*id);
    }
    madsim::task::yield_now().await;
    history
}

/// The most clients a run can address: client addresses fill 10.2.0.0/16 from 10.2.0.1.
pub const MAX_CLIENTS: usize = 65_535;
const _: () = assert!(crate::scenario::limits::MAX_CLIENTS as usize <= MAX_CLIENTS);

/// Client `i` (0-based) is the (i+1)-th address of 10.2.0.0/16: 10.2.0.1, …, 10.2.0.255,
/// 10.2.1.0, …, so no two clients share one (madsim refuses a second node on an address)
/// up to [`MAX_CLIENTS`], and none meets a Redis node (10.0.0.x, 10.1.x.x) or the
/// sentinel and fencing counter (10.0.2.x).
fn client_ip(i: usize) -> IpAddr {
    assert!(
        i < MAX_CLIENTS,
        "client {} has no address: at most {MAX_CLIENTS} clients",
        i + 1
    );
    let n = u32::try_from(i + 1).expect("checked above");
    IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 2, 0, 0)) + n))
}

/// A node's clock, with the offset and drift drawn from the scenario's ranges; one that no
/// fault of the scenario can step is built fixed (see [`SimClock::fixed`]).
fn new_clock(drawn: ClockDraw, scenario: &Scenario) -> SimClock {
    let model = ClockModel::new(drawn.offset_ms * 1_000_000, drawn.drift_ppm);
    if scenario.faults.iter().any(|fault| fault.action.moves_clocks()) {
        SimClock::new(model)
    } else {
        SimClock::fixed(model)
    }
}
