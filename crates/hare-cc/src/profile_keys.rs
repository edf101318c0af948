//! Which profile keys each algorithm uses, so that the grammar can refuse a key the chosen
//! algorithm would silently ignore (`reno@linux-2.6.20,beta=700`).
//!
//! The groups follow the kernel sources: the module parameters of `tcp_cubic.c` (CUBIC and
//! its HyStart) and `tcp_bic.c`, and the `tcp_sock` / `tcp_cong.c` machinery every algorithm
//! runs through (slow start, the cwnd-limited test, the ACK order, pacing, sysctls). Reno
//! (`tcp_reno_cong_avoid`) has no parameters of its own.

use crate::profile::{Algorithm, Profile, SlowStartKind};

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
        COMMON.contains(&key)
            || own.contains(&key)
            || (HYSTART.contains(&key)
                && (algorithm == Algorithm::Cubic || slow_start == SlowStartKind::HyStart))
            || (HYSTART_PP.contains(&key) && slow_start == SlowStartKind::HyStartPp)
    }

    /// Why `algorithm` does not use `key` when another setting would make it do so, for error
    /// messages (`None` when no setting would).
    pub(crate) fn key_hint(algorithm: Algorithm, key: &str) -> Option<&'static str> {
        if HYSTART.contains(&key) && algorithm != Algorithm::Cubic {
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
        assert_eq!(profile.keys_for(Algorithm::Reno).len(), COMMON.len());
        assert!(!profile.uses_key(Algorithm::Reno, "beta"));
        assert!(profile.uses_key(Algorithm::Cubic, "beta"));
        assert!(profile.uses_key(Algorithm::Cubic, "hystart_detect"));
        assert!(!profile.uses_key(Algorithm::Bic, "hystart_detect"));
        assert!(!profile.uses_key(Algorithm::Cubic, "hspp_css_rounds"));
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
