//! What every kind of fault provides, in its own file: the [`Kind`] trait, the [`kind!`]
//! macro that declares a kind's struct (its fields, their JSON, their names), and what a
//! kind is given to build, check, draw and judge itself — each a small view of the
//! scenario, so a kind's file imports nothing that imports it back.

use rand_chacha::ChaCha8Rng;

use super::super::limits::{FieldError, MAX_TIME_MS, OneOrRange, in_range};
use super::super::target::Target;
use super::nemesis::{Nemesis, RandomKind};
use super::strike::Strike;
use crate::check::coverage::State;
use crate::client::Step;

/// Declares a kind's struct: its fields as a scenario file names them, written back as
/// JSON by `Serialize`, and their names (the fields a file may set for it).
macro_rules! kind {
    ($(#[$doc:meta])* $name:ident { $($(#[$field_doc:meta])* $field:ident : $type:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize)]
        pub struct $name {
            $( $(#[$field_doc])* pub $field: $type, )*
        }

        impl $crate::scenario::fault_kinds::kind::FieldNames for $name {
            const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }
    };
}
pub(crate) use kind;

/// The names of a kind's fields, as files write them ([`kind!`] declares them).
pub trait FieldNames {
    const FIELDS: &'static [&'static str];
}

/// Whether a kind hits a target (beside whose step springs a crash point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// It needs one.
    Needed,
    /// It may have one (latency and loss: on its nodes' writes, else everywhere).
    Optional,
    /// It names its nodes otherwise (partition) or acts on every link (heal).
    Never,
}

/// One kind of fault: everything that differs between kinds, in the kind's own file.
pub trait Kind: FieldNames + Sized {
    /// Whether it hits a target.
    const TARGETS: Targets;
    /// Whether it steps or re-rates a node's clock.
    const MOVES_CLOCKS: bool = false;
    /// Whether live mode can strike it (then [`live_refusal`](Self::live_refusal) says
    /// when not).
    const RUNS_LIVE: bool = false;

    /// The kind from a file's fields (only its own are set: loading checked).
    fn build(fields: &KindFields) -> Result<Self, String>;
    /// The checks of its values that serde cannot express.
    fn validate(&self, _checks: &Checks) -> Result<(), FieldError> {
        Ok(())
    }
    /// Strikes it on resolved targets, and undoes it when it has a duration.
    fn strike<S: Strike>(&self, on: &S, targets: &[String]) -> impl Future<Output = Result<(), String>>;
    /// The node groups whose links it acts on, resolved when it strikes.
    fn groups_mut(&mut self) -> Option<&mut Vec<Vec<String>>> {
        None
    }
    /// Why live mode cannot strike this fault, if it cannot.
    fn live_refusal(&self, _live: &LiveCheck) -> Option<&'static str> {
        None
    }
    /// The dangerous state this fault aims at, if any (`scenario/aims.rs` says why aims
    /// matter; each kind's rule is in its file).
    fn aim(&self, _aiming: &Aiming) -> Option<State> {
        None
    }
}

/// A kind the nemesis draws.
pub trait Drawn: Kind {
    /// Whether it hits only replicas.
    const ON_REPLICAS: bool = false;

    /// A fault of this kind on `draw.node`, every field drawn from the nemesis' ranges.
    fn draw(draw: &mut Draw) -> Self;
}

/// A kind's own fields as a file sets them (loading refused those the kind does not use).
pub struct KindFields {
    /// The kind's name, for the errors.
    pub kind: &'static str,
    pub duration_ms: Option<OneOrRange>,
    pub restart_after_ms: Option<u64>,
    pub by_ms: Option<i64>,
    pub rate_ppm: Option<i64>,
    pub groups: Option<Vec<Vec<String>>>,
    pub one_way: Option<bool>,
    pub latency_ms: Option<[u64; 2]>,
    pub rate: Option<f64>,
    pub rate_per_s: Option<f64>,
    pub kinds: Option<Vec<RandomKind>>,
    pub jump_ms: Option<[u64; 2]>,
    pub drift_ppm: Option<[i64; 2]>,
    pub loss_rate: Option<[f64; 2]>,
    pub swarm: Option<bool>,
}

/// "field `name`: reason": the loader folds the name into the field's path.
pub fn field_error(field: &str, reason: impl std::fmt::Display) -> String {
    format!("field `{field}`: {reason}")
}

impl KindFields {
    /// The fields that are set, by name.
    pub fn set(&self) -> Vec<&'static str> {
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

    /// The error for a field this kind needs and the file left out.
    pub fn required(&self, field: &str) -> String {
        field_error(field, format!("required by kind `{}`", self.kind))
    }

    /// `value`, or the error that the file left out `field`.
    pub fn need<T: Clone>(&self, field: &str, value: &Option<T>) -> Result<T, String> {
        value.clone().ok_or_else(|| self.required(field))
    }

    /// A concrete fault's `duration_ms`: one number (a range is the nemesis'), required
    /// unless `optional`.
    pub fn duration_ms(&self, optional: bool) -> Result<Option<u64>, String> {
        match self.duration_ms {
            Some(OneOrRange::One(ms)) => Ok(Some(ms)),
            Some(OneOrRange::Range(_)) => Err(field_error(
                "duration_ms",
                format!("one number for kind `{}`, not a range", self.kind),
            )),
            None if optional => Ok(None),
            None => Err(self.required("duration_ms")),
        }
    }
}

/// What a kind's checks see of the scenario and of the fault around it.
pub struct Checks<'a> {
    /// The fault's target.
    pub target: Option<&'a Target>,
    /// Whether a crash point springs the fault (its target then says whose step).
    pub at_step: bool,
    /// The nodes that start as replicas.
    pub replicas: &'a [String],
    /// The checks of groups of node names.
    pub groups: &'a CheckGroups<'a>,
}

/// The checks of groups of node names: two or more, none empty, every name a node or a
/// word, no node twice.
pub type CheckGroups<'a> = dyn Fn(&[Vec<String>]) -> Result<(), FieldError> + 'a;

/// A duration a file may give, if given: at least 1 ms.
pub fn positive(field: &str, value: Option<u64>) -> Result<(), FieldError> {
    match value {
        Some(ms) => in_range(field, ms, 1, MAX_TIME_MS, "ms"),
        None => Ok(()),
    }
}

/// What live mode's refusals depend on.
pub struct LiveCheck {
    /// The target names a Redis node.
    pub names_redis: bool,
    /// The target names a client.
    pub names_client: bool,
    /// The nodes are `redis-server` processes (else locksim's own).
    pub redis_server: bool,
    /// Some Redis node keeps an AOF whose last writes sit in the page cache.
    pub cached_aof: bool,
}

/// What a kind's aim depends on: the fault's trigger and target, in the scenario.
pub struct Aiming {
    /// The crash point that springs it, if one does.
    pub step: Option<Step>,
    /// It waits for a grant (`on: acquired`).
    pub on_acquired: bool,
    /// It waits for a master's write that no replica has yet.
    pub on_write_before_replication: bool,
    /// It strikes at 0 ms, at a time.
    pub at_start: bool,
    /// Its target is `holder`.
    pub at_holder: bool,
    /// Its target names a master (a node that may grant the lock).
    pub at_a_master: bool,
    /// Some master has replicas to fail over to.
    pub has_replicas: bool,
    /// The lock's TTL.
    pub ttl_ms: u64,
}

/// What the nemesis draws a fault from.
pub struct Draw<'a> {
    pub nemesis: &'a Nemesis,
    /// The node it hits.
    pub node: &'a str,
    /// Every node a random fault may hit.
    pub all: &'a [String],
    /// Its duration, drawn already.
    pub duration_ms: u64,
    pub rng: &'a mut ChaCha8Rng,
}
