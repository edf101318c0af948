//! Every interval line is the path's truth (root; CI is root): hare-send and hare-recv over
//! 100 Mbit/s x 80 ms with a loss episode, QUIC and kernel TCP. On both sides every 1-s
//! interval stays within what the path can carry in it (its payload rate, plus one packet,
//! plus what the emulator itself reports it was late by; the kernel-TCP receiver, which can
//! only read in order, may also hold what arrived behind a hole in the previous second), none
//! is empty while data flows, and the intervals add up to the totals. And `-T` is a time: 5 s over 5 Mbit/s x 20 ms with a
//! 32 MiB window ends within 6 s and succeeds.

use hare_emu::scenario::metrics::payload_per_packet;
use hare_emu::scenario::transfer::{TransferOutcome, TransferSpec};
use hare_emu::{CubicParams, NamespaceConfig};
use hare_link::{BitRate, ByteSize, LossModel, PathConfig, TimeSpan};
use hare_report::{EventKind, Run};

mod support;
use support::{bins, valid_run};

/// The transfers share the machine's two cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// IP MTU of the emulator's TUN devices.
const MTU: u32 = 1500;

/// The largest payload one packet of [`MTU`] bytes can carry: the library's count, with the
/// shortest headers quinn writes on a full packet (`QUIC_PACKET_OVERHEAD`), so that these
/// checks hold the lines to the payload rate hare-emu states.
fn max_payload(tcp: bool) -> u64 {
    u64::from(payload_per_packet(MTU, tcp))
}

fn spec(
    name: &str,
    tcp: bool,
    seconds: f64,
    bin_dir: std::path::PathBuf,
    work: &std::path::Path,
) -> TransferSpec {
    TransferSpec {
        name: name.into(),
        tcp,
        cc: if tcp { "cubic" } else { "cubic@linux-6" }.into(),
        pacing_rate: None,
        kernel_params: CubicParams::default(),
        seconds: Some(seconds),
        bytes: None,
        files: Vec::new(),
        window: (!tcp).then(|| "16m".into()),
        interval: 1.0,
        timeout_s: seconds + 40.0,
        bin_dir,
        work_dir: work.to_path_buf(),
        echo: false,
        connections: 1,
    }
}

/// Checks one side's intervals against the path: `rate_bps` counts IP bytes of `MTU`-byte
/// packets; `late_s` is the emulator's own largest lateness (a packet it released late moves
/// that much of the path's time into the next interval).
///
/// `hold_s` is extra path time a line may hold: 0 except for the kernel-TCP receiver, whose
/// application reads in order, so that data which arrived behind a hole at the end of one
/// second is read in the next; the hole lasts until the retransmission arrives, at most about
/// two RTTs (the duplicate ACKs' way back, the retransmission's way through the queue).
fn check_side(side: &str, run: &Run, rate_bps: u64, tcp: bool, late_s: f64, hold_s: f64) {
    let pp = max_payload(tcp);
    let payload_bps = rate_bps as f64 / 8.0 * pp as f64 / f64::from(MTU);
    let ivs = &run.intervals;
    let total = run.summary.as_ref().expect("summary").bytes;
    println!("{side}: {} intervals, {total} bytes", ivs.len());
    assert!(ivs.len() >= 5, "{side}: {} intervals", ivs.len());
    let mut worst = f64::MIN;
    for (i, iv) in ivs.iter().enumerate() {
        let cap = payload_bps * (iv.seconds() + late_s + hold_s) + pp as f64;
        // Over the strict bound (the path's payload rate plus one packet), in packets.
        worst = worst.max((iv.bytes as f64 - payload_bps * iv.seconds()) / pp as f64 - 1.0);
        println!(
            "  {side} {:6.3}-{:6.3} s {:>9} bytes = {:7.3} Mbit/s (cap {:>9.0} bytes)",
            iv.start_s,
            iv.end_s,
            iv.bytes,
            iv.mbps(),
            cap
        );
        assert!(
            iv.bytes as f64 <= cap,
            "{side}: interval {i} ({:.3}-{:.3} s) holds {} bytes, more than the path carries ({cap:.0})",
            iv.start_s,
            iv.end_s,
            iv.bytes
        );
        // Data flows all the time (the episode drops 1 packet in 1000): only the last,
        // partial interval may be empty.
        assert!(
            iv.bytes > 0 || i + 1 == ivs.len(),
            "{side}: interval {i} ({:.3}-{:.3} s) is empty while data flows",
            iv.start_s,
            iv.end_s
        );
    }
    println!("{side}: largest excess over rate + 1 packet: {worst:.1} packets (emulator late by up to {:.3} ms)", late_s * 1e3);
    let sum: u64 = ivs.iter().map(|i| i.bytes).sum();
    assert_eq!(sum, total, "{side}: the intervals add up to the total");
}

fn check_run(o: &TransferOutcome, tcp: bool) {
    println!("{}", o.emulator.line());
    let what = if tcp { "tcp" } else { "quic" };
    assert_eq!(
        o.sender_ok,
        Some(true),
        "{what}: hare-send failed: see {}",
        o.report_path.display()
    );
    let send = o.run.as_ref().expect("sender report");
    let recv = o.receiver_run.as_ref().expect("receiver report");
    let late_s = o.emulator.engine.lateness.max_ns as f64 / 1e9;
    let rate = o.emulator.path.forward.rate.0;
    check_side(&format!("{what} sender"), send, rate, tcp, late_s, 0.0);
    let hold_s = if tcp {
        let srtt_ms = send
            .intervals
            .iter()
            .filter_map(|i| i.srtt_ms)
            .fold(0.0, f64::max);
        println!("tcp receiver: in-order reads may hold up to 2 x {srtt_ms:.1} ms of data");
        2.0 * srtt_ms / 1e3
    } else {
        0.0
    };
    check_side(&format!("{what} receiver"), recv, rate, tcp, late_s, hold_s);
    let (s, r) = (
        send.summary.as_ref().unwrap(),
        recv.summary.as_ref().unwrap(),
    );
    assert_eq!(s.bytes, r.bytes, "{what}: both sides agree on the total");
    assert!(s.completed, "{what}: completed");
    assert!(s.lost_packets > 0, "{what}: the episode dropped packets");
    let dropped = o.emulator.engine.forward.link.dropped.episode;
    assert!(dropped > 0, "{what}: the episode dropped {dropped}");
    // The report header names the path, for analysis.
    let path = send.header.path.as_ref().expect("path in the header");
    assert_eq!(
        (path.rate_bps, path.rtt_ms),
        (Some(100_000_000), Some(80.0))
    );
}

#[test]
fn every_interval_is_within_the_path_on_both_sides_quic_and_tcp() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = bins() else { return };
    let work = tempfile::tempdir().unwrap();
    let mut path = PathConfig::symmetric(
        BitRate(100_000_000),
        TimeSpan(80_000_000),
        Some(ByteSize(1_000_000)),
    );
    // 1 in 1000 from 3 s to 7 s of the emulator's clock (the sender starts about 0.5 s in).
    path.forward.loss = vec![LossModel::Episode {
        from: TimeSpan(3_000_000_000),
        to: TimeSpan(7_000_000_000),
        one_in: 1000,
        random: false,
    }];
    let ns = NamespaceConfig::new("iv1", path);
    for tcp in [false, true] {
        let name = if tcp { "tcp" } else { "quic" };
        let (o, stalls) = valid_run(&ns, &spec(name, tcp, 9.0, bin.clone(), work.path()));
        println!("{stalls}");
        check_run(&o, tcp);
    }
}

#[test]
fn dash_t_is_a_time_even_with_a_window_of_many_seconds_of_data() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = bins() else { return };
    let work = tempfile::tempdir().unwrap();
    // 5 Mbit/s x 20 ms, drop-tail of two BDPs (25,000 bytes); -w 32m is 54 s of data.
    let path = PathConfig::symmetric(
        BitRate(5_000_000),
        TimeSpan(20_000_000),
        Some(ByteSize(25_000)),
    );
    let ns = NamespaceConfig::new("iv2", path);
    let mut s = spec("t5", false, 5.0, bin, work.path());
    s.window = Some("32m".into());
    s.timeout_s = 60.0;
    let o = hare_emu::scenario::transfer::run_transfer(&ns, &s).unwrap();
    println!("{}", o.emulator.line());
    println!("hare-send ran {:.2} s", o.sender_elapsed_s);
    assert_eq!(
        o.sender_ok,
        Some(true),
        "hare-send failed: see {}",
        o.report_path.display()
    );
    assert!(
        o.sender_elapsed_s <= 6.0,
        "-T 5 ran {:.2} s",
        o.sender_elapsed_s
    );
    let run = o.run.as_ref().expect("sender report");
    let sum = run.summary.as_ref().expect("summary");
    assert!(sum.completed, "completed");
    let note = run.events.iter().find_map(|e| match &e.kind {
        EventKind::Note { message } if message.starts_with("time is up") => Some(message.clone()),
        _ => None,
    });
    println!("{note:?}");
    assert!(
        note.is_some_and(|m| m.contains("discarded")),
        "the summary says what was discarded"
    );
}
