//! The iperf3-shaped JSON of both sides (`--json`), for one and for two streams: the fields
//! iperf3 `-J` writes for every `-P` (its `iperf_api.c`): `start.test_start.num_streams` and
//! `duration`, one `start.connected` entry per stream, and `socket` on every stream entry of
//! `intervals[].streams` and `end.streams`.

use std::path::Path;
use std::time::{Duration, Instant};

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{recv_options, runtime, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop};
use serde_json::Value;

/// The receiver writes its document when its job ends, which may be just after the sender
/// returned: wait (bounded) for the line.
fn first_line(path: &Path) -> Value {
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(line) = text.lines().next() {
            return serde_json::from_str(line).expect("valid JSON line");
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no receiver JSON");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A timed bulk run of `streams` streams for `seconds`, at 100 Mbit/s (light on a shared
/// machine): the sender's document and the receiver's.
fn documents(streams: u16, seconds: f64) -> (Value, Value) {
    let id = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let recv_json = out.path().join("recv.json");
    let mut ro = recv_options(id.path().into(), None);
    ro.output.json = Some(JsonTarget::File(recv_json.clone()));
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let send_json = out.path().join("send.json");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: None,
            seconds: Some(seconds),
            streams,
        },
    );
    o.rate = Some(100_000_000);
    o.output.json = Some(JsonTarget::File(send_json.clone()));
    runtime()
        .block_on(send(o, Stop::never()))
        .expect("bulk send");
    let receiver = first_line(&recv_json);
    let _ = recv.stop();
    (first_line(&send_json), receiver)
}

/// Every field iperf3 writes per stream, checked on one side's document.
fn complete(doc: &Value, streams: u16, seconds: f64, side: &str) {
    let test = &doc["start"]["test_start"];
    assert_eq!(
        test["num_streams"].as_u64(),
        Some(u64::from(streams)),
        "{side}"
    );
    assert_eq!(test["duration"].as_f64(), Some(seconds), "{side}");
    assert_eq!(test["bytes"].as_u64(), Some(0), "{side}");
    assert!(
        doc["start"]["timestamp"]["timesecs"].as_u64().is_some(),
        "{side}"
    );
    let peer = if side == "sender" {
        "connecting_to"
    } else {
        "accepted_connection"
    };
    assert_eq!(
        doc["start"][peer]["host"].as_str(),
        Some("127.0.0.1"),
        "{side}"
    );
    let want: Vec<u64> = (1..=u64::from(streams)).collect();
    let connected = doc["start"]["connected"].as_array().expect("connected");
    let sockets: Vec<u64> = connected
        .iter()
        .filter_map(|c| c["socket"].as_u64())
        .collect();
    assert_eq!(sockets, want, "{side}: start.connected");
    for c in connected {
        assert_eq!(c["local_host"].as_str(), Some("127.0.0.1"), "{side}: {c}");
        assert!(c["remote_port"].as_u64().is_some_and(|p| p > 0), "{side}");
    }
    let ivs = doc["intervals"].as_array().expect("intervals");
    assert!(!ivs.is_empty(), "{side}");
    for iv in ivs {
        let ss = iv["streams"].as_array().expect("interval streams");
        let sockets: Vec<u64> = ss.iter().filter_map(|s| s["socket"].as_u64()).collect();
        assert_eq!(sockets, want, "{side}: {iv}");
    }
    let ends = doc["end"]["streams"].as_array().expect("end.streams");
    for role in ["sender", "receiver"] {
        let sockets: Vec<u64> = ends
            .iter()
            .filter_map(|e| e[role]["socket"].as_u64())
            .collect();
        assert_eq!(sockets, want, "{side}: end.streams[].{role}");
    }
}

#[test]
fn two_streams_for_two_seconds_are_complete_on_both_sides() {
    let (sender, receiver) = documents(2, 2.0);
    complete(&sender, 2, 2.0, "sender");
    complete(&receiver, 2, 2.0, "receiver");
}

#[test]
fn one_stream_is_complete_on_both_sides() {
    let (sender, receiver) = documents(1, 1.0);
    complete(&sender, 1, 1.0, "sender");
    complete(&receiver, 1, 1.0, "receiver");
}
