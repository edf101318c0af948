//! BIC (`net/ipv4/tcp_bic.c`): the binary-search increase, unchanged in substance from 2.6.20
//! to today except for `initial_ssthresh` (100 -> 0 in 66e1e3b20cbb), the "no loss yet" key
//! of the `cnt <= 20` cap (`loss_cwnd` -> `last_max_cwnd`), and the packet-counting slow start
//! and undo of the modern stack. `tcp_bic.c` has no HyStart and no `delay_min`: a spec
//! that names `slow_start=hystart` (or `hystart++`) for BIC gets CUBIC's code for it
//! ([`SlowStart`]), a combination no kernel had.

use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, OpsCtx};
use crate::profile::{AiStep, Algorithm, PreLossKey, Profile, SlowStartKind, UndoRule};
use crate::slow_start::{self, SlowStart};
use crate::tcp_cong;
use crate::tcp_sock::{CaState, TcpSock};

/// `BICTCP_B`: binary search goes to `(max + min) / B`.
pub const BICTCP_B: u32 = 4;
/// `BICTCP_BETA_SCALE` of `tcp_bic.c`: beta is in 1/1024.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// `ACK_RATIO_SHIFT` of `tcp_bic.c`: `delayed_ack` is packets per ACK << 4.
pub const ACK_RATIO_SHIFT: u32 = 4;

/// One connection's `struct bictcp` (BIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bic {
    pub(crate) cnt: u32,
    pub(crate) last_max_cwnd: u32,
    pub(crate) loss_cwnd: u32,
    pub(crate) last_cwnd: u32,
    pub(crate) last_time: u32,
    pub(crate) epoch_start: u32,
    pub(crate) delayed_ack: u32,
    pub(crate) named_slow_start: Option<SlowStart>,
}

crate::accessors!(Bic {
    /// `cnt`: ACKs per +1 cwnd.
    cnt = cnt: u32, set_cnt;
    /// `last_max_cwnd`.
    last_max_cwnd = last_max_cwnd: u32, set_last_max_cwnd;
    /// `loss_cwnd`.
    loss_cwnd = loss_cwnd: u32, set_loss_cwnd;
    /// `last_cwnd`.
    last_cwnd = last_cwnd: u32, set_last_cwnd;
    /// `last_time` (jiffies).
    last_time = last_time: u32, set_last_time;
    /// `epoch_start` (jiffies; 0 = none).
    epoch_start = epoch_start: u32, set_epoch_start;
    /// `delayed_ack` (packets per ACK << 4), a u32 in every era of `tcp_bic.c`.
    delayed_ack = delayed_ack: u32, set_delayed_ack;
    /// CUBIC's slow-start code, only when a spec names HyStart or HyStart++ for BIC
    /// (non-kernel).
    named_slow_start = named_slow_start: Option<SlowStart>;
});

impl Default for Bic {
    fn default() -> Self {
        Bic {
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            named_slow_start: None,
        }
    }
}

/// The words of [`Bic`] its `bictcp_update()` writes in the growth step of one ACK: saved
/// whole before it, put back whole when a loss rewinds that step (`driver.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BicGrowth {
    cnt: u32,
    last_cwnd: u32,
    last_time: u32,
    epoch_start: u32,
}

impl Bic {
    /// What the growth step can write (see [`BicGrowth`]).
    #[inline(always)]
    pub(crate) fn growth(&self) -> BicGrowth {
        BicGrowth {
            cnt: self.cnt,
            last_cwnd: self.last_cwnd,
            last_time: self.last_time,
            epoch_start: self.epoch_start,
        }
    }

    /// Put back a [`Bic::growth`], every field by name.
    pub(crate) fn set_growth(&mut self, g: BicGrowth) {
        let BicGrowth {
            cnt,
            last_cwnd,
            last_time,
            epoch_start,
        } = g;
        (self.cnt, self.last_cwnd, self.last_time) = (cnt, last_cwnd, last_time);
        self.epoch_start = epoch_start;
    }

    /// `bictcp_init()`'s state for a profile.
    pub fn new(p: &Profile) -> Self {
        Bic {
            named_slow_start: SlowStart::named_for(p, Algorithm::Bic),
            ..Bic::default()
        }
    }

    /// `bictcp_reset()` on `TCP_CA_Loss` (`epoch_start` too). Up to 2.6.39 the
    /// reset clears `loss_cwnd` too; from the 3.x undo fix (`undo = loss-cwnd`, 4.4's
    /// `bictcp_reset` has no `loss_cwnd` line, `bictcp_init` clears it) it survives the
    /// reset, so an undo after an RTO can still restore the window.
    pub(crate) fn reset(&mut self, undo: UndoRule) {
        let loss_cwnd = self.loss_cwnd;
        let named = self.named_slow_start;
        *self = Bic::default();
        self.named_slow_start = named;
        if undo == UndoRule::LossCwnd {
            self.loss_cwnd = loss_cwnd;
        }
    }

    /// `bictcp_acked()`: `delayed_ack += cnt - delayed_ack / 16` (u32, state Open only).
    pub(crate) fn ack_ratio_sample(&mut self, cnt: u32) {
        self.delayed_ack = self
            .delayed_ack
            .wrapping_add(cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
    }

    /// `bictcp_update(ca, cwnd)`: the binary-search `cnt`. Returns true when the kernel would
    /// have divided by a zero `delayed_ack` (hare leaves `cnt` unscaled).
    pub(crate) fn update(&mut self, cwnd: u32, now_jiffies: u32, hz: u32, p: &Profile) -> bool {
        if self.last_cwnd == cwnd
            && (now_jiffies.wrapping_sub(self.last_time) as i32) <= (hz / 32) as i32
        {
            return false;
        }
        self.last_cwnd = cwnd;
        self.last_time = now_jiffies;

        if self.epoch_start == 0 {
            self.epoch_start = now_jiffies; // record the beginning of an epoch
        }

        // start off normal
        if cwnd <= p.low_window {
            self.cnt = cwnd;
            return false;
        }

        let max_inc = p.max_increment.max(1);
        if cwnd < self.last_max_cwnd {
            // binary increase
            let dist = (self.last_max_cwnd - cwnd) / BICTCP_B;
            self.cnt = if dist > max_inc {
                cwnd / max_inc // linear increase
            } else if dist <= 1 {
                cwnd.wrapping_mul(p.smooth_part) / BICTCP_B // binary search increase
            } else {
                cwnd / dist // binary search increase
            };
        } else if cwnd < self.last_max_cwnd.wrapping_add(BICTCP_B) {
            // slow start
            self.cnt = cwnd.wrapping_mul(p.smooth_part) / BICTCP_B;
        } else if cwnd
            < self
                .last_max_cwnd
                .wrapping_add(max_inc.wrapping_mul(BICTCP_B - 1))
        {
            // slow start
            self.cnt = cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - self.last_max_cwnd);
        } else {
            // linear increase
            self.cnt = cwnd / max_inc;
        }

        // if in slow start or link utilization is very low
        let no_loss_yet = match p.pre_loss_key {
            PreLossKey::LossCwnd => self.loss_cwnd == 0,
            PreLossKey::LastMax => self.last_max_cwnd == 0,
        };
        if no_loss_yet && self.cnt > 20 {
            self.cnt = 20; // increase cwnd 5% per RTT
        }

        // A zero ratio (only after a u32 wrap) would be a divide error in the kernel.
        let scaled = (self.cnt << ACK_RATIO_SHIFT).checked_div(self.delayed_ack);
        let guarded = scaled.is_none();
        if let Some(cnt) = scaled {
            self.cnt = cnt;
        }
        if self.cnt == 0 {
            self.cnt = 1; // cannot be zero
        }
        guarded
    }

    /// `bictcp_recalc_ssthresh()`: fast convergence with BIC's beta, Reno halving at or
    /// below `low_window`.
    pub(crate) fn recalc_ssthresh(&mut self, cwnd: u32, p: &Profile) -> u32 {
        self.epoch_start = 0; // end of epoch
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && p.fast_convergence {
            cwnd.wrapping_mul(BICTCP_BETA_SCALE + p.bic_beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        self.loss_cwnd = cwnd;
        if cwnd <= p.low_window {
            (cwnd >> 1).max(2)
        } else {
            (cwnd.wrapping_mul(p.bic_beta) / BICTCP_BETA_SCALE).max(2)
        }
    }

    /// `undo_cwnd` of the era: `max(cwnd, last_max_cwnd)` to 2.6.39, `max(cwnd, loss_cwnd)`
    /// in 4.4 (`bictcp_undo_cwnd`), `tcp_reno_undo_cwnd` (`max(cwnd, prior_cwnd)`) in 6.x.
    pub fn undo_cwnd(&self, cwnd: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
        match rule {
            UndoRule::LastMax => cwnd.max(self.last_max_cwnd),
            UndoRule::LossCwnd => cwnd.max(self.loss_cwnd),
            UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        }
    }
}

impl CongestionOps for Bic {
    fn init(&mut self, ctx: &mut OpsCtx<'_>) {
        // tcp_bic.c has no HyStart test here: a named HyStart on BIC does not hold it back.
        slow_start::initial_ssthresh(ctx, false);
    }

    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        if let Some(ss) = &mut self.named_slow_start {
            ss.on_reduction();
        }
        self.recalc_ssthresh(ctx.tp.snd_cwnd, ctx.profile)
    }

    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, args: &CongAvoidArgs) {
        if let Some(ss) = &mut self.named_slow_start {
            ss.measure_delay(ctx, self.epoch_start, args.rtt_us);
        }
        let p = ctx.profile;
        if !tcp_cong::is_cwnd_limited(ctx.tp, p, args.in_flight) {
            return;
        }
        let mut acked = args.acked;
        if ctx.tp.in_slow_start(p.ss_compare) {
            let left = match &mut self.named_slow_start {
                Some(ss) => ss.slow_start(ctx, acked),
                None => {
                    let limited = p.slow_start == SlowStartKind::Limited;
                    let (left, guards) = tcp_cong::slow_start(ctx.tp, p, limited, acked);
                    ctx.out.guards = ctx.out.guards.saturating_add(guards);
                    left
                }
            };
            // tcp_bic.c used the whole ACK for slow start until "tcp: fix stretch ACK bugs
            // in BIC" (5.7): `acked = tcp_slow_start(tp, acked); if (!acked) return;`.
            if left == 0 || !p.bic_stretch_ack {
                return;
            }
            acked = left;
        }
        let guard = self.update(ctx.tp.snd_cwnd, ctx.now_j, ctx.clock.hz(), p);
        ctx.out.guards = ctx.out.guards.saturating_add(u32::from(guard));
        // tcp_bic.c stepped once per ACK (`tcp_cong_avoid_ai(tp, cnt, 1)` in 4.x) until 5.7's
        // stretch-ACK fix passes the ACKed packets (`tcp_cong_avoid_ai(tp, ca->cnt, acked)`).
        if p.ai_step == AiStep::PerAck {
            tcp_cong::cong_avoid_ai_per_ack(ctx.tp, self.cnt);
        } else if p.bic_stretch_ack {
            tcp_cong::cong_avoid_ai_acked(ctx.tp, self.cnt, acked);
        } else {
            tcp_cong::cong_avoid_ai_acked(ctx.tp, self.cnt, 1);
        }
    }

    fn set_state(&mut self, ctx: &mut OpsCtx<'_>, new_state: CaState) {
        // bictcp_state(): `if (new_state == TCP_CA_Loss) bictcp_reset(inet_csk_ca(sk))`.
        if new_state == CaState::Loss {
            self.reset(ctx.profile.undo);
            if let Some(ss) = &mut self.named_slow_start {
                ss.on_loss_state(ctx);
            }
        }
    }

    fn cwnd_event(&mut self, _ctx: &mut OpsCtx<'_>, _event: CaEvent) {}

    fn pkts_acked(&mut self, ctx: &mut OpsCtx<'_>, sample: &AckSample) {
        // bictcp_acked(): `if (icsk->icsk_ca_state == TCP_CA_Open)` update delayed_ack.
        if ctx.tp.ca_state == CaState::Open {
            self.ack_ratio_sample(sample.pkts);
        }
        if let Some(ss) = &mut self.named_slow_start {
            ss.sample_acked(ctx, self.epoch_start, sample.rtt_us);
        }
    }

    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        Bic::undo_cwnd(self, tp.snd_cwnd, tp.prior_cwnd, profile.undo)
    }
}
