//! `initial_ssthresh` is a module parameter of tcp_cubic / tcp_bic (2.6.20: 100), not of Reno;
//! `route_ssthresh` (the route metric) clamps any algorithm.
use hare_cc::engine::KernelCc;
use hare_cc::{Algorithm, Profile};

fn build(alg: Algorithm, profile: &str, sets: &[(&str, &str)]) -> KernelCc {
    let mut p = Profile::named(profile).unwrap();
    for (k, v) in sets {
        p.set(k, v).unwrap();
    }
    KernelCc::new(alg, &p, false, 8948)
}

#[test]
fn initial_ssthresh_binds_cubic_and_bic_of_2_6_20_but_not_reno() {
    assert_eq!(
        build(Algorithm::Cubic, "linux-2.6.20", &[]).ssthresh(),
        Some(100)
    );
    assert_eq!(
        build(Algorithm::Bic, "linux-2.6.20", &[]).ssthresh(),
        Some(100)
    );
    assert_eq!(build(Algorithm::Reno, "linux-2.6.20", &[]).ssthresh(), None);
    assert_eq!(
        build(
            Algorithm::Reno,
            "linux-2.6.20",
            &[("initial_ssthresh", "100")]
        )
        .ssthresh(),
        None
    );
}

#[test]
fn route_ssthresh_clamps_every_algorithm() {
    for alg in [Algorithm::Reno, Algorithm::Cubic, Algorithm::Bic] {
        assert_eq!(
            build(alg, "linux-6", &[("route_ssthresh", "64")]).ssthresh(),
            Some(64),
            "{alg}"
        );
    }
}
