//! The connection's algorithm module (`inet_csk_ca(sk)` with its `icsk_ca_ops`): CUBIC, BIC
//! or Reno with its private state, dispatched by a `match` rather than a trait object. Above
//! the modules and [`crate::ops`] (the hooks they implement), below the engine and driver.

use crate::bic::Bic;
use crate::cubic::{Cubic, CubicSlowStart};
use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, OpsCtx};
use crate::profile::Profile;
use crate::reno::Reno;
use crate::tcp_sock::{CaState, TcpSock};

/// The connection's algorithm module and its private state (`inet_csk_ca(sk)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcModule {
    /// `tcp_cubic.c`.
    Cubic(Cubic),
    /// `tcp_bic.c`.
    Bic(Bic),
    /// `tcp_cong.c` Reno.
    Reno(Reno),
}

macro_rules! each_module {
    ($self:expr, $m:ident => $body:expr) => {
        match $self {
            CcModule::Cubic($m) => $body,
            CcModule::Bic($m) => $body,
            CcModule::Reno($m) => $body,
        }
    };
}

impl CcModule {
    /// The slow-start state CUBIC owns (BIC / Reno: only under a named non-kernel strategy).
    pub fn slow_start_state(&self) -> Option<&CubicSlowStart> {
        match self {
            CcModule::Cubic(c) => Some(&c.ss),
            CcModule::Bic(b) => b.named_slow_start.as_ref(),
            CcModule::Reno(r) => r.named_slow_start.as_ref(),
        }
    }

    /// `epoch_start` (CUBIC, BIC; 0 = none and always for Reno).
    pub fn epoch_start(&self) -> u32 {
        match self {
            CcModule::Cubic(c) => c.epoch_start,
            CcModule::Bic(b) => b.epoch_start,
            CcModule::Reno(_) => 0,
        }
    }

    /// `(last_max_cwnd, bic_K, bic_origin_point, cnt)` for snapshots (Reno's cnt is cwnd).
    pub fn growth_view(&self, cwnd: u32) -> (u32, u32, u32, u32) {
        match self {
            CcModule::Cubic(c) => (c.last_max_cwnd, c.bic_k, c.bic_origin_point, c.cnt),
            CcModule::Bic(b) => (b.last_max_cwnd, 0, 0, b.cnt),
            CcModule::Reno(_) => (0, 0, 0, cwnd),
        }
    }

    /// Guards counted inside the module (CUBIC's).
    pub fn own_guards(&self) -> u32 {
        match self {
            CcModule::Cubic(c) => c.guards,
            _ => 0,
        }
    }

    /// Same algorithm as `other`.
    pub fn same_algorithm(&self, other: &CcModule) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl CongestionOps for CcModule {
    #[inline]
    fn init(&mut self, ctx: &mut OpsCtx<'_>) {
        each_module!(self, m => m.init(ctx))
    }
    #[inline]
    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        each_module!(self, m => m.ssthresh(ctx))
    }
    #[inline(always)]
    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, args: &CongAvoidArgs) {
        each_module!(self, m => m.cong_avoid(ctx, args))
    }
    #[inline]
    fn set_state(&mut self, ctx: &mut OpsCtx<'_>, new_state: CaState) {
        each_module!(self, m => m.set_state(ctx, new_state))
    }
    #[inline]
    fn cwnd_event(&mut self, ctx: &mut OpsCtx<'_>, event: CaEvent) {
        each_module!(self, m => m.cwnd_event(ctx, event))
    }
    #[inline(always)]
    fn pkts_acked(&mut self, ctx: &mut OpsCtx<'_>, sample: &AckSample) {
        each_module!(self, m => m.pkts_acked(ctx, sample))
    }
    #[inline]
    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        each_module!(self, m => CongestionOps::undo_cwnd(m, tp, profile))
    }
}
