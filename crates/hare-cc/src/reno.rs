//! Reno (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd` in
//! `net/ipv4/tcp_cong.c`): slow start of the era, then `tcp_cong_avoid_ai(tp, snd_cwnd)`
//! (+1 per window of ACKs, or of packets from 2015); ssthresh is half the window.

use crate::ops::{CongestionOps, OpsCtx};
use crate::profile::{AiStep, Profile, UndoRule};
use crate::tcp_sock::{CaState, TcpSock};

/// Reno: no private state (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reno;

impl CongestionOps for Reno {
    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        // Reno has no epoch; the shared epoch (used by a named HyStart's blackout) ends too.
        ctx.delay.epoch_start = 0;
        reno_ssthresh(ctx.tp.snd_cwnd)
    }

    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, acked: u32, _now_jiffies: u32) -> u32 {
        // tcp_reno_cong_avoid(): tcp_cong_avoid_ai(tp, tp->snd_cwnd[, acked]).
        let w = ctx.tp.snd_cwnd;
        if ctx.profile.ai_step == AiStep::PerAck {
            ctx.tp.cong_avoid_ai_per_ack(w);
        } else {
            ctx.tp.cong_avoid_ai_acked(w, acked);
        }
        0
    }

    fn set_state(&mut self, _profile: &Profile, _new_state: CaState) {}

    fn pkts_acked(&mut self, _profile: &Profile, _ca_state: CaState, _pkts: u32) {}

    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        reno_undo_cwnd(tp.snd_cwnd, tp.snd_ssthresh, tp.prior_cwnd, profile.undo)
    }
}

/// `tcp_reno_ssthresh()`: `max(cwnd >> 1, 2)`.
pub fn reno_ssthresh(cwnd: u32) -> u32 {
    (cwnd >> 1).max(2)
}

/// The window after an undo: `tcp_reno_undo_cwnd()` (`max(cwnd, prior_cwnd)`, 4.13+), or,
/// before Reno had an `undo_cwnd` op, `tcp_undo_cwnd_reduction()`'s
/// `max(cwnd, ssthresh << 1)`.
pub fn reno_undo_cwnd(cwnd: u32, ssthresh: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
    match rule {
        UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        UndoRule::LastMax | UndoRule::LossCwnd => cwnd.max(ssthresh << 1),
    }
}
