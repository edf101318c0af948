//! Reverse mode (`-r`): hare-send connects and receives, hare-recv sends. Both ends count the
//! same bytes, exactly; `-P`, `-T`, `-R` and a stop are honoured by the remote sender; the
//! iperf3-shaped JSON is marked reverse on both ends; what reverse mode cannot do is refused
//! with a reason before anything connects.

use std::path::Path;
use std::time::Duration;

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{recv_options, send_options, BackgroundReceiver};
use hare_transfer::{send, stop_pair, SendJob, Stop, TcpSendOptions, TransferError};
use serde_json::Value;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).expect("json file");
    serde_json::from_str(text.lines().next().expect("one line")).expect("valid JSON")
}

/// A receiver writing its JSON to `dir/recv.json`, and the options of a reverse bulk run
/// against it writing `dir/send.json`.
fn setup(dir: &Path, job: SendJob) -> (BackgroundReceiver, hare_transfer::SendOptions) {
    let mut ro = recv_options(dir.join("id"), None);
    ro.output.json = Some(JsonTarget::File(dir.join("recv.json")));
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.reverse = true;
    o.interval = Duration::from_millis(200);
    o.output.json = Some(JsonTarget::File(dir.join("send.json")));
    (recv, o)
}

#[test]
fn reverse_moves_the_same_bytes_both_ends_report() {
    const BYTES: u64 = (8 << 20) + 12_345;
    let dir = tempfile::tempdir().expect("tempdir");
    let job = SendJob::Bulk {
        bytes: Some(BYTES),
        seconds: None,
        streams: 1,
    };
    let (recv, o) = setup(dir.path(), job);
    let outcome = rt().block_on(send(o, Stop::never())).expect("reverse run");
    recv.stop().expect("receiver ran cleanly");
    let s = outcome.run.summary.expect("summary");
    assert_eq!(s.bytes, BYTES);
    assert!(s.completed);
    // The sending side's own figures came back.
    assert!(s.cpu_sender_pct.is_some() && s.sent_packets.is_some());
    assert_eq!(outcome.run.header.role, hare_report::Role::Receiver);
    let intervals: u64 = outcome.run.intervals.iter().map(|i| i.bytes).sum();
    assert_eq!(intervals, BYTES);

    let mine = read_json(&dir.path().join("send.json"));
    let theirs = read_json(&dir.path().join("recv.json"));
    for doc in [&mine, &theirs] {
        assert_eq!(doc["start"]["test_start"]["reverse"], 1);
        assert_eq!(u(&doc["end"]["sum_sent"]["bytes"]), BYTES);
        assert_eq!(u(&doc["end"]["sum_received"]["bytes"]), BYTES);
    }
    // iperf3's `sender` flag: whether this host's streams sent.
    assert_eq!(mine["end"]["sum_received"]["sender"], false);
    assert_eq!(mine["end"]["sum_sent"]["sender"], false);
    assert_eq!(theirs["end"]["sum_sent"]["sender"], true);
    // The receiver's report is a sender's, with its controller.
    assert_eq!(theirs["start"]["hare"]["role"], "sender");
    assert_eq!(
        mine["start"]["hare"]["controller"],
        theirs["start"]["hare"]["controller"]
    );
}

#[test]
fn reverse_with_two_timed_paced_streams_has_two_streams_and_sums() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(1.0),
        streams: 2,
    };
    let (recv, mut o) = setup(dir.path(), job);
    o.rate = Some(100_000_000);
    let outcome = rt().block_on(send(o, Stop::never())).expect("reverse run");
    recv.stop().expect("receiver ran cleanly");
    let total = outcome.run.summary.expect("summary").bytes;
    // -R 100m for -T 1: 12.5 MB, and never much more (the pacer's first write at most).
    assert!(total > 0 && total <= 12_500_000 + (1 << 20), "{total}");
    for name in ["send.json", "recv.json"] {
        let doc = read_json(&dir.path().join(name));
        let ends = doc["end"]["streams"].as_array().expect("end streams");
        assert_eq!(ends.len(), 2, "{name}");
        let by_stream: Vec<u64> = ends.iter().map(|e| u(&e["receiver"]["bytes"])).collect();
        assert!(by_stream.iter().all(|&b| b > 0), "{name}: {by_stream:?}");
        assert_eq!(by_stream.iter().sum::<u64>(), total, "{name}");
        assert_eq!(u(&doc["end"]["sum_received"]["bytes"]), total, "{name}");
        for iv in doc["intervals"].as_array().expect("intervals") {
            let streams = iv["streams"].as_array().expect("interval streams");
            assert_eq!(streams.len(), 2);
            let sum: u64 = streams.iter().map(|s| u(&s["bytes"])).sum();
            assert_eq!(sum, u(&iv["sum"]["bytes"]));
        }
    }
}

/// The number of bytes a "time is up" note says were discarded, if the document has one.
fn discarded(doc: &Value) -> Option<u64> {
    doc["events"].as_array()?.iter().find_map(|e| {
        let m = e["kind"]["message"].as_str()?;
        m.strip_prefix("time is up at 1 s: ")?
            .split_once(" bytes")?
            .0
            .parse()
            .ok()
    })
}

/// `-r -T` without `-R`: at the deadline hare-recv discards what it still had queued (up to
/// the send window). Every number both ends print is still true: the bytes counted as sent
/// are the bytes this side received (both summaries, every interval, every stream), and the
/// discarded bytes are said the same on both ends, counted from what the remote sender really
/// handed to QUIC (a write cut short by the deadline included).
#[test]
fn an_unpaced_timed_reverse_run_counts_only_what_arrived_on_both_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(1.0),
        streams: 2,
    };
    let (recv, o) = setup(dir.path(), job);
    let outcome = rt().block_on(send(o, Stop::never())).expect("reverse run");
    recv.stop().expect("receiver ran cleanly");
    let total = outcome.run.summary.expect("summary").bytes;
    assert!(total > 0);
    let docs = ["send.json", "recv.json"].map(|n| read_json(&dir.path().join(n)));
    for (name, doc) in ["send.json", "recv.json"].iter().zip(&docs) {
        assert_eq!(u(&doc["end"]["sum_sent"]["bytes"]), total, "{name}");
        assert_eq!(u(&doc["end"]["sum_received"]["bytes"]), total, "{name}");
        let ivs: u64 = doc["intervals"]
            .as_array()
            .expect("intervals")
            .iter()
            .map(|iv| u(&iv["sum"]["bytes"]))
            .sum();
        assert_eq!(ivs, total, "{name}");
        for e in doc["end"]["streams"].as_array().expect("end streams") {
            assert_eq!(e["sender"]["bytes"], e["receiver"]["bytes"], "{name}");
        }
    }
    // Both ends say the same number discarded, or neither says any.
    assert_eq!(discarded(&docs[0]), discarded(&docs[1]));
}

#[test]
fn a_stop_ends_a_reverse_run_with_a_summary_both_ends_agree_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = SendJob::Bulk {
        bytes: None,
        seconds: Some(30.0),
        streams: 1,
    };
    let (recv, mut o) = setup(dir.path(), job);
    o.rate = Some(50_000_000);
    let (trigger, stop) = stop_pair();
    let outcome = rt().block_on(async move {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(700)).await;
            trigger.stop_because("SIGTERM");
        });
        send(o, stop).await
    });
    let outcome = outcome.expect("an interrupted reverse run still summarises");
    recv.stop().expect("receiver ran cleanly");
    assert!(outcome.interrupted);
    let s = outcome.run.summary.expect("summary");
    assert!(
        s.seconds < 10.0,
        "stopped long before -T 30: {} s",
        s.seconds
    );
    let theirs = read_json(&dir.path().join("recv.json"));
    assert_eq!(u(&theirs["end"]["sum_sent"]["bytes"]), s.bytes);
}

#[test]
fn reverse_over_kernel_tcp_moves_the_same_bytes_over_two_connections() {
    const BYTES: u64 = (6 << 20) + 777;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ro = recv_options(dir.path().join("id"), None);
    ro.tcp = Some(hare_transfer::tcp::TcpOptions::default());
    ro.output.json = Some(JsonTarget::File(dir.path().join("recv.json")));
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let job = SendJob::Bulk {
        bytes: Some(BYTES),
        seconds: None,
        streams: 2,
    };
    let mut o = send_options(recv.addr, None, job);
    o.reverse = true;
    o.identity = None;
    o.tcp = Some(TcpSendOptions::default());
    o.output.json = Some(JsonTarget::File(dir.path().join("send.json")));
    let outcome = rt()
        .block_on(send(o, Stop::never()))
        .expect("reverse TCP run");
    recv.stop().expect("receiver ran cleanly");
    let s = outcome.run.summary.expect("summary");
    assert_eq!(s.bytes, BYTES);
    assert!(s.completed);
    assert_eq!(outcome.run.header.transport, hare_report::Transport::Tcp);
    assert!(outcome.run.header.controller.starts_with("kernel:"));
    for name in ["send.json", "recv.json"] {
        let doc = read_json(&dir.path().join(name));
        assert_eq!(doc["start"]["test_start"]["reverse"], 1, "{name}");
        let ends = doc["end"]["streams"].as_array().expect("end streams");
        let by_stream: Vec<u64> = ends.iter().map(|e| u(&e["receiver"]["bytes"])).collect();
        // -n splits evenly: the first stream takes the odd byte.
        assert_eq!(by_stream, vec![BYTES / 2 + 1, BYTES / 2], "{name}");
        assert_eq!(u(&doc["end"]["sum_sent"]["bytes"]), BYTES, "{name}");
    }
}

#[test]
fn what_reverse_mode_cannot_do_is_refused_before_connecting() {
    // Nothing listens there: each refusal must come before any attempt to connect.
    let nowhere = "127.0.0.1:9".parse().expect("address");
    let bulk = SendJob::Bulk {
        bytes: Some(1 << 20),
        seconds: None,
        streams: 1,
    };
    let files = SendJob::Files {
        paths: vec!["Cargo.toml".into()],
        resume: false,
        force: false,
        parallel: 1,
    };
    let mut tcp = send_options(nowhere, None, bulk.clone());
    tcp.tcp = Some(TcpSendOptions {
        pacing_rate: Some(1 << 20),
        ..TcpSendOptions::default()
    });
    let mut cc = send_options(nowhere, None, bulk);
    cc.cc = Some("reno".into());
    let cases = [
        (tcp, "--pacing-rate with -r"),
        (send_options(nowhere, None, files), "-r with files"),
        (cc, "--cc with -r"),
    ];
    for (mut o, words) in cases {
        o.reverse = true;
        match rt().block_on(send(o, Stop::never())) {
            Err(TransferError::Usage(m)) => assert!(m.starts_with(words), "{m}"),
            other => panic!("{words}: expected a refusal, got {:?}", other.err()),
        }
    }
}
