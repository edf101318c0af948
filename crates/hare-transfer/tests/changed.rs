//! A file rewritten while it is sent is never delivered as done: the sender names it with
//! the reason, the receiver keeps nothing under its name, and both sides count the same bytes.

use std::io::{Seek, SeekFrom, Write};
use std::time::Duration;

use hare_transfer::testkit::{
    in_progress, recv_options, runtime, seeded_bytes, send_options, BackgroundReceiver,
};
use hare_transfer::{send, SendJob, Stop};

#[test]
fn a_file_rewritten_during_its_send_is_not_reported_done() {
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let p = src.path().join("live.log");
    // 2 MiB at 8 Mbit/s takes about 2 s: the rewrite lands in the middle.
    std::fs::write(&p, seeded_bytes(3, 2 << 20)).expect("w");
    std::fs::write(src.path().join("calm.txt"), b"unchanged").expect("w");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    let writer = {
        let (p, dst) = (p.clone(), dst.path().to_path_buf());
        std::thread::spawn(move || {
            // Once the receiver holds some of the file, so the send is surely under way.
            for _ in 0..400 {
                if in_progress(&dst, "live.log")
                    .iter()
                    .any(|(_, len)| *len > 0)
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
            // Same size, different bytes in the middle: only the times show the change.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .expect("open for rewrite");
            f.seek(SeekFrom::Start(1 << 20)).expect("seek");
            f.write_all(&[0x55; 4096]).expect("rewrite");
        })
    };
    let job = SendJob::Files {
        paths: vec![src.path().join("calm.txt"), p.clone()],
        resume: false,
        force: false,
        parallel: 2,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.rate = Some(8_000_000);
    // Not sent again (`--retries 0`): tests/retry.rs covers the retries.
    o.retries = 0;
    let outcome = runtime()
        .block_on(send(o, Stop::never()))
        .expect("the job runs");
    writer.join().expect("writer");
    let by_name = |n: &str| outcome.files.iter().find(|f| f.name == n).cloned();
    let live = by_name("live.log").expect("live.log reported");
    assert!(!live.ok, "{live:?}");
    let reason = live.reason.unwrap_or_default();
    assert!(
        reason.contains("changed while being sent (it was modified)"),
        "{reason}"
    );
    assert!(by_name("calm.txt").is_some_and(|f| f.ok));
    assert!(!dst.path().join("live.log").exists());
    assert_eq!(
        std::fs::read(dst.path().join("calm.txt")).expect("r"),
        b"unchanged"
    );
    // Nothing of the changed file is kept for --resume either.
    let left: Vec<_> = std::fs::read_dir(dst.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // The summary's byte count is the receiver's: both sides agree by construction.
    let s = outcome.run.summary.expect("summary");
    assert!(s.bytes >= 9 && s.bytes < (2 << 20) + 9, "{}", s.bytes);
}

#[test]
fn an_unrepresentable_name_fails_that_file_only() {
    use std::os::unix::ffi::OsStrExt;
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let t = src.path().join("t");
    std::fs::create_dir(&t).expect("mkdir");
    std::fs::write(t.join("good.txt"), b"good").expect("w");
    std::fs::write(t.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), b"latin-1").expect("w");
    std::fs::write(t.join("a\\b"), b"backslash").expect("w");
    let recv = BackgroundReceiver::start(recv_options(id.path().into(), Some(dst.path().into())))
        .expect("receiver");
    let job = SendJob::Files {
        paths: vec![t],
        resume: false,
        force: false,
        parallel: 2,
    };
    let outcome = runtime()
        .block_on(send(
            send_options(recv.addr, recv.trust(), job),
            Stop::never(),
        ))
        .expect("the job runs");
    let mut failed: Vec<(String, String)> = outcome
        .failures()
        .map(|f| (f.name.clone(), f.reason.clone().unwrap_or_default()))
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        vec![
            (
                "t/a\\b".to_owned(),
                "name cannot be sent: forbidden character '\\\\'".to_owned()
            ),
            (
                "t/caf\u{fffd}".to_owned(),
                "name is not valid UTF-8; not sent".to_owned()
            ),
        ]
    );
    assert_eq!(
        std::fs::read(dst.path().join("t/good.txt")).expect("r"),
        b"good"
    );
    assert!(!outcome.run.summary.expect("summary").completed);
}
