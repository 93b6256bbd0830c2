//! What a violating run rests on, so that shrinking keeps it: a smaller schedule that breaks
//! the same checker by another road is another counterexample, not a smaller one (a
//! "failover before replication" that shrinks to a master back before any promotion is a
//! restart-empty story under a failover heading).
//!
//! The mechanism of a violation is read from the events its story tells
//! ([`story::system_events`]: those in its window, and the faults and crashes already in
//! effect when it opens), each mapped to a [`Happening`], leaving out those that touch only
//! clients the violation does not involve (a reset of a third client's connections is not
//! what two holders' overlap rests on):
//!
//! | the story tells                                 | happening                     |
//! |-------------------------------------------------|-------------------------------|
//! | a replica promoted (controller or Sentinel)     | [`Happening::Promotion`]      |
//! | a Redis node crashes / restarts                 | [`Happening::RedisCrash`] / [`Happening::RedisRestart`] |
//! | a client crashes                                | [`Happening::ClientCrash`]    |
//! | fault: pause of an involved client (of others)  | [`Happening::ClientPause`] ([`Happening::RedisPause`]) |
//! | fault: clock of … jumps / drifts                | [`Happening::ClockJump`] / [`Happening::ClockDrift`] |
//! | fault: partition, replication stall             | [`Happening::Cut`]            |
//! | fault: latency, packet loss                     | [`Happening::SlowNetwork`]    |
//! | fault: connections reset                        | [`Happening::Reset`]          |
//!
//! Of those, only the kinds the scenario's own faults can make count ([`Happening::made_by`]:
//! a pause fault makes pauses, a crash fault crashes and restarts …), and any promotion (a
//! failover is a road of its own, whatever crashed): a random nemesis' draws define no
//! fault class, and a story tells every fault in its window, needed or not. To these comes,
//! when the earlier holder of the run's first overlap was granted the lock by several nodes
//! (Redlock), the majority of them it needed ([`story::first_overlap_grant`]).
//!
//! A candidate keeps the mechanism of the original run when every happening the original's
//! story told still happens in the candidate's run before its violation is complete (more
//! is allowed: a restart after the promotion changes nothing; anywhere before the violation,
//! not only in its story's window, since a smaller schedule moves the window: a nemesis made
//! explicit breaks the lock a little later), and its first overlap's earlier grant still
//! came from at least as many nodes as the original's majority (a Redlock counterexample
//! that needed 3 keys of 5 does not become one that needs 1 or 2). A crash fault's start is
//! no happening of its own: its `Crashed` and `Restarted` events tell it, node by node.

use std::collections::BTreeSet;
use std::fmt;

use super::story::{self, Window};
use crate::history::{Event, EventKind, History};

/// One kind of thing a violation's story shows happening to the deployment or a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Happening {
    /// A replica promoted in place of its master: the lock's key may not have reached it.
    Promotion,
    /// A Redis node died: the keys it had not persisted or streamed died with it.
    RedisCrash,
    /// A Redis node came back, empty or with what its persistence kept.
    RedisRestart,
    /// A client died, maybe inside the lock.
    ClientCrash,
    /// A client froze (GC, SIGSTOP), maybe while holding the lock.
    ClientPause,
    /// Redis nodes, and no client, froze.
    RedisPause,
    /// A node's wall clock stepped.
    ClockJump,
    /// A node's wall clock ran at another rate.
    ClockDrift,
    /// Links cut: a partition, or replication to a replica stalled.
    Cut,
    /// Messages slowed or lost.
    SlowNetwork,
    /// Connections reset.
    Reset,
}

impl fmt::Display for Happening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Happening::Promotion => "a promotion (failover)",
            Happening::RedisCrash => "a Redis crash",
            Happening::RedisRestart => "a Redis restart",
            Happening::ClientCrash => "a client crash",
            Happening::ClientPause => "a client pause",
            Happening::RedisPause => "a Redis pause",
            Happening::ClockJump => "a clock jump",
            Happening::ClockDrift => "a clock drift",
            Happening::Cut => "a partition",
            Happening::SlowNetwork => "a slow or lossy network",
            Happening::Reset => "a connection reset",
        })
    }
}

impl Happening {
    /// The happenings a fault of kind `kind` (as a scenario file spells it) can make.
    pub fn made_by(kind: &str) -> &'static [Happening] {
        match kind {
            "pause" => &[Happening::ClientPause, Happening::RedisPause],
            "crash" | "power_loss" | "restart" => &[
                Happening::RedisCrash,
                Happening::RedisRestart,
                Happening::ClientCrash,
            ],
            "clock_jump" => &[Happening::ClockJump],
            "clock_drift" => &[Happening::ClockDrift],
            "partition" | "replication_stall" => &[Happening::Cut],
            "latency" | "loss" => &[Happening::SlowNetwork],
            "reset" => &[Happening::Reset],
            _ => &[],
        }
    }

    /// The happening `event` is, if it is one that touches more than clients outside
    /// `window` (whose clients are all, when it names none).
    fn of(event: &Event, window: &Window) -> Option<Happening> {
        let involved = |node: &str| window.clients.is_empty() || window.clients.contains(node);
        let client = event.node.starts_with("client-");
        match &event.kind {
            EventKind::Failover { .. } => Some(Happening::Promotion),
            EventKind::Crashed if client => involved(&event.node).then_some(Happening::ClientCrash),
            EventKind::Crashed => Some(Happening::RedisCrash),
            EventKind::Restarted if !client => Some(Happening::RedisRestart),
            EventKind::FaultStarted { fault } => {
                let nodes: Vec<&str> = fault
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .filter(|word| word.starts_with("client-") || word.starts_with("redis-"))
                    .collect();
                let others_only = !nodes.is_empty()
                    && nodes
                        .iter()
                        .all(|node| node.starts_with("client-") && !involved(node));
                let of_involved_client = nodes
                    .iter()
                    .any(|node| node.starts_with("client-") && involved(node));
                (!others_only)
                    .then(|| Happening::of_fault(fault, of_involved_client))
                    .flatten()
            }
            _ => None,
        }
    }

    /// The happening a fault's description (as the world records it) starts, given whether
    /// it names a client the violation involves; none for a crash, told by its own events,
    /// or a heal, which ends one.
    fn of_fault(fault: &str, of_involved_client: bool) -> Option<Happening> {
        let first = fault.split_whitespace().next()?;
        match first {
            "pause" if of_involved_client => Some(Happening::ClientPause),
            "pause" => Some(Happening::RedisPause),
            "clock" if fault.contains(" jumps ") => Some(Happening::ClockJump),
            "clock" if fault.contains(" drifts ") => Some(Happening::ClockDrift),
            "partition" | "replication" => Some(Happening::Cut),
            "latency" | "packet" => Some(Happening::SlowNetwork),
            "reset" => Some(Happening::Reset),
            _ => None,
        }
    }
}

/// What a violation rests on (see the module's doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mechanism {
    /// The happenings its story tells.
    pub happenings: BTreeSet<Happening>,
    /// How many nodes the earlier holder of the first overlap needed to grant it: a majority
    /// of the nodes it asked, when it asked several; `None` on one node or without overlap.
    majority: Option<usize>,
    /// How many nodes granted that holder the lock, of how many asked.
    grant: Option<story::GrantShare>,
}

impl Mechanism {
    /// The mechanism `checker`'s `violation` in `history` rests on: what its story tells.
    pub fn told(history: &History, checker: &str, violation: &str) -> Mechanism {
        let window = story::window(history, checker, violation);
        let events = story::system_events(history, &window);
        Mechanism::of(history, &window, events.into_iter())
    }

    /// What the run of a candidate shows before `checker`'s `violation` in `history` is
    /// complete: what [`Mechanism::lost_in`] holds a [`Mechanism::told`] against.
    pub fn shown(history: &History, checker: &str, violation: &str) -> Mechanism {
        let window = story::window(history, checker, violation);
        let events = history.events.iter().filter(|e| e.true_us <= window.to_us);
        Mechanism::of(history, &window, events)
    }

    /// The happenings of `events` and the grant behind the first overlap of `history`.
    fn of<'h>(history: &History, window: &Window, events: impl Iterator<Item = &'h Event>) -> Mechanism {
        let happenings = events.filter_map(|event| Happening::of(event, window)).collect();
        let grant = story::first_overlap_grant(history);
        Mechanism {
            happenings,
            majority: grant.filter(|g| g.asked > 1).map(|g| g.asked / 2 + 1),
            grant,
        }
    }

    /// This mechanism without the happenings none of `fault_kinds` (the kinds of the
    /// scenario's own faults, as its file spells them) can make, but a promotion.
    pub fn made_by<'k>(mut self, fault_kinds: impl IntoIterator<Item = &'k str>) -> Mechanism {
        let mut made: BTreeSet<Happening> = BTreeSet::from([Happening::Promotion]);
        for kind in fault_kinds {
            made.extend(Happening::made_by(kind));
        }
        self.happenings.retain(|happening| made.contains(happening));
        self
    }

    /// What of this mechanism `candidate`'s lacks, in words; empty when it keeps it.
    pub fn lost_in(&self, candidate: &Mechanism) -> Vec<String> {
        let mut lost: Vec<String> = self
            .happenings
            .difference(&candidate.happenings)
            .map(Happening::to_string)
            .collect();
        if let Some(needed) = self.majority {
            let granted = candidate.grant.map_or(0, |g| g.granted);
            if granted < needed {
                lost.push(format!("the grant by {needed} or more nodes (now {granted})"));
            }
        }
        lost
    }
}

impl fmt::Display for Mechanism {
    /// `a promotion (failover), a Redis crash`, then the grant: how a shrink's result says
    /// what it kept (nothing, for a nemesis' or the workload's violation, but the checker).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.happenings.iter().map(Happening::to_string).collect();
        if let (Some(grant), Some(_)) = (self.grant, self.majority) {
            parts.push(format!("a grant by {} of {} nodes", grant.granted, grant.asked));
        }
        if parts.is_empty() {
            return f.write_str("nothing beyond the same checker");
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(node: &str, kind: EventKind) -> Event {
        Event {
            true_us: 0,
            node: node.into(),
            local_us: 0,
            kind,
        }
    }

    #[test]
    fn each_fault_the_world_describes_is_one_happening() {
        let window = Window {
            clients: ["client-1".to_string(), "client-2".to_string()].into(),
            from_us: 0,
            to_us: 1,
        };
        let fault = |text: &str| {
            let event = at("world", EventKind::FaultStarted { fault: text.into() });
            Happening::of(&event, &window)
        };
        for (text, happening) in [
            ("pause client-1 for 4000 ms", Some(Happening::ClientPause)),
            ("pause redis-1,client-2 for 10 ms", Some(Happening::ClientPause)),
            ("pause redis-2,client-3 for 10 ms", Some(Happening::RedisPause)),
            ("pause redis-2 for 10 ms", Some(Happening::RedisPause)),
            (
                "clock of redis-1,redis-2 jumps +4000 ms",
                Some(Happening::ClockJump),
            ),
            ("clock of redis-1 drifts +100000 ppm", Some(Happening::ClockDrift)),
            ("partition [redis-1] | [client-1]", Some(Happening::Cut)),
            ("replication to redis-1-replica-1 stalls", Some(Happening::Cut)),
            (
                "latency +2500..2500 ms redis-1 → client-1",
                Some(Happening::SlowNetwork),
            ),
            ("packet loss 5.0% everywhere", Some(Happening::SlowNetwork)),
            ("reset connections of client-1", Some(Happening::Reset)),
            ("crash redis-1, restart after 100 ms", None),
            ("power loss of redis-1", None),
            ("heal 4 links", None),
            // Touching only a client the violation does not involve: not what it rests on.
            ("reset connections of client-3", None),
            ("pause client-3 for 4000 ms", None),
        ] {
            assert_eq!(fault(text), happening, "{text}");
        }
        assert_eq!(Happening::of(&at("client-3", EventKind::Crashed), &window), None);
        assert_eq!(
            Happening::of(&at("client-2", EventKind::Crashed), &window),
            Some(Happening::ClientCrash)
        );
    }

    fn with(happenings: &[Happening], grant: Option<(usize, usize)>) -> Mechanism {
        let grant = grant.map(|(granted, asked)| story::GrantShare { granted, asked });
        Mechanism {
            happenings: happenings.iter().copied().collect(),
            majority: grant.filter(|g| g.asked > 1).map(|g| g.asked / 2 + 1),
            grant,
        }
    }

    #[test]
    fn a_candidate_keeps_the_mechanism_with_every_happening_and_enough_granting_nodes() {
        let failover = with(&[Happening::RedisCrash, Happening::Promotion], None);
        let restart_empty = with(&[Happening::RedisCrash, Happening::RedisRestart], None);
        assert_eq!(failover.lost_in(&restart_empty), ["a promotion (failover)"]);
        let more = with(
            &[
                Happening::RedisCrash,
                Happening::Promotion,
                Happening::RedisRestart,
            ],
            None,
        );
        assert!(failover.lost_in(&more).is_empty(), "more is allowed");
        let redlock = with(&[Happening::ClientPause], Some((3, 5)));
        assert!(
            redlock
                .lost_in(&with(&[Happening::ClientPause], Some((4, 5))))
                .is_empty()
        );
        assert_eq!(
            redlock.lost_in(&with(&[Happening::ClientPause], Some((1, 1)))),
            ["the grant by 3 or more nodes (now 1)"]
        );
        assert_eq!(redlock.to_string(), "a client pause, a grant by 3 of 5 nodes");
        assert!(
            with(&[], Some((1, 1))).lost_in(&with(&[], None)).is_empty(),
            "one node asked: no majority to keep"
        );
    }

    #[test]
    fn only_the_scenarios_own_faults_and_a_promotion_define_the_mechanism() {
        let told = || {
            with(
                &[
                    Happening::Promotion,
                    Happening::RedisCrash,
                    Happening::ClockJump,
                    Happening::Reset,
                ],
                Some((3, 5)),
            )
        };
        let of_a_crash = told().made_by(["crash"]);
        assert_eq!(
            of_a_crash.to_string(),
            "a promotion (failover), a Redis crash, a grant by 3 of 5 nodes"
        );
        let of_a_nemesis = told().made_by(["random"]);
        assert_eq!(
            of_a_nemesis.to_string(),
            "a promotion (failover), a grant by 3 of 5 nodes"
        );
    }
}
