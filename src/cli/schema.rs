//! `schema`: the JSON Schema of scenario files (or of `check` templates), for editors and
//! for validators in a user's CI. The schema itself is generated in scenario/json_schema.rs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use locksim::scenario::{SchemaKind, json_schema_text};

use super::invalid;

/// `locksim schema [--template] [--out FILE]`.
#[derive(clap::Args)]
pub struct SchemaArgs {
    /// The schema of `locksim check` templates (every value may also be
    /// `{"any": [low, high]}` or `{"one_of": [...]}`), not of scenario files.
    #[arg(long)]
    template: bool,
    /// Write the schema to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Writes the schema; exit 2 when the file cannot be written.
pub fn schema(args: SchemaArgs) -> ExitCode {
    let kind = if args.template {
        SchemaKind::Template
    } else {
        SchemaKind::Scenario
    };
    let text = json_schema_text(kind);
    match args.out {
        Some(file) => match std::fs::write(&file, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => invalid(format!("{}: cannot write the schema: {e}", file.display())),
        },
        None => {
            // A closed pipe (`locksim schema | head`) is not an error.
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
    }
}
