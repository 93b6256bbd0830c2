//! `locksim worker`: locksim's own lock client as a live worker, the reference every
//! other worker (examples/workers/) copies. It reads what live mode gives each worker in
//! its environment and loops, as the simulator's clients do: tell the resource it is
//! acquiring, acquire (on failure, tell the resource whether Redis refused or gave no
//! answer), tell the resource it holds the lock, read the register, work, write back the
//! value plus one (both presenting the fencing token, if the lock gives one), tell the
//! resource it releases, release, think. The reports give the live history the events the
//! simulator records for its clients, so every checker but validity judges a live run.

use std::collections::BTreeMap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::client::{Conn, Fencing, Lock, LockError, LockGuard, LockOptions};
use crate::platform::Clock;
use crate::real::{HostClock, RedisConnector, TcpConnector};
use crate::redis::Frame;
use crate::redis::request::build;

/// What a live worker is told, one environment variable each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerEnv {
    /// `LOCKSIM_CLIENT`: its name (`client-1`), which the resource's reports carry.
    pub client: String,
    /// `LOCKSIM_REDIS_URLS`: one `redis://` URL per Redis master, comma-separated, each
    /// through this client's proxy to that node.
    pub redis_urls: Vec<String>,
    /// `LOCKSIM_LOCK_KEY`: the key to lock.
    pub lock_key: String,
    /// `LOCKSIM_TTL_MS`: the lock's time to live.
    pub ttl_ms: u64,
    /// `LOCKSIM_RESOURCE`: the resource's `redis://` URL, this client's own.
    pub resource: String,
    /// `LOCKSIM_WORK_MS` and `LOCKSIM_THINK_MS`: `min,max` of a critical section and of
    /// the pause between a release and the next acquire.
    pub work_ms: [u64; 2],
    pub think_ms: [u64; 2],
    /// `LOCKSIM_SEED`: seeds the worker's random choices.
    pub seed: u64,
    /// `LOCKSIM_FENCING`: where the worker takes a fencing token after each acquire, to
    /// present to the resource: `master-incr` (`INCR <lock key>:fence` on the first node),
    /// `counter` (the same INCR on the fencing counter) or `none`.
    pub fencing: Fencing,
    /// `LOCKSIM_FENCE_COUNTER`: the fencing counter's `redis://` URL, through this client's
    /// proxy to it; set only with `LOCKSIM_FENCING=counter`.
    pub fence_counter: Option<String>,
}

/// The fencing counter's variable, which only `LOCKSIM_FENCING=counter` sets.
pub const FENCE_COUNTER_VAR: &str = "LOCKSIM_FENCE_COUNTER";

/// The variable names, in the order a missing one is reported.
pub const ENV_NAMES: [&str; 9] = [
    "LOCKSIM_CLIENT",
    "LOCKSIM_REDIS_URLS",
    "LOCKSIM_LOCK_KEY",
    "LOCKSIM_TTL_MS",
    "LOCKSIM_RESOURCE",
    "LOCKSIM_WORK_MS",
    "LOCKSIM_THINK_MS",
    "LOCKSIM_SEED",
    "LOCKSIM_FENCING",
];

impl WorkerEnv {
    /// The environment of a worker, as variable → value.
    pub fn to_vars(&self) -> Vec<(String, String)> {
        let pair = |[min, max]: [u64; 2]| format!("{min},{max}");
        let values = [
            self.client.clone(),
            self.redis_urls.join(","),
            self.lock_key.clone(),
            self.ttl_ms.to_string(),
            self.resource.clone(),
            pair(self.work_ms),
            pair(self.think_ms),
            self.seed.to_string(),
            fencing_word(self.fencing).to_string(),
        ];
        let counter = self
            .fence_counter
            .iter()
            .map(|url| (FENCE_COUNTER_VAR.to_string(), url.clone()));
        ENV_NAMES
            .iter()
            .map(|name| name.to_string())
            .zip(values)
            .chain(counter)
            .collect()
    }

    /// Reads the variables back; `Err` names the first one missing or malformed.
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<WorkerEnv, String> {
        let get = |name: &str| {
            vars.get(name)
                .cloned()
                .ok_or_else(|| format!("{name} is not set (live mode sets it for each worker)"))
        };
        let number = |name: &str| {
            get(name)?
                .parse::<u64>()
                .map_err(|_| format!("{name} is not a number"))
        };
        let pair = |name: &str| -> Result<[u64; 2], String> {
            let text = get(name)?;
            let parsed: Option<Vec<u64>> = text.split(',').map(|n| n.parse().ok()).collect();
            match parsed.as_deref() {
                Some(&[min, max]) if min <= max => Ok([min, max]),
                _ => Err(format!("{name} is not `min,max` in ms: `{text}`")),
            }
        };
        // Read in ENV_NAMES's order, so the first missing one is the one reported.
        let client = get("LOCKSIM_CLIENT")?;
        let redis_urls = get("LOCKSIM_REDIS_URLS")?
            .split(',')
            .map(str::to_string)
            .collect();
        let lock_key = get("LOCKSIM_LOCK_KEY")?;
        let ttl_ms = number("LOCKSIM_TTL_MS")?;
        let resource = get("LOCKSIM_RESOURCE")?;
        let work_ms = pair("LOCKSIM_WORK_MS")?;
        let think_ms = pair("LOCKSIM_THINK_MS")?;
        let seed = number("LOCKSIM_SEED")?;
        let fencing = get("LOCKSIM_FENCING")?;
        let fencing = [Fencing::None, Fencing::MasterIncr, Fencing::Counter]
            .into_iter()
            .find(|f| fencing_word(*f) == fencing)
            .ok_or_else(|| {
                format!("LOCKSIM_FENCING is `master-incr`, `counter` or `none`, not `{fencing}`")
            })?;
        Ok(WorkerEnv {
            client,
            redis_urls,
            lock_key,
            ttl_ms,
            resource,
            work_ms,
            think_ms,
            seed,
            fencing,
            fence_counter: match fencing {
                Fencing::Counter => Some(get(FENCE_COUNTER_VAR)?),
                _ => None,
            },
        })
    }
}

/// How `LOCKSIM_FENCING` names a token source.
fn fencing_word(fencing: Fencing) -> &'static str {
    match fencing {
        Fencing::None => "none",
        Fencing::MasterIncr => "master-incr",
        Fencing::Counter => "counter",
    }
}

/// The key of the register on the resource (any key names the one register).
const REGISTER_KEY: &str = "counter";

/// Runs the worker loop until killed; `Err` when it cannot start (a bad URL). With
/// `stop_at_validity` (the scenario's `clients.stop_at_validity`) it cuts a critical
/// section short when its lease's validity runs out, as the simulator's client does.
pub async fn run_worker(env: WorkerEnv, options: LockOptions, stop_at_validity: bool) -> Result<(), String> {
    let clock = HostClock::new();
    let connectors = env
        .redis_urls
        .iter()
        .map(|url| RedisConnector::from_url(url))
        .collect::<Result<Vec<_>, _>>()?;
    let resource = RedisConnector::from_url(&env.resource)?;
    let mut rng = ChaCha8Rng::seed_from_u64(env.seed);
    let mut lock = Lock::new(
        connectors,
        clock.clone(),
        ChaCha8Rng::seed_from_u64(rng.random()),
        options,
    );
    if let Some(url) = &env.fence_counter {
        lock = lock.with_fence_counter(RedisConnector::from_url(url)?);
    }
    let mut resource = Conn::new(TcpConnector(resource.addr), clock.clone(), RESOURCE_TIMEOUT_MS);
    let key = env.lock_key.as_bytes();
    loop {
        ask(
            &mut resource,
            vec!["LOCKSIM.ACQUIRING".into(), env.client.clone()],
        )
        .await;
        let lease = match lock.acquire(key).await {
            Ok(lease) => Some(lease),
            Err(e) => {
                let report = match e {
                    LockError::Contended { .. } => "LOCKSIM.REFUSED",
                    _ => "LOCKSIM.FAILED",
                };
                ask(
                    &mut resource,
                    vec![report.into(), env.client.clone(), e.to_string()],
                )
                .await;
                None
            }
        };
        if let Some(lease) = lease {
            let fence = lease.fence;
            let mut held = vec![
                "LOCKSIM.HELD".to_string(),
                env.client.clone(),
                lease.token.clone(),
            ];
            held.extend(fence.map(|f| f.to_string()));
            ask(&mut resource, held).await;
            let work_ms = rng.random_range(env.work_ms[0]..=env.work_ms[1]);
            let (register, own_clock) = (&mut resource, &clock);
            let work = move |mut guard: LockGuard| async move {
                let value = ask(register, fenced(vec!["GET".into(), REGISTER_KEY.into()], fence)).await;
                // Stops at once when the watchdog lost the lock, with nothing written.
                if !guard.work(own_clock, work_ms, stop_at_validity, |_| ()).await {
                    return;
                }
                if let Some(Frame::BulkString(value)) = value
                    && let Some(value) = std::str::from_utf8(&value)
                        .ok()
                        .and_then(|v| v.parse::<i64>().ok())
                {
                    let set = vec!["SET".into(), REGISTER_KEY.into(), (value + 1).to_string()];
                    ask(register, fenced(set, fence)).await;
                }
            };
            let _ = lock.hold(&lease, work).await;
            ask(&mut resource, vec!["LOCKSIM.RELEASED".into(), env.client.clone()]).await;
            let _ = lock.release(&lease).await;
        }
        clock
            .sleep_ms(rng.random_range(env.think_ms[0]..=env.think_ms[1]))
            .await;
    }
}

/// How long the worker waits for the resource's reply.
const RESOURCE_TIMEOUT_MS: u64 = 5_000;

/// The request with `FENCE token` appended when the lock gave a token.
fn fenced(mut words: Vec<String>, fence: Option<u64>) -> Vec<String> {
    if let Some(fence) = fence {
        words.extend(["FENCE".to_string(), fence.to_string()]);
    }
    words
}

/// Sends a request to the resource: its reply, or `None` when refused or unanswered (a
/// refused stale access is the resource's business, recorded there).
async fn ask(resource: &mut Conn<TcpConnector, HostClock>, words: Vec<String>) -> Option<Frame> {
    let request = build(words.into_iter().map(String::into_bytes));
    match resource.request(&request).await {
        Ok(Frame::Error(_)) | Err(_) => None,
        Ok(reply) => Some(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_reads_back_what_live_mode_writes() {
        let env = WorkerEnv {
            client: "client-2".into(),
            redis_urls: vec!["redis://127.0.0.1:7001".into(), "redis://127.0.0.1:7002".into()],
            lock_key: "locksim:lock".into(),
            ttl_ms: 2000,
            resource: "redis://127.0.0.1:7100".into(),
            work_ms: [100, 500],
            think_ms: [10, 100],
            seed: 42,
            fencing: Fencing::Counter,
            fence_counter: Some("redis://127.0.0.1:7200".into()),
        };
        let vars: BTreeMap<String, String> = env.to_vars().into_iter().collect();
        assert_eq!(WorkerEnv::from_vars(&vars), Ok(env));
    }

    #[test]
    fn a_missing_or_malformed_variable_is_named() {
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        assert!(
            WorkerEnv::from_vars(&vars)
                .unwrap_err()
                .contains("LOCKSIM_CLIENT")
        );
        for (name, value) in [
            ("LOCKSIM_CLIENT", "client-1"),
            ("LOCKSIM_REDIS_URLS", "redis://127.0.0.1:1"),
            ("LOCKSIM_LOCK_KEY", "k"),
            ("LOCKSIM_TTL_MS", "soon"),
        ] {
            vars.insert(name.into(), value.into());
        }
        assert!(
            WorkerEnv::from_vars(&vars)
                .unwrap_err()
                .contains("LOCKSIM_TTL_MS")
        );
    }
}
