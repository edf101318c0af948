//! A file sent again (it changed while it was read): the data channel of the attempt the
//! retry discarded can reach the receiver after the retry did, because the control channel
//! overtakes data. The receiver drops that channel by its attempt number and takes the new
//! attempt's; the file arrives as sent last and the job goes on.

mod hostile;

use std::time::Duration;

use hare_transfer::protocol::{ToReceiver, ToSender};
use hare_transfer::testkit::{recv_options, runtime, BackgroundReceiver};
use hostile::{connect, files_hello};

#[test]
fn a_late_channel_of_a_discarded_attempt_is_dropped_and_the_new_one_taken() {
    let id = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    let fp = recv.fingerprint.expect("fingerprint");
    let (old, new) = (b"first version.", b"second version");
    let outcome = runtime().block_on(async {
        let mut h = connect(recv.addr, fp, None).await;
        let welcome = h.hello(&files_hello(&[("f.txt", 14)], false, None)).await;
        assert!(
            matches!(&welcome, Some(ToSender::Welcome { features, .. }) if features.iter().any(|f| f == "retry")),
            "{welcome:?}"
        );
        // The retry comes before the first attempt's channel has reached the receiver.
        h.say(&ToReceiver::FileRetry {
            index: 0,
            reason: "changed while being sent (it was modified); not delivered".into(),
            size: 14,
            mode: None,
            mtime_ns: None,
            attempt: Some(1),
        })
        .await;
        let restart = h.hear().await;
        assert!(
            matches!(restart, Some(ToSender::FileRestart { index: 0 })),
            "{restart:?}"
        );
        // Now the discarded attempt's channel arrives, then the new attempt's.
        h.file_attempt(0, 0, old).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.file_attempt(0, 1, new).await;
        h.say(&ToReceiver::FileDone {
            index: 0,
            blake3: blake3::hash(new).to_hex().to_string(),
        })
        .await;
        let mut heard = Vec::new();
        while let Some(m) = h.hear().await {
            let done = matches!(m, ToSender::Done { .. });
            heard.push(m);
            if done {
                break;
            }
        }
        heard
    });
    let verdict = outcome
        .iter()
        .find_map(|m| match m {
            ToSender::FileResult {
                index: 0,
                ok,
                reason,
                ..
            } => Some((*ok, reason.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a verdict: {outcome:?}"));
    assert_eq!(verdict, (true, None));
    match outcome.last() {
        // Only the new attempt's bytes were read.
        Some(ToSender::Done { bytes, .. }) => assert_eq!(*bytes, 14),
        other => panic!("done last: {other:?}"),
    }
    assert_eq!(std::fs::read(dst.path().join("f.txt")).expect("f.txt"), new);
}
