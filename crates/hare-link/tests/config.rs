//! Scenario-file configuration: TOML, validation errors naming the field.

use hare_link::{
    BitRate, ByteSize, JitterConfig, JitterDistribution, Link, LinkConfig, LossModel, Path,
    PathConfig, TimeSpan, Verdict,
};

const EXAMPLE: &str = r#"
rate = "10g"
delay = "40ms"
queue_bytes = "60m"
queue_packets = 10000
seed = 7
jitter = { distribution = "uniform", amount = "250us" }

[[loss]]
model = "episode"
from = "20s"
to = "30s"
one_in = 1000

[[loss]]
model = "blackout"
from = "12s"
to = "14s"

[[loss]]
model = "bernoulli"
p = 0.0001

[[loss]]
model = "gilbert_elliott"
p_good_to_bad = 0.001
p_bad_to_good = 0.2
"#;

#[test]
fn toml_example_deserialises() {
    let cfg: LinkConfig = toml::from_str(EXAMPLE).expect("example parses");
    assert_eq!(cfg.rate, BitRate(10_000_000_000));
    assert_eq!(cfg.delay, TimeSpan(40_000_000));
    assert_eq!(cfg.queue_bytes, Some(ByteSize(60 << 20)));
    assert_eq!(cfg.queue_packets, Some(10_000));
    assert_eq!(cfg.seed, 7);
    assert_eq!(
        cfg.jitter,
        Some(JitterConfig {
            distribution: JitterDistribution::Uniform,
            amount: TimeSpan(250_000),
            reorder: false,
        })
    );
    assert_eq!(
        cfg.loss,
        vec![
            LossModel::Episode {
                from: TimeSpan(20_000_000_000),
                to: TimeSpan(30_000_000_000),
                one_in: 1000,
                random: false,
            },
            LossModel::Blackout {
                from: TimeSpan(12_000_000_000),
                to: TimeSpan(14_000_000_000),
            },
            LossModel::Bernoulli { p: 0.0001 },
            LossModel::GilbertElliott {
                p_good_to_bad: 0.001,
                p_bad_to_good: 0.2,
                loss_good: 0.0,
                loss_bad: 1.0,
            },
        ]
    );
    assert!(Link::new(&cfg).is_ok());
    // Serialising writes human units and reads back to the same config.
    let text = toml::to_string(&cfg).expect("serialises");
    assert!(text.contains("rate = \"10 Gbit/s\""), "{text}");
    assert!(text.contains("queue_bytes = \"60 MiB\""), "{text}");
    let back: LinkConfig = toml::from_str(&text).expect("reads back");
    assert_eq!(back, cfg);
}

#[test]
fn minimal_toml_and_plain_numbers() {
    let cfg: LinkConfig = toml::from_str("rate = 1000000000\nqueue_bytes = 65536").expect("ok");
    assert_eq!(cfg.rate, BitRate(1_000_000_000));
    assert_eq!(cfg.delay, TimeSpan(0));
    assert_eq!(cfg.queue_bytes, Some(ByteSize(65_536)));
    assert!(cfg.loss.is_empty() && cfg.jitter.is_none() && cfg.queue_packets.is_none());
    let cfg: LinkConfig = toml::from_str("rate = 1e9").expect("float rate");
    assert_eq!(cfg.rate, BitRate(1_000_000_000));
}

#[test]
fn toml_errors_name_the_field_and_value() {
    let e = toml::from_str::<LinkConfig>("rate = \"10x\"").expect_err("bad rate");
    let msg = e.to_string();
    assert!(
        msg.contains("rate") && msg.contains("bad rate `10x`"),
        "{msg}"
    );
    let e = toml::from_str::<LinkConfig>("rate = \"1g\"\ndelay = 40").expect_err("no unit");
    assert!(e.to_string().contains("bad duration `40`"), "{e}");
    let e = toml::from_str::<LinkConfig>("rate = \"1g\"\nqueue = \"1m\"").expect_err("typo");
    assert!(e.to_string().contains("unknown field `queue`"), "{e}");
    let e = toml::from_str::<LinkConfig>(
        "rate = \"1g\"\n[[loss]]\nmodel = \"bernoulli\"\np = 0.1\nq = 2",
    )
    .expect_err("unknown loss field");
    assert!(e.to_string().contains("unknown field `q`"), "{e}");
    let e = toml::from_str::<LinkConfig>("rate = \"1g\"\n[[loss]]\nmodel = \"meteor\"")
        .expect_err("unknown model");
    assert!(e.to_string().contains("meteor"), "{e}");
}

#[test]
fn validation_errors_name_the_field() {
    let base = LinkConfig::new(BitRate(1_000_000_000), TimeSpan(1_000_000));
    let check = |cfg: LinkConfig, expected: &str| {
        let e = Link::new(&cfg).expect_err("invalid");
        assert_eq!(e.to_string(), expected);
    };
    check(
        LinkConfig {
            rate: BitRate(0),
            ..base.clone()
        },
        "invalid link config: `rate` = \"0 bit/s\": expected a rate above 0",
    );
    check(
        LinkConfig {
            queue_packets: Some(0),
            ..base.clone()
        },
        "invalid link config: `queue_packets` = 0: expected at least 1 packet (omit the field \
         for an unlimited queue)",
    );
    check(
        LinkConfig {
            queue_bytes: Some(ByteSize(0)),
            ..base.clone()
        },
        "invalid link config: `queue_bytes` = 0: expected at least 1 byte (omit the field for \
         an unlimited queue)",
    );
    check(
        LinkConfig {
            loss: vec![
                LossModel::Bernoulli { p: 0.5 },
                LossModel::GilbertElliott {
                    p_good_to_bad: 0.1,
                    p_bad_to_good: 1.5,
                    loss_good: 0.0,
                    loss_bad: 1.0,
                },
            ],
            ..base.clone()
        },
        "invalid link config: `loss[1].p_bad_to_good` = 1.5: expected a probability in [0, 1]",
    );
    check(
        LinkConfig {
            loss: vec![LossModel::Bernoulli { p: f64::NAN }],
            ..base.clone()
        },
        "invalid link config: `loss[0].p` = NaN: expected a probability in [0, 1]",
    );
    check(
        LinkConfig {
            loss: vec![LossModel::Episode {
                from: TimeSpan(30_000_000_000),
                to: TimeSpan(20_000_000_000),
                one_in: 1000,
                random: false,
            }],
            ..base.clone()
        },
        "invalid link config: `loss[0].to` = \"20 s\" (from = \"30 s\"): expected an end later \
         than `from`",
    );
    check(
        LinkConfig {
            loss: vec![LossModel::Episode {
                from: TimeSpan(0),
                to: TimeSpan(1),
                one_in: 0,
                random: false,
            }],
            ..base.clone()
        },
        "invalid link config: `loss[0].one_in` = 0: expected at least 1 (1 drops every packet)",
    );
    check(
        LinkConfig {
            loss: vec![LossModel::Blackout {
                from: TimeSpan(5),
                to: TimeSpan(5),
            }],
            ..base
        },
        "invalid link config: `loss[0].to` = \"5 ns\" (from = \"5 ns\"): expected an end later \
         than `from`",
    );
}

#[test]
fn symmetric_path() {
    let cfg = PathConfig::symmetric(
        BitRate(10_000_000_000),
        TimeSpan(80_000_001),
        Some(ByteSize(100 << 20)),
    );
    assert_eq!(cfg.forward.delay, TimeSpan(40_000_001));
    assert_eq!(cfg.reverse.delay, TimeSpan(40_000_000));
    assert_eq!(cfg.rtt(), TimeSpan(80_000_001));
    assert_eq!(cfg.reverse.queue_bytes, Some(ByteSize(100 << 20)));
    assert_ne!(cfg.forward.seed, cfg.reverse.seed);
    let mut path = Path::new(&cfg).expect("valid");
    let there = match path.forward.offer(0, 9000) {
        Verdict::Delivered { at } => at,
        v => panic!("{v:?}"),
    };
    let back = match path.reverse.offer(there, 80) {
        Verdict::Delivered { at } => at,
        v => panic!("{v:?}"),
    };
    // 9000 B and 80 B at 10 Gbit/s: 7200 + 64 ns of serialisation on top of the RTT.
    assert_eq!(back, 80_000_001 + 7_200 + 64);

    let mut bad = cfg.clone();
    bad.reverse.rate = BitRate(0);
    let e = Path::new(&bad).expect_err("invalid");
    assert_eq!(e.field, "reverse.rate");
    assert_eq!(bad.validate().expect_err("invalid").field, "reverse.rate");

    let text = r#"
        [forward]
        rate = "1.6 Gbit/s"
        delay = "40ms"
        queue_bytes = "8m"
        [reverse]
        rate = "1.6 Gbit/s"
        delay = "40ms"
    "#;
    let parsed: PathConfig = toml::from_str(text).expect("path toml");
    assert_eq!(parsed.forward.rate, BitRate(1_600_000_000));
    assert_eq!(parsed.rtt(), TimeSpan(80_000_000));
}
