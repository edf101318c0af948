//! qlog of Mozilla neqo 0.27.0 (qlog 0.3 layout, written by the `qlog` crate 0.16), written
//! by `qlog-gen-neqo` (crates/hare-analyze/qlog-gen/neqo) on a virtual clock, with neqo's
//! own counts beside it: payload and goodput within 1 %, lost packets exact (neqo logs
//! `packet_lost`; its PTO-marked packets are not losses), the slow-start exit at the
//! instant neqo counted its first congestion event (or its HyStart++ exit) with the window
//! before the cut, exactly.

mod stack_fixtures;

use std::path::PathBuf;

use hare_analyze::metrics::{compute, Params};
use serde_json::Value;
use stack_fixtures::trace;

/// Upload with loss, download with loss, download on a loss-free path (HyStart++ exit).
const FIXTURES: &[&str] = &["neqo-0.27", "neqo-0.27-download", "neqo-0.27-clean"];

fn fixtures() -> Vec<(PathBuf, Value)> {
    stack_fixtures::fixtures(FIXTURES)
}

/// The exit neqo took: its first congestion event, else its slow-start exit (HyStart++).
fn truth_exit(truth: &Value) -> (f64, u64) {
    let e = if truth["first_congestion"].is_null() {
        &truth["slow_start_exit"]
    } else {
        &truth["first_congestion"]
    };
    let t = e["t_ms"].as_f64().expect("exit time");
    let cwnd = e["cwnd_before_bytes"].as_u64().expect("exit cwnd");
    (t, cwnd)
}

#[test]
fn neqo_sender_matches_the_truth() {
    for (dir, truth) in &fixtures() {
        let label = dir.display().to_string();
        let (s, ms) = stack_fixtures::side(dir, truth, "sender_qlog");
        // neqo logs packet_lost: the count is exact, 0 included.
        let lost = truth["sender_stats"]["lost_packets"].as_u64();
        assert_eq!(ms.losses, lost, "{label}");
        let drops = &truth["path_drops"];
        assert_eq!(
            lost,
            Some(drops["nth"].as_u64().unwrap_or(0) + drops["queue"].as_u64().unwrap_or(0)),
            "{label}: neqo found every datagram the path dropped"
        );
        // The exit: the instant neqo was given (virtual clock), the window before the cut.
        let (t_ms, cwnd) = truth_exit(truth);
        let e = s.exit.unwrap_or_else(|| panic!("{label}: no exit"));
        let got_ms = (e.t_s + s.origin_s) * 1000.0;
        // qlog times are f32 milliseconds: 0.001 ms of slack.
        assert!(
            (got_ms - t_ms).abs() < 1e-3,
            "{label}: exit at {got_ms} ms, neqo's at {t_ms} ms"
        );
        assert_eq!(e.cwnd_bytes, cwnd, "{label}");
        if lost == Some(0) {
            assert!(ms.episodes.is_empty(), "{label}");
        } else {
            assert!(!ms.episodes.is_empty(), "{label}");
        }
    }
}

#[test]
fn neqo_receiver_matches_the_truth() {
    for (dir, truth) in &fixtures() {
        let label = dir.display().to_string();
        let (_, mr) = stack_fixtures::side(dir, truth, "receiver_qlog");
        assert!(mr.exit.is_none() && mr.episodes.is_empty(), "{label}");
        // The receiver's own losses: exact where its trace shows neqo logging packet_lost
        // (PTO-marked packets, which are not losses), else "not logged".
        let lost = truth["receiver_stats"]["lost_packets"].as_u64();
        if let Some(got) = mr.losses {
            assert_eq!(Some(got), lost, "{label}");
        }
    }
    // The download's client PTO-marked packets: logged as packet_lost, not losses.
    let (dir, truth) = &fixtures()[1];
    let r = trace(dir, truth, "receiver_qlog");
    assert_eq!(compute(&r, &Params::default()).losses, Some(0));
    assert!(r.notes.iter().any(|n| n.contains("PTO")), "{:?}", r.notes);
}
