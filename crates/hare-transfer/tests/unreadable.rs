//! A source file that cannot be opened when its turn comes (removed since it was listed, or
//! replaced by a FIFO, either of which root meets as anyone does) fails at once on both
//! sides with the sender's reason: the receiver does not wait for data that will not come,
//! the other files arrive, and both sides count the same bytes. The same holds when the
//! receiver kept part of the file and the sender first hashes that prefix (`--resume`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hare_transfer::report::JsonTarget;
use hare_transfer::testkit::{
    in_progress, recv_options, runtime, seeded_bytes, send_options, BackgroundReceiver,
};
use hare_transfer::{send, SendJob, SendOutcome, Stop};

/// What `gone.txt` holds when it is listed.
const GONE: &[u8] = b"listed, then spoiled";

/// Send `first` (2 MiB at 16 Mbit/s: about 1 s), `gone` and `last`, one at a time (with
/// `--resume` when `resume`); once the receiver holds some of `first`, `spoil` does its work
/// on `gone`. Returns the sender's outcome, how long the job took, and the receiver's JSON
/// document.
fn send_three(
    src: &Path,
    dst: &Path,
    resume: bool,
    spoil: impl FnOnce(&Path) + Send + 'static,
) -> (SendOutcome, Duration, serde_json::Value) {
    let id = tempfile::tempdir().expect("tempdir");
    let json = id.path().join("recv.json");
    let mut ro = recv_options(id.path().join("state"), Some(dst.into()));
    ro.output.json = Some(JsonTarget::File(json.clone()));
    // Were the receiver to wait for the file, the job would end only at this deadline.
    ro.limits.stall_timeout = Duration::from_secs(30);
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let paths: Vec<PathBuf> = ["first.bin", "gone.txt", "last.txt"]
        .iter()
        .map(|n| src.join(n))
        .collect();
    std::fs::write(&paths[0], seeded_bytes(11, 2 << 20)).expect("w");
    std::fs::write(&paths[1], GONE).expect("w");
    std::fs::write(&paths[2], b"sent after it").expect("w");
    let spoiler = {
        let (dst, gone) = (dst.to_path_buf(), paths[1].clone());
        std::thread::spawn(move || {
            for _ in 0..400 {
                if in_progress(&dst, "first.bin").iter().any(|(_, n)| *n > 0) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            spoil(&gone);
        })
    };
    let job = SendJob::Files {
        paths,
        resume,
        force: false,
        parallel: 1,
    };
    let mut o = send_options(recv.addr, recv.trust(), job);
    o.rate = Some(16_000_000);
    let t = Instant::now();
    let out = runtime()
        .block_on(send(o, Stop::never()))
        .expect("the job runs; one file fails");
    let took = t.elapsed();
    spoiler.join().expect("spoiler");
    recv.stop().expect("receiver stops");
    let text = std::fs::read_to_string(&json).expect("receiver JSON");
    let doc = serde_json::from_str(text.trim()).expect("one document");
    (out, took, doc)
}

/// The checks every case shares: `gone.txt` failed with `reason` on the sender and with the
/// sender's reason on the receiver, soon; the others arrived; the byte counts agree; the
/// directory holds the two files and the `kept` names besides.
fn check(
    (src, dst): (&Path, &Path),
    run: (SendOutcome, Duration, serde_json::Value),
    reason: &str,
    kept: &[&str],
) {
    let (out, took, doc) = run;
    let by_name = |n: &str| {
        out.files
            .iter()
            .find(|f| f.name == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} reported: {:?}", out.files))
    };
    let gone = by_name("gone.txt");
    assert!(!gone.ok);
    assert_eq!(gone.reason.as_deref(), Some(reason));
    assert_eq!(gone.retries, 0);
    assert!(
        by_name("first.bin").ok && by_name("last.txt").ok,
        "{:?}",
        out.files
    );
    assert_eq!(out.failures().count(), 1);
    assert!(took < Duration::from_secs(15), "the job took {took:?}");
    assert_eq!(
        std::fs::read(dst.join("first.bin")).expect("first.bin arrived"),
        std::fs::read(src.join("first.bin")).expect("r")
    );
    assert_eq!(
        std::fs::read(dst.join("last.txt")).expect("last.txt arrived"),
        b"sent after it"
    );
    assert!(!dst.join("gone.txt").exists());
    let mut left: Vec<String> = std::fs::read_dir(dst)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want = vec!["first.bin", "last.txt"];
    want.extend(kept);
    want.sort();
    assert_eq!(left, want, "no temporary file is left");
    // The receiver recorded the file as failed, with the sender's reason.
    let said = format!("gone.txt: sender abandoned it: {reason}");
    let events = doc["events"].as_array().expect("events");
    assert!(
        events
            .iter()
            .any(|e| e["kind"]["message"].as_str() == Some(said.as_str())),
        "{said} in {events:?}"
    );
    let s = out.run.summary.expect("summary");
    assert!(!s.completed);
    assert_eq!(Some(s.bytes), doc["end"]["sum_received"]["bytes"].as_u64());
    assert_eq!(s.bytes, (2 << 20) + 13);
}

#[test]
fn a_file_removed_since_it_was_listed_fails_at_once_and_the_job_goes_on() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let run = send_three(src.path(), dst.path(), false, |p| {
        std::fs::remove_file(p).expect("remove");
    });
    let reason = format!(
        "cannot open {}: No such file or directory (os error 2)",
        src.path().join("gone.txt").display()
    );
    check((src.path(), dst.path()), run, &reason, &[]);
}

#[test]
fn a_file_replaced_by_a_fifo_fails_at_once_instead_of_blocking_the_open() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let run = send_three(src.path(), dst.path(), false, |p| {
        std::fs::remove_file(p).expect("remove");
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    });
    let reason = format!(
        "cannot send {}: it is no longer a regular file",
        src.path().join("gone.txt").display()
    );
    check((src.path(), dst.path()), run, &reason, &[]);
}

/// `--resume` with part of `gone.txt` kept on the receiver: the sender hashes that prefix
/// before anything else, and a FIFO in the file's place by then fails the file at once, as
/// the open does, instead of holding the hash (and the job) until some writer comes. The
/// kept part stays for a later `--resume`.
#[test]
fn a_file_replaced_by_a_fifo_before_its_resume_prefix_is_hashed_fails_at_once() {
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let part = hare_transfer::testkit::test_sender_part(dst.path(), "gone.txt");
    let part_name = part
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    std::fs::write(&part, &GONE[..6]).expect("plant the kept part");
    let run = send_three(src.path(), dst.path(), true, |p| {
        std::fs::remove_file(p).expect("remove");
        nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    });
    assert_eq!(run.0.files.iter().map(|f| f.resumed_from).sum::<u64>(), 0);
    let reason = format!(
        "cannot send {}: it is no longer a regular file",
        src.path().join("gone.txt").display()
    );
    check(
        (src.path(), dst.path()),
        run,
        &reason,
        &[part_name.as_str()],
    );
    assert_eq!(std::fs::read(&part).expect("kept part"), &GONE[..6]);
}
