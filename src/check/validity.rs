//! Validity: a holder must not touch the resource after its own validity deadline.
//!
//! Each acquire reports how long the client believes the lock is valid (for Redlock,
//! the TTL minus the time the acquire took minus the drift allowance); each renewal
//! starts a new validity period. Any resource access after the deadline means the client
//! worked on a lock it could no longer count on. Deadlines are measured in true time
//! from the acquire (the client's own clock may drift by a few ppm).

use std::collections::BTreeMap;

use super::Verdict;
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "validity";

/// Finds the first resource access past its holder's validity deadline.
pub fn check(history: &History) -> Verdict {
    let mut deadline_us: BTreeMap<&str, u64> = BTreeMap::new();
    let violation = history.events.iter().find_map(|event| {
        let node = event.node.as_str();
        match event.kind {
            EventKind::Acquired { validity_ms, .. } | EventKind::Renewed { validity_ms } => {
                // A lock without expiry reports an unbounded validity.
                deadline_us.insert(
                    node,
                    event.true_us.saturating_add(validity_ms.saturating_mul(1000)),
                );
                None
            }
            EventKind::ReleaseSent { .. } | EventKind::Crashed => {
                deadline_us.remove(node);
                None
            }
            EventKind::ResourceRead { .. }
            | EventKind::ResourceWrite { .. }
            | EventKind::ResourceRejected { .. } => {
                let deadline = *deadline_us.get(node)?;
                (event.true_us > deadline).then(|| {
                    format!(
                        "{node} accessed the resource at {} ms, {} ms past its validity deadline ({} ms)",
                        fmt_ms(event.true_us as i64),
                        fmt_ms((event.true_us - deadline) as i64),
                        fmt_ms(deadline as i64),
                    )
                })
            }
            _ => None,
        }
    });
    Verdict {
        checker: NAME,
        violation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testing::*;

    #[test]
    fn work_within_validity_is_fine() {
        // validity is 2000 ms in the test constructors
        let history = history(
            5000,
            vec![
                acquired(100, "client-1"),
                write(2000, "client-1", 1),
                release(2050, "client-1"),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }

    #[test]
    fn a_write_after_a_pause_past_validity_violates() {
        let history = history(5000, vec![acquired(100, "client-1"), write(4100, "client-1", 1)]);
        let violation = check(&history).violation.expect("write past validity");
        assert!(
            violation.contains("client-1") && violation.contains("past its validity"),
            "{violation}"
        );
    }

    #[test]
    fn a_renewal_extends_the_deadline() {
        let renewed = at(1500, "client-1", EventKind::Renewed { validity_ms: 2000 });
        let history = history(
            5000,
            vec![acquired(100, "client-1"), renewed, write(3000, "client-1", 1)],
        );
        assert_eq!(check(&history).violation, None);
    }
}
