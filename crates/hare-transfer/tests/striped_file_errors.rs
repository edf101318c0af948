//! A receiver-side failure in the middle of a file sent as ranges over several connections
//! (`-C`) ends the sending well before the whole file would have gone. Ranges over several
//! connections may still be acknowledged after the receiver gave the file up (quinn
//! acknowledges stream data nobody reads), so the receiver's verdict ends the sending; a
//! sender that waited for a stopped stream instead went on, with a full disk on a tmpfs,
//! until it had paced out the whole file. Its own test binary: the write limit of module
//! `fsize` is per process.

mod fsize;

use hare_transfer::testkit::{runtime, send_options};
use hare_transfer::{send, Stop};

#[test]
fn a_file_given_up_by_the_receiver_stops_its_ranges_at_once() {
    // Windows that take whole ranges: the transport acknowledges a range before the
    // receiver reads it, so the receiver's stop of the file's streams can come too late to
    // tell the sender.
    let f = fsize::receiver_failing_past(8 << 20, 96 << 20, 64 << 20);
    let mut o = send_options(f.recv.addr, f.recv.trust(), f.job.clone());
    o.connections = 4;
    o.link.window = 64 << 20;
    // 96 MiB at 100 Mbit/s take 8 s to send whole; the receiver gives up after 8 MiB.
    o.rate = Some(100_000_000);
    let outcome = runtime()
        .block_on(send(o, Stop::never()))
        .expect("the job runs; the file fails");
    fsize::assert_disk_full(&outcome);
    let seconds = outcome.run.summary.as_ref().map_or(f64::MAX, |s| s.seconds);
    assert!(
        seconds < 4.0,
        "the sender went on for {seconds} s after the receiver gave the file up"
    );
    assert!(!f.dst.path().join("big.bin").exists());
}
