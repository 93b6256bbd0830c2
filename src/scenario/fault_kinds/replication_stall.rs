//! A replication stall: a replica stops receiving its master's stream (a slow or stuck
//! link) while its acknowledgements still flow.

use super::kind::{Checks, Draw, Drawn, Kind, KindFields, Targets, kind, positive};
use super::strike::{Link, Strike};
use crate::scenario::limits::FieldError;
use crate::scenario::target::Target;

kind! {
    /// A replica stops receiving its master's stream (a slow or stuck link), for
    /// `duration_ms` or for good; the master goes on acknowledging writes.
    ReplicationStall { duration_ms: Option<u64> }
}

impl Kind for ReplicationStall {
    const TARGETS: Targets = Targets::Needed;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(ReplicationStall {
            duration_ms: fields.duration_ms(true)?,
        })
    }

    /// Its targets are replicas, named.
    fn validate(&self, checks: &Checks) -> Result<(), FieldError> {
        positive("duration_ms", self.duration_ms)?;
        let replicas = checks.replicas;
        if let Some(Target::Nodes(names)) = checks.target
            && let Some(name) = names.iter().find(|n| !replicas.contains(n))
        {
            return Err((
                "target".to_string(),
                format!("`{name}` is not a replica (replicas: {})", replicas.join(", ")),
            ));
        }
        if !matches!(checks.target, Some(Target::Nodes(_))) {
            return Err(("target".to_string(), "name the replica(s) to stall".into()));
        }
        Ok(())
    }

    /// Cuts each target's master → replica link only: the replica's acknowledgements
    /// still flow, so WAIT sees what it already has.
    async fn strike<S: Strike>(&self, on: &S, replicas: &[String]) -> Result<(), String> {
        let links: Vec<Link> = replicas
            .iter()
            .filter_map(|replica| Some((on.master_of(replica)?, replica.clone())))
            .collect();
        let description = format!("replication to {} stalls", replicas.join(","));
        on.cut(&links, &description, self.duration_ms).await;
        Ok(())
    }
}

impl Drawn for ReplicationStall {
    const ON_REPLICAS: bool = true;

    fn draw(draw: &mut Draw) -> Self {
        ReplicationStall {
            duration_ms: Some(draw.duration_ms),
        }
    }
}
