//! Persistence modes of a node: none, or an append-only file (AOF) of its write effects,
//! fsynced after every write (`appendfsync always`) or once a second (`everysec`).
//!
//! The AOF holds the same effects a master streams to its replicas (`replication.rs`). A
//! [`Disk`] is what survives the node: the world keeps it across a crash and hands it to the
//! restarted node, which replays it. Bytes written but not yet fsynced live in the node's
//! memory and die with it, so under `everysec` a crash loses up to the last second of
//! acknowledged writes, and under `always` none.

use std::sync::{Arc, Mutex};

/// How often `everysec` fsyncs.
pub const FSYNC_EVERY_MS: u64 = 1000;

/// A node's durable storage: the fsynced bytes of its AOF. Clones share the bytes.
#[derive(Debug, Clone, Default)]
pub struct Disk(Arc<Mutex<Vec<u8>>>);

impl Disk {
    /// An empty disk.
    pub fn new() -> Disk {
        Disk::default()
    }

    /// Everything fsynced so far.
    pub fn contents(&self) -> Vec<u8> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn sync(&self, bytes: &[u8]) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(bytes);
    }
}

/// When the AOF is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Before the write is acknowledged.
    Always,
    /// Once a second.
    EverySec,
}

/// A node's persistence mode.
#[derive(Debug, Clone, Default)]
pub enum Persistence {
    /// Nothing survives a restart.
    #[default]
    None,
    /// An append-only file on `disk`.
    Aof { disk: Disk, fsync: Fsync },
}

/// The node's AOF writer: appends effects, fsyncs them per its mode.
#[derive(Debug, Default)]
pub struct Aof {
    persistence: Persistence,
    /// Written but not fsynced (`everysec`): lost if the node dies now.
    unsynced: Vec<u8>,
}

impl Aof {
    /// A writer for `persistence`, with nothing appended yet.
    pub fn new(persistence: Persistence) -> Aof {
        Aof {
            persistence,
            unsynced: Vec::new(),
        }
    }

    /// What a restarting node replays: the fsynced effects.
    pub fn saved(&self) -> Vec<u8> {
        match &self.persistence {
            Persistence::None => Vec::new(),
            Persistence::Aof { disk, .. } => disk.contents(),
        }
    }

    /// Whether the server must call [`Aof::fsync`] every [`FSYNC_EVERY_MS`].
    pub fn fsyncs_every_second(&self) -> bool {
        matches!(
            self.persistence,
            Persistence::Aof {
                fsync: Fsync::EverySec,
                ..
            }
        )
    }

    /// Appends the effects of a command.
    pub fn append(&mut self, effects: &[u8]) {
        match &self.persistence {
            Persistence::None => {}
            Persistence::Aof {
                disk,
                fsync: Fsync::Always,
            } => disk.sync(effects),
            Persistence::Aof {
                fsync: Fsync::EverySec,
                ..
            } => self.unsynced.extend_from_slice(effects),
        }
    }

    /// Makes what was appended durable.
    pub fn fsync(&mut self) {
        if let Persistence::Aof { disk, .. } = &self.persistence {
            disk.sync(&self.unsynced);
        }
        self.unsynced.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_is_durable_at_once_and_everysec_after_fsync() {
        let disk = Disk::new();
        let mut always = Aof::new(Persistence::Aof {
            disk: disk.clone(),
            fsync: Fsync::Always,
        });
        always.append(b"a");
        assert_eq!(disk.contents(), b"a");

        let disk = Disk::new();
        let mut everysec = Aof::new(Persistence::Aof {
            disk: disk.clone(),
            fsync: Fsync::EverySec,
        });
        everysec.append(b"b");
        assert!(
            disk.contents().is_empty(),
            "not yet fsynced: a crash now loses it"
        );
        everysec.fsync();
        assert_eq!(everysec.saved(), b"b");
    }
}
