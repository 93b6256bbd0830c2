//! Faults as data: what happens, to whom, and when.
//!
//! In a file a fault is one flat object: `kind`, a target, a trigger, and the fields its
//! kind uses. Loading checks that each kind gets the fields it needs and no others, so a
//! `by_ms` on a pause is an error rather than silently ignored.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::fault_kinds::FaultKind;
pub use super::fault_kinds::kind::{Draw, LiveCheck};
use super::fault_kinds::kind::{KindFields, Targets, field_error};
pub use super::fault_kinds::nemesis::{Nemesis, RandomKind};
pub use super::fault_kinds::strike::{Degradation, Failure, Link, Scope, Strike, links_between};
pub use super::fault_kinds::{
    ClockDrift, ClockJump, Crash, FaultAction, Heal, Latency, Loss, Partition, Pause, PowerLoss,
    ReplicationStall, Reset, Restart,
};
use super::limits::{self, OneOrRange};
use super::schema_forms::{Duration, SignedDuration, StepName};
pub use super::target::Target;

pub use crate::client::Step;

/// One fault of a scenario.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "FaultFields")]
pub struct Fault {
    pub trigger: Trigger,
    /// Whom it hits; `None` for kinds that name their nodes otherwise (partition) or
    /// act on the whole network.
    pub target: Option<Target>,
    pub action: FaultAction,
}

/// When a fault fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// At a true time (ms since the start of the run).
    At { at_ms: u64 },
    /// On the first `event` at or after true time `after_ms`, then `delay_ms` later.
    On {
        event: TriggerEvent,
        after_ms: u64,
        delay_ms: u64,
    },
    /// When a client (the target, or any client) reaches `step` of the lock algorithm at
    /// or after true time `after_ms`: the fault hits it right there, before it goes on.
    AtStep { step: Step, after_ms: u64 },
}

impl Trigger {
    /// The earliest true time at which the fault can fire.
    pub fn earliest_ms(&self) -> u64 {
        match self {
            Trigger::At { at_ms } => *at_ms,
            Trigger::On { after_ms, .. } | Trigger::AtStep { after_ms, .. } => *after_ms,
        }
    }
}

/// Events a fault can wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TriggerEvent {
    /// A client's acquire returned success; `holder` then means that client.
    Acquired,
    /// A client sent its release; `holder` then means that client.
    Released,
    /// A client reached the named `step` of the lock algorithm (see [`Step`]).
    CrashPoint,
    /// A master applied a write of the lock key that no replica has yet; the write is
    /// kept from the replicas until the fault strikes. `holder` then means that master.
    WriteBeforeReplication,
}

impl Fault {
    /// The fault as a scenario file writes it, for a fault with a time trigger (what the
    /// nemesis draws): a drawn fault can be put back into a file as it struck.
    pub fn to_json(&self) -> Value {
        let mut fault = json!({ "kind": self.action.kind() });
        if let Some(target) = &self.target {
            fault["target"] = match target {
                Target::Nodes(names) if names.len() == 1 => json!(names[0]),
                Target::Nodes(names) => json!(names),
                other => json!(other.to_string()),
            };
        }
        match &self.trigger {
            Trigger::At { at_ms } => fault["at_ms"] = json!(at_ms),
            Trigger::On { .. } | Trigger::AtStep { .. } => {
                unreachable!("only faults with a time trigger are written back")
            }
        }
        let fields = self.action.fields_json();
        for (field, value) in fields.as_object().into_iter().flatten() {
            // A field left at its default is left out, as a person would write the file.
            if !value.is_null() && *value != json!(false) {
                fault[field] = value.clone();
            }
        }
        fault
    }
}

/// A fault object as written in a file: every field any kind may use.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FaultFields {
    /// What the fault does.
    kind: FaultKind,
    /// Whom it hits (see *Targets* in docs/scenarios.md).
    target: Option<Target>,
    /// When it strikes (true time); with `on`, the earliest time its event counts.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    at_ms: Option<u64>,
    /// The event it waits for, at or after `at_ms`.
    on: Option<TriggerEvent>,
    /// With `on: crash_point`: the step of the lock algorithm that springs it.
    #[schemars(with = "Option<StepName>")]
    step: Option<String>,
    /// With `on`: how long after the event it strikes.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    delay_ms: Option<u64>,
    /// How long it lasts (`random`: a `[min, max]` range of its faults' durations).
    duration_ms: Option<OneOrRange>,
    /// `crash`, `power_loss`: the node starts again this long after.
    #[serde(default, deserialize_with = "limits::opt_ms")]
    #[schemars(with = "Option<Duration>")]
    restart_after_ms: Option<u64>,
    /// `clock_jump`: the step of the node's wall clock, forward when positive.
    #[serde(default, deserialize_with = "limits::opt_signed_ms")]
    #[schemars(with = "Option<SignedDuration>")]
    by_ms: Option<i64>,
    /// `clock_drift`: how fast (+) or slow (-) the node's clock runs, in ppm.
    rate_ppm: Option<i64>,
    /// `partition`, `latency`, `loss`: groups of node names whose links between them it acts on.
    groups: Option<Vec<Vec<String>>>,
    /// Only the links from the first group to the others.
    one_way: Option<bool>,
    /// `latency`: the extra one-way delay, `[min, max]`; `random`: a slowed node's.
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    #[schemars(with = "Option<[Duration; 2]>")]
    latency_ms: Option<[u64; 2]>,
    /// `loss`: the fraction of packets dropped, in [0, 1).
    rate: Option<f64>,
    /// `random`: mean faults per second.
    rate_per_s: Option<f64>,
    /// `random`: the kinds of fault it may draw.
    kinds: Option<Vec<RandomKind>>,
    /// `random`: how far a drawn clock jump steps, `[min, max]`, either way.
    #[serde(default, deserialize_with = "limits::opt_ms_pair")]
    #[schemars(with = "Option<[Duration; 2]>")]
    jump_ms: Option<[u64; 2]>,
    /// `random`: a drawn clock drift, `[min, max]` ppm.
    drift_ppm: Option<[i64; 2]>,
    /// `random`: a lossy node's fraction of packets dropped, `[min, max]`.
    loss_rate: Option<[f64; 2]>,
    /// `random`: each seed first draws its own nemesis (swarm testing).
    swarm: Option<bool>,
}

/// A fault's schema is that of the object a file writes, which it is read from.
impl JsonSchema for Fault {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Fault".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        FaultFields::json_schema(generator)
    }
}

impl TryFrom<FaultFields> for Fault {
    type Error = String;

    fn try_from(f: FaultFields) -> Result<Self, String> {
        let kind = f.kind;
        let name = kind.name();
        let fields = KindFields {
            kind: name,
            duration_ms: f.duration_ms,
            restart_after_ms: f.restart_after_ms,
            by_ms: f.by_ms,
            rate_ppm: f.rate_ppm,
            groups: f.groups,
            one_way: f.one_way,
            latency_ms: f.latency_ms,
            rate: f.rate,
            rate_per_s: f.rate_per_s,
            kinds: f.kinds,
            jump_ms: f.jump_ms,
            drift_ppm: f.drift_ppm,
            loss_rate: f.loss_rate,
            swarm: f.swarm,
        };
        let (allowed, targets) = kind.fields();
        if let Some(unused) = fields.set().into_iter().find(|field| !allowed.contains(field)) {
            return Err(field_error(unused, format!("not used by kind `{name}`")));
        }
        let trigger = match (f.at_ms, f.on, &f.step, f.delay_ms) {
            (at_ms, Some(TriggerEvent::CrashPoint), Some(name), None) => Trigger::AtStep {
                step: name.parse::<Step>().map_err(|e| {
                    let near = limits::did_you_mean(name, Step::ALL.iter().map(|s| s.name()));
                    field_error("step", format!("{e}{near}"))
                })?,
                after_ms: at_ms.unwrap_or(0),
            },
            (_, Some(TriggerEvent::CrashPoint), None, _) => return Err(fields.required("step")),
            (_, Some(TriggerEvent::CrashPoint), _, Some(_)) => {
                return Err(field_error("delay_ms", "not used with `on: crash_point`"));
            }
            (_, _, Some(_), _) => return Err(field_error("step", "needs `on: crash_point`")),
            (at_ms, Some(event), None, delay_ms) => Trigger::On {
                event,
                after_ms: at_ms.unwrap_or(0),
                delay_ms: delay_ms.unwrap_or(0),
            },
            (_, None, None, Some(_)) => return Err(field_error("delay_ms", "needs `on`")),
            (Some(at_ms), None, None, None) => Trigger::At { at_ms },
            (None, None, None, None) if kind == FaultKind::Random => Trigger::At { at_ms: 0 },
            (None, None, None, None) => return Err(fields.required("at_ms` or `on")),
        };
        // With a crash point, `target` says whose step springs it, whatever the kind.
        // A latency or loss fault without a target hits the whole network, with one its
        // nodes.
        let at_step = matches!(trigger, Trigger::AtStep { .. });
        let target = match (targets, at_step, f.target) {
            (Targets::Needed, _, None) => return Err(fields.required("target")),
            (Targets::Never, false, Some(_)) => {
                return Err(field_error("target", format!("not used by kind `{name}`")));
            }
            (_, _, target) => target,
        };
        let action = match kind {
            FaultKind::Random => FaultAction::Random(nemesis(&fields)?),
            kind => FaultAction::build(kind, &fields)?,
        };
        Ok(Fault {
            trigger,
            target,
            action,
        })
    }
}

/// The nemesis from a `random` fault's fields.
fn nemesis(fields: &KindFields) -> Result<Nemesis, String> {
    let duration_ms = match fields.duration_ms {
        Some(OneOrRange::Range(range)) => range,
        Some(OneOrRange::One(ms)) => [ms, ms],
        None => return Err(fields.required("duration_ms")),
    };
    Ok(Nemesis {
        rate_per_s: fields.need("rate_per_s", &fields.rate_per_s)?,
        kinds: fields.need("kinds", &fields.kinds)?,
        duration_ms,
        jump_ms: fields.jump_ms.unwrap_or(duration_ms),
        drift_ppm: fields.drift_ppm.unwrap_or(Nemesis::DEFAULT_DRIFT_PPM),
        latency_ms: fields.latency_ms.unwrap_or(Nemesis::DEFAULT_LATENCY_MS),
        loss_rate: fields.loss_rate.unwrap_or(Nemesis::DEFAULT_LOSS_RATE),
        swarm: fields.swarm.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// Each kind the nemesis draws gives a fault of that kind that a file can hold: written
    /// back as JSON, it loads again to the same fault (its fields, their JSON and its
    /// building agree, in its one file).
    #[test]
    fn every_drawn_fault_loads_back_from_its_json() {
        let nemesis = Nemesis {
            rate_per_s: 1.0,
            kinds: RandomKind::ALL.to_vec(),
            duration_ms: [100, 900],
            jump_ms: [10, 90],
            drift_ppm: Nemesis::DEFAULT_DRIFT_PPM,
            latency_ms: Nemesis::DEFAULT_LATENCY_MS,
            // One rate: a drawn fraction would not come back bit for bit from JSON.
            loss_rate: [0.25, 0.25],
            swarm: false,
        };
        let all = ["client-1".to_string(), "redis-1".to_string()];
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for &kind in RandomKind::ALL {
            let (action, target) = FaultAction::draw(
                kind,
                &mut Draw {
                    nemesis: &nemesis,
                    node: "redis-1",
                    all: &all,
                    duration_ms: 500,
                    rng: &mut rng,
                },
            );
            let drawn: RandomKind = serde_json::from_value(json!(action.kind())).unwrap();
            assert_eq!(drawn, kind, "{action:?}");
            let fault = Fault {
                trigger: Trigger::At { at_ms: 1000 },
                target,
                action,
            };
            let loaded: Fault = serde_json::from_value(fault.to_json())
                .unwrap_or_else(|e| panic!("{kind:?}: {e}: {}", fault.to_json()));
            assert_eq!(loaded, fault);
        }
    }
}
