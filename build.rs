//! Records the git commit locksim is built from (`LOCKSIM_COMMIT`), for the report's
//! provenance: a seed replays bit for bit only with the same commit. Outside a git
//! checkout (a crate downloaded from a registry) it is `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    // Build again when the checked-out commit moves: HEAD, and the branch file it names.
    let head = Path::new(".git/HEAD");
    if head.exists() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        if let Ok(text) = std::fs::read_to_string(head)
            && let Some(branch) = text.trim().strip_prefix("ref: ")
            && Path::new(".git").join(branch).exists()
        {
            println!("cargo:rerun-if-changed=.git/{branch}");
        }
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LOCKSIM_COMMIT={commit}");
}
