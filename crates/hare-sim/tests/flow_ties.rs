//! Two identical flows through one bottleneck are equal: neither is favoured by its place in
//! the flow list.
//!
//! Flows that act at the same instant of virtual time offer their packets to the shared
//! drop-tail queue one flow after the other; when that order was the flow index, flow 0's
//! packets took the last places of a nearly full queue at every tie and it won every run
//! (about 55 / 39 Mbit/s for two Reno flows at 100 Mbit/s x 20 ms over 60 s, seeds 1-3,
//! see docs/FLOWS.md). Over eight seeds the larger share now falls on either flow; and one
//! flow alone, which has no one to tie with, runs exactly as [`simulate`] runs it.

mod common;

use std::time::Duration;

use hare_link::{JitterConfig, JitterDistribution, TimeSpan};
use hare_sim::{flow_seed, simulate, simulate_flows, Flow, SimConfig};

/// Seeds of the runs.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=8;

/// Bytes each of two `reno@linux-6` flows delivered, both from 0 s for `secs` seconds on
/// 100 Mbit/s x 20 ms with a 1-BDP queue and 1 ms of jitter (as the flows scenarios), run
/// seed `seed`.
fn two_reno(seed: u64, secs: u64) -> [u64; 2] {
    let mut path = common::path("100m", "20ms", Some("250k"));
    path.forward.seed = seed;
    path.forward.jitter = Some(JitterConfig {
        distribution: JitterDistribution::Uniform,
        amount: TimeSpan(1_000_000),
        reorder: false,
    });
    let flows: Vec<Flow> = (0..2)
        .map(|i| {
            let cfg = common::config(
                &format!("f{i}"),
                path.clone(),
                "reno@linux-6",
                8 << 20,
                common::secs(secs),
            );
            Flow {
                cfg: SimConfig::with_seed(cfg, flow_seed(seed, i)),
                start: Duration::ZERO,
                extra_delay: Duration::ZERO,
            }
        })
        .collect();
    let out = simulate_flows(&path.forward, &flows).expect("flows run");
    let bytes = |i: usize| {
        let o = out.flows[i].as_ref().expect("each flow completes");
        o.run.summary.as_ref().map_or(0, |s| s.bytes)
    };
    [bytes(0), bytes(1)]
}

#[test]
fn neither_of_two_equal_flows_is_favoured_by_its_index() {
    // The seeds are independent runs: side by side on the test machine's cores.
    let runs: Vec<[u64; 2]> = std::thread::scope(|scope| {
        let handles: Vec<_> = SEEDS
            .map(|s| scope.spawn(move || two_reno(s, 20)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a seed's run"))
            .collect()
    });
    let f0_wins = runs.iter().filter(|r| r[0] > r[1]).count();
    let f1_wins = runs.iter().filter(|r| r[1] > r[0]).count();
    let mean_ratio =
        runs.iter().map(|r| r[0] as f64 / r[1] as f64).sum::<f64>() / runs.len() as f64;
    eprintln!("f0 / f1 bytes per seed: {runs:?}");
    eprintln!("f0 wins {f0_wins}, f1 wins {f1_wins}, mean f0/f1 {mean_ratio:.3}");
    for r in &runs {
        assert!(
            r[0] > 10_000_000 && r[1] > 10_000_000,
            "both deliver: {r:?}"
        );
    }
    assert!(
        f0_wins >= 2 && f1_wins >= 2,
        "wins {f0_wins} / {f1_wins}: {runs:?}"
    );
    assert!(
        (mean_ratio - 1.0).abs() <= 0.1,
        "mean f0/f1 {mean_ratio}: {runs:?}"
    );
}

#[test]
fn one_flow_through_the_shared_loop_is_the_one_flow_run() {
    let mut path = common::path("100m", "20ms", Some("250k"));
    path.forward
        .loss
        .push(hare_link::LossModel::Bernoulli { p: 0.001 });
    let cfg = common::config("alone", path, "reno@linux-6", 8 << 20, common::secs(2)).with_seed(5);
    let jsonl = |run: &hare_report::Run| {
        let mut b = Vec::new();
        hare_report::jsonl::write_run(&mut b, run).expect("write");
        b
    };
    let fine = |o: &hare_sim::SimOutput| o.fine.clone().expect("100 ms report");
    let alone = simulate(&cfg, &mut |_| {}).expect("one flow runs");
    let flow = Flow {
        cfg: cfg.clone(),
        start: Duration::ZERO,
        extra_delay: Duration::ZERO,
    };
    let shared = simulate_flows(&cfg.forward, &[flow]).expect("flows run");
    let shared = shared.flows[0].as_ref().expect("the flow completes");
    // A real run: megabytes through, and packets dropped by the queue and the loss model.
    let bytes = alone.run.summary.as_ref().map_or(0, |s| s.bytes);
    assert!(bytes > 5_000_000, "{bytes} bytes");
    let dropped = alone.link_forward.dropped;
    assert!(dropped.queue_full > 0 && dropped.loss > 0, "{dropped:?}");
    assert_eq!(jsonl(&alone.run), jsonl(&shared.run), "1 s reports differ");
    assert_eq!(
        jsonl(&fine(&alone)),
        jsonl(&fine(shared)),
        "100 ms reports differ"
    );
}
