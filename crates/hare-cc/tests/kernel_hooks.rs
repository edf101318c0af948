//! The hook-by-hook API from a chosen state (`hare_cc::hooks`): what a differential test
//! against the kernel sources drives.

use hare_cc::engine::{AckEvent, CcModule, KernelCc};
use hare_cc::hooks::CaState;
use hare_cc::hooks::Cubic;
use hare_cc::hooks::{StartError, StartState};
use hare_cc::{Algorithm, Profile};

fn profile(name: &str, kv: &[(&str, &str)]) -> Profile {
    let mut p = Profile::named(name).expect("built in");
    for (k, v) in kv {
        p.set(k, v).expect("valid");
    }
    p
}

#[test]
fn cubic_linux_6_update_from_a_given_state() {
    // docs/KERNEL-NOTES.md fact 8 through the hooks: HZ 1000, delay_min 80 ms, origin 850,
    // K 7380, cwnd 700, epoch started 1000 jiffies ago: t = (1080 << 10) / 1000 = 1105,
    // delta 92, target 758, cnt = 700 / 58 = 12; one AI step: snd_cwnd_cnt 1.
    let p = profile("linux-6", &[("hz", "1000")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    let now_us = 5_000_000;
    let now_j = cc.clock().jiffies(now_us);
    let mut c = Cubic::new(&p);
    c.set_last_max_cwnd(850);
    c.set_bic_origin_point(850);
    c.set_bic_k(7380);
    c.set_delay_min(80_000);
    c.set_epoch_start(now_j.wrapping_sub(1000));
    let start = StartState {
        cwnd: 700,
        ssthresh: Some(500),
        module: Some(CcModule::Cubic(c)),
        ..StartState::default()
    };
    cc.start_from(&start).expect("cubic state");
    cc.hook_cong_avoid(&AckEvent {
        now_us,
        acked_pkts: 1,
        packets_in_flight: 699,
        ..AckEvent::default()
    });
    let CcModule::Cubic(after) = cc.module() else {
        panic!("cubic")
    };
    assert_eq!(after.cnt(), 12);
    assert_eq!((cc.cwnd(), cc.tcp_sock().snd_cwnd_cnt()), (700, 1));
    // ssthresh op (bictcp_recalc_ssthresh): 700 < last_max 850, so fast convergence sets
    // last_max = 700 * (1024 + 717) / 2048 = 595; ssthresh = 700 * 717 / 1024 = 490.
    assert_eq!(cc.hook_ssthresh(), 490);
    let CcModule::Cubic(after) = cc.module() else {
        panic!("cubic")
    };
    assert_eq!(after.last_max_cwnd(), 595);
    assert_eq!(cc.epoch_start(), 0);
}

#[test]
fn bic_pkts_acked_only_in_open_and_set_state_loss_resets() {
    let p = profile("linux-4.4", &[]);
    let mut cc = KernelCc::new(Algorithm::Bic, &p, true, 1448);
    let ack = AckEvent {
        now_us: 100_000,
        acked_pkts: 4,
        rtt_us: Some(50_000),
        ..AckEvent::default()
    };
    cc.hook_pkts_acked(&ack);
    let delayed_ack = |cc: &KernelCc| match cc.module() {
        CcModule::Bic(b) => b.delayed_ack(),
        _ => unreachable!("bic"),
    };
    assert_eq!(delayed_ack(&cc), 32 + 4 - 2);
    cc.hook_set_state(100_000, CaState::Recovery);
    cc.hook_pkts_acked(&ack);
    assert_eq!(delayed_ack(&cc), 34, "bictcp_acked: TCP_CA_Open only");
    cc.hook_set_state(100_000, CaState::Loss);
    assert_eq!(delayed_ack(&cc), 32, "bictcp_reset");
}

#[test]
fn start_state_is_checked() {
    let p = profile("linux-6", &[]);
    let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
    let cubic = StartState {
        module: Some(CcModule::Cubic(Cubic::new(&p))),
        ..StartState::default()
    };
    assert_eq!(
        cc.start_from(&cubic),
        Err(StartError::AlgorithmMismatch { expected: "reno" })
    );
    let zero = StartState {
        cwnd: 0,
        ..StartState::default()
    };
    assert_eq!(cc.start_from(&zero), Err(StartError::ZeroCwnd));
}

#[test]
fn a_start_srtt_sets_the_pacing_rate_hystart_reads() {
    // tcp_update_pacing_rate(): mss * ((USEC_PER_SEC / 100) << 3) * ratio * max(cwnd,
    // packets_out) / srtt_us, ratio 200 below ssthresh / 2 (infinite here): 1448 * 80000 *
    // 200 * 100 / 640000 = 3,620,000 bytes/s (100 segments per 80 ms, doubled).
    let p = profile("linux-6", &[]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    assert_eq!(cc.pacing_rate(), 0, "no RTT sample yet");
    let start = StartState {
        cwnd: 100,
        srtt_us: Some(80_000 << 3),
        ..StartState::default()
    };
    assert_eq!(cc.start_from(&start), Ok(()));
    assert_eq!(cc.pacing_rate(), 3_620_000);
    // hystart_ack_delay(): min(1000 us, 65536 * 4 * 10^6 / 3,620,000 = 72,415 us).
    assert_eq!(cc.hystart_ack_delay_us(), 1000);
    // Without srtt the rate stays what the model had.
    let again = StartState {
        cwnd: 50,
        ..StartState::default()
    };
    assert_eq!(cc.start_from(&again), Ok(()));
    assert_eq!(cc.pacing_rate(), 3_620_000);
}

#[test]
fn tx_start_after_idle_moves_cubics_epoch_in_the_eras_that_do() {
    // bictcp_cwnd_event(CA_EVENT_TX_START) ("tcp_cubic: better follow cubic curve after idle
    // period", 30927520dbae, 2015; profile key idle_restart): epoch_start += idle time, but not
    // past now.
    for (name, moves) in [("linux-6", true), ("linux-2.6.39", false)] {
        let p = profile(name, &[("hz", "1000")]);
        let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
        let now_us = 2_000_000;
        let now_j = cc.clock().jiffies(now_us);
        let mut c = Cubic::new(&p);
        c.set_epoch_start(now_j.wrapping_sub(1000));
        let start = StartState {
            module: Some(CcModule::Cubic(c)),
            ..StartState::default()
        };
        assert_eq!(cc.start_from(&start), Ok(()));
        cc.hook_cwnd_event_tx_start(now_us, 100);
        let shifted = if moves { 900 } else { 1000 };
        assert_eq!(cc.epoch_start(), now_j.wrapping_sub(shifted), "{name}");
        // An idle time longer than the epoch: the epoch starts now.
        cc.hook_cwnd_event_tx_start(now_us, 5000);
        let expected = if moves {
            now_j
        } else {
            now_j.wrapping_sub(1000)
        };
        assert_eq!(cc.epoch_start(), expected, "{name}");
    }
}

#[test]
fn the_first_data_ack_reads_the_pacing_rate_the_handshake_left() {
    // The SYN-ACK's tcp_ack() ends in tcp_update_pacing_rate(); tcp_init_transfer() then sets
    // the initial window and nothing recomputes the rate before the first data ACK, whose
    // hystart_ack_delay() (5.6+) reads it. Handshake RTT 80 ms (srtt 640,000 = 80,000 << 3),
    // initial window 10 of 1200 B, slow start (200%): 1200 * 80,000 * 200 * 10 / 640,000 =
    // 300,000 B/s, and a cushion of min(1000, 65,536 * 4 * 10^6 / 300,000) = 1000 us.
    let p = profile("linux-6", &[]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    cc.on_sent(0, 1, 1);
    cc.on_ack(&AckEvent {
        now_us: 80_000,
        packets: 1,
        acked_pkts: 1,
        rtt_us: Some(80_000),
        largest_acked: Some(0),
        ..AckEvent::default()
    });
    cc.establish(80_000);
    assert_eq!(cc.cwnd(), 10);
    assert_eq!(cc.tcp_sock().srtt_us(), 640_000);
    assert_eq!(cc.pacing_rate(), 300_000);
    assert_eq!(cc.hystart_ack_delay_us(), 1000);
}

#[test]
fn start_state_sets_sequence_numbers_pacing_rate_and_clamp() {
    let p = profile("linux-6", &[]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    let start = StartState {
        cwnd: 500,
        snd_una: Some(1_000),
        snd_nxt: Some(1_300),
        // 64 KiB * 4 s / 1 GB/s = 262 us (hystart_ack_delay(), 5.6+).
        pacing_rate: Some(1_000_000_000),
        cwnd_clamp: Some(400),
        ..StartState::default()
    };
    cc.start_from(&start).expect("valid");
    let tp = cc.tcp_sock();
    assert_eq!((tp.snd_una(), tp.snd_nxt()), (1_000, 1_300));
    assert_eq!((cc.cwnd(), tp.snd_cwnd_clamp()), (400, 400));
    assert_eq!(cc.pacing_rate(), 1_000_000_000);
    assert_eq!(cc.hystart_ack_delay_us(), 262);
    // The next ACK's tcp_update_pacing_rate() replaces the captured rate.
    cc.on_ack(&AckEvent {
        now_us: 10_000,
        packets: 1,
        acked_pkts: 1,
        rtt_us: Some(10_000),
        largest_acked: Some(1_000),
        packets_in_flight: 299,
        ..AckEvent::default()
    });
    assert_ne!(cc.pacing_rate(), 1_000_000_000);

    let bad = StartState {
        snd_una: Some(10),
        snd_nxt: Some(5),
        ..StartState::default()
    };
    assert_eq!(
        cc.start_from(&bad),
        Err(StartError::UnaAfterNxt {
            snd_una: 10,
            snd_nxt: 5
        })
    );
}

#[test]
fn every_captured_kernel_field_is_set_and_read_through_the_hooks() {
    // What a kernel-trace replay sets: tcp_sock fields through StartState, `struct bictcp`
    // (HyStart's round included) through Cubic's setters, the clock through the profile.
    let p = profile("linux-6", &[("hz", "250"), ("uptime_ms", "1000")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    let mut c = Cubic::new(&p);
    c.set_cnt(7);
    c.set_last_max_cwnd(900);
    c.set_last_cwnd(800);
    c.set_last_time(1234);
    c.set_bic_origin_point(900);
    c.set_bic_k(4000);
    c.set_delay_min(20_000);
    c.set_epoch_start(1000);
    c.set_ack_cnt(3);
    c.set_tcp_cwnd(790);
    let h = c.slow_start_mut().hystart_mut();
    h.set_sample_cnt(5);
    h.set_found(0);
    h.set_round_start(999);
    h.set_end_seq(4242);
    h.set_last_ack(1001);
    h.set_curr_rtt(21_000);
    let start = StartState {
        cwnd: 800,
        ssthresh: Some(1000),
        snd_cwnd_cnt: 11,
        cwnd_clamp: Some(5000),
        ca_state: CaState::Open,
        module: Some(CcModule::Cubic(c)),
        snd_una: Some(4000),
        snd_nxt: Some(4800),
        pacing_rate: Some(12_345_678),
        ..StartState::default()
    };
    cc.start_from(&start).expect("valid");
    let tp = cc.tcp_sock();
    assert_eq!(
        (
            tp.snd_cwnd(),
            tp.snd_ssthresh(),
            tp.snd_cwnd_cnt(),
            tp.snd_cwnd_clamp()
        ),
        (800, 1000, 11, 5000)
    );
    assert_eq!((tp.snd_una(), tp.snd_nxt(), tp.mss()), (4000, 4800, 1448));
    assert_eq!(tp.ca_state(), CaState::Open);
    assert_eq!(cc.pacing_rate(), 12_345_678);
    assert_eq!(cc.clock().hz(), 250);
    let CcModule::Cubic(c) = cc.module() else {
        panic!("cubic")
    };
    assert_eq!(
        (c.cnt(), c.last_max_cwnd(), c.last_cwnd(), c.last_time()),
        (7, 900, 800, 1234)
    );
    assert_eq!(
        (c.bic_origin_point(), c.bic_k(), c.delay_min()),
        (900, 4000, 20_000)
    );
    assert_eq!((c.epoch_start(), c.ack_cnt(), c.tcp_cwnd()), (1000, 3, 790));
    let h = c.slow_start().hystart();
    assert_eq!((h.sample_cnt(), h.found(), h.round_start()), (5, 0, 999));
    assert_eq!(
        (h.end_seq(), h.last_ack(), h.curr_rtt()),
        (4242, 1001, 21_000)
    );
}
