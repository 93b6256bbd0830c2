//! Degraded messages: extra latency or packet loss, on the links between groups, on every
//! write of the fault's target nodes, or on every message of the network.

use rand::RngExt as _;

use super::kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets, kind, positive};
use super::partition::ONE_WAY_LIVE;
use super::strike::{Degradation, Scope, Strike};
use crate::check::coverage::State;
use crate::client::Step;
use crate::scenario::limits::{FieldError, MAX_TIME_MS, pair_in_range};

kind! {
    /// Add latency, for `duration_ms` or for good: on the links between `groups` (from the
    /// first group only, when `one_way`), on every write of the fault's target nodes, or,
    /// with neither, to every message of the network.
    Latency {
        latency_ms: [u64; 2],
        groups: Option<Vec<Vec<String>>>,
        one_way: bool,
        duration_ms: Option<u64>,
    }
}

kind! {
    /// Drop this fraction of packets, for `duration_ms` or for good: on the links between
    /// `groups`, on every write of the fault's target nodes, or, with neither, on every
    /// message of the network. TCP resends, so for lock traffic loss shows up as delay,
    /// as on a real network.
    Loss {
        rate: f64,
        groups: Option<Vec<Vec<String>>>,
        one_way: bool,
        duration_ms: Option<u64>,
    }
}

/// The checks both share: a duration, and links between groups or whole nodes, not both
/// (at a crash point the target only says whose step springs the fault).
fn validate_reach(
    checks: &Checks,
    groups: &Option<Vec<Vec<String>>>,
    duration_ms: Option<u64>,
) -> Result<(), FieldError> {
    positive("duration_ms", duration_ms)?;
    let Some(groups) = groups else { return Ok(()) };
    if checks.target.is_some() && !checks.at_step {
        return Err((
            "groups".to_string(),
            "acts on the links between groups; a `target` acts on whole nodes: give one".into(),
        ));
    }
    (checks.groups)(groups)
}

/// Latency or loss at step `before_renew` aims at `renewal-racing-expiry`: a slowed
/// renewal may land or be answered after the key expired.
fn aim_slowed_renewal(aiming: &Aiming) -> Option<State> {
    (aiming.step == Some(Step::BeforeRenew)).then_some(State::RenewalRacingExpiry)
}

impl Kind for Latency {
    const TARGETS: Targets = Targets::Optional;
    const RUNS_LIVE: bool = true;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(Latency {
            latency_ms: fields.need("latency_ms", &fields.latency_ms)?,
            groups: fields.groups.clone(),
            one_way: fields.one_way.unwrap_or(false),
            duration_ms: fields.duration_ms(true)?,
        })
    }

    fn validate(&self, checks: &Checks) -> Result<(), FieldError> {
        validate_reach(checks, &self.groups, self.duration_ms)?;
        pair_in_range("latency_ms", self.latency_ms, 1, MAX_TIME_MS, "ms")
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        let scope = Scope::of(targets.to_vec(), self.groups.clone(), self.one_way);
        on.degrade(Degradation::Latency(self.latency_ms), scope, self.duration_ms)
            .await
    }

    fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
        self.groups.as_mut()
    }

    fn live_refusal(&self, _live: &LiveCheck) -> Option<&'static str> {
        self.one_way.then_some(ONE_WAY_LIVE)
    }

    fn aim(&self, aiming: &Aiming) -> Option<State> {
        aim_slowed_renewal(aiming)
    }
}

/// A drawn latency slows its node's writes.
impl Drawn for Latency {
    fn draw(draw: &mut Draw) -> Self {
        let [low, high] = draw.nemesis.latency_ms;
        let latency = draw.rng.random_range(low..=high);
        Latency {
            latency_ms: [latency, latency],
            groups: None,
            one_way: false,
            duration_ms: Some(draw.duration_ms),
        }
    }
}

impl Kind for Loss {
    const TARGETS: Targets = Targets::Optional;

    fn build(fields: &KindFields) -> Result<Self, String> {
        Ok(Loss {
            rate: fields.need("rate", &fields.rate)?,
            groups: fields.groups.clone(),
            one_way: fields.one_way.unwrap_or(false),
            duration_ms: fields.duration_ms(true)?,
        })
    }

    fn validate(&self, checks: &Checks) -> Result<(), FieldError> {
        validate_reach(checks, &self.groups, self.duration_ms)?;
        let rate = self.rate;
        if !(0.0..1.0).contains(&rate) {
            return Err(("rate".to_string(), format!("{rate} is not a fraction in [0, 1)")));
        }
        Ok(())
    }

    async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
        let scope = Scope::of(targets.to_vec(), self.groups.clone(), self.one_way);
        on.degrade(Degradation::Loss(self.rate), scope, self.duration_ms)
            .await
    }

    fn aim(&self, aiming: &Aiming) -> Option<State> {
        aim_slowed_renewal(aiming)
    }

    fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
        self.groups.as_mut()
    }
}

/// A drawn loss drops a fraction of its node's writes.
impl Drawn for Loss {
    fn draw(draw: &mut Draw) -> Self {
        let [low, high] = draw.nemesis.loss_rate;
        Loss {
            rate: if high > low {
                draw.rng.random_range(low..high)
            } else {
                low
            },
            groups: None,
            one_way: false,
            duration_ms: Some(draw.duration_ms),
        }
    }
}
