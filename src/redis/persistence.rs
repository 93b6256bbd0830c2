//! Persistence modes of a node: none, an append-only file (AOF) of its write effects,
//! fsynced after every write (`appendfsync always`) or once a second (`everysec`), or RDB
//! snapshots taken at save points (`save <seconds> <changes>`).
//!
//! The AOF holds the same effects a master streams to its replicas (`replication.rs`). A
//! [`Disk`] is what survives the node's process: the world keeps it across a crash and
//! hands it to the restarted node, which replays it. Redis write(2)s each effect to the AOF
//! before it replies, so the bytes are in the OS's page cache at once and a killed process
//! loses nothing it acknowledged, whatever the fsync policy. Only the machine failing (an
//! OS crash, a power cut: the `power_loss` fault) loses the page cache: under `everysec` up
//! to the last second of acknowledged writes, under `always` none, under `no` everything
//! the OS had not yet written back on its own. Linux writes a dirty file back by itself
//! (Linux's defaults, `vm.dirty_writeback_centisecs` 500 and `vm.dirty_expire_centisecs`
//! 3000): its flusher wakes every 5 s and writes back, whole, every file first dirtied
//! 30 s or more before; the file is clean again until the next write. So under `no` a
//! power loss loses what was written since the last such writeback: up to about 35 s of
//! acknowledged writes, and none of what came before. [`Disk`] dates each write on the
//! machine's monotonic clock and works out at the power loss what the flusher had written
//! by then (the OS outlives the Redis process, so a node killed earlier is written back
//! too). The flusher's other trigger, dirty data past `vm.dirty_background_ratio` of
//! memory, never fires for an AOF of lock commands and is not modelled.
//!
//! An RDB snapshot is the whole dataset at one instant, taken when a save point is due
//! (`serverCron`, ten times a second: at least `changes` writes and more than `seconds`
//! whole seconds of the wall clock since the last save) or on `BGSAVE`/`SAVE`. Redis writes
//! it to a temporary file, fsyncs it and renames it over the last one, so the last finished
//! snapshot survives a kill and a power loss alike, and a restart loses every write after
//! it. The snapshot is taken at the instant the save is due (a small dataset's fork and
//! write take milliseconds; a crash inside them is not modelled).

use std::sync::{Arc, Mutex};

/// How often `everysec` fsyncs.
pub const FSYNC_EVERY_MS: u64 = 1000;

/// How often Linux's flusher wakes to write dirty files back (`vm.dirty_writeback_centisecs`).
pub const WRITEBACK_EVERY_MS: u64 = 5_000;

/// How long a file stays dirty before the flusher writes it back (`vm.dirty_expire_centisecs`).
pub const DIRTY_EXPIRE_MS: u64 = 30_000;

/// The machine's monotonic clock in ms, as the disk reads it.
type MachineClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// A node's AOF as its machine holds it: the bytes fsynced to the disk, then those written
/// since, still in the OS's page cache. Clones share the bytes.
#[derive(Debug, Clone, Default)]
pub struct Disk(Arc<Mutex<Pages>>);

/// The AOF's bytes by where they are.
#[derive(Default)]
struct Pages {
    synced: Vec<u8>,
    /// Writes since the file was last clean, each with the machine's clock (ms) when it
    /// was made.
    cached: Vec<(u64, Vec<u8>)>,
    /// The machine's monotonic clock; without one (a disk no node serves from yet) every
    /// write is dated 0 and a power loss at 0 finds nothing written back.
    clock: Option<MachineClock>,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            .field("synced", &self.synced.len())
            .field("cached", &self.cached.len())
            .finish_non_exhaustive()
    }
}

impl Pages {
    fn now_ms(&self) -> u64 {
        self.clock.as_ref().map_or(0, |clock| clock())
    }

    /// Moves onto the disk what the flusher had written back by `now_ms`: each time the
    /// file was written back, every write made before, starting with the first flusher
    /// wake-up [`DIRTY_EXPIRE_MS`] after the file was first dirtied.
    fn write_back(&mut self, now_ms: u64) {
        while let Some(&(dirtied_ms, _)) = self.cached.first() {
            let flushed_ms = (dirtied_ms + DIRTY_EXPIRE_MS).div_ceil(WRITEBACK_EVERY_MS) * WRITEBACK_EVERY_MS;
            if flushed_ms > now_ms {
                return;
            }
            let written = self.cached.partition_point(|&(at_ms, _)| at_ms <= flushed_ms);
            for (_, bytes) in self.cached.drain(..written) {
                self.synced.extend_from_slice(&bytes);
            }
        }
    }
}

impl Disk {
    /// An empty disk.
    pub fn new() -> Disk {
        Disk::default()
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Dates writes, and the power loss, on `clock`: the monotonic clock of the machine
    /// the node serves from (the node's, which outlives its process).
    pub fn on_machine_clock(&self, clock: impl Fn() -> u64 + Send + Sync + 'static) {
        self.pages().clock = Some(Arc::new(clock));
    }

    /// What a restarted process reads back: everything written, fsynced or not (the OS
    /// outlived the process).
    pub fn contents(&self) -> Vec<u8> {
        let pages = self.pages();
        let cached = pages.cached.iter().flat_map(|(_, bytes)| bytes.iter().copied());
        pages.synced.iter().copied().chain(cached).collect()
    }

    /// What a power loss now would leave: the bytes fsynced, or written back by the OS.
    pub fn synced(&self) -> Vec<u8> {
        let mut pages = self.pages();
        let now_ms = pages.now_ms();
        pages.write_back(now_ms);
        pages.synced.clone()
    }

    /// write(2): into the page cache.
    fn write(&self, bytes: &[u8]) {
        let mut pages = self.pages();
        let now_ms = pages.now_ms();
        // A file written back already is clean: this write dirties it afresh.
        pages.write_back(now_ms);
        pages.cached.push((now_ms, bytes.to_vec()));
    }

    /// A snapshot written to a temporary file, fsynced and renamed over the last one.
    fn replace(&self, bytes: Vec<u8>) {
        let mut pages = self.pages();
        pages.synced = bytes;
        pages.cached.clear();
    }

    /// fsync(2): the page cache onto the disk.
    fn sync(&self) {
        let mut pages = self.pages();
        let cached = std::mem::take(&mut pages.cached);
        for (_, bytes) in cached {
            pages.synced.extend_from_slice(&bytes);
        }
    }

    /// The machine fails: what was neither fsynced nor written back by the OS is gone.
    pub fn lose_page_cache(&self) {
        let mut pages = self.pages();
        let now_ms = pages.now_ms();
        pages.write_back(now_ms);
        pages.cached.clear();
    }
}

/// When the AOF is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// Before the write is acknowledged.
    Always,
    /// Once a second.
    EverySec,
    /// Never by Redis (`appendfsync no`): the page cache holds the writes until the OS
    /// writes the file back, 30 to 35 s after it was first dirtied (see the module's doc).
    No,
}

impl Fsync {
    /// The `appendfsync` parameter's value for this policy.
    pub fn parameter(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }

    /// The policy an `appendfsync` value names, in any case.
    pub fn from_parameter(value: &str) -> Option<Fsync> {
        [Fsync::Always, Fsync::EverySec, Fsync::No]
            .into_iter()
            .find(|fsync| fsync.parameter().eq_ignore_ascii_case(value))
    }
}

/// How often Redis's `serverCron` looks at the save points (`hz 10`).
pub const SAVE_CHECK_MS: u64 = 100;

/// One `save <seconds> <changes>` point: snapshot once at least `changes` writes were made
/// and more than `seconds` have passed since the last snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavePoint {
    pub seconds: u64,
    pub changes: u64,
}

/// The `save` parameter's value for these points, as `CONFIG GET save` shows it:
/// `"3600 1 300 100"`, or `""` for none.
pub fn save_parameter(points: &[SavePoint]) -> String {
    points
        .iter()
        .map(|point| format!("{} {}", point.seconds, point.changes))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The save points a `save` value names (`"3600 1 300 100"`, `""` for none), as Redis's
/// CONFIG SET reads it: pairs of non-negative integers split at single spaces; `None` when
/// it is not that.
pub fn parse_save_parameter(value: &str) -> Option<Vec<SavePoint>> {
    if value.is_empty() {
        return Some(vec![]);
    }
    let numbers: Vec<u64> = value
        .split(' ')
        .map(|word| word.parse().ok())
        .collect::<Option<_>>()?;
    if numbers.len() % 2 == 1 {
        return None;
    }
    Some(
        numbers
            .chunks(2)
            .map(|pair| SavePoint {
                seconds: pair[0],
                changes: pair[1],
            })
            .collect(),
    )
}

/// Redis 7.0's save points when its configuration names none: `3600 1 300 100 60 10000`.
pub const DEFAULT_SAVE_POINTS: [SavePoint; 3] = [
    SavePoint {
        seconds: 3600,
        changes: 1,
    },
    SavePoint {
        seconds: 300,
        changes: 100,
    },
    SavePoint {
        seconds: 60,
        changes: 10_000,
    },
];

/// A node's persistence mode.
#[derive(Debug, Clone, Default)]
pub enum Persistence {
    /// Nothing survives a restart.
    #[default]
    None,
    /// An append-only file on `disk`.
    Aof { disk: Disk, fsync: Fsync },
    /// RDB snapshots on `disk`, taken at `save_points` (none: only on `BGSAVE`/`SAVE`).
    Rdb { disk: Disk, save_points: Vec<SavePoint> },
}

/// The node's persistence writer: appends effects to the AOF and fsyncs them per its
/// mode, or counts the writes since the last RDB snapshot and says when one is due.
#[derive(Debug, Default)]
pub struct Persister {
    persistence: Persistence,
    /// Writes since the last snapshot (`server.dirty`).
    dirty: u64,
    /// The wall-clock second of the last snapshot, or of the start (`server.lastsave`).
    last_save_s: u64,
    /// Snapshots taken since the start (`rdb_saves`).
    saves: u64,
    /// Whether a BGSAVE (or a due save point, which Redis takes in the background) ran.
    saved_in_background: bool,
    /// Until when (wall ms) the last background save is in progress (see
    /// [`Persister::in_background_until`]).
    background_until_ms: u64,
}

impl Persister {
    /// A writer for `persistence`, started at wall time `now_ms`, with nothing written yet.
    pub fn new(persistence: Persistence, now_ms: u64) -> Persister {
        Persister {
            persistence,
            dirty: 0,
            last_save_s: now_ms / 1000,
            saves: 0,
            saved_in_background: false,
            background_until_ms: 0,
        }
    }

    /// Whether [`Persister::append`] writes the effects it is given (an AOF), or only
    /// counts the changes.
    pub fn appends(&self) -> bool {
        matches!(self.persistence, Persistence::Aof { .. })
    }

    /// Writes since the last snapshot (INFO's `rdb_changes_since_last_save`).
    pub fn changes_since_last_save(&self) -> u64 {
        self.dirty
    }

    /// The wall-clock second (Unix time) of the last snapshot, or of the start (LASTSAVE).
    pub fn last_save_s(&self) -> u64 {
        self.last_save_s
    }

    /// Snapshots taken since the start (INFO's `rdb_saves`).
    pub fn saves(&self) -> u64 {
        self.saves
    }

    /// Whether a snapshot was taken in the background since the start (INFO's
    /// `rdb_last_bgsave_time_sec` is -1 until one is).
    pub fn saved_in_background(&self) -> bool {
        self.saved_in_background
    }

    /// What a restarting node replays: every effect written to the AOF that its machine
    /// still has, or the last snapshot.
    pub fn saved(&self) -> Vec<u8> {
        match &self.persistence {
            Persistence::None => Vec::new(),
            Persistence::Aof { disk, .. } | Persistence::Rdb { disk, .. } => disk.contents(),
        }
    }

    /// Whether the server must call [`Persister::snapshot_due`] every [`SAVE_CHECK_MS`].
    pub fn has_save_points(&self) -> bool {
        matches!(&self.persistence, Persistence::Rdb { save_points, .. } if !save_points.is_empty())
    }

    /// Whether a save point is due at wall time `now_ms` (`serverCron`'s test; never while
    /// a background save is in progress).
    pub fn snapshot_due(&self, now_ms: u64) -> bool {
        let Persistence::Rdb { save_points, .. } = &self.persistence else {
            return false;
        };
        if self.saving_in_background(now_ms) {
            return false;
        }
        let since_s = (now_ms / 1000).saturating_sub(self.last_save_s);
        save_points
            .iter()
            .any(|point| self.dirty >= point.changes && since_s > point.seconds)
    }

    /// Writes `snapshot` (the whole dataset now) as the node's RDB file, at wall time
    /// `now_ms`, in the background (BGSAVE, a save point) or not (SAVE); `false` when the
    /// node keeps no RDB file: the snapshot is then not kept (a restart reads the AOF, or
    /// nothing), but counts as taken, as Redis's dump.rdb that its restart does not read.
    pub fn save(&mut self, snapshot: Vec<u8>, now_ms: u64, background: bool) -> bool {
        self.dirty = 0;
        self.last_save_s = now_ms / 1000;
        self.saves += 1;
        self.saved_in_background |= background;
        let Persistence::Rdb { disk, .. } = &self.persistence else {
            return false;
        };
        disk.replace(snapshot);
        true
    }

    /// Marks the background save just taken as in progress until wall time `until_ms`: the
    /// snapshot is the dataset at its start (Redis's fork), but Redis notices its child
    /// finished only at a later `serverCron`, and until then refuses another save.
    pub fn in_background_until(&mut self, until_ms: u64) {
        self.background_until_ms = until_ms;
    }

    /// Whether a background save is in progress at wall time `now_ms` (INFO's
    /// `rdb_bgsave_in_progress`).
    pub fn saving_in_background(&self, now_ms: u64) -> bool {
        now_ms < self.background_until_ms
    }

    /// Follows `CONFIG SET appendfsync`: an AOF is fsynced by `fsync` from now on (a node
    /// without an AOF only reports the value).
    pub fn set_fsync(&mut self, fsync: Fsync) {
        if let Persistence::Aof { fsync: policy, .. } = &mut self.persistence {
            *policy = fsync;
        }
    }

    /// Follows `CONFIG SET save`: RDB snapshots are taken at `points` from now on (a node
    /// without an RDB file only reports the value).
    pub fn set_save_points(&mut self, points: Vec<SavePoint>) {
        if let Persistence::Rdb { save_points, .. } = &mut self.persistence {
            *save_points = points;
        }
    }

    /// Whether the server must call [`Persister::fsync`] every [`FSYNC_EVERY_MS`].
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
    /// under `always`; `changes` writes count towards the next snapshot.
    pub fn append(&mut self, effects: &[u8], changes: u64) {
        self.dirty += changes;
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
        let mut always = Persister::new(
            Persistence::Aof {
                disk: disk.clone(),
                fsync: Fsync::Always,
            },
            0,
        );
        always.append(b"a", 1);
        disk.lose_page_cache();
        assert_eq!(disk.contents(), b"a", "fsynced before the reply");

        let disk = Disk::new();
        let mut everysec = Persister::new(
            Persistence::Aof {
                disk: disk.clone(),
                fsync: Fsync::EverySec,
            },
            0,
        );
        everysec.append(b"b", 1);
        assert_eq!(disk.contents(), b"b", "a killed process loses nothing written");
        everysec.append(b"c", 1);
        everysec.fsync();
        everysec.append(b"d", 1);
        assert_eq!(everysec.saved(), b"bcd");
        disk.lose_page_cache();
        assert_eq!(everysec.saved(), b"bc", "a power loss loses what was not fsynced");
    }

    #[test]
    fn under_appendfsync_no_a_power_loss_keeps_what_the_os_wrote_back_after_30_s() {
        let disk = Disk::new();
        let now = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let clock = now.clone();
        disk.on_machine_clock(move || clock.load(std::sync::atomic::Ordering::Relaxed));
        let at = |ms: u64| now.store(ms, std::sync::atomic::Ordering::Relaxed);
        let mut no = Persister::new(
            Persistence::Aof {
                disk: disk.clone(),
                fsync: Fsync::No,
            },
            0,
        );
        at(1_000);
        no.append(b"a", 1);
        at(20_000);
        no.append(b"b", 1);
        at(34_999);
        assert_eq!(
            disk.synced(),
            b"",
            "first dirtied at 1 s: written back at the 35 s wake-up"
        );
        at(35_000);
        assert_eq!(disk.synced(), b"ab", "the file is written back whole");
        at(36_000);
        no.append(b"c", 1);
        at(69_999);
        assert_eq!(
            disk.synced(),
            b"ab",
            "dirtied again at 36 s: written back at 70 s"
        );
        disk.lose_page_cache();
        assert_eq!(
            disk.contents(),
            b"ab",
            "a power loss then loses the write of 36 s"
        );
    }

    #[test]
    fn a_save_point_is_due_after_its_changes_and_more_than_its_seconds() {
        let disk = Disk::new();
        let points = vec![SavePoint {
            seconds: 1,
            changes: 2,
        }];
        let mut rdb = Persister::new(
            Persistence::Rdb {
                disk: disk.clone(),
                save_points: points,
            },
            10_500,
        );
        rdb.append(b"ignored", 1);
        assert!(!rdb.snapshot_due(20_000), "one change of the two");
        rdb.append(b"ignored", 1);
        assert!(
            !rdb.snapshot_due(11_999),
            "one whole second since the start is not more than one"
        );
        assert!(rdb.snapshot_due(12_000));
        assert!(rdb.save(b"snap-1".to_vec(), 12_000, true));
        assert!(!rdb.snapshot_due(60_000), "nothing written since");
        assert_eq!(rdb.last_save_s, 12);
        assert_eq!(rdb.saved(), b"snap-1");
        assert!(disk.contents() == b"snap-1", "the AOF's bytes are not written");
    }

    #[test]
    fn the_last_snapshot_survives_a_power_loss_and_is_replaced_whole_by_the_next() {
        let disk = Disk::new();
        let mut rdb = Persister::new(
            Persistence::Rdb {
                disk: disk.clone(),
                save_points: vec![],
            },
            0,
        );
        assert!(!rdb.has_save_points(), "`save \"\"`: snapshots only on request");
        rdb.save(b"first".to_vec(), 1000, false);
        rdb.save(b"second".to_vec(), 2000, true);
        assert_eq!(
            (rdb.saves(), rdb.last_save_s(), rdb.changes_since_last_save()),
            (2, 2, 0)
        );
        disk.lose_page_cache();
        assert_eq!(rdb.saved(), b"second");
        let mut none = Persister::new(Persistence::None, 0);
        assert!(
            !none.save(b"x".to_vec(), 3000, false),
            "a node without an RDB file keeps no snapshot"
        );
        assert!(none.saved().is_empty());
        assert_eq!(
            (none.saves(), none.last_save_s(), none.saved_in_background()),
            (1, 3, false),
            "SAVE still counts, as Redis's dump.rdb that no restart reads"
        );
    }
}
