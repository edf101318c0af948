//! ACK-behaviour knobs reach quinn: a higher ack-eliciting threshold means fewer ACKs.

mod common;

use hare_sim::simulate;

#[test]
fn ack_frequency_reduces_ack_datagrams() {
    let cfg = common::config(
        "ack",
        common::path("100m", "20ms", Some("250k")),
        "quinn-newreno",
        1 << 20,
        common::secs(2),
    );
    let default = simulate(&cfg, &mut |_| {}).expect("run completes");
    let mut sparse = cfg.clone();
    sparse.ack.ack_eliciting_threshold = Some(9);
    let sparse = simulate(&sparse, &mut |_| {}).expect("run completes");
    let data = default.link_forward.offered_packets as f64;
    let acks = default.link_reverse.offered_packets as f64;
    // quinn acknowledges every second packet by default.
    assert!(
        (acks / data - 0.5).abs() < 0.05,
        "ack ratio {}",
        acks / data
    );
    let sparse_ratio =
        sparse.link_reverse.offered_packets as f64 / sparse.link_forward.offered_packets as f64;
    // With threshold 9: one ACK per ten packets (plus ACKs the sender's window updates and
    // loss recovery trigger).
    assert!(
        sparse_ratio < 0.15,
        "ack ratio with threshold 9: {sparse_ratio}"
    );
}
