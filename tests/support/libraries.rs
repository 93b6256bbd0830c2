//! The pinned lock libraries of tests/libraries/ (requirements.txt, package.json and its
//! lock), installed with pip and npm under the target directory the first time a test needs
//! them; a machine without pip or npm fails there and says what is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const LIBRARIES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/libraries");

/// Held while installing: tests run in parallel threads and, under `cargo nextest`, in
/// parallel processes of two binaries (live_libraries, real_libraries), and may all ask. An
/// exclusive lock on a file beside the installs: the OS releases it when the holder ends,
/// even by a panic or a kill.
fn one_install_at_a_time() -> std::fs::File {
    let root = install_root();
    std::fs::create_dir_all(&root).unwrap();
    let file = std::fs::File::create(root.join(".installing")).unwrap();
    file.lock().unwrap();
    file
}

/// Where the pinned libraries are installed: under the target directory, out of the tree.
fn install_root() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("libraries")
}

/// Runs `command`, failing the test with its output when it fails.
pub fn run(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start it ({e}); is it installed?"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Installs the pinned Python libraries once (a marker file records which pins were installed).
pub fn python_libraries() -> PathBuf {
    let _one_at_a_time = one_install_at_a_time();
    let pins = std::fs::read_to_string(format!("{LIBRARIES}/requirements.txt")).unwrap();
    let dir = install_root().join("python");
    let marker = dir.join(".installed");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(pins.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        run(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--target",
                ])
                .arg(&dir)
                .arg("-r")
                .arg(format!("{LIBRARIES}/requirements.txt")),
            "pip install of tests/libraries/requirements.txt",
        );
        std::fs::write(&marker, &pins).unwrap();
    }
    dir
}

/// Installs the pinned npm libraries once, exactly as package-lock.json says (`npm ci`).
pub fn node_libraries() -> PathBuf {
    let _one_at_a_time = one_install_at_a_time();
    let lock = std::fs::read_to_string(format!("{LIBRARIES}/package-lock.json")).unwrap();
    let dir = install_root().join("node");
    let marker = dir.join(".installed");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(lock.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(format!("{LIBRARIES}/{file}"), dir.join(file)).unwrap();
        }
        run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&dir),
            "npm ci of tests/libraries/package.json",
        );
        std::fs::write(&marker, &lock).unwrap();
    }
    dir.join("node_modules")
}
