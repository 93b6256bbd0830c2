//! The safety envelopes' plans: for each envelope its two swept parameters, and for each
//! series a scenario template and the analytic bound's verdict at a point. Every point is a
//! scenario generated from its template and validated like a user's file, swept as one of
//! the report's sweeps ([`super::plan`]); [`envelopes`] puts the points' reports back
//! together as [`Envelope`]s for `report/` to draw.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::sweeps::{Sweep, SweepKind};
use crate::check;
use crate::report::ScenarioReport;
use crate::report::envelope::{Envelope, Series};
use crate::scenario::{ScenarioError, load_str};

/// How one envelope is built: its axes, and for each series a scenario template and the
/// bound's verdict at a point.
struct Plan {
    name: &'static str,
    title: &'static str,
    x_label: &'static str,
    y_label: &'static str,
    xs: Vec<f64>,
    ys: Vec<f64>,
    series: Vec<SeriesPlan>,
    bound: Vec<(f64, f64)>,
}

struct SeriesPlan {
    label: &'static str,
    scenario: fn(f64, f64) -> Value,
    bound_safe: fn(f64, f64) -> bool,
}

/// The TTL every envelope uses, in ms.
const TTL_MS: f64 = 2000.0;

/// The extra allowance of the distlock page's drift (`ttl × factor + 2 ms`), in ms.
const DRIFT_EXTRA_MS: f64 = 2.0;

/// The three envelopes the report shows.
fn plans() -> Vec<Plan> {
    let pause_fractions = vec![0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5];
    let delays = vec![1.0, 50.0, 100.0, 200.0, 400.0];
    let bound_pause = |delay: f64, drift_ms: f64| 1.0 - (delay + drift_ms + DRIFT_EXTRA_MS) / TTL_MS;
    vec![
        Plan {
            name: "pause-delay",
            title: "Holder pause × network delay",
            x_label: "pause / TTL",
            y_label: "one-way network delay (ms)",
            series: vec![
                SeriesPlan {
                    label: "single node, lua-release",
                    scenario: |pause, delay| pause_scenario("single", "lua-release", pause, delay),
                    bound_safe: |pause, delay| pause < 1.0 - (delay + DRIFT_EXTRA_MS) / TTL_MS,
                },
                SeriesPlan {
                    label: "Redlock, 5 masters",
                    scenario: |pause, delay| pause_scenario("redlock", "redlock", pause, delay),
                    bound_safe: |pause, delay| {
                        pause < 1.0 - (delay + 0.01 * TTL_MS + DRIFT_EXTRA_MS) / TTL_MS
                    },
                },
            ],
            bound: delays.iter().map(|&d| (bound_pause(d, 0.0), d)).collect(),
            xs: pause_fractions,
            ys: delays,
        },
        Plan {
            name: "drift-factor",
            title: "Redis clocks running fast × drift factor (Redlock, 5 masters)",
            x_label: "clock rate error of every Redis node (%)",
            y_label: "drift factor (%)",
            series: vec![SeriesPlan {
                label: "Redlock, careful clients",
                scenario: drift_scenario,
                bound_safe: |rate, factor| rate <= factor,
            }],
            bound: vec![(0.0, 0.0), (8.0, 8.0)],
            xs: vec![0.0, 0.5, 1.0, 2.0, 4.0, 8.0],
            ys: vec![0.0, 1.0, 2.0, 5.0],
        },
        Plan {
            name: "lag-failover",
            title: "Replication lag × failover delay (one master, one replica, TTL 2 s)",
            x_label: "replication lag (ms)",
            y_label: "failover after (ms without the master)",
            series: vec![SeriesPlan {
                label: "replicated, lua-release",
                scenario: failover_scenario,
                bound_safe: |lag, down_after| lag <= CRASH_DELAY_MS || down_after >= TTL_MS,
            }],
            bound: vec![(CRASH_DELAY_MS, 0.0), (CRASH_DELAY_MS, TTL_MS), (200.0, TTL_MS)],
            xs: vec![0.0, 5.0, 20.0, 50.0, 100.0, 200.0],
            ys: vec![250.0, 500.0, 1000.0, 1500.0, 2500.0],
        },
    ]
}

/// How long after a grant the master dies in the failover envelope, in ms.
const CRASH_DELAY_MS: f64 = 10.0;

/// The holder pauses right after a grant, for `pause` × TTL; every message takes `delay`.
fn pause_scenario(topology: &str, algorithm: &str, pause: f64, delay: f64) -> Value {
    let delay = delay as u64;
    json!({
        "name": format!("envelope-pause-{topology}"),
        "duration_ms": 20000,
        "topology": { "kind": topology },
        "lock": { "algorithm": algorithm, "ttl_ms": TTL_MS as u64 },
        "clients": { "count": 3, "work_ms": [100, 300] },
        "network": { "latency_ms": [delay, delay] },
        "faults": [ { "kind": "pause", "target": "holder", "on": "acquired", "at_ms": 5000,
                      "duration_ms": (pause * TTL_MS) as u64 } ]
    })
}

/// Every Redis clock runs `rate` % fast from the start; the clients' drift factor is
/// `factor` %, and they work until their validity runs out.
fn drift_scenario(rate: f64, factor: f64) -> Value {
    json!({
        "name": "envelope-drift",
        "duration_ms": 20000,
        "topology": { "kind": "redlock", "masters": 5 },
        "lock": { "algorithm": "redlock", "ttl_ms": TTL_MS as u64, "drift_factor": factor / 100.0 },
        "clients": { "count": 3, "work_ms": [5000, 5000], "stop_at_validity": true },
        "faults": [ { "kind": "clock_drift", "target": ["redis-1", "redis-2", "redis-3", "redis-4", "redis-5"],
                      "at_ms": 0, "rate_ppm": (rate * 10_000.0) as i64 } ]
    })
}

/// The master's writes wait `lag` in its output buffer to the replica (lag that dies with
/// the master, as Redis's does: latency on the wire would not, bytes on the wire arrive);
/// the master dies [`CRASH_DELAY_MS`] after a grant; the controller promotes the replica
/// after `down_after` ms without the master.
fn failover_scenario(lag: f64, down_after: f64) -> Value {
    json!({
        "name": "envelope-failover",
        "duration_ms": 20000,
        "topology": { "kind": "replicated", "replicas": 1, "down_after_ms": down_after as u64,
                      "replication_lag_ms": lag as u64 },
        "lock": { "algorithm": "lua-release", "ttl_ms": TTL_MS as u64 },
        "clients": { "count": 3, "work_ms": [1000, 1500] },
        "faults": [ { "kind": "crash", "target": "master", "on": "acquired", "at_ms": 5000,
                      "delay_ms": CRASH_DELAY_MS as u64 } ]
    })
}

/// Every point of every envelope as a sweep of `seeds` seeds, in the order [`envelopes`]
/// reads their reports: envelope by envelope, series by series, row (y) by row, x by x.
pub fn sweeps(seeds: u64, dir: &Path) -> Result<Vec<Sweep>, ScenarioError> {
    let mut sweeps = Vec::new();
    for plan in plans() {
        for (s, sp) in plan.series.iter().enumerate() {
            for &y in &plan.ys {
                for &x in &plan.xs {
                    let text = (sp.scenario)(x, y).to_string();
                    let name = point_file(plan.name, s, x, y);
                    let id = format!("envelope/{name}");
                    let file = dir.join(name);
                    let scenario = Arc::new(load_str(&file, &text)?);
                    sweeps.push(Sweep {
                        kind: SweepKind::Envelope,
                        id,
                        file,
                        scenario,
                        seeds,
                        holds_at: None,
                    });
                }
            }
        }
    }
    Ok(sweeps)
}

/// The file name of point (`x`, `y`) of series number `series` of envelope `envelope`.
fn point_file(envelope: &str, series: usize, x: f64, y: f64) -> String {
    format!("{envelope}-{}-{x}-{y}.json", series + 1)
}

/// Writes every point's scenario into `dir`, as the file [`sweeps`] names for it, so
/// `locksim replay` runs any point of the page; returns how many.
pub fn write_scenarios(dir: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut written = 0;
    for plan in plans() {
        for (s, sp) in plan.series.iter().enumerate() {
            for &y in &plan.ys {
                for &x in &plan.xs {
                    super::write_scenario(&dir.join(point_file(plan.name, s, x, y)), &(sp.scenario)(x, y))?;
                    written += 1;
                }
            }
        }
    }
    Ok(written)
}

/// The envelopes at `seeds` seeds per point, from the reports of their points' sweeps (in
/// [`sweeps`]' order).
pub fn envelopes(seeds: u64, points: &[ScenarioReport]) -> Vec<Envelope> {
    let mut points = points.iter();
    plans()
        .into_iter()
        .map(|plan| {
            let mut series = Vec::new();
            let mut bound_safe = Vec::new();
            for sp in &plan.series {
                let mut rates = Vec::new();
                let mut safe = Vec::new();
                let mut files = Vec::new();
                for &y in &plan.ys {
                    let mut row = Vec::new();
                    let mut safe_row = Vec::new();
                    let mut files_row = Vec::new();
                    for &x in &plan.xs {
                        let report = points.next().expect("a report for every point of the envelopes");
                        row.push(report.rate(check::mutual_exclusion::NAME));
                        safe_row.push((sp.bound_safe)(x, y));
                        files_row.push(report.file.display().to_string());
                    }
                    rates.push(row);
                    safe.push(safe_row);
                    files.push(files_row);
                }
                series.push(Series {
                    label: sp.label.to_string(),
                    rates,
                    files,
                });
                bound_safe.push(safe);
            }
            Envelope {
                name: plan.name.to_string(),
                title: plan.title.to_string(),
                x_label: plan.x_label.to_string(),
                y_label: plan.y_label.to_string(),
                xs: plan.xs,
                ys: plan.ys,
                series,
                bound: plan.bound,
                bound_safe,
                seeds,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn every_point_of_every_envelope_is_a_valid_scenario() {
        for plan in plans() {
            for series in &plan.series {
                for &y in &plan.ys {
                    for &x in &plan.xs {
                        let text = (series.scenario)(x, y).to_string();
                        load_str(Path::new(plan.name), &text)
                            .unwrap_or_else(|e| panic!("{}: {e}", plan.name));
                    }
                }
            }
        }
    }

    #[test]
    fn the_pause_bound_moves_with_the_delay() {
        let plan = &plans()[0];
        let single = &plan.series[0];
        assert!((single.bound_safe)(0.5, 1.0));
        assert!(!(single.bound_safe)(1.0, 1.0));
        assert!(!(single.bound_safe)(0.9, 400.0), "a long delay eats the margin");
    }
}
