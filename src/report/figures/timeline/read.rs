//! Reading a run's history into a [`Timeline`]: its rows, bars, fault marks and overlap,
//! cropped to the faults and the violation, with the fault lane laid out.

use std::collections::BTreeMap;

use super::*;
use crate::check::Verdict;
use crate::check::mutual_exclusion::{holdings, overlap};
use crate::check::resource_safety::lost_update;
use crate::history::{EventKind, History, names_node};
use crate::search::story::last_time_named;

impl Timeline {
    /// The chart of a run judged by `verdicts`, cropped to the end of the violation of
    /// `checker` (of every violation when `None`) as the violation's text names it.
    pub fn of_violation(
        history: &History,
        title: &str,
        verdicts: &[Verdict],
        checker: Option<&str>,
    ) -> Timeline {
        let until = verdicts
            .iter()
            .filter(|v| checker.is_none_or(|name| v.checker == name))
            .filter_map(|v| v.violation.as_deref())
            .filter_map(last_time_named)
            .max();
        Timeline::from_history(history, title, until.map(|us| us as f64 / 1000.0))
    }

    /// The chart of `history`, cropped to the faults and what followed them up to
    /// `until_ms` (the end of the violation) plus a margin; the whole run without faults.
    pub fn from_history(history: &History, title: &str, until_ms: Option<f64>) -> Timeline {
        let ms = |us: u64| us as f64 / 1000.0;
        let end_ms = ms(history.end_us);
        let mut rows: Vec<String> = Vec::new();
        let mut clients: Vec<String> = history
            .events
            .iter()
            .filter(|e| e.node.starts_with("client-"))
            .map(|e| e.node.to_string())
            .collect();
        clients.sort_by_key(|c| (c.len(), c.clone()));
        clients.dedup();
        let mut redis: Vec<String> = history
            .events
            .iter()
            .filter(|e| e.node.starts_with("redis-"))
            .map(|e| e.node.to_string())
            .collect();
        redis.sort();
        redis.dedup();
        rows.extend(clients.iter().cloned());
        rows.extend(redis.iter().cloned());
        let row_of = |node: &str| rows.iter().position(|r| r == node);
        let colour_of = |client: &str| {
            let i = clients.iter().position(|c| c == client).unwrap_or(0);
            CLIENT_COLOURS[i % CLIENT_COLOURS.len()]
        };
        let mut owners: BTreeMap<&str, &str> = BTreeMap::new();
        let mut bars = Vec::new();
        let mut deadlines = Vec::new();
        let mut writes = Vec::new();
        let mut marks: Vec<(f64, String)> = Vec::new();
        let mut faults: Vec<(f64, f64, String)> = Vec::new();
        let mut crashes = Vec::new();
        let mut open_faults: Vec<(String, f64)> = Vec::new();
        let mut keys: BTreeMap<&str, (&str, f64)> = BTreeMap::new(); // node -> (token, since)
        let mut down: BTreeMap<&str, f64> = BTreeMap::new();
        let grey = RGBColor(150, 150, 150);
        let key_bar = |row: usize, token: &str, from: f64, to: f64, owners: &BTreeMap<&str, &str>| Bar {
            row,
            from_ms: from,
            to_ms: to,
            colour: owners.get(token).map_or(grey, |client| colour_of(client)),
            solid: true,
        };
        for event in &history.events {
            let at = ms(event.true_us);
            let row = row_of(&event.node);
            match &event.kind {
                EventKind::Acquired {
                    token, validity_ms, ..
                } => {
                    owners.insert(token, &event.node);
                    if let (Some(row), true) = (row, *validity_ms != u64::MAX) {
                        deadlines.push((row, at + *validity_ms as f64));
                    }
                }
                EventKind::Renewed { validity_ms } => {
                    if let (Some(row), true) = (row, *validity_ms != u64::MAX) {
                        deadlines.push((row, at + *validity_ms as f64));
                    }
                }
                EventKind::ResourceWrite { .. } => writes.extend(row.map(|row| (row, at, true))),
                EventKind::ResourceRejected { .. } => writes.extend(row.map(|row| (row, at, false))),
                EventKind::KeySet { token, .. } => match keys.get(event.node.as_str()).copied() {
                    // A renewal of the same key: one bar on.
                    Some((old, _)) if old == token.as_str() => {}
                    previous => {
                        if let (Some((old, since)), Some(row)) = (previous, row) {
                            bars.push(key_bar(row, old, since, at, &owners));
                        }
                        keys.insert(&event.node, (token, at));
                    }
                },
                EventKind::KeyGone { .. } => {
                    if let (Some((token, since)), Some(row)) = (keys.remove(event.node.as_str()), row) {
                        bars.push(key_bar(row, token, since, at, &owners));
                    }
                }
                EventKind::Crashed => {
                    if let (Some((token, since)), Some(row)) = (keys.remove(event.node.as_str()), row) {
                        bars.push(key_bar(row, token, since, at, &owners));
                    }
                    crashes.extend(row.map(|row| (row, at)));
                    down.insert(&event.node, at);
                }
                EventKind::Restarted => {
                    if let (Some(since), Some(row)) = (down.remove(event.node.as_str()), row) {
                        bars.push(Bar {
                            row,
                            from_ms: since,
                            to_ms: at,
                            colour: DOWN,
                            solid: false,
                        });
                    }
                }
                EventKind::FaultStarted { fault } => open_faults.push((fault.clone(), at)),
                EventKind::FaultEnded { fault } => {
                    if let Some(i) = open_faults.iter().position(|(f, _)| f == fault) {
                        let (fault, since) = open_faults.remove(i);
                        faults.push((since, at, fault));
                    }
                }
                EventKind::Failover { promoted, .. } => marks.push((at, format!("failover to {promoted}"))),
                _ => {}
            }
        }
        // Keys still stored, nodes still down and faults still on at the end of the run.
        for (node, (token, since)) in keys {
            if let Some(row) = row_of(node) {
                bars.push(key_bar(row, token, since, end_ms, &owners));
            }
        }
        for (node, since) in down {
            if let Some(row) = row_of(node) {
                bars.push(Bar {
                    row,
                    from_ms: since,
                    to_ms: end_ms,
                    colour: DOWN,
                    solid: false,
                });
            }
        }
        for (fault, since) in open_faults {
            // A fault without an end is an instant (a jump, a reset) or lasts the run.
            let lasting = fault.contains("partition") || fault.contains("stall") || fault.contains("drift");
            if lasting {
                faults.push((since, end_ms, fault));
            } else {
                marks.push((since, fault));
            }
        }
        let held = holdings(history);
        for h in &held {
            if let Some(row) = row_of(h.client) {
                bars.push(Bar {
                    row,
                    from_ms: ms(h.from_us),
                    to_ms: ms(h.to_us),
                    colour: colour_of(h.client),
                    solid: true,
                });
            }
        }
        let mut overlaps = Vec::new();
        for (i, a) in held.iter().enumerate() {
            for b in &held[i + 1..] {
                if a.client != b.client && b.from_us < a.to_us && a.from_us < b.to_us {
                    overlaps.push((ms(a.from_us.max(b.from_us)), ms(a.to_us.min(b.to_us))));
                }
            }
        }
        let first_pair = overlap(history);
        let holders: Vec<(usize, f64, f64)> = first_pair
            .iter()
            .flat_map(|(earlier, later)| [earlier, later])
            .filter_map(|h| Some((row_of(h.client)?, ms(h.from_us), ms(h.to_us))))
            .collect();
        let lost_write = lost_update(history)
            .and_then(|lost| lost.lost)
            .and_then(|(client, at_us)| Some((row_of(&client)?, ms(at_us))));
        let first_fault = faults
            .iter()
            .map(|f| f.0)
            .chain(marks.iter().map(|m| m.0))
            .fold(f64::INFINITY, f64::min);
        let from_ms = if first_fault.is_finite() {
            (first_fault - MARGIN_MS).max(0.0)
        } else {
            0.0
        };
        let to_ms = until_ms
            .map_or(end_ms, |until| (until + MARGIN_MS).min(end_ms))
            .max(from_ms + 1.0);
        // A fault that names a node (its target) is also drawn on that node's row, unless
        // it takes the node down: its row already shows the node down from its crash to
        // its restart, and a second band over it would say the same thing twice.
        for (since, until, fault) in faults.iter().filter(|(_, _, fault)| !takes_node_down(fault)) {
            for row in rows
                .iter()
                .enumerate()
                .filter(|(_, node)| names_node(fault, node))
                .map(|(row, _)| row)
            {
                bars.push(Bar {
                    row,
                    from_ms: *since,
                    to_ms: *until,
                    colour: TARGETED,
                    solid: false,
                });
            }
        }
        // Each row says how far its node's clock is off true time where the chart ends, and
        // which of the first two believed holders its client is.
        let rows = rows
            .iter()
            .enumerate()
            .map(|(row, node)| {
                let offset_us = history
                    .events
                    .iter()
                    .rfind(|e| e.node == *node && ms(e.true_us) <= to_ms)
                    .map_or(0, |e| e.local_us - e.true_us as i64);
                let name = match holders.iter().position(|h| h.0 == row) {
                    Some(i) => format!("{node}: holder {}", i + 1),
                    None => node.clone(),
                };
                match offset_us / 1000 {
                    0 => name,
                    offset_ms => format!("{name} (clock {offset_ms:+} ms)"),
                }
            })
            .collect();
        let mut faults: Vec<FaultMark> = faults
            .into_iter()
            .chain(marks.into_iter().map(|(at, label)| (at, at, label)))
            .map(|(from_ms, to_ms, label)| FaultMark {
                from_ms,
                to_ms,
                mark: short(&label),
                label,
                lane: 0,
            })
            .collect();
        faults.retain(|f| f.from_ms <= to_ms && f.to_ms >= from_ms);
        faults.sort_by(|a, b| a.from_ms.total_cmp(&b.from_ms));
        let mut fault_lanes = assign_lanes(&mut faults, from_ms, to_ms);
        let fault_key = fault_lanes > MAX_NAMED_LANES;
        if fault_key {
            for (i, fault) in faults.iter_mut().enumerate() {
                fault.mark = (i + 1).to_string();
            }
            fault_lanes = assign_lanes(&mut faults, from_ms, to_ms);
        }
        Timeline {
            title: title.to_string(),
            from_ms,
            to_ms,
            rows,
            bars,
            deadlines,
            writes,
            faults,
            fault_lanes,
            fault_key,
            crashes,
            overlaps,
            holders,
            lost_write,
        }
    }
}

/// Gives each fault the first sub-lane where its bar (or instant's marker) and its mark
/// have room after the ones already there (faults in order of start); returns how many
/// sub-lanes that took.
fn assign_lanes(faults: &mut [FaultMark], from_ms: f64, to_ms: f64) -> usize {
    const GAP_PX: i32 = 12;
    let mut lane_ends: Vec<i32> = Vec::new();
    for fault in faults.iter_mut() {
        let (label_x, width) = label_span(fault, from_ms, to_ms);
        let start = label_x.min(x_px(fault.from_ms, from_ms, to_ms) - MARKER_HALF_PX);
        let end = (label_x + width).max(x_px(fault.to_ms, from_ms, to_ms)) + GAP_PX;
        fault.lane = match lane_ends.iter().position(|&lane_end| lane_end <= start) {
            Some(lane) => lane,
            None => {
                lane_ends.push(i32::MIN);
                lane_ends.len() - 1
            }
        };
        lane_ends[fault.lane] = end;
    }
    lane_ends.len()
}

/// Whether a fault's description is a crash or a power loss (as the world records them:
/// "crash redis-1, restart after 100 ms", "power loss of redis-2"), which the node's row
/// shows as down.
fn takes_node_down(fault: &str) -> bool {
    fault.starts_with("crash ") || fault.starts_with("power loss of ")
}

/// A label short enough to sit on the chart.
fn short(label: &str) -> String {
    const MAX: usize = 48;
    if label.chars().count() <= MAX {
        label.to_string()
    } else {
        label.chars().take(MAX - 1).collect::<String>() + "…"
    }
}
