//! Another stack's qlog fixtures (tests/fixtures/NAME, one `*.truth.json` each, written by
//! the generators in qlog-gen/): loading them and comparing with their ground truth.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use hare_analyze::metrics::{compute, Metrics, Params};
use hare_analyze::{read_file, PayloadSource, Trace, TraceRole};
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

/// One side's trace of a fixture, checked against what every stack's truth gives: the role
/// and payload source of that side, and payload and goodput within 1 % of the truth (both
/// sides moved the same payload). `key` is `sender_qlog` or `receiver_qlog`.
pub fn side(dir: &Path, truth: &Value, key: &str) -> (Trace, Metrics) {
    let label = dir.display().to_string();
    let payload = truth["payload_bytes_received"].as_f64().expect("payload");
    assert_eq!(
        truth["payload_bytes_sent"].as_f64(),
        Some(payload),
        "{label}"
    );
    let goodput = truth["goodput_mbps"].as_f64().expect("goodput");
    let t = trace(dir, truth, key);
    let (role, source) = if key == "sender_qlog" {
        (TraceRole::Sender, PayloadSource::AckedStreamFrames)
    } else {
        (TraceRole::Receiver, PayloadSource::ReceivedStreamFrames)
    };
    assert_eq!(t.role, Some(role), "{label} {key}");
    if role == TraceRole::Sender {
        assert_eq!(t.vantage.as_deref(), truth["sender"].as_str(), "{label}");
    }
    assert_eq!(t.payload_source, source, "{label} {key}");
    let m = compute(&t, &Params::default());
    within(
        m.bytes.expect("payload logged") as f64,
        payload,
        0.01,
        &format!("{label} {key} payload"),
    );
    within(
        m.goodput_mbps.expect("payload logged"),
        goodput,
        0.01,
        &format!("{label} {key} goodput"),
    );
    (t, m)
}
