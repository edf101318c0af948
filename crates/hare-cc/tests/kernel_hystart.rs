//! Kernel HyStart and HyStart++ detection, ACK by ACK.

mod kernel_support;

use hare_cc::events::Phase;
use hare_cc::{Algorithm, CcEvent, ExitReason, Profile};
use kernel_support::{profile, Manual};

const MS: u64 = 1000;

/// A first round at an 80 ms RTT with ACKs 3 ms apart (no ACK train): delay_min = 80 ms.
fn warm_up(m: &mut Manual) {
    let n = m.round(3 * MS, 80 * MS);
    assert!(n >= 20);
    assert!(m.exits().is_empty());
}

#[test]
fn modern_delay_test_fires_on_the_ninth_sample_above_threshold() {
    // linux-6: threshold delay_min + clamp(delay_min >> 3, 4 ms, 16 ms) = 90 ms, checked from
    // the 9th sample of a round (HYSTART_MIN_SAMPLES = 8).
    let p = profile(
        "linux-6",
        &[("hystart_detect", "2"), ("initial_cwnd", "20")],
    );
    for (rtt, fires) in [(90_001, true), (90_000, false)] {
        let mut m = Manual::new(Algorithm::Cubic, &p, true);
        warm_up(&mut m);
        assert_eq!(m.cc.delay_min(), 80_000);
        for i in 1..=8 {
            m.ack(3 * MS, rtt);
            assert!(m.exits().is_empty(), "no exit after {i} samples");
        }
        assert_eq!(m.cc.hystart().expect("hystart").sample_cnt(), 8);
        let cwnd_before = m.cc.cwnd();
        m.ack(3 * MS, rtt);
        if fires {
            assert_eq!(m.exits(), vec![(cwnd_before, ExitReason::Delay)]);
            assert_eq!(m.cc.ssthresh(), Some(cwnd_before));
            assert_eq!(m.cc.phase(), Phase::CongestionAvoidance);
        } else {
            for _ in 0..20 {
                m.ack(3 * MS, rtt);
            }
            assert!(m.exits().is_empty());
            assert_eq!(m.cc.ssthresh(), None);
        }
    }
}

#[test]
fn linux_2_6_39_delay_test_counts_from_the_round_reset_in_cong_avoid() {
    // 2.6.39: ms << 3 units, threshold 80 + clamp(80/16, 4, 16) = 85 ms; rounds restart in
    // cong_avoid, after pkts_acked has run on the old round, so the first ACK of a round is
    // not one of its samples: the 10th ACK of the round fires.
    let p = profile(
        "linux-2.6.39",
        &[("hystart_detect", "2"), ("initial_cwnd", "20")],
    );
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    warm_up(&mut m);
    assert_eq!(m.cc.delay_min(), 640);
    for i in 1..=9 {
        m.ack(3 * MS, 85_125);
        assert!(m.exits().is_empty(), "no exit after {i} ACKs");
    }
    let cwnd = m.cc.cwnd();
    m.ack(3 * MS, 85_125);
    assert_eq!(m.exits(), vec![(cwnd, ExitReason::Delay)]);
    // Exit leaves cwnd == ssthresh, still "slow start" by the old `<=` test: one more +1.
    m.ack(3 * MS, 85_125);
    assert_eq!(m.cc.cwnd(), cwnd + 1);
    assert_eq!(m.cc.phase(), Phase::CongestionAvoidance);

    // 85.124 ms is 680 in ms << 3: not above the threshold.
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    warm_up(&mut m);
    for _ in 0..30 {
        m.ack(3 * MS, 85_124);
    }
    assert!(m.exits().is_empty());
}

/// Round 2 of a linux-6 connection as an ACK train `len` ACKs long, 1 ms apart.
fn train(paced: bool, len: u32) -> Manual {
    let p = profile(
        "linux-6",
        &[("hystart_detect", "1"), ("initial_cwnd", "100")],
    );
    let mut m = Manual::new(Algorithm::Cubic, &p, paced);
    warm_up(&mut m); // 100 ACKs 3 ms apart: never a train
    assert!(m.cc.cwnd() >= 150);
    for _ in 0..len {
        m.ack(MS, 80 * MS);
    }
    m
}

#[test]
fn ack_train_fires_on_a_long_enough_unpaced_train_only() {
    // Unpaced: threshold (delay_min + ack_delay) / 2 = (80000 + 1000) / 2 = 40500 us; the
    // first ACK of the round starts it, so the ACK 41 ms later (the 42nd) fires.
    let m = train(false, 1);
    assert_eq!(m.cc.hystart_ack_delay_us(), 1000);
    let m = train(false, 41);
    assert!(m.exits().is_empty(), "40 ms of train");
    let m = train(false, 42);
    let exits = m.exits();
    assert_eq!(exits.len(), 1);
    assert_eq!(exits[0].1, ExitReason::AckTrain);

    // A 3 ms gap ends the train: later ACKs of the round never rejoin it.
    let mut m = train(false, 41);
    m.ack(3 * MS, 80 * MS);
    for _ in 0..20 {
        m.ack(MS, 80 * MS);
    }
    assert!(m.exits().is_empty());

    // Paced: the threshold is not halved (81000 us), the same train does not fire.
    let m = train(true, 60);
    assert!(m.exits().is_empty());
    let m = train(true, 83);
    assert_eq!(m.exits().len(), 1);
}

#[test]
fn linux_2_6_29_train_gap_is_a_whole_jiffy_at_hz_100() {
    // ACKs 9 ms apart: at HZ=100 msecs_to_jiffies(2) = 1 jiffy = 10 ms, so they form a train,
    // which fires once it is delay_min >> 4 = 4 jiffies long; at HZ=1000 (2 jiffies) never.
    for (hz, fires) in [("100", true), ("1000", false)] {
        let p = profile(
            "linux-2.6.29",
            &[("hz", hz), ("hystart_detect", "1"), ("initial_cwnd", "20")],
        );
        let mut m = Manual::new(Algorithm::Cubic, &p, false);
        // A round with ACKs 30 ms apart: delay_min = 80 ms, no train.
        m.round(30 * MS, 80 * MS);
        assert!(m.exits().is_empty());
        for _ in 0..8 {
            m.ack(9 * MS, 80 * MS);
        }
        assert_eq!(!m.exits().is_empty(), fires, "HZ={hz}");
    }
}

#[test]
fn hystart_rounds_follow_packet_numbers() {
    let p = profile(
        "linux-6",
        &[("initial_cwnd", "20"), ("hystart_detect", "2")],
    );
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    assert_eq!(m.cc.hystart().expect("hystart").end_seq(), 0);
    // The first ACK (pn 0, snd_una 1 > end_seq 0) starts a round ending at snd_nxt.
    m.ack(80 * MS, 80 * MS);
    let end = m.cc.hystart().expect("hystart").end_seq();
    assert_eq!(
        end, 20,
        "snd_nxt when the round began (before this ACK's sends)"
    );
    // Still the same round until a packet numbered >= end is acknowledged.
    for _ in 0..19 {
        m.ack(MS, 80 * MS);
    }
    assert_eq!(m.cc.hystart().expect("hystart").end_seq(), end);
    m.ack(MS, 80 * MS); // pn 20
    assert!(m.cc.hystart().expect("hystart").end_seq() > end);
    assert_eq!(m.cc.hystart().expect("hystart").sample_cnt(), 1);
}

#[test]
fn hystart_plus_plus_css_abort_and_css_done() {
    let p = profile(
        "linux-6",
        &[("slow_start", "hystart++"), ("initial_cwnd", "16")],
    );
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.round(3 * MS, 80 * MS); // round 1 (the first ACK begins it)
    m.round(3 * MS, 80 * MS);
    assert!(m.events.is_empty(), "{:?}", m.events);
    // RTT up by 10 ms = max(4 ms, min(80/8, 16 ms)): CSS at the 8th sample of the round.
    for _ in 0..7 {
        m.ack(MS, 90 * MS);
    }
    assert!(m.events.is_empty());
    m.ack(MS, 90 * MS);
    assert!(matches!(m.events[..], [CcEvent::CssEntered { .. }]));
    assert_eq!(m.cc.phase(), Phase::ConservativeSlowStart);
    // CSS grows by a quarter: 8 more ACKs of one packet -> +2.
    let w = m.cc.cwnd();
    for _ in 0..8 {
        m.ack(MS, 90 * MS);
    }
    assert_eq!(m.cc.cwnd(), w + 2);
    m.round(MS, 90 * MS);
    // The RTT falls below the CSS baseline: back to slow start.
    m.round(MS, 85 * MS);
    assert!(m
        .events
        .iter()
        .any(|e| matches!(e, CcEvent::CssAborted { .. })));
    assert_eq!(m.cc.phase(), Phase::SlowStart);
    // Up again by more than 85/8 ms: CSS; then CA after 5 CSS rounds (the entry round counts).
    m.round(MS, 96 * MS);
    let entered = m
        .events
        .iter()
        .filter(|e| matches!(e, CcEvent::CssEntered { .. }))
        .count();
    assert_eq!(entered, 2);
    assert_eq!(m.cc.hystart_pp().expect("hystart++").css_rounds(), 1);
    // Count HyStart++ round boundaries (windowEnd moves) until CSS is over.
    let mut boundaries = 0;
    let mut cwnd = m.cc.cwnd();
    for _ in 0..10_000 {
        if m.cc.phase() != Phase::ConservativeSlowStart {
            break;
        }
        let end = m.cc.hystart_pp().expect("hystart++").window_end();
        cwnd = m.cc.cwnd();
        m.ack(MS, 96 * MS);
        if m.cc.hystart_pp().expect("hystart++").window_end() != end
            || m.cc.phase() != Phase::ConservativeSlowStart
        {
            boundaries += 1;
        }
    }
    assert_eq!(
        boundaries, 5,
        "CSS ends at the 5th round boundary after entry"
    );
    assert_eq!(m.exits(), vec![(cwnd, ExitReason::CssDone)]);
    assert_eq!(m.cc.ssthresh(), Some(cwnd));
    assert_eq!(m.cc.phase(), Phase::CongestionAvoidance);
}

#[test]
fn hystart_ignores_initial_ssthresh_but_standard_honours_it() {
    // tcp_cubic.c since 2.6.29: `if (!hystart && initial_ssthresh) ssthresh = initial`.
    let on = profile("linux-6", &[("initial_ssthresh", "100")]);
    assert_eq!(
        hare_cc::engine::KernelCc::new(Algorithm::Cubic, &on, true, 1200).ssthresh(),
        None
    );
    let off = profile("linux-6", &[("initial_ssthresh", "100"), ("hystart", "0")]);
    assert_eq!(
        hare_cc::engine::KernelCc::new(Algorithm::Cubic, &off, true, 1200).ssthresh(),
        Some(100)
    );
    // BIC honours it whatever the strategy; the route metric applies to everyone.
    assert_eq!(
        hare_cc::engine::KernelCc::new(Algorithm::Bic, &on, true, 1200).ssthresh(),
        Some(100)
    );
    let route = profile("linux-6", &[("route_ssthresh", "64")]);
    assert_eq!(
        hare_cc::engine::KernelCc::new(Algorithm::Cubic, &route, true, 1200).ssthresh(),
        Some(64)
    );
}

#[test]
fn hystart_is_cubic_only_unless_named() {
    // HyStart is tcp_cubic.c's code: tcp_bic.c's bictcp_acked() only tracks delayed_ack and
    // Reno has no pkts_acked, so an era's default `hystart` leaves BIC and Reno in standard
    // slow start. Naming it (`slow_start=hystart`) runs it, labelled as non-kernel.
    let delay_exit = |alg: Algorithm, p: &Profile| {
        let mut m = Manual::new(alg, p, true);
        warm_up(&mut m);
        for _ in 0..8 {
            m.ack(3 * MS, 95 * MS);
        }
        assert!(m.exits().is_empty(), "{alg}");
        let cwnd = m.cc.cwnd();
        m.ack(3 * MS, 95 * MS);
        (cwnd, m.exits())
    };
    let default = profile(
        "linux-6",
        &[("hystart_detect", "2"), ("initial_cwnd", "20")],
    );
    assert_eq!(default.non_kernel(Algorithm::Bic), None);
    for alg in [Algorithm::Bic, Algorithm::Reno] {
        assert_eq!(delay_exit(alg, &default).1, vec![], "{alg}");
    }
    let (cwnd, exits) = delay_exit(Algorithm::Cubic, &default);
    assert_eq!(exits, vec![(cwnd, ExitReason::Delay)]);

    let named = profile(
        "linux-6",
        &[
            ("slow_start", "hystart"),
            ("hystart_detect", "2"),
            ("initial_cwnd", "20"),
        ],
    );
    for alg in [Algorithm::Bic, Algorithm::Reno] {
        assert_eq!(named.non_kernel(alg), Some("hystart outside cubic"));
        let (cwnd, exits) = delay_exit(alg, &named);
        assert_eq!(exits, vec![(cwnd, ExitReason::Delay)], "{alg}");
    }
    assert_eq!(named.non_kernel(Algorithm::Cubic), None);
    let spec: hare_cc::CcSpec = "bic@linux-6,hystart=1".parse().expect("spec");
    assert_eq!(
        spec.label(),
        "bic 6 hystart=1 (non-kernel: hystart outside cubic)"
    );
    let kernel: hare_cc::CcSpec = "bic@linux-6".parse().expect("spec");
    assert_eq!(kernel.label(), "bic 6");
}

#[test]
fn ecn_reduces_like_a_loss() {
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "100")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.cc.on_congestion(m.now_us, true);
    let ev: Vec<_> = m.cc.drain_events().collect();
    assert!(matches!(
        ev[..],
        [
            CcEvent::SlowStartExit {
                reason: ExitReason::Loss,
                ..
            },
            CcEvent::WindowReduced {
                ecn: true,
                from_cwnd: 100,
                to_cwnd: 70,
                ssthresh: 70,
                ..
            }
        ]
    ));
}
