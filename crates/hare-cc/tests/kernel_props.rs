//! Property tests of the kernel model itself (the quinn-level ones are in `quinn_props.rs`):
//! arbitrary event sequences on every profile and algorithm never panic, cwnd stays at least
//! one segment, and without losses (and MSS increases) cwnd never decreases.

use hare_cc::engine::{AckEvent, KernelCc};
use hare_cc::{Algorithm, Profile};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

#[derive(Debug, Clone)]
enum Step {
    Send { dt: u32, n: u32 },
    Ack { dt: u32, n: u32, rtt: u32 },
    Loss { ecn: bool },
    RecoveryEnd,
    Rto,
    Mss(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u32..200_000, 1u32..5_000).prop_map(|(dt, n)| Step::Send { dt, n }),
        8 => (0u32..200_000, 1u32..5_000, 0u32..2_000_000)
            .prop_map(|(dt, n, rtt)| Step::Ack { dt, n, rtt }),
        1 => any::<bool>().prop_map(|ecn| Step::Loss { ecn }),
        1 => Just(Step::RecoveryEnd),
        1 => Just(Step::Rto),
        1 => (1_200u32..=65_527).prop_map(Step::Mss),
    ]
}

fn setup() -> impl Strategy<Value = (usize, usize, bool, Vec<(usize, u32)>)> {
    (
        0..Profile::NAMES.len(),
        0usize..3,
        any::<bool>(),
        // A few overrides: slow-start strategy, HZ, uptime (incl. the jiffies wrap).
        proptest::collection::vec((0usize..5, any::<u32>()), 0..4),
    )
}

fn build(name: usize, alg: usize, paced: bool, overrides: &[(usize, u32)]) -> KernelCc {
    let mut p = Profile::named(Profile::NAMES[name]).expect("named");
    for (k, v) in overrides {
        let _ = match k {
            0 => p.set(
                "slow_start",
                ["standard", "hystart", "hystart++", "limited"][*v as usize % 4],
            ),
            1 => p.set("hz", ["100", "250", "1000"][*v as usize % 3]),
            2 => p.set("uptime_ms", &(u64::from(*v) * 17).to_string()),
            3 => p.set("max_ssthresh", &(v % 1000).to_string()),
            // Windows up to 2^30 segments (beyond 2^40 bytes at 1200-byte segments).
            _ => p.set("initial_cwnd", &(v >> 2).to_string()),
        };
    }
    let alg = [Algorithm::Cubic, Algorithm::Bic, Algorithm::Reno][alg];
    KernelCc::new(alg, &p, paced, 1200)
}

/// Runs the steps; with `lossless` only sends and ACKs are applied.
fn run(cc: &mut KernelCc, steps: &[Step], lossless: bool) -> Result<(), TestCaseError> {
    let mut now: u64 = 0;
    let mut next_pn: u64 = 0;
    let mut acked_pn: u64 = 0;
    let mut in_flight: u32 = 0;
    for s in steps {
        let before = cc.cwnd();
        let mut may_shrink = false;
        match *s {
            Step::Send { dt, n } => {
                now += u64::from(dt);
                next_pn += u64::from(n);
                in_flight = in_flight.saturating_add(n);
                cc.on_sent(now, next_pn, in_flight);
            }
            Step::Ack { dt, n, rtt } => {
                // 2.6.x moderates cwnd to in_flight + reordering on ACKs in TCP_CA_Loss.
                may_shrink = cc.tcp_sock().ca_state() == hare_cc::hooks::CaState::Loss;
                now += u64::from(dt);
                let n = n.min(in_flight);
                in_flight -= n;
                acked_pn = (acked_pn + u64::from(n)).min(next_pn);
                cc.on_ack(&AckEvent {
                    now_us: now,
                    acked_pkts: n,
                    rtt_us: Some(u64::from(rtt)),
                    largest_acked: acked_pn.checked_sub(1),
                    packets_in_flight: in_flight,
                    ..Default::default()
                });
            }
            _ if lossless => {}
            Step::Loss { ecn } => {
                cc.on_congestion(now, ecn);
                may_shrink = true;
            }
            Step::RecoveryEnd => cc.on_recovery_end(now),
            Step::Rto => {
                cc.on_rto(now);
                may_shrink = true;
            }
            Step::Mss(m) => {
                cc.on_mss_change(now, m);
                may_shrink = true;
            }
        }
        prop_assert!(cc.cwnd() >= 1);
        if !may_shrink {
            prop_assert!(
                cc.cwnd() >= before,
                "cwnd fell {} -> {} on {:?}",
                before,
                cc.cwnd(),
                s
            );
        }
        let _ = cc.drain_events().count();
        let snap = cc.snapshot();
        prop_assert_eq!(snap.cwnd, cc.cwnd());
    }
    Ok(())
}

fn config() -> Config {
    Config {
        cases: 256,
        rng_seed: RngSeed::Fixed(0x6861_7265),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_sequences_never_panic((name, alg, paced, ov) in setup(),
                                       steps in proptest::collection::vec(step(), 1..200)) {
        let mut cc = build(name, alg, paced, &ov);
        run(&mut cc, &steps, false)?;
    }

    #[test]
    fn without_losses_cwnd_never_decreases((name, alg, paced, ov) in setup(),
                                           steps in proptest::collection::vec(step(), 1..200)) {
        let mut cc = build(name, alg, paced, &ov);
        run(&mut cc, &steps, true)?;
    }
}
