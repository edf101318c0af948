//! The `CcSpec` grammar: canonical Display round-trips, every error names the bad token and
//! lists the valid ones, and each spec builds a working factory.

use std::time::Instant;

use hare_cc::{Algorithm, CcSpec, Profile, SpecAlgorithm, SpecError};

fn parse(s: &str) -> CcSpec {
    match s.parse::<CcSpec>() {
        Ok(spec) => spec,
        Err(e) => panic!("`{s}` should parse: {e}"),
    }
}

fn error(s: &str) -> SpecError {
    match s.parse::<CcSpec>() {
        Ok(spec) => panic!("`{s}` should not parse, got {spec}"),
        Err(e) => e,
    }
}

#[test]
fn brief_examples_parse_and_round_trip() {
    for s in [
        "cubic",
        "cubic@linux-2.6.20",
        "cubic@linux-6,hystart=0,initial_ssthresh=100,hz=250",
        "bic@linux-2.6.20",
        "reno",
        "quinn-cubic",
        "quinn-newreno",
        "quinn-bbr",
        "quinn-cubic,initial_window=14720",
        "quinn-newreno,initial_window=24000,loss_reduction_factor=0.7",
        "cubic@linux-2.6.29,hz=100,paced=no,hystart_detect=1",
        // Interacting keys (`hystart` is an alias that switches `slow_start`).
        "cubic,hystart=0,slow_start=hystart++,hystart=1",
        "bic@linux-2.6.39,slow_start=limited,max_ssthresh=100",
    ] {
        let spec = parse(s);
        let shown = spec.to_string();
        let again = parse(&shown);
        assert_eq!(spec, again, "{s} -> {shown}");
        assert_eq!(shown, again.to_string(), "Display is a fixed point for {s}");
    }
}

#[test]
fn canonical_form_names_the_default_profile() {
    assert_eq!(parse("cubic").to_string(), "cubic@linux-6");
    assert_eq!(parse("reno").to_string(), "reno@linux-6");
    assert_eq!(
        parse("  CUBIC @ linux-2.6.20 ").to_string(),
        "cubic@linux-2.6.20"
    );
    assert_eq!(parse("quinn-bbr").to_string(), "quinn-bbr");
    assert_eq!(Profile::DEFAULT_NAME, "linux-6");
    assert_eq!(CcSpec::default(), parse("cubic@linux-6"));
}

#[test]
fn every_built_in_profile_parses_for_every_hare_algorithm() {
    for name in Profile::NAMES {
        for alg in ["cubic", "bic", "reno"] {
            let spec = parse(&format!("{alg}@{name}"));
            assert_eq!(spec.profile_name(), Some(*name));
            assert_eq!(spec.profile().map(|p| p.name()), Some(*name));
            assert!(!spec.is_quinn());
        }
    }
}

#[test]
fn accessors_report_algorithm_profile_and_overrides() {
    let spec = parse("bic@linux-2.6.20,hz=250");
    assert_eq!(spec.algorithm(), SpecAlgorithm::Hare(Algorithm::Bic));
    assert_eq!(spec.profile_name(), Some("linux-2.6.20"));
    assert_eq!(spec.overrides().len(), 1);
    assert_eq!(spec.overrides()[0].0, "hz");
    let mut expected = Profile::named("linux-2.6.20").expect("built-in profile");
    expected.set("hz", "250").expect("valid override");
    assert_eq!(spec.profile(), Some(&expected));
    assert!(spec.hare_factory().is_some());

    let q = parse("quinn-newreno");
    assert_eq!(q.algorithm(), SpecAlgorithm::QuinnNewReno);
    assert!(q.is_quinn());
    assert_eq!(q.profile_name(), None);
    assert!(q.profile().is_none());
    assert!(q.hare_factory().is_none());
}

#[test]
fn overrides_apply_and_a_repeated_key_keeps_the_last_value() {
    let a = parse("cubic@linux-6,hz=250,hz=1000");
    let b = parse("cubic@linux-6,hz=1000");
    assert_eq!(a, b);
    assert_eq!(a.to_string(), b.to_string());
    assert_ne!(parse("cubic@linux-6,hz=250"), b);
    // An override that restates the profile's own value is kept in the text but does not
    // change the profile.
    let plain = parse("cubic@linux-6");
    let hz = plain
        .profile()
        .and_then(|p| p.get("hz").ok())
        .expect("hz is a key");
    let restated = parse(&format!("cubic@linux-6,hz={hz}"));
    assert_eq!(restated.profile(), plain.profile());
}

#[test]
fn interacting_keys_replay_in_order() {
    // Applied in order: hystart=0 -> standard, slow_start -> hystart++, hystart=1 -> hystart.
    let spec = parse("cubic,hystart=0,slow_start=hystart++,hystart=1");
    let slow_start = |s: &CcSpec| s.profile().and_then(|p| p.get("slow_start").ok());
    assert_eq!(slow_start(&spec).as_deref(), Some("hystart"));
    assert_eq!(
        spec.to_string(),
        "cubic@linux-6,slow_start=hystart++,hystart=1"
    );
    assert_eq!(
        slow_start(&parse(&spec.to_string())).as_deref(),
        Some("hystart")
    );
}

#[test]
fn labels_are_short() {
    assert_eq!(parse("cubic@linux-2.6.20").label(), "cubic 2.6.20");
    assert_eq!(parse("quinn-cubic").label(), "quinn-cubic");
    let l = parse("cubic,hz=250").label();
    assert!(l.starts_with("cubic 6 hz="), "{l}");
}

#[test]
fn unknown_algorithm_is_named_and_valid_ones_listed() {
    let e = error("vegas@linux-6");
    let msg = e.to_string();
    assert!(matches!(e, SpecError::UnknownAlgorithm { ref name, .. } if name == "vegas"));
    assert!(msg.contains("`vegas`"), "{msg}");
    for valid in SpecAlgorithm::NAMES {
        assert!(msg.contains(valid), "{msg} lists {valid}");
    }
}

#[test]
fn unknown_profile_is_named_and_valid_ones_listed() {
    let e = error("cubic@linux-1.0");
    let msg = e.to_string();
    assert!(msg.contains("linux-1.0"), "{msg}");
    for valid in Profile::NAMES {
        assert!(msg.contains(valid), "{msg} lists {valid}");
    }
    let e = error("cubic@");
    assert!(matches!(e, SpecError::EmptyProfile { .. }), "{e:?}");
    assert!(e.to_string().contains("linux-6"));
}

#[test]
fn unknown_key_is_named_and_valid_ones_listed() {
    let msg = error("cubic@linux-6,hystrat=0").to_string();
    assert!(msg.contains("hystrat"), "{msg}");
    for key in Profile::KEYS {
        assert!(msg.contains(key), "{msg} lists {key}");
    }
    let e = error("quinn-cubic,loss_reduction_factor=0.5");
    assert!(
        matches!(e, SpecError::UnknownQuinnKey { ref key, ref valid, .. } if key == "loss_reduction_factor" && valid == "initial_window"),
        "{e:?}"
    );
}

#[test]
fn bad_value_is_named() {
    let msg = error("cubic@linux-6,hz=banana").to_string();
    assert!(msg.contains("banana") && msg.contains("hz"), "{msg}");
    let msg = error("cubic,initial_ssthresh=-3").to_string();
    assert!(
        msg.contains("-3") && msg.contains("initial_ssthresh"),
        "{msg}"
    );
    let e = error("quinn-newreno,initial_window=0");
    assert!(
        matches!(e, SpecError::BadQuinnValue { ref value, .. } if value == "0"),
        "{e:?}"
    );
    let e = error("quinn-newreno,loss_reduction_factor=1.5");
    assert!(e.to_string().contains("1.5"), "{e}");
}

#[test]
fn malformed_items_are_named() {
    let e = error("cubic,hystart");
    assert_eq!(
        e,
        SpecError::NotKeyValue {
            item: "hystart".into()
        }
    );
    assert!(e.to_string().contains("`hystart`"));
    let e = error("cubic,");
    assert!(matches!(e, SpecError::NotKeyValue { ref item } if item.is_empty()));
    let e = error("cubic,=3");
    assert!(e.to_string().contains("=3"), "{e}");
    let e = error("   ");
    assert!(matches!(e, SpecError::Empty { .. }));
    assert!(e.to_string().contains("quinn-newreno"));
}

#[test]
fn quinn_algorithms_reject_a_profile() {
    let e = error("quinn-cubic@linux-6");
    assert_eq!(
        e,
        SpecError::ProfileNotAllowed {
            algorithm: "quinn-cubic".into(),
            profile: "linux-6".into()
        }
    );
    assert!(e.to_string().contains("@linux-6"));
}

#[test]
fn factories_build_the_selected_controller() {
    let now = Instant::now();
    let mtu = 1200;
    // hare: the initial window comes from the profile (cwnd segments x mss + 1, see adapter).
    let spec = parse("cubic@linux-2.6.20");
    let ctrl = spec.factory().build(now, mtu);
    let hare = spec
        .hare_factory()
        .expect("hare")
        .build_controller(now, mtu);
    assert_eq!(ctrl.initial_window(), ctrl.window());
    assert_eq!(
        ctrl.window(),
        u64::from(hare.cwnd_segments()) * u64::from(mtu) + 1
    );
    assert!(ctrl
        .into_any()
        .downcast::<hare_cc::HareController>()
        .is_ok());
    // quinn: the initial window override reaches the built controller.
    for s in ["quinn-cubic", "quinn-newreno", "quinn-bbr"] {
        let spec = parse(&format!("{s},initial_window=36000"));
        let c = spec.factory().build(now, mtu);
        assert_eq!(c.window(), 36_000, "{s}");
        assert_eq!(c.initial_window(), 36_000, "{s}");
    }
    // quinn's default initial window: 14720 clamped to [2, 10] x 1200 (RFC 9002 7.2).
    assert_eq!(
        parse("quinn-cubic").factory().build(now, mtu).window(),
        12_000
    );
}
