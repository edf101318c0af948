//! Slow-start behaviour through quinn's `Controller` trait, driven by the scripted ACK clock
//! (tests/quinn_support/clock.rs) with a real `RttEstimator` captured from quinn-proto.

mod quinn_support;

use std::time::{Duration, Instant};

use hare_cc::{
    CcEvent, CcSpec, ControllerId, ExitReason, HareController, Observer, Phase, Snapshot,
};
use quinn_support::clock::{AckClock, PathSpec};
use quinn_support::pair::rtt_estimator;

/// A hare controller under the ACK clock, with its events collected.
struct Run {
    clock: AckClock<HareController>,
    observer: Observer,
    id: ControllerId,
    events: Vec<CcEvent>,
}

impl Run {
    fn new(spec: &str, path: PathSpec) -> Self {
        let spec: CcSpec = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
        let observer = Observer::with_settings(1, 1 << 20);
        let factory = spec
            .hare_factory()
            .expect("a hare spec")
            .with_observer(observer.clone());
        let base = Instant::now();
        let ctrl = factory.build_controller(base, path.mtu);
        let id = ctrl.id().expect("observed");
        let mut clock = AckClock::new(ctrl, path, rtt_estimator(), base);
        clock.fill();
        Self {
            clock,
            observer,
            id,
            events: Vec::new(),
        }
    }

    fn step(&mut self) -> bool {
        let more = self.clock.step();
        self.events.extend(self.observer.drain_events(self.id));
        more
    }

    /// Process every event up to and including time `t`.
    fn run_to(&mut self, t: Duration) {
        for _ in 0..5_000_000 {
            if self.clock.next_event_time().is_none_or(|next| next > t) {
                break;
            }
            self.step();
        }
    }

    fn snap(&self) -> Snapshot {
        self.clock.ctrl.snapshot()
    }

    fn cwnd(&self) -> u32 {
        self.clock.ctrl.cwnd_segments()
    }

    fn exits(&self) -> Vec<(u32, ExitReason)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                CcEvent::SlowStartExit { cwnd, reason, .. } => Some((*cwnd, *reason)),
                _ => None,
            })
            .collect()
    }
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn standard_slow_start_doubles_per_rtt() {
    for ack_every in [1, 2] {
        // Unlimited bandwidth: each round's ACKs all arrive one RTT after its sends.
        let mut run = Run::new(
            "cubic@linux-6,hystart=0",
            PathSpec::new(100, None, ack_every),
        );
        assert_eq!(run.cwnd(), 10, "IW10 (RFC 6928) in linux-6");
        for round in 1..=6_u32 {
            run.run_to(ms(100) * round + ms(1));
            assert_eq!(
                run.cwnd(),
                10 << round,
                "ack_every {ack_every}, after round {round}"
            );
        }
        assert!(run.exits().is_empty());
        assert_eq!(run.snap().phase, Some(Phase::SlowStart));
    }
}

#[test]
fn old_slow_start_counts_acks_not_packets() {
    // 2.6.20 adds one segment per ACK (no ABC): with an ACK every 2nd packet slow start grows
    // by half per RTT. hystart does not exist; lift the 100-segment clamp.
    let mut run = Run::new(
        "cubic@linux-2.6.20,initial_ssthresh=0",
        PathSpec::new(100, None, 2),
    );
    let iw = run.cwnd();
    run.run_to(ms(101));
    // iw/2 full ACK frames; an odd last packet waits for the 25 ms delayed-ACK timer.
    assert_eq!(run.cwnd(), iw + iw / 2, "iw {iw}");
}

#[test]
fn linux_2_6_20_cubic_leaves_slow_start_at_100_then_grows_two_percent_per_rtt() {
    // 80 ms, a bottleneck far above the window (no queue), delayed ACKs (every 2nd packet).
    let mut run = Run::new("cubic@linux-2.6.20", PathSpec::new(80, Some(100_000), 2));
    let mut t = ms(80);
    for _ in 0..40 {
        if !run.exits().is_empty() {
            break;
        }
        run.run_to(t);
        t += ms(80);
    }
    let exits = run.exits();
    assert_eq!(exits.len(), 1, "{exits:?}");
    let (exit_cwnd, reason) = exits[0];
    assert_eq!(reason, ExitReason::SsthreshReached);
    assert!((100..=101).contains(&exit_cwnd), "exit at {exit_cwnd}");
    assert_eq!(run.snap().ssthresh, Some(100));

    // Before any loss cnt = 50, scaled by delayed_ack (32 = 2 packets/ACK) to 25, and the
    // pre-2.6.30 AI step adds 1 every cnt+1 = 26 ACKs = 52 packets: 1/52 = 1.92% per RTT
    // (docs/KERNEL-NOTES.md fact 15).
    run.run_to(t + ms(80));
    let start = run.cwnd();
    let rtts = 40_u32;
    run.run_to(t + ms(80) * (rtts + 1));
    let end = run.cwnd();
    let per_rtt = (f64::from(end) / f64::from(start)).powf(1.0 / f64::from(rtts)) - 1.0;
    assert!(
        (0.017..=0.021).contains(&per_rtt),
        "{start} -> {end} in {rtts} RTTs = {:.3}% per RTT",
        per_rtt * 100.0
    );
    assert_eq!(run.snap().phase, Some(Phase::CongestionAvoidance));
    assert_eq!(run.snap().reductions, 0);
}

#[test]
fn linux_2_6_20_bic_grows_up_to_16_per_rtt_then_hits_its_pre_loss_cap() {
    let mut run = Run::new("bic@linux-2.6.20", PathSpec::new(80, Some(100_000), 2));
    let mut t = ms(80);
    while run.exits().is_empty() && t < ms(80 * 40) {
        run.run_to(t);
        t += ms(80);
    }
    assert_eq!(
        run.exits().first().map(|e| e.1),
        Some(ExitReason::SsthreshReached)
    );
    // docs/KERNEL-NOTES.md fact 16: with last_max = 0 and delayed ACKs the increase per RTT is
    // 16*cwnd/(cwnd+32): +12 at 101 growing to +15 below 336 (max_increment = 16 is the
    // limit), then the cap cnt <= 20 gives 1/22 = 4.55% per RTT.
    let mut prev = run.cwnd();
    let mut saw_capped = false;
    for _ in 0..60 {
        run.run_to(t);
        t += ms(80);
        let now = run.cwnd();
        let inc = now - prev;
        if (120..320).contains(&prev) {
            assert!((11..=16).contains(&inc), "BIC +{inc} at cwnd {prev}");
        }
        if prev >= 400 {
            saw_capped = true;
            let pct = f64::from(inc) / f64::from(prev);
            assert!(
                (0.038..=0.052).contains(&pct),
                "capped growth {pct} at {prev}"
            );
        }
        prev = now;
        if prev > 700 {
            break;
        }
    }
    assert!(saw_capped, "reached the capped region (cwnd {prev})");
}

#[test]
fn hystart_delay_fires_on_the_ninth_sample_of_a_slow_round_and_not_before() {
    for (extra_ms, should_fire) in [(20_u64, true), (9, false)] {
        // Delay detection only; 80 ms base RTT -> threshold 80 + clamp(80/8, 4, 16) = 90 ms.
        let mut run = Run::new("cubic@linux-6,hystart_detect=2", PathSpec::new(80, None, 1));
        let mut last_end_seq = run.snap().hystart_end_seq;
        let mut raised_at_round: Option<u32> = None;
        let mut round = 0_u32;
        let mut frames_in_round = 0_u32;
        let mut exit_frame = None;
        let mut cnt_before_exit = None;
        for _ in 0..200_000 {
            let frames_before = run.clock.stats.frames;
            let before = run.snap();
            if !run.step() {
                break;
            }
            if run.clock.stats.frames == frames_before {
                continue;
            }
            let snap = run.snap();
            if snap.hystart_end_seq != last_end_seq {
                last_end_seq = snap.hystart_end_seq;
                round += 1;
                frames_in_round = 0;
                if raised_at_round.is_none() && snap.cwnd >= 32 {
                    // Every ACK of a packet sent from now on comes back `extra` later.
                    run.clock.extra_delay = Some((snap.hystart_end_seq, ms(extra_ms)));
                    raised_at_round = Some(round);
                }
            }
            frames_in_round += 1;
            if !run.exits().is_empty() {
                exit_frame = Some((round, frames_in_round));
                cnt_before_exit = Some(before.hystart_sample_cnt);
                break;
            }
            if snap.cwnd > 2_000 {
                break;
            }
        }
        let raised = raised_at_round.expect("reached cwnd 32");
        if should_fire {
            assert_eq!(run.exits()[0].1, ExitReason::Delay);
            // The round after the raise is the first whose every sample is slow; its
            // minimum exceeds the threshold from the 9th sample (8 samples counted first).
            assert_eq!(exit_frame, Some((raised + 1, 9)), "exit (round, frame)");
            assert_eq!(cnt_before_exit, Some(8));
            let snap = run.snap();
            assert_eq!(snap.ssthresh, Some(snap.cwnd));
            assert_eq!(snap.delay_min_us, Some(80_000));
        } else {
            assert!(run.exits().is_empty(), "89 ms < 90 ms: {:?}", run.exits());
            assert!(round >= raised + 4);
        }
    }
}

/// Run an unpaced or paced sender on an 80 ms path with the given BDP, ACK train test only.
fn ack_train_exit(paced: &str, bdp: u64) -> (Vec<(u32, ExitReason)>, Snapshot) {
    let mut run = Run::new(
        &format!("cubic@linux-6,hystart_detect=1,paced={paced}"),
        PathSpec::new(80, Some(bdp), 1),
    );
    run.run_until_exit_or(ms(80 * 30));
    (run.exits(), run.snap())
}

impl Run {
    fn run_until_exit_or(&mut self, limit: Duration) {
        for _ in 0..5_000_000 {
            if !self.exits().is_empty() || self.clock.now > limit || !self.step() {
                break;
            }
        }
    }
}

#[test]
fn hystart_ack_train_fires_on_a_long_enough_unpaced_train() {
    // 400-packet BDP at 80 ms: ACKs 0.2 ms apart (< 2 ms), so every round is one train. The
    // unpaced threshold is (delay_min + ack_delay) / 2 ~ 40 ms ~ 200 ACKs: the exit comes
    // in the first round whose train is longer, i.e. between BDP/2 and BDP segments of
    // cwnd; a paced sender needs the whole delay_min (twice the train).
    let (exits, snap) = ack_train_exit("no", 400);
    assert_eq!(exits.len(), 1);
    let (unpaced_exit, reason) = exits[0];
    assert_eq!(reason, ExitReason::AckTrain);
    assert!(
        (200..=800).contains(&unpaced_exit),
        "unpaced exit at {unpaced_exit}"
    );
    assert_eq!(snap.ssthresh, Some(unpaced_exit));

    let (exits, _) = ack_train_exit("yes", 400);
    let (paced_exit, reason) = exits[0];
    assert_eq!(reason, ExitReason::AckTrain);
    assert!(
        paced_exit > unpaced_exit,
        "paced {paced_exit} vs unpaced {unpaced_exit}"
    );
}

#[test]
fn hystart_ack_train_does_not_fire_when_acks_are_spread() {
    // 20-packet BDP at 80 ms: ACKs 4 ms apart, beyond hystart_ack_delta (2 ms): no train.
    let (exits, snap) = ack_train_exit("no", 20);
    assert!(exits.is_empty(), "{exits:?}");
    assert_eq!(snap.phase, Some(Phase::SlowStart));
    assert!(snap.cwnd > 400, "slow start went on: {}", snap.cwnd);
}

#[test]
fn hystart_plus_plus_enters_css_and_ca_after_five_rounds() {
    let mut run = Run::new(
        "cubic@linux-6,slow_start=hystart++",
        PathSpec::new(80, None, 1),
    );
    let mut raised = false;
    for _ in 0..500_000 {
        if !run.step() || run.exits().iter().any(|e| e.1 == ExitReason::CssDone) {
            break;
        }
        if !raised && run.cwnd() >= 32 {
            run.clock.extra_delay = Some((run.clock.next_pn, ms(20)));
            raised = true;
        }
    }
    let css: Vec<_> = run
        .events
        .iter()
        .filter(|e| matches!(e, CcEvent::CssEntered { .. }))
        .collect();
    assert_eq!(css.len(), 1, "{:?}", run.events);
    assert_eq!(run.exits().len(), 1, "{:?}", run.events);
    assert_eq!(run.exits()[0].1, ExitReason::CssDone);
    assert_eq!(run.snap().phase, Some(Phase::CongestionAvoidance));
    // CSS grows at 1/4 of slow start: from entry to exit cwnd grows, but far less than the
    // 2^5 = 32x five slow-start rounds would give.
    let (entry, entry_t) = match css[0] {
        CcEvent::CssEntered { cwnd, t_us } => (*cwnd, *t_us),
        _ => unreachable!(),
    };
    let exit = run.exits()[0].0;
    assert!(exit > entry && exit < entry * 4, "css {entry} -> {exit}");
    // CSS_ROUNDS = 5 rounds of the (raised) 100 ms RTT; the entry round is partly spent.
    let exit_t = run.snap().exit_t_us.expect("exit time");
    let css_ms = (exit_t - entry_t) / 1000;
    assert!((400..=600).contains(&css_ms), "CSS lasted {css_ms} ms");
}

#[test]
fn hystart_plus_plus_returns_to_slow_start_when_the_rtt_falls() {
    let mut run = Run::new(
        "cubic@linux-6,slow_start=hystart++",
        PathSpec::new(80, None, 1),
    );
    let mut raised = false;
    let mut lowered = false;
    for _ in 0..500_000 {
        if !run.step() {
            break;
        }
        if !raised && run.cwnd() >= 32 {
            run.clock.extra_delay = Some((run.clock.next_pn, ms(20)));
            raised = true;
        }
        let in_css = run
            .events
            .iter()
            .any(|e| matches!(e, CcEvent::CssEntered { .. }));
        if in_css && !lowered {
            // Packets sent from now on come back at the base RTT again.
            run.clock.extra_delay = Some((u64::MAX, ms(0)));
            lowered = true;
        }
        if run
            .events
            .iter()
            .any(|e| matches!(e, CcEvent::CssAborted { .. }))
        {
            break;
        }
    }
    assert!(lowered, "{:?}", run.events);
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, CcEvent::CssAborted { .. })),
        "{:?}",
        run.events
    );
    assert_eq!(run.snap().phase, Some(Phase::SlowStart));
    assert!(run.exits().is_empty());
}
