//! The metrics of a hare-sim run's qlog agree with its report (exit
//! cwnd and time identical, goodput within 1 %).

mod common;

use hare_analyze::metrics::{compute, Params};
use hare_analyze::{read_file, ExitSource, Format, TraceRole};
use hare_report::ExitReason;

/// qlog times are f32 milliseconds (qlog 0.15): about 0.25 us of resolution at 3 s.
const QLOG_TIME_RESOLUTION_S: f64 = 1e-6;

/// Writes the `.cc.jsonl` sidecar hare-transfer writes next to a qlog, from the run's hare-cc
/// events (the simulator built the controller at the qlog's time base, so the controller
/// clock is the qlog clock).
fn write_sidecar(f: &common::Fixture) {
    use std::io::Write;
    let path = hare_analyze::sidecar::sidecar_path(&f.client_qlog);
    let mut out = std::fs::File::create(path).expect("sidecar");
    for ev in &f.out.run.events {
        if let hare_report::EventKind::Cc { event } = &ev.kind {
            let line = serde_json::json!({
                "qlog": "agree-client.sqlog",
                "t_s": event.t_us() as f64 / 1e6,
                "event": event,
            });
            writeln!(out, "{line}").expect("write sidecar");
        }
    }
}

fn check(controller: &str, queue: &str, expect_reason: Option<ExitReason>, exact_cwnd: bool) {
    let f = common::fixture("agree", controller, 3, queue);
    let rep = read_file(&f.report).expect("report").remove(0);
    let q = read_file(&f.client_qlog).expect("qlog").remove(0);
    assert_eq!(rep.format, Format::Report);
    assert_eq!(q.format, Format::QlogSeq);
    assert_eq!(q.role, Some(TraceRole::Sender));
    assert_eq!(q.mss, Some(1452));
    // The qlog's origin (first 1-RTT packet) is the simulator's run origin.
    assert!((q.origin_s - f.out.origin_s).abs() < QLOG_TIME_RESOLUTION_S);

    let summary_exit = f
        .out
        .run
        .summary
        .as_ref()
        .and_then(|s| s.slow_start_exit.clone())
        .expect("slow start ended");
    let re = rep.exit.expect("report exit");
    let qe = q.exit.expect("qlog exit");
    assert_eq!(re.source, ExitSource::ControllerEvent);
    assert_eq!(re.cwnd_segments, Some(summary_exit.cwnd_segments));
    assert_eq!(re.t_s, summary_exit.t_s);
    assert_eq!(qe.source, ExitSource::SsthreshFinite);
    let (qs, rs) = (
        qe.cwnd_segments.expect("q segs"),
        re.cwnd_segments.expect("r segs"),
    );
    if exact_cwnd {
        assert_eq!(qs, rs, "exit cwnd");
        let max_seg = f.out.run.summary.as_ref().and_then(|s| s.max_cwnd_segments);
        assert_eq!(q.max_cwnd_bytes, max_seg.map(|m| u64::from(m) * 1452));
        assert_eq!(qe.cwnd_bytes, re.cwnd_bytes, "exit cwnd bytes");
    } else {
        // A loss found by an ACK frame: quinn logs the window after that frame's growth and
        // reduction only, so the qlog's last pre-loss window may lack that frame's growth.
        assert!(qs <= rs && rs - qs <= 2, "exit cwnd {qs} vs {rs}");
    }
    assert!(
        (qe.t_s + q.origin_s - f.out.origin_s - re.t_s).abs() < QLOG_TIME_RESOLUTION_S,
        "exit time {} vs {}",
        qe.t_s,
        re.t_s
    );
    assert_eq!(qe.reason, expect_reason);

    let p = Params::default();
    let (mr, mq) = (compute(&rep, &p), compute(&q, &p));
    let (gq, gr) = (
        mq.goodput_mbps.expect("qlog payload"),
        mr.goodput_mbps.expect("report payload"),
    );
    let rel = (gq - gr).abs() / gr;
    assert!(rel < 0.01, "goodput {gq} vs {gr}");
    let g1 = |m: &hare_analyze::metrics::Metrics| m.goodput_over[0].1.expect("1 s");
    assert!((g1(&mq) - g1(&mr)).abs() / g1(&mr) < 0.01);
    // The report's minimum RTT is the qlog's (quinn logs seconds; the reader converts).
    let rep_min = f
        .out
        .run
        .summary
        .as_ref()
        .and_then(|s| s.min_rtt_ms)
        .expect("min rtt");
    let q_min = mq.min_rtt_ms.expect("qlog min rtt");
    assert!((q_min - rep_min).abs() < 0.001, "{q_min} vs {rep_min}");
    // Losses: the qlog sees every packet the report counts.
    let rep_lost = f
        .out
        .run
        .summary
        .as_ref()
        .map(|s| s.lost_packets)
        .unwrap_or(0);
    assert_eq!(mq.losses, Some(rep_lost));
    assert_eq!(mr.losses, Some(rep_lost));

    // With the controller's sidecar the exit is the controller's own: identical in every
    // field, whatever ended slow start.
    write_sidecar(&f);
    let qs = read_file(&f.client_qlog).expect("qlog + sidecar").remove(0);
    let se = qs.exit.expect("sidecar exit");
    assert_eq!(se.source, ExitSource::ControllerEvent);
    assert_eq!(se.cwnd_segments, Some(summary_exit.cwnd_segments));
    assert_eq!(se.cwnd_bytes, re.cwnd_bytes);
    assert_eq!(se.reason, Some(summary_exit.reason));
    assert!((se.t_s + qs.origin_s - f.out.origin_s - re.t_s).abs() < QLOG_TIME_RESOLUTION_S);
}

#[test]
fn hystart_exit_matches_the_report() {
    // HyStart (2.6.39) ends slow start by the ACK train; no reduction at the exit.
    check("cubic@linux-2.6.39", "125k", None, true);
}

#[test]
fn loss_exit_matches_the_report() {
    // 2.6.20 CUBIC without HyStart and a small queue: the first loss ends slow start.
    check(
        "cubic@linux-2.6.20,initial_ssthresh=0",
        "60k",
        Some(ExitReason::Loss),
        false,
    );
}

#[test]
fn receiver_qlog_is_read_as_receiver() {
    let f = common::fixture("recv", "cubic@linux-2.6.39", 2, "125k");
    let s = read_file(&f.server_qlog).expect("server qlog").remove(0);
    assert_eq!(s.role, Some(TraceRole::Receiver));
    // quinn logs no received lengths: no goodput can be claimed from the receiver's qlog.
    assert_eq!(s.delivered_bytes(), 0);
    assert!(s.records > 1000);
}
