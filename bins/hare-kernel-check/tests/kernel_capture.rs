//! The real capture, as root, through the namespace emulator: 100 Mbit/s x 60 ms for 10 s,
//! once without injected loss and once with a loss episode. Every ACK is replayed through
//! hare's `linux-6` model: at least 99.9% must agree on cwnd in Open and in every other
//! state compared, every loss reaction's ssthresh and the slow-start exit must be the same.
//!
//! Under `CI=true` (or as root, or with `HARE_REQUIRE_NETNS`) a missing piece (root, BPF,
//! BTF, namespaces) fails the test; elsewhere the test is skipped, saying why.

use hare_kernel_check::capture::{self, Capture};
use hare_kernel_check::probe::{Trace, TraceInfo};
use hare_kernel_check::tally::Outcome;
use hare_kernel_check::{flow, hz, replay};
use hare_link::{BitRate, ByteSize, LossModel, PathConfig, TimeSpan};

/// The runs share the machine's two cores and the emulator instance: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `true` when the capture can run; `false` (skip) when it cannot and is not required.
fn can_run() -> bool {
    let why = hare_emu::netns::unavailable_reason().or_else(capture::unavailable_reason);
    let Some(why) = why else { return true };
    let required = std::env::var("CI").is_ok_and(|v| v == "true")
        || hare_emu::netns::is_root()
        || std::env::var_os("HARE_REQUIRE_NETNS").is_some();
    assert!(
        !required,
        "the kernel capture is required here but cannot run: {why}"
    );
    eprintln!("skipped: {why}");
    false
}

fn path(loss: Option<LossModel>) -> PathConfig {
    // Drop-tail of one BDP: 100 Mbit/s x 60 ms = 750,000 bytes.
    let mut p = PathConfig::symmetric(
        BitRate(100_000_000),
        TimeSpan(60_000_000),
        Some(ByteSize(750_000)),
    );
    p.forward.loss.extend(loss);
    p
}

fn record_and_replay(p: PathConfig) -> Outcome {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cap = None;
    let flow = flow::run(p, 10.0, || {
        cap = Some(Capture::start(flow::PORT)?);
        Ok(())
    });
    let probes = cap
        .expect("the capture started")
        .finish()
        .expect("the capture");
    let flow = flow.expect("the flow ran");
    println!(
        "{} bytes; emulator valid: {}",
        flow.bytes, flow.emulator.valid
    );
    let (hz, hz_source) = hz::kernel_hz(&probes).expect("the kernel's HZ");
    let trace = Trace {
        info: TraceInfo {
            kernel: hz::kernel_release(),
            hz,
            hz_source,
            flow: "test".into(),
        },
        probes,
    };
    let out = replay::replay(&trace).expect("the replay");
    print!("{}", out.report());
    out
}

fn assert_agrees(out: &Outcome) {
    assert!(out.acks > 10_000, "only {} ACKs recorded", out.acks);
    assert!(
        out.cwnd_open.share() >= 0.999,
        "cwnd in Open: {}",
        out.cwnd_open.ratio()
    );
    for (state, t) in &out.cwnd_other {
        assert!(t.share() >= 0.999, "cwnd in {state}: {}", t.ratio());
    }
    for e in &out.episode_ends {
        assert_eq!(
            e.kernel, e.hare,
            "cwnd at the end of the {} at ACK {}",
            e.from, e.ack
        );
    }
    assert!(out.loss_reactions_same(), "{:?}", out.loss_reactions);
    assert!(
        out.exit_kernel.is_some(),
        "the kernel never left slow start"
    );
    assert!(
        out.exit_same(),
        "exit kernel {:?} hare {:?}",
        out.exit_kernel,
        out.exit_hare
    );
}

#[test]
fn a_kernel_flow_without_injected_loss_agrees_ack_by_ack() {
    if !can_run() {
        return;
    }
    let out = record_and_replay(path(None));
    assert_agrees(&out);
}

#[test]
fn a_kernel_flow_with_a_loss_episode_agrees_ack_by_ack() {
    if !can_run() {
        return;
    }
    // Every 10th packet offered from 4 s to 4.02 s: one Recovery episode after HyStart's exit.
    let episode = LossModel::Episode {
        from: TimeSpan(4_000_000_000),
        to: TimeSpan(4_020_000_000),
        one_in: 10,
        random: false,
    };
    let out = record_and_replay(path(Some(episode)));
    assert_agrees(&out);
    assert!(
        !out.loss_reactions.is_empty(),
        "no loss reaction was recorded"
    );
}
