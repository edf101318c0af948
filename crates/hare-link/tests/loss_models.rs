//! Loss models at their configured rates for fixed seeds, blackouts and episodes exactly.

use hare_link::{BitRate, DropReason, Link, LinkConfig, LossModel, TimeSpan, Verdict};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// A fast link with no queue limit, so only the loss models drop.
fn lossy(models: Vec<LossModel>, seed: u64) -> Link {
    let mut cfg = LinkConfig::new(BitRate(100_000_000_000), TimeSpan(MS));
    cfg.loss = models;
    cfg.seed = seed;
    Link::new(&cfg).expect("valid config")
}

/// Offers `n` packets 1 us apart (the 100 Gbit/s link never queues them); returns the verdicts.
fn run(link: &mut Link, n: u64) -> Vec<Verdict> {
    (0..n).map(|i| link.offer(i * 1_000, 1200)).collect()
}

fn dropped(v: &[Verdict]) -> u64 {
    v.iter()
        .filter(|v| matches!(v, Verdict::Dropped(_)))
        .count() as u64
}

#[test]
fn bernoulli_rate_within_five_sigma() {
    let n = 1_000_000u64;
    let p = 0.01;
    for seed in [1, 2, 3] {
        let mut l = lossy(vec![LossModel::Bernoulli { p }], seed);
        let lost = dropped(&run(&mut l, n));
        let mean = n as f64 * p;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (lost as f64 - mean).abs() < 5.0 * sigma,
            "seed {seed}: {lost} lost, expected {mean} +- {}",
            5.0 * sigma
        );
        assert_eq!(l.stats().dropped.loss, lost);
    }
}

#[test]
fn bernoulli_extremes_are_exact() {
    let mut never = lossy(vec![LossModel::Bernoulli { p: 0.0 }], 9);
    assert_eq!(dropped(&run(&mut never, 100_000)), 0);
    let mut always = lossy(vec![LossModel::Bernoulli { p: 1.0 }], 9);
    assert_eq!(dropped(&run(&mut always, 100_000)), 100_000);
}

#[test]
fn gilbert_elliott_stationary_rate_and_burst_length() {
    let (g2b, b2g) = (0.01, 0.1);
    let (loss_good, loss_bad) = (0.001, 0.5);
    let n = 1_000_000u64;
    let mut l = lossy(
        vec![LossModel::GilbertElliott {
            p_good_to_bad: g2b,
            p_bad_to_good: b2g,
            loss_good,
            loss_bad,
        }],
        42,
    );
    let lost = dropped(&run(&mut l, n));
    let pi_bad = g2b / (g2b + b2g);
    let rate = (1.0 - pi_bad) * loss_good + pi_bad * loss_bad;
    // Losses are correlated through the chain: the variance of the count grows by about
    // (1 + lambda) / (1 - lambda), lambda = 1 - g2b - b2g the chain's second eigenvalue, on top
    // of the state-conditional binomial part. A generous bound of 5 sigma of that.
    let lambda = 1.0 - g2b - b2g;
    let state_var =
        n as f64 * pi_bad * (1.0 - pi_bad) * (loss_bad - loss_good).powi(2) * (1.0 + lambda)
            / (1.0 - lambda);
    let binom_var = n as f64 * rate * (1.0 - rate);
    let sigma = (state_var + binom_var).sqrt();
    let mean = n as f64 * rate;
    assert!(
        (lost as f64 - mean).abs() < 5.0 * sigma,
        "{lost} lost, expected {mean} +- {}",
        5.0 * sigma
    );
}

#[test]
fn gilbert_elliott_bursts_have_mean_length() {
    // Pure Gilbert: every packet in the bad state is lost, none in the good one, so loss
    // bursts are sojourns in the bad state: geometric with mean 1 / p_bad_to_good = 4.
    let mut l = lossy(
        vec![LossModel::GilbertElliott {
            p_good_to_bad: 0.005,
            p_bad_to_good: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        }],
        7,
    );
    let v = run(&mut l, 1_000_000);
    let mut bursts = 0u64;
    let mut in_burst = false;
    for x in &v {
        let lost = matches!(x, Verdict::Dropped(_));
        if lost && !in_burst {
            bursts += 1;
        }
        in_burst = lost;
    }
    let lost = dropped(&v);
    let mean_burst = lost as f64 / bursts as f64;
    // About 4900 bursts: the standard error of the mean length is sqrt(12)/70 = 0.05.
    assert!((mean_burst - 4.0).abs() < 0.25, "mean burst {mean_burst}");
    let expected = 1_000_000.0 * 0.005 / 0.255;
    assert!(
        (lost as f64 - expected).abs() < 0.1 * expected,
        "{lost} vs {expected}"
    );
}

#[test]
fn counted_episode_drops_exactly_every_nth_inside() {
    // "1 in 100 from 20 ms to 30 ms": packets every 1 us, so 10000 inside, 100 dropped.
    let mut l = lossy(
        vec![LossModel::Episode {
            from: TimeSpan(20 * MS),
            to: TimeSpan(30 * MS),
            one_in: 100,
            random: false,
        }],
        0,
    );
    let v = run(&mut l, 50_000);
    for (i, x) in v.iter().enumerate() {
        let t = i as u64 * 1_000;
        let inside = (20 * MS..30 * MS).contains(&t);
        // 1-based index of the packet inside the episode.
        let expect_drop = inside && ((t - 20 * MS) / 1_000 + 1) % 100 == 0;
        let got = *x == Verdict::Dropped(DropReason::Episode);
        assert_eq!(got, expect_drop, "packet {i} at {t} ns");
    }
    assert_eq!(l.stats().dropped.episode, 100);
}

#[test]
fn random_episode_rate_within_bounds() {
    let mut l = lossy(
        vec![LossModel::Episode {
            from: TimeSpan(0),
            to: TimeSpan(SEC),
            one_in: 1000,
            random: true,
        }],
        5,
    );
    let v = run(&mut l, 1_200_000); // 1,000,000 inside the first second
    let inside = dropped(&v[..1_000_000]);
    assert_eq!(dropped(&v[1_000_000..]), 0);
    let sigma = (1_000_000.0f64 * 0.001 * 0.999).sqrt();
    assert!((inside as f64 - 1000.0).abs() < 5.0 * sigma, "{inside}");
}

#[test]
fn blackout_drops_everything_inside_and_nothing_outside() {
    let mut l = lossy(
        vec![LossModel::Blackout {
            from: TimeSpan(12 * MS),
            to: TimeSpan(14 * MS),
        }],
        0,
    );
    let v = run(&mut l, 20_000);
    for (i, x) in v.iter().enumerate() {
        let t = i as u64 * 1_000;
        let inside = (12 * MS..14 * MS).contains(&t);
        assert_eq!(
            *x == Verdict::Dropped(DropReason::Blackout),
            inside,
            "at {t}"
        );
        assert!(inside || matches!(x, Verdict::Delivered { .. }));
    }
    assert_eq!(l.stats().dropped.blackout, 2_000);
}

#[test]
fn blackout_catches_packets_finishing_inside_it() {
    // 1 Gbit/s: 1500 bytes take 12 us. A packet offered 5 us before the blackout would finish
    // inside it and is lost; one finishing exactly at `from` - 1 ns is not.
    let mut cfg = LinkConfig::new(BitRate(1_000_000_000), TimeSpan(0));
    cfg.loss = vec![LossModel::Blackout {
        from: TimeSpan(100_000),
        to: TimeSpan(200_000),
    }];
    let mut l = Link::new(&cfg).expect("valid");
    assert_eq!(l.offer(87_999, 1500), Verdict::Delivered { at: 99_999 });
    assert_eq!(
        l.offer(95_000, 1500),
        Verdict::Dropped(DropReason::Blackout)
    );
    // The lost packet did not occupy the serialiser: the link is idle after the blackout.
    assert_eq!(l.offer(200_000, 1500), Verdict::Delivered { at: 212_000 });
}

#[test]
fn every_model_sees_every_packet_and_first_reason_wins() {
    // A blackout listed first wins over a Bernoulli p = 1 listed second.
    let models = vec![
        LossModel::Blackout {
            from: TimeSpan(0),
            to: TimeSpan(10 * MS),
        },
        LossModel::Bernoulli { p: 1.0 },
    ];
    let mut l = lossy(models, 0);
    assert_eq!(l.offer(0, 100), Verdict::Dropped(DropReason::Blackout));
    assert_eq!(l.offer(10 * MS, 100), Verdict::Dropped(DropReason::Loss));
    // A Bernoulli model's pattern does not depend on what a model listed before it does:
    // the same Bernoulli at index 1 behind an idle blackout and behind an active random
    // episode drops the same packets (the episode may add drops of its own).
    let bernoulli = LossModel::Bernoulli { p: 0.3 };
    let idle = LossModel::Blackout {
        from: TimeSpan(SEC),
        to: TimeSpan(2 * SEC),
    };
    let active = LossModel::Episode {
        from: TimeSpan(0),
        to: TimeSpan(SEC),
        one_in: 3,
        random: true,
    };
    let a = run(&mut lossy(vec![idle, bernoulli.clone()], 11), 10_000);
    let b = run(&mut lossy(vec![active, bernoulli], 11), 10_000);
    let mut episode_only = 0;
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        match (x, y) {
            (Verdict::Dropped(DropReason::Loss), Verdict::Dropped(_)) => {}
            (Verdict::Delivered { .. }, Verdict::Dropped(DropReason::Episode)) => episode_only += 1,
            (Verdict::Delivered { .. }, Verdict::Delivered { .. }) => {}
            other => panic!("packet {i}: {other:?}"),
        }
    }
    assert!(
        dropped(&a) > 2_500 && episode_only > 1_500,
        "{} {episode_only}",
        dropped(&a)
    );
}
