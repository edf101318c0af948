//! `-P N` bulk jobs report each stream and their sum, iperf3-style, on both ends and over
//! both transports, and every count adds up exactly to the bytes moved.

use std::path::Path;
use std::time::Duration;

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{recv_options, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop, TcpSendOptions};
use serde_json::Value;

const STREAMS: usize = 4;
const BYTES: u64 = 24 << 20;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// One document's per-stream entries add up to its sums, interval by interval and at the end.
fn check_document(v: &Value, total: u64) {
    let ivs = v["intervals"].as_array().expect("intervals");
    assert!(!ivs.is_empty());
    let mut by_stream = [0u64; STREAMS];
    for iv in ivs {
        let streams = iv["streams"].as_array().expect("interval streams");
        assert_eq!(streams.len(), STREAMS, "{iv}");
        let sum: u64 = streams.iter().map(|s| u(&s["bytes"])).sum();
        assert_eq!(sum, u(&iv["sum"]["bytes"]), "{iv}");
        for (i, s) in streams.iter().enumerate() {
            assert_eq!(u(&s["socket"]), i as u64 + 1);
            by_stream[i] += u(&s["bytes"]);
        }
    }
    let ends = v["end"]["streams"].as_array().expect("end streams");
    assert_eq!(ends.len(), STREAMS);
    let mut end_sum = 0;
    for (i, e) in ends.iter().enumerate() {
        let b = u(&e["receiver"]["bytes"]);
        assert_eq!(b, u(&e["sender"]["bytes"]));
        // Each stream's intervals add up to its final count.
        assert_eq!(b, by_stream[i], "stream {}", i + 1);
        assert!(b > 0, "stream {} carried data", i + 1);
        end_sum += b;
    }
    assert_eq!(end_sum, total);
    assert_eq!(u(&v["end"]["sum_sent"]["bytes"]), total);
    assert_eq!(u(&v["end"]["sum_received"]["bytes"]), total);
}

fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).expect("json file");
    serde_json::from_str(text.lines().next().expect("one line")).expect("valid JSON")
}

fn run(tcp: bool) {
    let id = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let recv_json = out.path().join("recv.json");
    let send_json = out.path().join("send.json");
    let mut ro = recv_options(id.path().into(), None);
    ro.output.json = Some(JsonTarget::File(recv_json.clone()));
    if tcp {
        ro.tcp = Some(hare_transfer::tcp::TcpOptions::default());
    }
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let job = SendJob::Bulk {
        bytes: Some(BYTES),
        seconds: None,
        streams: STREAMS as u16,
    };
    let trust = if tcp { None } else { recv.trust() };
    let mut o = send_options(recv.addr, trust, job);
    o.interval = Duration::from_millis(100);
    // About 0.4 s at `-R 500m`: several intervals, however fast the machine.
    o.rate = Some(500_000_000);
    o.output.json = Some(JsonTarget::File(send_json.clone()));
    if tcp {
        o.tcp = Some(TcpSendOptions::default());
    }
    let outcome = rt().block_on(send(o, Stop::never())).expect("bulk send");
    assert_eq!(outcome.run.summary.map(|s| s.bytes), Some(BYTES));
    recv.stop().expect("receiver ran cleanly");
    check_document(&read_json(&send_json), BYTES);
    check_document(&read_json(&recv_json), BYTES);
}

#[test]
fn quic_streams_add_up_to_the_sum_on_both_ends() {
    run(false);
}

#[test]
fn kernel_tcp_connections_add_up_to_the_sum_on_both_ends() {
    run(true);
}
