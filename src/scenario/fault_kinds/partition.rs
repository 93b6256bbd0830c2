//! Partitions: links cut between groups of nodes (one way or both) until the fault ends or
//! a `heal` mends every cut.

use super::kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::strike::{Strike, links_between};
use crate::check::coverage::State;
use crate::client::Step;
use crate::scenario::limits::FieldError;

kind! {
    /// Cut the links between the groups (only from the first group to the others when
    /// `one_way`), for `duration_ms` or until a `heal`. Nodes in no group keep their links.
    /// A group may name nodes by a target's word (`holder`, `master` …), resolved when the
    /// fault strikes.
    Partition {
        groups: Vec<Vec<String>>,
        one_way: bool,
        duration_ms: Option<u64>,
    }
}

kind! {
    /// Restore every link cut by partitions.
    Heal {}
}

impl Kind for Partition {
    const TARGETS: Targets = Targets::Never;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(Partition {
            groups: fields.need("groups", &fields.groups)?,
            one_way: fields.one_way.unwrap_or(false),
            duration_ms: fields.duration_ms(true)?,
        })
    }

    fn validate(&self, checks: &Checks) -> Result<(), FieldError> {
        positive("duration_ms", self.duration_ms)?;
        (checks.groups)(&self.groups)
    }

    async fn strike<S: Strike>(&self, on: &S, _targets: &[String]) -> Result<(), String> {
        let links = links_between(&self.groups, self.one_way);
        let shown: Vec<String> = self.groups.iter().map(|g| format!("[{}]", g.join(","))).collect();
        let arrow = if self.one_way { " -/-> " } else { " | " };
        let description = format!("partition {}", shown.join(arrow));
        on.cut(&links, &description, self.duration_ms).await;
        Ok(())
    }

    fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
        Some(&mut self.groups)
    }

    fn live_refusal(&self, _live: &LiveCheck) -> Option<&'static str> {
        self.one_way.then_some(ONE_WAY_LIVE)
    }

    /// A partition that cuts clients from Redis nodes, triggered when a client holds the
    /// lock (`on: acquired`, step `after_acquire` or `before_renew`), aims at
    /// `holder-cut-off` (a renewal cut off times out; whether the key expires first
    /// depends on the timeouts).
    fn aim(&self, aiming: &Aiming) -> Option<State> {
        let while_held =
            aiming.on_acquired || matches!(aiming.step, Some(Step::AfterAcquire | Step::BeforeRenew));
        (while_held && cuts_clients_from_redis(&self.groups)).then_some(State::HolderCutOff)
    }
}

/// Whether the groups put some client and some Redis node on different sides.
fn cuts_clients_from_redis(groups: &[Vec<String>]) -> bool {
    let has = |group: &Vec<String>, prefix: &str| group.iter().any(|node| node.starts_with(prefix));
    groups
        .iter()
        .enumerate()
        .any(|(i, a)| has(a, "client-") && groups.iter().enumerate().any(|(j, b)| i != j && has(b, "redis-")))
}

/// Why live mode refuses a one-way fault on links.
pub const ONE_WAY_LIVE: &str = "live links are cut or slowed both ways (`one_way` does not run live yet)";

/// A drawn partition isolates its node from all the others.
impl Drawn for Partition {
    fn draw(draw: &mut Draw) -> Self {
        Partition {
            groups: vec![
                vec![draw.node.to_string()],
                draw.all.iter().filter(|n| *n != draw.node).cloned().collect(),
            ],
            one_way: false,
            duration_ms: Some(draw.duration_ms),
        }
    }
}

impl Kind for Heal {
    const TARGETS: Targets = Targets::Never;
    const RUNS_LIVE: bool = true;

    fn build(_fields: &KindFields) -> Result<Self, String> {
        Ok(Heal {})
    }

    async fn strike<S: Strike>(&self, on: &S, _targets: &[String]) -> Result<(), String> {
        on.heal();
        Ok(())
    }
}

impl Drawn for Heal {
    fn draw(_draw: &mut Draw) -> Self {
        Heal {}
    }
}
