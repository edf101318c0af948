//! The limit flag of each interval says which limit bound: a run that cwnd holds back (hare
//! CUBIC with `cwnd_clamp=20` on loopback) is flagged cwnd-limited and never flow-control
//! limited, although hare fills quinn's send buffer up to the peer's credit and quinn sends
//! STREAM_DATA_BLOCKED all along; a run with a small window (`-w 64k`) is flow-control
//! limited.

use std::time::Duration;

use hare_report::{nuttcp, Interval};
use hare_transfer::testkit::{recv_options, runtime, send_options, BackgroundReceiver};
use hare_transfer::{send, SendJob, Stop};

/// The whole 0.5 s intervals of a 2 s bulk run with `cc` and `window`.
fn intervals(cc: &str, window: u64) -> Vec<Interval> {
    let id = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), None)).expect("receiver");
    let mut o = send_options(
        recv.addr,
        recv.trust(),
        SendJob::Bulk {
            bytes: None,
            seconds: Some(2.0),
            streams: 1,
        },
    );
    o.cc = Some(cc.into());
    o.link.window = window;
    o.interval = Duration::from_millis(500);
    let outcome = runtime()
        .block_on(send(o, Stop::never()))
        .expect("bulk send");
    let _ = recv.stop();
    let ivs: Vec<Interval> = outcome
        .run
        .intervals
        .into_iter()
        .filter(|iv| iv.seconds() > 0.4)
        .collect();
    assert!(ivs.len() >= 3, "{ivs:#?}");
    ivs
}

#[test]
fn a_cwnd_limited_run_has_no_flow_control_flag() {
    for iv in intervals("cubic,cwnd_clamp=20", 32 << 20) {
        assert_eq!(iv.cwnd_segments, Some(20));
        assert!(!iv.flow_control_limited, "{iv:#?}");
        assert_eq!(iv.cwnd_limited, Some(true), "{iv:#?}");
        assert!(nuttcp::interval_line(&iv).ends_with("  [cwnd]"));
    }
}

#[test]
fn a_window_limited_run_says_so() {
    for iv in intervals("cubic", 64 << 10) {
        assert!(iv.flow_control_limited, "{iv:#?}");
        assert!(nuttcp::interval_line(&iv).ends_with("  [window]"));
    }
}
