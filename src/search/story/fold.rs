//! Folding what repeats: a client's routine lock cycles in a row, and a node going through
//! many keys in one instant (a replica replaying its master's backlog of long-expired
//! keys), each become one step.

use super::step::{Routine, Step};
use super::words::list;
use crate::history::fmt_ms;

/// The fewest key steps of one node in one instant that fold into one.
const CHURN: usize = 4;

/// The steps with each run of [`CHURN`] or more key steps of one node at one instant
/// folded into one step (the last kept when it stores the key that stays).
pub(super) fn fold_key_churn(steps: Vec<Step>) -> Vec<Step> {
    let is_key = |s: &Step| matches!(s.routine, Some(Routine::KeyStored | Routine::KeyGone));
    let mut folded = Vec::with_capacity(steps.len());
    let mut start = 0;
    while start < steps.len() {
        let first = &steps[start];
        let mut end = start + 1;
        if is_key(first) {
            while end < steps.len()
                && is_key(&steps[end])
                && steps[end].true_us == first.true_us
                && steps[end].node == first.node
            {
                end += 1;
            }
        }
        if end - start < CHURN {
            folded.extend_from_slice(&steps[start..end]);
            start = end;
            continue;
        }
        let last_stays = steps[end - 1].routine == Some(Routine::KeyStored);
        let churn = &steps[start..end - usize::from(last_stays)];
        let owners: Vec<String> = churn.iter().filter_map(routine_client).collect();
        let stored = churn
            .iter()
            .filter(|s| s.routine == Some(Routine::KeyStored))
            .count();
        folded.push(Step {
            text: format!(
                "{} stores and drops {stored} keys of {} in the same instant ({} steps folded)",
                first.node,
                list(&owners),
                churn.len()
            ),
            routine: None,
            ..first.clone()
        });
        if last_stays {
            folded.push(steps[end - 1].clone());
        }
        start = end;
    }
    folded
}

/// The steps with each stretch of one client's routine cycles shortened: a stretch of
/// consecutive routine steps of one client that spans two grants or more keeps its steps
/// up to its first grant (where an overlap begins) and from its last write on (the write
/// a lost update erases); what lies between becomes one step saying how many times the
/// client released the lock and took it again.
pub fn fold_routine_cycles(steps: Vec<Step>) -> Vec<Step> {
    let mut folded = Vec::with_capacity(steps.len());
    let mut start = 0;
    while start < steps.len() {
        let end = match routine_client(&steps[start]) {
            None => start + 1,
            Some(client) => {
                let mut end = start;
                while end < steps.len() && routine_client(&steps[end]).as_deref() == Some(client.as_str()) {
                    end += 1;
                }
                end.max(start + 1)
            }
        };
        let stretch = &steps[start..end];
        let first_grant = stretch.iter().position(|s| s.routine == Some(Routine::Granted));
        let last_write = stretch.iter().rposition(|s| s.routine == Some(Routine::Wrote));
        match (first_grant, last_write) {
            (Some(grant), Some(write))
                if write > grant + 1
                    && stretch[grant + 1..write]
                        .iter()
                        .any(|s| s.routine == Some(Routine::Granted)) =>
            {
                let middle = &stretch[grant + 1..write];
                let again = middle
                    .iter()
                    .filter(|s| s.routine == Some(Routine::Granted))
                    .count();
                folded.extend_from_slice(&stretch[..=grant]);
                folded.push(Step {
                    true_us: middle[0].true_us,
                    node: middle[0].node.clone(),
                    local_us: middle[0].local_us,
                    text: format!(
                        "… {} writes, releases the lock and takes it again {again} time(s), to {} ms ({} routine steps \
                         folded)",
                        routine_client(&middle[0]).unwrap_or_default(),
                        fmt_ms(middle[middle.len() - 1].true_us as i64),
                        middle.len()
                    ),
                    routine: None,
                });
                folded.extend_from_slice(&stretch[write..]);
            }
            _ => folded.extend_from_slice(stretch),
        }
        start = end;
    }
    folded
}

/// The client whose routine cycle `step` belongs to: the node for a client's own step,
/// the key's owner (the text's first `client-N` after the node list) for a key's.
fn routine_client(step: &Step) -> Option<String> {
    match step.routine? {
        Routine::KeyStored | Routine::KeyGone => step
            .text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .find(|word| word.starts_with("client-"))
            .map(str::to_string),
        _ => Some(step.node.clone()),
    }
}
