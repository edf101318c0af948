//! Kernel-level behaviour of slow start and window growth, on the scripted ACK clock.

mod kernel_support;

use hare_cc::{Algorithm, CcEvent, ExitReason};
use kernel_support::{profile, Driver, PathCfg};

const RTT: u64 = 80_000;

/// cwnd just after the ACKs of round `n` (they all arrive at `n * RTT` without a bottleneck).
fn cwnd_by_round(d: &Driver, rounds: u32, initial: u32) -> Vec<u32> {
    (1..=rounds)
        .map(|n| d.cwnd_at(u64::from(n) * RTT + 1, initial))
        .collect()
}

#[test]
fn standard_slow_start_doubles_per_rtt() {
    // linux-6 counts packets: one ACK per packet or per two packets, cwnd doubles per RTT.
    for ack_every in [1, 2] {
        let p = profile("linux-6", &[("hystart", "0")]);
        let mut d = Driver::new(Algorithm::Cubic, &p, true, PathCfg::new(RTT, ack_every));
        assert!(!d.run_until(6 * RTT + 10, |_| false));
        assert_eq!(
            cwnd_by_round(&d, 6, 10),
            vec![20, 40, 80, 160, 320, 640],
            "ack every {ack_every}"
        );
    }
}

#[test]
fn old_per_ack_slow_start_grows_1_5x_with_delayed_acks() {
    // 2.6.26: +1 per ACK (ABC off): an ACK every packet doubles, every 2nd packet gives 1.5x
    // (the odd packet of a flight is ACKed by the 40 ms delayed-ACK timer, half an RTT later).
    let p = profile("linux-2.6.26", &[("initial_cwnd", "10")]);
    let mut d = Driver::new(Algorithm::Cubic, &p, false, PathCfg::new(RTT, 1));
    d.run_until(5 * RTT + 10, |_| false);
    assert_eq!(cwnd_by_round(&d, 5, 10), vec![20, 40, 80, 160, 320]);

    let mut d = Driver::new(Algorithm::Cubic, &p, false, PathCfg::new(RTT, 2));
    d.run_until(8 * RTT + 10, |_| false);
    let w = cwnd_by_round(&d, 8, 10);
    assert_eq!(w, vec![15, 22, 33, 50, 75, 112, 168, 252]);
    for pair in w.windows(2).skip(2) {
        let ratio = f64::from(pair[1]) / f64::from(pair[0]);
        assert!((1.45..=1.55).contains(&ratio), "{w:?}");
    }
}

/// The thread's path: 10 Gbit/s, 80 ms, 9000-byte MTU (a 8948-byte segment with timestamps).
fn ten_gig(ack_every: u32) -> PathCfg {
    PathCfg {
        rate_pps: Some(10_000_000_000 / (9000 * 8)),
        mss: 8948,
        ..PathCfg::new(RTT, ack_every)
    }
}

/// RTTs (rounded to the nearest) between the first ACK at cwnd >= `from` and >= `to`.
fn rtts_between(d: &Driver, from: u32, to: u32) -> u64 {
    let a = d.first_time_cwnd_at_least(from).expect("reached from");
    let b = d.first_time_cwnd_at_least(to).expect("reached to");
    (b - a + RTT / 2) / RTT
}

#[test]
fn linux_2_6_20_cubic_leaves_slow_start_at_100_then_grows_2_percent() {
    let p = profile("linux-2.6.20", &[]);
    let mut d = Driver::new(Algorithm::Cubic, &p, false, ten_gig(2));
    assert!(d.run_until(60_000_000, |d| d.cc.cwnd() >= 8000));
    // Slow start while cwnd <= 100: the first congestion-avoidance window is 101.
    let exit = d
        .events
        .iter()
        .find_map(|e| match e {
            CcEvent::SlowStartExit { cwnd, reason, .. } => Some((*cwnd, *reason)),
            _ => None,
        })
        .expect("slow start ended");
    assert_eq!(exit, (101, ExitReason::SsthreshReached));
    // cnt = 50 scaled by delayed_ack = 32 (2 packets per ACK): 25 -> +1 every 26 ACKs,
    // i.e. cwnd / 52 per RTT (1.92%).
    if let hare_cc::engine::CcModule::Cubic(c) = d.cc.module() {
        assert_eq!(c.delayed_ack(), 32);
        assert_eq!(c.cnt(), 25);
    }
    let n = rtts_between(&d, 101, 8000);
    println!("2.6.20 cubic, ACK every 2nd packet: {n} RTTs");
    assert_eq!(n, 230);

    // An ACK per packet: the EWMA settles at 31, cnt = 800 / 31 = 25, +1 every 26 packets.
    let mut d = Driver::new(Algorithm::Cubic, &p, false, ten_gig(1));
    assert!(d.run_until(60_000_000, |d| d.cc.cwnd() >= 8000));
    if let hare_cc::engine::CcModule::Cubic(c) = d.cc.module() {
        assert_eq!(c.delayed_ack(), 31);
        assert_eq!(c.cnt(), 25);
    }
    let n = rtts_between(&d, 101, 8000);
    let a = d.first_time_cwnd_at_least(101).unwrap_or(0);
    let b = d.first_time_cwnd_at_least(8000).unwrap_or(0);
    println!("2.6.20 cubic, ACK every packet: {n} RTTs ({} us)", b - a);
    // docs/KERNEL-NOTES.md fact 15 estimates 116 RTTs (9.3 s) from ln(8000/101) / ln(27/26) = 115.9.
    // The model takes 9.32 s = 116.5 RTTs (reported as 117): the +1 steps land on discrete
    // ACKs, and on this 10 Gbit/s path the 101 and 8000 crossings fall at different points of
    // their flights (a flight of 8000 packets lasts 58 ms of the 80 ms RTT).
    assert_eq!(n, 117);
    assert!((9_250_000..=9_400_000).contains(&(b - a)), "{}", b - a);
}

#[test]
fn linux_2_6_20_bic_grows_12_to_16_per_rtt_then_1_in_22() {
    let p = profile("linux-2.6.20", &[]);
    let mut d = Driver::new(Algorithm::Bic, &p, false, ten_gig(2));
    assert!(d.run_until(60_000_000, |d| d.cc.cwnd() >= 8000));
    // Per-RTT increase just after slow start and in the capped region.
    let t101 = d.first_time_cwnd_at_least(101).expect("101");
    let w0 = d.cwnd_at(t101 + RTT / 2, 0);
    let w1 = d.cwnd_at(t101 + RTT / 2 + RTT, 0);
    println!("bic: {w0} -> {w1}");
    assert!((12..=16).contains(&(w1 - w0)), "{w0} -> {w1}");
    let t2000 = d.first_time_cwnd_at_least(2000).expect("2000");
    let a = d.cwnd_at(t2000 + RTT / 2, 0);
    let b = d.cwnd_at(t2000 + RTT / 2 + 10 * RTT, 0);
    let per_rtt = (f64::from(b) / f64::from(a)).powf(0.1) - 1.0;
    assert!((per_rtt - 1.0 / 22.0).abs() < 0.003, "{per_rtt}");
    let n = rtts_between(&d, 101, 8000);
    println!("2.6.20 bic: {n} RTTs");
    assert_eq!(n, 88);
}
