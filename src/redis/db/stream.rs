//! A stream: entries by ID, and its consumer groups with what each delivered and what is
//! pending, as Redis 7.0's t_stream.c keeps them (not its radix-tree encoding).

use std::collections::BTreeMap;

/// A stream entry's ID: milliseconds, then a sequence number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    /// The next ID after this one (`streamIncrID`); `None` past the last possible.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { seq, ..self }),
            None => Some(StreamId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// `ms-seq`, as replies write it.
    pub fn text(self) -> Vec<u8> {
        format!("{}-{}", self.ms, self.seq).into_bytes()
    }
}

/// An entry's fields and values, in the order given.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A consumer group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered to any consumer (`>` reads after it).
    pub last_delivered: StreamId,
    /// Delivered, not yet acknowledged: the consumer each went to.
    pub pending: BTreeMap<StreamId, Vec<u8>>,
    /// The consumers that read from the group.
    pub consumers: Vec<Vec<u8>>,
}

/// A stream. Unlike other collections it stays when its last entry goes (groups live on it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stream {
    pub entries: BTreeMap<StreamId, Fields>,
    /// The greatest ID ever added: new IDs must be greater.
    pub last_id: StreamId,
    pub groups: BTreeMap<Vec<u8>, Group>,
}

impl Stream {
    /// The entries after `after`, at most `count` (0: all).
    pub fn after(&self, after: StreamId, count: usize) -> Vec<(StreamId, &Fields)> {
        let Some(from) = after.next() else {
            return Vec::new();
        };
        let limit = if count == 0 { usize::MAX } else { count };
        self.entries
            .range(from..)
            .take(limit)
            .map(|(id, fields)| (*id, fields))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_after_the_last_sequence_is_the_next_millisecond() {
        let id = StreamId { ms: 5, seq: u64::MAX };
        assert_eq!(id.next(), Some(StreamId { ms: 6, seq: 0 }));
        assert_eq!(
            StreamId {
                ms: u64::MAX,
                seq: u64::MAX
            }
            .next(),
            None
        );
        assert_eq!(StreamId { ms: 1, seq: 2 }.text(), b"1-2");
    }
}
