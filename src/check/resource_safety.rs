//! Resource safety: no update of the protected register was lost.
//!
//! Each critical section reads the register and later writes back the value it read plus
//! one. If anyone else's write landed in between, the section's write erases it: a lost
//! update, the damage a broken lock actually does to data. Rejected accesses (a fenced
//! resource refusing a stale token) change nothing and are not writes.

use std::collections::BTreeMap;

use super::Verdict;
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "resource_safety";

/// Finds the first write based on a read that another write had made stale.
pub fn check(history: &History) -> Verdict {
    let mut current: Option<i64> = None;
    let mut read_by: BTreeMap<&str, i64> = BTreeMap::new();
    let mut last_writer: Option<&str> = None;
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
                    return Verdict {
                        checker: NAME,
                        violation: Some(format!(
                            "{} wrote {value} at {} ms from its read of {basis}, but {} had written {now} \
                             meanwhile: that update is lost",
                            event.node,
                            fmt_ms(event.true_us as i64),
                            last_writer.unwrap_or("another client"),
                        )),
                    };
                }
                current = Some(value);
                last_writer = Some(&event.node);
            }
            _ => {}
        }
    }
    Verdict {
        checker: NAME,
        violation: None,
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
