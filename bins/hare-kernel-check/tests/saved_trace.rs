//! A trace recorded on the project's machine (Linux 6.18, HZ 250), replayed without root:
//! `hare-kernel-check --rate 20m --rtt 40ms --seconds 4 --loss-episode 1.5s..1.52s/5
//! --loss-episode 2.5s..2.9s/1`. It holds slow start ending in a loss, four Recovery
//! episodes, a Disorder spell and an RTO's Loss, and one place where hare differs by design:
//! during the first Recovery the kernel's PRR took cwnd below ssthresh, so HyStart (not yet
//! fired) ran again and lowered ssthresh to 151; hare sets cwnd = ssthresh at once and stays
//! at 169.

use std::path::PathBuf;

use hare_kernel_check::tally::Tally;

fn saved() -> hare_kernel_check::tally::Outcome {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/cubic-20m-40ms-loss.jsonl");
    hare_kernel_check::replay_file(&path).expect("the saved trace replays")
}

#[test]
fn the_saved_trace_replays_to_its_known_agreement() {
    let out = saved();
    assert_eq!(out.records, 3285);
    assert_eq!(out.acks, 3284);
    assert_eq!(
        out.last_line(),
        "agreement: cwnd 2595/2595 (Open), 105/106 (other states); ssthresh 5/6; exit same"
    );
    let t = |agree, total| Tally { agree, total };
    assert_eq!(out.cwnd_other.get("Disorder"), Some(&t(8, 8)));
    assert_eq!(out.cwnd_other.get("Loss"), Some(&t(95, 95)));
    assert_eq!(out.cwnd_other.get("Recovery"), Some(&t(2, 3)));
    assert_eq!(out.prr_acks, 582);
}

#[test]
fn every_loss_reaction_takes_the_kernels_ssthresh() {
    let out = saved();
    let reactions: Vec<_> = out
        .loss_reactions
        .iter()
        .map(|r| (r.ack, r.into, r.cwnd, r.kernel, r.hare))
        .collect();
    assert_eq!(
        reactions,
        [
            (188, "Recovery", 242, 169, 169),
            (438, "Recovery", 151, 105, 105),
            (1418, "Recovery", 117, 81, 81),
            (2299, "Loss", 92, 64, 64),
            (3165, "Recovery", 139, 97, 97),
        ]
    );
    let exit = out
        .exit_kernel
        .as_ref()
        .expect("the kernel left slow start");
    assert_eq!(
        (exit.ack, exit.cwnd, exit.ssthresh, exit.reason),
        (188, 242, 169, "loss")
    );
    assert!(out.exit_same());
}

#[test]
fn hystart_during_prr_is_the_one_difference() {
    let out = saved();
    let ends: Vec<_> = out
        .episode_ends
        .iter()
        .map(|e| (e.ack, e.kernel, e.hare, e.undo))
        .collect();
    assert_eq!(
        ends,
        [
            (432, 151, 169, false),
            (588, 105, 105, false),
            (1487, 81, 81, false)
        ]
    );
    // The kernel's HyStart fired inside the episode (ACK-train), setting ssthresh = cwnd.
    let d = out
        .divergences
        .iter()
        .find(|d| d.ack == 325)
        .expect("ACK 325 differs");
    assert_eq!(d.state, "Recovery");
    assert!(
        d.fields.iter().any(|f| f == "ssthresh kernel=151 hare=169"),
        "{:?}",
        d.fields
    );
}
