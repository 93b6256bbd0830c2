//! docs/redis-coverage.md is generated from the command tables ([`FAMILIES`]), so that it
//! cannot drift from what the node answers: this test fails when the file differs, and
//! `UPDATE_COVERAGE=1 cargo test --locked --lib redis::cmd::coverage` rewrites it.

use super::FAMILIES;

const DOC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/redis-coverage.md");

/// The document, family by family, command by command, in table order.
fn markdown() -> String {
    let total: usize = FAMILIES.iter().map(|(_, table)| table.len()).sum();
    let mut doc = format!(
        "# What the fake Redis node answers\n\n\
         Generated from the command tables in `src/redis/cmd/` (one per family) by\n\
         `UPDATE_COVERAGE=1 cargo test --locked --lib redis::cmd::coverage`; do not edit by hand.\n\
         {total} commands. Each answers as redis-server {} does, in RESP2 and RESP3; any\n\
         other command is refused with Redis's own error (`ERR unknown command ...`).\n\
         Arity is Redis's: `n` means exactly `n` words with the name, `-n` at least `n`.\n\
         `readonly`/`write`: a replica refuses writes (READONLY); `denyoom`: refused while the\n\
         node is over `maxmemory` (OOM; `src/redis/memory.rs`); `noscript`: scripts may not\n\
         call it. How much of Redis's own Tcl suite the node passes, and how to re-count it:\n\
         [redis-tcl-suite.md](redis-tcl-suite.md); unit/scripting, last counted: 112 passed,\n\
         0 failed, 0 skipped by name, 11 ignored by tag.\n",
        crate::redis::REDIS_VERSION
    );
    for (family, table) in FAMILIES {
        doc.push_str(&format!(
            "\n## {family}\n\n| command | arity | flags | what it does |\n|---|---|---|---|\n"
        ));
        for spec in *table {
            doc.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                spec.name.to_uppercase(),
                spec.arity,
                spec.flags.names().join(", "),
                spec.summary.replace('|', "\\|")
            ));
        }
    }
    doc
}

#[test]
fn the_coverage_doc_is_generated_from_the_command_tables() {
    let generated = markdown();
    if std::env::var_os("UPDATE_COVERAGE").is_some() {
        std::fs::write(DOC_PATH, &generated).expect("docs/redis-coverage.md is writable");
        return;
    }
    let on_disk = std::fs::read_to_string(DOC_PATH).unwrap_or_default();
    assert!(
        on_disk == generated,
        "docs/redis-coverage.md differs from the command tables; rewrite it with \
         UPDATE_COVERAGE=1 cargo test --locked --lib redis::cmd::coverage"
    );
}

#[test]
fn every_command_is_in_one_table_once() {
    let mut names: Vec<&str> = FAMILIES
        .iter()
        .flat_map(|(_, table)| table.iter().map(|spec| spec.name))
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count, "a command name appears twice");
    assert!(names.iter().all(|name| *name == name.to_lowercase()));
}
