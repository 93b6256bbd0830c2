//! The keyspace: 16 numbered databases of typed values, and expiry by the node's own wall
//! clock.
//!
//! Redis compares a key's absolute expiry time with `gettimeofday`, so a node whose clock
//! jumps forward expires keys early. Every method here takes `now_ms` from the node's
//! wall clock for the same reason. Keys expire lazily (on access) and actively (the
//! server calls [`Db::expire_due`] on its cron tick), whatever their type.
//!
//! A replica expires nothing itself: it hides logically expired keys from reads and waits
//! for its master's DEL, as Redis replicas do. Every change is recorded, per database, so a
//! master can write its effects to its AOF (`effects.rs`); each call that wrote is also
//! recorded as the command Redis propagates (`propagation.rs`), for the replicas.
//!
//! Hashes keep their fields in insertion order and lists are deques: what Redis's small
//! encodings (listpacks) answer, which is what lock libraries' small values get. Sorted
//! sets are ordered by score, then member, as Redis orders them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::{Deref, DerefMut};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::cmd::acl_users::Users;
use super::cmd::error::ReplyError;
use super::propagation_log::Log;
use super::subscriptions::PubSub;
use reached::Reached;

mod deadlines;
mod reached;
mod set;
mod sorted_set;
mod stream;
use deadlines::Deadlines;
pub use set::Set;
pub use sorted_set::{Score, SortedSet};
pub use stream::{Fields, Group, Stream, StreamId};

/// Redis's database count (`databases 16`).
pub const DATABASES: usize = 16;

/// A hash: fields and values in insertion order.
pub type Hash = Vec<(Vec<u8>, Vec<u8>)>;

/// A stored value of one of the types the node models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    String(Vec<u8>),
    Hash(Hash),
    List(VecDeque<Vec<u8>>),
    SortedSet(SortedSet),
    Set(Set),
    Stream(Stream),
}

/// The types, as TYPE names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    List,
    SortedSet,
    Set,
    Stream,
}

impl Kind {
    /// TYPE's word for it (and SCAN's TYPE filter's).
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::List => "list",
            Kind::SortedSet => "zset",
            Kind::Set => "set",
            Kind::Stream => "stream",
        }
    }
}

impl Value {
    pub fn kind(&self) -> Kind {
        match self {
            Value::String(_) => Kind::String,
            Value::Hash(_) => Kind::Hash,
            Value::List(_) => Kind::List,
            Value::SortedSet(_) => Kind::SortedSet,
            Value::Set(_) => Kind::Set,
            Value::Stream(_) => Kind::Stream,
        }
    }

    /// An empty value of `kind` (what a write to a missing collection creates).
    fn empty(kind: Kind) -> Value {
        match kind {
            Kind::String => Value::String(Vec::new()),
            Kind::Hash => Value::Hash(Hash::new()),
            Kind::List => Value::List(VecDeque::new()),
            Kind::SortedSet => Value::SortedSet(SortedSet::default()),
            Kind::Set => Value::Set(Set::default()),
            Kind::Stream => Value::Stream(Stream::default()),
        }
    }

    /// Whether it is a collection with nothing left (Redis deletes such keys).
    fn is_empty_collection(&self) -> bool {
        match self {
            // A stream stays, empty, as Redis keeps it (its groups live on it).
            Value::String(_) | Value::Stream(_) => false,
            Value::Hash(hash) => hash.is_empty(),
            Value::List(list) => list.is_empty(),
            Value::SortedSet(set) => set.is_empty(),
            Value::Set(set) => set.is_empty(),
        }
    }

    /// The bytes of a string value.
    pub fn as_string(&self) -> Option<&[u8]> {
        match self {
            Value::String(bytes) => Some(bytes),
            _ => None,
        }
    }
}

/// Redis's error for a command on a key of another type.
pub fn wrong_type() -> ReplyError {
    ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value".into())
}

/// A type a key can hold besides a string, taken out of its [`Value`]: each family
/// reads and writes its own type through [`Database::read`] and [`Database::write`].
pub trait Typed {
    const KIND: Kind;
    fn of(value: &Value) -> Option<&Self>;
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
}

macro_rules! typed {
    ($ty:ty, $variant:ident) => {
        impl Typed for $ty {
            const KIND: Kind = Kind::$variant;
            fn of(value: &Value) -> Option<&Self> {
                match value {
                    Value::$variant(inner) => Some(inner),
                    _ => None,
                }
            }
            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                match value {
                    Value::$variant(inner) => Some(inner),
                    _ => None,
                }
            }
        }
    };
}

typed!(Hash, Hash);
typed!(VecDeque<Vec<u8>>, List);
typed!(SortedSet, SortedSet);
typed!(Set, Set);
typed!(Stream, Stream);

/// A stored value and its absolute expiry time (node wall clock, ms), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub expires_at_ms: Option<u64>,
}

impl Entry {
    /// Redis's rule (`keyIsExpired`, and the active cycle): a key is expired once `now` is
    /// past its expiry, not at it. At the expiry millisecond it is still live: a `SET NX`
    /// then fails and a release then still finds the key.
    fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| now_ms > at)
    }

    /// Whether the key is still live at `now_ms`.
    pub fn is_live(&self, now_ms: u64) -> bool {
        !self.is_expired(now_ms)
    }
}

/// What changed in one database since it was last asked.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Every key was deleted (before the changes to `keys`).
    pub cleared: bool,
    /// Keys written, deleted or given a new expiry, in key order.
    pub keys: BTreeSet<Vec<u8>>,
}

impl Changes {
    fn is_empty(&self) -> bool {
        !self.cleared && self.keys.is_empty()
    }
}

/// One numbered database.
#[derive(Debug, Default)]
pub struct Database {
    entries: BTreeMap<Vec<u8>, Entry>,
    /// The expiry times of `entries`, kept in step with them by every method that stores,
    /// deletes or re-times an entry.
    deadlines: Deadlines,
    /// On a replica: expired keys are hidden from reads, never deleted here.
    replica: bool,
    changes: Changes,
    /// How many writes the database took (Redis's `server.dirty`, but counting a write
    /// that found nothing to change too): a call that moved it is propagated.
    dirty: u64,
    /// Keys deleted because they expired, in order, not yet propagated as their `DEL`.
    expired: Vec<Vec<u8>>,
}

impl Database {
    /// The live entry under `key`. On a master an expired one is deleted first (lazy
    /// expiry); a replica only hides it.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Entry> {
        if !self.replica && self.entries.get(key).is_some_and(|e| e.is_expired(now_ms)) {
            self.remove_entry(key);
            self.changes.keys.insert(key.to_vec());
            self.expired.push(key.to_vec());
        }
        self.entries.get(key).filter(|e| !e.is_expired(now_ms))
    }

    /// The live value under `key` if it is of `kind`; WRONGTYPE if it is another.
    pub fn get_of(&mut self, key: &[u8], kind: Kind, now_ms: u64) -> Result<Option<&Value>, ReplyError> {
        match self.get(key, now_ms) {
            None => Ok(None),
            Some(entry) if entry.value.kind() == kind => Ok(Some(&entry.value)),
            Some(_) => Err(wrong_type()),
        }
    }

    /// The live `T` under `key`; WRONGTYPE if the key holds another type.
    pub fn read<T: Typed>(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&T>, ReplyError> {
        Ok(self.get_of(key, T::KIND, now_ms)?.and_then(T::of))
    }

    /// The live `T` under `key` for a write, created empty if `create`; WRONGTYPE if the
    /// key holds another type.
    pub fn write<T: Typed>(
        &mut self,
        key: &[u8],
        create: bool,
        now_ms: u64,
    ) -> Result<Option<&mut T>, ReplyError> {
        Ok(self.get_mut_of(key, T::KIND, create, now_ms)?.and_then(T::of_mut))
    }

    /// The live string under `key`; WRONGTYPE if the key holds another type.
    pub fn get_string(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&[u8]>, ReplyError> {
        Ok(self.get_of(key, Kind::String, now_ms)?.and_then(Value::as_string))
    }

    /// The live value under `key` for a write, if it is of `kind` (WRONGTYPE if another);
    /// with `create`, a missing key is created empty. A collection the write leaves empty
    /// is deleted by [`Database::drop_if_empty`].
    pub fn get_mut_of(
        &mut self,
        key: &[u8],
        kind: Kind,
        create: bool,
        now_ms: u64,
    ) -> Result<Option<&mut Value>, ReplyError> {
        match self.get(key, now_ms).map(|e| e.value.kind()) {
            Some(found) if found != kind => return Err(wrong_type()),
            None if !create => return Ok(None),
            None => self.store(key.to_vec(), Value::empty(kind), None),
            Some(_) => {}
        }
        Ok(self.live_mut(key, now_ms).map(|entry| &mut entry.value))
    }

    /// Deletes `key` if it holds an empty collection (after a write emptied it).
    pub fn drop_if_empty(&mut self, key: &[u8]) {
        if self
            .entries
            .get(key)
            .is_some_and(|e| e.value.is_empty_collection())
        {
            self.remove_entry(key);
            self.touch(key);
        }
    }

    /// Records a write to `key`.
    fn touch(&mut self, key: &[u8]) {
        self.changes.keys.insert(key.to_vec());
        self.dirty += 1;
    }

    /// The entry under `key`, expired or not (what a master's snapshot sends).
    pub fn raw(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// Every stored key, in order, with its entry (expired ones included).
    pub fn entries(&self) -> impl Iterator<Item = (&Vec<u8>, &Entry)> {
        self.entries.iter()
    }

    fn live_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        self.get(key, now_ms)?;
        self.touch(key);
        self.entries.get_mut(key)
    }

    /// Deletes the entry under `key`, expired or not, and its expiry time.
    fn remove_entry(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        self.deadlines.remove(entry.expires_at_ms);
        Some(entry)
    }

    /// Gives the live entry under `key` the expiry `expires_at_ms` (`None`: none); its
    /// old expiry, or `None` if there is no live entry.
    fn retime(&mut self, key: &[u8], expires_at_ms: Option<u64>, now_ms: u64) -> Option<Option<u64>> {
        let entry = self.live_mut(key, now_ms)?;
        let old = std::mem::replace(&mut entry.expires_at_ms, expires_at_ms);
        self.deadlines.remove(old);
        self.deadlines.add(expires_at_ms);
        Some(old)
    }

    /// Stores the string `value` under `key`, replacing any entry and its expiry.
    pub fn set(&mut self, key: Vec<u8>, value: Vec<u8>, expires_at_ms: Option<u64>) {
        self.store(key, Value::String(value), expires_at_ms);
    }

    /// Stores `value` under `key`, replacing any entry and its expiry.
    pub fn store(&mut self, key: Vec<u8>, value: Value, expires_at_ms: Option<u64>) {
        self.dirty += 1;
        self.changes.keys.insert(key.clone());
        self.deadlines.add(expires_at_ms);
        if let Some(old) = self.entries.insert(key, Entry { value, expires_at_ms }) {
            self.deadlines.remove(old.expires_at_ms);
        }
    }

    /// Deletes a key (a replica's hidden expired one too); says whether it was live.
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.take(key, now_ms).is_some()
    }

    /// Deletes a key and hands back its entry if it was live.
    pub fn take(&mut self, key: &[u8], now_ms: u64) -> Option<Entry> {
        let live = self.get(key, now_ms).is_some();
        let entry = self.remove_entry(key);
        if entry.is_some() {
            self.touch(key);
        }
        entry.filter(|_| live)
    }

    /// Sets the absolute expiry of a live key; says whether there was one.
    pub fn set_expiry(&mut self, key: &[u8], expires_at_ms: u64, now_ms: u64) -> bool {
        self.retime(key, Some(expires_at_ms), now_ms).is_some()
    }

    /// Removes the expiry of a live key; says whether it had one.
    pub fn persist(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.retime(key, None, now_ms).flatten().is_some()
    }

    /// Deletes every key (FLUSHDB).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.deadlines = Deadlines::default();
        self.dirty += 1;
        self.changes = Changes {
            cleared: true,
            keys: BTreeSet::new(),
        };
    }

    /// Number of keys stored, expired or not (DBSIZE).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Deletes the keys expired at `now_ms`, in key order; how many. The scan runs only
    /// when the earliest expiry time says one is due.
    fn expire_due(&mut self, now_ms: u64) -> usize {
        if self.replica || self.earliest_expiry_ms().is_none_or(|from| now_ms < from) {
            return 0;
        }
        let due: Vec<Vec<u8>> = self
            .entries
            .iter()
            .filter(|(_, e)| e.is_expired(now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &due {
            self.remove_entry(key);
        }
        self.changes.keys.extend(due.iter().cloned());
        let count = due.len();
        self.expired.extend(due);
        count
    }

    fn earliest_expiry_ms(&self) -> Option<u64> {
        self.deadlines.earliest_expired_ms()
    }
}

/// What changed in each database since the keyspace was last asked, by database number.
pub type KeyspaceChanges = BTreeMap<usize, Changes>;

/// A node's keyspace: [`DATABASES`] databases, one of them selected. It derefs to the
/// selected one, which is what every key command works on; the server selects the
/// connection's database before each command (SELECT changes it).
#[derive(Debug)]
pub struct Db {
    databases: Vec<Database>,
    selected: usize,
    /// The databases written since their changes were taken, and ever.
    reached: Reached,
    /// The node's pub/sub subscriptions: here, beside the keys, because a script's
    /// `redis.call` reaches only the keyspace and may PUBLISH.
    pub pubsub: PubSub,
    /// Where SPOP's choices come from: a generator of the node's own, started the same
    /// way on every node, so a run's draws repeat (no lock client pops from sets).
    pub draws: ChaCha8Rng,
    /// The ACL users, beside the keys because a script's `redis.acl_check_cmd` reaches
    /// only the keyspace.
    pub users: Users,
    /// What the calls on the keyspace propagate (`propagation.rs`), here because a
    /// script's `redis.call` reaches only the keyspace.
    pub log: Log,
}

impl Default for Db {
    fn default() -> Self {
        Db {
            databases: (0..DATABASES).map(|_| Database::default()).collect(),
            selected: 0,
            reached: Reached::default(),
            pubsub: PubSub::default(),
            draws: ChaCha8Rng::seed_from_u64(0),
            users: Users::default(),
            log: Log::default(),
        }
    }
}

impl Deref for Db {
    type Target = Database;

    fn deref(&self) -> &Database {
        &self.databases[self.selected]
    }
}

impl DerefMut for Db {
    fn deref_mut(&mut self) -> &mut Database {
        self.database_mut(self.selected)
    }
}

impl Db {
    /// The number of the selected database.
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// Selects database `index` (below [`DATABASES`]; a larger one selects the last).
    pub fn select(&mut self, index: usize) {
        self.selected = index.min(DATABASES - 1);
    }

    /// Database `index` (below [`DATABASES`]).
    pub fn database(&self, index: usize) -> &Database {
        &self.databases[index]
    }

    /// Database `index` for a write (below [`DATABASES`]).
    pub fn database_mut(&mut self, index: usize) -> &mut Database {
        self.reached.reach(index);
        &mut self.databases[index]
    }

    /// Swaps two databases' contents (SWAPDB): every key of both changes.
    pub fn swap(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (low, high) = (a.min(b), a.max(b));
        let (first, rest) = self.databases.split_at_mut(high);
        std::mem::swap(&mut first[low].entries, &mut rest[0].entries);
        std::mem::swap(&mut first[low].deadlines, &mut rest[0].deadlines);
        for index in [a, b] {
            let database = self.database_mut(index);
            database.dirty += 1;
            database.changes.cleared = true;
            let keys: Vec<Vec<u8>> = database.entries.keys().cloned().collect();
            database.changes.keys = keys.into_iter().collect();
        }
    }

    /// Deletes every key of every database (FLUSHALL).
    pub fn clear_all(&mut self) {
        for database in &mut self.databases {
            database.clear();
        }
        self.reached.reach_all();
    }

    /// Makes this keyspace a replica's (it stops expiring keys) or a master's.
    pub fn set_replica(&mut self, replica: bool) {
        for database in &mut self.databases {
            database.replica = replica;
        }
    }

    /// What changed since the last call, in the databases that changed. Inserted one by
    /// one (in order): collecting would first gather them in a `Vec` and sort it, an
    /// allocation after every command.
    pub fn take_changes(&mut self) -> KeyspaceChanges {
        let mut changes = KeyspaceChanges::new();
        for index in self.reached.since_taken() {
            let database = &mut self.databases[index];
            if !database.changes.is_empty() {
                changes.insert(index, std::mem::take(&mut database.changes));
            }
            if database.expired.is_empty() {
                self.reached.taken(index);
            }
        }
        changes
    }

    /// How many writes the keyspace took (see [`Database`]'s `dirty`).
    pub fn dirty(&self) -> u64 {
        self.reached.ever().map(|index| self.databases[index].dirty).sum()
    }

    /// Records the `DEL` of each key that expired since last asked, each a unit of its own
    /// when `apart` (the expiry cycle's), or forgets them while the log does not record.
    pub fn record_expired(&mut self, apart: bool) {
        for index in self.reached.since_taken() {
            for key in std::mem::take(&mut self.databases[index].expired) {
                if self.log.recording {
                    if apart {
                        self.log.close_unit();
                    }
                    self.log.push(index, [vec![b"DEL".to_vec(), key]]);
                    if apart {
                        self.log.close_unit();
                    }
                }
            }
        }
    }

    /// Deletes every key whose time has come, in every database (never on a replica);
    /// returns how many.
    ///
    /// Real Redis samples 20 keys with a TTL per cycle and repeats while many were
    /// expired; scanning all of them in key order deletes the same keys without drawing
    /// random numbers, and keys here are few.
    pub fn expire_due(&mut self, now_ms: u64) -> usize {
        let mut expired = 0;
        for index in self.reached.ever() {
            let count = self.databases[index].expire_due(now_ms);
            if count > 0 {
                self.reached.reach(index);
            }
            expired += count;
        }
        self.record_expired(true);
        expired
    }

    /// The earliest time (node wall clock, ms) at which a key is expired: when
    /// [`Db::expire_due`] next has work. `None` on a replica, which expires nothing itself.
    pub fn earliest_expiry_ms(&self) -> Option<u64> {
        if self.databases[0].replica {
            return None;
        }
        self.reached
            .ever()
            .filter_map(|index| self.databases[index].earliest_expiry_ms())
            .min()
    }
}

#[cfg(test)]
mod expiry_tests;

#[cfg(test)]
mod tests;
