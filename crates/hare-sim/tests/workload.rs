//! Workloads: bulk by bytes delivers exactly N bytes; by duration stops writing at T.

mod common;

use std::time::Duration;

use hare_sim::{simulate, Workload};

#[test]
fn bulk_bytes_delivers_exactly_n_bytes() {
    let n = 3_000_001; // not a multiple of anything quinn uses
    let cfg = common::config(
        "bytes",
        common::path("100m", "20ms", Some("250k")),
        "quinn-newreno",
        1 << 20,
        Workload::Bytes(n),
    );
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    let s = out.run.summary.as_ref().expect("summary");
    assert!(s.completed);
    assert!(s.valid);
    assert_eq!(s.bytes, n);
    let sum: u64 = out.run.intervals.iter().map(|i| i.bytes).sum();
    assert_eq!(sum, n, "interval bytes add up to the transfer");
    let fine_sum: u64 = out
        .fine
        .as_ref()
        .expect("fine")
        .intervals
        .iter()
        .map(|i| i.bytes)
        .sum();
    assert_eq!(fine_sum, n);
    // The last interval ends when the last byte arrived, which is the summary's duration.
    let last = out.run.intervals.last().expect("intervals");
    assert_eq!(last.end_s, s.seconds);
    // 3 MB at < 100 Mbit/s needs more than 0.24 s.
    assert!(s.seconds > 0.24 && s.seconds < 2.0, "took {} s", s.seconds);
}

#[test]
fn duration_workload_stops_writing_at_t() {
    let t = 3;
    let window = 400_000u64;
    let cfg = common::config(
        "duration",
        common::path("100m", "20ms", Some("250k")),
        "quinn-newreno",
        window,
        common::secs(t),
    );
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    let iv = &out.run.intervals;
    // Full intervals [0,1), [1,2), [2,3), then the drain of what was written before T.
    assert_eq!(iv.len(), 4);
    for (k, i) in iv.iter().take(3).enumerate() {
        assert_eq!((i.start_s, i.end_s), (k as f64, k as f64 + 1.0));
    }
    let s = out.run.summary.as_ref().expect("summary");
    assert!(s.completed);
    // After T at most the send window is left to deliver: window / rate plus one RTT.
    let drain_max = window as f64 * 8.0 / 95e6 + 0.02 + 0.005;
    assert!(
        s.seconds >= t as f64 && s.seconds <= t as f64 + drain_max,
        "ended at {} s",
        s.seconds
    );
    assert_eq!(iv[3].end_s, s.seconds);
    assert!(iv[3].bytes <= window);
    // The origin is the client's handshake completion: one RTT after the start plus
    // serialisation of the handshake datagrams.
    assert!(
        out.origin_s > 0.020 && out.origin_s < 0.025,
        "origin {}",
        out.origin_s
    );
    assert!(
        (out.sim_seconds - (out.origin_s + s.seconds)).abs() < 1e-9,
        "virtual time runs from the connection start"
    );
    let _ = Duration::from_secs(t);
}
