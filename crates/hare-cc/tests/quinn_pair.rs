//! hare controllers inside a real quinn-proto connection (in memory, virtual time, real
//! handshake and ACK frames): the window grows, the observer sees the connection, and the
//! controller can be read back through `congestion_state()` + downcast.

mod quinn_support;

use std::time::Duration;

use hare_cc::{CcSpec, HareController, Observer};
use quinn_support::pair::Pair;

#[test]
fn hare_cubic_carries_a_transfer_and_reports_through_the_observer() {
    let spec: CcSpec = "cubic@linux-6".parse().expect("valid spec");
    let observer = Observer::with_settings(1, 1024);
    let mut pair = Pair::new(
        spec.factory_with_observer(observer.clone()),
        Duration::from_millis(10),
    )
    .expect("pair");
    let bytes = 3 * 1024 * 1024;
    let report = pair
        .transfer(bytes, Duration::from_secs(30))
        .expect("transfer");
    assert_eq!(report.received, bytes);
    // 20 ms RTT, no loss: slow start from IW10 moves 3 MiB in about 8 RTTs plus the
    // handshake (about 200 ms of virtual time).
    assert!(report.elapsed < Duration::from_millis(400), "{report:?}");

    // The live controller, via quinn's debugging accessor and a downcast.
    let ctrl = pair
        .client()
        .congestion_state()
        .clone_box()
        .into_any()
        .downcast::<HareController>()
        .expect("the client runs a HareController");
    let snap = ctrl.snapshot();
    assert_eq!(snap.algorithm, "cubic");
    assert_eq!(snap.profile, "linux-6");
    // No loss on this path: slow start only, so the window grew well past IW10.
    assert!(snap.cwnd > 10, "cwnd grew: {snap:?}");
    assert_eq!(snap.reductions, 0);
    assert_eq!(snap.cwnd_bytes, u64::from(snap.cwnd) * u64::from(snap.mss));
    assert_eq!(
        pair.client().congestion_state().window(),
        snap.cwnd_bytes + 1
    );

    // The observer registered exactly this connection (one build per connection; quinn
    // clones for inspection do not register) and published a recent snapshot.
    let id = ctrl.id().expect("observed");
    assert_eq!(observer.controllers(), vec![id]);
    let published = observer.snapshot(id).expect("published");
    assert!(published.cwnd > 10, "{published:?}");
    assert!(published.cwnd <= snap.cwnd);
    let metrics = pair.client().congestion_state().metrics();
    assert_eq!(metrics.congestion_window, snap.cwnd_bytes);
    assert!(metrics.pacing_rate.is_some_and(|r| r > 0));
}

#[test]
fn quinn_builtins_run_through_the_same_selection() {
    for s in ["quinn-cubic", "quinn-newreno,initial_window=24000"] {
        let spec: CcSpec = s.parse().expect("valid spec");
        let mut pair = Pair::new(spec.factory(), Duration::from_millis(10)).expect("pair");
        let report = pair
            .transfer(512 * 1024, Duration::from_secs(30))
            .expect("transfer");
        assert_eq!(report.received, 512 * 1024, "{s}");
        assert!(pair
            .client()
            .congestion_state()
            .clone_box()
            .into_any()
            .downcast::<HareController>()
            .is_err());
    }
}

#[test]
fn a_real_rtt_estimator_can_be_captured() {
    // The scripted tests drive controllers through the quinn trait with this estimator.
    let rtt = quinn_support::pair::rtt_estimator();
    assert!(rtt.get() > Duration::ZERO);
    assert!(rtt.min() <= Duration::from_millis(333));
}
