//! Live mode: a scenario run in real time, with real processes, and judged by the same
//! checkers. The clients are programs (`clients.command`: the user's own lock code in any
//! language, or `locksim worker`), one process per client; the Redis nodes are locksim's
//! own nodes on loopback ports, or real `redis-server` processes (`--redis-server`).
//!
//! The design, one file each:
//! - [`resource`]: the register the workers protect, a small RESP service that records
//!   every access and every report of a worker's (acquiring, holding, refused or failed,
//!   released) into the history;
//! - [`proxy`]: a TCP proxy on every link (a worker to each node and to the resource, a
//!   replica to its master, the failover controller to each node), where partitions
//!   (holding bytes), stalls, latency and resets strike, without root or a firewall;
//! - [`topology`]: every proxied link, the replicated groups and the workers' routes;
//! - [`failover`]: the controller that fails the groups over, as the simulator's does;
//! - [`supervisor`]: the worker and redis-server processes, each in a process group of its
//!   own that dies with locksim; a pause is SIGSTOP/SIGCONT, a crash SIGKILL;
//! - [`nodes`] and [`clock`]: the Redis nodes, and the steppable wall clock of locksim's;
//! - [`faults`]: how the scenario's faults strike on the proxies, processes and clocks
//!   (when and whom is the shared schedule's, [`crate::schedule`]);
//! - [`worker`]: `locksim worker`, locksim's own client as a worker.
//!
//! A run ends in a [`History`] like a simulated one, so `check/` and `report/` do not know
//! which mode ran. It holds what locksim sees: the workers' reports and the resource's
//! accesses, stamped with true time (the host's monotonic clock), and every fault. The
//! random choices (fault targets, latency draws, the workers' seeds) come from the seed
//! (the fault targets as the simulator draws them, [`crate::world::draws`]),
//! but timing is real, so a live seed is not bit-exact.

pub mod clock;
pub mod failover;
pub mod faults;
pub mod nodes;
pub mod proxy;
pub mod recorder;
pub mod resource;
pub mod supervisor;
pub mod topology;
pub mod worker;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use self::clock::{LiveClock, WallClockShim};
use self::nodes::LiveNode;
use self::proxy::Proxy;
use self::recorder::LiveRecorder;
use self::resource::Resource;
use self::supervisor::Supervisor;
use self::topology::{Link, Links, LiveGroup, LiveTopology, RESOURCE, Route};
use self::worker::WorkerEnv;
use crate::client::Fencing;
use crate::history::History;
use crate::scenario::{FENCE_COUNTER, PersistenceMode, SENTINEL, Scenario};
use crate::schedule::{Cast, Schedule};
use crate::world::draws::Draws;
use crate::world::topology::persistence;
use crate::world::workload::LOCK_KEY;

/// How a live run is set up, beyond the scenario and the seed.
#[derive(Debug, Clone)]
pub struct LiveSetup {
    /// The scenario file: each worker gets its absolute path as `LOCKSIM_SCENARIO`, so
    /// `locksim worker` takes the lock settings from it, and starts in its directory.
    pub scenario_file: PathBuf,
    /// The worker command when the scenario names none (`locksim worker`).
    pub default_worker: Vec<String>,
    /// Real `redis-server` processes instead of locksim's nodes.
    pub redis_server: bool,
    /// Variables added to every worker's environment (a test points PYTHONPATH or
    /// NODE_PATH at the libraries it installed).
    pub worker_env: Vec<(String, String)>,
    /// Where each run keeps its processes' output and the nodes' directories (a
    /// directory per seed is made in it, and removed after a run that went well).
    pub scratch: PathBuf,
}

/// How long the workers may take to connect to their nodes.
const READY_PATIENCE: Duration = Duration::from_secs(60);

/// How long a replica may take to sync with its master at the start.
const SYNC_PATIENCE_MS: u64 = 10_000;

/// How often the run checks that its workers still live.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// Why a scenario cannot run live (yet): `Err` names the field and the reason.
pub fn unsupported(scenario: &Scenario, setup: &LiveSetup) -> Result<(), String> {
    let topology = &scenario.topology;
    if topology.sentinel.is_some() {
        return Err("topology.sentinel: a Sentinel quorum does not run live yet; without it, locksim's failover controller fails the groups over".into());
    }
    if topology.min_replicas_to_write > 0 {
        return Err("topology.min_replicas_to_write does not run live yet".into());
    }
    if topology.replication_lag_ms > 0 {
        return Err("topology.replication_lag_ms: a lag that dies with the master's process does not run live yet (a `replication_stall` or latency on the replication link does)".into());
    }
    let clients = &scenario.clients;
    if clients.write_delay_ms.is_some() {
        return Err("clients.write_delay_ms: a write that lands late is the simulated client's; a live worker's writes land when they land".into());
    }
    if clients.stop_at_validity && clients.command.is_some() {
        return Err("clients.stop_at_validity: `locksim worker` honours it, but a worker of your own (clients.command) decides itself when to stop working; drop the field and code it in the worker".into());
    }
    if scenario.clocks.drift_ppm != [0, 0] {
        return Err("clocks: live nodes take a wall-clock offset, not drift".into());
    }
    for (index, fault) in scenario.faults.iter().enumerate() {
        faults::supported(scenario, fault, setup.redis_server)
            .map_err(|reason| format!("faults[{index}]: {reason}"))?;
    }
    Ok(())
}

/// Starts a proxy for the link from `client` to `node` (at `upstream`) and adds it to
/// `links`.
fn add_link(
    links: &mut Vec<Link>,
    client: &str,
    node: &str,
    upstream: SocketAddr,
    rng: &mut ChaCha8Rng,
) -> Result<(), String> {
    let proxy = Proxy::start(upstream, rng.next_u64())
        .map_err(|e| format!("a proxy from {client} to {node}: {e}"))?;
    links.push(Link {
        client: client.to_string(),
        node: node.to_string(),
        proxy,
    });
    Ok(())
}

/// Whether the scenario offsets or steps a Redis node's wall clock (of the kinds that move
/// clocks, live mode strikes only clock jumps: the others are refused before a run).
fn moves_clocks(scenario: &Scenario) -> bool {
    scenario.clocks.offset_ms != [0, 0] || scenario.faults.iter().any(|fault| fault.action.moves_clocks())
}

/// Runs one seed of `scenario` live and returns its history; `Err` says what failed (a
/// worker that could not start or ended early, a node that never listened). Every process
/// started is stopped before this returns. The run's scratch directory (the processes'
/// output, the nodes' directories) is removed after a run that went well, and kept, and
/// named in the error, after one that failed.
pub fn run(scenario: &Scenario, seed: u64, setup: &LiveSetup) -> Result<History, String> {
    let scratch = scratch_dir(scenario, seed, setup);
    let result = run_in(scenario, seed, setup, &scratch);
    if result.is_ok() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result
}

/// A new scratch directory's path for one live run of `scenario`'s `seed`, under
/// `setup.scratch` (not yet made).
pub fn scratch_dir(scenario: &Scenario, seed: u64, setup: &LiveSetup) -> PathBuf {
    // Runs of one scenario and seed may go side by side (a test's variants of a scenario).
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    setup.scratch.join(format!(
        "{}-seed-{seed}-{}-{run}",
        scenario.name,
        std::process::id()
    ))
}

/// [`run`] in the scratch directory `scratch`, which it leaves in place whatever happens:
/// the worker output in `scratch/logs/`, the nodes' directories beside it.
pub fn run_in(
    scenario: &Scenario,
    seed: u64,
    setup: &LiveSetup,
    scratch: &std::path::Path,
) -> Result<History, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(&runtime, run_live(scenario, seed, setup, scratch));
    result.map_err(|e| format!("{e}\n  (the run's output is in {})", scratch.display()))
}

async fn run_live(
    scenario: &Scenario,
    seed: u64,
    setup: &LiveSetup,
    scratch: &std::path::Path,
) -> Result<History, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let scenario_file =
        std::path::absolute(&setup.scenario_file).unwrap_or_else(|_| setup.scenario_file.clone());
    let workdir = scenario_file.parent().unwrap_or(std::path::Path::new("."));
    let mut supervisor =
        Supervisor::new(&scratch.join("logs"), workdir).map_err(|e| format!("{}: {e}", scratch.display()))?;
    // redis-server's wall clock is shifted by a shim only when the scenario moves it.
    let shim = match setup.redis_server && moves_clocks(scenario) {
        true => Some(WallClockShim::build(&scratch.join("shim"))?),
        false => None,
    };
    let fencing = scenario.lock.options().fencing;
    // The Redis nodes, and the fencing counter when tokens come from one: a lone node that
    // fsyncs every write, so no crash rolls its counter back (as in the simulator).
    let counter = (fencing == Fencing::Counter).then(|| FENCE_COUNTER.to_string());
    let save_points = scenario.save_points();
    let mut nodes = Vec::new();
    for name in scenario.redis_names().into_iter().chain(counter) {
        let [min, max] = scenario.clocks.offset_ms;
        let offset = rand::RngExt::random_range(&mut rng, min..=max);
        let persistence = match name == FENCE_COUNTER {
            true => persistence(PersistenceMode::AofAlways, &[]),
            false => persistence(scenario.persistence_of(&name), &save_points),
        };
        let node = match &shim {
            _ if !setup.redis_server => {
                LiveNode::locksim(&name, LiveClock::with_offset(offset), persistence).await
            }
            Some(shim) => {
                let clock = shim
                    .clock(&scratch.join(format!("{name}.clock")), offset)
                    .map_err(|e| format!("{name}'s clock file: {e}"))?;
                LiveNode::redis_server(&name, scratch, &mut supervisor, Some(clock), persistence).await
            }
            None => LiveNode::redis_server(&name, scratch, &mut supervisor, None, persistence).await,
        };
        nodes.push(node.map_err(|e| format!("starting {name}: {e}"))?);
    }
    let addr_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.addr)
            .expect("every Redis node started")
    };
    let groups: Vec<LiveGroup> = scenario.redis_groups().into_iter().map(LiveGroup::new).collect();
    let mut links = Vec::new();
    // Replication links, both ways between every two nodes of a group (a demoted master
    // follows the new one the same way), and the failover controller's link to each node.
    for group in groups.iter().filter(|g| g.names.len() > 1) {
        for from in &group.names {
            for to in group.names.iter().filter(|to| *to != from) {
                add_link(&mut links, from, to, addr_of(to), &mut rng)?;
            }
            add_link(&mut links, SENTINEL, from, addr_of(from), &mut rng)?;
        }
    }
    for group in groups.iter().filter(|g| g.names.len() > 1) {
        let master = &group.names[0];
        for replica in &group.names[1..] {
            let via = links
                .iter()
                .find(|l| &l.client == replica && &l.node == master)
                .map(|l| l.proxy.addr)
                .expect("a replication link per pair");
            failover::replicate(addr_of(replica), via, SYNC_PATIENCE_MS)
                .await
                .map_err(|e| format!("{replica}: {e}"))?;
        }
    }
    let recorder = LiveRecorder::start();
    let resource = Resource::new(recorder.clone(), scenario.lock.ttl_ms);
    let command = scenario
        .clients
        .command
        .clone()
        .unwrap_or_else(|| setup.default_worker.clone());
    let mut workers = BTreeMap::new();
    let mut routes = Vec::new();
    for client in scenario.client_names() {
        // A proxy to every node, carrying bytes once the run begins; the worker reaches
        // each group through a route to its proxy to the group's master.
        for node in &nodes {
            add_link(&mut links, &client, &node.name, node.addr, &mut rng)?;
        }
        let mut urls = Vec::new();
        for (index, group) in groups.iter().enumerate() {
            let master = links
                .iter()
                .find(|l| l.client == client && l.node == group.names[0])
                .expect("a link to every node");
            let proxy = Proxy::start(master.proxy.addr, rng.next_u64())
                .map_err(|e| format!("{client}'s route to {}: {e}", group.names[0]))?;
            urls.push(format!("redis://{}", proxy.addr));
            routes.push(Route {
                client: client.clone(),
                group: index,
                proxy,
            });
        }
        // The resource, on a listener of the client's own, reached through a proxy too.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the resource: {e}"))?;
        let upstream = listener.local_addr().map_err(|e| e.to_string())?;
        tokio::spawn(resource.clone().serve(listener, client.clone()));
        add_link(&mut links, &client, RESOURCE, upstream, &mut rng)?;
        let url_of = |node: &str| {
            let link = links.iter().find(|l| l.client == client && l.node == node);
            link.map(|l| format!("redis://{}", l.proxy.addr))
        };
        let env = WorkerEnv {
            client: client.clone(),
            redis_urls: urls,
            lock_key: String::from_utf8_lossy(LOCK_KEY).into_owned(),
            ttl_ms: scenario.lock.ttl_ms,
            resource: url_of(RESOURCE).expect("a resource link per client"),
            work_ms: scenario.clients.work_ms_of(&client),
            think_ms: scenario.clients.think_ms,
            seed: rng.next_u64(),
            fencing,
            fence_counter: url_of(FENCE_COUNTER),
        };
        // Every link of the worker's carries bytes once the run begins; the network's
        // latency is on its links to nodes (the simulator's resource is no network peer).
        for link in links.iter().filter(|l| l.client == client) {
            link.proxy.update(|f| {
                if link.on_the_network() {
                    f.latencies_ms.push(scenario.network.latency_ms);
                }
                f.gated = true;
            });
        }
        let mut vars = setup.worker_env.clone();
        vars.extend(env.to_vars());
        vars.push(("LOCKSIM_SCENARIO".into(), scenario_file.display().to_string()));
        workers.insert(client, vars);
    }
    for (client, vars) in &workers {
        supervisor
            .start(client, &command, vars)
            .map_err(|e| e.to_string())?;
    }
    // Time 0 is when every worker has connected to a node or to the resource (its first
    // word is a report or an acquire): an interpreter that takes seconds to import its
    // library on a loaded machine does not eat the scenario's time, and none takes the
    // lock before the others are there to contend.
    let ready_by = tokio::time::Instant::now() + READY_PATIENCE;
    while let Some(late) = scenario.client_names().into_iter().find(|client| {
        !links
            .iter()
            .any(|l: &Link| &l.client == client && l.proxy.connected())
    }) {
        if let Some(exited) = supervisor.exited() {
            return Err(exited.to_string());
        }
        if tokio::time::Instant::now() > ready_by {
            return Err(format!(
                "{late} never connected to a Redis node (LOCKSIM_REDIS_URLS) nor to the resource (LOCKSIM_RESOURCE) within {} s",
                READY_PATIENCE.as_secs()
            ));
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
    recorder.begin_now();
    let topology = Rc::new(LiveTopology {
        links: Links(links),
        routes,
        groups,
        redis: scenario.redis_names(),
    });
    // An `Arc` because the schedule is the simulator's too, whose injector needs one; here
    // every task that shares it runs on this thread's LocalSet.
    #[allow(clippy::arc_with_non_send_sync)]
    let schedule = Arc::new(Schedule::new(
        faults::Faults::new(faults::Parts {
            recorder: recorder.clone(),
            supervisor,
            nodes,
            topology: topology.clone(),
            workers,
            command,
            scratch: scratch.to_path_buf(),
        }),
        Cast::of(scenario),
    ));
    for index in 0..scenario.redis_groups().len() {
        if scenario.redis_groups()[index].len() > 1 {
            tokio::task::spawn_local(failover::watch(
                topology.clone(),
                recorder.clone(),
                index,
                scenario.down_after_ms(),
            ));
        }
    }
    // Each fault draws from the seed the simulator gives it, so a live seed strikes the
    // nodes the simulated seed of the same number does.
    let fault_seeds = Draws::of(scenario, seed).fault_seeds;
    for ((index, fault), seed) in scenario.faults.iter().enumerate().zip(fault_seeds) {
        let rng = ChaCha8Rng::seed_from_u64(seed);
        tokio::task::spawn_local(schedule.clone().run(index, fault.clone(), rng));
    }
    // The faults due at 0 ms strike before the workers' links carry a byte, as the
    // simulator strikes them first: a partition at 0 holds from the first request. Each
    // strikes in the first poll of its task (`holder` waits for a grant, so not before).
    let due_at_start: Vec<usize> = (0..scenario.faults.len())
        .filter(|&index| faults::strikes_at_start(&scenario.faults[index]))
        .collect();
    while !due_at_start.iter().all(|&index| recorder.has_struck(index)) {
        tokio::task::yield_now().await;
    }
    for link in &topology.links.0 {
        link.proxy.update(|f| f.gated = false);
    }
    let end = tokio::time::Instant::now() + Duration::from_millis(scenario.duration_ms);
    while tokio::time::Instant::now() < end {
        tokio::time::sleep(WATCH_EVERY.min(end - tokio::time::Instant::now())).await;
        if let Some(exited) = schedule.backend.exited() {
            return Err(exited.to_string());
        }
        if let Some(error) = schedule.backend.error() {
            return Err(error);
        }
    }
    Ok(recorder.finish())
}
