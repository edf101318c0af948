//! The two-thread engine gives the one-thread engine's run: for each seed and path below,
//! reports (1 s and 100 ms), the per-ACK trace, the link counters and the datagram count are
//! byte-identical, and the two-thread runs did use two threads.

mod common;

use std::time::Duration;

use hare_link::units::parse_duration;
use hare_link::{JitterConfig, JitterDistribution, LossModel};
use hare_sim::{simulate_with, ReceiverAcks, SimConfig, SimError, SimOutput, Threads, Workload};

/// Everything a run shows, as bytes and text.
#[derive(Debug, PartialEq)]
struct Shown {
    coarse: Vec<u8>,
    fine: Vec<u8>,
    trace: String,
    links: String,
    datagrams: u64,
    error: Option<String>,
}

fn shown(out: &SimOutput, error: Option<String>) -> Shown {
    let mut coarse = Vec::new();
    hare_report::jsonl::write_run(&mut coarse, &out.run).expect("write");
    let mut fine = Vec::new();
    if let Some(f) = &out.fine {
        hare_report::jsonl::write_run(&mut fine, f).expect("write");
    }
    Shown {
        coarse,
        fine,
        trace: format!("{:?}", out.trace),
        links: format!("{:?} {:?}", out.link_forward, out.link_reverse),
        datagrams: out.datagrams,
        error,
    }
}

/// The run on `threads`, and how many two-thread windows it used.
fn run(cfg: &SimConfig, threads: Threads) -> (Shown, u64) {
    match simulate_with(cfg, threads, &mut |_| {}) {
        Ok(out) => (shown(&out, None), out.windows),
        Err(SimError::Stalled { what, partial, .. }) => {
            (shown(&partial, Some(what)), partial.windows)
        }
        Err(e) => panic!("{e}"),
    }
}

/// Asserts the same run on both engines, with windows in use on two threads.
fn same_on_both(cfg: &SimConfig) -> Shown {
    let (one, none) = run(cfg, Threads::One);
    let (two, windows) = run(cfg, Threads::Auto);
    assert_eq!(none, 0, "one thread throughout");
    assert!(windows > 10, "{windows} two-thread windows");
    assert!(one.datagrams > 2_000, "{} datagrams", one.datagrams);
    assert_eq!(one.error, two.error);
    assert_eq!(
        String::from_utf8_lossy(&one.coarse),
        String::from_utf8_lossy(&two.coarse),
        "1 s reports differ"
    );
    assert!(one.fine == two.fine, "100 ms reports differ");
    assert!(one.trace == two.trace, "traces differ");
    assert_eq!(one.links, two.links, "link counters differ");
    assert_eq!(one.datagrams, two.datagrams);
    one
}

fn lossy(seed: u64) -> SimConfig {
    let mut cfg = common::config(
        "threads",
        common::path("200m", "20ms", Some("150k")),
        "cubic@linux-6",
        4 << 20,
        common::secs(2),
    )
    .with_seed(seed);
    cfg.forward.loss.push(LossModel::Bernoulli { p: 0.001 });
    cfg.trace = true;
    cfg
}

#[test]
fn lossy_runs_are_identical_for_several_seeds() {
    for seed in [1, 7, 23] {
        let shown = same_on_both(&lossy(seed));
        assert!(!shown.fine.is_empty() && shown.trace.len() > 10_000);
    }
}

#[test]
fn reordering_and_asymmetric_delays_are_identical() {
    let mut cfg = lossy(5);
    cfg.forward.delay = parse_duration("4ms").expect("delay");
    cfg.reverse.delay = parse_duration("16ms").expect("delay");
    cfg.forward.jitter = Some(JitterConfig {
        distribution: JitterDistribution::Exponential,
        amount: parse_duration("300us").expect("jitter"),
        reorder: true,
    });
    cfg.workload = Workload::Bytes(30_000_000);
    let shown = same_on_both(&cfg);
    assert!(shown.error.is_none());
}

#[test]
fn the_unpaced_sender_and_the_linux_receiver_are_identical() {
    let mut cfg = common::config(
        "threads-unpaced",
        common::path("100m", "80ms", Some("1000000")),
        "reno@linux-2.6.20",
        64 << 20,
        Workload::Duration(Duration::from_millis(1500)),
    );
    cfg.paced = false;
    cfg.receiver_acks = ReceiverAcks::Linux26;
    cfg.trace = true;
    same_on_both(&cfg);
}

#[test]
fn a_stall_ends_at_the_same_instant() {
    let mut cfg = lossy(3);
    cfg.workload = Workload::Bytes(1 << 40);
    cfg.forward.loss.push(LossModel::Blackout {
        from: parse_duration("1s").expect("from"),
        to: parse_duration("1000s").expect("to"),
    });
    cfg.limits.stall_after = Duration::from_millis(700);
    let shown = same_on_both(&cfg);
    let what = shown.error.unwrap_or_default();
    assert!(what.contains("no payload delivered"), "{what}");
}
