//! Kernel HyStart (`tcp_cubic.c`, first in 2.6.29 by ae27e98a5152): ACK-train and
//! delay-increase detection of the slow-start exit, with the clock, thresholds, comparison
//! operators and round logic of each era (see [`crate::profile::Profile`]'s `hystart_*` keys).
//!
//! Rounds are packet-number windows: a round starts with `end_seq = snd_nxt` and ends when
//! `snd_una` (largest acknowledged + 1) passes it. `delay_min` is CUBIC's, kept
//! beside this state in [`crate::slow_start::SlowStart`].

use crate::events::ExitReason;
use crate::profile::{ClockKind, CurrRttRule, Profile, TrainCompare, TrainThreshold};
use crate::slow_start::delay::delay_ticks;

/// `HYSTART_ACK_TRAIN`.
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
/// `HYSTART_DELAY`.
pub const HYSTART_DELAY: u32 = 0x2;

/// HyStart's part of `struct bictcp`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HyStart {
    pub(crate) found: u32,
    pub(crate) round_start: u32,
    pub(crate) end_seq: u64,
    pub(crate) last_ack: u32,
    pub(crate) curr_rtt: u32,
    pub(crate) sample_cnt: u32,
}

crate::accessors!(HyStart {
    /// `found`: detection bits (the 5.6+ boolean is `found != 0`).
    found = found: u32, set_found;
    /// `round_start`: HyStart clock at the round start.
    round_start = round_start: u32, set_round_start;
    /// `end_seq`: `snd_nxt` at the round start (packet number).
    end_seq = end_seq: u64, set_end_seq;
    /// `last_ack` (`last_jiffies` in 2.6.29): clock of the last ACK of the current train.
    last_ack = last_ack: u32, set_last_ack;
    /// `curr_rtt`: minimum delay of this round, in the unit of `delay_min`; `u32::MAX` = none
    /// (2.6.29 - 5.5 used 0 for "none" with the same effect).
    curr_rtt = curr_rtt: u32, set_curr_rtt;
    /// `sample_cnt`: samples taken in this round.
    sample_cnt = sample_cnt: u32, set_sample_cnt;
});

/// What `hystart_update()` needs besides its own state.
#[derive(Debug, Clone, Copy)]
pub struct HyStartInput<'a> {
    /// The profile (HyStart constants).
    pub profile: &'a Profile,
    /// The HyStart clock now (jiffies, ms or us as `profile.clock`).
    pub now: u32,
    /// `delay_min` (shared with the growth function).
    pub delay_min: u32,
    /// `hystart_ack_delay()` in us: the pacing-rate cushion of 5.6+ (0 without a rate).
    pub ack_delay_us: u32,
    /// `sk_pacing_status != SK_PACING_NONE`.
    pub paced: bool,
    /// HZ (for the jiffies-era spacing `msecs_to_jiffies(2)`).
    pub hz: u32,
}

impl HyStart {
    /// `bictcp_hystart_reset()`: a new round at `now` ending at `snd_nxt`.
    pub(crate) fn reset_round(&mut self, now: u32, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `after(ack, end_seq)` with `ack` = `snd_una`: the round is over.
    pub fn round_over(&self, snd_una: u64) -> bool {
        snd_una > self.end_seq
    }

    /// The ACK spacing that continues a train, in ticks of the clock: `msecs_to_jiffies(2)`
    /// (2.6.29), `hystart_ack_delta` ms (2.6.39 - 5.5) or `hystart_ack_delta_us` (5.6+).
    pub fn ack_delta_ticks(p: &Profile, hz: u32) -> u32 {
        match p.clock {
            ClockKind::Jiffies => crate::clock::usecs_to_jiffies(hz, p.hystart_ack_delta_us),
            ClockKind::Ms => p.hystart_ack_delta_us / 1000,
            ClockKind::Us => p.hystart_ack_delta_us,
        }
    }

    /// The ACK-train threshold in clock ticks.
    pub(crate) fn train_threshold(inp: &HyStartInput<'_>) -> u32 {
        let p = inp.profile;
        match p.hystart_train_threshold {
            // delay_min >> 4: half the minimum RTT (in the <<3 unit), i.e. about RTT/2.
            TrainThreshold::HalfDelayMin => match p.clock {
                ClockKind::Jiffies | ClockKind::Ms => inp.delay_min >> 4,
                ClockKind::Us => inp.delay_min >> 1,
            },
            TrainThreshold::PacingAware => {
                let ack_delay = match p.clock {
                    ClockKind::Us => inp.ack_delay_us,
                    ClockKind::Ms => inp.ack_delay_us / 1000,
                    ClockKind::Jiffies => inp.ack_delay_us / (1_000_000 / inp.hz.max(1)),
                };
                let thr = delay_ticks(inp.delay_min, p.clock).wrapping_add(ack_delay);
                // Pacing might have delayed packets up to RTT/2 during slow start.
                if inp.paced {
                    thr
                } else {
                    thr >> 1
                }
            }
        }
    }

    /// The delay-increase threshold: `clamp(delay_min >> shift, MIN, MAX)` with MIN/MAX in
    /// ticks of the clock (`<< 3` in the jiffies and ms eras).
    pub fn delay_threshold(p: &Profile, delay_min: u32) -> u32 {
        let (lo, hi) = match p.clock {
            ClockKind::Jiffies | ClockKind::Ms => (
                p.hystart_delay_min.wrapping_shl(3),
                p.hystart_delay_max.wrapping_shl(3),
            ),
            ClockKind::Us => (p.hystart_delay_min, p.hystart_delay_max),
        };
        // The kernel's clamp(): min(max(val, lo), hi).
        (delay_min >> p.hystart_delay_shift.min(31)).max(lo).min(hi)
    }

    /// The two detection tests of `hystart_update()` (the caller applies the era's gates and
    /// round resets). Returns the exit reason when one fired (`found` is set; the caller sets
    /// `ssthresh = cwnd`).
    pub(crate) fn detect(&mut self, inp: &HyStartInput<'_>, delay: u32) -> Option<ExitReason> {
        let p = inp.profile;
        let mut fired = None;
        if p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let gap = inp.now.wrapping_sub(self.last_ack);
            let delta = Self::ack_delta_ticks(p, inp.hz);
            // 2.6.29 compares jiffies unsigned; from c54b4b765544 it is (s32) <= int.
            let in_train = match p.clock {
                ClockKind::Jiffies => gap <= delta,
                ClockKind::Ms | ClockKind::Us => (gap as i32) <= delta as i32,
            };
            if in_train {
                self.last_ack = inp.now;
                let thr = Self::train_threshold(inp);
                // `(s32)(now - round_start) > threshold` compares as unsigned (u32 threshold).
                let elapsed = inp.now.wrapping_sub(self.round_start);
                let long_enough = match p.hystart_train_cmp {
                    TrainCompare::Ge => elapsed >= thr,
                    TrainCompare::Gt => elapsed > thr,
                };
                if long_enough {
                    self.found |= HYSTART_ACK_TRAIN;
                    fired = Some(ExitReason::AckTrain);
                }
            }
        }
        if p.hystart_detect & HYSTART_DELAY != 0 {
            // obtain the minimum delay of more than sampling packets
            if p.hystart_curr_rtt == CurrRttRule::EverySample && self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            if self.sample_cnt < p.hystart_min_samples {
                if self.curr_rtt > delay {
                    self.curr_rtt = delay;
                }
                self.sample_cnt += 1;
            } else if self.curr_rtt != u32::MAX
                && self.curr_rtt
                    > inp
                        .delay_min
                        .wrapping_add(Self::delay_threshold(p, inp.delay_min))
            {
                self.found |= HYSTART_DELAY;
                fired = fired.or(Some(ExitReason::Delay));
            }
        }
        fired
    }
}
