//! qlog written by the real transfer engine (hare-send / hare-recv's library) on loopback:
//! the sender's `.sqlog` and its `.cc.jsonl` sidecar analyse, and agree with its report.

use std::time::Duration;

use hare_analyze::metrics::{compute, Params};
use hare_analyze::{read_file, ExitSource, Format, TraceRole};
use hare_transfer::testkit::{recv_options, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop};

#[test]
fn sender_qlog_of_a_loopback_transfer() {
    let id = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let report = out.path().join("run.jsonl");
    let qdir = out.path().join("qlog");
    let mut ro = recv_options(id.path().into(), None);
    ro.qlog = Some(qdir.clone());
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: Some(16 << 20),
            seconds: None,
            streams: 1,
        },
    );
    o.interval = Duration::from_millis(100);
    o.output.jsonl = Some(report.clone());
    o.qlog = Some(qdir.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = rt.block_on(send(o, Stop::never())).expect("bulk send");
    recv.stop().expect("receiver ran cleanly");
    let summary = outcome.run.summary.clone().expect("summary");
    assert_eq!(summary.bytes, 16 << 20);

    let qlog = std::fs::read_dir(&qdir)
        .expect("qlog dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.extension().is_some_and(|x| x == "sqlog")
                && read_file(p).is_ok_and(|t| t[0].role == Some(TraceRole::Sender))
        })
        .expect("a sender qlog");
    assert!(hare_analyze::sidecar::sidecar_path(&qlog).exists());
    let t = read_file(&qlog).expect("sender qlog").remove(0);
    assert_eq!(t.format, Format::QlogSeq);
    assert_eq!(t.role, Some(TraceRole::Sender));
    assert!(t.skipped.is_empty(), "{:?}", t.skipped);
    let m = compute(&t, &Params::default());
    // Payload from acknowledged packet bytes (an estimate of the per-packet overhead). The
    // sender closes once the receiver confirmed the data, before logging the last ACKs, so
    // the report's bytes lie between what the qlog saw acknowledged and that plus the bytes
    // still in flight at its end (1 % of slack for the overhead estimate).
    let sent = summary.bytes as f64;
    let in_flight = t.in_flight_at_end_bytes.expect("in flight at end") as f64;
    let payload = m.bytes.expect("a sender's payload is estimated") as f64;
    assert!(payload <= sent * 1.01, "qlog payload {payload} vs {sent}");
    assert!(
        payload + in_flight >= sent * 0.99,
        "qlog payload {payload} + in flight {in_flight} vs {sent}"
    );
    // The report and the qlog's sidecar hold the same controller decision.
    match (summary.slow_start_exit.as_ref(), t.exit) {
        (Some(r), Some(q)) => {
            assert_eq!(q.source, ExitSource::ControllerEvent);
            assert_eq!(q.cwnd_segments, Some(r.cwnd_segments));
            assert_eq!(q.reason, Some(r.reason));
        }
        (None, q) => assert!(q.is_none_or(|q| q.source != ExitSource::ControllerEvent)),
        (Some(r), None) => panic!("report has an exit {r:?}, the qlog none"),
    }
    // The report reads too.
    let rt = read_file(&report).expect("report").remove(0);
    assert_eq!(rt.delivered_bytes(), 16 << 20);

    // `analyze DIR` and `analyze DIR/*` on hare's own qlog directory: both sides' qlogs and
    // sidecars (the receiver's may be empty) read without failing, each with its role.
    let mut all: Vec<std::path::PathBuf> = std::fs::read_dir(&qdir)
        .expect("qlog dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    all.sort();
    assert!(
        all.iter()
            .filter(|p| p.to_string_lossy().ends_with(".cc.jsonl"))
            .count()
            >= 2
    );
    for traces in [
        hare_analyze::cli::load(std::slice::from_ref(&qdir)).expect("analyze DIR"),
        hare_analyze::cli::load(&all).expect("analyze DIR/*"),
    ] {
        assert_eq!(traces.len(), 2);
        let roles: Vec<_> = traces.iter().map(|t| t.role).collect();
        assert!(roles.contains(&Some(TraceRole::Sender)), "{roles:?}");
        assert!(roles.contains(&Some(TraceRole::Receiver)), "{roles:?}");
        let r = traces
            .iter()
            .find(|t| t.role == Some(TraceRole::Receiver))
            .expect("receiver");
        let m = compute(r, &Params::default());
        // quinn logs neither lengths nor frames of received packets: the receiver's payload
        // is "not logged", never 0; no exit or episodes are inferred from a receiver.
        assert_eq!(m.payload_source, hare_analyze::PayloadSource::Unknown);
        assert!(m.exit.is_none());
        assert!(m.episodes.is_empty());
        assert!(m.min_rtt_ms.is_none_or(|v| v > 0.0));
        let table = hare_analyze::table::analysis(&[m], false);
        assert!(table.contains("not logged"), "{table}");
        assert!(!table.contains("Some("), "{table}");
    }
}
