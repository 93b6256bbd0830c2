//! The passes that shrink a schedule (the module above lists them in order): each makes
//! smaller candidates from the best scenario so far and keeps those
//! [`Search::try_candidate`] accepts, with a step line for what it changed.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::search::{Deployment, Search};
use crate::history::EventKind;
use crate::scenario::load_str;
use crate::search::story;
use crate::sweep::run_seed;

impl Search<'_> {
    /// Pass 2: ddmin over the faults (Zeller): try halves, then complements of smaller and
    /// smaller chunks, keeping any subset that still violates.
    pub(super) fn ddmin_faults(&mut self) {
        let before = self.faults().len();
        if before > 0 && self.try_candidate(self.with_faults(Vec::new())) {
            self.steps.push(format!(
                "delta debugging: {before} faults → 0 (the workload alone violates)"
            ));
            return;
        }
        let mut chunks = 2;
        loop {
            let faults = self.faults();
            if faults.len() < 2 || self.exhausted() {
                break;
            }
            let size = faults.len().div_ceil(chunks);
            let mut reduced = false;
            for start in (0..faults.len()).step_by(size) {
                let chunk: Vec<Value> = faults[start..(start + size).min(faults.len())].to_vec();
                if self.try_candidate(self.with_faults(chunk)) {
                    chunks = 2;
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                for start in (0..faults.len()).step_by(size) {
                    let complement: Vec<Value> = faults
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i < start || *i >= start + size)
                        .map(|(_, f)| f.clone())
                        .collect();
                    if self.try_candidate(self.with_faults(complement)) {
                        chunks = (chunks - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
            }
            if !reduced {
                if chunks >= faults.len() {
                    break;
                }
                chunks = (chunks * 2).min(faults.len());
            }
        }
        let after = self.faults().len();
        if after < before {
            self.steps
                .push(format!("delta debugging: {before} faults → {after}"));
        }
    }

    /// Pass 3: halve each numeric field of each fault while the violation stays.
    pub(super) fn simplify_faults(&mut self) {
        const FIELDS: [&str; 7] = [
            "duration_ms",
            "by_ms",
            "restart_after_ms",
            "rate_ppm",
            "delay_ms",
            "rate",
            "latency_ms",
        ];
        for index in 0..self.faults().len() {
            for field in FIELDS {
                let mut halvings = 0;
                while let Some(halved) = self.best["faults"][index].get(field).and_then(halve) {
                    let mut candidate = self.best.clone();
                    candidate["faults"][index][field] = halved;
                    if !self.try_candidate(candidate) {
                        break;
                    }
                    halvings += 1;
                }
                if halvings > 0 {
                    self.steps.push(format!(
                        "fault {} ({}): {field} halved {halvings} time(s), to {}",
                        index + 1,
                        self.best["faults"][index]["kind"].as_str().unwrap_or("?"),
                        self.best["faults"][index][field]
                    ));
                }
            }
        }
    }

    /// Pass 4: fewer clients, and fewer masters and replicas if the deployment may shrink.
    pub(super) fn smaller_world(&mut self) {
        let nodes = [
            (&["topology", "masters"][..], 3, "Redis masters"),
            (&["topology", "replicas"][..], 1, "replicas"),
        ];
        let nodes = match self.deployment {
            Deployment::MayShrink => &nodes[..],
            Deployment::Keep => &[],
        };
        for &(path, floor, what) in [(&["clients", "count"][..], 2, "clients")].iter().chain(nodes) {
            let Some(start) = get_path(&self.best, path).and_then(Value::as_u64) else {
                continue;
            };
            let mut count = start;
            while count > floor {
                let mut candidate = self.best.clone();
                set_path(&mut candidate, path, json!(count - 1));
                if !self.try_candidate(candidate) {
                    break;
                }
                count -= 1;
            }
            if count < start {
                self.steps.push(format!("{what}: {start} → {count}"));
            }
        }
    }

    /// Pass 5: honest clocks and a constant latency, where the violation does not need them.
    pub(super) fn plainer_environment(&mut self) {
        if self.best.get("clocks").is_some() {
            let mut candidate = self.best.clone();
            candidate
                .as_object_mut()
                .expect("a scenario is an object")
                .remove("clocks");
            if self.try_candidate(candidate) {
                self.steps.push("clock offsets and drift removed".into());
            }
        }
        if let Some(latency) = self.best["network"]["latency_ms"].as_array().cloned()
            && latency.len() == 2
            && latency[0] != latency[1]
        {
            let mut candidate = self.best.clone();
            candidate["network"]["latency_ms"] = json!([latency[0], latency[0]]);
            if self.try_candidate(candidate) {
                self.steps
                    .push(format!("network latency constant at {} ms", latency[0]));
            }
        }
    }

    /// Pass 6: every fault's trigger time (`at_ms`; an `on` fault's earliest time) moved
    /// earlier by one offset, keeping their order and spacing: the [`offsets`](Self::offsets)
    /// tried largest first, the first that still violates taken, then again from the new
    /// schedule. The run before a fault strikes is the same run, so a fault moved to the
    /// same moment of an earlier lock cycle meets that cycle's grant, and the cycles
    /// before it drop out of the run.
    pub(super) fn earlier_faults(&mut self) {
        let before = self.earliest_fault_ms();
        while let Some(earliest) = self.earliest_fault_ms().filter(|&ms| ms > 0) {
            let moved = self.offsets(earliest).into_iter().any(|offset| {
                let faults = self
                    .faults()
                    .into_iter()
                    .map(|fault| shifted(fault, offset))
                    .collect();
                self.try_candidate(self.with_faults(faults))
            });
            if !moved {
                break;
            }
        }
        if let (Some(before), Some(after)) = (before, self.earliest_fault_ms())
            && after < before
        {
            self.steps.push(format!(
                "faults moved {} ms earlier (the first at {after} ms)",
                before - after
            ));
        }
    }

    /// The offsets (ms, largest first, none past `earliest`, the first fault's time) to
    /// move the faults earlier by: for each grant before the earliest grant the violation
    /// involves, the offset that puts the faults as far after it as they were after that
    /// grant; then `earliest` and its halves down to [`SHIFT_PRECISION_MS`]. Reading the
    /// grants spends one run.
    fn offsets(&mut self, earliest: u64) -> Vec<u64> {
        let mut offsets = BTreeSet::new();
        if !self.exhausted() {
            self.runs += 1;
            let parsed = load_str(Path::new("(shrinking)"), &self.best.to_string()).ok();
            if let Some(history) = parsed.and_then(|parsed| run_seed(&Arc::new(parsed), self.seed).ok()) {
                let involved_us = story::window(&history, &self.checker, &self.violation).from_us;
                offsets.extend(
                    history
                        .events
                        .iter()
                        .filter(|e| e.true_us < involved_us && matches!(e.kind, EventKind::Acquired { .. }))
                        .map(|grant| (involved_us - grant.true_us) / 1000)
                        .filter(|&offset| offset > 0 && offset <= earliest),
                );
            }
        }
        let mut offset = earliest;
        while offset >= SHIFT_PRECISION_MS.min(earliest) {
            offsets.insert(offset);
            offset /= 2;
        }
        offsets.into_iter().rev().collect()
    }

    /// The earliest trigger time of the faults, if there are any (`at_ms` absent is 0).
    fn earliest_fault_ms(&self) -> Option<u64> {
        self.faults()
            .iter()
            .map(|fault| fault["at_ms"].as_u64().unwrap_or(0))
            .min()
    }

    /// Pass 7: the shortest run that still violates (bisection on `duration_ms`).
    pub(super) fn shorter_run(&mut self) {
        let Some(start) = self.best["duration_ms"].as_u64() else {
            return;
        };
        let (mut low, mut high) = (0, start);
        while high - low > SHORTEN_PRECISION_MS && !self.exhausted() {
            let middle = (low + high) / 2;
            let mut candidate = self.best.clone();
            candidate["duration_ms"] = json!(middle);
            if self.try_candidate(candidate) {
                high = middle;
            } else {
                low = middle;
            }
        }
        if high < start {
            self.steps.push(format!("run cut to {high} ms (from {start})"));
        }
    }
}

/// How close to the shortest violating duration the cut lands.
const SHORTEN_PRECISION_MS: u64 = 100;

/// The smallest offset the faults are moved earlier by, unless the first fault is closer
/// to 0 ms than that.
const SHIFT_PRECISION_MS: u64 = 100;

/// `fault` with its trigger time `offset` ms earlier (a fault without `at_ms` is at 0
/// already, and is never moved, since the offset is at most the earliest trigger time).
fn shifted(mut fault: Value, offset: u64) -> Value {
    if let Some(at_ms) = fault["at_ms"].as_u64() {
        fault["at_ms"] = json!(at_ms - offset);
    }
    fault
}

/// Half of a number (or of a `[min, max]` pair), when halving still means something.
fn halve(value: &Value) -> Option<Value> {
    match value {
        Value::Number(n) if n.is_u64() => {
            let n = n.as_u64()?;
            (n > 1).then(|| json!(n / 2))
        }
        Value::Number(n) if n.is_i64() => {
            let n = n.as_i64()?;
            (n.abs() > 1).then(|| json!(n / 2))
        }
        Value::Number(n) => {
            let n = n.as_f64()?;
            (n > 0.01).then(|| json!(n / 2.0))
        }
        Value::Array(pair) if pair.len() == 2 => Some(Value::Array(vec![halve(&pair[0])?, halve(&pair[1])?])),
        _ => None,
    }
}

fn get_path<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(*key))
}

fn set_path(value: &mut Value, path: &[&str], new: Value) {
    let mut target = value;
    for key in path {
        target = &mut target[*key];
    }
    *target = new;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_keeps_the_shape_of_a_field() {
        assert_eq!(halve(&json!(4000)), Some(json!(2000)));
        assert_eq!(halve(&json!(-3000)), Some(json!(-1500)));
        assert_eq!(halve(&json!([100, 500])), Some(json!([50, 250])));
        assert_eq!(halve(&json!(1)), None);
        assert_eq!(halve(&json!("holder")), None);
    }
}
