//! Measures the wall-clock cost of `Link::offer` (run with `--release`):
//! `cargo run --release -p hare-link --example offer_cost`.
//!
//! Offers 10 s of virtual traffic at about 1.2x a 10 Gbit/s bottleneck (8980-byte packets
//! into a 100 MiB drop-tail queue), once without and once with loss models and jitter.

use std::time::Instant;

use hare_link::{
    BitRate, ByteSize, JitterConfig, JitterDistribution, Link, LinkConfig, LossModel, TimeSpan,
    Verdict,
};

fn measure(name: &str, cfg: &LinkConfig) -> Result<(), hare_link::LinkError> {
    let mut link = Link::new(cfg)?;
    let gap = 6_000; // ns between offers: 8980 B every 6 us = 11.97 Gbit/s
    let packets = 10_000_000_000 / gap;
    let start = Instant::now();
    let mut checksum = 0u64;
    for i in 0..packets {
        if let Verdict::Delivered { at } = link.offer(i * gap, 8980) {
            checksum = checksum.wrapping_add(at);
        }
    }
    let wall = start.elapsed();
    let s = link.stats();
    println!(
        "{name}: {packets} offers in {:.3} s = {:.1} ns/offer; delivered {}, dropped {} \
         (queue {} / loss {} / episode {}), max queue {} packets, checksum {checksum}",
        wall.as_secs_f64(),
        wall.as_nanos() as f64 / packets as f64,
        s.delivered_packets,
        s.dropped.total(),
        s.dropped.queue_full,
        s.dropped.loss,
        s.dropped.episode,
        s.max_queue_packets,
    );
    Ok(())
}

fn main() -> Result<(), hare_link::LinkError> {
    let mut cfg = LinkConfig::new(BitRate(10_000_000_000), TimeSpan(40_000_000));
    cfg.queue_bytes = Some(ByteSize(100 << 20));
    measure("plain", &cfg)?;
    cfg.loss = vec![
        LossModel::Bernoulli { p: 0.0001 },
        LossModel::GilbertElliott {
            p_good_to_bad: 0.0001,
            p_bad_to_good: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        },
        LossModel::Episode {
            from: TimeSpan::from_secs(2),
            to: TimeSpan::from_secs(3),
            one_in: 1000,
            random: false,
        },
    ];
    cfg.jitter = Some(JitterConfig {
        distribution: JitterDistribution::Uniform,
        amount: TimeSpan(100_000),
        reorder: false,
    });
    measure("loss+jitter", &cfg)
}
