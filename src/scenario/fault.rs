//! Faults as data: what happens, to whom, and when.
//!
//! In a file a fault is one flat object: `kind`, a target, a trigger, and the fields its
//! kind uses. Loading checks that each kind gets the fields it needs and no others, so a
//! `by_ms` on a pause is an error rather than silently ignored.

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub use super::fault_kinds::FaultAction;
use super::fault_kinds::FaultKind;
use super::limits::{self, OneOrRange};
pub use super::nemesis::{Nemesis, RandomKind};
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

impl FaultAction {
    /// Whether this fault may step or re-rate a node's clock (a clock fault, or a nemesis
    /// that may draw one). A run without such a fault has clocks that keep their first
    /// offset and rate, whose sleepers need not listen for steps.
    pub fn moves_clocks(&self) -> bool {
        match self {
            FaultAction::ClockJump { .. } | FaultAction::ClockDrift { .. } => true,
            FaultAction::Random(nemesis) => nemesis
                .kinds
                .iter()
                .any(|kind| matches!(kind, RandomKind::ClockJump | RandomKind::ClockDrift)),
            _ => false,
        }
    }
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

impl FaultAction {
    /// The node groups whose links the fault acts on (partition, latency, loss), to be
    /// resolved when it strikes ([`resolve_groups`](super::target::resolve_groups)).
    pub fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
        match self {
            FaultAction::Partition { groups, .. } => Some(groups),
            FaultAction::Latency { groups, .. } | FaultAction::Loss { groups, .. } => groups.as_mut(),
            _ => None,
        }
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

impl FaultFields {
    /// The optional fields that are set, by name (target and triggers excluded).
    fn set_fields(&self) -> Vec<&'static str> {
        [
            ("duration_ms", self.duration_ms.is_some()),
            ("restart_after_ms", self.restart_after_ms.is_some()),
            ("by_ms", self.by_ms.is_some()),
            ("rate_ppm", self.rate_ppm.is_some()),
            ("groups", self.groups.is_some()),
            ("one_way", self.one_way.is_some()),
            ("latency_ms", self.latency_ms.is_some()),
            ("rate", self.rate.is_some()),
            ("rate_per_s", self.rate_per_s.is_some()),
            ("kinds", self.kinds.is_some()),
            ("jump_ms", self.jump_ms.is_some()),
            ("drift_ppm", self.drift_ppm.is_some()),
            ("loss_rate", self.loss_rate.is_some()),
            ("swarm", self.swarm.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
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

/// "field `name`: reason": the loader folds the name into the field's path.
fn field_error(field: &str, reason: impl fmt::Display) -> String {
    format!("field `{field}`: {reason}")
}

impl TryFrom<FaultFields> for Fault {
    type Error = String;

    fn try_from(f: FaultFields) -> Result<Self, String> {
        use FaultKind as K;
        let kind = f.kind;
        let name = kind.name();
        let required = |field: &str| field_error(field, format!("required by kind `{name}`"));
        let (fields, needs_target) = kind.fields();
        if let Some(unused) = f.set_fields().into_iter().find(|field| !fields.contains(field)) {
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
            (_, Some(TriggerEvent::CrashPoint), None, _) => return Err(required("step")),
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
            (None, None, None, None) if kind == K::Random => Trigger::At { at_ms: 0 },
            (None, None, None, None) => return Err(required("at_ms` or `on")),
        };
        // With a crash point, `target` says whose step springs it, whatever the kind.
        // A latency or loss fault without a target hits the whole network, with one its
        // nodes.
        let at_step = matches!(trigger, Trigger::AtStep { .. }) || matches!(kind, K::Latency | K::Loss);
        let target = match (needs_target || at_step, f.target.clone()) {
            (true, None) if needs_target => return Err(required("target")),
            (false, Some(_)) => return Err(field_error("target", format!("not used by kind `{name}`"))),
            (_, target) => target,
        };
        let fixed_duration = |optional: bool| match f.duration_ms {
            Some(OneOrRange::One(ms)) => Ok(Some(ms)),
            Some(OneOrRange::Range(_)) => Err(field_error(
                "duration_ms",
                format!("one number for kind `{name}`, not a range"),
            )),
            None if optional => Ok(None),
            None => Err(required("duration_ms")),
        };
        let action = match kind {
            K::Pause => FaultAction::Pause {
                duration_ms: fixed_duration(false)?.unwrap_or_default(),
            },
            K::Crash => FaultAction::Crash {
                restart_after_ms: f.restart_after_ms,
            },
            K::PowerLoss => FaultAction::PowerLoss {
                restart_after_ms: f.restart_after_ms,
            },
            K::Restart => FaultAction::Restart,
            K::Reset => FaultAction::Reset,
            K::ReplicationStall => FaultAction::ReplicationStall {
                duration_ms: fixed_duration(true)?,
            },
            K::ClockJump => FaultAction::ClockJump {
                by_ms: f.by_ms.ok_or_else(|| required("by_ms"))?,
            },
            K::ClockDrift => FaultAction::ClockDrift {
                rate_ppm: f.rate_ppm.ok_or_else(|| required("rate_ppm"))?,
                duration_ms: fixed_duration(true)?,
            },
            K::Partition => FaultAction::Partition {
                groups: f.groups.clone().ok_or_else(|| required("groups"))?,
                one_way: f.one_way.unwrap_or(false),
                duration_ms: fixed_duration(true)?,
            },
            K::Heal => FaultAction::Heal,
            K::Latency => FaultAction::Latency {
                latency_ms: f.latency_ms.ok_or_else(|| required("latency_ms"))?,
                groups: f.groups.clone(),
                one_way: f.one_way.unwrap_or(false),
                duration_ms: fixed_duration(true)?,
            },
            K::Loss => FaultAction::Loss {
                rate: f.rate.ok_or_else(|| required("rate"))?,
                groups: f.groups.clone(),
                one_way: f.one_way.unwrap_or(false),
                duration_ms: fixed_duration(true)?,
            },
            K::Random => {
                let duration_ms = match f.duration_ms {
                    Some(OneOrRange::Range(range)) => range,
                    Some(OneOrRange::One(ms)) => [ms, ms],
                    None => return Err(required("duration_ms")),
                };
                FaultAction::Random(Nemesis {
                    rate_per_s: f.rate_per_s.ok_or_else(|| required("rate_per_s"))?,
                    kinds: f.kinds.clone().ok_or_else(|| required("kinds"))?,
                    duration_ms,
                    jump_ms: f.jump_ms.unwrap_or(duration_ms),
                    drift_ppm: f.drift_ppm.unwrap_or(Nemesis::DEFAULT_DRIFT_PPM),
                    latency_ms: f.latency_ms.unwrap_or(Nemesis::DEFAULT_LATENCY_MS),
                    loss_rate: f.loss_rate.unwrap_or(Nemesis::DEFAULT_LOSS_RATE),
                    swarm: f.swarm.unwrap_or(false),
                })
            }
        };
        Ok(Fault {
            trigger,
            target,
            action,
        })
    }
}
