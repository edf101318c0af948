//! Jitter keeps order unless asked not to; seeds reproduce verdicts bit for bit.

use hare_link::{
    BitRate, ByteSize, JitterConfig, JitterDistribution, Link, LinkConfig, LogConfig, LogEvent,
    LossModel, TimeSpan, Verdict,
};

const MS: u64 = 1_000_000;

fn jittery(distribution: JitterDistribution, reorder: bool, seed: u64) -> Link {
    let mut cfg = LinkConfig::new(BitRate(1_000_000_000), TimeSpan(10 * MS));
    cfg.jitter = Some(JitterConfig {
        distribution,
        amount: TimeSpan(MS),
        reorder,
    });
    cfg.seed = seed;
    Link::new(&cfg).expect("valid")
}

fn arrivals(link: &mut Link, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| match link.offer(i * 20_000, 1500) {
            Verdict::Delivered { at } => at,
            v => panic!("unexpected {v:?}"),
        })
        .collect()
}

#[test]
fn jitter_keeps_order_by_default() {
    for dist in [JitterDistribution::Uniform, JitterDistribution::Exponential] {
        let mut l = jittery(dist, false, 3);
        let a = arrivals(&mut l, 100_000);
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "{dist:?} reordered");
        // Jitter is extra delay: never earlier than serialisation + propagation.
        for (i, at) in a.iter().enumerate() {
            assert!(*at >= i as u64 * 20_000 + 12_000 + 10 * MS);
        }
        let spread = a
            .iter()
            .enumerate()
            .map(|(i, at)| at - (i as u64 * 20_000 + 12_000 + 10 * MS))
            .max()
            .unwrap_or(0);
        assert!(spread > MS / 2, "{dist:?}: jitter too small ({spread} ns)");
    }
}

#[test]
fn uniform_jitter_stays_in_range_and_has_its_mean() {
    // With reordering allowed each packet's extra delay is exactly the drawn one.
    let mut l = jittery(JitterDistribution::Uniform, true, 4);
    let n = 100_000u64;
    let extra: Vec<u64> = arrivals(&mut l, n)
        .iter()
        .enumerate()
        .map(|(i, at)| at - (i as u64 * 20_000 + 12_000 + 10 * MS))
        .collect();
    assert!(extra.iter().all(|&e| e <= MS));
    let mean = extra.iter().sum::<u64>() as f64 / n as f64;
    // Uniform on [0, 1 ms]: sd 288675 ns, standard error 913 ns.
    assert!((mean - 500_000.0).abs() < 5.0 * 913.0, "mean {mean}");
}

#[test]
fn reorder_lets_packets_overtake() {
    let mut l = jittery(JitterDistribution::Uniform, true, 3);
    let a = arrivals(&mut l, 10_000);
    let inversions = a.windows(2).filter(|w| w[0] > w[1]).count();
    // Packets 20 us apart with up to 1 ms of jitter overtake each other most of the time.
    assert!(inversions > 1_000, "{inversions}");
}

fn busy_config(seed: u64) -> LinkConfig {
    let mut cfg = LinkConfig::new(BitRate(1_000_000_000), TimeSpan(40 * MS));
    cfg.queue_bytes = Some(ByteSize(64 * 1024));
    cfg.jitter = Some(JitterConfig {
        distribution: JitterDistribution::Exponential,
        amount: TimeSpan(200_000),
        reorder: true,
    });
    cfg.loss = vec![
        LossModel::Bernoulli { p: 0.02 },
        LossModel::GilbertElliott {
            p_good_to_bad: 0.001,
            p_bad_to_good: 0.3,
            loss_good: 0.0,
            loss_bad: 0.8,
        },
        LossModel::Episode {
            from: TimeSpan(5 * MS),
            to: TimeSpan(50 * MS),
            one_in: 7,
            random: true,
        },
    ];
    cfg.seed = seed;
    cfg
}

/// Offers an irregular, overloaded stream (about 1.3x the rate) and returns every verdict.
fn verdicts(seed: u64) -> Vec<Verdict> {
    let mut l = Link::new(&busy_config(seed)).expect("valid");
    let mut now = 0;
    (0..200_000u64)
        .map(|i| {
            now += 7_000 + (i * 7919) % 4_000;
            l.offer(now, 1200 + (i % 7) as u32 * 40)
        })
        .collect()
}

#[test]
fn same_seed_gives_identical_verdicts() {
    let a = verdicts(99);
    let b = verdicts(99);
    assert_eq!(a, b);
    let c = verdicts(100);
    assert_ne!(a, c);
    // All three kinds of drop happened, so the comparison covers them.
    for reason in [
        hare_link::DropReason::Loss,
        hare_link::DropReason::Episode,
        hare_link::DropReason::QueueFull,
    ] {
        assert!(
            a.contains(&Verdict::Dropped(reason)),
            "{reason:?} never happened"
        );
    }
}

/// Runs the busy stream for 20,000 packets with a log; returns the link and the drops.
fn logged_run(log: LogConfig) -> (Link, u64, u64) {
    let mut l = Link::new(&busy_config(1)).expect("valid");
    assert!(l.log().is_empty());
    l.enable_log(log);
    let mut now = 0;
    let mut drops = 0;
    for i in 0..20_000u64 {
        now += 7_000 + (i * 7919) % 4_000;
        if matches!(l.offer(now, 1200), Verdict::Dropped(_)) {
            drops += 1;
        }
    }
    (l, drops, now)
}

#[test]
fn log_is_sampled_and_records_every_drop() {
    let (l, drops, end) = logged_run(LogConfig {
        capacity: 1_000_000,
        sample_every: MS,
    });
    let log = l.log();
    let enqueues: Vec<_> = log
        .iter()
        .filter(|e| matches!(e.event, LogEvent::Enqueued { .. }))
        .collect();
    // Enqueues are sampled at most once per ms of the ~180 ms run, and at least once per
    // ms in which some packet was accepted.
    assert!(enqueues.windows(2).all(|w| w[1].at - w[0].at >= MS));
    assert!(enqueues.len() <= (end / MS + 1) as usize && enqueues.len() > 100);
    assert_eq!((log.len() - enqueues.len()) as u64, drops);
    assert_eq!(l.log_overflowed(), 0);
    // Entries serialise for plot scripts.
    let line = serde_json::to_string(&log[0]).expect("json");
    assert!(line.contains("\"event\":\"enqueued\""), "{line}");
}

#[test]
fn log_is_bounded() {
    let (mut l, drops, _) = logged_run(LogConfig {
        capacity: 100,
        sample_every: 0,
    });
    assert_eq!(l.log().len(), 100);
    // Every offer passes an unsampled log: 20,000 events, 100 kept.
    assert_eq!(l.log_overflowed(), 20_000 - 100);
    assert!(drops > 0);
    let taken = l.take_log();
    assert_eq!(taken.len(), 100);
    assert!(l.log().is_empty());
}
