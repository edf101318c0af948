//! hare-cc picks no TLS provider: an application outside the workspace that uses quinn with
//! the aws-lc-rs backend (`tests-outside/aws-lc`) resolves without `ring`.
//!
//! Resolution only (`cargo tree` of that crate, with its committed lock file): building
//! aws-lc-sys compiles a C library with cmake, minutes of CI time for a fact the dependency
//! graph already decides. The tree is checked to contain hare-cc, quinn-proto and aws-lc-rs,
//! so the test cannot pass by resolving nothing.

use std::path::Path;
use std::process::Command;

#[test]
fn an_aws_lc_rs_application_gets_no_ring() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests-outside/aws-lc/Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-e", "normal,build", "--prefix", "none"])
        .args(["--format", "{p} [{f}]"])
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("run cargo tree");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "cargo tree of {} failed (after a change to hare-cc's dependencies, refresh its lock \
         file: cargo update -p hare-cc --manifest-path {}):\n{stderr}",
        manifest.display(),
        manifest.display()
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let has = |name: &str| tree.lines().any(|l| l.starts_with(&format!("{name} v")));
    for needed in ["hare-cc", "quinn-proto", "aws-lc-rs"] {
        assert!(has(needed), "`{needed}` missing from the tree:\n{tree}");
    }
    assert!(
        !has("ring"),
        "`ring` is in the tree of an aws-lc-rs application:\n{tree}"
    );
    let hare = tree.lines().find(|l| l.starts_with("hare-cc v"));
    assert!(
        hare.is_some_and(|l| l.ends_with("[]")),
        "hare-cc should have no default features there: {hare:?}"
    );
}
