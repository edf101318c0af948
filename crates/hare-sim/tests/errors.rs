//! Configuration errors name what was wrong; a dead path ends as a stall with the report.

mod common;

use std::time::Duration;

use hare_link::units::parse_duration;
use hare_link::LossModel;
use hare_sim::{simulate, SimError};

fn base() -> hare_sim::SimConfig {
    common::config(
        "errors",
        common::path("100m", "20ms", Some("100k")),
        "quinn-cubic",
        1 << 20,
        common::secs(2),
    )
}

#[test]
fn bad_controller_spec_carries_hare_cc_message() {
    let mut cfg = base();
    cfg.controller = "vegas".into();
    match simulate(&cfg, &mut |_| {}) {
        Err(SimError::Controller { spec, message }) => {
            assert_eq!(spec, "vegas");
            assert!(message.contains("unknown algorithm `vegas`"), "{message}");
        }
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
}

#[test]
fn bad_link_config_names_the_direction_and_field() {
    let mut cfg = base();
    cfg.reverse.queue_packets = Some(0);
    match simulate(&cfg, &mut |_| {}) {
        Err(e @ SimError::Link { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("reverse") && text.contains("queue_packets"),
                "{text}"
            );
        }
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
}

#[test]
fn bad_settings_are_named() {
    let mut cfg = base();
    cfg.mtu = 1000;
    let text = simulate(&cfg, &mut |_| {})
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(text.contains("`mtu` = 1000"), "{text}");
    let mut cfg = base();
    cfg.windows.receive = 1 << 62;
    let text = simulate(&cfg, &mut |_| {})
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(text.contains("windows.receive"), "{text}");
}

#[test]
fn dead_path_is_a_stall_with_a_partial_report() {
    let mut cfg = base();
    cfg.forward.loss.push(LossModel::Blackout {
        from: parse_duration("500ms").expect("from"),
        to: parse_duration("1000s").expect("to"),
    });
    cfg.limits.stall_after = Duration::from_secs(3);
    match simulate(&cfg, &mut |_| {}) {
        Err(SimError::Stalled { t_s, what, partial }) => {
            assert!(what.contains("no payload delivered"), "{what}");
            // The last byte arrived just after 0.5 s of link time; 3 s later the run stops.
            assert!(t_s > 3.4 && t_s < 3.6, "stalled at {t_s}");
            let s = partial.run.summary.as_ref().expect("summary");
            assert!(!s.completed);
            assert!(s.bytes > 0);
            assert_eq!(partial.run.intervals.len(), 4);
        }
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
}
