//! `--retries`: a file that changes while it is read is sent again from its start within the
//! same job; it arrives as the version read last, or fails after the retries, naming itself.
//! Both sides count the same bytes (every byte that arrived, of every attempt).

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{
    in_progress, recv_options, runtime, seeded_bytes, send_options, BackgroundReceiver,
};
use hare_transfer::{send, SendJob, SendOutcome, Stop};

/// Wait until the receiver holds some of `name` (it writes in runs of up to 1 MiB): its send
/// is surely under way.
fn wait_for_data(dst: &Path, name: &str) {
    for _ in 0..400 {
        if in_progress(dst, name).iter().any(|(_, len)| *len > 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn rewrite(p: &Path, byte: u8) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .expect("open for rewrite");
    f.seek(SeekFrom::Start(1536 << 10)).expect("seek");
    f.write_all(&[byte; 4096]).expect("rewrite");
}

/// Send `p` (2 MiB at 16 Mbit/s: about 1 s an attempt) with `retries`, while `writer` runs
/// (told by its flag when the send is over); returns the sender's outcome and the receiver's
/// byte count from its JSON document.
fn send_while(
    p: &Path,
    dst: &Path,
    retries: u32,
    writer: impl FnOnce(PathBuf, PathBuf, Arc<AtomicBool>) + Send + 'static,
) -> (SendOutcome, u64) {
    let over = Arc::new(AtomicBool::new(false));
    let id = tempfile::tempdir().expect("tempdir");
    let json = id.path().join("recv.json");
    let mut ro = recv_options(id.path().join("state"), Some(dst.into()));
    ro.output.json = Some(JsonTarget::File(json.clone()));
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let w = {
        let (p, dst, over) = (p.to_path_buf(), dst.to_path_buf(), over.clone());
        std::thread::spawn(move || writer(p, dst, over))
    };
    let job = SendJob::Files {
        paths: vec![p.to_path_buf()],
        resume: false,
        force: false,
        parallel: 1,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.rate = Some(16_000_000);
    o.retries = retries;
    let out = runtime()
        .block_on(send(o, Stop::never()))
        .expect("the job runs");
    over.store(true, Ordering::Relaxed);
    w.join().expect("writer");
    recv.stop().expect("receiver stops");
    let text = std::fs::read_to_string(&json).expect("receiver JSON");
    let doc: serde_json::Value = serde_json::from_str(text.trim()).expect("one document");
    let received = doc["end"]["sum_received"]["bytes"]
        .as_u64()
        .expect("end.sum_received.bytes");
    (out, received)
}

#[test]
fn a_file_rewritten_once_during_its_send_arrives_as_the_second_version() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let p = src.path().join("live.log");
    std::fs::write(&p, seeded_bytes(5, 2 << 20)).expect("w");
    let (out, received) = send_while(&p, dst.path(), 3, |p, dst, _| {
        wait_for_data(&dst, "live.log");
        rewrite(&p, 0x55);
    });
    let f = &out.files[0];
    assert!(f.ok, "{f:?}");
    assert_eq!(f.retries, 1, "{f:?}");
    let want = std::fs::read(&p).expect("r");
    assert_eq!(&want[1536 << 10..(1536 << 10) + 4], &[0x55; 4]);
    assert_eq!(std::fs::read(dst.path().join("live.log")).expect("r"), want);
    let s = out.run.summary.expect("summary");
    assert!(s.completed);
    // The first attempt's bytes count on both sides: more than the file, and equal.
    assert_eq!(s.bytes, received);
    assert!(s.bytes > 2 << 20, "{}", s.bytes);
    let left: Vec<_> = std::fs::read_dir(dst.path())
        .expect("ls")
        .flatten()
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn a_file_rewritten_all_the_time_fails_after_its_retries_naming_itself() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let p = src.path().join("busy.db");
    std::fs::write(&p, seeded_bytes(6, 2 << 20)).expect("w");
    let (out, received) = send_while(&p, dst.path(), 2, |p, _, over| {
        // Until the send is over, and 60 s at most.
        for b in 0..1500u32 {
            if over.load(Ordering::Relaxed) {
                break;
            }
            rewrite(&p, b as u8);
            std::thread::sleep(Duration::from_millis(40));
        }
    });
    let f = &out.files[0];
    assert!(!f.ok, "{f:?}");
    assert_eq!(f.name, "busy.db");
    assert_eq!(f.retries, 2);
    let reason = f.reason.clone().unwrap_or_default();
    assert!(reason.contains("changed while being sent"), "{reason}");
    assert!(
        reason.contains("not delivered after 3 attempts (--retries)"),
        "{reason}"
    );
    assert!(!dst.path().join("busy.db").exists());
    let s = out.run.summary.expect("summary");
    assert!(!s.completed);
    assert_eq!(s.bytes, received);
}
