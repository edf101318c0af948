//! The era switches of a [`crate::Profile`]: each enum names one way a kernel version did
//! something, with the sysfs-like spelling used by `Profile::set` / `Profile::get`.
//!
//! Every variant's doc comment says which kernels behave that way; `PROFILES.md` has the table.

use std::fmt;
use std::str::FromStr;

/// Defines a plain enum with kebab-case names, `FromStr`, `Display` and a `NAMES` list.
macro_rules! kind_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every accepted spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[ $( $text ),+ ];

            /// The canonical spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(format!("one of {}", Self::NAMES.join("|"))),
                }
            }
        }
    };
}

kind_enum! {
    /// Clock used for `delay_min`, HyStart's round/ACK-train timing and RTT samples.
    pub enum ClockKind {
        /// Jiffies (`delay_min` in jiffies << 3); 2.6.20 - 2.6.38.
        Jiffies => "jiffies",
        /// Milliseconds (`delay_min` in ms << 3): `jiffies_to_msecs(jiffies)` at HZ >= 1000, a
        /// real-time ms clock below; 2.6.39 - 5.5 (17a6e9f1aa9b).
        Ms => "ms",
        /// Microseconds (`tcp_mstamp`, `delay_min` in us); 5.6+ (cff04e2da308).
        Us => "us",
    }
}

kind_enum! {
    /// Where the delay sample of CUBIC comes from, and how it is quantised.
    pub enum RttSample {
        /// TCP timestamp echo, taken in `cong_avoid` before the cwnd-limited test: the RTT is
        /// `jiffies(now) - jiffies(sent)`; 2.6.20 - 2.6.22.
        Tsecr => "tsecr",
        /// `pkts_acked(rtt_us)` with `rtt_us = jiffies_to_usecs(seq_rtt)` only when
        /// `seq_rtt > 0` jiffies (a 0-jiffy RTT gives no sample); 2.6.23 - 2.6.38 (e7d0c88586a6).
        JiffiesPositive => "jiffies-positive",
        /// As above with `seq_rtt >= 0`, but a microsecond `ktime` stamp when HyStart is on and
        /// HZ < 1000 (3b585b34493e, `TCP_CONG_RTT_STAMP`); 2.6.39 - 3.14.
        JiffiesOrStamp => "jiffies-or-stamp",
        /// Microsecond RTT from the skb timestamps; 3.15+.
        Us => "us",
    }
}

kind_enum! {
    /// The cube root of `bic_K`.
    pub enum CubeRootKind {
        /// 2.6.20's Newton-Raphson loop from `1 << (fls64(a) / 3)` (computed in 64 bits here;
        /// the kernel's 32-bit `x * x` is recorded as an overflow guard).
        Newton => "newton",
        /// The 64-entry table plus one Newton step (7e58886b45b, c5f5877c043); 2.6.22+.
        Table => "table",
    }
}

kind_enum! {
    /// CUBIC v2.0/v2.1 `min_cnt` clamp: at most `max_increment` packets per 100 ms of RTT.
    pub enum MinCntClamp {
        /// No clamp; 2.6.26+ (6b3d626321c1, v2.2).
        Off => "off",
        /// Always applied when `delay_min > 0`; 2.6.20 (v2.0).
        Always => "always",
        /// Only when `t >= K` ("use concave growth when the target is above the origin");
        /// 2.6.22 - 2.6.25 (e1c3e7ab6de9, v2.1).
        AfterK => "after-k",
    }
}

kind_enum! {
    /// CUBIC's `cnt` rule before the first loss.
    pub enum CubicPreLossCap {
        /// None; 2.6.26 - 2.6.38 (removed by 6b3d626321c1).
        Off => "off",
        /// `cnt = 50` unconditionally; 2.6.20 - 2.6.25 (v2.0/v2.1).
        Set50 => "set-50",
        /// `cnt = min(cnt, 20)` (5% per RTT); 2.6.39+ (b5ccd0733748).
        Max20 => "max-20",
    }
}

kind_enum! {
    /// Which variable says "no loss yet" for the pre-loss `cnt` caps (CUBIC and BIC).
    pub enum PreLossKey {
        /// `loss_cwnd == 0`; up to 2.6.39.
        LossCwnd => "loss-cwnd",
        /// `last_max_cwnd == 0`; by 3.6.
        LastMax => "last-max",
    }
}

kind_enum! {
    /// CUBIC's `delayed_ack` EWMA of packets per ACK (x16) and the `cnt` scaling by it.
    pub enum DelayedAck {
        /// No EWMA, no scaling (stretch-ACK work, 2015; `cnt` counts packets).
        Off => "off",
        /// `u32` EWMA, unbounded; 2.6.20 - 2.6.28.
        U32 => "u32",
        /// `u16` EWMA that wraps (and can reach 0); 2.6.29 - 2.6.38.
        U16 => "u16",
        /// Capped at `32 << 4` (b9f47a3aaea, May 2011); 2.6.39+ until removed.
        Capped => "capped",
    }
}

kind_enum! {
    /// How slow start grows cwnd on one ACK.
    pub enum SsIncrement {
        /// `+1` per ACK (ABC off); 2.6.20.
        PerAck => "per-ack",
        /// `snd_cwnd_cnt += cwnd` (or `max_ssthresh / 2` above `max_ssthresh`, RFC 3742) then
        /// one `+1` per `cwnd` of credit; 2.6.22 - 3.12 (886236c1247a).
        PerAckCnt => "per-ack-cnt",
        /// `cwnd = min(cwnd + acked, ssthresh)`, leftover ACKed packets go to congestion
        /// avoidance (9f9843a751d0 and the 2015 stretch-ACK series); 4.x+.
        Acked => "acked",
    }
}

kind_enum! {
    /// The slow-start test.
    pub enum SsCompare {
        /// `snd_cwnd <= snd_ssthresh`; up to 4.2.
        Le => "le",
        /// `snd_cwnd < snd_ssthresh` (`tcp_in_slow_start`); 4.3+.
        Lt => "lt",
    }
}

kind_enum! {
    /// The additive-increase step of congestion avoidance.
    pub enum AiStep {
        /// One ACK = one step: `if cnt_acc >= w { cwnd++; cnt_acc = 0 } else cnt_acc++`.
        PerAck => "per-ack",
        /// `tcp_cong_avoid_ai(w, acked)` counting packets (2015 stretch-ACK series).
        Acked => "acked",
    }
}

kind_enum! {
    /// The "is the sender cwnd-limited?" test that gates all growth.
    pub enum CwndLimitedRule {
        /// 2.6.20 - 2.6.25 `tcp_is_cwnd_limited(in_flight)`: `in_flight >= cwnd`, or with GSO
        /// `left * tso_win_divisor < cwnd` (or `left <= reordering` without a divisor).
        InFlightV1 => "in-flight-2.6.20",
        /// 2.6.26 - 3.15: `in_flight >= cwnd`, or GSO with `left * tso_win_divisor < cwnd` and
        /// `left * mss < gso_max_size`, or `left <= reordering`.
        InFlight => "in-flight",
        /// 3.16 - 5.x ("tcp: make cwnd-limited checks measurement-based, and gentler"): slow
        /// start `cwnd < 2 * max_packets_out`, otherwise the `is_cwnd_limited` flag of the
        /// window that set `max_packets_out`.
        MaxPacketsOut => "max-packets-out",
        /// 5.19+ (f4ce91ce12a7, "tcp: fix tcp_cwnd_validate() to not forget
        /// is_cwnd_limited"): a window that was cwnd-limited once stays so until `snd_una`
        /// passes it, and that flag is tested first (limited whatever slow start's
        /// `2 * max_packets_out` says); otherwise slow start's rule, else not limited.
        CwndUsage => "cwnd-usage",
    }
}

kind_enum! {
    /// Slow-start strategy.
    pub enum SlowStartKind {
        /// Plain slow start (with the `initial_ssthresh` clamp when set).
        Standard => "standard",
        /// Kernel HyStart of the era (`hystart=1`); ignores `initial_ssthresh` as the kernel does.
        HyStart => "hystart",
        /// HyStart++ (RFC 9406) with Conservative Slow Start.
        HyStartPp => "hystart++",
        /// RFC 3742 Limited Slow Start above `max_ssthresh`.
        Limited => "limited",
    }
}

kind_enum! {
    /// Comparison of the ACK-train length with its threshold.
    pub enum TrainCompare {
        /// `>=`; 2.6.29 - 2.6.38.
        Ge => "ge",
        /// `>`; 2.6.39+ (c54b4b765544).
        Gt => "gt",
    }
}

kind_enum! {
    /// ACK-train threshold.
    pub enum TrainThreshold {
        /// `delay_min >> 4` (half the minimum RTT in the era's `<< 3` unit); 2.6.29 - 5.5.
        HalfDelayMin => "half-delay-min",
        /// `delay_min + hystart_ack_delay` (pacing-rate cushion), halved when unpaced; 5.6+.
        PacingAware => "pacing-aware",
    }
}

kind_enum! {
    /// How HyStart's `curr_rtt` follows the samples of a round.
    pub enum CurrRttRule {
        /// Minimum of the first `hystart_min_samples` samples only; up to 5.7.
        FirstSamples => "first-samples",
        /// Minimum of every sample of the round (Cardwell, June 2020); 5.8+.
        EverySample => "every-sample",
    }
}

kind_enum! {
    /// Where HyStart starts a new round.
    pub enum RoundReset {
        /// In `cong_avoid` when `after(ack, end_seq)` (only while cwnd-limited); 2.6.29 - 5.15.
        CongAvoid => "cong-avoid",
        /// In `hystart_update` on `after(snd_una, end_seq)`, after the `hystart_low_window`
        /// return; 5.16 (4e1fddc98d25) until 2025.
        UpdateAfterLowWindow => "update-after-low-window",
        /// In `hystart_update`, before the low-window return (25c1a9ca53db, 2025).
        UpdateBeforeLowWindow => "update-before-low-window",
    }
}

kind_enum! {
    /// The 1 s blackout of delay samples after an epoch start.
    pub enum DelayBlackout {
        /// `(s32)(jiffies - epoch_start) < HZ` even when `epoch_start == 0` (samples are lost
        /// whenever the jiffies counter reads below HZ as an s32, e.g. the first 5 minutes of
        /// uptime); up to 2.6.39 at least.
        Always => "always",
        /// Only when `epoch_start != 0`; 4.4+ (read in the 4.4 and 5.0 sources).
        EpochStarted => "epoch-started",
    }
}

kind_enum! {
    /// `undo_cwnd` of the era (quinn 0.11 never undoes; kept for completeness and tests).
    pub enum UndoRule {
        /// `max(cwnd, last_max_cwnd)`; 2.6.20 - 2.6.39.
        LastMax => "last-max",
        /// `max(cwnd, loss_cwnd)`; 3.x - 4.x.
        LossCwnd => "loss-cwnd",
        /// `max(cwnd, prior_cwnd)` (`tcp_reno_undo_cwnd`); 4.13+.
        PriorCwnd => "prior-cwnd",
    }
}

kind_enum! {
    /// Whether the sender paces (kernel HyStart 5.6+ halves its ACK-train threshold when not;
    /// HyStart++ uses L = infinity when paced, 8 otherwise).
    pub enum Paced {
        /// What the transport says: quinn always paces, so `auto` means paced under quinn.
        Auto => "auto",
        /// Paced (like kernel TCP with `fq` or internal pacing, `sk_pacing_status != NONE`).
        Yes => "yes",
        /// Not paced (kernel CUBIC without `fq`): halved train threshold, a shorter train exits.
        No => "no",
    }
}

impl Paced {
    /// Resolve against what the transport does.
    pub fn resolve(self, transport_paces: bool) -> bool {
        match self {
            Paced::Auto => transport_paces,
            Paced::Yes => true,
            Paced::No => false,
        }
    }
}

kind_enum! {
    /// How `bictcp_update()` computes CUBIC's `t` (1/1024 s since the epoch start plus
    /// `delay_min`).
    pub enum CubicTime {
        /// All u32: `((jiffies + (delay_min >> 3) - epoch_start) << 10) / HZ`; 2.6.20 - 2.6.38.
        U32 => "u32",
        /// The same expression with `msecs_to_jiffies(delay_min >> 3)`, which returns an
        /// `unsigned long`: on a 64-bit machine the sum, the shift and the division are 64-bit
        /// and wrap there (a jiffies wrap makes `now - epoch_start` near 2^64), and the result is
        /// truncated to the u32 `t`; 2.6.39 - 3.x (17a6e9f1aa9b).
        Ulong => "ulong",
        /// `t = (s32)(jiffies - epoch_start)` widened to u64, plus the delay, shifted and divided
        /// in u64 (the 2015 stretch-ACK series); 4.1+.
        S64 => "s64",
    }
}

kind_enum! {
    /// The order inside one ACK of `tcp_ack()`: the window growth (`tcp_cong_avoid`) and the
    /// loss reaction (`tcp_fastretrans_alert`).
    pub enum AckOrder {
        /// `tcp_cong_avoid` first (when `tcp_may_raise_cwnd` allows: not in Recovery/CWR, and
        /// with ECE only below ssthresh), then `tcp_fastretrans_alert`: the ACK that reveals a
        /// loss grows cwnd before ssthresh is taken, the ACK that ends Recovery does not grow
        /// it; 2.6.x - 3.x.
        AvoidFirst => "avoid-first",
        /// `tcp_fastretrans_alert` first, then growth unless in Recovery/CWR
        /// (`tcp_in_cwnd_reduction`): the loss-revealing ACK does not grow cwnd and ssthresh
        /// comes from the pre-ACK window, the ACK that ends Recovery grows it; 4.x+ (4.4's
        /// `tcp_ack`, later `tcp_cong_control`).
        AlertFirst => "alert-first",
    }
}
