//! A receiver-side failure in the middle of a file (here: `RLIMIT_FSIZE`, which fails writes
//! with EFBIG as a full disk fails them with ENOSPC) reaches the sender with the receiver's
//! reason. Its own test binary: the limit is per process.

mod fsize;

use hare_transfer::testkit::{runtime, send_options};
use hare_transfer::{send, Stop};

#[test]
fn a_write_failure_on_the_receiver_reaches_the_sender_with_its_reason() {
    // A small stream window: the sender is still writing when the receiver gives up.
    let f = fsize::receiver_failing_past(1 << 20, 8 << 20, 1 << 20);
    let outcome = runtime()
        .block_on(send(
            send_options(f.recv.addr, f.recv.trust(), f.job.clone()),
            Stop::never(),
        ))
        .expect("the job runs; the file fails");
    fsize::assert_disk_full(&outcome);
    assert!(!f.dst.path().join("big.bin").exists());
}
