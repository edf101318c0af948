//! Same configuration and seed: byte-identical reports. Different seeds: different runs.

mod common;

use hare_link::LossModel;
use hare_sim::{simulate, SimConfig};

fn lossy(seed: u64) -> SimConfig {
    let mut cfg = common::config(
        "determinism",
        common::path("100m", "20ms", Some("200k")),
        "quinn-cubic",
        2 << 20,
        common::secs(2),
    )
    .with_seed(seed);
    cfg.forward.loss.push(LossModel::Bernoulli { p: 0.002 });
    cfg
}

fn jsonl(cfg: &SimConfig) -> (Vec<u8>, Vec<u8>) {
    let out = simulate(cfg, &mut |_| {}).expect("run completes");
    let mut coarse = Vec::new();
    hare_report::jsonl::write_run(&mut coarse, &out.run).expect("write");
    let mut fine = Vec::new();
    hare_report::jsonl::write_run(&mut fine, out.fine.as_ref().expect("fine report"))
        .expect("write");
    (coarse, fine)
}

#[test]
fn same_seed_gives_byte_identical_reports() {
    let a = jsonl(&lossy(7));
    let b = jsonl(&lossy(7));
    assert!(a.0.len() > 1000, "a real report, {} bytes", a.0.len());
    assert_eq!(a.0, b.0, "1 s reports differ");
    assert_eq!(a.1, b.1, "100 ms reports differ");
}

#[test]
fn different_loss_seeds_give_different_runs() {
    let a = jsonl(&lossy(7));
    let c = jsonl(&lossy(8));
    assert_ne!(a.0, c.0);
}
