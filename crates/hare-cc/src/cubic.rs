//! CUBIC (`net/ipv4/tcp_cubic.c`) window growth, every era: `bictcp_update()`,
//! `bictcp_recalc_ssthresh()`, the `delayed_ack` EWMA of `bictcp_acked()`, `bictcp_reset()`
//! and the undo rule. HyStart is in [`crate::hystart`]; `delay_min` / `epoch_start` are the
//! shared [`DelayState`].
//!
//! The arithmetic is the kernel's: u32 where the kernel uses u32 (wrapping, never panicking),
//! u64 where it uses u64. Where the kernel would divide by zero or loop forever (2.6.20's cube
//! root, a wrapped u16 `delayed_ack`, a zero Reno step), hare takes a defined path and counts
//! it in [`Cubic::guards`].

use crate::clock::KernelClock;
use crate::cuberoot::{cube_root_newton, cube_root_table};
use crate::delay::DelayState;
use crate::ops::{CongestionOps, OpsCtx};
use crate::profile::{
    AiStep, ClockKind, CubeRootKind, CubicPreLossCap, CubicTime, DelayedAck, MinCntClamp,
    PreLossKey, Profile, UndoRule,
};
use crate::tcp_sock::{CaState, TcpSock};

/// `BICTCP_BETA_SCALE`.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: CUBIC time is in 1/1024 s.
pub const BICTCP_HZ: u32 = 10;
/// `ACK_RATIO_SHIFT`.
pub const ACK_RATIO_SHIFT: u32 = 4;
/// `ACK_RATIO_LIMIT` (b9f47a3aaea): 32 packets per ACK, << 4.
pub const ACK_RATIO_LIMIT: u32 = 32 << ACK_RATIO_SHIFT;

/// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)` with integer division at each step
/// (module init). 15 for beta 717, 23 for 819.
pub fn beta_scale(beta: u32) -> u32 {
    let den = BICTCP_BETA_SCALE.saturating_sub(beta).max(1);
    8 * (BICTCP_BETA_SCALE + beta) / 3 / den
}

/// `cube_rtt_scale = bic_scale * 10` (410): 1024 * C / RTT with C = 0.4 at a 100 ms RTT.
pub fn cube_rtt_scale(bic_scale: u32) -> u32 {
    bic_scale.wrapping_mul(10)
}

/// `cube_factor = 2^40 / (bic_scale * 10)` (2,681,735,677 for 41).
pub fn cube_factor(bic_scale: u32) -> u64 {
    (1u64 << (10 + 3 * BICTCP_HZ)) / u64::from(cube_rtt_scale(bic_scale).max(1))
}

/// `delta = (cube_rtt_scale * offs^3) >> 40` (u64, wrapping like the kernel's), truncated to
/// the u32 the kernel stores it in: segments away from the origin after `offs` 1/1024 s.
pub fn cubic_delta(cube_rtt_scale: u32, offs: u64) -> u32 {
    (u64::from(cube_rtt_scale)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        >> (10 + 3 * BICTCP_HZ)) as u32
}

/// One connection's `struct bictcp` growth state (CUBIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cubic {
    /// `cnt`: ACKs (old eras) or packets (modern) per +1 cwnd.
    pub cnt: u32,
    /// `last_max_cwnd` (W_max).
    pub last_max_cwnd: u32,
    /// `loss_cwnd`: cwnd at the last loss.
    pub loss_cwnd: u32,
    /// `last_cwnd`: cwnd when `cnt` was last computed.
    pub last_cwnd: u32,
    /// `last_time`: jiffies when `cnt` was last computed.
    pub last_time: u32,
    /// `bic_origin_point`.
    pub bic_origin_point: u32,
    /// `bic_K` in 1/1024 s.
    pub bic_k: u32,
    /// `ack_cnt`: ACKs (or packets) in this epoch, for the Reno estimate.
    pub ack_cnt: u32,
    /// `tcp_cwnd`: the Reno-equivalent window.
    pub tcp_cwnd: u32,
    /// `delayed_ack`: packets per ACK << 4 (EWMA), initially 2 << 4.
    pub delayed_ack: u32,
    /// `beta_scale` computed at "module init" (construction).
    pub beta_scale: u32,
    /// `cube_rtt_scale`.
    pub cube_rtt_scale: u32,
    /// `cube_factor`.
    pub cube_factor: u64,
    /// Times a kernel overflow / divide-by-zero / endless loop was replaced by a defined path.
    pub guards: u32,
}

impl Cubic {
    /// `bictcp_init()`'s state for a profile (constants computed as at module init).
    pub fn new(p: &Profile) -> Self {
        Cubic {
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            beta_scale: beta_scale(p.beta),
            cube_rtt_scale: cube_rtt_scale(p.bic_scale),
            cube_factor: cube_factor(p.bic_scale),
            guards: 0,
        }
    }

    /// `bictcp_reset()` on entering `TCP_CA_Loss` (the caller resets the shared
    /// [`DelayState`]). `loss_cwnd` is part of the reset up to 2.6.39; from 3.x (when undo
    /// started to use it) it is cleared only at init.
    pub fn reset_on_loss(&mut self, p: &Profile) {
        let loss_cwnd = self.loss_cwnd;
        let guards = self.guards;
        *self = Cubic::new(p);
        self.guards = guards;
        if p.undo == UndoRule::LossCwnd {
            self.loss_cwnd = loss_cwnd;
        }
    }

    /// `bictcp_acked()`'s EWMA: `delayed_ack += cnt - delayed_ack / 16` (state Open only,
    /// checked by the caller), in the width of the era.
    pub fn ack_ratio_sample(&mut self, cnt: u32, kind: DelayedAck) {
        match kind {
            DelayedAck::Off => {}
            DelayedAck::U32 => {
                // 2.6.20: `cnt -= delayed_ack >> 4; delayed_ack += cnt` in u32.
                self.delayed_ack = self
                    .delayed_ack
                    .wrapping_add(cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
            }
            DelayedAck::U16 => {
                // 2.6.29: the same on a u16 field, which wraps (and may hit 0).
                let next = self
                    .delayed_ack
                    .wrapping_add(cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
                self.delayed_ack = next & 0xffff;
            }
            DelayedAck::Capped => {
                let ratio = self
                    .delayed_ack
                    .wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT)
                    .wrapping_add(cnt);
                self.delayed_ack = ratio.min(ACK_RATIO_LIMIT);
            }
        }
    }

    /// K for `last_max - cwnd` with the era's cube root: `cubic_root(cube_factor * diff)`.
    pub fn compute_k(&mut self, diff: u32, kind: CubeRootKind) -> u32 {
        let a = self.cube_factor.wrapping_mul(u64::from(diff));
        match kind {
            CubeRootKind::Newton => {
                let r = cube_root_newton(a);
                if r.overflowed {
                    self.guards = self.guards.saturating_add(1);
                }
                r.value
            }
            CubeRootKind::Table => cube_root_table(a),
        }
    }

    /// `bictcp_update(ca, cwnd, acked)` of the era (`acked` = 1 per ACK in the old eras).
    pub fn update(&mut self, u: &CubicUpdate<'_>, delay: &mut DelayState) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;
        self.ack_cnt = self.ack_cnt.wrapping_add(u.acked);

        // Recompute at most every HZ/32 jiffies while cwnd is unchanged.
        if self.last_cwnd == cwnd
            && (now.wrapping_sub(self.last_time) as i32) <= (u.clock.hz() / 32) as i32
        {
            return;
        }

        // d6b1a8a92a14: the CUBIC function updates cnt at most once per jiffy.
        let skip_recompute = p.jiffy_skip && delay.epoch_start != 0 && now == self.last_time;
        if !skip_recompute {
            self.recompute_cnt(u, delay);
        }

        if p.tcp_friendliness {
            self.reno_friendliness(cwnd);
        }

        match p.delayed_ack {
            DelayedAck::Off => {}
            _ => {
                match (self.cnt << ACK_RATIO_SHIFT).checked_div(self.delayed_ack) {
                    Some(cnt) => self.cnt = cnt,
                    // A wrapped u16 ratio: the kernel divides by zero here.
                    None => self.guards = self.guards.saturating_add(1),
                }
            }
        }
        // `if (cnt == 0) cnt = 1` (old) / `cnt = max(cnt, 2U)` (2015+).
        self.cnt = self.cnt.max(p.cnt_floor);
    }

    /// The part of `bictcp_update()` between the gates and the Reno-friendliness step.
    fn recompute_cnt(&mut self, u: &CubicUpdate<'_>, delay: &mut DelayState) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;
        self.last_cwnd = cwnd;
        self.last_time = now;

        if delay.epoch_start == 0 {
            delay.epoch_start = now; // record the beginning of an epoch
            self.ack_cnt = u.acked; // start counting
            self.tcp_cwnd = cwnd; // sync with cubic
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                self.bic_k = self.compute_k(self.last_max_cwnd - cwnd, p.cube_root);
                self.bic_origin_point = self.last_max_cwnd;
            }
        }

        // t in 1/1024 s since the epoch start, plus the minimum delay.
        let dmin_j = delay.delay_min_jiffies(u.clock_kind, u.clock);
        let hz = u64::from(u.clock.hz());
        let t: u64 = match p.cubic_t {
            // 4.1+: `t = (s32)(tcp_jiffies32 - epoch_start); t += delay; t <<= 10; t /= HZ`
            // on a u64 (the 2015 stretch-ACK series).
            CubicTime::S64 => {
                let elapsed = now.wrapping_sub(delay.epoch_start) as i32 as i64 as u64;
                (elapsed.wrapping_add(u64::from(dmin_j)) << BICTCP_HZ) / hz
            }
            // 2.6.39 - 3.x: `msecs_to_jiffies()` returns `unsigned long`, so the u32 jiffies
            // and epoch are widened and the sum, shift and division are 64-bit on a 64-bit
            // machine; the result is stored in the u32 `t`. A jiffies wrap between the epoch
            // start and now makes the difference wrap near 2^64, not 2^32.
            CubicTime::Ulong => {
                let sum = u64::from(now)
                    .wrapping_add(u64::from(dmin_j))
                    .wrapping_sub(u64::from(delay.epoch_start));
                u64::from(((sum << BICTCP_HZ) / hz) as u32)
            }
            // To 2.6.38: all u32 (`delay_min >> 3` is a u32).
            CubicTime::U32 => {
                let sum = now.wrapping_add(dmin_j).wrapping_sub(delay.epoch_start);
                u64::from((sum << BICTCP_HZ) / u.clock.hz())
            }
        };
        let k = u64::from(self.bic_k);
        let offs = k.abs_diff(t);

        let delta = cubic_delta(self.cube_rtt_scale, offs);
        let target = if t < k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        };

        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            cwnd.wrapping_mul(100) // very small increment
        };

        // v2.0 / v2.1: at most max_increment packets per 100 ms of RTT.
        if p.min_cnt != MinCntClamp::Off && delay.delay_min > 0 {
            let den = 10u32
                .wrapping_mul(p.max_increment)
                .wrapping_mul(delay.delay_min);
            match cwnd
                .wrapping_mul(u.clock.hz())
                .wrapping_mul(8)
                .checked_div(den)
            {
                None => self.guards = self.guards.saturating_add(1),
                Some(min_cnt) => {
                    let applies = match p.min_cnt {
                        MinCntClamp::Always => true,
                        MinCntClamp::AfterK => t >= k,
                        MinCntClamp::Off => false,
                    };
                    if self.cnt < min_cnt && applies {
                        self.cnt = min_cnt;
                    }
                }
            }
        }

        let no_loss_yet = match p.pre_loss_key {
            PreLossKey::LossCwnd => self.loss_cwnd == 0,
            PreLossKey::LastMax => self.last_max_cwnd == 0,
        };
        match p.cubic_pre_loss_cap {
            CubicPreLossCap::Off => {}
            // v2.0/v2.1 "slow start and low utilization": could be aggressive in slow start.
            CubicPreLossCap::Set50 => {
                if no_loss_yet {
                    self.cnt = 50;
                }
            }
            // b5ccd0733748: increase cwnd 5% per RTT while the bandwidth is unknown.
            CubicPreLossCap::Max20 => {
                if no_loss_yet && self.cnt > 20 {
                    self.cnt = 20;
                }
            }
        }
    }

    /// TCP-friendly region: `tcp_cwnd` gains 1 per `(cwnd * beta_scale) >> 3` ACKs (packets);
    /// when ahead of cwnd, `cnt` may not exceed `cwnd / (tcp_cwnd - cwnd)`.
    fn reno_friendliness(&mut self, cwnd: u32) {
        let mut delta = cwnd.wrapping_mul(self.beta_scale) >> 3;
        if delta == 0 {
            // The kernel's `while (ack_cnt > delta)` would never end (5.x+ clamps beta_scale).
            self.guards = self.guards.saturating_add(1);
            delta = 1;
        }
        if self.ack_cnt > delta {
            // The kernel's loop `while (ack_cnt > delta) { ack_cnt -= delta; tcp_cwnd++; }`
            // in closed form.
            let n = (self.ack_cnt - 1) / delta;
            self.ack_cnt -= n * delta;
            self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
    }

    /// `bictcp_recalc_ssthresh()`: end the epoch, set W_max (fast convergence), remember
    /// `loss_cwnd`, return `max(cwnd * beta / 1024, 2)`.
    pub fn recalc_ssthresh(&mut self, cwnd: u32, p: &Profile, delay: &mut DelayState) -> u32 {
        delay.epoch_start = 0; // end of epoch
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && p.fast_convergence {
            cwnd.wrapping_mul(BICTCP_BETA_SCALE + p.beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        self.loss_cwnd = cwnd;
        (cwnd.wrapping_mul(p.beta) / BICTCP_BETA_SCALE).max(2)
    }

    /// `undo_cwnd` of the era (never called under quinn 0.11, which has no spurious-loss undo).
    pub fn undo_cwnd(&self, cwnd: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
        match rule {
            UndoRule::LastMax => cwnd.max(self.last_max_cwnd),
            UndoRule::LossCwnd => cwnd.max(self.loss_cwnd),
            UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        }
    }
}

/// Inputs of one [`Cubic::update`] call.
#[derive(Debug, Clone, Copy)]
pub struct CubicUpdate<'a> {
    /// The profile (module parameters and era switches).
    pub profile: &'a Profile,
    /// `tp->snd_cwnd`.
    pub cwnd: u32,
    /// ACKs (1, old eras) or packets (modern) acknowledged.
    pub acked: u32,
    /// `tcp_jiffies32` now.
    pub now_jiffies: u32,
    /// The clocks (for HZ and conversions).
    pub clock: &'a KernelClock,
    /// Unit of `delay_min`.
    pub clock_kind: ClockKind,
}

impl CongestionOps for Cubic {
    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        self.recalc_ssthresh(ctx.tp.snd_cwnd, ctx.profile, ctx.delay)
    }

    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, acked: u32, now_jiffies: u32) -> u32 {
        let p = ctx.profile;
        let per_ack = p.ai_step == AiStep::PerAck;
        let u = CubicUpdate {
            profile: p,
            cwnd: ctx.tp.snd_cwnd,
            acked: if per_ack { 1 } else { acked },
            now_jiffies,
            clock: ctx.clock,
            clock_kind: p.clock,
        };
        self.update(&u, ctx.delay);
        if per_ack {
            ctx.tp.cong_avoid_ai_per_ack(self.cnt);
        } else {
            ctx.tp.cong_avoid_ai_acked(self.cnt, acked);
        }
        // CUBIC counts its own guards in `Cubic::guards`.
        0
    }

    fn set_state(&mut self, profile: &Profile, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset_on_loss(profile);
        }
    }

    fn pkts_acked(&mut self, profile: &Profile, ca_state: CaState, pkts: u32) {
        if ca_state == CaState::Open && profile.delayed_ack != DelayedAck::Off {
            self.ack_ratio_sample(pkts, profile.delayed_ack);
        }
    }

    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        Cubic::undo_cwnd(self, tp.snd_cwnd, tp.prior_cwnd, profile.undo)
    }
}
