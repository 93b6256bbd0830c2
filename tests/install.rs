//! The README's install line, run as a user would: from a directory outside the
//! repository (where .cargo/config.toml, which sets `--cfg madsim`, is not read), into a
//! temporary root; then the installed binary runs a scenario, the README's quick start
//! (`init`, then `run` of what it wrote, with no checkout) and shows `lock --help`.
//!
//! An install builds the whole crate: minutes on two cores. So the test is `#[ignore]`d
//! in `cargo test` and run by `make install-check`; it builds in debug (`--debug`) into the
//! target directory `cargo test` itself uses, so the dependencies `make test` compiled
//! (same profile, same `--cfg madsim`, and the same dependency features: Cargo.toml turns
//! on in [dependencies] what the dev-dependencies would widen) are reused, not compiled a
//! second time; cargo still rebuilds whatever the install line would build differently.

mod support;

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "a full build, minutes long: `make install-check` runs it"]
fn the_documented_install_works_from_outside_the_repository() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let outside = support::cli::scratch("install");
    let root = outside.join("root");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let install = Command::new(cargo)
        .current_dir(&outside)
        .env("RUSTFLAGS", "--cfg madsim")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .args(["install", "--locked", "--debug", "--path"])
        .arg(repo)
        .arg("--root")
        .arg(&root)
        .arg("--target-dir")
        .arg(target_dir())
        .output()
        .expect("cargo runs");
    assert!(
        install.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let installed = root.join("bin/locksim");
    let run = Command::new(&installed)
        .current_dir(&outside)
        .args(["run", "--seeds", "2"])
        .arg(repo.join("scenarios/single-node-baseline.json"))
        .output()
        .expect("the installed locksim runs");
    let table = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && table.contains("single-node-baseline"),
        "{table}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The README's quick start, with no checkout: a starter set, run from where it was made.
    let init = Command::new(&installed)
        .current_dir(&outside)
        .args([
            "init",
            "my-lock",
            "--topology",
            "single",
            "--ttl",
            "2s",
            "--seeds",
            "2",
        ])
        .output()
        .expect("the installed locksim runs");
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let run = Command::new(&installed)
        .current_dir(&outside)
        .args(["run", "my-lock"])
        .output()
        .expect("the installed locksim runs");
    assert!(
        run.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let help = Command::new(&installed)
        .args(["lock", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("Exit codes:"));
    std::fs::remove_dir_all(&outside).unwrap();
}

/// The target directory this test was built in (its `tmp/` is `CARGO_TARGET_TMPDIR`).
fn target_dir() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target dir>/tmp")
}
