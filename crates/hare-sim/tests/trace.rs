//! The per-ACK controller trace.

mod common;

use hare_sim::simulate;

#[test]
fn trace_has_one_point_per_ack_frame_with_sane_values() {
    let mut cfg = common::config(
        "trace",
        common::path("100m", "20ms", Some("100k")),
        "quinn-newreno",
        1 << 20,
        common::secs(1),
    );
    cfg.trace = true;
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    let tr = &out.trace;
    // About one ACK frame per two data packets: 100 Mbit/s of 1480-byte packets for a
    // second is ~8,400 packets.
    assert!(tr.len() > 3000 && tr.len() < 9000, "{} points", tr.len());
    assert!(
        tr.windows(2).all(|w| w[0].t_s <= w[1].t_s),
        "time goes forward"
    );
    let with_rtt: Vec<u64> = tr.iter().filter_map(|p| p.rtt_sample_us).collect();
    assert!(with_rtt.len() > tr.len() / 2);
    // Every RTT sample includes the 20 ms propagation plus serialisation.
    assert!(
        with_rtt.iter().all(|&r| r >= 20_000),
        "min {:?}",
        with_rtt.iter().min()
    );
    // Queueing shows: samples up to 20 ms + 100 KiB / 100 Mbit/s (8.2 ms) + ACK delay.
    let max = with_rtt.iter().copied().max().unwrap_or(0);
    assert!(max > 25_000 && max < 60_000, "max rtt sample {max} us");
    assert!(tr.iter().all(|p| p.queue_bytes <= 102_400));
    assert!(tr.iter().any(|p| p.queue_bytes > 50_000));
    assert!(tr
        .iter()
        .all(|p| u64::from(p.cwnd_segments) == p.cwnd_bytes / 1452));
    let acked: u64 = tr.iter().map(|p| u64::from(p.acked_packets)).sum();
    assert!(acked > 6000, "acked {acked}");
    // Without `trace` there are no points.
    cfg.trace = false;
    let quiet = simulate(&cfg, &mut |_| {}).expect("run completes");
    assert!(quiet.trace.is_empty());
}
