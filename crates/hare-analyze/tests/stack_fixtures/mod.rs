//! Another stack's qlog fixtures (tests/fixtures/NAME, one `*.truth.json` each, written by
//! the generators in qlog-gen/): loading them and comparing with their ground truth.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use hare_analyze::{read_file, Trace};
use serde_json::Value;

/// Each fixture directory with its parsed truth file.
pub fn fixtures(names: &[&str]) -> Vec<(PathBuf, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for dir in names {
        let d = root.join(dir);
        let truth = std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.to_string_lossy().ends_with(".truth.json"))
            .unwrap_or_else(|| panic!("{}: no truth file", d.display()));
        let v: Value =
            serde_json::from_slice(&std::fs::read(&truth).expect("truth")).expect("truth json");
        out.push((d, v));
    }
    out
}

/// The one trace of the qlog the truth file names under `key`, read without skips.
pub fn trace(dir: &Path, truth: &Value, key: &str) -> Trace {
    let name = truth[key].as_str().expect("qlog name");
    let mut all = read_file(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(all.len(), 1, "{name}");
    let t = all.remove(0);
    assert!(t.skipped.is_empty(), "{name}: {:?}", t.skipped);
    t
}

/// Asserts `got` is within `share` of `want`.
pub fn within(got: f64, want: f64, share: f64, what: &str) {
    assert!(
        (got - want).abs() <= want.abs() * share,
        "{what}: {got} vs truth {want}"
    );
}
