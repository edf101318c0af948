//! Standard slow start into a deep buffer loses nothing (the window caps it); into a small
//! buffer it overshoots and loses packets.

mod common;

use hare_sim::{simulate, SimOutput};

/// 100 Mbit/s x 20 ms: BDP 250 kB. A 500 kB window caps slow start at 2 BDPs.
fn run(queue: &str) -> SimOutput {
    let cfg = common::config(
        &format!("buffer-{queue}"),
        common::path("100m", "20ms", Some(queue)),
        "quinn-newreno",
        500_000,
        common::secs(3),
    );
    simulate(&cfg, &mut |_| {}).expect("run completes")
}

#[test]
fn deep_buffer_no_loss() {
    let out = run("1m");
    let s = out.run.summary.as_ref().expect("summary");
    assert_eq!(s.lost_packets, 0);
    assert_eq!(out.link_forward.dropped.total(), 0);
    assert!(s.slow_start_exit.is_none(), "no loss, so no inferred exit");
    // The queue absorbed the window beyond the BDP: about 250 kB (window 500 kB - BDP).
    assert!(
        out.link_forward.max_queue_bytes > 200_000 && out.link_forward.max_queue_bytes < 300_000,
        "max queue {}",
        out.link_forward.max_queue_bytes
    );
    // The window, not the path, limited the sender once slow start had filled it.
    assert!(out.run.intervals.iter().any(|i| i.flow_control_limited));
}

#[test]
fn small_buffer_slow_start_overshoots() {
    let out = run("30k");
    let s = out.run.summary.as_ref().expect("summary");
    assert!(s.lost_packets > 0);
    assert!(out.link_forward.dropped.queue_full > 0);
    assert_eq!(
        out.link_forward.dropped.total(),
        out.link_forward.dropped.queue_full
    );
    let exit = s.slow_start_exit.as_ref().expect("inferred exit");
    assert_eq!(exit.reason, hare_report::ExitReason::Loss);
    // Slow start ended within the first second, above the 10-packet initial window.
    assert!(exit.t_s < 1.0 && exit.cwnd_segments > 10, "{exit:?}");
    assert!(s.completed);
}
