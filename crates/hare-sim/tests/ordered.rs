//! Ordered reads can hit quinn's reassembly gap limit (1024 gaps since quinn-proto 0.11.15);
//! the simulator reports that as an error with the partial run, never a panic. Unordered
//! reads survive the same path.

mod common;

use hare_link::units::parse_duration;
use hare_link::LossModel;
use hare_sim::{simulate, ReadMode, SimConfig, SimError};

/// 1 Gbit/s x 40 ms with a 5 MB queue and an 8 MB window: slow start stops at the window
/// without overshooting the queue (so no loss before the episode), the link runs full, and
/// every second packet dropped for 50 ms opens about 2,100 holes at once, before the first
/// retransmission can fill any. (Without the window cap, slow start's own overshoot into
/// the queue already exceeds the gap limit, as docs/PLATFORM.md notes for 1 Gbit/s x 80 ms.)
fn holes(read_mode: ReadMode) -> SimConfig {
    let mut cfg = common::config(
        "gaps",
        common::path("1g", "40ms", Some("5m")),
        "quinn-newreno",
        8_000_000,
        common::secs(2),
    );
    cfg.read_mode = read_mode;
    cfg.fine_interval = None;
    cfg.forward.loss.push(LossModel::Episode {
        from: parse_duration("1s").expect("from"),
        to: parse_duration("1050ms").expect("to"),
        one_in: 2,
        random: false,
    });
    cfg
}

#[test]
fn ordered_reads_hit_the_gap_limit_as_an_error() {
    match simulate(&holes(ReadMode::Ordered), &mut |_| {}) {
        Err(SimError::ConnectionLost {
            reason,
            partial,
            t_s,
            ..
        }) => {
            assert!(reason.contains("too many gaps"), "reason: {reason}");
            assert!(t_s > 0.9 && t_s < 1.2, "lost at {t_s}");
            let s = partial.run.summary.as_ref().expect("summary");
            assert!(!s.completed && !s.valid);
            assert!(partial.run.events.iter().any(|e| matches!(
                &e.kind,
                hare_report::EventKind::Error { message } if message.contains("too many gaps")
            )));
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the ordered run should have died"),
    }
}

#[test]
fn unordered_reads_survive_the_same_holes() {
    let out = simulate(&holes(ReadMode::Unordered), &mut |_| {}).expect("run completes");
    let s = out.run.summary.as_ref().expect("summary");
    assert!(s.completed);
    assert!(s.lost_packets > 1000, "lost {}", s.lost_packets);
    assert!(out.link_forward.dropped.episode > 2000);
    assert_eq!(out.link_forward.dropped.queue_full, 0);
}
