//! The hooks an algorithm module owns, shaped like `struct tcp_congestion_ops`: `ssthresh`,
//! `cong_avoid`'s growth step, `set_state`, `pkts_acked`'s per-module part and `undo_cwnd`,
//! each with the arguments its kernel era passes. `tcp_cubic.c` ([`crate::cubic::Cubic`]),
//! `tcp_bic.c` ([`crate::bic::Bic`]) and `tcp_cong.c`'s Reno ([`crate::reno::Reno`])
//! implement it; the ACK driver calls them in the era's order, and the shared steps
//! (`tcp_slow_start`, `tcp_cong_avoid_ai`) are `TcpSock`'s, as `tcp_cong.c` has them.

use crate::clock::KernelClock;
use crate::delay::DelayState;
use crate::profile::Profile;
use crate::tcp_sock::{CaState, TcpSock};

/// What every hook may read or change besides the module's own state.
pub struct OpsCtx<'a> {
    /// The socket (`struct tcp_sock`).
    pub tp: &'a mut TcpSock,
    /// The era's constants and module parameters.
    pub profile: &'a Profile,
    /// The clocks (HZ, jiffies).
    pub clock: &'a KernelClock,
    /// `delay_min` / `epoch_start` (`struct bictcp`'s, shared with CUBIC's HyStart).
    pub delay: &'a mut DelayState,
}

/// `struct tcp_congestion_ops` as hare's algorithm modules implement it.
pub trait CongestionOps {
    /// `.ssthresh`: the threshold after a loss (the module also ends its epoch and records
    /// its loss state); reads `tp->snd_cwnd`.
    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32;

    /// `.cong_avoid` after slow start: the growth function and the additive-increase step
    /// for `acked` (1 per ACK before 2015, packets after). Returns the guards taken (kernel
    /// divisions by zero replaced by a defined path).
    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, acked: u32, now_jiffies: u32) -> u32;

    /// `.set_state`: CUBIC and BIC reset on `TCP_CA_Loss` (`bictcp_reset`).
    fn set_state(&mut self, profile: &Profile, new_state: CaState);

    /// The module's own part of `.pkts_acked` with the ACK's packet count: the
    /// `delayed_ack` EWMA (`TCP_CA_Open` only, in every era that has it).
    fn pkts_acked(&mut self, profile: &Profile, ca_state: CaState, pkts: u32);

    /// `.undo_cwnd` of the era.
    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32;
}
