//! The grid's tests: the shipped grid, generation, shorthands, refusals.

use super::expand::ttl_multiple;
use super::*;
use crate::scenario::{ClockJump, FaultAction, Partition, Pause, Target};

fn shipped() -> Grid {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(GRID_FILE);
    Grid::load(&file).unwrap_or_else(|e| panic!("{e}"))
}

/// A one-setup, one-fault grid; `setup` and `fault` are JSON objects.
fn grid(setup: &str, fault: &str) -> String {
    format!(
        r#"{{
          "defaults": {{ "duration_ms": 20000, "seeds": 4, "clients": {{ "count": 3, "work_ms": [100, 500] }} }},
          "setups": [ {setup} ],
          "faults": [ {fault} ]
        }}"#
    )
}

const SINGLE: &str = r#"{ "name": "single", "label": "one node",
    "topology": { "kind": "single" }, "lock": { "algorithm": "lua-release", "ttl_ms": 1500 } }"#;

const PAUSE: &str = r#"{ "name": "pause", "label": "pause", "applies_to": ["single", "redlock"],
    "faults": [ { "kind": "pause", "target": "holder", "at_ms": 5000, "duration_ms": "2*ttl" } ] }"#;

fn error_of(text: &str) -> ScenarioError {
    Grid::parse(Path::new("grid.json"), text).expect_err("the grid should be rejected")
}

fn scenario_of(matrix: &Grid, setup: usize, fault: usize) -> &Scenario {
    match &matrix.cells[setup][fault] {
        Cell::Generated { scenario, .. } => scenario,
        Cell::NotApplicable { reason } => panic!("not applicable: {reason}"),
    }
}

#[test]
fn every_applicable_cell_of_the_shipped_grid_is_a_valid_scenario() {
    let matrix = shipped();
    assert_eq!(matrix.cells.len(), matrix.setups.len());
    for (s, row) in matrix.cells.iter().enumerate() {
        assert_eq!(row.len(), matrix.faults.len());
        for (f, cell) in row.iter().enumerate() {
            if let Cell::Generated { scenario, json } = cell {
                let name = cell_name(&matrix.setups[s].name, &matrix.faults[f].name);
                assert_eq!(scenario.name, name);
                assert!(scenario.expect.entries().is_empty(), "{name} expects something");
                assert!(!json.contains("ttl\""), "{name} kept a TTL shorthand");
                assert!(!json.contains("\"@"), "{name} kept a node shorthand");
                load_str(Path::new(&name), json).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    assert!(matrix.applicable_cells() > 100, "{}", matrix.applicable_cells());
}

#[test]
fn failover_before_replication_applies_only_where_there_are_replicas() {
    let matrix = shipped();
    let failover = matrix.faults.iter().position(|f| f.name == "failover").unwrap();
    for (setup, row) in matrix.setups.iter().zip(&matrix.cells) {
        let replicated = setup.name.starts_with("replicated") || setup.name == "redisson";
        match &row[failover] {
            Cell::Generated { .. } => assert!(replicated, "{} has no replicas", setup.name),
            Cell::NotApplicable { reason } => {
                assert!(!replicated, "{}: {reason}", setup.name);
                assert!(reason.contains(&setup.name), "{reason}");
            }
        }
    }
}

#[test]
fn the_shipped_comparisons_change_one_thing_each() {
    let matrix = shipped();
    let pairs: Vec<(&str, &str)> = matrix
        .comparisons
        .iter()
        .map(|&(a, b)| (matrix.setups[a].name.as_str(), matrix.setups[b].name.as_str()))
        .collect();
    let changed = |&(a, b): &(usize, usize)| -> Vec<String> {
        changes(&matrix.setups[b], &matrix.setups[a])
            .into_iter()
            .map(|(path, _, _)| path)
            .collect()
    };
    // Topology with the client held: Redlock's client on 1 master against 5.
    let redlock = matrix.comparisons.iter().find(|&&(a, b)| {
        (matrix.setups[a].name.as_str(), matrix.setups[b].name.as_str()) == ("redlock-5", "redlock-1")
    });
    assert_eq!(
        redlock.map(changed),
        Some(vec!["topology.masters".to_string()]),
        "{pairs:?}"
    );
    // The validity check alone, and fencing none / INCR on the master / a counter.
    for (a, b, path) in [
        ("lua-release-validity", "lua-release", "lock.validity_check"),
        ("replicated-fencing-incr", "replicated", "lock.fencing"),
        ("replicated-fencing", "replicated", "lock.fencing"),
    ] {
        let pair = matrix
            .comparisons
            .iter()
            .find(|&&(x, y)| (matrix.setups[x].name.as_str(), matrix.setups[y].name.as_str()) == (a, b))
            .unwrap_or_else(|| panic!("{a} against {b} missing: {pairs:?}"));
        assert_eq!(changed(pair), [path.to_string()]);
    }
    for &(a, b) in &matrix.comparisons {
        let (setup, against) = (&matrix.setups[a], &matrix.setups[b]);
        if setup.fenced != against.fenced {
            assert!(setup.fenced, "the fenced setup comes first: {pairs:?}");
        }
    }
}

#[test]
fn a_comparison_that_changes_two_things_is_refused() {
    let mut grid: Value = serde_json::from_str(&grid(SINGLE, PAUSE)).unwrap();
    let other = json!({ "name": "other", "label": "other", "topology": { "kind": "redlock", "masters": 3 },
                        "lock": { "algorithm": "redlock", "ttl_ms": 2000 } });
    grid["setups"].as_array_mut().unwrap().push(other);
    grid["comparisons"] = json!([["other", "single"]]);
    let error = error_of(&grid.to_string());
    assert_eq!(error.field, "comparisons[0]");
    assert!(
        error.reason.contains("differ in lock and topology"),
        "{}",
        error.reason
    );
}

#[test]
fn the_shipped_fencing_rows_are_marked_fenced() {
    let matrix = shipped();
    for setup in &matrix.setups {
        assert_eq!(setup.fenced, setup.name.contains("fencing"), "{}", setup.name);
    }
}

#[test]
fn one_master_is_the_first_master_of_any_topology() {
    let one = r#"{ "name": "one", "label": "one master restarts", "applies_to": ["single", "redlock"],
        "faults": [ { "kind": "crash", "target": "@one-master", "at_ms": 5000, "restart_after_ms": "0.05*ttl" },
                    { "kind": "partition", "groups": [["@one-master"], ["client-1"]], "at_ms": 6000 } ] }"#;
    let redlock = r#"{ "name": "rl", "label": "Redlock", "topology": { "kind": "redlock", "masters": 5 },
        "lock": { "algorithm": "redlock", "ttl_ms": 1000 } }"#;
    let text = grid(&format!("{SINGLE}, {redlock}"), one);
    let matrix = Grid::parse(Path::new("grid.json"), &text).unwrap_or_else(|e| panic!("{e}"));
    for setup in [0, 1] {
        let cell = scenario_of(&matrix, setup, 0);
        assert_eq!(
            cell.faults[0].target,
            Some(Target::Nodes(vec!["redis-1".into()])),
            "one name, not a list"
        );
        let FaultAction::Partition(Partition { groups, .. }) = &cell.faults[1].action else {
            panic!("{:?}", cell.faults[1]);
        };
        assert_eq!(groups[0], ["redis-1"], "one of the masters in a list");
    }
}

#[test]
fn ttl_relative_values_and_node_lists_are_expanded() {
    let partition = r#"{ "name": "cut", "label": "cut", "applies_to": ["redlock"],
        "faults": [ { "kind": "partition", "groups": [["@masters"], ["client-1"]], "at_ms": 5000, "duration_ms": "ttl" },
                    { "kind": "clock_jump", "target": ["@redis"], "at_ms": 5000, "by_ms": "-0.5*ttl" } ],
        "scenario": { "clients": { "write_delay_ms": ["1.25 * ttl", "1.5*ttl"] } } }"#;
    let redlock = r#"{ "name": "rl", "label": "Redlock", "topology": { "kind": "redlock", "masters": 3, "replicas": 1 },
        "lock": { "algorithm": "redlock", "ttl_ms": 1000 } }"#;
    let text = grid(&format!("{SINGLE}, {redlock}"), &format!("{PAUSE}, {partition}"));
    let matrix = Grid::parse(Path::new("grid.json"), &text).unwrap_or_else(|e| panic!("{e}"));
    let paused = scenario_of(&matrix, 0, 0);
    assert_eq!(
        paused.faults[0].action,
        FaultAction::Pause(Pause { duration_ms: 3000 })
    );
    assert_eq!(paused.seeds, 4, "the defaults' seeds");
    let cut = scenario_of(&matrix, 1, 1);
    let FaultAction::Partition(Partition {
        groups, duration_ms, ..
    }) = &cut.faults[0].action
    else {
        panic!("{:?}", cut.faults[0]);
    };
    assert_eq!(groups[0], ["redis-1", "redis-2", "redis-3"]);
    assert_eq!(*duration_ms, Some(1000));
    assert_eq!(
        cut.faults[1].action,
        FaultAction::ClockJump(ClockJump { by_ms: -500 })
    );
    let Some(Target::Nodes(every)) = &cut.faults[1].target else {
        panic!("{:?}", cut.faults[1].target);
    };
    assert_eq!(every.len(), 6, "three masters and their replicas: {every:?}");
    assert_eq!(cut.clients.write_delay_ms, Some([1250, 1500]));
    assert!(
        matches!(&matrix.cells[0][1], Cell::NotApplicable { reason } if reason.contains("redlock")),
        "the partition class applies to Redlock only"
    );
}

#[test]
fn the_setup_wins_over_the_fault_class_and_the_defaults() {
    let long_work = r#"{ "name": "long", "label": "long work", "topology": { "kind": "single" },
        "lock": { "algorithm": "lua-release", "ttl_ms": 2000, "node_timeout_ms": 300 },
        "clients": { "work_ms": ["ttl", "2*ttl"] }, "seeds": 7 }"#;
    let slow = r#"{ "name": "slow", "label": "slow", "applies_to": ["single"], "faults": [],
        "scenario": { "lock": { "node_timeout_ms": 9000 }, "clients": { "work_ms": [1, 2], "think_ms": [5, 5] } } }"#;
    let matrix =
        Grid::parse(Path::new("grid.json"), &grid(long_work, slow)).unwrap_or_else(|e| panic!("{e}"));
    let cell = scenario_of(&matrix, 0, 0);
    assert_eq!(cell.clients.work_ms, [2000, 4000]);
    assert_eq!(
        cell.clients.think_ms,
        [5, 5],
        "what the setup leaves open, the fault class sets"
    );
    assert_eq!(cell.clients.count, 3, "the defaults");
    assert_eq!(cell.lock.options().request_timeout_ms, 300);
    assert_eq!(cell.seeds, 7);
}

#[test]
fn an_unknown_field_is_named_with_the_file() {
    let text =
        grid(SINGLE, PAUSE).replace(r#""label": "one node","#, r#""label": "one node", "lable": "x","#);
    let e = error_of(&text);
    assert_eq!(e.field, "setups[0].lable");
    assert!(e.reason.contains("unknown field"), "{e}");
    assert!(
        e.to_string().starts_with("grid.json: field `setups[0].lable`"),
        "{e}"
    );
    let e = error_of(&grid(SINGLE, PAUSE).replace(r#""defaults""#, r#""extra": 1, "defaults""#));
    assert_eq!(e.field, "extra");
    let e = error_of(&grid(
        SINGLE,
        &PAUSE.replace(r#""applies_to""#, r#""applies": 1, "applies_to""#),
    ));
    assert_eq!(e.field, "faults[0].applies");
}

#[test]
fn an_unknown_setup_algorithm_is_named() {
    let e = error_of(&grid(&SINGLE.replace("lua-release", "lua-relase"), PAUSE));
    assert_eq!(e.field, "setups[0].lock.algorithm");
    assert!(e.reason.contains("lua-relase"), "{e}");
    let e = error_of(&grid(
        &SINGLE.replace(r#""ttl_ms": 1500"#, r#""ttl_ms": "2s""#),
        PAUSE,
    ));
    assert_eq!(e.field, "setups[0].lock.ttl_ms");
}

#[test]
fn bad_grids_are_errors_naming_the_field() {
    let cases = [
        (
            grid(SINGLE, &PAUSE.replace(r#""single", "redlock""#, r#""ring""#)),
            "faults[0].applies_to[0]",
        ),
        (
            grid(
                SINGLE,
                &PAUSE.replace(r#""applies_to": ["single", "redlock"]"#, r#""applies_to": []"#),
            ),
            "faults[0].applies_to",
        ),
        (
            grid(
                SINGLE,
                &PAUSE.replace(r#""faults": ["#, r#""scenario": { "expect": {} }, "faults": ["#),
            ),
            "faults[0].scenario.expect",
        ),
        (
            grid(
                SINGLE,
                &PAUSE.replace(r#""faults": ["#, r#""scenario": { "seeds": 3 }, "faults": ["#),
            ),
            "faults[0].scenario.seeds",
        ),
        (grid(&format!("{SINGLE}, {SINGLE}"), PAUSE), "setups[1].name"),
        (
            grid(
                &SINGLE.replace(r#""single", "label""#, r#""one node", "label""#),
                PAUSE,
            ),
            "setups[0].name",
        ),
        (
            grid(SINGLE, &PAUSE.replace(r#""label": "pause""#, r#""label": " ""#)),
            "faults[0].label",
        ),
        (
            grid(&SINGLE.replace(r#", "ttl_ms": 1500"#, ""), PAUSE),
            "setups[0].lock.ttl_ms",
        ),
        (
            grid(SINGLE, PAUSE).replace(r#""seeds": 4"#, r#""seeds": 0"#),
            "defaults.seeds",
        ),
        (
            grid(SINGLE, PAUSE).replace(r#""seeds": 4,"#, ""),
            "defaults.seeds",
        ),
        (
            grid(SINGLE, PAUSE).replace(
                r#""defaults""#,
                r#""comparisons": [["single", "redlock"]], "defaults""#,
            ),
            "comparisons[0][1]",
        ),
        (
            grid(SINGLE, PAUSE).replace(
                r#""defaults""#,
                r#""comparisons": [["single", "single"]], "defaults""#,
            ),
            "comparisons[0]",
        ),
        (
            grid(SINGLE, PAUSE).replace(
                r#""defaults""#,
                r#""clients_compared": ["single", "redisson"], "defaults""#,
            ),
            "clients_compared[1]",
        ),
    ];
    for (text, field) in cases {
        assert_eq!(error_of(&text).field, field, "{text}");
    }
}

#[test]
fn a_cell_that_does_not_validate_names_its_setup_and_fault() {
    let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""0*ttl""#)));
    assert_eq!(e.field, "faults[0].faults[0].duration_ms");
    assert!(e.reason.contains("setup `single` × fault class `pause`"), "{e}");
    assert!(
        e.reason.contains("0 is out of range: must be 1..=3600000 ms"),
        "{e}"
    );
    let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""2x ttl""#)));
    assert_eq!(e.field, "faults[0].faults[0].duration_ms");
    let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""2*ttl""#, r#""twice the ttl""#)));
    assert!(e.reason.contains("K*ttl"), "{e}");
    let backwards = r#""scenario": { "clients": { "write_delay_ms": [500, 100] } }, "faults""#;
    let e = error_of(&grid(SINGLE, &PAUSE.replace(r#""faults""#, backwards)));
    assert_eq!(e.field, "clients.write_delay_ms", "a field of the merged cell");
    assert!(e.reason.contains("fault class `pause`"), "{e}");
}

#[test]
fn positions_in_generated_text_are_left_out() {
    let e = error_of(&grid(&SINGLE.replace("lua-release", "lua-relase"), PAUSE));
    assert!(!e.reason.contains("at line"), "{e}");
    assert_eq!(without_position("missing at line 1 column 91"), "missing");
    assert_eq!(without_position("stays at line 4"), "stays");
    assert_eq!(without_position("at line one"), "at line one");
}

#[test]
fn ttl_multiples_round_to_whole_ms() {
    assert_eq!(ttl_multiple("ttl", 2000), Some(2000));
    assert_eq!(ttl_multiple("0.333*ttl", 1000), Some(333));
    assert_eq!(ttl_multiple(" -1 * ttl ", 750), Some(-750));
    assert_eq!(ttl_multiple("2*ttls", 2000), None);
    assert_eq!(ttl_multiple("ttl*2", 2000), None);
    assert_eq!(ttl_multiple("inf*ttl", 2000), None);
}

#[test]
fn written_scenarios_load_back_as_generated() {
    let dir = std::env::temp_dir().join(format!("locksim-matrix-{}", std::process::id()));
    let matrix = Grid::parse(Path::new("grid.json"), &grid(SINGLE, PAUSE)).unwrap();
    let written = matrix.write_scenarios(&dir).unwrap();
    assert_eq!(written, [dir.join("single--pause.json")]);
    let loaded = crate::scenario::load(&written[0]).unwrap();
    assert_eq!(loaded.faults, scenario_of(&matrix, 0, 0).faults);
    std::fs::remove_dir_all(&dir).unwrap();
}
