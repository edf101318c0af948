//! A receiver-side failure in the middle of a file (here: `RLIMIT_FSIZE`, which fails writes
//! with EFBIG as a full disk fails them with ENOSPC) reaches the sender with the receiver's
//! reason. Its own test binary: the limit is per process.

use hare_transfer::testkit::{
    recv_options, runtime, seeded_bytes, send_options, BackgroundReceiver,
};
use hare_transfer::{send, SendJob, Stop};

#[test]
fn a_write_failure_on_the_receiver_reaches_the_sender_with_its_reason() {
    let id = tempfile::tempdir().expect("tempdir");
    let src = tempfile::tempdir().expect("tempdir");
    let dst = tempfile::tempdir().expect("tempdir");
    let p = src.path().join("big.bin");
    std::fs::write(&p, seeded_bytes(7, 8 << 20)).expect("w");
    // Writes past 1 MiB fail with EFBIG instead of raising SIGXFSZ.
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
        1 << 20,
        nix::sys::resource::RLIM_INFINITY,
    )
    .expect("RLIMIT_FSIZE");
    // A small stream window: the sender is still writing when the receiver gives up.
    let mut ro = recv_options(id.path().into(), Some(dst.path().into()));
    ro.link.window = 1 << 20;
    let recv = BackgroundReceiver::start(ro).expect("receiver");
    let job = SendJob::Files {
        paths: vec![p],
        resume: false,
        force: false,
        parallel: 1,
    };
    let outcome = runtime()
        .block_on(send(
            send_options(recv.addr, recv.trust(), job),
            Stop::never(),
        ))
        .expect("the job runs; the file fails");
    let f = &outcome.files[0];
    assert!(!f.ok);
    let reason = f.reason.clone().unwrap_or_default();
    assert!(
        // The report is about big.bin already: the reason does not name it again.
        reason.starts_with("disk full on the receiver: write failed: File too large"),
        "{reason}"
    );
    assert!(!dst.path().join("big.bin").exists());
}
