//! The connection's algorithm module (`inet_csk_ca(sk)` with its `icsk_ca_ops`): CUBIC, BIC
//! or Reno with its private state, dispatched by a `match` rather than a trait object. Above
//! the modules and [`crate::ops`] (the hooks they implement), below the engine and driver.

use crate::bic::{Bic, BicGrowth};
use crate::cubic::{Cubic, CubicGrowth};
use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, OpsCtx};
use crate::profile::Profile;
use crate::reno::Reno;
use crate::slow_start::SlowStart;
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
    pub fn slow_start_state(&self) -> Option<&SlowStart> {
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

/// What the rest of an ACK after `pkts_acked` (the growth step of `cong_avoid`) can write in
/// the module, saved before it so that a loss quinn reports after the frame's acks can be put
/// where the era's `tcp_ack()` has it (`driver.rs`). Only these, not the whole module: a copy
/// of the whole state (168 bytes) on every ACK was a `memcpy` call, the largest part of that
/// save's cost.
///
/// - CUBIC: [`CubicGrowth`] (the words `bictcp_update()` writes and `delay_min`, which
///   2.6.20 - 2.6.22 measure in `cong_avoid`); its slow-start state (HyStart's round reset of
///   2.6.29 - 5.15 and HyStart++ run in `cong_avoid`) only in slow start, the only state in
///   which `cong_avoid` touches it.
/// - BIC: [`BicGrowth`] and a named slow start's state, if any.
/// - Reno: a named slow start's state, if any.
///
/// Debug builds also keep the whole module and check after every restore that the two agree.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ModuleGrowth {
    words: GrowthWords,
    /// The slow-start state, when `ss_saved`.
    ss: Option<SlowStart>,
    /// Whether `ss` belongs to this save: CUBIC in congestion avoidance leaves `ss` as it was
    /// (writing `None` there stored the whole `Option`, 21 instructions per ACK frame).
    ss_saved: bool,
}

/// The module's own words of a [`ModuleGrowth`].
#[derive(Debug, Clone, Copy)]
enum GrowthWords {
    Cubic(CubicGrowth),
    Bic(BicGrowth),
    Reno,
}

impl ModuleGrowth {
    /// An empty save.
    pub(crate) fn new() -> Self {
        ModuleGrowth {
            words: GrowthWords::Reno,
            ss: None,
            ss_saved: false,
        }
    }
}

impl CcModule {
    /// Save what the growth step can write into `slot`; `in_slow_start` is the socket's state
    /// before it.
    #[inline(always)]
    pub(crate) fn save_growth(&self, slot: &mut ModuleGrowth, in_slow_start: bool) {
        match self {
            CcModule::Cubic(c) => {
                slot.words = GrowthWords::Cubic(c.growth());
                slot.ss_saved = in_slow_start;
                if in_slow_start {
                    slot.ss = Some(c.ss);
                }
            }
            CcModule::Bic(b) => {
                slot.words = GrowthWords::Bic(b.growth());
                slot.ss = b.named_slow_start;
                slot.ss_saved = true;
            }
            CcModule::Reno(r) => {
                slot.words = GrowthWords::Reno;
                slot.ss = r.named_slow_start;
                slot.ss_saved = true;
            }
        }
    }

    /// Put back what [`CcModule::save_growth`] saved (a save of another module is ignored:
    /// the module never changes within a connection).
    pub(crate) fn restore_growth(&mut self, slot: &ModuleGrowth) {
        match (self, slot.words) {
            (CcModule::Cubic(c), GrowthWords::Cubic(g)) => {
                c.set_growth(g);
                if let (true, Some(ss)) = (slot.ss_saved, slot.ss) {
                    c.ss = ss;
                }
            }
            (CcModule::Bic(b), GrowthWords::Bic(g)) => {
                b.set_growth(g);
                b.named_slow_start = slot.ss;
            }
            (CcModule::Reno(r), GrowthWords::Reno) => r.named_slow_start = slot.ss,
            _ => {}
        }
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
