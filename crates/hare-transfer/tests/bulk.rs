//! Bulk jobs end to end on loopback, in-process: both ends of the engine, QUIC and kernel TCP.

use std::time::Duration;

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{recv_options, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop, TcpSendOptions};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn bulk_by_size_over_two_streams_totals_and_json_agree() {
    let id = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), None)).expect("receiver");
    let json_path = out.path().join("run.json");
    let jsonl_path = out.path().join("run.jsonl");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: Some(8 << 20),
            seconds: None,
            streams: 2,
        },
    );
    o.interval = Duration::from_millis(100);
    o.output.json = Some(JsonTarget::File(json_path.clone()));
    o.output.jsonl = Some(jsonl_path.clone());
    let outcome = rt().block_on(send(o, Stop::never())).expect("bulk send");
    let sum = outcome.run.summary.clone().expect("summary");
    assert_eq!(sum.bytes, 8 << 20);
    assert!(sum.completed);
    let interval_total: u64 = outcome.run.intervals.iter().map(|i| i.bytes).sum();
    assert_eq!(interval_total, 8 << 20, "intervals add up to the total");
    assert_eq!(outcome.run.header.controller, "cubic@linux-6");
    assert_eq!(outcome.run.header.profile.as_deref(), Some("linux-6"));
    assert_eq!(outcome.run.header.windows.stream_receive, Some(32 << 20));
    assert_eq!(
        outcome.run.header.windows.send,
        Some((64 << 20) + hare_transfer::quic_config::CONTROL_ALLOWANCE)
    );

    // The iperf3-shaped document parses and its totals equal the bytes sent.
    let text = std::fs::read_to_string(&json_path).expect("json file");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(v["end"]["sum_received"]["bytes"].as_u64(), Some(8 << 20));
    assert_eq!(
        v["start"]["congestion_used"].as_str(),
        Some("cubic@linux-6")
    );
    let ivs = v["intervals"].as_array().expect("intervals");
    let sum_iv: u64 = ivs.iter().filter_map(|i| i["sum"]["bytes"].as_u64()).sum();
    assert_eq!(sum_iv, 8 << 20);
    // hare's event list is there (the slow-start exit of hare CUBIC at least on a run that
    // left slow start; an empty list is fine on a run too short to leave it).
    assert!(v["events"].is_array());

    // The JSON-lines report reads back with hare-report's reader.
    let f = std::fs::File::open(&jsonl_path).expect("jsonl");
    let back =
        hare_report::jsonl::read_run(std::io::BufReader::new(f), "run.jsonl").expect("readable");
    assert_eq!(back.run.summary.map(|s| s.bytes), Some(8 << 20));
    recv.stop().expect("receiver ran cleanly");
}

#[test]
fn bulk_by_time_runs_for_the_duration() {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), None)).expect("receiver");
    let o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: None,
            seconds: Some(1.0),
            streams: 1,
        },
    );
    let outcome = rt().block_on(send(o, Stop::never())).expect("timed send");
    let sum = outcome.run.summary.expect("summary");
    assert!(sum.bytes > 0);
    assert!(sum.seconds >= 1.0 && sum.seconds < 10.0, "{}", sum.seconds);
    assert!(sum.completed);
    assert!(!outcome.run.intervals.is_empty());
}

#[test]
fn quinn_builtin_controller_by_name() {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), None)).expect("receiver");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: Some(1 << 20),
            seconds: None,
            streams: 1,
        },
    );
    o.cc = Some("quinn-newreno".into());
    let outcome = rt().block_on(send(o, Stop::never())).expect("send");
    assert_eq!(outcome.run.header.controller, "quinn-newreno");
    assert_eq!(outcome.run.header.profile, None);
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(1 << 20));
}

#[test]
fn jumbo_mtu_on_loopback_with_qlog_on_both_sides() {
    let id = tempfile::tempdir().expect("tempdir");
    let qdir = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(id.path().into(), None);
    ro.link.mtu = Some(8952);
    ro.qlog = Some(qdir.path().join("recv"));
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: Some(4 << 20),
            seconds: None,
            streams: 1,
        },
    );
    o.link.mtu = Some(8952);
    o.qlog = Some(qdir.path().join("send"));
    let outcome = rt().block_on(send(o, Stop::never())).expect("jumbo send");
    assert_eq!(outcome.run.header.mtu, 8952);
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(4 << 20));
    recv.stop().expect("receiver");
    for side in ["send", "recv"] {
        let files: Vec<_> = std::fs::read_dir(qdir.path().join(side))
            .expect("qlog dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let qlog = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "sqlog"))
            .expect("a qlog per connection");
        let text = std::fs::read_to_string(qlog).expect("qlog text");
        // JSON-SEQ: records start with the RS character; the header names qlog 0.3.
        assert!(text.starts_with('\u{1e}'), "{side}: JSON-SEQ");
        assert!(text.contains("\"qlog_version\":\"0.3\""), "{side}");
        assert!(text.contains("packet_sent"), "{side}");
        assert!(
            files
                .iter()
                .any(|p| p.to_string_lossy().ends_with(".cc.jsonl")),
            "{side}: sidecar"
        );
    }
}

#[test]
fn kernel_tcp_with_cubic_carries_bulk_and_reports_tcp_info() {
    let id = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(id.path().into(), None);
    ro.tcp = Some(hare_transfer::tcp::TcpOptions {
        cc: "cubic".into(),
        ..Default::default()
    });
    let recv = BackgroundReceiver::start(ro).expect("tcp receiver");
    assert_eq!(recv.fingerprint, None);
    let mut o = send_options(
        recv.addr,
        None,
        SendJob::Bulk {
            bytes: Some(16 << 20),
            seconds: None,
            streams: 2,
        },
    );
    o.tcp = Some(TcpSendOptions::default());
    o.cc = Some("cubic".into());
    let outcome = rt().block_on(send(o, Stop::never())).expect("tcp send");
    assert_eq!(outcome.run.header.controller, "kernel:cubic");
    assert_eq!(outcome.run.header.transport, hare_report::Transport::Tcp);
    let sum = outcome.run.summary.expect("summary");
    assert_eq!(sum.bytes, 16 << 20);
    assert!(
        sum.max_cwnd_segments.unwrap_or(0) >= 1,
        "TCP_INFO cwnd sampled"
    );
    let paced_note = outcome.run.events.iter().any(|e| {
        matches!(&e.kind, hare_report::EventKind::Note { message } if message.contains("cubic set before connect(), unpaced"))
    });
    assert!(paced_note, "the report says the socket is unpaced cubic");
}
