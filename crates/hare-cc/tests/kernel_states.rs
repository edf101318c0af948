//! Loss, recovery, RTO (CA_Loss), MSS changes, app-limited and idle behaviour per era.

mod kernel_support;

use hare_cc::engine::{AckEvent, CcModule, KernelCc};
use hare_cc::events::Phase;
use hare_cc::hooks::StartState;
use hare_cc::{Algorithm, CcEvent, ExitReason};
use kernel_support::{profile, Manual};

const MS: u64 = 1000;

fn cubic_state(cc: &KernelCc) -> &hare_cc::hooks::Cubic {
    match cc.module() {
        CcModule::Cubic(c) => c,
        other => panic!("not cubic: {other:?}"),
    }
}

#[test]
fn congestion_reduces_once_and_freezes_growth_until_recovery_ends() {
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "100")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.round(MS, 80 * MS);
    assert_eq!(m.cc.cwnd(), 200);
    m.cc.on_congestion(m.now_us, false);
    // ssthresh = 200 * 717 / 1024 = 140; cwnd = ssthresh (no PRR in quinn).
    assert_eq!(m.cc.ssthresh(), Some(140));
    assert_eq!(m.cc.cwnd(), 140);
    assert_eq!(m.cc.phase(), Phase::Recovery);
    // A second congestion event in the same episode changes nothing.
    m.cc.on_congestion(m.now_us + 1, true);
    assert_eq!((m.cc.cwnd(), m.cc.ssthresh()), (140, Some(140)));
    // No growth while in Recovery.
    for _ in 0..50 {
        m.ack(MS, 80 * MS);
    }
    assert_eq!(m.cc.cwnd(), 140);
    m.cc.on_recovery_end(m.now_us);
    let ev: Vec<_> = m.cc.drain_events().collect();
    m.events.extend(ev);
    let reductions = m
        .events
        .iter()
        .filter(|e| matches!(e, CcEvent::WindowReduced { .. }))
        .count();
    assert_eq!(reductions, 1);
    assert!(m.events.iter().any(|e| matches!(
        e,
        CcEvent::SlowStartExit {
            reason: ExitReason::Loss,
            cwnd: 200,
            ssthresh: 140,
            ..
        }
    )));
    assert!(matches!(
        m.events.last(),
        Some(CcEvent::RecoveryEnded { cwnd: 140, .. })
    ));
    assert_eq!(m.cc.phase(), Phase::CongestionAvoidance);
    // Growth resumes: a new epoch with K from last_max 200.
    for _ in 0..200 {
        m.ack(MS, 80 * MS);
    }
    assert!(m.cc.cwnd() > 140);
    let c = cubic_state(&m.cc);
    assert_eq!(c.last_max_cwnd(), 200);
    assert_eq!(c.bic_origin_point(), 200);
    assert_eq!(m.cc.snapshot().reductions, 1);
}

#[test]
fn rto_reset_linux_2_6_20() {
    // tcp_enter_loss(): ssthresh() first (last_max, loss_cwnd), then CA_Loss's bictcp_reset():
    // last_max, loss_cwnd and delay_min are zero again, so `cnt = 50` applies again.
    let p = profile("linux-2.6.20", &[("initial_cwnd", "10")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, false);
    for _ in 0..3 {
        m.round(MS, 80 * MS);
    }
    m.cc.on_congestion(m.now_us, false);
    m.cc.on_recovery_end(m.now_us);
    assert_ne!(cubic_state(&m.cc).loss_cwnd(), 0);
    let w = m.cc.cwnd();
    m.cc.on_rto(m.now_us);
    assert_eq!(m.cc.cwnd(), 1);
    assert_eq!(m.cc.ssthresh(), Some(w * 819 / 1024));
    let c = cubic_state(&m.cc);
    assert_eq!(
        (c.last_max_cwnd(), c.loss_cwnd(), c.delayed_ack()),
        (0, 0, 32)
    );
    assert_eq!((m.cc.delay_min(), m.cc.epoch_start()), (0, 0));
    assert_eq!(m.cc.phase(), Phase::SlowStart);
    // Slow start back to ssthresh, then CA with cnt = 50 scaled by delayed_ack again.
    for _ in 0..400 {
        m.ack(MS, 80 * MS);
    }
    assert_eq!(cubic_state(&m.cc).cnt(), 50 * 16 / 31);
}

#[test]
fn rto_reset_modern_clears_hystart_and_k() {
    let p = profile(
        "linux-6",
        &[("initial_cwnd", "20"), ("hystart_detect", "2")],
    );
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.round(3 * MS, 80 * MS);
    for _ in 0..9 {
        m.ack(3 * MS, 95 * MS); // delay exit
    }
    assert_eq!(m.exits().len(), 1);
    assert_ne!(m.cc.hystart().expect("hystart").found(), 0);
    for _ in 0..100 {
        m.ack(3 * MS, 95 * MS);
    }
    let w = m.cc.cwnd();
    m.cc.on_rto(m.now_us);
    assert_eq!(m.cc.cwnd(), 1);
    assert_eq!(m.cc.ssthresh(), Some(w * 717 / 1024));
    assert_eq!(
        m.cc.hystart().expect("hystart").found(),
        0,
        "HyStart re-armed"
    );
    assert_eq!(m.cc.hystart().expect("hystart").end_seq(), m.snd_nxt());
    assert_eq!(m.cc.delay_min(), 0);
    assert_eq!(
        cubic_state(&m.cc).last_max_cwnd(),
        0,
        "next epoch has K = 0"
    );
    let rto: Vec<_> = m.cc.drain_events().collect();
    assert!(matches!(rto[..], [CcEvent::RtoReset { from_cwnd, .. }] if from_cwnd == w));
    assert_eq!(m.cc.snapshot().rto_resets, 1);
    // Slow start from 1 segment (the loss window) back up to ssthresh.
    let target = w * 717 / 1024;
    for _ in 0..3000 {
        if m.cc.cwnd() >= target {
            break;
        }
        m.ack(3 * MS, 80 * MS);
    }
    assert_eq!(m.cc.cwnd(), target);
    m.ack(3 * MS, 80 * MS);
    assert_eq!(cubic_state(&m.cc).bic_k(), 0);
}

#[test]
fn rto_during_recovery_keeps_the_reduced_ssthresh() {
    // "Reduce ssthresh if it has not yet been made inside this window."
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "100")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    cc.on_congestion(1, false);
    assert_eq!(cc.ssthresh(), Some(70));
    cc.on_rto(2);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (1, Some(70)));
}

#[test]
fn no_growth_when_app_limited() {
    // Modern: slow start grows only while cwnd < 2 * max_packets_out.
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "10")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.app_limit = Some(4);
    m.cc.on_sent(m.now_us, m.snd_nxt(), 10); // the window was full once
    for _ in 0..200 {
        m.ack(MS, 80 * MS);
    }
    // It grew to 2 * max_packets_out (a window of 4 in flight after the first round) only.
    let w = m.cc.cwnd();
    for _ in 0..200 {
        m.ack(MS, 80 * MS);
    }
    assert_eq!(m.cc.cwnd(), w);
    assert!(w <= 20, "{w}");

    // 2.6.20: tcp_is_cwnd_limited(prior_in_flight): 4 in flight of 10 is not limited.
    let p = profile("linux-2.6.20", &[("initial_cwnd", "10")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, false);
    m.app_limit = Some(4);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, false, 1448);
    for i in 0..100u64 {
        cc.on_ack(&AckEvent {
            now_us: 80_000 + i * 1000,
            acked_pkts: 1,
            rtt_us: Some(80_000),
            largest_acked: Some(i),
            packets_in_flight: 3,
            ..Default::default()
        });
    }
    assert_eq!(cc.cwnd(), 10);
    // 9 in flight before the ACK of 10: GSO rule, left = 1, 1 * 3 < 10: limited.
    cc.on_ack(&AckEvent {
        now_us: 200_000,
        acked_pkts: 1,
        rtt_us: Some(80_000),
        largest_acked: Some(100),
        packets_in_flight: 8,
        ..Default::default()
    });
    assert_eq!(cc.cwnd(), 11);
    drop(m);
}

#[test]
fn mss_change_rescales_like_tcp_mtup_probe_success() {
    // 2.6.39+: cwnd * old / new, counter reset, ssthresh = tcp_current_ssthresh().
    let p = profile("linux-2.6.39", &[("hystart", "0"), ("initial_cwnd", "100")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    cc.on_congestion(0, false); // ssthresh 70, cwnd 70
    cc.on_recovery_end(1);
    cc.on_mss_change(2, 1500);
    assert_eq!(cc.cwnd(), 56); // 70 * 1200 / 1500
    assert_eq!(cc.ssthresh(), Some(70)); // max(70, 56/2 + 56/4 = 42)
    assert_eq!(cc.mss(), 1500);
    // With infinite ssthresh it stays infinite.
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    cc.on_mss_change(0, 1452);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (82, None));
    // 2.6.20 put the value in rcv_ssthresh: snd_ssthresh unchanged.
    let p20 = profile("linux-2.6.20", &[("initial_cwnd", "100")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p20, false, 1200);
    cc.on_congestion(0, false); // ssthresh = 100 * 819 / 1024 = 79
    cc.on_recovery_end(1);
    cc.on_mss_change(2, 2400);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (39, Some(79)));
    // A smaller segment (black hole / ICMP) keeps cwnd in segments.
    cc.on_mss_change(3, 1200);
    assert_eq!((cc.cwnd(), cc.mss()), (39, 1200));
    // Never below one segment.
    let mut cc = KernelCc::new(Algorithm::Reno, &p, true, 1200);
    cc.on_rto(0);
    cc.on_mss_change(1, 9000);
    assert_eq!(cc.cwnd(), 1);
}

#[test]
fn idle_restart_shifts_the_epoch() {
    // 4.4+: CA_EVENT_TX_START after an idle period moves epoch_start forward by the idle time.
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "100")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, true);
    m.cc.on_congestion(m.now_us, false);
    m.cc.on_recovery_end(m.now_us);
    m.round(MS, 80 * MS);
    let epoch = m.cc.epoch_start();
    assert_ne!(epoch, 0);
    // Everything acknowledged, nothing sent for 2 s (500 jiffies at HZ 250).
    m.app_limit = Some(0);
    m.round(MS, 80 * MS);
    let last_send = m.cc.tcp_sock().lsndtime();
    let t = m.now_us + 2_000_000;
    m.cc.on_sent(t, m.snd_nxt() + 1, 1);
    let now_j = m.cc.clock().jiffies(t);
    assert_eq!(
        m.cc.epoch_start(),
        epoch.wrapping_add(now_j.wrapping_sub(last_send))
    );
    // 2.6.20 has no such event.
    let p = profile("linux-2.6.20", &[("initial_cwnd", "100")]);
    let mut m = Manual::new(Algorithm::Cubic, &p, false);
    m.cc.on_congestion(m.now_us, false);
    m.cc.on_recovery_end(m.now_us);
    m.round(MS, 80 * MS);
    let epoch = m.cc.epoch_start();
    m.app_limit = Some(0);
    m.round(MS, 80 * MS);
    m.cc.on_sent(m.now_us + 2_000_000, m.snd_nxt() + 1, 1);
    assert_eq!(m.cc.epoch_start(), epoch);
}

#[test]
fn undo_rules_per_era() {
    let mk = |name: &str, alg| {
        let p = profile(name, &[("hystart", "0"), ("initial_cwnd", "100")]);
        let mut cc = KernelCc::new(alg, &p, true, 1200);
        cc.on_congestion(0, false);
        cc
    };
    // 2.6.20 CUBIC: max(cwnd, last_max_cwnd) = max(79, 100).
    assert_eq!(mk("linux-2.6.20", Algorithm::Cubic).undo_cwnd(), 100);
    // 4.4: max(cwnd, loss_cwnd).
    assert_eq!(mk("linux-4.4", Algorithm::Cubic).undo_cwnd(), 100);
    // 6.x: max(cwnd, prior_cwnd).
    assert_eq!(mk("linux-6", Algorithm::Cubic).undo_cwnd(), 100);
    // Old Reno: max(cwnd, ssthresh << 1) = max(50, 100).
    assert_eq!(mk("linux-2.6.26", Algorithm::Reno).undo_cwnd(), 100);
    // BIC (2.6.20): max(cwnd, last_max).
    assert_eq!(mk("linux-2.6.20", Algorithm::Bic).undo_cwnd(), 100);
    // Fast convergence makes last_max < cwnd_before on a second loss: the rules differ.
    let mut cc = mk("linux-2.6.20", Algorithm::Cubic);
    cc.on_recovery_end(1);
    cc.on_congestion(2, false); // cwnd 79 < last_max 100: last_max = 79 * 1843 / 2048 = 71
    assert_eq!(cc.undo_cwnd(), 71.max(cc.cwnd()));
    let mut cc = mk("linux-6", Algorithm::Cubic);
    cc.on_recovery_end(1);
    cc.on_congestion(2, false);
    assert_eq!(cc.undo_cwnd(), 70);
}

#[test]
fn an_ecn_reduction_is_not_undone() {
    // tcp_enter_cwr() (2.6.20 and 6.x): `tp->prior_ssthresh = 0` and `tp->undo_marker = 0`,
    // so no undo follows an ECN reduction, not even to the window before an earlier loss.
    for (name, after_loss, after_ecn) in [("linux-2.6.20", 79, 63), ("linux-6", 70, 49)] {
        let p = profile(name, &[("hystart", "0"), ("initial_cwnd", "100")]);
        let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
        cc.on_congestion(0, false);
        assert_eq!((cc.cwnd(), cc.undo_cwnd()), (after_loss, 100), "{name}");
        cc.on_recovery_end(1);
        cc.on_congestion(2, true);
        assert_eq!(cc.cwnd(), after_ecn, "{name}");
        assert_eq!(cc.tcp_sock().prior_ssthresh(), 0, "{name}");
        assert_eq!(cc.undo_cwnd(), after_ecn, "{name}");
    }
}

#[test]
fn snapshot_and_events_follow_the_model() {
    let p = profile("linux-2.6.20", &[]);
    let mut m = Manual::new(Algorithm::Cubic, &p, false);
    let s = m.cc.snapshot();
    assert_eq!(s.algorithm, "cubic");
    assert_eq!(s.profile, "linux-2.6.20");
    assert_eq!(s.cwnd, 3);
    assert_eq!(s.cwnd_bytes, 3 * 1448);
    assert_eq!(s.ssthresh, Some(100));
    assert_eq!(s.ssthresh_bytes, Some(144_800));
    assert_eq!(s.phase, Some(Phase::SlowStart));
    assert_eq!(s.delay_min_us, None);
    for _ in 0..120 {
        m.ack(MS, 80 * MS);
    }
    let s = m.cc.snapshot();
    assert_eq!(s.phase, Some(Phase::CongestionAvoidance));
    assert_eq!(s.exit_reason, Some(ExitReason::SsthreshReached));
    assert_eq!(s.exit_cwnd, Some(101));
    assert_eq!(s.delay_min_us, Some(80_000), "20 jiffies << 3 at HZ 250");
    assert!(s.epoch_start.is_some());
    assert_eq!(s.cnt, 25);
    assert_eq!(m.exits(), vec![(101, ExitReason::SsthreshReached)]);
}

/// Ten packets sent at 0, the first acknowledged alone at 80 ms.
fn ten_sent_and_the_first_acked_after_80_ms(cc: &mut KernelCc) {
    cc.on_sent(0, 10, 10);
    cc.on_ack(&AckEvent {
        now_us: 80_000,
        acked_pkts: 1,
        rtt_us: Some(80_000),
        largest_acked: Some(0),
        packets_in_flight: 9,
        ..Default::default()
    });
}

#[test]
fn pacing_rate_estimate() {
    // tcp_update_pacing_rate(): 200% of mss * cwnd / srtt in slow start.
    let p = profile("linux-6", &[("hystart", "0"), ("initial_cwnd", "10")]);
    let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
    ten_sent_and_the_first_acked_after_80_ms(&mut cc);
    // cwnd 11, srtt 80 ms: 1200 * 11 * 2 / 0.08 = 330000 B/s.
    assert_eq!(cc.cwnd(), 11);
    assert_eq!(cc.pacing_rate(), 330_000);
}

#[test]
fn the_pacing_rate_is_3_12_and_later_and_a_u32_to_4_19() {
    // sk_pacing_rate and tcp_update_pacing_rate() came with 3.12: the 2.6.x profiles have no
    // rate after the same ACK that gives linux-4.4 and linux-6 one.
    let rate_after_one_ack = |name: &str| {
        let p = profile(name, &[("hystart", "0"), ("initial_cwnd", "10")]);
        let mut cc = KernelCc::new(Algorithm::Cubic, &p, true, 1200);
        ten_sent_and_the_first_acked_after_80_ms(&mut cc);
        cc.pacing_rate()
    };
    for name in ["linux-2.6.20", "linux-2.6.29", "linux-2.6.39"] {
        assert_eq!(rate_after_one_ack(name), 0, "{name}");
    }
    assert_eq!(rate_after_one_ack("linux-4.4"), 330_000);
    // tcp_update_pacing_rate() stores min(rate, sk_max_pacing_rate): ~0U while
    // sk_pacing_rate was a u32 (to 4.19), unlimited from 4.20. mss 1460, 2,000 segments,
    // srtt_us 8,000 (1 ms), 200%: 1460 * 80000 * 200 * 2000 / 8000 = 5,840,000,000 B/s.
    let rate = |name: &str, kv: &[(&str, &str)]| {
        let mut cc = KernelCc::new(Algorithm::Cubic, &profile(name, kv), true, 1460);
        let start = StartState {
            cwnd: 2000,
            srtt_us: Some(8000),
            ..StartState::default()
        };
        cc.start_from(&start).expect("valid");
        cc.pacing_rate()
    };
    assert_eq!(rate("linux-4.4", &[]), 4_294_967_295);
    assert_eq!(rate("linux-6", &[]), 5_840_000_000);
    // SO_MAX_PACING_RATE as a profile key.
    assert_eq!(
        rate("linux-6", &[("max_pacing_rate", "1000000")]),
        1_000_000
    );
}
