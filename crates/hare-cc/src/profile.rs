//! Named kernel profiles: every constant of an era, overridable by key like
//! `/sys/module/tcp_cubic/parameters/*`.
//!
//! - [`Profile::named`] / [`Profile::NAMES`] / [`Profile::DEFAULT_NAME`] (`linux-6`)
//! - [`Profile::set`] / [`Profile::get`] / [`Profile::KEYS`]: every field by its key; values
//!   print so that `get(key)` round-trips through `set(key, ..)`
//! - [`Algorithm`] with `FromStr` / `Display` (`cubic`, `bic`, `reno`)
//!
//! The eras and the commits each profile follows are listed on the constructors below and in
//! `crates/hare-cc/PROFILES.md`. The sources were read from the history mirror
//! `gpl-releases/linux-2.6.39.3` (releases 2.6.20 `62d0cfcb27c`, 2.6.22 `7dcca30a32a`, 2.6.26
//! `bce7f793dae`, 2.6.29 `8e0ee43bc2c`, 2.6.39 `61c4f2c81c6`), a 3.6 tree, a 4.4-based tree,
//! `VVvector/linux-5.0.1` and a 2025 `net-next` snapshot (`kernel-patches/bpf`).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

pub use crate::profile_kinds::{
    AckOrder, AiStep, ClockKind, CubeRootKind, CubicPreLossCap, CubicTime, CurrRttRule,
    CwndLimitedRule, DelayBlackout, DelayedAck, MinCntClamp, Paced, PreLossKey, RoundReset,
    RttSample, SlowStartKind, SsCompare, SsIncrement, TrainCompare, TrainThreshold, UndoRule,
};

/// Window-growth algorithm of the kernel model.
///
/// Non-exhaustive: more of the kernel's `tcp_congestion_ops` modules can be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// `tcp_cubic.c`.
    Cubic,
    /// `tcp_bic.c`.
    Bic,
    /// `tcp_cong.c` Reno (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`).
    Reno,
}

impl Algorithm {
    /// Every algorithm name accepted by `FromStr`.
    pub const NAMES: &'static [&'static str] = &["cubic", "bic", "reno"];

    /// The kernel module name (`cubic`, `bic`, `reno`).
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Cubic => "cubic",
            Algorithm::Bic => "bic",
            Algorithm::Reno => "reno",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = ProfileError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cubic" => Ok(Algorithm::Cubic),
            "bic" => Ok(Algorithm::Bic),
            "reno" => Ok(Algorithm::Reno),
            _ => Err(ProfileError::UnknownAlgorithm {
                name: s.to_owned(),
                valid: Algorithm::NAMES.join(", "),
            }),
        }
    }
}

/// A bad profile name, key or value.
///
/// Non-exhaustive: new checks can add variants.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileError {
    /// No profile of that name.
    #[error("unknown profile `{name}`; valid profiles: {valid}")]
    UnknownProfile {
        /// What was asked for.
        name: String,
        /// Comma-separated list of valid names.
        valid: String,
    },
    /// No parameter of that key.
    #[error("unknown parameter `{key}`; valid parameters: {valid}")]
    UnknownKey {
        /// What was asked for.
        key: String,
        /// Comma-separated list of valid keys.
        valid: String,
    },
    /// The value does not parse or is out of range for the key.
    #[error("bad value `{value}` for `{key}`: expected {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key accepts.
        expected: String,
    },
    /// No algorithm of that name.
    #[error("unknown algorithm `{name}`; valid algorithms: {valid}")]
    UnknownAlgorithm {
        /// What was asked for.
        name: String,
        /// Comma-separated list of valid names.
        valid: String,
    },
}

/// A value type a profile key can hold: parsed from and printed to the sysfs-like text form.
trait ParamValue: Sized {
    /// Parse, or say what is expected.
    fn parse_param(s: &str) -> Result<Self, String>;
    /// Print so that `parse_param` gives the value back.
    fn format_param(&self) -> String;
}

impl ParamValue for u32 {
    fn parse_param(s: &str) -> Result<Self, String> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| "an unsigned 32-bit integer".to_owned())
    }
    fn format_param(&self) -> String {
        self.to_string()
    }
}

impl ParamValue for u64 {
    fn parse_param(s: &str) -> Result<Self, String> {
        s.trim()
            .parse::<u64>()
            .map_err(|_| "an unsigned 64-bit integer".to_owned())
    }
    fn format_param(&self) -> String {
        self.to_string()
    }
}

impl ParamValue for bool {
    fn parse_param(s: &str) -> Result<Self, String> {
        // sysfs `int` parameters are written as 0/1; accept the usual words too.
        match s.trim() {
            "1" | "y" | "Y" | "yes" | "true" | "on" => Ok(true),
            "0" | "n" | "N" | "no" | "false" | "off" => Ok(false),
            _ => Err("0 or 1".to_owned()),
        }
    }
    fn format_param(&self) -> String {
        if *self { "1" } else { "0" }.to_owned()
    }
}

/// Implements `ParamValue` for the kind enums through their `FromStr` / `Display`.
macro_rules! enum_param {
    ($($t:ty),* $(,)?) => {$(
        impl ParamValue for $t {
            fn parse_param(s: &str) -> Result<Self, String> {
                s.trim().parse::<$t>()
            }
            fn format_param(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

enum_param!(
    AckOrder,
    AiStep,
    ClockKind,
    CubeRootKind,
    CubicPreLossCap,
    CubicTime,
    CurrRttRule,
    CwndLimitedRule,
    DelayBlackout,
    DelayedAck,
    MinCntClamp,
    Paced,
    PreLossKey,
    RoundReset,
    RttSample,
    SlowStartKind,
    SsCompare,
    SsIncrement,
    TrainCompare,
    TrainThreshold,
    UndoRule,
);

// Range checks: `None` = fine, `Some(expected)` = rejected with that explanation.
fn any<T>(_: &T) -> Option<&'static str> {
    None
}
fn beta_range(v: &u32) -> Option<&'static str> {
    // beta_scale divides by (1024 - beta); 5.x+ refuses to load with beta >= 1024.
    (*v >= 1024).then_some("an integer in 0..=1023 (beta/1024)")
}
fn bic_scale_range(v: &u32) -> Option<&'static str> {
    // cube_factor divides by bic_scale * 10; 5.x+ refuses bic_scale <= 0 or > INT_MAX / 10.
    (*v == 0 || *v > i32::MAX as u32 / 10).then_some("an integer in 1..=214748364")
}
fn positive(v: &u32) -> Option<&'static str> {
    (*v == 0).then_some("a positive integer (it is a divisor)")
}
fn hz_range(v: &u32) -> Option<&'static str> {
    // jiffies <-> ms/us conversions are exact only when HZ divides 1000 (100, 250, 1000, ...).
    (*v < 10 || 1000 % *v != 0).then_some("a divisor of 1000 from 10 to 1000 (100, 250 or 1000)")
}
fn detect_range(v: &u32) -> Option<&'static str> {
    (*v > 3).then_some("0..=3 (1 = ACK train, 2 = delay, 3 = both)")
}
fn signed_range(v: &u32) -> Option<&'static str> {
    (*v > i32::MAX as u32).then_some("an integer in 0..=2147483647 (a kernel int)")
}
fn shift_range(v: &u32) -> Option<&'static str> {
    (*v > 31).then_some("a shift in 0..=31")
}
fn cnt_bits_range(v: &u32) -> Option<&'static str> {
    (*v != 16 && *v != 32).then_some("16 or 32")
}
fn u8_range(v: &u32) -> Option<&'static str> {
    (*v > 255).then_some("an integer in 0..=255 (a kernel u8)")
}

/// Declares the `Profile` struct, its key table, `get` and `set` from one list.
macro_rules! profile_params {
    ($( $(#[$doc:meta])* $key:literal => $field:ident : $ty:ty = $check:path; )*) => {
        /// Every constant of a kernel era, in the kernel's units, as an opaque value.
        ///
        /// Build one with [`Profile::named`] (or [`Profile::builder`]), change it by key with
        /// [`Profile::set`] like a module parameter or sysctl (the keys are
        /// [`Profile::KEYS`]), read it by key with [`Profile::get`] or typed with the getter
        /// of the same name (`profile.beta()`).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Profile {
            /// Profile name (`linux-2.6.20`, ..., `linux-6`); overrides do not change it.
            pub(crate) name: String,
            /// The slow-start strategy was set by name (`slow_start` or `hystart` written):
            /// only then do BIC and Reno run a strategy that only `tcp_cubic.c` has (HyStart),
            /// a combination no kernel had (see [`Profile::slow_start_for`]).
            pub(crate) slow_start_named: bool,
            $( $(#[$doc])* pub(crate) $field: $ty, )*
        }

        /// Typed getters, one per key (the key's value as the model uses it).
        impl Profile {
            $(
                $(#[$doc])*
                ///
                #[doc = concat!("The value of key `", $key, "`.")]
                pub fn $field(&self) -> $ty {
                    self.$field
                }
            )*
        }

        impl Profile {
            /// Every key accepted by [`Profile::get`] and [`Profile::set`]: the field names plus
            /// `hystart` (0/1, the kernel module parameter; an alias that switches
            /// `slow_start` between `hystart` and `standard`).
            pub const KEYS: &'static [&'static str] = &[ $( $key, )* "hystart" ];

            /// The value of a key, printed so that `set(key, get(key))` gives it back.
            pub fn get(&self, key: &str) -> Result<String, ProfileError> {
                match key {
                    $( $key => Ok(ParamValue::format_param(&self.$field)), )*
                    "hystart" => Ok(
                        ParamValue::format_param(&(self.slow_start == SlowStartKind::HyStart))),
                    _ => Err(unknown_key(key)),
                }
            }

            /// Set a key from its text form (like writing the sysfs file).
            pub fn set(&mut self, key: &str, value: &str) -> Result<(), ProfileError> {
                self.set_key(key, value)?;
                if key == "slow_start" || key == "hystart" {
                    self.slow_start_named = true;
                }
                Ok(())
            }

            fn set_key(&mut self, key: &str, value: &str) -> Result<(), ProfileError> {
                let bad = |expected: String| ProfileError::BadValue {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    expected,
                };
                match key {
                    $( $key => {
                        let v: $ty = ParamValue::parse_param(value).map_err(&bad)?;
                        if let Some(expected) = $check(&v) {
                            return Err(bad(expected.to_owned()));
                        }
                        self.$field = v;
                        Ok(())
                    } )*
                    "hystart" => {
                        let on: bool = ParamValue::parse_param(value).map_err(&bad)?;
                        self.slow_start = if on {
                            SlowStartKind::HyStart
                        } else if self.slow_start == SlowStartKind::HyStart {
                            SlowStartKind::Standard
                        } else {
                            self.slow_start
                        };
                        Ok(())
                    }
                    _ => Err(unknown_key(key)),
                }
            }
        }
    };
}

fn unknown_key(key: &str) -> ProfileError {
    ProfileError::UnknownKey {
        key: key.to_owned(),
        valid: Profile::KEYS.join(", "),
    }
}

// Grouped by the hook that reads each switch (a switch read by several is under the first).
profile_params! {
    // ---- read by `init` (`tcp_init_congestion_control()`, module load: the window, the clamps and the clocks) ----
    /// Initial cwnd in segments; 0 = RFC 3390 by segment size (2/3/4, up to 2.6.38);
    /// 10 from 2.6.39 (IW10).
    "initial_cwnd" => initial_cwnd: u32 = any;
    /// `snd_cwnd_clamp`: 65535 in 2.6.20 (a u16), 2^32 - 1 later.
    "cwnd_clamp" => cwnd_clamp: u32 = positive;
    /// A per-path ssthresh like the `ssthresh` route metric (`RTAX_SSTHRESH`), applied at init
    /// whatever the slow-start strategy (0 = none). Not a kernel module parameter.
    "route_ssthresh" => route_ssthresh: u32 = any;
    /// `initial_ssthresh` module parameter (0 = off): 100 in 2.6.20, 0 from 66e1e3b20cbb
    /// (2.6.22). Like the kernel, CUBIC ignores it while HyStart is on.
    "initial_ssthresh" => initial_ssthresh: u32 = any;
    /// `bic_scale` (C = bic_scale * 10 / 1024 = 0.4): 41.
    "bic_scale" => bic_scale: u32 = bic_scale_range;
    /// `snd_cwnd_cnt` width in bits: 16 (a `u16` to 2.6.23, so the 2.6.22 credit slow start
    /// wraps from cwnd 32,768) or 32 (f78a1b38928, 2.6.24).
    "cwnd_cnt_bits" => cwnd_cnt_bits: u32 = cnt_bits_range;
    /// `HZ`: 250 in every profile (the Kconfig default, and this project's machines); the 2011
    /// thread compared 250 and 1000.
    "hz" => hz: u32 = hz_range;
    /// Machine uptime (ms) when the controller is built: sets the jiffies counter
    /// (`INITIAL_JIFFIES = -300 * HZ` at boot) and the ms/us clocks. Default 600000 (10 min):
    /// clear of the first-5-minutes effect; `300000` puts jiffies at 0 on the first ACK.
    "uptime_ms" => uptime_ms: u64 = any;
    /// Clock of `delay_min` and HyStart: `jiffies`, `ms` or `us`.
    "clock" => clock: ClockKind = any;
    // ---- read by `pkts_acked` (the `delayed_ack` EWMA, the delay sample, HyStart, HyStart++) ----
    /// CUBIC `delayed_ack` EWMA: `u32`, `u16`, `capped` or `off`.
    "delayed_ack" => delayed_ack: DelayedAck = any;
    /// RTT sample source: `tsecr`, `jiffies-positive`, `jiffies-or-stamp` or `us`.
    "rtt_sample" => rtt_sample: RttSample = any;
    /// Delay-sample blackout after an epoch start: `always` or `epoch-started`.
    "delay_blackout" => delay_blackout: DelayBlackout = any;
    /// HyStart `hystart_detect` bits: 1 = ACK train, 2 = delay increase.
    "hystart_detect" => hystart_detect: u32 = detect_range;
    /// HyStart `hystart_low_window` (segments): 16.
    "hystart_low_window" => hystart_low_window: u32 = any;
    /// ACK spacing that continues a train, in us: 2000. 2.6.29 uses `msecs_to_jiffies(2)` (the
    /// us value rounded up to jiffies), 2.6.39 `hystart_ack_delta` = 2 ms, 5.6+ the us value.
    "hystart_ack_delta_us" => hystart_ack_delta_us: u32 = signed_range;
    /// `HYSTART_DELAY_MIN` in ticks of `clock` (jiffies, ms or us): 2 (2.6.29), 4 (2.6.39+,
    /// 2b4636a5f8ca), 4000 (5.6+).
    "hystart_delay_min" => hystart_delay_min: u32 = any;
    /// `HYSTART_DELAY_MAX` in ticks of `clock`: 16 (jiffies, ms) or 16000 (us).
    "hystart_delay_max" => hystart_delay_max: u32 = any;
    /// Delay threshold `clamp(delay_min >> shift, min, max)`: 4 until 42eef7a0bb09, then 3.
    "hystart_delay_shift" => hystart_delay_shift: u32 = shift_range;
    /// `HYSTART_MIN_SAMPLES`: 8.
    "hystart_min_samples" => hystart_min_samples: u32 = u8_range;
    /// ACK-train comparison: `ge` (2.6.29) or `gt` (2.6.39+, c54b4b765544).
    "hystart_train_cmp" => hystart_train_cmp: TrainCompare = any;
    /// ACK-train threshold: `half-delay-min` (2.6.29 - 5.5) or `pacing-aware` (5.6+).
    "hystart_train_threshold" => hystart_train_threshold: TrainThreshold = any;
    /// `curr_rtt` rule: `first-samples` or `every-sample` (June 2020).
    "hystart_curr_rtt" => hystart_curr_rtt: CurrRttRule = any;
    /// Where rounds restart: `cong-avoid`, `update-after-low-window` (5.16) or
    /// `update-before-low-window` (2025).
    "hystart_round_reset" => hystart_round_reset: RoundReset = any;
    /// Whether the sender paces: `auto` (quinn: yes), `yes`, `no`.
    "paced" => paced: Paced = any;
    /// `sk_gso_max_size` (bytes): 65536.
    "gso_max_size" => gso_max_size: u32 = positive;
    /// HyStart++ `MIN_RTT_THRESH` in us (RFC 9406 section 4.3): 4000.
    "hspp_min_rtt_thresh_us" => hspp_min_rtt_thresh_us: u32 = any;
    /// HyStart++ `MAX_RTT_THRESH` in us: 16000.
    "hspp_max_rtt_thresh_us" => hspp_max_rtt_thresh_us: u32 = any;
    /// HyStart++ `MIN_RTT_DIVISOR`: 8.
    "hspp_min_rtt_divisor" => hspp_min_rtt_divisor: u32 = positive;
    /// HyStart++ `N_RTT_SAMPLE`: 8.
    "hspp_n_rtt_sample" => hspp_n_rtt_sample: u32 = any;
    /// HyStart++ `CSS_GROWTH_DIVISOR`: 4.
    "hspp_css_growth_divisor" => hspp_css_growth_divisor: u32 = positive;
    /// HyStart++ `CSS_ROUNDS`: 5.
    "hspp_css_rounds" => hspp_css_rounds: u32 = any;
    /// HyStart++ `L` (segments per ACK) when not paced: 8 (infinite when paced).
    "hspp_l_unpaced" => hspp_l_unpaced: u32 = positive;
    // ---- read by `cong_avoid` (the cwnd-limited test, slow start, the growth function, the AI step) ----
    /// cwnd-limited rule: `in-flight-2.6.20`, `in-flight`, `max-packets-out`, `cwnd-usage`.
    "cwnd_limited" => cwnd_limited: CwndLimitedRule = any;
    /// `sk_can_gso()` for the in-flight rules (TSO/GSO NICs: true).
    "gso" => gso: bool = any;
    /// `sysctl_tcp_tso_win_divisor`: 3.
    "tso_win_divisor" => tso_win_divisor: u32 = any;
    /// Slow-start test: `le` (`cwnd <= ssthresh`) or `lt` (`cwnd < ssthresh`, 4.3+).
    "ss_compare" => ss_compare: SsCompare = any;
    /// Slow-start strategy: `standard`, `hystart` (kernel HyStart of this era), `hystart++`
    /// (RFC 9406) or `limited` (RFC 3742 with `max_ssthresh`).
    "slow_start" => slow_start: SlowStartKind = any;
    /// Slow-start increment: `per-ack`, `per-ack-cnt` or `acked`.
    "ss_increment" => ss_increment: SsIncrement = any;
    /// RFC 3742 `tcp_max_ssthresh` (segments, 0 = off; 2.6.22 - 3.12, 886236c1247a): in
    /// those eras it acts in every slow start, as the sysctl did; elsewhere only under
    /// `slow_start=limited`.
    "max_ssthresh" => max_ssthresh: u32 = any;
    /// `max_increment` (packets per 100 ms of RTT): BIC's binary-search cap and CUBIC v2.0/v2.1's
    /// `min_cnt` clamp: 16.
    "max_increment" => max_increment: u32 = positive;
    /// BIC `low_window`: Reno-like below this cwnd: 14.
    "low_window" => low_window: u32 = any;
    /// BIC `smooth_part`: 20.
    "smooth_part" => smooth_part: u32 = any;
    /// BIC passes the slow-start leftover and the ACKed packets to `tcp_cong_avoid_ai` ("tcp:
    /// fix stretch ACK bugs in BIC", 5.7); before it BIC stepped once per ACK.
    "bic_stretch_ack" => bic_stretch_ack: bool = any;
    /// CUBIC `tcp_friendliness`: track the Reno-equivalent window (`beta_scale`).
    "tcp_friendliness" => tcp_friendliness: bool = any;
    /// Cube root: `newton` (2.6.20) or `table` (2.6.22+).
    "cube_root" => cube_root: CubeRootKind = any;
    /// `min_cnt` clamp: `always` (v2.0), `after-k` (v2.1) or `off` (v2.2+).
    "min_cnt" => min_cnt: MinCntClamp = any;
    /// Pre-loss `cnt` rule: `set-50` (v2.0/2.1), `off` (2.6.26 - 2.6.38), `max-20` (2.6.39+).
    "cubic_pre_loss_cap" => cubic_pre_loss_cap: CubicPreLossCap = any;
    /// "No loss yet" test of the caps: `loss-cwnd` (to 2.6.39) or `last-max` (3.x+).
    "pre_loss_key" => pre_loss_key: PreLossKey = any;
    /// Lowest `cnt`: 1 (`cnt == 0 -> 1`) or 2 (`max(cnt, 2)`, 2015: at most 1.5x per RTT).
    "cnt_floor" => cnt_floor: u32 = positive;
    /// Recompute `cnt` at most once per jiffy (d6b1a8a92a14, 2015).
    "jiffy_skip" => jiffy_skip: bool = any;
    /// CUBIC's `t` expression: `u32` (to 2.6.38), `ulong` (2.6.39 - 3.x, the `unsigned long`
    /// of `msecs_to_jiffies`) or `s64` (4.1+).
    "cubic_t" => cubic_t: CubicTime = any;
    /// Additive-increase step: `per-ack` or `acked`.
    "ai_step" => ai_step: AiStep = any;
    // ---- read by `ssthresh` (the reduction) ----
    /// CUBIC `beta` (x/1024): 819 up to 2.6.25, 717 from 2.6.26 (6b3d626321c1).
    "beta" => beta: u32 = beta_range;
    /// BIC `beta` (x/1024): 819 in every era (`tcp_bic.c` never changed it).
    "bic_beta" => bic_beta: u32 = beta_range;
    /// `fast_convergence`: release more bandwidth when a new `last_max` is below the old one.
    "fast_convergence" => fast_convergence: bool = any;
    // ---- read by `undo_cwnd` and `cwnd_event` ----
    /// `undo_cwnd` rule: `last-max`, `loss-cwnd` or `prior-cwnd` (never used by quinn 0.11).
    "undo" => undo: UndoRule = any;
    /// Shift `epoch_start` by the idle time on `CA_EVENT_TX_START` (2015, 4.3+).
    "idle_restart" => idle_restart: bool = any;
    // ---- read by the driver around the hooks (`tcp_ack()`'s order, `tcp_max_burst()`, the pacing rate, MTU probing) ----
    /// Order of growth and loss reaction in one ACK: `avoid-first` (2.6.x/3.x) or
    /// `alert-first` (4.x+).
    "ack_order" => ack_order: AckOrder = any;
    /// `tp->reordering`: 3. It is `tcp_max_burst()` from 2.6.26; 2.6.20 - 2.6.25 burst by a
    /// constant 3 whatever it says (the model has no other use for it).
    "reordering" => reordering: u32 = any;
    /// `tcp_pacing_ss_ratio` (%) of the pacing-rate estimate: 200 from 3.12; 0 (no pacing
    /// rate: `sk_pacing_rate` and `tcp_update_pacing_rate()` came with 3.12) before.
    "pacing_ss_ratio" => pacing_ss_ratio: u32 = any;
    /// `tcp_pacing_ca_ratio` (%): 120 from 3.12; 0 before.
    "pacing_ca_ratio" => pacing_ca_ratio: u32 = any;
    /// `sk_max_pacing_rate` (bytes/s, what `SO_MAX_PACING_RATE` sets), the pacing rate's cap:
    /// `~0U` = 4294967295 while `sk_pacing_rate` was a u32 (3.12 - 4.19), unlimited (`~0UL`,
    /// 18446744073709551615) once 4.20 made it an `unsigned long`.
    "max_pacing_rate" => max_pacing_rate: u64 = any;
    /// `tcp_mtup_probe_success` also sets `snd_ssthresh` (9c6d5e5537e, 2.6.37; before it the
    /// value went to `rcv_ssthresh` by mistake).
    "mtu_probe_ssthresh" => mtu_probe_ssthresh: bool = any;
}

impl Profile {
    /// The default profile.
    pub const DEFAULT_NAME: &'static str = "linux-6";

    /// The profile's name (`linux-2.6.20`, ..., `linux-6`); overrides do not change it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the slow-start strategy was set by name (`slow_start` or `hystart` written),
    /// which is what lets BIC and Reno run kernel HyStart (see [`Profile::slow_start_for`]).
    pub fn slow_start_named(&self) -> bool {
        self.slow_start_named
    }

    /// Every built-in profile name, oldest first.
    pub const NAMES: &'static [&'static str] = &[
        "linux-2.6.20",
        "linux-2.6.22",
        "linux-2.6.26",
        "linux-2.6.29",
        "linux-2.6.39",
        "linux-4.4",
        "linux-6",
    ];

    /// A built-in profile by name.
    pub fn named(name: &str) -> Result<Profile, ProfileError> {
        match name {
            "linux-2.6.20" => Ok(Self::linux_2_6_20()),
            "linux-2.6.22" => Ok(Self::linux_2_6_22()),
            "linux-2.6.26" => Ok(Self::linux_2_6_26()),
            "linux-2.6.29" => Ok(Self::linux_2_6_29()),
            "linux-2.6.39" => Ok(Self::linux_2_6_39()),
            "linux-4.4" => Ok(Self::linux_4_4()),
            "linux-6" => Ok(Self::linux_6()),
            _ => Err(ProfileError::UnknownProfile {
                name: name.to_owned(),
                valid: Self::NAMES.join(", "),
            }),
        }
    }

    /// Linux 2.6.20 (`62d0cfcb27c`): CUBIC v2.0 (df3271f3361, 89b3d9aaf46, 9eb2d627190,
    /// 22119240b1c) with `initial_ssthresh = 100`, the Newton cube root (32-bit `x * x`), the
    /// `min_cnt` clamp, `cnt = 50` before the first loss, `delayed_ack` scaling, timestamp
    /// delay samples; BIC with `initial_ssthresh = 100`; slow start +1 per ACK (ABC off);
    /// 16-bit `snd_cwnd_clamp`; initial cwnd by RFC 3390.
    pub fn linux_2_6_20() -> Profile {
        Profile {
            name: "linux-2.6.20".to_owned(),
            beta: 819,
            initial_ssthresh: 100,
            slow_start: SlowStartKind::Standard,
            clock: ClockKind::Jiffies,
            rtt_sample: RttSample::Tsecr,
            delay_blackout: DelayBlackout::Always,
            cube_root: CubeRootKind::Newton,
            min_cnt: MinCntClamp::Always,
            cubic_pre_loss_cap: CubicPreLossCap::Set50,
            pre_loss_key: PreLossKey::LossCwnd,
            cnt_floor: 1,
            delayed_ack: DelayedAck::U32,
            jiffy_skip: false,
            cubic_t: CubicTime::U32,
            idle_restart: false,
            cwnd_cnt_bits: 16,
            ss_increment: SsIncrement::PerAck,
            ss_compare: SsCompare::Le,
            ai_step: AiStep::PerAck,
            cwnd_limited: CwndLimitedRule::InFlightV1,
            initial_cwnd: 0,
            cwnd_clamp: 65_535,
            undo: UndoRule::LastMax,
            mtu_probe_ssthresh: false,
            ..Self::hystart_2_6_29_defaults("linux-2.6.20")
        }
    }

    /// Linux 2.6.22 (`7dcca30a32a`): CUBIC v2.1 (e1c3e7ab6de9: `min_cnt` only when t >= K),
    /// the table cube root (7e58886b45b, c5f5877c043), `initial_ssthresh = 0` in CUBIC and BIC
    /// (66e1e3b20cbb), RFC 3742 `tcp_max_ssthresh` in `tcp_slow_start` (886236c1247a, off by
    /// default), 32-bit `snd_cwnd_clamp`. Delay samples still from timestamps.
    pub fn linux_2_6_22() -> Profile {
        Profile {
            name: "linux-2.6.22".to_owned(),
            initial_ssthresh: 0,
            cube_root: CubeRootKind::Table,
            min_cnt: MinCntClamp::AfterK,
            ss_increment: SsIncrement::PerAckCnt,
            cwnd_clamp: u32::MAX,
            ..Self::linux_2_6_20()
        }
    }

    /// Linux 2.6.26 (`bce7f793dae`): CUBIC v2.2 (6b3d626321c1: beta 717, `max_increment` /
    /// `min_cnt` and the pre-loss `cnt = 50` removed), delay from `pkts_acked(rtt_us)`
    /// (e7d0c88586a6, 30cfd0baf0a, 2.6.23), the 2.6.26 `tcp_is_cwnd_limited`.
    pub fn linux_2_6_26() -> Profile {
        Profile {
            name: "linux-2.6.26".to_owned(),
            beta: 717,
            rtt_sample: RttSample::JiffiesPositive,
            min_cnt: MinCntClamp::Off,
            cubic_pre_loss_cap: CubicPreLossCap::Off,
            cwnd_limited: CwndLimitedRule::InFlight,
            cwnd_cnt_bits: 32,
            ..Self::linux_2_6_22()
        }
    }

    /// Linux 2.6.29 (`8e0ee43bc2c`): CUBIC v2.3 with the first HyStart (ae27e98a5152):
    /// jiffies clock, ACK train `>=` half `delay_min`, `msecs_to_jiffies(2)` spacing, delay
    /// threshold `clamp(delay_min >> 4, 2, 16)` jiffies << 3, rounds reset in `cong_avoid`;
    /// `delayed_ack` became a wrapping u16.
    pub fn linux_2_6_29() -> Profile {
        Profile {
            name: "linux-2.6.29".to_owned(),
            slow_start: SlowStartKind::HyStart,
            delayed_ack: DelayedAck::U16,
            ..Self::linux_2_6_26()
        }
    }

    /// Linux 2.6.39 (`61c4f2c81c6`), after the March 2011 series: c54b4b765544 (`>` train
    /// test), aac46324e12a (`hystart_ack_delta` = 2 ms), 17a6e9f1aa9b (ms clock), 3b585b34493e
    /// (us RTT stamps at HZ < 1000), 2b4636a5f8ca (delay threshold 4..16 ms), b5ccd0733748
    /// (`cnt <= 20` before the first loss) and b9f47a3aaea (`delayed_ack` capped at 32 << 4);
    /// IW10 (initial cwnd 10); 9c6d5e5537e (MTU probe sets `snd_ssthresh`).
    pub fn linux_2_6_39() -> Profile {
        Profile {
            name: "linux-2.6.39".to_owned(),
            clock: ClockKind::Ms,
            rtt_sample: RttSample::JiffiesOrStamp,
            hystart_train_cmp: TrainCompare::Gt,
            hystart_delay_min: 4,
            hystart_delay_max: 16,
            cubic_pre_loss_cap: CubicPreLossCap::Max20,
            delayed_ack: DelayedAck::Capped,
            cubic_t: CubicTime::Ulong,
            initial_cwnd: 10,
            mtu_probe_ssthresh: true,
            ..Self::linux_2_6_29()
        }
    }

    /// Linux 4.4: 42eef7a0bb09 (delay threshold `delay_min >> 3`), the pre-loss cap keyed on
    /// `last_max_cwnd`, undo with `loss_cwnd`, the 2015 stretch-ACK series (packets counted,
    /// `delayed_ack` removed, `cnt >= 2`, acked-aware slow start and `tcp_cong_avoid_ai`, `t` in
    /// u64), d6b1a8a92a14 (once-per-jiffy), the idle-restart epoch shift, `tcp_in_slow_start`
    /// (`<`), the measurement-based cwnd-limited test (3.16, "tcp: make cwnd-limited checks
    /// measurement-based, and gentler"), us RTT samples, and the sample blackout only once an
    /// epoch started.
    pub fn linux_4_4() -> Profile {
        Profile {
            name: "linux-4.4".to_owned(),
            rtt_sample: RttSample::Us,
            delay_blackout: DelayBlackout::EpochStarted,
            hystart_delay_shift: 3,
            pre_loss_key: PreLossKey::LastMax,
            cnt_floor: 2,
            delayed_ack: DelayedAck::Off,
            jiffy_skip: true,
            cubic_t: CubicTime::S64,
            idle_restart: true,
            ack_order: AckOrder::AlertFirst,
            ss_increment: SsIncrement::Acked,
            ss_compare: SsCompare::Lt,
            ai_step: AiStep::Acked,
            cwnd_limited: CwndLimitedRule::MaxPacketsOut,
            undo: UndoRule::LossCwnd,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            max_pacing_rate: u64::from(u32::MAX),
            ..Self::linux_2_6_39()
        }
    }

    /// Linux 6.x (the default; sources of a 2025 `net-next` snapshot): Dumazet's Dec 2019
    /// series (cff04e2da308 us clock, `hystart_ack_delta_us`, 42f3a8aaae66 pacing-aware ACK
    /// train with the `hystart_ack_delay` cushion, halved when unpaced), Cardwell June 2020
    /// (`curr_rtt` on every sample), 4e1fddc98d25 (5.16, rounds in `hystart_update`),
    /// 25c1a9ca53db (2025, round reset before the low-window return), undo with `prior_cwnd`,
    /// the 2022 `tcp_cwnd_validate` fix (cwnd-limited remembered per window), and an
    /// `unsigned long` pacing rate (4.20).
    pub fn linux_6() -> Profile {
        Profile {
            name: "linux-6".to_owned(),
            clock: ClockKind::Us,
            hystart_delay_min: 4000,
            hystart_delay_max: 16000,
            hystart_train_threshold: TrainThreshold::PacingAware,
            hystart_curr_rtt: CurrRttRule::EverySample,
            hystart_round_reset: RoundReset::UpdateBeforeLowWindow,
            cwnd_limited: CwndLimitedRule::CwndUsage,
            undo: UndoRule::PriorCwnd,
            bic_stretch_ack: true,
            max_pacing_rate: u64::MAX,
            ..Self::linux_4_4()
        }
    }

    /// The constants shared by every era, with 2.6.29's HyStart (used when HyStart is switched
    /// on in an era that predates it) and 2.6.26's machinery.
    fn hystart_2_6_29_defaults(name: &str) -> Profile {
        Profile {
            name: name.to_owned(),
            beta: 717,
            bic_beta: 819,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            max_increment: 16,
            low_window: 14,
            smooth_part: 20,
            initial_ssthresh: 0,
            route_ssthresh: 0,
            slow_start: SlowStartKind::HyStart,
            hystart_detect: 3,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            hystart_delay_min: 2,
            hystart_delay_max: 16,
            hystart_delay_shift: 4,
            hystart_min_samples: 8,
            hystart_train_cmp: TrainCompare::Ge,
            hystart_train_threshold: TrainThreshold::HalfDelayMin,
            hystart_curr_rtt: CurrRttRule::FirstSamples,
            hystart_round_reset: RoundReset::CongAvoid,
            max_ssthresh: 0,
            hspp_min_rtt_thresh_us: 4000,
            hspp_max_rtt_thresh_us: 16000,
            hspp_min_rtt_divisor: 8,
            hspp_n_rtt_sample: 8,
            hspp_css_growth_divisor: 4,
            hspp_css_rounds: 5,
            hspp_l_unpaced: 8,
            hz: 250,
            clock: ClockKind::Jiffies,
            rtt_sample: RttSample::JiffiesPositive,
            uptime_ms: 600_000,
            delay_blackout: DelayBlackout::Always,
            cube_root: CubeRootKind::Table,
            min_cnt: MinCntClamp::Off,
            cubic_pre_loss_cap: CubicPreLossCap::Off,
            pre_loss_key: PreLossKey::LossCwnd,
            cnt_floor: 1,
            delayed_ack: DelayedAck::U16,
            jiffy_skip: false,
            cubic_t: CubicTime::U32,
            idle_restart: false,
            cwnd_cnt_bits: 32,
            bic_stretch_ack: false,
            ack_order: AckOrder::AvoidFirst,
            slow_start_named: false,
            ss_increment: SsIncrement::PerAckCnt,
            ss_compare: SsCompare::Le,
            ai_step: AiStep::PerAck,
            cwnd_limited: CwndLimitedRule::InFlight,
            gso: true,
            tso_win_divisor: 3,
            reordering: 3,
            initial_cwnd: 0,
            cwnd_clamp: u32::MAX,
            gso_max_size: 65_536,
            paced: Paced::Auto,
            pacing_ss_ratio: 0,
            pacing_ca_ratio: 0,
            max_pacing_rate: u64::MAX,
            undo: UndoRule::LastMax,
            mtu_probe_ssthresh: false,
        }
    }

    /// The slow-start strategy `algorithm` runs under this profile. HyStart is code of
    /// `tcp_cubic.c` only (`tcp_bic.c`'s `pkts_acked` only tracks `delayed_ack`, Reno has no
    /// `pkts_acked`): BIC and Reno get standard slow start from an era's default `hystart`,
    /// and HyStart only when the spec names it (`slow_start=hystart`, `hystart=1`), a
    /// non-kernel combination that [`Profile::non_kernel`] reports.
    pub fn slow_start_for(&self, algorithm: Algorithm) -> SlowStartKind {
        match (algorithm, self.slow_start) {
            (Algorithm::Bic | Algorithm::Reno, SlowStartKind::HyStart)
                if !self.slow_start_named =>
            {
                SlowStartKind::Standard
            }
            (_, kind) => kind,
        }
    }

    /// What makes `algorithm` under this profile a combination no kernel had, if anything:
    /// HyStart on BIC or Reno, HyStart++ (never merged into Linux), or RFC 3742 limited slow
    /// start in an era without `tcp_max_ssthresh` (removed in 3.13).
    pub fn non_kernel(&self, algorithm: Algorithm) -> Option<&'static str> {
        match self.slow_start_for(algorithm) {
            SlowStartKind::HyStart if algorithm != Algorithm::Cubic => {
                Some("hystart outside cubic")
            }
            SlowStartKind::HyStartPp => Some("hystart++"),
            SlowStartKind::Limited if self.ss_increment != SsIncrement::PerAckCnt => {
                Some("limited slow start outside 2.6.22 - 3.12")
            }
            SlowStartKind::HyStart
                if matches!(
                    self.name.as_str(),
                    "linux-2.6.20" | "linux-2.6.22" | "linux-2.6.26"
                ) =>
            {
                Some("hystart before 2.6.29")
            }
            _ => None,
        }
    }

    /// The keys whose values differ from `other` (for printing an override list).
    pub fn diff_keys(&self, other: &Profile) -> Vec<&'static str> {
        Self::KEYS
            .iter()
            .copied()
            .filter(|k| *k != "hystart" && self.get(k).ok() != other.get(k).ok())
            .collect()
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::linux_6()
    }
}
