//! The kinds of fault: one small file per kind, one list that ties them together.
//!
//! Each kind's file holds all there is to it (TigerBeetle's src/testing keeps each fault
//! model in a small file the same way): its struct (the fields a scenario file sets, their
//! JSON, declared by [`kind!`](kind::kind)), building it from a file's fields, the checks
//! of its values, its strike, what live mode refuses of it and the dangerous state it aims
//! at (the [`Kind`] trait), and, for a kind the nemesis draws, how it draws one
//! ([`Drawn`]). The files: `pause`,
//! `crash` (crash, power loss, restart), `clock` (jump, drift), `partition` (partition,
//! heal), `degrade` (latency, loss), `reset`, `replication_stall`.
//!
//! `fault_kinds!` (defined in this file) turns the list below into what needs every kind alike, as `commands!`
//! does for Redis commands (src/redis/cmd/mod.rs): the [`FaultAction`] enum (one variant
//! per kind's struct, and the nemesis), the names files use ([`FaultKind`]), and
//! [`FaultAction`]'s methods, each a dispatch to the kind's file.
//!
//! A strike is written over [`Strike`], the schedule's primitives (pause,
//! crash, cut, degrade …): the fault schedule (`crate::schedule`) implements it over its
//! `Backend`, once for the simulator and live mode. The kinds see the scenario through
//! small views ([`Checks`], [`LiveCheck`], [`Aiming`], [`Draw`]), so no file here imports
//! one that imports it back: the data path stays scenario → schedule → world and live,
//! and neither backend knows a kind of fault.
//!
//! Adding a kind: its file; here its `mod` and `pub use` lines; its line in the list
//! (`list.rs`, and in `drawn` there if the nemesis draws it); its name in
//! `fault.rs`'s re-export; and, only if it brings a field no kind had, that field in the
//! file's object (`fault.rs`) and in [`KindFields`]. A kind that needs a new primitive
//! adds it to [`Strike`], the schedule and both backends.

mod clock;
mod crash;
mod degrade;
pub(super) mod kind;
mod list;
pub(super) mod nemesis;
mod partition;
mod pause;
mod replication_stall;
mod reset;
pub(super) mod strike;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::limits::FieldError;
use super::target::Target;
use crate::check::coverage::State;
use kind::{Aiming, Checks, Draw, Drawn, Kind, KindFields, LiveCheck, Targets};
use nemesis::{Nemesis, RandomKind};
use strike::Strike;

pub use clock::{ClockDrift, ClockJump};
pub use crash::{Crash, PowerLoss, Restart};
pub use degrade::{Latency, Loss};
pub use partition::{Heal, Partition};
pub use pause::Pause;
pub use replication_stall::ReplicationStall;
pub use reset::Reset;

/// The fields a `random` fault (the nemesis) may set.
const NEMESIS_FIELDS: &[&str] = &[
    "rate_per_s",
    "kinds",
    "duration_ms",
    "jump_ms",
    "drift_ppm",
    "latency_ms",
    "loss_rate",
    "swarm",
];

/// `FaultAction::Pause` and the like: the constructor of a variant, which names its kind.
type Variant<K> = fn(K) -> FaultAction;

/// Whether the kind of `_variant` hits only replicas when the nemesis draws it.
fn on_replicas<K: Drawn>(_variant: Variant<K>) -> bool {
    K::ON_REPLICAS
}

/// Whether the kind of `_variant` moves clocks.
fn moves_clocks<K: Kind>(_variant: Variant<K>) -> bool {
    K::MOVES_CLOCKS
}

macro_rules! fault_kinds {
    (
        kinds: { $( $variant:ident = $name:literal ),* $(,)? }
        drawn: { $( $drawn:ident ),* $(,)? }
    ) => {
        /// What a fault does: one of the kinds, each a struct of its own file.
        #[derive(Debug, Clone, PartialEq)]
        pub enum FaultAction {
            $( #[doc = concat!("A `", $name, "` fault.")] $variant($variant), )*
            /// The nemesis: faults of the given kinds at random times (a Poisson process),
            /// on random nodes, each with its fields drawn from the ranges given.
            Random(Nemesis),
        }

        /// The kinds of fault, as named in files.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
        pub(super) enum FaultKind {
            $( #[serde(rename = $name)] $variant, )*
            #[serde(rename = "random")]
            Random,
        }

        impl FaultKind {
            /// The kind's name in files.
            pub(super) fn name(self) -> &'static str {
                match self {
                    $( FaultKind::$variant => $name, )*
                    FaultKind::Random => "random",
                }
            }

            /// The fields a fault of this kind may set (beside its target and trigger), and
            /// whether it hits a target.
            pub(super) fn fields(self) -> (&'static [&'static str], Targets) {
                use kind::FieldNames;
                match self {
                    $( FaultKind::$variant => (<$variant>::FIELDS, <$variant>::TARGETS), )*
                    FaultKind::Random => (NEMESIS_FIELDS, Targets::Never),
                }
            }
        }

        impl FaultAction {
            /// The fault's `kind`, as scenario files spell it.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( FaultAction::$variant(_) => $name, )*
                    FaultAction::Random(_) => "random",
                }
            }

            /// A concrete fault of `kind` from a file's fields (the nemesis is built apart).
            pub(super) fn build(kind: FaultKind, fields: &KindFields) -> Result<Self, String> {
                Ok(match kind {
                    $( FaultKind::$variant => FaultAction::$variant(Kind::build(fields)?), )*
                    FaultKind::Random => unreachable!("the nemesis is built from its own fields"),
                })
            }

            /// The kind's own fields as a scenario file writes them (a concrete fault: the
            /// nemesis draws only those).
            pub(super) fn fields_json(&self) -> Value {
                let fields = match self {
                    $( FaultAction::$variant(kind) => serde_json::to_value(kind), )*
                    FaultAction::Random(_) => unreachable!("the nemesis draws only concrete faults"),
                };
                fields.expect("a kind's fields are plain data")
            }

            /// The checks of a concrete fault's values (the nemesis' are `validate`'s).
            pub(super) fn validate(&self, checks: &Checks) -> Result<(), FieldError> {
                match self {
                    $( FaultAction::$variant(kind) => kind.validate(checks), )*
                    FaultAction::Random(_) => unreachable!("the nemesis is checked apart"),
                }
            }

            /// Strikes a concrete fault on resolved targets, and undoes it when it has a
            /// duration.
            pub async fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> Result<(), String> {
                match self {
                    $( FaultAction::$variant(kind) => kind.strike(on, targets).await, )*
                    FaultAction::Random(_) => unreachable!("the nemesis draws only concrete faults"),
                }
            }

            /// The node groups whose links the fault acts on (partition, latency, loss), to
            /// be resolved when it strikes ([`resolve_groups`](super::target::resolve_groups)).
            pub fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
                match self {
                    $( FaultAction::$variant(kind) => kind.groups_mut(), )*
                    FaultAction::Random(_) => None,
                }
            }

            /// Whether this fault may step or re-rate a node's clock (a clock fault, or a
            /// nemesis that may draw one). A run without such a fault has clocks that keep
            /// their first offset and rate, whose sleepers need not listen for steps.
            pub fn moves_clocks(&self) -> bool {
                match self {
                    $( FaultAction::$variant(_) => <$variant>::MOVES_CLOCKS, )*
                    FaultAction::Random(nemesis) => nemesis.kinds.iter().any(|kind| kind.moves_clocks()),
                }
            }

            /// Whether live mode can strike this fault; `Err` says why not.
            pub fn runs_live(&self, live: &LiveCheck) -> Result<(), String> {
                let (runs, refusal) = match self {
                    $( FaultAction::$variant(kind) => (<$variant>::RUNS_LIVE, kind.live_refusal(live)), )*
                    FaultAction::Random(_) => (false, None),
                };
                match (runs, refusal) {
                    (false, _) => Err(format!("`{}` does not run live yet", self.kind())),
                    (true, Some(why)) => Err(why.to_string()),
                    (true, None) => Ok(()),
                }
            }

            /// The dangerous state this fault aims at, if any (the nemesis aims at nothing:
            /// it searches at random, and what it reached is reported).
            pub(super) fn aim(&self, aiming: &Aiming) -> Option<State> {
                match self {
                    $( FaultAction::$variant(kind) => kind.aim(aiming), )*
                    FaultAction::Random(_) => None,
                }
            }

            /// A fault of `kind` the nemesis drew on `draw.node`, every field from its
            /// ranges, and its target.
            pub fn draw(kind: RandomKind, draw: &mut Draw) -> (FaultAction, Option<Target>) {
                let action = match kind {
                    $( RandomKind::$drawn => FaultAction::$drawn(Drawn::draw(draw)), )*
                };
                let target = match action.hits_targets() {
                    true => Some(Target::Nodes(vec![draw.node.to_string()])),
                    false => None,
                };
                (action, target)
            }

            /// Whether a concrete fault may hit targets.
            fn hits_targets(&self) -> bool {
                let targets = match self {
                    $( FaultAction::$variant(_) => <$variant>::TARGETS, )*
                    FaultAction::Random(_) => Targets::Never,
                };
                targets != Targets::Never
            }
        }

        impl RandomKind {
            /// Every kind the nemesis draws.
            #[cfg(test)]
            pub(super) const ALL: &[RandomKind] = &[$( RandomKind::$drawn ),*];

            /// Whether a drawn fault of this kind hits only replicas.
            pub fn on_replicas(self) -> bool {
                match self {
                    $( RandomKind::$drawn => on_replicas(FaultAction::$drawn), )*
                }
            }

            /// Whether a drawn fault of this kind moves clocks.
            fn moves_clocks(self) -> bool {
                match self {
                    $( RandomKind::$drawn => moves_clocks(FaultAction::$drawn), )*
                }
            }
        }
    };
}

list::with_fault_kinds!(fault_kinds);
