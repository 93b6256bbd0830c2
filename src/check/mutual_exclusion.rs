//! Mutual exclusion: at no true instant do two clients believe they hold the lock.
//!
//! A client holds the lock from the moment its acquire returns success until it sends
//! its release, its process crashes, or the run ends. This is the *lease* view: it flags two believed holders
//! even when the protected resource happens to survive it.

use super::Verdict;
use super::by_node::ByNode;
use crate::history::{EventKind, History, fmt_ms};

/// The checker's name in scenario files and reports.
pub const NAME: &str = "mutual_exclusion";

/// A span of true time during which one client believed it held the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding<'h> {
    pub client: &'h str,
    pub from_us: u64,
    pub to_us: u64,
}

/// Every holding interval in the history, ordered by start.
pub fn holdings(history: &History) -> Vec<Holding<'_>> {
    let mut open: ByNode<u64> = ByNode::default();
    let mut done = Vec::new();
    for event in &history.events {
        match event.kind {
            EventKind::Acquired { .. } => {
                open.insert(&event.node, event.true_us);
            }
            EventKind::ReleaseSent { .. } | EventKind::Crashed => {
                if let Some(from_us) = open.remove(event.node.as_str()) {
                    done.push(Holding {
                        client: &event.node,
                        from_us,
                        to_us: event.true_us,
                    });
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_sorted().into_iter().map(|(client, from_us)| Holding {
        client,
        from_us,
        to_us: history.end_us,
    }));
    done.sort_by_key(|h| (h.from_us, h.to_us));
    done
}

/// The first pair of different clients whose holding intervals overlap, earlier first:
/// the two grants a violation rests on (the story of a run starts at the first).
pub fn overlap(history: &History) -> Option<(Holding<'_>, Holding<'_>)> {
    first_overlap(&holdings(history)).map(|(earlier, later)| (earlier.clone(), later.clone()))
}

/// [`overlap`] among holdings already found.
fn first_overlap<'s, 'h>(holdings: &'s [Holding<'h>]) -> Option<(&'s Holding<'h>, &'s Holding<'h>)> {
    holdings.iter().enumerate().find_map(|(i, earlier)| {
        holdings[i + 1..]
            .iter()
            .take_while(|later| later.from_us < earlier.to_us)
            .find(|later| later.client != earlier.client)
            .map(|later| (earlier, later))
    })
}

/// Finds the first pair of clients whose holding intervals overlap, among the history's
/// [`holdings`].
pub fn check(holdings: &[Holding]) -> Verdict {
    let violation = first_overlap(holdings).map(|(earlier, later)| {
        format!(
            "{} held the lock [{}, {}] ms while {} held it [{}, {}] ms",
            earlier.client,
            fmt_ms(earlier.from_us as i64),
            fmt_ms(earlier.to_us as i64),
            later.client,
            fmt_ms(later.from_us as i64),
            fmt_ms(later.to_us as i64),
        )
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

    fn check(history: &History) -> Verdict {
        super::check(&holdings(history))
    }

    #[test]
    fn back_to_back_holders_do_not_violate() {
        let history = history(
            1000,
            vec![
                acquired(100, "client-1"),
                release(300, "client-1"),
                acquired(305, "client-2"),
                release(600, "client-2"),
                acquired(610, "client-1"),
            ],
        );
        assert_eq!(check(&history).violation, None);
        assert_eq!(holdings(&history).len(), 3);
    }

    #[test]
    fn a_paused_holder_overlapping_the_next_violates() {
        // client-1 acquires, pauses past its TTL, client-2 acquires, client-1 resumes.
        let history = history(
            5000,
            vec![
                acquired(100, "client-1"),
                acquired(2200, "client-2"),
                release(2500, "client-2"),
                release(4100, "client-1"),
            ],
        );
        let violation = check(&history).violation.expect("overlap must be found");
        assert!(
            violation.contains("client-1") && violation.contains("client-2"),
            "{violation}"
        );
    }

    #[test]
    fn a_holder_that_never_releases_holds_until_the_end() {
        let history = history(5000, vec![acquired(100, "client-1"), acquired(4000, "client-2")]);
        assert!(check(&history).violation.is_some());
    }

    #[test]
    fn a_crashed_holder_no_longer_holds() {
        let history = history(
            5000,
            vec![
                acquired(100, "client-1"),
                crashed(200, "client-1"),
                acquired(2300, "client-2"),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }

    #[test]
    fn one_client_reacquiring_is_not_a_violation() {
        let history = history(
            1000,
            vec![
                acquired(100, "client-1"),
                acquired(200, "client-1"),
                release(300, "client-1"),
            ],
        );
        assert_eq!(check(&history).violation, None);
    }
}
