//! Resource safety: no update of the protected register was lost.
//!
//! Each critical section reads the register and later writes back the value it read plus
//! one. If anyone else's write landed in between, the section's write erases it: a lost
//! update, the damage a broken lock actually does to data. Rejected accesses (a fenced
//! resource refusing a stale token) change nothing and are not writes.

use super::Verdict;
use super::by_node::ByNode;
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "resource_safety";

/// An update erased by a write based on a stale read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostUpdate {
    /// The client whose write erased it, when, and the value it wrote.
    pub writer: String,
    pub at_us: u64,
    pub value: i64,
    /// The value the writer had read, which another write had made stale.
    pub basis: i64,
    /// The write that was lost: its client and time (`None` when the register's value
    /// came from before the run's first recorded write).
    pub lost: Option<(String, u64)>,
    /// The value the lost write had stored.
    pub lost_value: i64,
}

/// The first write based on a read that another write had made stale, and the write it
/// erased.
pub fn lost_update(history: &History) -> Option<LostUpdate> {
    let mut current: Option<i64> = None;
    // Each client's last read not yet written back, by client: a handful of clients, found
    // by where their shared name is rather than by comparing names in a tree (issue 33).
    let mut read_by: ByNode<i64> = ByNode::default();
    let mut last_write: Option<(&str, u64)> = None;
    for event in &history.events {
        match event.kind {
            EventKind::ResourceRead { value, .. } => {
                read_by.insert(&event.node, value);
                current.get_or_insert(value);
            }
            EventKind::ResourceWrite { value, .. } => {
                if let (Some(basis), Some(now)) = (read_by.remove(event.node.as_str()), current)
                    && basis != now
                {
                    return Some(LostUpdate {
                        writer: event.node.to_string(),
                        at_us: event.true_us,
                        value,
                        basis,
                        lost: last_write.map(|(client, at_us)| (client.to_string(), at_us)),
                        lost_value: now,
                    });
                }
                current = Some(value);
                last_write = Some((&event.node, event.true_us));
            }
            _ => {}
        }
    }
    None
}

/// Finds the first write based on a read that another write had made stale.
pub fn check(history: &History) -> Verdict {
    Verdict {
        checker: NAME,
        violation: lost_update(history).map(|lost| {
            format!(
                "{} wrote {} at {} ms from its read of {}, but {} had written {} meanwhile: that update is lost",
                lost.writer,
                lost.value,
                fmt_ms(lost.at_us as i64),
                lost.basis,
                lost.lost.as_ref().map_or("another client", |(client, _)| client.as_str()),
                lost.lost_value,
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::*;

    #[test]
    fn sequential_critical_sections_lose_nothing() {
        let history = history(
            1000,
            vec![
                read(10, "client-1", 0),
                write(20, "client-1", 1),
                read(30, "client-2", 1),
                write(40, "client-2", 2),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }

    #[test]
    fn interleaved_read_modify_writes_lose_an_update() {
        let history = history(
            1000,
            vec![
                read(10, "client-1", 0),
                read(15, "client-2", 0),
                write(20, "client-2", 1),
                write(30, "client-1", 1),
            ],
        );
        let violation = check(&history).violation.expect("client-2's update is lost");
        assert!(
            violation.contains("client-1 wrote 1") && violation.contains("client-2"),
            "{violation}"
        );
        let lost = lost_update(&history).unwrap();
        assert_eq!(
            lost.lost,
            Some(("client-2".to_string(), 20_000)),
            "client-2's write at 20 ms"
        );
        assert_eq!((lost.writer.as_str(), lost.at_us), ("client-1", 30_000));
    }

    #[test]
    fn overlapping_reads_whose_stale_write_was_rejected_lose_nothing() {
        // client-1's write was refused by the fenced resource, so it is not in the history.
        let history = history(
            1000,
            vec![
                read(10, "client-1", 0),
                read(15, "client-2", 0),
                write(20, "client-2", 1),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }
}
