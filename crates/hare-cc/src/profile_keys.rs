//! Which profile keys each algorithm uses, so that the grammar can refuse a key the chosen
//! algorithm would silently ignore (`reno@linux-2.6.20,beta=700`).
//!
//! The groups follow the kernel sources: the module parameters of `tcp_cubic.c` (CUBIC and
//! its HyStart) and `tcp_bic.c`, and the `tcp_sock` / `tcp_cong.c` machinery every algorithm
//! runs through (slow start, the cwnd-limited test, the ACK order, pacing, sysctls). Reno
//! (`tcp_reno_cong_avoid`) has no parameters of its own.

use crate::profile::{Algorithm, Profile, SlowStartKind, SsIncrement};

/// Keys of the machinery every algorithm runs through (`tcp_input.c`, `tcp_cong.c`,
/// `tcp_output.c`, sysctls and the clock).
const COMMON: &[&str] = &[
    "slow_start",
    "hystart",
    "route_ssthresh",
    "max_ssthresh",
    "hz",
    "uptime_ms",
    "ss_increment",
    "cwnd_cnt_bits",
    "ack_order",
    "ss_compare",
    "ai_step",
    "cwnd_limited",
    "gso",
    "tso_win_divisor",
    "reordering",
    "initial_cwnd",
    "cwnd_clamp",
    "gso_max_size",
    "paced",
    "pacing_ss_ratio",
    "pacing_ca_ratio",
    "max_pacing_rate",
    "undo",
    "mtu_probe_ssthresh",
];

/// The pacing rate's keys: settings of 3.12 and later only ([`Profile::uses_key`]).
const PACING: &[&str] = &["pacing_ss_ratio", "pacing_ca_ratio", "max_pacing_rate"];

/// `tcp_cubic.c`'s growth function and its delay measurement.
const CUBIC: &[&str] = &[
    "beta",
    "bic_scale",
    "fast_convergence",
    "tcp_friendliness",
    "max_increment",
    "initial_ssthresh",
    "cube_root",
    "min_cnt",
    "cubic_pre_loss_cap",
    "pre_loss_key",
    "cnt_floor",
    "delayed_ack",
    "jiffy_skip",
    "cubic_t",
    "idle_restart",
];

/// `tcp_bic.c`.
const BIC: &[&str] = &[
    "bic_beta",
    "fast_convergence",
    "max_increment",
    "low_window",
    "smooth_part",
    "initial_ssthresh",
    "pre_loss_key",
    "bic_stretch_ack",
];

/// Kernel HyStart (code of `tcp_cubic.c`) and the delay samples that feed it.
const HYSTART: &[&str] = &[
    "hystart_detect",
    "hystart_low_window",
    "hystart_ack_delta_us",
    "hystart_delay_min",
    "hystart_delay_max",
    "hystart_delay_shift",
    "hystart_min_samples",
    "hystart_train_cmp",
    "hystart_train_threshold",
    "hystart_curr_rtt",
    "hystart_round_reset",
    "clock",
    "rtt_sample",
    "delay_blackout",
];

/// HyStart++ (RFC 9406; no kernel has it).
const HYSTART_PP: &[&str] = &[
    "hspp_min_rtt_thresh_us",
    "hspp_max_rtt_thresh_us",
    "hspp_min_rtt_divisor",
    "hspp_n_rtt_sample",
    "hspp_css_growth_divisor",
    "hspp_css_rounds",
    "hspp_l_unpaced",
];

impl Profile {
    /// The keys `algorithm` uses under this profile, in [`Profile::KEYS`] order: the common
    /// machinery's, the algorithm's module parameters (CUBIC's include its HyStart's), kernel
    /// HyStart's for BIC and Reno only when HyStart was named for them (a non-kernel
    /// combination), and HyStart++'s only while `slow_start` is `hystart++`.
    pub fn keys_for(&self, algorithm: Algorithm) -> Vec<&'static str> {
        Self::KEYS
            .iter()
            .copied()
            .filter(|key| self.uses_key(algorithm, key))
            .collect()
    }

    /// True when `algorithm` reads `key` under this profile (see [`Profile::keys_for`]).
    pub fn uses_key(&self, algorithm: Algorithm, key: &str) -> bool {
        let own: &[&str] = match algorithm {
            Algorithm::Cubic => CUBIC,
            Algorithm::Bic => BIC,
            Algorithm::Reno => &[],
        };
        let slow_start = self.slow_start_for(algorithm);
        if let Some(in_era) = self.era_setting(key) {
            // `max_ssthresh` also serves the named RFC 3742 strategy in any era.
            return in_era || (key == "max_ssthresh" && slow_start == SlowStartKind::Limited);
        }
        COMMON.contains(&key)
            || own.contains(&key)
            || (HYSTART.contains(&key)
                && (algorithm == Algorithm::Cubic || slow_start == SlowStartKind::HyStart))
            || (HYSTART_PP.contains(&key) && slow_start == SlowStartKind::HyStartPp)
    }

    /// For a setting that only some kernel versions have, whether this profile's version has
    /// it (`None` for every other key). `tcp_max_ssthresh` (RFC 3742) was a sysctl from
    /// 2.6.22 (the per-ACK credit slow start that reads it) until 3.13 (886236c1247a removed
    /// it with that slow start); the pacing rate and its ratios (`tcp_pacing_ss_ratio`,
    /// `tcp_pacing_ca_ratio`, `SO_MAX_PACING_RATE`) came with 3.12 and 4.3, so the 2.6.x
    /// profiles have none. Setting one where the version has no such thing would change
    /// nothing the kernel did, or report a rate it never had: the grammar refuses it.
    fn era_setting(&self, key: &str) -> Option<bool> {
        match key {
            "max_ssthresh" => Some(self.ss_increment == SsIncrement::PerAckCnt),
            _ if PACING.contains(&key) => {
                // The built-in profile's own ratios say whether its version paces: an
                // override of the ratios themselves must not decide it.
                let base = Profile::named(&self.name).unwrap_or_default();
                Some(base.pacing_ss_ratio != 0 || base.pacing_ca_ratio != 0)
            }
            _ => None,
        }
    }

    /// Why `algorithm` does not use `key` when another setting would make it do so, or when
    /// the key belongs to other kernel versions, for error messages (`None` otherwise).
    pub(crate) fn key_hint(algorithm: Algorithm, key: &str) -> Option<&'static str> {
        if key == "max_ssthresh" {
            Some("tcp_max_ssthresh is a sysctl of 2.6.22 - 3.12; in other versions it applies only with slow_start=limited, a non-kernel combination")
        } else if PACING.contains(&key) {
            Some("the pacing rate came with 3.12 and its ratios with 4.3; the 2.6.x profiles have none")
        } else if HYSTART.contains(&key) && algorithm != Algorithm::Cubic {
            Some("kernel HyStart is CUBIC's; it runs here only with slow_start=hystart, a non-kernel combination")
        } else if HYSTART_PP.contains(&key) {
            Some("HyStart++ keys apply with slow_start=hystart++")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_belongs_to_a_group() {
        for key in Profile::KEYS {
            let grouped = [COMMON, CUBIC, BIC, HYSTART, HYSTART_PP]
                .iter()
                .any(|group| group.contains(key));
            assert!(grouped, "profile key `{key}` is in no algorithm's group");
        }
        for group in [COMMON, CUBIC, BIC, HYSTART, HYSTART_PP] {
            for key in group {
                assert!(Profile::KEYS.contains(key), "`{key}` is not a profile key");
            }
        }
    }

    #[test]
    fn reno_has_only_the_common_keys_by_default() {
        let profile = Profile::named("linux-2.6.20").expect("built in");
        // The common machinery less what 2.6.20 lacks: tcp_max_ssthresh and the pacing rate.
        assert_eq!(profile.keys_for(Algorithm::Reno).len(), COMMON.len() - 4);
        assert!(!profile.uses_key(Algorithm::Reno, "beta"));
        assert!(profile.uses_key(Algorithm::Cubic, "beta"));
        assert!(profile.uses_key(Algorithm::Cubic, "hystart_detect"));
        assert!(!profile.uses_key(Algorithm::Bic, "hystart_detect"));
        assert!(!profile.uses_key(Algorithm::Cubic, "hspp_css_rounds"));
    }

    #[test]
    fn version_only_settings_are_keys_of_their_versions_only() {
        let has = |name: &str, key: &str| {
            let p = Profile::named(name).expect("built in");
            [Algorithm::Cubic, Algorithm::Bic, Algorithm::Reno].map(|alg| p.uses_key(alg, key))
        };
        // tcp_max_ssthresh: 2.6.22 - 3.12.
        assert_eq!(has("linux-2.6.20", "max_ssthresh"), [false; 3]);
        assert_eq!(has("linux-2.6.22", "max_ssthresh"), [true; 3]);
        assert_eq!(has("linux-2.6.39", "max_ssthresh"), [true; 3]);
        assert_eq!(has("linux-4.4", "max_ssthresh"), [false; 3]);
        assert_eq!(has("linux-6", "max_ssthresh"), [false; 3]);
        // ... and wherever RFC 3742 is named.
        let mut p = Profile::named("linux-6").expect("built in");
        p.set("slow_start", "limited").expect("valid");
        assert!(p.uses_key(Algorithm::Reno, "max_ssthresh"));
        // The pacing rate: 3.12 on, whatever the ratios are set to.
        for key in PACING {
            assert_eq!(has("linux-2.6.39", key), [false; 3], "{key}");
            assert_eq!(has("linux-4.4", key), [true; 3], "{key}");
            assert_eq!(has("linux-6", key), [true; 3], "{key}");
        }
        let mut p = Profile::named("linux-2.6.39").expect("built in");
        p.set("pacing_ss_ratio", "200").expect("valid");
        assert!(!p.uses_key(Algorithm::Cubic, "pacing_ss_ratio"));
    }

    #[test]
    fn named_strategies_bring_their_keys() {
        let mut profile = Profile::named("linux-6").expect("built in");
        profile.set("slow_start", "hystart").expect("valid");
        assert!(profile.uses_key(Algorithm::Bic, "hystart_detect"));
        profile.set("slow_start", "hystart++").expect("valid");
        assert!(profile.uses_key(Algorithm::Reno, "hspp_css_rounds"));
        assert!(!profile.uses_key(Algorithm::Reno, "hystart_detect"));
    }
}
