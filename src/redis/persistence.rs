//! Persistence modes of a node: none, or an append-only file (AOF) of its write effects,
//! fsynced after every write (`appendfsync always`) or once a second (`everysec`).
//!
//! The AOF holds the same effects a master streams to its replicas (`replication.rs`). A
//! [`Disk`] is what survives the node's process: the world keeps it across a crash and
//! hands it to the restarted node, which replays it. Redis write(2)s each effect to the AOF
//! before it replies, so the bytes are in the OS's page cache at once and a killed process
//! loses nothing it acknowledged, whatever the fsync policy. Only the machine failing (an
//! OS crash, a power cut: the `power_loss` fault) loses the page cache: under `everysec` up
//! to the last second of acknowledged writes, under `always` none. (Linux also writes
//! dirty pages back on its own after ~30 s; that is not modelled: the page cache keeps
//! them until the next fsync.)

use std::sync::{Arc, Mutex};

/// How often `everysec` fsyncs.
pub const FSYNC_EVERY_MS: u64 = 1000;

/// A node's AOF as its machine holds it: the bytes fsynced to the disk, then those written
/// since, still in the OS's page cache. Clones share the bytes.
#[derive(Debug, Clone, Default)]
pub struct Disk(Arc<Mutex<Pages>>);

/// The AOF's bytes by where they are.
#[derive(Debug, Default)]
struct Pages {
    synced: Vec<u8>,
    cached: Vec<u8>,
}

impl Disk {
    /// An empty disk.
    pub fn new() -> Disk {
        Disk::default()
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What a restarted process reads back: everything written, fsynced or not (the OS
    /// outlived the process).
    pub fn contents(&self) -> Vec<u8> {
        let pages = self.pages();
        [pages.synced.as_slice(), pages.cached.as_slice()].concat()
    }

    /// What a power loss now would leave: the fsynced bytes.
    pub fn synced(&self) -> Vec<u8> {
        self.pages().synced.clone()
    }

    /// write(2): into the page cache.
    fn write(&self, bytes: &[u8]) {
        self.pages().cached.extend_from_slice(bytes);
    }

    /// fsync(2): the page cache onto the disk.
    fn sync(&self) {
        let mut pages = self.pages();
        let cached = std::mem::take(&mut pages.cached);
        pages.synced.extend_from_slice(&cached);
    }

    /// The machine fails: what was not fsynced is gone.
    pub fn lose_page_cache(&self) {
        self.pages().cached.clear();
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
}

impl Aof {
    /// A writer for `persistence`, with nothing appended yet.
    pub fn new(persistence: Persistence) -> Aof {
        Aof { persistence }
    }

    /// What a restarting node replays: every effect written to the AOF that its machine
    /// still has.
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

    /// Appends the effects of a command (before its reply goes out), fsyncing them at once
    /// under `always`.
    pub fn append(&mut self, effects: &[u8]) {
        if let Persistence::Aof { disk, fsync } = &self.persistence {
            disk.write(effects);
            if *fsync == Fsync::Always {
                disk.sync();
            }
        }
    }

    /// Makes what was appended durable.
    pub fn fsync(&mut self) {
        if let Persistence::Aof { disk, .. } = &self.persistence {
            disk.sync();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_kill_loses_nothing_written_and_a_power_loss_what_was_not_fsynced() {
        let disk = Disk::new();
        let mut always = Aof::new(Persistence::Aof {
            disk: disk.clone(),
            fsync: Fsync::Always,
        });
        always.append(b"a");
        disk.lose_page_cache();
        assert_eq!(disk.contents(), b"a", "fsynced before the reply");

        let disk = Disk::new();
        let mut everysec = Aof::new(Persistence::Aof {
            disk: disk.clone(),
            fsync: Fsync::EverySec,
        });
        everysec.append(b"b");
        assert_eq!(disk.contents(), b"b", "a killed process loses nothing written");
        everysec.append(b"c");
        everysec.fsync();
        everysec.append(b"d");
        assert_eq!(everysec.saved(), b"bcd");
        disk.lose_page_cache();
        assert_eq!(everysec.saved(), b"bc", "a power loss loses what was not fsynced");
    }
}
