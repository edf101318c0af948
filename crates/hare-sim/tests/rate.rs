//! The link's rate caps goodput at rate x payload/(IP packet) once in steady state.

mod common;

use hare_sim::simulate;

#[test]
fn goodput_is_the_link_rate_times_payload_share() {
    let rate = 100e6;
    let mtu = 1452u16;
    // A window of 4 BDPs and a queue of 2 BDPs: after slow start the link never idles.
    let mut cfg = common::config(
        "rate",
        common::path("100m", "20ms", Some("500k")),
        "quinn-newreno",
        1_000_000,
        common::secs(4),
    );
    cfg.mtu = mtu;
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    // IP bytes per full datagram: UDP payload + 28.
    let ip = f64::from(mtu) + 28.0;
    // QUIC 1-RTT packet overhead in these runs: 1 flags byte, 8-byte connection id, 2-byte
    // packet number, 16-byte AEAD tag, STREAM frame type, stream id and 4-byte offset
    // varint (length omitted, last frame) = 29 + 1 + 1 + 4 = 33 bytes.
    let payload = f64::from(mtu) - 33.0;
    let expected = rate * payload / ip;
    let ceiling = rate * f64::from(mtu) / ip;
    for i in &out.run.intervals[1..4] {
        let bps = i.bytes as f64 * 8.0 / i.seconds();
        assert!(
            bps < ceiling,
            "{bps} exceeds the link's UDP payload rate {ceiling}"
        );
        let err = (bps - expected).abs() / expected;
        assert!(err < 0.005, "{bps} vs {expected}: {:.3}% off", err * 100.0);
    }
}
