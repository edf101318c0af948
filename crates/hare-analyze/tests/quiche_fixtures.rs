//! qlog of Cloudflare quiche, both layouts (0.24: qlog 0.3; 0.30: `file_schema` / `quic:`),
//! written by `qlog-gen` (crates/hare-analyze/qlog-gen) with its ground truth beside it:
//! payload and goodput within 1 %, "not logged" losses (quiche writes no `packet_lost`),
//! the slow-start exit at the first congestion event with the window before the cut.

mod stack_fixtures;

use std::path::PathBuf;

use hare_analyze::metrics::{compute, Params};
use serde_json::Value;
use stack_fixtures::trace;

/// The fixture sets, one per quiche release (qlog layout).
const FIXTURES: &[&str] = &["quiche-0.24", "quiche-0.24-download", "quiche-0.30"];

fn fixtures() -> Vec<(PathBuf, Value)> {
    stack_fixtures::fixtures(FIXTURES)
}

#[test]
fn quiche_sender_and_receiver_match_the_truth() {
    let sets = fixtures();
    assert_eq!(sets.len(), FIXTURES.len());
    for (dir, truth) in &sets {
        let label = dir.display().to_string();
        let (s, ms) = stack_fixtures::side(dir, truth, "sender_qlog");
        // Retransmitted STREAM bytes are not payload; quiche counts them too.
        let retrans = truth["sender_stats"]["stream_retransmitted_bytes"]
            .as_u64()
            .expect("retrans");
        assert!(retrans > 0, "{label}: the run had retransmissions");
        assert_eq!(s.retransmitted_bytes, Some(retrans), "{label}");
        // quiche logs no packet_lost: the count is "not logged", not 0.
        assert!(truth["sender_stats"]["lost_packets"].as_u64() > Some(0));
        assert_eq!(ms.losses, None, "{label}");
        assert!(!ms.episodes.is_empty(), "{label}");

        // Slow-start exit: the first congestion event, with the window before the cut.
        let first = &truth["first_congestion"];
        let e = s.exit.unwrap_or_else(|| panic!("{label}: no exit"));
        let t_ms = (e.t_s + s.origin_s) * 1000.0;
        let lo = first["window_ms"][0].as_f64().expect("window");
        let hi = first["window_ms"][1].as_f64().expect("window");
        // qlog times are f32 / microsecond-rounded: 0.01 ms of slack around the call.
        assert!(
            t_ms >= lo - 0.01 && t_ms <= hi + 0.01,
            "{label}: exit at {t_ms} ms, the loss was counted in [{lo}, {hi}] ms"
        );
        assert_eq!(
            Some(e.cwnd_bytes),
            first["cwnd_before_bytes"].as_u64(),
            "{label}"
        );

        let (_, mr) = stack_fixtures::side(dir, truth, "receiver_qlog");
        assert!(mr.exit.is_none() && mr.episodes.is_empty(), "{label}");
        // quiche logs min_rtt 0 before its first sample: ignored, never the base RTT.
        // In milliseconds (the path's RTT is 6 ms plus queueing), whatever the side.
        for m in [&ms, &mr] {
            assert!(
                m.min_rtt_ms.is_some_and(|v| v > 1.0 && v < 1000.0),
                "{label}: min RTT {:?}",
                m.min_rtt_ms
            );
        }
    }
}

/// The analysis table of both stacks' files names no debug text.
#[test]
fn quiche_table_is_human() {
    let mut ms = Vec::new();
    for (dir, truth) in &fixtures() {
        for key in ["sender_qlog", "receiver_qlog"] {
            ms.push(compute(&trace(dir, truth, key), &Params::default()));
        }
    }
    let table = hare_analyze::table::analysis(&ms, false);
    assert!(!table.contains("Some("), "{table}");
    assert!(!table.contains("None"), "{table}");
    assert!(table.contains("not logged"), "{table}");
}
