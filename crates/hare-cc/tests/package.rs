//! `cargo package` accepts hare-cc: every dependency comes from crates.io (no unpublished
//! path crate), the metadata is complete, and the package carries what the README and the
//! docs refer to but not the source tree's extra crates (the fuzz crate, the outside-crate
//! check).
//!
//! The second test runs the whole `cargo package`, verify step included: the packaged crate,
//! unpacked alone, builds against crates.io (in its own target directory under the test
//! target's temporary folder, so a second run reuses the build).

use std::path::Path;
use std::process::Command;

#[test]
fn hare_cc_packages_with_what_its_docs_refer_to() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args([
            "package",
            "--list",
            "--locked",
            "--allow-dirty",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("run cargo package");
    assert!(
        output.status.success(),
        "cargo package --list failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let list = String::from_utf8_lossy(&output.stdout);
    let files: Vec<&str> = list.lines().collect();
    for needed in [
        "Cargo.toml",
        "README.md",
        "PROFILES.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "src/lib.rs",
        "examples/loopback.rs",
    ] {
        assert!(
            files.contains(&needed),
            "`{needed}` is not packaged:\n{list}"
        );
    }
    for file in &files {
        assert!(
            !file.starts_with("fuzz/") && !file.starts_with("tests-outside/"),
            "`{file}` belongs to another crate of the source tree"
        );
    }
    let manifest_text = std::fs::read_to_string(&manifest).expect("read Cargo.toml");
    for key in [
        "description",
        "keywords",
        "categories",
        "documentation",
        "readme",
    ] {
        assert!(
            manifest_text
                .lines()
                .any(|l| l.starts_with(&format!("{key} "))),
            "Cargo.toml has no `{key}`"
        );
    }
}

#[test]
fn hare_cc_package_verifies_alone() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-verify");
    let output = Command::new(env!("CARGO"))
        .args(["package", "--locked", "--allow-dirty", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run cargo package");
    assert!(
        output.status.success(),
        "cargo package (with its verify build) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Verifying hare-cc"),
        "cargo package did not run its verify step:\n{stderr}"
    );
}
