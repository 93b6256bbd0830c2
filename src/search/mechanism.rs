//! What a violating run rests on, so that shrinking keeps it: a smaller schedule that breaks
//! the same checker by another road is another counterexample, not a smaller one (a
//! "failover before replication" that shrinks to a master back before any promotion is a
//! restart-empty story under a failover heading).
//!
//! The mechanism of a violation is read from the events its story tells
//! ([`story::system_events`]: those in its window, and the faults and crashes already in
//! effect when it opens), each mapped to a [`Happening`]:
//!
//! | the story tells                                 | happening                     |
//! |-------------------------------------------------|-------------------------------|
//! | the failover controller promotes a replica      | [`Happening::Promotion`]      |
//! | a Redis node crashes / restarts                 | [`Happening::RedisCrash`] / [`Happening::RedisRestart`] |
//! | a client crashes                                | [`Happening::ClientCrash`]    |
//! | fault: pause of a client (of Redis nodes only)  | [`Happening::ClientPause`] ([`Happening::RedisPause`]) |
//! | fault: clock of … jumps / drifts                | [`Happening::ClockJump`] / [`Happening::ClockDrift`] |
//! | fault: partition, replication stall             | [`Happening::Cut`]            |
//! | fault: latency, packet loss                     | [`Happening::SlowNetwork`]    |
//! | fault: connections reset                        | [`Happening::Reset`]          |
//!
//! and, when the earlier holder of the run's first overlap was granted the lock by several
//! nodes (Redlock), the majority of them it needed ([`story::first_overlap_grant`]).
//!
//! A candidate keeps the mechanism of the original run when its own story tells every
//! happening the original's told (more is allowed: a restart after the violation's promotion
//! changes nothing), and its first overlap's earlier grant still came from at least as many
//! nodes as the original's majority (a Redlock counterexample that needed 3 keys of 5 does
//! not become one that needs 1 or 2). A crash fault's start is no happening of its own: its
//! `Crashed` and `Restarted` events tell it, node by node.

use std::collections::BTreeSet;
use std::fmt;

use super::story;
use crate::history::{EventKind, History};

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
    /// The happening an event of a story is, if it is one.
    fn of(node: &str, kind: &EventKind) -> Option<Happening> {
        let client = node.starts_with("client-");
        match kind {
            EventKind::Failover { .. } => Some(Happening::Promotion),
            EventKind::Crashed if client => Some(Happening::ClientCrash),
            EventKind::Crashed => Some(Happening::RedisCrash),
            EventKind::Restarted if !client => Some(Happening::RedisRestart),
            EventKind::FaultStarted { fault } => Happening::of_fault(fault),
            _ => None,
        }
    }

    /// The happening a fault's description (as the world records it) starts; none for a
    /// crash, told by its own events, or a heal, which ends one.
    fn of_fault(fault: &str) -> Option<Happening> {
        let first = fault.split_whitespace().next()?;
        match first {
            "pause" if fault.split([' ', ',']).any(|word| word.starts_with("client-")) => {
                Some(Happening::ClientPause)
            }
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
    /// The mechanism of `checker`'s `violation` in `history`.
    pub fn of(history: &History, checker: &str, violation: &str) -> Mechanism {
        let happenings = story::system_events(history, checker, violation)
            .into_iter()
            .filter_map(|event| Happening::of(&event.node, &event.kind))
            .collect();
        let grant = story::first_overlap_grant(history);
        Mechanism {
            happenings,
            majority: grant.filter(|g| g.asked > 1).map(|g| g.asked / 2 + 1),
            grant,
        }
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
    /// `a Redis crash, a promotion (failover)`, then the grant: how a shrink's result says
    /// what it kept.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.happenings.iter().map(Happening::to_string).collect();
        if let (Some(grant), Some(_)) = (self.grant, self.majority) {
            parts.push(format!("a grant by {} of {} nodes", grant.granted, grant.asked));
        }
        if parts.is_empty() {
            return f.write_str("no fault (the workload alone)");
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_the_world_describes_is_one_happening() {
        for (fault, happening) in [
            ("pause client-1 for 4000 ms", Some(Happening::ClientPause)),
            ("pause redis-1,client-2 for 10 ms", Some(Happening::ClientPause)),
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
        ] {
            assert_eq!(Happening::of_fault(fault), happening, "{fault}");
        }
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
}
