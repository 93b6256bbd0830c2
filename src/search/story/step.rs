//! A story's unit: one step, as data, before [`super::render`] words it as a line.

use crate::history::Event;

/// One step of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub true_us: u64,
    pub node: String,
    /// The node's own clock then.
    pub local_us: i64,
    pub text: String,
    /// The part this step plays in a client's routine lock cycle (key stored, grant,
    /// write, release, key gone), if it is one: such cycles in a row fold into one step.
    pub routine: Option<Routine>,
}

/// A step of one client's routine lock cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routine {
    KeyStored,
    Granted,
    Wrote,
    Released,
    KeyGone,
}

impl Step {
    /// The step that tells `event` in `text`: at its time, on its node and clock.
    pub fn of(event: &Event, text: String, routine: Option<Routine>) -> Step {
        Step {
            true_us: event.true_us,
            node: event.node.to_string(),
            local_us: event.local_us,
            text,
            routine,
        }
    }
}
