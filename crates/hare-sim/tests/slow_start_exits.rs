//! How each kernel model leaves slow start on a deep path (100 Mbit/s x 80 ms, 1 MB queue,
//! windows far above the path): HyStart is code of `tcp_cubic.c` only, so Reno and BIC of
//! every profile slow-start until the queue overflows and leave by loss (BIC of 2.6.20 at
//! its `initial_ssthresh` of 100, that kernel's default), while CUBIC `linux-6` leaves by
//! HyStart (ACK train or delay) before any loss.

mod common;

use hare_cc::Profile;
use hare_report::EventKind;
use hare_report::{CcEvent, ExitReason};
use hare_sim::simulate;

/// The first slow-start exit of `spec` on the deep path.
fn first_exit(spec: &str) -> ExitReason {
    let cfg = common::config(
        &format!("deep-{spec}"),
        common::path("100m", "80ms", Some("1m")),
        spec,
        64 << 20,
        common::Workload::Bytes(12 << 20),
    );
    let out = simulate(&cfg, &mut |_| {}).expect("run completes");
    out.run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Cc {
                event: CcEvent::SlowStartExit { reason, .. },
            } => Some(*reason),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{spec}: no slow-start exit"))
}

#[test]
fn reno_and_bic_of_every_profile_leave_slow_start_by_loss() {
    for alg in ["reno", "bic"] {
        for profile in Profile::NAMES {
            let spec = format!("{alg}@{profile}");
            let expected = if spec == "bic@linux-2.6.20" {
                ExitReason::SsthreshReached
            } else {
                ExitReason::Loss
            };
            assert_eq!(first_exit(&spec), expected, "{spec}");
        }
    }
}

#[test]
fn cubic_linux_6_leaves_slow_start_by_hystart() {
    let reason = first_exit("cubic@linux-6");
    assert!(
        matches!(reason, ExitReason::AckTrain | ExitReason::Delay),
        "{reason:?}"
    );
}
