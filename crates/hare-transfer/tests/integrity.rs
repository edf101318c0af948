//! Hostile jobs beside honest ones: no job can change a file another job reports verified,
//! and every sender is told the truth about its own files.

mod hostile;

use std::path::PathBuf;
use std::time::Duration;

use hare_transfer::protocol::{ToReceiver, ToSender};
use hare_transfer::testkit::{
    in_progress, recv_options, runtime as rt, seeded_bytes as bytes, send_options,
    BackgroundReceiver,
};
use hare_transfer::{send, SendJob, SendOptions, SendOutcome, Stop, TransferError};
use hostile::{connect, files_hello, wait_for};

struct Fixture {
    _id: tempfile::TempDir,
    src: tempfile::TempDir,
    dst: tempfile::TempDir,
    recv: BackgroundReceiver,
}

fn fixture() -> Fixture {
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    Fixture {
        _id: id,
        src,
        dst,
        recv,
    }
}

impl Fixture {
    /// An honest sender of `path` at `rate` bit/s.
    fn sender(&self, path: PathBuf, rate: Option<u64>) -> SendOptions {
        let job = SendJob::Files {
            paths: vec![path],
            resume: false,
            force: false,
            parallel: 1,
        };
        let mut o = send_options(self.recv.addr, self.recv.trust(), job);
        o.rate = rate;
        o
    }

    fn fp(&self) -> hare_transfer::identity::Fingerprint {
        self.recv.fingerprint.expect("quic")
    }
}

fn refused(a: &Option<ToSender>, needle: &str) -> bool {
    matches!(a, Some(ToSender::Refuse { reason }) if reason.contains(needle))
}

fn all_ok(o: &SendOutcome) -> bool {
    !o.files.is_empty() && o.files.iter().all(|f| f.ok)
}

#[test]
fn a_temporary_style_name_cannot_inject_into_another_jobs_file() {
    let f = fixture();
    let data = bytes(1, 1_500_000);
    let p = f.src.path().join("big.bin");
    std::fs::write(&p, &data).expect("w");
    let dst = f.dst.path().to_path_buf();
    let attack = async {
        wait_for("the honest transfer", || {
            !in_progress(&dst, "big.bin").is_empty()
        })
        .await;
        let live = in_progress(&dst, "big.bin").remove(0).0;
        for name in [".big.bin.hare-part".to_owned(), live] {
            let mut h = connect(f.recv.addr, f.fp(), None).await;
            let a = h.hello(&files_hello(&[(&name, 5100)], true, None)).await;
            assert!(refused(&a, "temporary files"), "{name}: {a:?}");
        }
    };
    let (outcome, ()) = rt().block_on(async {
        tokio::join!(send(f.sender(p, Some(6_000_000)), Stop::never()), attack)
    });
    let outcome = outcome.expect("honest sender");
    assert!(all_ok(&outcome), "{:?}", outcome.files);
    assert_eq!(
        std::fs::read(f.dst.path().join("big.bin")).expect("r"),
        data
    );
    assert_eq!(std::fs::read_dir(f.dst.path()).expect("dir").count(), 1);
}

#[test]
fn a_job_holding_a_name_keeps_others_out_and_its_bytes_never_land() {
    let f = fixture();
    let honest = bytes(2, 300_000);
    let p = f.src.path().join("x");
    std::fs::write(&p, &honest).expect("w");
    let dst = f.dst.path().to_path_buf();
    rt().block_on(async {
        // The attacker is accepted for `x`, writes 1 MiB of its bytes and stays.
        let mut h = connect(f.recv.addr, f.fp(), None).await;
        let a = h.hello(&files_hello(&[("x", 2 << 20)], true, None)).await;
        assert!(matches!(a, Some(ToSender::Welcome { .. })), "{a:?}");
        let _s = h.file_data(0, 0, &vec![0xEE; 1 << 20], false).await;
        wait_for("the attacker's data", || !in_progress(&dst, "x").is_empty()).await;
        // An honest sender of the same name meanwhile is refused and told why.
        let err = send(f.sender(p.clone(), None), Stop::never())
            .await
            .expect_err("name in use");
        assert!(
            matches!(&err, TransferError::Refused(r) if r.contains("x: being received from another sender")),
            "{err}"
        );
        // The attacker leaves; its partial data waits for its own --resume, nowhere else.
        h.conn.close(2u32.into(), b"bye");
        wait_for("the attacker's partial to be kept", || {
            hare_transfer::testkit::test_sender_part(&dst, "x").exists() && in_progress(&dst, "x").is_empty()
        })
        .await;
        let outcome = send(f.sender(p.clone(), None), Stop::never())
            .await
            .expect("honest sender after the attacker left");
        assert!(all_ok(&outcome), "{:?}", outcome.files);
        // Now the verified file exists: without --force nobody replaces it.
        let mut h = connect(f.recv.addr, f.fp(), None).await;
        let a = h.hello(&files_hello(&[("x", 5100)], false, None)).await;
        assert!(refused(&a, "x: exists"), "{a:?}");
    });
    assert_eq!(std::fs::read(f.dst.path().join("x")).expect("r"), honest);
    // The stale partial went with the verified file; nothing else is left.
    assert_eq!(std::fs::read_dir(f.dst.path()).expect("dir").count(), 1);
}

#[test]
fn two_honest_senders_of_one_name_one_wins_and_the_other_hears_why() {
    let f = fixture();
    let (a, b) = (bytes(3, 700_000), bytes(4, 700_000));
    for (sub, data) in [("a", &a), ("b", &b)] {
        std::fs::create_dir(f.src.path().join(sub)).expect("mkdir");
        std::fs::write(f.src.path().join(sub).join("y"), data).expect("w");
    }
    let (ra, rb) = rt().block_on(async {
        tokio::join!(
            send(
                f.sender(f.src.path().join("a/y"), Some(4_000_000)),
                Stop::never()
            ),
            send(
                f.sender(f.src.path().join("b/y"), Some(4_000_000)),
                Stop::never()
            )
        )
    });
    let (won, lost, data) = match (&ra, &rb) {
        (Ok(o), Err(e)) => (o, e, &a),
        (Err(e), Ok(o)) => (o, e, &b),
        _ => panic!("exactly one must win: {:?} / {:?}", ra.is_ok(), rb.is_ok()),
    };
    assert!(all_ok(won), "{:?}", won.files);
    assert!(
        matches!(lost, TransferError::Refused(r) if r.contains("another sender")),
        "{lost}"
    );
    assert_eq!(&std::fs::read(f.dst.path().join("y")).expect("r"), data);
}

#[test]
fn per_file_failures_reach_the_sender_with_the_receivers_reason() {
    let f = fixture();
    rt().block_on(async {
        let mut h = connect(f.recv.addr, f.fp(), None).await;
        let a = h
            .hello(&files_hello(&[("good", 3), ("bad", 3)], false, None))
            .await;
        assert!(matches!(a, Some(ToSender::Welcome { .. })), "{a:?}");
        h.file_data(0, 0, b"abc", true).await;
        h.file_data(1, 0, b"xyz", true).await;
        for (index, data) in [(0, b"abc"), (1, b"lie")] {
            h.say(&ToReceiver::FileDone {
                index,
                blake3: blake3::hash(data).to_hex().to_string(),
            })
            .await;
        }
        let mut results = Vec::new();
        while let Some(m) = h.hear().await {
            match m {
                ToSender::FileResult {
                    index, ok, reason, ..
                } => results.push((index, ok, reason)),
                ToSender::Done { .. } => break,
                ToSender::Progress { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        results.sort_by_key(|r| r.0);
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0], (0, true, None));
        assert!(!results[1].1);
        let reason = results[1].2.clone().unwrap_or_default();
        assert!(reason.starts_with("file bad: BLAKE3 mismatch"), "{reason}");
        // The receiver leaves the close to the sender once it has every verdict.
        assert_eq!(h.closed_within(Duration::from_millis(300)).await, None);
        h.conn.close(0u32.into(), b"");
    });
    assert_eq!(std::fs::read(f.dst.path().join("good")).expect("r"), b"abc");
    assert!(!f.dst.path().join("bad").exists());
}
