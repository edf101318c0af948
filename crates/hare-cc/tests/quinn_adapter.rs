//! Adapter rules through quinn's `Controller` trait: one reduction per recovery episode,
//! ECN-CE, persistent congestion, app-limited ACKs, MTU changes, the byte remainder, the
//! pacing-rate metric and the time origin.

mod quinn_support;

use std::time::{Duration, Instant};

use hare_cc::{CcEvent, CcSpec, HareController, Observer, Phase};
use quinn_proto::congestion::Controller;
use quinn_support::clock::{AckClock, PathSpec};
use quinn_support::pair::rtt_estimator;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn build(spec: &str, mtu: u16, observer: Option<&Observer>) -> (HareController, Instant) {
    let spec: CcSpec = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
    let mut factory = spec.hare_factory().expect("hare spec");
    if let Some(o) = observer {
        factory = factory.with_observer(o.clone());
    }
    let base = Instant::now();
    (factory.build_controller(base, mtu), base)
}

/// A slow-start run on a 100 ms unlimited path until cwnd reaches `target` segments.
fn grown(spec: &str, target: u32, observer: &Observer) -> AckClock<HareController> {
    let (ctrl, base) = build(spec, 1200, Some(observer));
    let mut clock = AckClock::new(ctrl, PathSpec::new(100, None, 1), rtt_estimator(), base);
    assert!(clock.run_until(ms(10_000), 1_000_000, |c| c.ctrl.cwnd_segments() >= target));
    clock
}

fn reductions(events: &[CcEvent]) -> Vec<(u32, u32, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            CcEvent::WindowReduced {
                from_cwnd,
                to_cwnd,
                ecn,
                ..
            } => Some((*from_cwnd, *to_cwnd, *ecn)),
            _ => None,
        })
        .collect()
}

#[test]
fn one_reduction_per_recovery_episode_however_many_loss_batches() {
    let observer = Observer::with_settings(1, 4096);
    let mut clock = grown("cubic@linux-6,hystart=0", 40, &observer);
    let id = clock.ctrl.id().expect("observed");
    let cwnd = clock.ctrl.cwnd_segments();
    assert_eq!(cwnd, 40);
    observer.drain_events(id);
    // Three loss batches, all of packets sent before the first detection.
    clock.lose_oldest(1, false);
    clock.lose_oldest(2, false);
    clock.lose_oldest(3, false);
    let events = observer.drain_events(id);
    // linux-6 CUBIC: ssthresh = max(cwnd * 717 / 1024, 2) = 28 (docs/KERNEL-NOTES.md fact 1 form).
    assert_eq!(reductions(&events), vec![(40, 28, false)], "{events:?}");
    assert_eq!(clock.ctrl.cwnd_segments(), 28);
    assert_eq!(clock.ctrl.snapshot().ssthresh, Some(28));
    assert!(clock.ctrl.in_recovery());
    assert_eq!(clock.ctrl.snapshot().reductions, 1);
    // ACKs of packets sent before recovery do not end it; the first ACK of a packet sent
    // after it does.
    clock.run_until(ms(20_000), 1_000_000, |c| !c.ctrl.in_recovery());
    assert!(!clock.ctrl.in_recovery());
    let events = observer.drain_events(id);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, CcEvent::RecoveryEnded { .. })),
        "{events:?}"
    );
    // A loss of a packet sent after the episode began is a new episode.
    let before = clock.ctrl.cwnd_segments();
    clock.lose_oldest(1, false);
    let events = observer.drain_events(id);
    let r = reductions(&events);
    assert_eq!(r.len(), 1, "{events:?}");
    assert_eq!(r[0].0, before);
    assert_eq!(clock.ctrl.snapshot().reductions, 2);
}

#[test]
fn ecn_ce_reduces_like_a_loss_once_per_episode() {
    let observer = Observer::with_settings(1, 4096);
    let mut clock = grown("cubic@linux-6,hystart=0", 40, &observer);
    let id = clock.ctrl.id().expect("observed");
    observer.drain_events(id);
    let now = clock.base + clock.now;
    let sent = now - ms(50);
    clock.ctrl.on_congestion_event(now, sent, false, 0);
    clock.ctrl.on_congestion_event(now + ms(1), sent, false, 0);
    assert_eq!(reductions(&observer.drain_events(id)), vec![(40, 28, true)]);
}

#[test]
fn persistent_congestion_resets_to_the_loss_window() {
    let observer = Observer::with_settings(1, 4096);
    let mut clock = grown("cubic@linux-6,hystart=0", 40, &observer);
    let id = clock.ctrl.id().expect("observed");
    observer.drain_events(id);
    let inflight = clock.packets_in_flight() as usize;
    clock.lose_oldest(inflight, true);
    let events = observer.drain_events(id);
    assert!(
        events.iter().any(|e| matches!(
            e,
            CcEvent::RtoReset {
                from_cwnd: 40,
                ssthresh: 28,
                ..
            }
        )),
        "{events:?}"
    );
    // tcp_enter_loss: cwnd = 1 (the loss window), ssthresh from the algorithm.
    assert_eq!(clock.ctrl.cwnd_segments(), 1);
    let snap = clock.ctrl.snapshot();
    assert_eq!(snap.ssthresh, Some(28));
    assert_eq!(snap.rto_resets, 1);
    assert_eq!(snap.last_max_cwnd, 0, "CA_Loss zeroes last_max");
    // quinn can still send one packet: window = 1 x mss + 1.
    assert_eq!(clock.ctrl.window(), 1201);
    // Slow start resumes from the loss window.
    clock.run_until(ms(20_000), 1_000_000, |c| c.ctrl.cwnd_segments() >= 8);
    assert!(clock.ctrl.cwnd_segments() >= 8);
}

#[test]
fn no_growth_while_app_limited() {
    // linux-6: in slow start the socket counts as cwnd-limited while cwnd < 2 * packets_out
    // (tcp_is_cwnd_limited). 4 packets in flight at cwnd 10: not limited, no growth.
    let (ctrl, base) = build("cubic@linux-6,hystart=0", 1200, None);
    let mut clock = AckClock::new(ctrl, PathSpec::new(100, None, 1), rtt_estimator(), base);
    clock.app_limit_packets = Some(4);
    clock.run_for(ms(1_000), 1_000_000);
    assert!(clock.stats.frames >= 30);
    assert_eq!(clock.ctrl.cwnd_segments(), 10);
    // 6 in flight: 10 < 12, cwnd-limited by the kernel's rule, slow start grows.
    let (ctrl, base) = build("cubic@linux-6,hystart=0", 1200, None);
    let mut clock = AckClock::new(ctrl, PathSpec::new(100, None, 1), rtt_estimator(), base);
    clock.app_limit_packets = Some(6);
    clock.run_for(ms(450), 1_000_000);
    assert!(clock.ctrl.cwnd_segments() > 10);
}

#[test]
fn mtu_change_rescales_the_window_like_tcp_mtup_probe_success() {
    let (mut ctrl, _) = build("cubic@linux-6", 1200, None);
    assert_eq!(ctrl.window(), 10 * 1200 + 1);
    // cwnd = cwnd * old_mtu / new_mtu (tcp_mtup_probe_success): 10 * 1200 / 2400 = 5.
    ctrl.on_mtu_update(2400);
    assert_eq!(ctrl.mss(), 2400);
    assert_eq!(ctrl.cwnd_segments(), 5);
    assert_eq!(ctrl.window(), 5 * 2400 + 1);
    // A smaller segment (black-hole detection, tcp_sync_mss) keeps cwnd in segments.
    ctrl.on_mtu_update(1452);
    assert_eq!(ctrl.cwnd_segments(), 5);
    assert_eq!(ctrl.metrics().congestion_window, 5 * 1452);
    // 5 * 1452 / 9000 = 0 segments: the kernel model keeps at least one.
    ctrl.on_mtu_update(9000);
    assert_eq!(ctrl.cwnd_segments(), 1);
    assert_eq!(ctrl.window(), 9001);
}

#[test]
fn byte_remainder_is_carried_between_ack_frames() {
    let (mut ctrl, base) = build("cubic@linux-6,hystart=0", 1200, None);
    let rtt = rtt_estimator();
    let t = |v: u64| base + ms(v);
    // A full window in flight (cwnd-limited: slow start grows only while cwnd < 2 x
    // max_packets_out), four of its packets small.
    ctrl.on_sent(t(0), 600, 0);
    ctrl.on_sent(t(1), 600, 1);
    ctrl.on_sent(t(2), 1200, 2);
    ctrl.on_sent(t(3), 1000, 3);
    ctrl.on_sent(t(4), 6 * 1200, 9);
    let mut in_flight = 10_600;
    // Half a segment: no growth yet, 600 bytes carried.
    ctrl.on_ack(t(100), t(0), 600, false, &rtt);
    in_flight -= 600;
    ctrl.on_end_acks(t(100), in_flight, false, Some(0));
    assert_eq!((ctrl.cwnd_segments(), ctrl.ack_carry()), (10, 600));
    // 600 + 600 = one segment.
    ctrl.on_ack(t(101), t(1), 600, false, &rtt);
    in_flight -= 600;
    ctrl.on_end_acks(t(101), in_flight, false, Some(1));
    assert_eq!((ctrl.cwnd_segments(), ctrl.ack_carry()), (11, 0));
    // 1200 + 1000 in one frame: one segment, 1000 carried.
    ctrl.on_ack(t(102), t(2), 1200, false, &rtt);
    ctrl.on_ack(t(103), t(3), 1000, false, &rtt);
    in_flight -= 2200;
    ctrl.on_end_acks(t(103), in_flight, false, Some(3));
    assert_eq!((ctrl.cwnd_segments(), ctrl.ack_carry()), (12, 1000));
    assert_eq!(ctrl.bytes_in_flight(), 7200);
}

#[test]
fn an_ack_frame_without_ack_eliciting_packets_changes_nothing() {
    let (mut ctrl, base) = build("cubic@linux-6", 1200, None);
    ctrl.on_sent(base, 1200, 0);
    ctrl.on_end_acks(base + ms(100), 1200, false, Some(0));
    assert_eq!(ctrl.cwnd_segments(), 10);
    assert_eq!(ctrl.snapshot().delay_min_us, None);
}

#[test]
fn metrics_report_cwnd_ssthresh_and_the_kernel_pacing_rate() {
    let (mut ctrl, base) = build("cubic@linux-6,hystart=0", 1200, None);
    let m = ctrl.metrics();
    assert_eq!(
        (m.congestion_window, m.ssthresh, m.pacing_rate),
        (12_000, None, None)
    );
    let rtt = rtt_estimator();
    // A full window in flight, so that slow start may grow (cwnd < 2 x max_packets_out).
    ctrl.on_sent(base, 12_000, 9);
    ctrl.on_ack(base + ms(100), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(100), 10_800, false, Some(0));
    // cwnd 11, srtt 100 ms, slow start (ssthresh infinite): 200% of 11 x 1200 B / 0.1 s =
    // 264,000 B/s (the kernel's unit, `pacing_rate()`), reported to quinn as 2,112,000 bit/s:
    // quinn-proto 0.11 documents `ControllerMetrics::pacing_rate` as "Pacing rate (bits/s)".
    let m = ctrl.metrics();
    assert_eq!(m.congestion_window, 11 * 1200);
    assert_eq!(ctrl.pacing_rate(), Some(264_000));
    assert_eq!(m.pacing_rate, Some(2_112_000));
    // A loss: ssthresh = 11 * 717 / 1024 = 7 = cwnd.
    ctrl.on_congestion_event(base + ms(150), base, false, 0);
    let m = ctrl.metrics();
    assert_eq!(
        (m.congestion_window, m.ssthresh),
        (7 * 1200, Some(7 * 1200))
    );
    assert_eq!(ctrl.snapshot().phase, Some(Phase::Recovery));
    // Next ACK (200 ms sample): srtt = 100 + (200 - 100) / 8 = 112.5 ms; cwnd 7 is not below
    // ssthresh / 2 and 8 packets are still out: 120% of 8 x 1200 B / 0.1125 s = 102,400 B/s,
    // 819,200 bit/s.
    ctrl.on_ack(base + ms(200), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(200), 9_600, false, Some(1));
    assert_eq!(ctrl.pacing_rate(), Some(102_400));
    assert_eq!(ctrl.metrics().pacing_rate, Some(819_200));
}

#[test]
fn time_origin_is_the_build_instant_and_rtt_is_now_minus_newest_sent() {
    let (mut ctrl, base) = build("cubic@linux-6", 1200, None);
    let rtt = rtt_estimator();
    ctrl.on_sent(base + ms(5), 2400, 1);
    // Two packets in one frame: the sample is now - newest sent = 130 - 5 = 125 ms,
    // not quinn's smoothed or minimum RTT.
    ctrl.on_ack(base + ms(130), base + ms(4), 1200, false, &rtt);
    ctrl.on_ack(base + ms(130), base + ms(5), 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(130), 0, false, Some(1));
    let snap = ctrl.snapshot();
    assert_eq!(snap.delay_min_us, Some(125_000));
    assert_eq!(snap.t_us, 130_000);
}

#[test]
fn clones_share_the_observer_slot_without_duplicating_events() {
    let observer = Observer::with_settings(1, 64);
    let (mut ctrl, base) = build("cubic@linux-6,hystart=0", 1200, Some(&observer));
    let id = ctrl.id().expect("observed");
    let copy = ctrl.clone_box();
    ctrl.on_congestion_event(base + ms(10), base, false, 1200);
    drop(copy);
    let boxed: Box<dyn Controller> = Box::new(ctrl);
    drop(boxed);
    let events = observer.drain_events(id);
    assert_eq!(reductions(&events).len(), 1, "{events:?}");
    assert_eq!(observer.controllers(), vec![id]);
    assert_eq!(observer.snapshot(id).map(|s| s.cwnd), Some(7));
    assert_eq!(observer.prune(), 1);
}

#[test]
fn an_ack_frame_worth_less_than_a_segment_keeps_its_rtt_sample() {
    // The kernel counts packets (tcp_skb_pcount >= 1): an ACK of one small packet runs
    // pkts_acked with its RTT. 600 bytes at MSS 1200 are 0 segments (carried), yet the
    // 50 ms sample reaches delay_min.
    let (mut ctrl, base) = build("cubic@linux-6", 1200, None);
    let rtt = rtt_estimator();
    ctrl.on_sent(base, 600, 0);
    ctrl.on_ack(base + ms(50), base, 600, false, &rtt);
    ctrl.on_end_acks(base + ms(50), 0, false, Some(0));
    assert_eq!(ctrl.ack_carry(), 600);
    assert_eq!(ctrl.kernel().delay_min(), 50_000);
    assert_eq!(ctrl.cwnd_segments(), 10);
}

#[test]
fn a_loss_reported_after_the_frame_is_put_in_the_kernel_order() {
    // quinn calls on_end_acks, then on_congestion_event for the same frame (same `now`).
    // Reno, cwnd 21 in slow start, one packet acknowledged and a loss found:
    // linux-6 runs tcp_fastretrans_alert before tcp_cong_control: ssthresh = 21 >> 1 = 10,
    // no growth; linux-2.6.39 runs tcp_cong_avoid first: 21 -> 22, then 22 >> 1 = 11.
    for (spec, after) in [
        ("reno@linux-6,initial_cwnd=21", 10),
        ("reno@linux-2.6.39,initial_cwnd=21", 11),
    ] {
        let (mut ctrl, base) = build(spec, 1200, None);
        let rtt = rtt_estimator();
        ctrl.on_sent(base, 21 * 1200, 20);
        ctrl.on_ack(base + ms(80), base, 1200, false, &rtt);
        ctrl.on_end_acks(base + ms(80), 20 * 1200, false, Some(0));
        ctrl.on_congestion_event(base + ms(80), base, false, 1200);
        assert_eq!(ctrl.cwnd_segments(), after, "{spec}");
        assert_eq!(ctrl.snapshot().phase, Some(Phase::Recovery), "{spec}");
    }
}

#[test]
fn an_mtu_change_between_a_frames_acks_and_its_loss_report_waits_for_the_whole_ack() {
    // quinn's detect_lost_packets() reports a black hole (on_mtu_update, smaller MTU) after
    // on_end_acks and before the same frame's on_congestion_event. The kernel changes the
    // MSS between ACKs (tcp_sync_mss), never inside one ACK's congestion-control
    // processing: the frame's loss still goes into that ACK in the era's order, then the
    // segment size changes (a smaller one keeps cwnd in segments).
    // Reno, cwnd 21 in slow start, one packet acknowledged and a loss found:
    // linux-6 (tcp_fastretrans_alert first): ssthresh = 21 >> 1 = 10, no growth, cwnd 10;
    // linux-2.6.39 (tcp_cong_avoid first): 21 -> 22, then 22 >> 1 = 11.
    for (spec, after) in [
        ("reno@linux-6,initial_cwnd=21", 10),
        ("reno@linux-2.6.39,initial_cwnd=21", 11),
    ] {
        let (mut ctrl, base) = build(spec, 1200, None);
        let rtt = rtt_estimator();
        ctrl.on_sent(base, 21 * 1200, 20);
        ctrl.on_ack(base + ms(80), base, 1200, false, &rtt);
        ctrl.on_end_acks(base + ms(80), 20 * 1200, false, Some(0));
        ctrl.on_mtu_update(1000);
        ctrl.on_congestion_event(base + ms(80), base, false, 1200);
        assert_eq!(ctrl.cwnd_segments(), after, "{spec}");
        assert_eq!(ctrl.snapshot().ssthresh, Some(after), "{spec}");
        assert_eq!(ctrl.mss(), 1000, "{spec}");
        assert_eq!(ctrl.window(), u64::from(after) * 1000 + 1, "{spec}");
        assert_eq!(ctrl.snapshot().phase, Some(Phase::Recovery), "{spec}");
    }
    // A larger MTU reported there (tcp_mtup_probe_success's rescale) also waits for the
    // ACK: linux-6 Reno cwnd 21 -> loss 10 -> 10 * 1200 / 2400 = 5 segments, ssthresh
    // tcp_current_ssthresh() = 10 (in Recovery: ssthresh).
    let (mut ctrl, base) = build("reno@linux-6,initial_cwnd=21", 1200, None);
    let rtt = rtt_estimator();
    ctrl.on_sent(base, 21 * 1200, 20);
    ctrl.on_ack(base + ms(80), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(80), 20 * 1200, false, Some(0));
    ctrl.on_mtu_update(2400);
    ctrl.on_congestion_event(base + ms(80), base, false, 1200);
    assert_eq!(ctrl.cwnd_segments(), 5);
    assert_eq!(ctrl.snapshot().ssthresh, Some(10));
    assert_eq!(ctrl.mss(), 2400);
    // Without a loss report the change applies at the frame's next callback.
    let (mut ctrl, base) = build("reno@linux-6,initial_cwnd=21", 1200, None);
    ctrl.on_sent(base, 21 * 1200, 20);
    ctrl.on_ack(base + ms(80), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(80), 20 * 1200, false, Some(0));
    ctrl.on_mtu_update(1000);
    assert_eq!(ctrl.cwnd_segments(), 22);
    ctrl.on_sent(base + ms(81), 1000, 21);
    assert_eq!(ctrl.mss(), 1000);
    assert_eq!(ctrl.cwnd_segments(), 22);
    assert_eq!(ctrl.window(), 22 * 1000 + 1);
}

#[test]
fn the_handshake_grows_nothing_and_the_first_round_starts_at_the_first_data_ack() {
    // The kernel runs tcp_init_congestion_control() once the connection is established: the
    // SYN's ACK grows no window and takes no HyStart round. quinn calls the controller for
    // the Initial space too; the callbacks below are what quinn-proto 0.11 gives a client.
    let (mut ctrl, base) = build("cubic@linux-2.6.39", 1200, None);
    let rtt = rtt_estimator();
    let iw = ctrl.cwnd_segments();
    assert_eq!(iw, 10);
    // Initial packet 0, acknowledged after 100 ms (the Initial space's ACK frame).
    ctrl.on_sent(base, 1200, 0);
    ctrl.on_ack(base + ms(100), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(100), 0, false, Some(0));
    // The first datagram of the 1-RTT space is numbered 0 again: established here.
    ctrl.on_sent(base + ms(100), 1200, 0);
    assert_eq!(ctrl.cwnd_segments(), iw);
    assert_eq!(ctrl.snapshot().hystart_end_seq, 0);
    for pn in 1..10 {
        ctrl.on_sent(base + ms(100), 1200, pn);
    }
    // An ACK frame of the handshake's packets arriving late is not the model's.
    ctrl.on_ack(base + ms(150), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(150), 12_000, false, Some(0));
    assert_eq!(ctrl.cwnd_segments(), iw);
    assert_eq!(ctrl.snapshot().hystart_end_seq, 0);
    // The first 1-RTT ACK: after(ack, end_seq) in 2.6.39's bictcp_cong_avoid() starts the
    // first round there, ending at snd_nxt = 10, and slow start adds one segment.
    ctrl.on_ack(base + ms(200), base + ms(100), 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(200), 10_800, false, Some(0));
    let snap = ctrl.snapshot();
    assert_eq!((snap.cwnd, snap.hystart_end_seq), (iw + 1, 10));
    // The round ends when the first packet sent after its start is acknowledged.
    for pn in 10..12 {
        ctrl.on_sent(base + ms(200), 1200, pn);
    }
    for (pn, end) in [(9_u64, 10_u64), (10, 12)] {
        ctrl.on_ack(base + ms(300), base + ms(200), 1200, false, &rtt);
        ctrl.on_end_acks(base + ms(300), 10_800, false, Some(pn));
        assert_eq!(
            ctrl.snapshot().hystart_end_seq,
            end,
            "after the ACK of {pn}"
        );
    }
}

#[test]
fn without_a_handshake_the_first_ack_is_data() {
    // A caller driving the callbacks from packet 0 without a handshake (as the tests above
    // do) is never re-initialised: its first ACK is the first data ACK.
    let (mut ctrl, base) = build("cubic@linux-2.6.39", 1200, None);
    let rtt = rtt_estimator();
    for pn in 0..10 {
        ctrl.on_sent(base, 1200, pn);
    }
    ctrl.on_ack(base + ms(100), base, 1200, false, &rtt);
    ctrl.on_end_acks(base + ms(100), 10_800, false, Some(0));
    let snap = ctrl.snapshot();
    assert_eq!((snap.cwnd, snap.hystart_end_seq), (11, 10));
}

#[test]
fn a_packet_smaller_than_a_segment_counts_as_one_in_flight_before_its_ack() {
    // quinn puts the first 1-RTT packet in the datagram that carries the handshake's last
    // packets, so its bytes are less than a segment (8,802 of 8,952 here). The kernel's
    // prior_in_flight counts packets: both packets of the initial window were in flight, so
    // 2.6.20 Reno is cwnd-limited on the first ACK and slow start adds one segment per ACK,
    // 2 -> 3 -> 4 (before, 8,802 bytes counted as 0 segments and the first ACK grew nothing).
    let (mut ctrl, base) = build("reno@linux-2.6.20", 8952, None);
    let rtt = rtt_estimator();
    assert_eq!(ctrl.cwnd_segments(), 2);
    ctrl.on_sent(base, 8802, 0);
    ctrl.on_sent(base, 8952, 1);
    ctrl.on_ack(base + ms(80), base, 8802, false, &rtt);
    ctrl.on_end_acks(base + ms(80), 8952, false, Some(0));
    assert_eq!((ctrl.cwnd_segments(), ctrl.ack_carry()), (3, 8802));
    // cwnd 3: the sender fills it (packets 2 and 3), then packet 1's ACK.
    ctrl.on_sent(base + ms(80), 2 * 8952, 3);
    ctrl.on_ack(base + ms(80), base, 8952, false, &rtt);
    ctrl.on_end_acks(base + ms(80), 2 * 8952, false, Some(1));
    assert_eq!(ctrl.cwnd_segments(), 4);
}
