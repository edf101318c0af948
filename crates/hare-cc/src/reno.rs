//! Reno (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd` in
//! `net/ipv4/tcp_cong.c`, [`crate::tcp_cong`]): slow start of the era, then
//! `tcp_cong_avoid_ai(tp, snd_cwnd)` (+1 per window of ACKs, or of packets from 2015);
//! ssthresh is half the window. Reno has no `init`, `pkts_acked` or `set_state`; a spec that
//! names `slow_start=hystart` (or `hystart++`) for Reno gets CUBIC's code for it
//! ([`SlowStart`]), a combination no kernel had.

use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, OpsCtx};
use crate::profile::{Algorithm, Profile};
use crate::slow_start::SlowStart;
use crate::tcp_cong;
use crate::tcp_sock::{CaState, TcpSock};

// `tcp_reno_ssthresh` / `tcp_reno_undo_cwnd` by Reno's path (the crate's tests use them).
#[allow(unused_imports)]
pub use crate::tcp_cong::{reno_ssthresh, reno_undo_cwnd};

/// Reno: no private state in the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reno {
    pub(crate) named_slow_start: Option<SlowStart>,
}

crate::accessors!(Reno {
    /// CUBIC's slow-start code, only when a spec names HyStart or HyStart++ for Reno
    /// (non-kernel).
    named_slow_start = named_slow_start: Option<SlowStart>;
});

impl Reno {
    /// Reno for a profile (the named non-kernel slow start, if any).
    pub fn new(p: &Profile) -> Self {
        Reno {
            named_slow_start: SlowStart::named_for(p, Algorithm::Reno),
        }
    }
}

impl CongestionOps for Reno {
    fn init(&mut self, _ctx: &mut OpsCtx<'_>) {}

    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        if let Some(ss) = &mut self.named_slow_start {
            ss.on_reduction();
        }
        tcp_cong::reno_ssthresh(ctx.tp.snd_cwnd)
    }

    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, args: &CongAvoidArgs) {
        let Some(ss) = &mut self.named_slow_start else {
            let p = ctx.profile;
            let g = tcp_cong::reno_cong_avoid(ctx.tp, p, args.in_flight, args.acked);
            ctx.out.guards = ctx.out.guards.saturating_add(g);
            return;
        };
        // The named non-kernel combination: tcp_reno_cong_avoid() with CUBIC's slow start.
        ss.measure_delay(ctx, 0, args.rtt_us);
        let p = ctx.profile;
        if !tcp_cong::is_cwnd_limited(ctx.tp, p, args.in_flight) {
            return;
        }
        let mut acked = args.acked;
        if ctx.tp.in_slow_start(p.ss_compare) {
            acked = ss.slow_start(ctx, acked);
            if acked == 0 {
                return;
            }
        }
        let w = ctx.tp.snd_cwnd;
        tcp_cong::cong_avoid_ai(ctx.tp, p, w, acked);
    }

    fn set_state(&mut self, ctx: &mut OpsCtx<'_>, new_state: CaState) {
        if new_state == CaState::Loss {
            if let Some(ss) = &mut self.named_slow_start {
                ss.on_loss_state(ctx);
            }
        }
    }

    fn cwnd_event(&mut self, _ctx: &mut OpsCtx<'_>, _event: CaEvent) {}

    fn pkts_acked(&mut self, ctx: &mut OpsCtx<'_>, sample: &AckSample) {
        if let Some(ss) = &mut self.named_slow_start {
            ss.sample_acked(ctx, 0, sample.rtt_us);
        }
    }

    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        tcp_cong::reno_undo_cwnd(tp.snd_cwnd, tp.snd_ssthresh, tp.prior_cwnd, profile.undo)
    }
}
