//! Two kernel-faithful CUBIC flows through one bottleneck: the second, starting 5 s into
//! the first, takes its share, and together they keep the link busy.
//!
//! The path has 1 ms of uniform delay jitter (no reordering). Without it every packet's
//! timing is exact, and the drop-tail queue's overflows fall on the flows by their sending
//! phase, not by their rate (the phase effect of Floyd and Jacobson, "On traffic phase
//! effects in packet-switched gateways", 1992): the smaller flow lost packets in more
//! intervals than the larger, CUBIC's fast convergence (which needs the larger flow to lose)
//! hardly ran, and the late flow converged only after 72.9 s of a 120 s run
//! (`testbed/scenarios/flows/nojitter-cubic-6.toml`). Reno, BIC and quinn's Cubic converge
//! without jitter; with it, this pair converges in about 20 s. See docs/FLOWS.md.

mod common;

use std::time::Duration;

use hare_report::fairness::{sharing, Convergence, FlowSeries};
use hare_sim::{flow_seed, simulate_flows, Flow, SimConfig};

/// Flow `index` of the shared path, starting at `start_s`, sending until second 60.
fn flow(path: &hare_link::PathConfig, index: u32, start_s: u64) -> Flow {
    let mut cfg = common::config(
        &format!("flow{index}"),
        path.clone(),
        "cubic@linux-6",
        8 << 20,
        common::secs(60 - start_s),
    );
    cfg = SimConfig::with_seed(cfg, flow_seed(1, index));
    Flow {
        cfg,
        start: Duration::from_secs(start_s),
        extra_delay: Duration::ZERO,
    }
}

#[test]
fn two_cubic_flows_share_100m_x_40ms_fairly() {
    // 1 BDP of queue: 100 Mbit/s x 40 ms = 500 kB.
    let mut path = common::path("100m", "40ms", Some("500k"));
    path.forward.jitter = Some(hare_link::JitterConfig {
        distribution: hare_link::JitterDistribution::Uniform,
        amount: hare_link::TimeSpan(1_000_000),
        reorder: false,
    });
    let flows = [flow(&path, 0, 0), flow(&path, 1, 5)];
    let out = simulate_flows(&path.forward, &flows).expect("flows run");
    let series: Vec<FlowSeries> = out
        .flows
        .iter()
        .map(|r| {
            let o = r.as_ref().expect("each flow completes");
            let fine = o.fine.as_ref().expect("100 ms report");
            FlowSeries::from_intervals(o.origin_s, &fine.intervals)
        })
        .collect();
    for s in &series {
        assert!(
            s.mbps.iter().sum::<f64>() > 1000.0,
            "each flow delivers: {s:?}"
        );
    }
    // The last 30 s: at least 90% of the link's 100 Mbit/s of IP bytes as goodput of both.
    let last30: f64 = series
        .iter()
        .map(|s| {
            (30..60)
                .map(|i| s.mbps.get(i).copied().unwrap_or(0.0))
                .sum::<f64>()
        })
        .sum::<f64>()
        / 30.0;
    let share = sharing(&series, &Convergence::default());
    eprintln!("last 30 s: {last30:.1} Mbit/s, {share:?}");
    assert!(last30 >= 90.0, "{last30} Mbit/s over the last 30 s");
    assert_eq!(share.window_s, Some((6, 61)));
    assert!(share.jain.is_some_and(|j| j >= 0.9), "{share:?}");
    assert!(share.convergence_s[1].is_some(), "{share:?}");
}
