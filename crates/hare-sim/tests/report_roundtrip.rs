//! Reports parse back with hare-report's reader, equal to what was produced.

mod common;

use hare_link::units::parse_duration;
use hare_link::LossModel;
use hare_report::{EventKind, Tool};
use hare_sim::simulate;

#[test]
fn jsonl_reads_back_equal() {
    let mut cfg = common::config(
        "roundtrip",
        common::path("100m", "20ms", Some("100k")),
        "quinn-cubic",
        1 << 20,
        common::secs(2),
    );
    cfg.scenario = Some("tests/report_roundtrip.rs".into());
    cfg.forward.loss.push(LossModel::Blackout {
        from: parse_duration("1200ms").expect("from"),
        to: parse_duration("1300ms").expect("to"),
    });
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    for run in [Some(&out.run), out.fine.as_ref()].into_iter().flatten() {
        let mut buf = Vec::new();
        hare_report::jsonl::write_run(&mut buf, run).expect("write");
        let back = hare_report::jsonl::read_run(buf.as_slice(), "memory").expect("parses");
        assert_eq!(back.truncated_records, 0);
        assert_eq!(&back.run, run);
    }
    let h = &out.run.header;
    assert_eq!(h.tool, Tool::HareSim);
    assert_eq!(h.run_id, "roundtrip");
    assert_eq!(h.seed, Some(1));
    assert_eq!(h.started_at, None);
    assert_eq!(h.mtu, 1452);
    assert_eq!(h.interval_s, 1.0);
    let p = h.path.as_ref().expect("path");
    assert_eq!(
        (p.rate_bps, p.rtt_ms, p.queue_bytes),
        (Some(100_000_000), Some(20.0), Some(102_400))
    );
    // hare-link sizes are binary: "100k" is 100 KiB.
    assert_eq!(out.fine.as_ref().map(|f| f.header.interval_s), Some(0.1));
    // The blackout shows as two path events, at report times (link time minus the origin).
    let path_events: Vec<f64> = out
        .run
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Path { .. }))
        .map(|e| e.t_s)
        .collect();
    assert_eq!(path_events.len(), 2);
    assert!((path_events[0] - (1.2 - out.origin_s)).abs() < 1e-9);
    assert!((path_events[1] - (1.3 - out.origin_s)).abs() < 1e-9);
    assert!(out.link_forward.dropped.blackout > 0);
}
