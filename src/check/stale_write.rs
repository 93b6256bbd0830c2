//! Stale writes: fencing tokens only protect data if they never repeat and the resource
//! never accepts a token below one it has seen.
//!
//! Flags a fenced resource that accepted a write whose token is lower than the highest
//! it had seen (reads and writes both raise that mark), and two grants of the same token
//! to different clients (what `INCR` on an async-replicated master does after failover).

use std::collections::BTreeMap;

use super::Verdict;
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "stale_write";

/// Finds the first duplicate token or accepted stale write.
pub fn check(history: &History) -> Verdict {
    let mut granted: BTreeMap<u64, (&str, u64)> = BTreeMap::new();
    let mut highest: Option<u64> = None;
    let violation = history.events.iter().find_map(|event| {
        let at = || fmt_ms(event.true_us as i64);
        match event.kind {
            EventKind::Acquired { fence: Some(fence), .. } => {
                match granted.insert(fence, (event.node.as_str(), event.true_us)) {
                    Some((other, when)) if other != event.node => Some(format!(
                        "token {fence} was granted to {other} at {} ms and again to {} at {} ms",
                        fmt_ms(when as i64),
                        event.node,
                        at()
                    )),
                    _ => None,
                }
            }
            EventKind::ResourceRead { fence: Some(fence), .. } => {
                highest = highest.max(Some(fence));
                None
            }
            EventKind::ResourceWrite { fence: Some(fence), .. } => {
                let stale = highest.filter(|&seen| fence < seen).map(|seen| {
                    format!(
                        "the resource accepted {}'s write with token {fence} at {} ms after seeing token {seen}",
                        event.node,
                        at()
                    )
                });
                highest = highest.max(Some(fence));
                stale
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
    fn increasing_tokens_and_writes_in_order_are_fine() {
        let history = history(
            1000,
            vec![
                fenced_acquired(10, "client-1", Some(1)),
                fenced_write(20, "client-1", 1, 1),
                fenced_acquired(30, "client-2", Some(2)),
                fenced_write(40, "client-2", 2, 2),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }

    #[test]
    fn an_accepted_write_below_the_highest_token_is_stale() {
        let history = history(
            1000,
            vec![
                fenced_write(20, "client-2", 1, 34),
                fenced_write(40, "client-1", 2, 33),
            ],
        );
        let violation = check(&history).violation.expect("token 33 after 34 is stale");
        assert!(
            violation.contains("token 33") && violation.contains("34"),
            "{violation}"
        );
    }

    #[test]
    fn the_same_token_granted_twice_is_flagged() {
        let history = history(
            1000,
            vec![
                fenced_acquired(10, "client-1", Some(7)),
                fenced_acquired(30, "client-2", Some(7)),
            ],
        );
        assert!(
            check(&history)
                .violation
                .expect("duplicate token")
                .contains("token 7")
        );
    }

    #[test]
    fn an_unfenced_history_has_nothing_to_flag() {
        let history = history(1000, vec![acquired(10, "client-1"), write(20, "client-1", 1)]);
        assert_eq!(check(&history).violation, None);
    }
}
