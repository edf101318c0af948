//! Exact-value tests of the era rules that the kernel sources fix and a generic model gets
//! wrong: which module runs HyStart, BIC's stretch-ACK handling and undo, CUBIC's `t` width,
//! the 16-bit `snd_cwnd_cnt`, the order of growth and loss reaction inside one ACK, CA_Loss,
//! the RTT the estimator and `pkts_acked` get, and the sample edges. Each test names the
//! kernel function and version it follows (see `docs/KERNEL-NOTES.md`).

use super::kernel_support::{profile, Manual};
use hare_cc::clock::KernelClock;
use hare_cc::cubic::{Cubic, CubicUpdate};
use hare_cc::engine::{AckEvent, CcModule, KernelCc, LossSignal};
use hare_cc::profile::{ClockKind, DelayBlackout, RttSample};
use hare_cc::slow_start::delay::{delay_of, DelayRules};
use hare_cc::tcp_cong;
use hare_cc::tcp_sock::{CaState, TcpSock};
use hare_cc::{Algorithm, CcEvent, ExitReason, Phase};

const MS: u64 = 1000;

#[test]
fn reno_linux_6_unpaced_stays_in_slow_start_on_a_tight_ack_train() {
    // tcp_cong.c's Reno has no pkts_acked: no HyStart, whatever tcp_cubic's `hystart`
    // says. 20 ms RTT, ACKs 1.5 ms apart: a HyStart ACK train would fire (the hub set
    // ssthresh = 28 at the 19th ACK); the kernel's Reno keeps slow-starting.
    let p = profile("linux-6", &[("paced", "no")]);
    let mut m = Manual::new(Algorithm::Reno, &p, false);
    for _ in 0..40 {
        m.ack(1500, 20 * MS);
    }
    assert_eq!(m.cc.ssthresh(), None);
    assert_eq!(m.cc.cwnd(), 50);
    assert_eq!(m.exits(), vec![]);
}

#[test]
fn bic_linux_6_passes_the_slow_start_leftover_to_cong_avoid_ai() {
    // 5.7 "tcp: fix stretch ACK bugs in BIC": `acked = tcp_slow_start(tp, acked); if
    // (!acked) return; bictcp_update(); tcp_cong_avoid_ai(tp, ca->cnt, acked)`.
    // cwnd 18, ssthresh 20, one ACK of 5: slow start to 20 with 3 left; delayed_ack =
    // 32 + 5 - 2 = 35; bictcp_update(20): cnt = 20 * 3 / 20 = 3, (3 << 4) / 35 = 1;
    // tcp_cong_avoid_ai(tp, 1, 3): +3 -> 23. 4.4 stops at 20 (no leftover, `acked` 1).
    for (name, cwnd) in [("linux-6", 23), ("linux-4.4", 20)] {
        let p = profile(name, &[("initial_ssthresh", "20"), ("initial_cwnd", "18")]);
        let mut m = Manual::new(Algorithm::Bic, &p, true);
        m.ack_n(MS, 5, 80 * MS);
        assert_eq!(m.cc.cwnd(), cwnd, "{name}");
        let CcModule::Bic(b) = m.cc.module() else {
            panic!("bic")
        };
        assert_eq!(b.delayed_ack, 35, "{name}");
    }
}

#[test]
fn bic_undo_per_era() {
    // Two losses: at cwnd 100 (last_max 100, loss_cwnd 100, cwnd 79) and at 79 (fast
    // convergence: last_max = 79 * 1843 / 2048 = 71, loss_cwnd 79, cwnd 79 * 819 / 1024 =
    // 63). undo_cwnd: 2.6.39 max(cwnd, last_max_cwnd) = 71; 4.4 max(cwnd, loss_cwnd) = 79;
    // 6.x tcp_reno_undo_cwnd max(cwnd, prior_cwnd) = 79.
    for (name, undo) in [("linux-2.6.39", 71), ("linux-4.4", 79), ("linux-6", 79)] {
        let p = profile(name, &[("initial_cwnd", "100")]);
        let mut m = Manual::new(Algorithm::Bic, &p, true);
        m.cc.on_congestion(m.now_us, false);
        assert_eq!(m.cc.cwnd(), 79, "{name}");
        m.cc.on_recovery_end(m.now_us);
        m.cc.on_congestion(m.now_us, false);
        assert_eq!(m.cc.cwnd(), 63, "{name}");
        assert_eq!(m.cc.undo_cwnd(), undo, "{name}");
        // An RTO: 4.4's bictcp_reset keeps loss_cwnd (bictcp_init clears it), 2.6.39's
        // clears it with last_max_cwnd.
        m.cc.on_rto(m.now_us);
        let after_rto = match name {
            "linux-2.6.39" => 1,
            _ => 79,
        };
        assert_eq!(m.cc.undo_cwnd(), after_rto, "{name} after rto");
    }
}

#[test]
fn cubic_2_6_39_t_is_unsigned_long_across_a_jiffies_wrap() {
    // 2.6.39 bictcp_update(): `t = ((tcp_time_stamp + msecs_to_jiffies(ca->delay_min >> 3)
    // - ca->epoch_start) << BICTCP_HZ) / HZ;` with msecs_to_jiffies() returning unsigned
    // long: at HZ 1000, epoch 0xffffff00 and now 0x100 the 64-bit difference wraps near 2^64,
    // t = 1,168,231,639 (u32), delta 7,545,897, cnt = 100 / 7,545,897 = 0 -> 1. The u32
    // expression of 2.6.29 gives t = 534, delta 0, cnt = 100 * cwnd = 10,000 -> scaled by
    // delayed_ack 32: 5,000.
    let cnt_for = |cubic_t: &str| {
        let p = profile("linux-2.6.39", &[("hz", "1000"), ("cubic_t", cubic_t)]);
        let clock = KernelClock::new(1000, p.uptime_ms());
        let mut c = Cubic::new(&p);
        c.last_max_cwnd = 100;
        c.loss_cwnd = 100;
        c.bic_origin_point = 100;
        c.ss.delay_min = 80;
        c.epoch_start = 0xffff_ff00;
        let u = CubicUpdate {
            profile: &p,
            cwnd: 100,
            acked: 1,
            now_jiffies: 0x100,
            clock: &clock,
            clock_kind: ClockKind::Ms,
        };
        c.bictcp_update(&u);
        c.cnt
    };
    assert_eq!(cnt_for("ulong"), 1);
    assert_eq!(cnt_for("u32"), 5000);
    assert_eq!(
        profile("linux-2.6.39", &[]).get("cubic_t").ok(),
        Some("ulong".to_owned())
    );
}

#[test]
fn snd_cwnd_cnt_is_16_bits_to_2_6_23() {
    // 2.6.22 tcp_slow_start(): `tp->snd_cwnd_cnt += cnt; while (tp->snd_cwnd_cnt >=
    // tp->snd_cwnd) ...` on a u16 field (32-bit from f78a1b38928, 2.6.24).
    let mut old = TcpSock::new(40_000, u32::MAX, 1448).with_cwnd_cnt_bits(16);
    old.snd_cwnd_cnt = 30_000;
    tcp_cong::slow_start_credit(&mut old, 0, 1);
    // 30,000 + 40,000 = 70,000 keeps 4,464 in 16 bits: below cwnd, no increase.
    assert_eq!((old.snd_cwnd, old.snd_cwnd_cnt), (40_000, 4_464));
    let mut new = TcpSock::new(40_000, u32::MAX, 1448);
    new.snd_cwnd_cnt = 30_000;
    tcp_cong::slow_start_credit(&mut new, 0, 1);
    assert_eq!((new.snd_cwnd, new.snd_cwnd_cnt), (40_001, 30_000));
    // From cwnd 65,536 a whole-window credit is 0 in 16 bits: slow start stops.
    let mut stuck = TcpSock::new(70_000, u32::MAX, 1448).with_cwnd_cnt_bits(16);
    tcp_cong::slow_start_credit(&mut stuck, 0, 1);
    assert_eq!((stuck.snd_cwnd, stuck.snd_cwnd_cnt), (70_000, 4_464));
    // The per-ACK AI counter `snd_cwnd_cnt++` wraps at 65,536.
    let mut ai = TcpSock::new(700, u32::MAX, 1448).with_cwnd_cnt_bits(16);
    ai.snd_cwnd_cnt = 65_535;
    tcp_cong::cong_avoid_ai_per_ack(&mut ai, 70_000);
    assert_eq!((ai.snd_cwnd, ai.snd_cwnd_cnt), (700, 0));
    for (name, bits) in [
        ("linux-2.6.20", "16"),
        ("linux-2.6.22", "16"),
        ("linux-2.6.26", "32"),
    ] {
        assert_eq!(
            profile(name, &[]).get("cwnd_cnt_bits").ok().as_deref(),
            Some(bits)
        );
    }
}

/// At 81 ms, one ACK of the first two of 21 packets in flight, with an 80 ms RTT.
fn first_two_acked_at_81_ms() -> AckEvent {
    AckEvent {
        now_us: 81 * MS,
        acked_pkts: 2,
        rtt_us: Some(80 * MS),
        largest_acked: Some(1),
        packets_in_flight: 19,
        ..Default::default()
    }
}

#[test]
fn loss_revealing_ack_grows_first_in_2_6_and_not_in_modern_kernels() {
    // 2.6.39 tcp_ack(): `if (tcp_may_raise_cwnd()) tcp_cong_avoid(); tcp_fastretrans_alert()`:
    // reno slow start 21 -> 22, then ssthresh = 22 >> 1 = 11. 4.4+ runs
    // tcp_fastretrans_alert() first: ssthresh = 21 >> 1 = 10 from the pre-ACK window, and
    // tcp_in_cwnd_reduction() stops the growth.
    for (name, after) in [("linux-2.6.39", 11), ("linux-4.4", 10), ("linux-6", 10)] {
        let p = profile(name, &[("initial_cwnd", "21")]);
        // One ACK carrying the loss ...
        let mut m = Manual::new(Algorithm::Reno, &p, true);
        m.ack_with(MS, 2, 80 * MS, false, Some(LossSignal::Loss));
        assert_eq!(
            (m.cc.cwnd(), m.cc.ssthresh()),
            (after, Some(after)),
            "{name}"
        );
        // ... and quinn's order (acks, then the congestion event) give the same.
        // (No send in between: quinn reports the loss before it transmits again.)
        let mut q = Manual::new(Algorithm::Reno, &p, true);
        q.cc.on_ack(&first_two_acked_at_81_ms());
        q.cc.amend_last_ack(81 * MS, LossSignal::Loss);
        assert_eq!(
            (q.cc.cwnd(), q.cc.ssthresh()),
            (after, Some(after)),
            "{name}"
        );
        assert_eq!(q.cc.phase(), Phase::Recovery);
    }
}

#[test]
fn growth_to_ssthresh_on_a_loss_revealing_ack_is_reported_before_the_loss_in_2_6() {
    // 2.6.x grows first (cwnd 21 <= ssthresh 21: slow start, +1 to 22, past ssthresh), then
    // reacts to the loss (ssthresh = 22 >> 1 = 11): slow start ended by reaching ssthresh on
    // this ACK, whether the loss came with the ACK or (quinn's order) right after it. 2.6.20
    // is the case that used to lose the exit: its growth step is rerun for the delay sample.
    for name in ["linux-2.6.20", "linux-2.6.39"] {
        let p = profile(name, &[("initial_cwnd", "21"), ("route_ssthresh", "21")]);
        let expected = [
            CcEvent::SlowStartExit {
                t_us: 81 * MS,
                cwnd: 22,
                ssthresh: 21,
                reason: ExitReason::SsthreshReached,
            },
            CcEvent::WindowReduced {
                t_us: 81 * MS,
                from_cwnd: 22,
                to_cwnd: 11,
                ssthresh: 11,
                ecn: false,
            },
        ];
        for amended in [false, true] {
            let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
            cc.on_sent(0, 21, 21);
            let ack = first_two_acked_at_81_ms();
            if amended {
                cc.on_ack(&ack);
                // The growth step's decisions wait until nothing can amend the ACK.
                assert_eq!(cc.drain_events().count(), 0);
                cc.amend_last_ack(81 * MS, LossSignal::Loss);
            } else {
                cc.on_ack(&AckEvent {
                    loss: Some(LossSignal::Loss),
                    ..ack
                });
            }
            cc.close_ack();
            let events: Vec<CcEvent> = cc.drain_events().collect();
            assert_eq!(events, expected, "{name} amended {amended}");
            assert_eq!((cc.cwnd(), cc.ssthresh()), (11, Some(11)), "{name}");
        }
    }
}

#[test]
fn ack_that_ends_recovery_grows_only_in_modern_kernels() {
    // 2.6.x: tcp_may_raise_cwnd() sees TCP_CA_Recovery before tcp_fastretrans_alert() leaves
    // it: no growth on that ACK. 4.4+: the state is Open again when tcp_cong_avoid() runs:
    // Reno AI with w = 10 and 10 packets -> 11.
    for (name, reduced, on_end, next) in [("linux-2.6.39", 11, 11, 12), ("linux-6", 10, 11, 11)] {
        let p = profile(name, &[("initial_cwnd", "21")]);
        let mut m = Manual::new(Algorithm::Reno, &p, true);
        m.ack_with(MS, 2, 80 * MS, false, Some(LossSignal::Loss));
        assert_eq!(m.cc.cwnd(), reduced, "{name}");
        m.ack_with(MS, 10, 80 * MS, true, None);
        assert_ne!(m.cc.phase(), Phase::Recovery, "{name}");
        assert_eq!(m.cc.cwnd(), on_end, "{name}");
        // 2.6.39 is in slow start at cwnd == ssthresh (`<=`): +1 on the next ACK.
        m.ack_with(MS, 1, 80 * MS, false, None);
        assert_eq!(m.cc.cwnd(), next, "{name}");
    }
}

#[test]
fn ca_loss_holds_until_high_seq_and_freezes_delayed_ack() {
    // 2.6.39 bictcp_acked(): `if (icsk->icsk_ca_state == TCP_CA_Open)` the delayed_ack EWMA
    // `ratio - ratio / 16 + cnt` (capped at 32 << 4); tcp_enter_loss() stays in TCP_CA_Loss
    // until high_seq is acknowledged, then tcp_try_to_open() holds TCP_CA_Disorder (the RTO's
    // undo_marker is still set) until something sent after that is acknowledged.
    let p = profile("linux-2.6.39", &[("initial_cwnd", "10"), ("hystart", "0")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    let delayed_ack = |m: &Manual| match m.cc.module() {
        CcModule::Cubic(c) => c.delayed_ack,
        _ => unreachable!("cubic"),
    };
    m.ack_n(MS, 3, 80 * MS);
    assert_eq!(delayed_ack(&m), 33);
    m.cc.on_rto(m.now_us);
    assert_eq!(delayed_ack(&m), 32, "bictcp_reset");
    m.ack_n(MS, 3, 80 * MS);
    assert_eq!(delayed_ack(&m), 32, "frozen in Loss");
    assert_eq!(m.cc.cwnd(), 2, "slow start in Loss");
    m.ack_with(MS, 3, 80 * MS, true, None);
    assert_eq!(delayed_ack(&m), 32, "pkts_acked runs before the state exit");
    let ca_state = |m: &Manual| m.cc.tcp_sock().ca_state;
    assert_eq!(ca_state(&m), CaState::Disorder);
    let high_seq = m.cc.tcp_sock().high_seq;
    while ca_state(&m) == CaState::Disorder {
        m.ack_n(MS, 1, 80 * MS);
        assert_eq!(delayed_ack(&m), 32, "frozen in Disorder");
    }
    // The hold ended on the ACK of the first packet numbered high_seq (snd_una above it).
    assert_eq!(m.cc.tcp_sock().snd_una, high_seq + 1);
    m.ack_n(MS, 3, 80 * MS);
    assert_eq!(delayed_ack(&m), 33, "Open again");
}

#[test]
fn srtt_takes_the_oldest_packet_and_pkts_acked_the_newest() {
    // tcp_clean_rtx_queue(): tcp_ack_update_rtt(sk, flag, seq_rtt_us, ..) feeds
    // tcp_rtt_estimator() the first (oldest) acked packet's RTT; pkts_acked gets ca_rtt_us
    // (the last one).
    let p = profile("linux-6", &[("hystart", "0")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    cc.on_sent(0, 10, 10);
    cc.on_ack(&AckEvent {
        now_us: 40 * MS,
        packets: 3,
        acked_pkts: 3,
        rtt_us: Some(10 * MS),
        seq_rtt_us: Some(30 * MS),
        largest_acked: Some(2),
        packets_in_flight: 7,
        ..Default::default()
    });
    assert_eq!(cc.tcp_sock().srtt_us, 30_000 << 3);
    assert_eq!(cc.delay_min(), 10_000);
}

#[test]
fn sample_edges() {
    // 2.6.20 measure_delay(): `if (!(tp->rx_opt.saw_tstamp && tp->rx_opt.rcv_tsecr))
    // return;` an echoed timestamp of 0 is "no timestamp". uptime 300 s at HZ 250 puts
    // jiffies at 0 when the controller is built.
    let clock = KernelClock::new(250, 300_000);
    let tsecr = DelayRules {
        clock: ClockKind::Jiffies,
        rtt_sample: RttSample::Tsecr,
        blackout: DelayBlackout::Always,
        hystart: false,
    };
    assert_eq!(delay_of(&tsecr, &clock, 100 * MS, 100 * MS), None);
    // Sent at 4 ms (jiffy 1), now 100 ms (jiffy 25): 24 jiffies << 3.
    assert_eq!(delay_of(&tsecr, &clock, 100 * MS, 96 * MS), Some(192));
    // ack_sample.rtt_us is an s32: 2^31 us or more is negative, no sample.
    let us = DelayRules {
        clock: ClockKind::Us,
        rtt_sample: RttSample::Us,
        blackout: DelayBlackout::EpochStarted,
        hystart: true,
    };
    let big = 1u64 << 31;
    assert_eq!(delay_of(&us, &clock, big + 1, big), None);
    assert_eq!(delay_of(&us, &clock, big, big - 1), Some(i32::MAX as u32));
}

#[test]
fn old_eras_moderate_cwnd_in_loss_and_when_an_episode_ends() {
    // 2.6.39 tcp_fastretrans_alert(): the ACK that ends Recovery goes through
    // tcp_try_to_open() -> tcp_moderate_cwnd(): cwnd = min(cwnd, in_flight + reordering).
    // Reno, cwnd 21 -> loss -> 11; the ending ACK leaves 2 in flight: min(11, 2 + 3) = 5.
    // 6.x has no such step: cwnd 10 -> 11 (Reno AI on that ACK).
    for (name, after) in [("linux-2.6.39", 5), ("linux-6", 11)] {
        let p = profile(name, &[("initial_cwnd", "21")]);
        let mut m = Manual::new(Algorithm::Reno, &p, true);
        m.ack_with(MS, 2, 80 * MS, false, Some(LossSignal::Loss));
        m.app_limit = Some(0);
        m.ack_with(MS, 17, 80 * MS, true, None);
        assert_eq!(m.cc.cwnd(), after, "{name}");
    }
    // In TCP_CA_Loss every ACK is moderated: after an RTO with 3 packets left in flight,
    // slow start may take cwnd to at most 3 + 3.
    let p = profile("linux-2.6.39", &[("initial_cwnd", "10")]);
    let mut m = Manual::new(Algorithm::Reno, &p, true);
    m.app_limit = Some(0);
    m.cc.on_rto(m.now_us);
    m.ack_with(MS, 7, 80 * MS, false, None);
    assert_eq!(m.cc.cwnd(), 2);
    assert_eq!(m.cc.phase(), Phase::SlowStart);
}

#[test]
fn a_cwnd_limited_window_counts_first_from_5_19() {
    // f4ce91ce12a7 (5.19) tcp_is_cwnd_limited(): `if (tp->is_cwnd_limited) return true;`
    // before slow start's `snd_cwnd < 2 * max_packets_out`; 3.16 - 5.18 test slow start's rule
    // alone. A cwnd-limited window of 10 (max_packets_out 10): 10 packets acknowledged take
    // slow start to 20, where 4.4 stops (20 < 2 * 10 is false) and 6.x goes on to 25.
    for (name, after) in [("linux-4.4", 20), ("linux-6", 25)] {
        let p = profile(name, &[]);
        let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
        cc.start_from(&hare_cc::hooks::StartState::default())
            .expect("reno state");
        let ack = |acked_pkts| AckEvent {
            now_us: 100 * MS,
            acked_pkts,
            ..AckEvent::default()
        };
        cc.hook_cong_avoid(&ack(10));
        assert_eq!(cc.cwnd(), 20, "{name}");
        cc.hook_cong_avoid(&ack(5));
        assert_eq!(cc.cwnd(), after, "{name}");
    }
}

#[test]
fn old_cubic_takes_the_echoed_timestamp_of_the_oldest_packet() {
    // 2.6.20 measure_delay(): `delay = (tcp_time_stamp - tp->rx_opt.rcv_tsecr) << 3`; a
    // delayed ACK echoes the first segment it acknowledges (tcp_store_ts_recent() takes
    // TSval only from a segment at rcv_wup). HZ 250 and 600 s of uptime: jiffies are 4 ms
    // apart from the controller's time 0. Oldest sent at 40 ms, ACK at 100 ms: 15 jiffies,
    // delay 15 << 3 = 120 (the newest, sent at 80 ms, would give 5 << 3 = 40).
    let p = profile("linux-2.6.20", &[]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    cc.on_sent(0, 10, 10);
    cc.on_ack(&AckEvent {
        now_us: 100 * MS,
        packets: 2,
        acked_pkts: 2,
        rtt_us: Some(20 * MS),
        seq_rtt_us: Some(60 * MS),
        largest_acked: Some(1),
        packets_in_flight: 8,
        ..Default::default()
    });
    assert_eq!(cc.delay_min(), 120);
}

#[test]
fn old_cubic_takes_no_delay_sample_on_a_dubious_ack() {
    // 2.6.20 tcp_ack(): a dubious ACK (tcp_ack_is_dubious(): not Open, ECE or SACK) calls
    // tcp_cong_avoid(..., data_acked = 0), and bictcp_cong_avoid() measures the delay only
    // `if (data_acked)`. Samples of 40 ms (10 jiffies, delay 80) would lower delay_min 120.
    let p = profile("linux-2.6.20", &[]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    cc.on_sent(0, 10, 10);
    let ack = |now_ms: u64, largest: u64, in_flight: u32, ends_episode: bool| AckEvent {
        now_us: now_ms * MS,
        packets: 1,
        acked_pkts: 1,
        rtt_us: Some(40 * MS),
        seq_rtt_us: Some(40 * MS),
        largest_acked: Some(largest),
        packets_in_flight: in_flight,
        ends_episode,
        ..Default::default()
    };
    cc.on_ack(&AckEvent {
        seq_rtt_us: Some(60 * MS),
        ..ack(100, 0, 9, false)
    });
    assert_eq!(cc.delay_min(), 120);
    // The ACK that reveals a loss (quinn: the frame's acks, then its congestion event).
    cc.on_ack(&ack(104, 1, 8, false));
    cc.amend_last_ack(104 * MS, LossSignal::Loss);
    assert_eq!(cc.phase(), Phase::Recovery);
    assert_eq!(cc.delay_min(), 120, "loss-revealing ACK");
    cc.on_ack(&ack(108, 2, 7, false));
    assert_eq!(cc.delay_min(), 120, "in Recovery");
    // The ACK that ends Recovery is still taken in Recovery (2.6.x grows, or not, first).
    cc.on_ack(&ack(112, 3, 6, true));
    assert_eq!(cc.delay_min(), 120, "the ACK that ends Recovery");
    // tcp_try_to_open() holds Disorder until something above high_seq (snd_nxt 10 then) is
    // acknowledged: its ACKs are dubious too, the one that leaves it included.
    cc.on_sent(114 * MS, 12, 8);
    cc.on_ack(&ack(116, 4, 7, false));
    assert_eq!(cc.delay_min(), 120, "in Disorder");
    cc.on_ack(&ack(120, 10, 6, false));
    assert_eq!(cc.tcp_sock().ca_state, CaState::Open);
    assert_eq!(cc.delay_min(), 120, "the ACK that leaves Disorder");
    // Growth in Disorder started a new epoch at 116 ms: measure_delay() discards samples
    // for HZ jiffies after it ("right after fast recovery").
    cc.on_ack(&ack(124, 11, 5, false));
    assert_eq!(cc.delay_min(), 120, "within a second of the epoch start");
    cc.on_sent(1150 * MS, 13, 5);
    cc.on_ack(&ack(1200, 12, 4, false));
    assert_eq!(cc.delay_min(), 80, "Open again");
}

#[test]
fn a_timeout_in_loss_takes_a_new_ssthresh_once_data_was_acknowledged() {
    // tcp_enter_loss(): `if (state <= TCP_CA_Disorder || ... || (state == TCP_CA_Loss &&
    // !icsk->icsk_retransmits))` ssthresh = ca_ops->ssthresh(); tcp_retransmit_timer() counts
    // icsk_retransmits up after it, an ACK of data zeroes it. CUBIC linux-6 (beta 717):
    // 100 -> ssthresh 70; a repeated timeout without an ACK keeps 70; after an ACK of 15
    // packets (slow start in Loss: cwnd 16) the next one takes 16 * 717 / 1024 = 11.
    let p = profile("linux-6", &[("hystart", "0")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1448);
    cc.start_from(&hare_cc::hooks::StartState {
        cwnd: 100,
        ..hare_cc::hooks::StartState::default()
    })
    .expect("cubic state");
    cc.on_rto(100 * MS);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (1, Some(70)));
    cc.on_rto(300 * MS);
    assert_eq!(
        (cc.cwnd(), cc.ssthresh()),
        (1, Some(70)),
        "repeated, no ACK"
    );
    cc.on_ack(&AckEvent {
        now_us: 400 * MS,
        packets: 15,
        acked_pkts: 15,
        rtt_us: Some(80 * MS),
        largest_acked: Some(14),
        packets_in_flight: 0,
        ..Default::default()
    });
    assert_eq!(cc.tcp_sock().ca_state, CaState::Loss);
    assert_eq!(cc.cwnd(), 16);
    cc.on_rto(600 * MS);
    assert_eq!(
        (cc.cwnd(), cc.ssthresh()),
        (1, Some(11)),
        "after an ACK of data"
    );
}

#[test]
fn the_moderation_burst_is_3_until_2_6_26_and_tp_reordering_after() {
    // tcp_max_burst() returned 3 until dd9e0dda66b (2.6.26) made it tp->reordering. With
    // reordering 10, the ACK that ends Recovery (cwnd 10, 2 in flight) enters Disorder and
    // tcp_moderate_cwnd() gives min(10, 2 + 3) = 5 in 2.6.20 and 2.6.22, min(10, 2 + 10) = 10
    // in 2.6.39; with the default reordering 3, 2.6.39 gives 5 too.
    for (name, reordering, moderated) in [
        ("linux-2.6.20", "10", 5),
        ("linux-2.6.22", "10", 5),
        ("linux-2.6.39", "10", 10),
        ("linux-2.6.39", "3", 5),
    ] {
        let p = profile(name, &[("initial_cwnd", "20"), ("reordering", reordering)]);
        let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
        cc.on_sent(0, 20, 20);
        let ack = AckEvent {
            now_us: 100 * MS,
            packets: 1,
            acked_pkts: 1,
            rtt_us: Some(100 * MS),
            largest_acked: Some(0),
            packets_in_flight: 19,
            loss: Some(LossSignal::Loss),
            ..Default::default()
        };
        cc.on_ack(&ack);
        assert_eq!(cc.cwnd(), 10, "{name}: ssthresh = 21 >> 1 after 20 -> 21");
        cc.on_ack(&AckEvent {
            now_us: 200 * MS,
            largest_acked: Some(1),
            packets_in_flight: 2,
            ends_episode: true,
            loss: None,
            ..ack
        });
        assert_eq!(cc.tcp_sock().ca_state, CaState::Disorder, "{name}");
        assert_eq!(cc.cwnd(), moderated, "{name} reordering {reordering}");
    }
}

#[test]
fn tcp_max_ssthresh_acts_in_every_slow_start_from_2_6_22_to_3_12() {
    // 2.6.22 - 3.12 tcp_slow_start(): `if (sysctl_tcp_max_ssthresh > 0 && tp->snd_cwnd >
    // sysctl_tcp_max_ssthresh) cnt = sysctl_tcp_max_ssthresh >> 1;` in every call, CUBIC's
    // with HyStart on included. cwnd 200, max_ssthresh 100: 50 of credit per ACK, +1 after
    // four ACKs. 4.4 has no such sysctl (3.13 removed it): +1 per ACKed packet.
    for (name, alg, after) in [
        ("linux-2.6.39", Algorithm::Cubic, 201),
        ("linux-2.6.26", Algorithm::Reno, 201),
        ("linux-4.4", Algorithm::Cubic, 204),
    ] {
        let p = profile(name, &[("initial_cwnd", "200"), ("max_ssthresh", "100")]);
        let mut cc = KernelCc::new(alg, &p, true, 1448);
        cc.on_sent(0, 200, 200);
        for i in 0..4u32 {
            cc.on_ack(&AckEvent {
                now_us: u64::from(80 + 3 * i) * MS,
                packets: 1,
                acked_pkts: 1,
                rtt_us: Some(80 * MS),
                largest_acked: Some(u64::from(i)),
                packets_in_flight: 199 - i,
                ..Default::default()
            });
        }
        assert_eq!(cc.cwnd(), after, "{name} {alg:?}");
    }
}

#[test]
fn old_eras_hold_disorder_for_a_flight_after_recovery() {
    // 2.6.39 tcp_fastretrans_alert(): Recovery ends without an undo (tcp_try_undo_recovery()
    // sets Open, undo_marker stays), then tcp_try_to_open() finds undo_marker set: Disorder
    // with high_seq = snd_nxt, and tcp_moderate_cwnd() (cwnd = min(cwnd, in_flight + 3)) on
    // every ACK until something above high_seq is acknowledged (`undo_marker = 0`, Open).
    let p = profile("linux-2.6.39", &[("initial_cwnd", "20")]);
    let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
    cc.on_sent(0, 20, 20);
    let ack = |now_ms: u64, largest: u64, in_flight: u32| AckEvent {
        now_us: now_ms * MS,
        packets: 1,
        acked_pkts: 1,
        rtt_us: Some(100 * MS),
        largest_acked: Some(largest),
        packets_in_flight: in_flight,
        ..Default::default()
    };
    // Slow start 20 -> 21 first (2.6.x), then ssthresh = 21 >> 1 = 10 = cwnd.
    cc.on_ack(&AckEvent {
        loss: Some(LossSignal::Loss),
        ..ack(100, 0, 19)
    });
    assert_eq!((cc.cwnd(), cc.ssthresh()), (10, Some(10)));
    // The ACK that ends Recovery: no growth, Disorder until snd_nxt 20, min(10, 5 + 3).
    cc.on_ack(&AckEvent {
        ends_episode: true,
        ..ack(200, 1, 5)
    });
    let state = |cc: &KernelCc| (cc.tcp_sock().ca_state, cc.tcp_sock().high_seq);
    assert_eq!(state(&cc), (CaState::Disorder, 20));
    assert_eq!(cc.cwnd(), 8);
    // In Disorder: slow start 8 -> 9 (cwnd <= ssthresh), then min(9, 4 + 3) = 7.
    cc.on_ack(&ack(210, 2, 4));
    assert_eq!((state(&cc), cc.cwnd()), ((CaState::Disorder, 20), 7));
    // Packet 20 (sent after the hold began) acknowledged: 7 -> 8, Open, min(8, 5 + 3).
    cc.on_sent(215 * MS, 22, 6);
    cc.on_ack(&ack(220, 20, 5));
    assert_eq!((state(&cc).0, cc.cwnd()), (CaState::Open, 8));
    // Open: no longer moderated (min(8, 1 + 3) would be 4); not cwnd-limited, no growth.
    cc.on_ack(&ack(230, 21, 1));
    assert_eq!(cc.cwnd(), 8);
    // 4.4 (tcp_try_keep_open(): Disorder only with SACKed, lost or retransmitted data out)
    // neither holds Disorder nor moderates.
    let p = profile("linux-4.4", &[("initial_cwnd", "20")]);
    let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1448);
    cc.on_sent(0, 20, 20);
    cc.on_ack(&AckEvent {
        loss: Some(LossSignal::Loss),
        ..ack(100, 0, 19)
    });
    cc.on_ack(&AckEvent {
        ends_episode: true,
        ..ack(200, 1, 5)
    });
    assert_eq!(state(&cc).0, CaState::Open);
}
