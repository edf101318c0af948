//! A receiver whose writes fail in the middle of a file, for the tests of what the sender
//! hears: `RLIMIT_FSIZE` fails writes past a size with EFBIG, as a full disk fails them with
//! ENOSPC. The limit is per process, so each test binary that uses it holds one such test.

use std::path::PathBuf;

use hare_transfer::testkit::{recv_options, seeded_bytes, BackgroundReceiver};
use hare_transfer::SendJob;

/// The directories of one such test, and the receiver.
pub struct Failing {
    /// The receiver's identity.
    pub _id: tempfile::TempDir,
    /// The source directory.
    pub _src: tempfile::TempDir,
    /// The receive directory.
    pub dst: tempfile::TempDir,
    /// The receiver.
    pub recv: BackgroundReceiver,
    /// The job: `big.bin` alone.
    pub job: SendJob,
}

/// `big.bin` of `size` seeded bytes to a receiver with stream windows of `window` bytes
/// whose writes fail past `limit` bytes (the file is written before the limit is set).
pub fn receiver_failing_past(limit: u64, size: usize, window: u64) -> Failing {
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let p: PathBuf = src.path().join("big.bin");
    std::fs::write(&p, seeded_bytes(7, size)).expect("w");
    // SAFETY: ignoring a signal installs no handler code.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGXFSZ,
            nix::sys::signal::SigHandler::SigIgn,
        )
    }
    .expect("ignore SIGXFSZ");
    nix::sys::resource::setrlimit(
        nix::sys::resource::Resource::RLIMIT_FSIZE,
        limit,
        nix::sys::resource::RLIM_INFINITY,
    )
    .expect("RLIMIT_FSIZE");
    let mut ro = recv_options(id.path().into(), Some(dst.path().into()));
    ro.link.window = window;
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    Failing {
        _id: id,
        _src: src,
        dst,
        recv,
        job: SendJob::Files {
            paths: vec![p],
            resume: false,
            force: false,
            parallel: 1,
        },
    }
}

/// The job's one file failed, with the receiver's EFBIG in words.
pub fn assert_disk_full(outcome: &hare_transfer::SendOutcome) {
    let f = &outcome.files[0];
    assert!(!f.ok);
    let reason = f.reason.clone().unwrap_or_default();
    assert!(
        // The report is about big.bin already: the reason does not name it again.
        reason.starts_with("disk full on the receiver: write failed: File too large"),
        "{reason}"
    );
}
