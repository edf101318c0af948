//! Named profiles, keys, values and errors.

use std::str::FromStr;

use hare_cc::profile::{
    AiStep, ClockKind, CubeRootKind, CubicPreLossCap, CwndLimitedRule, DelayedAck, MinCntClamp,
    RoundReset, RttSample, SlowStartKind, SsCompare, SsIncrement, TrainCompare, TrainThreshold,
};
use hare_cc::{Algorithm, Profile, ProfileError};

#[test]
fn every_name_resolves_and_the_default_is_linux_6() {
    assert_eq!(Profile::DEFAULT_NAME, "linux-6");
    assert!(Profile::NAMES.contains(&Profile::DEFAULT_NAME));
    for name in Profile::NAMES {
        assert_eq!(Profile::named(name).expect("named").name(), *name);
    }
    assert_eq!(
        Profile::default(),
        Profile::named("linux-6").expect("named")
    );
    let err = Profile::named("linux-3.0").expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown profile `linux-3.0`; valid profiles: linux-2.6.20, linux-2.6.22, linux-2.6.26, \
         linux-2.6.29, linux-2.6.39, linux-4.4, linux-6"
    );
}

#[test]
fn get_set_round_trips_every_key_of_every_profile() {
    for name in Profile::NAMES {
        let p = Profile::named(name).expect("named");
        for key in Profile::KEYS {
            let v = p.get(key).expect("known key");
            let mut q = p.clone();
            q.set(key, &v)
                .unwrap_or_else(|e| panic!("{name} {key}={v}: {e}"));
            // Writing the slow-start strategy names it (BIC and Reno then run it).
            let named = key == &"slow_start" || key == &"hystart";
            assert_eq!(q.slow_start_named(), named, "{name} {key}={v}");
            for k in Profile::KEYS {
                assert_eq!(q.get(k), p.get(k), "{name} {key}={v}: {k}");
            }
        }
    }
}

#[test]
fn setting_changes_the_field() {
    let mut p = Profile::named("linux-6").expect("named");
    p.set("beta", "819").expect("ok");
    p.set("hz", "1000").expect("ok");
    p.set("clock", "ms").expect("ok");
    p.set("hystart_train_cmp", "ge").expect("ok");
    p.set("fast_convergence", "0").expect("ok");
    p.set("uptime_ms", "300000").expect("ok");
    assert_eq!(
        (
            p.beta(),
            p.hz(),
            p.clock(),
            p.hystart_train_cmp(),
            p.fast_convergence(),
            p.uptime_ms()
        ),
        (819, 1000, ClockKind::Ms, TrainCompare::Ge, false, 300_000)
    );
    assert_eq!(p.get("fast_convergence").expect("key"), "0");
    assert_eq!(p.name(), "linux-6", "overrides keep the name");
    let base = Profile::named("linux-6").expect("named");
    assert_eq!(
        p.diff_keys(&base),
        vec![
            "hz",
            "uptime_ms",
            "clock",
            "hystart_train_cmp",
            "beta",
            "fast_convergence"
        ]
    );
}

#[test]
fn hystart_key_is_the_module_parameter() {
    let mut p = Profile::named("linux-6").expect("named");
    assert_eq!(p.get("hystart").expect("key"), "1");
    p.set("hystart", "0").expect("ok");
    assert_eq!(p.slow_start(), SlowStartKind::Standard);
    assert_eq!(p.get("hystart").expect("key"), "0");
    p.set("slow_start", "hystart++").expect("ok");
    p.set("hystart", "0").expect("ok");
    assert_eq!(
        p.slow_start(),
        SlowStartKind::HyStartPp,
        "hystart=0 leaves other strategies"
    );
    p.set("hystart", "1").expect("ok");
    assert_eq!(p.slow_start(), SlowStartKind::HyStart);
    assert_eq!(
        Profile::named("linux-2.6.20")
            .expect("named")
            .get("hystart")
            .expect("key"),
        "0"
    );
}

#[test]
fn errors_name_the_key_or_value_and_list_the_valid_ones() {
    let mut p = Profile::named("linux-6").expect("named");
    let e = p.set("betta", "717").expect_err("unknown key");
    match &e {
        ProfileError::UnknownKey { key, valid } => {
            assert_eq!(key, "betta");
            assert!(valid.contains("beta") && valid.contains("hystart_ack_delta_us"));
        }
        other => panic!("{other:?}"),
    }
    assert!(p.get("nope").is_err());
    let e = p.set("beta", "1024").expect_err("range");
    assert_eq!(
        e.to_string(),
        "bad value `1024` for `beta`: expected an integer in 0..=1023 (beta/1024)"
    );
    let e = p.set("hz", "300").expect_err("hz");
    assert!(e.to_string().contains("`300` for `hz`"), "{e}");
    let e = p.set("clock", "ns").expect_err("enum");
    assert_eq!(
        e.to_string(),
        "bad value `ns` for `clock`: expected one of jiffies|ms|us"
    );
    let e = p.set("slow_start", "fast").expect_err("enum");
    assert!(
        e.to_string().contains("standard|hystart|hystart++|limited"),
        "{e}"
    );
    let e = p.set("fast_convergence", "2").expect_err("bool");
    assert!(e.to_string().ends_with("expected 0 or 1"), "{e}");
    let e = p.set("hystart_detect", "4").expect_err("bits");
    assert!(e.to_string().contains("0..=3"), "{e}");
    let e = p.set("max_increment", "0").expect_err("divisor");
    assert!(e.to_string().contains("positive"), "{e}");
    assert_eq!(
        p,
        Profile::named("linux-6").expect("named"),
        "failed sets change nothing"
    );
}

#[test]
fn algorithm_names() {
    for (s, a) in [
        ("cubic", Algorithm::Cubic),
        ("bic", Algorithm::Bic),
        ("reno", Algorithm::Reno),
    ] {
        assert_eq!(Algorithm::from_str(s).expect("parse"), a);
        assert_eq!(a.to_string(), s);
    }
    let e = Algorithm::from_str("vegas").expect_err("unknown");
    assert_eq!(
        e.to_string(),
        "unknown algorithm `vegas`; valid algorithms: cubic, bic, reno"
    );
}

#[test]
fn the_eras() {
    let p = |n: &str| Profile::named(n).expect("named");
    let p20 = p("linux-2.6.20");
    assert_eq!(
        (
            p20.beta(),
            p20.initial_ssthresh(),
            p20.cube_root(),
            p20.min_cnt(),
            p20.cubic_pre_loss_cap()
        ),
        (
            819,
            100,
            CubeRootKind::Newton,
            MinCntClamp::Always,
            CubicPreLossCap::Set50
        )
    );
    assert_eq!(
        (
            p20.rtt_sample(),
            p20.ss_increment(),
            p20.delayed_ack(),
            p20.cwnd_limited()
        ),
        (
            RttSample::Tsecr,
            SsIncrement::PerAck,
            DelayedAck::U32,
            CwndLimitedRule::InFlightV1
        )
    );
    let p22 = p("linux-2.6.22");
    assert_eq!(
        (
            p22.initial_ssthresh(),
            p22.cube_root(),
            p22.min_cnt(),
            p22.ss_increment()
        ),
        (
            0,
            CubeRootKind::Table,
            MinCntClamp::AfterK,
            SsIncrement::PerAckCnt
        )
    );
    let p26 = p("linux-2.6.26");
    assert_eq!(
        (
            p26.beta(),
            p26.min_cnt(),
            p26.cubic_pre_loss_cap(),
            p26.rtt_sample()
        ),
        (
            717,
            MinCntClamp::Off,
            CubicPreLossCap::Off,
            RttSample::JiffiesPositive
        )
    );
    let p29 = p("linux-2.6.29");
    assert_eq!(
        (
            p29.slow_start(),
            p29.clock(),
            p29.hystart_train_cmp(),
            p29.hystart_delay_min()
        ),
        (
            SlowStartKind::HyStart,
            ClockKind::Jiffies,
            TrainCompare::Ge,
            2
        )
    );
    assert_eq!(p29.delayed_ack(), DelayedAck::U16);
    let p39 = p("linux-2.6.39");
    assert_eq!(
        (
            p39.clock(),
            p39.hystart_train_cmp(),
            p39.hystart_delay_min(),
            p39.delayed_ack()
        ),
        (ClockKind::Ms, TrainCompare::Gt, 4, DelayedAck::Capped)
    );
    assert_eq!(
        (p39.cubic_pre_loss_cap(), p39.initial_cwnd()),
        (CubicPreLossCap::Max20, 10)
    );
    let p44 = p("linux-4.4");
    assert_eq!(
        (
            p44.hystart_delay_shift(),
            p44.ss_compare(),
            p44.ai_step(),
            p44.cnt_floor()
        ),
        (3, SsCompare::Lt, AiStep::Acked, 2)
    );
    assert_eq!(p44.cwnd_limited(), CwndLimitedRule::MaxPacketsOut);
    let p6 = p("linux-6");
    assert_eq!(
        (
            p6.clock(),
            p6.hystart_train_threshold(),
            p6.hystart_round_reset()
        ),
        (
            ClockKind::Us,
            TrainThreshold::PacingAware,
            RoundReset::UpdateBeforeLowWindow
        )
    );
    assert_eq!(
        (
            p6.hystart_delay_min(),
            p6.hystart_delay_max(),
            p6.hystart_ack_delta_us()
        ),
        (4000, 16000, 2000)
    );
    for name in Profile::NAMES {
        assert_eq!(p(name).hz(), 250, "{name}");
        assert_eq!(p(name).bic_beta(), 819, "{name}");
    }
}
