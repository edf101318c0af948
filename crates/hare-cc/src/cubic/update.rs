//! CUBIC's growth function, every era: `bictcp_update()` with its cube root, time width,
//! `min_cnt` clamp, pre-loss cap and TCP-friendly region, and the constants module init
//! computes. See `docs/KERNEL-NOTES.md`, "CUBIC".
//!
//! The arithmetic is the kernel's: u32 where the kernel uses u32 (wrapping, never panicking),
//! u64 where it uses u64. Where the kernel would divide by zero or loop forever (2.6.20's cube
//! root, a wrapped u16 `delayed_ack`), hare takes a defined path and counts it in
//! [`Cubic::guards`].

use crate::clock::KernelClock;
use crate::cuberoot::{cube_root_newton, cube_root_table};
use crate::cubic::Cubic;
use crate::profile::{
    ClockKind, CubeRootKind, CubicPreLossCap, CubicTime, DelayedAck, MinCntClamp, PreLossKey,
    Profile,
};
use crate::slow_start::delay::delay_min_jiffies;

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

impl Cubic {
    /// K for `last_max - cwnd` with the era's cube root: `cubic_root(cube_factor * diff)`.
    pub(crate) fn compute_k(&mut self, diff: u32, kind: CubeRootKind) -> u32 {
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

    /// `bictcp_update()` alone, for this crate's exact-value unit tests (the model calls it
    /// from `cong_avoid`).
    #[cfg(test)]
    pub(crate) fn bictcp_update(&mut self, u: &CubicUpdate<'_>) {
        self.update(u);
    }

    /// `bictcp_update(ca, cwnd, acked)` of the era (`acked` = 1 per ACK in the old eras).
    /// Inlined up to its first gate, which returns on most ACKs; the rest is
    /// [`Cubic::update_cnt`].
    #[inline(always)]
    pub(crate) fn update(&mut self, u: &CubicUpdate<'_>) {
        self.ack_cnt = self.ack_cnt.wrapping_add(u.acked);

        // Recompute at most every HZ/32 jiffies while cwnd is unchanged.
        if self.last_cwnd == u.cwnd
            && (u.now_jiffies.wrapping_sub(self.last_time) as i32) <= (u.clock.hz() / 32) as i32
        {
            return;
        }
        self.update_cnt(u);
    }

    /// `bictcp_update()` past its first gate: the cube, the TCP-friendly region, the
    /// delayed-ACK scaling and the `cnt` floor.
    #[inline(never)]
    fn update_cnt(&mut self, u: &CubicUpdate<'_>) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;

        // d6b1a8a92a14: the CUBIC function updates cnt at most once per jiffy.
        let skip_recompute = p.jiffy_skip && self.epoch_start != 0 && now == self.last_time;
        if !skip_recompute {
            self.recompute_cnt(u);
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
    /// `t` of `bictcp_update()`: 1/1024 s since the epoch start plus the minimum delay, in
    /// the era's integer widths (`hz` is a constant for the usual HZ, see `with_hz`).
    #[inline(always)]
    fn epoch_time(&self, p: &Profile, now: u32, dmin_j: u32, hz: u32) -> u64 {
        match p.cubic_t {
            // 4.1+: t is a u64, `((s32)(tcp_jiffies32 - epoch_start) + delay) << 10`, then
            // divided by HZ (the 2015 stretch-ACK series).
            CubicTime::S64 => {
                let elapsed = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
                (elapsed.wrapping_add(u64::from(dmin_j)) << BICTCP_HZ) / u64::from(hz)
            }
            // 2.6.39 - 3.x: `msecs_to_jiffies()` returns `unsigned long`, so the u32 jiffies
            // and epoch are widened and the sum, shift and division are 64-bit on a 64-bit
            // machine; the result is stored in the u32 `t`. A jiffies wrap between the epoch
            // start and now makes the difference wrap near 2^64, not 2^32.
            CubicTime::Ulong => {
                let sum = u64::from(now)
                    .wrapping_add(u64::from(dmin_j))
                    .wrapping_sub(u64::from(self.epoch_start));
                u64::from(((sum << BICTCP_HZ) / u64::from(hz)) as u32)
            }
            // To 2.6.38: all u32 (`delay_min >> 3` is a u32).
            CubicTime::U32 => {
                let sum = now.wrapping_add(dmin_j).wrapping_sub(self.epoch_start);
                u64::from((sum << BICTCP_HZ) / hz)
            }
        }
    }

    // Out of line: runs once per cwnd change (or HZ/32), not on every ACK.
    #[inline(never)]
    fn recompute_cnt(&mut self, u: &CubicUpdate<'_>) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;
        self.last_cwnd = cwnd;
        self.last_time = now;

        if self.epoch_start == 0 {
            self.epoch_start = now; // record the beginning of an epoch
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
        let dmin_j = delay_min_jiffies(self.ss.delay_min, u.clock_kind, u.clock);
        let t = crate::clock::with_hz(u.clock.hz(), |hz| self.epoch_time(p, now, dmin_j, hz));
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
        if p.min_cnt != MinCntClamp::Off && self.ss.delay_min > 0 {
            let den = 10u32
                .wrapping_mul(p.max_increment)
                .wrapping_mul(self.ss.delay_min);
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
}
