//! What a node propagates, as it records it: each call's commands, unit by unit (see
//! `super::propagation`, which decides the commands). Apart from it so that the keyspace
//! (`super::db`), which holds the log, does not import the rewrites, which read the keyspace.

/// One command to propagate, and the database it ran in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub database: usize,
    pub words: Vec<Vec<u8>>,
}

impl Op {
    /// The op with its words changed by `change`.
    pub fn map_words(self, change: impl FnOnce(Vec<Vec<u8>>) -> Vec<Vec<u8>>) -> Op {
        Op {
            database: self.database,
            words: change(self.words),
        }
    }
}

/// The commands propagated since the node last streamed them, unit by unit.
#[derive(Debug, Default)]
pub struct Log {
    /// Whether calls are recorded at all: only on a master with a backlog (a lone master
    /// copies no words only to drop them).
    pub recording: bool,
    units: Vec<Vec<Op>>,
    /// Whether the next op starts a unit of its own.
    unit_closed: bool,
}

impl Log {
    /// Ends the current unit: what is recorded next is propagated apart from it.
    pub fn close_unit(&mut self) {
        self.unit_closed = true;
    }

    /// Appends `ops`, run in `database`, to the current unit.
    pub fn push(&mut self, database: usize, ops: impl IntoIterator<Item = Vec<Vec<u8>>>) {
        for words in ops {
            if self.unit_closed || self.units.is_empty() {
                self.units.push(Vec::new());
                self.unit_closed = false;
            }
            if let Some(unit) = self.units.last_mut() {
                unit.push(Op { database, words });
            }
        }
    }

    /// The units recorded since last taken.
    pub fn take(&mut self) -> Vec<Vec<Op>> {
        self.unit_closed = false;
        std::mem::take(&mut self.units)
    }
}
