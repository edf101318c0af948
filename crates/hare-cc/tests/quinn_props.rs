//! Property tests over arbitrary event sequences (seeded, deterministic): the adapter never
//! panics or overflows with windows up to 2^40 bytes and MTUs 1200..=65527, cwnd never
//! drops below the minimum window, and without losses cwnd never decreases. The driver is
//! `tests/script`, which checks these invariants after every event.

mod script;

use hare_cc::{Algorithm, HareFactory, Profile};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use script::{ScriptDriver, ScriptEvent, MAX_MTU, MIN_MTU};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x4841_5245_2d63_6321),
        failure_persistence: None,
        ..Config::default()
    }
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        Just(Algorithm::Cubic),
        Just(Algorithm::Bic),
        Just(Algorithm::Reno)
    ]
}

fn profile_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(Profile::NAMES.to_vec())
}

/// Initial windows (0 = the profile's own) up to 2^40 bytes (in segments of the MTU).
fn initial_cwnd(mtu: u16) -> impl Strategy<Value = u32> {
    let max = u32::try_from((1_u64 << 40) / u64::from(mtu)).unwrap_or(u32::MAX);
    prop_oneof![Just(0), 1..=64_u32, Just(max / 2), Just(max)]
}

fn event(lossy: bool) -> impl Strategy<Value = ScriptEvent> {
    let dt = prop_oneof![0..=2_000_u32, 0..=200_000_u32, Just(u32::MAX)];
    let send = (dt.clone(), prop_oneof![1..=65_527_u32, Just(u32::MAX)])
        .prop_map(|(dt_us, bytes)| ScriptEvent::Send { dt_us, bytes });
    let ack = (dt.clone(), 0..=64_u16, any::<bool>()).prop_map(|(dt_us, bursts, app_limited)| {
        ScriptEvent::Ack {
            dt_us,
            bursts,
            app_limited,
        }
    });
    if !lossy {
        return prop_oneof![3 => send, 2 => ack].boxed();
    }
    let lose = (dt.clone(), 0..=16_u16, any::<bool>()).prop_map(|(dt_us, bursts, persistent)| {
        ScriptEvent::Lose {
            dt_us,
            bursts,
            persistent,
        }
    });
    let ecn = dt.prop_map(|dt_us| ScriptEvent::EcnCe { dt_us });
    let mtu = (MIN_MTU..=MAX_MTU).prop_map(|mtu| ScriptEvent::Mtu { mtu });
    prop_oneof![6 => send, 4 => ack, 1 => lose, 1 => ecn, 1 => mtu].boxed()
}

fn driver(alg: Algorithm, name: &str, mtu: u16, iw: u32) -> ScriptDriver {
    let mut profile = Profile::named(name).expect("built-in profile");
    // 0 keeps the profile's own initial window (the key's 0 would mean RFC 3390).
    if iw != 0 {
        profile
            .set("initial_cwnd", &iw.to_string())
            .expect("initial_cwnd is a key");
    }
    ScriptDriver::new(&HareFactory::new(alg, profile), mtu)
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn arbitrary_sequences_keep_every_invariant(
        alg in algorithm(),
        name in profile_name(),
        (mtu, iw) in (MIN_MTU..=MAX_MTU).prop_flat_map(|m| (Just(m), initial_cwnd(m))),
        events in proptest::collection::vec(event(true), 1..160),
    ) {
        let mut d = driver(alg, name, mtu, iw);
        if let Err(v) = d.run(&events) {
            return Err(TestCaseError::fail(format!("{alg:?}@{name} mtu {mtu} iw {iw}: {v}")));
        }
    }

    #[test]
    fn without_losses_cwnd_never_decreases(
        alg in algorithm(),
        name in profile_name(),
        (mtu, iw) in (MIN_MTU..=MAX_MTU).prop_flat_map(|m| (Just(m), initial_cwnd(m))),
        events in proptest::collection::vec(event(false), 1..200),
    ) {
        let mut d = driver(alg, name, mtu, iw);
        if let Err(v) = d.run(&events) {
            return Err(TestCaseError::fail(format!("{alg:?}@{name} mtu {mtu} iw {iw}: {v}")));
        }
    }
}

#[test]
fn decode_is_total_and_bounded() {
    assert!(ScriptEvent::decode(&[]).is_empty());
    // Truncated operands read as zero.
    assert_eq!(
        ScriptEvent::decode(&[0]),
        vec![ScriptEvent::Send { dt_us: 0, bytes: 0 }]
    );
    assert_eq!(
        ScriptEvent::decode(&[0x81, 1, 0, 0, 0, 2, 0]),
        vec![ScriptEvent::Ack {
            dt_us: 1,
            bursts: 2,
            app_limited: true
        }]
    );
    assert_eq!(
        ScriptEvent::decode(&[4, 0xff, 0xff]),
        vec![ScriptEvent::Mtu { mtu: u16::MAX }]
    );
    let long = vec![3_u8; 100_000];
    assert_eq!(ScriptEvent::decode(&long).len(), script::MAX_EVENTS);
}

#[test]
fn a_decoded_byte_string_drives_the_controller() {
    // Send 12,000 bytes (10 packets of 1200), ACK all after 100 ms: slow start adds 10.
    let mut bytes = vec![0, 0, 0];
    bytes.extend_from_slice(&12_000_u32.to_le_bytes());
    bytes.push(1);
    bytes.extend_from_slice(&100_000_u32.to_le_bytes());
    bytes.extend_from_slice(&1_u16.to_le_bytes());
    let events = ScriptEvent::decode(&bytes);
    assert_eq!(events.len(), 2);
    let mut d = driver(Algorithm::Cubic, "linux-6", 1200, 0);
    d.run(&events).expect("invariants hold");
    assert_eq!(d.controller().cwnd_segments(), 20);
    assert_eq!(d.bytes_in_flight(), 0);
}
