//! A Sentinel's main loop, the talking half of [`State`](super::monitor::State): each tick
//! it probes every instance, asks the other Sentinels about the masters it finds down,
//! sends its hellos, and carries out the orders the state machine gives (reconfigure a
//! node, record a promotion or an election). Kept apart from the state machine so that
//! the decisions read without the connections.

use std::net::SocketAddr;

use futures::future::join_all;

use super::monitor::Order;
use super::{Sentinel, address};
use crate::client::Conn;
use crate::history::EventKind;
use crate::platform::Clock;
use crate::world::clock::SimClock;
use crate::world::failover::{probe, send_reconfigure};
use crate::world::net::{Address, SimConnector};

/// How long a Sentinel waits for another Sentinel's answer. Redis talks to the others
/// asynchronously, so one that is cut off never holds up the rest; here each tick waits
/// this long at most for one, and asks it nothing more that tick once it failed.
const PEER_TIMEOUT_MS: u64 = 200;

/// How often a Sentinel sends its hello to the others (`SENTINEL_PUBLISH_PERIOD`).
const HELLO_PERIOD_MS: u64 = 2000;

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
                Order::Reconfigure {
                    monitor,
                    node,
                    follow,
                    demoted,
                } => {
                    let group = &groups[monitor];
                    let master = follow.map(|m| group.addrs[m]);
                    if send_reconfigure(&mut nodes[monitor][node], master).await {
                        group.configure(node, follow);
                        if let Some(m) = follow {
                            let event = EventKind::Reconfigured {
                                node: group.names[node].clone(),
                                master: group.names[m].clone(),
                                demoted,
                            };
                            recorder.record(&name, clock.local_us(), event);
                        }
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
                    // `sentinelForceHelloUpdateForMaster`: the others hear of it at once.
                    next_hello_ms = now_ms;
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
