//! The keyed null cipher changes no packet size and no decision: for a seed, reports, trace
//! and link counters are byte-identical with real AES-GCM protection and with null
//! protection.

mod common;

use hare_link::LossModel;
use hare_sim::{simulate, CryptoMode, SimConfig};

fn lossy(crypto: CryptoMode) -> SimConfig {
    let mut cfg = common::config(
        "crypto-modes",
        common::path("200m", "20ms", Some("150k")),
        "cubic@linux-6",
        4 << 20,
        common::secs(2),
    )
    .with_seed(11);
    cfg.forward.loss.push(LossModel::Bernoulli { p: 0.001 });
    cfg.trace = true;
    cfg.crypto = crypto;
    cfg
}

fn everything(cfg: &SimConfig) -> (Vec<u8>, Vec<u8>, String, String, u64) {
    let out = simulate(cfg, &mut |_| {}).expect("run completes");
    let mut coarse = Vec::new();
    hare_report::jsonl::write_run(&mut coarse, &out.run).expect("write");
    let mut fine = Vec::new();
    hare_report::jsonl::write_run(&mut fine, out.fine.as_ref().expect("fine report"))
        .expect("write");
    let trace = format!("{:?}", out.trace);
    let links = format!("{:?} {:?}", out.link_forward, out.link_reverse);
    (coarse, fine, trace, links, out.datagrams)
}

#[test]
fn real_and_null_protection_give_byte_identical_runs() {
    let real = everything(&lossy(CryptoMode::Real));
    let null = everything(&lossy(CryptoMode::Null));
    assert!(real.0.len() > 1000, "a real report, {} bytes", real.0.len());
    assert!(real.2.len() > 10_000, "a real trace");
    assert!(real.4 > 10_000, "{} datagrams", real.4);
    assert_eq!(real.0, null.0, "1 s reports differ");
    assert_eq!(real.1, null.1, "100 ms reports differ");
    assert_eq!(real.2, null.2, "traces differ");
    assert_eq!(
        real.3, null.3,
        "link counters differ (packet sizes changed)"
    );
    assert_eq!(real.4, null.4);
    let text = String::from_utf8_lossy(&real.0);
    assert!(
        text.contains("\"lost_packets\""),
        "the run has losses: {text}"
    );
}

#[test]
fn the_simulator_defaults_to_null_protection() {
    assert_eq!(lossy(CryptoMode::default()).crypto, CryptoMode::Null);
    let cfg = common::config(
        "x",
        common::path("10m", "10ms", None),
        "reno",
        1 << 20,
        common::secs(1),
    );
    assert_eq!(cfg.crypto, CryptoMode::Null);
}
