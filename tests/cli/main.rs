//! What a user runs and reads: the command-line contract, bad input, the terminal, the report
//! and its page, figures, caches and shards, JUnit, the schema, the docs.
//!
//! One test binary for the group (each file a module), so a build links and compiles the
//! shared `support` module once for all of them, not once per file.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod ci_docs;
mod cli;
mod doc_links;
mod figures;
mod init;
mod junit;
mod provisional;
mod report_cache;
mod report_page;
mod schema;
mod shard;
mod terminal;
