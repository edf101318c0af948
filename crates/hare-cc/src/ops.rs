//! The hooks an algorithm module owns, shaped like `struct tcp_congestion_ops`: `init`,
//! `ssthresh`, `cong_avoid`, `set_state`, `cwnd_event`, `pkts_acked` and `undo_cwnd`, each
//! with the arguments its kernel era passes (the union of them; each hook says which era
//! reads what). `tcp_cubic.c` ([`crate::cubic::Cubic`]), `tcp_bic.c` ([`crate::bic::Bic`])
//! and `tcp_cong.c`'s Reno ([`crate::reno::Reno`]) implement it and call the shared steps of
//! [`crate::tcp_cong`] themselves; [`CcModule`] dispatches to the connection's module without
//! a trait object.

use crate::clock::KernelClock;
use crate::events::{CcEvent, ExitReason};
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
    /// `sk_pacing_status != SK_PACING_NONE` (HyStart 5.6+, HyStart++'s `L`).
    pub paced: bool,
    /// Microseconds since the connection was built.
    pub now_us: u64,
    /// `tcp_jiffies32` at `now_us`.
    pub now_j: u32,
    /// What the hook decided that the driver reports.
    pub out: &'a mut HookOut,
}

impl OpsCtx<'_> {
    /// The same context, for a call that is not inlined (on a rare path: a slow-start step,
    /// HyStart's update, BIC's and Reno's hooks). Passing the caller's own context there
    /// would take its address, so its seven fields would be written to memory on every hook
    /// call; a copy made at the call is written only when the call is made.
    #[inline(always)]
    pub(crate) fn reborrow(&mut self) -> OpsCtx<'_> {
        OpsCtx {
            tp: &mut *self.tp,
            profile: self.profile,
            clock: self.clock,
            paced: self.paced,
            now_us: self.now_us,
            now_j: self.now_j,
            out: &mut *self.out,
        }
    }
}

/// A slow-start exit a module decided (HyStart, HyStart++'s end of CSS); it has already set
/// `snd_ssthresh = cwnd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SsExit {
    /// When.
    pub t_us: u64,
    /// cwnd (= the new ssthresh) at the exit.
    pub cwnd: u32,
    /// Which test fired.
    pub reason: ExitReason,
}

/// HyStart++ entered (`true`) or left (`false`) Conservative Slow Start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CssChange {
    /// Entered (the RTT rose) or aborted (it fell below the baseline).
    pub entered: bool,
    /// When.
    pub t_us: u64,
    /// cwnd at the change.
    pub cwnd: u32,
}

impl CssChange {
    /// The event observers see.
    pub fn event(&self) -> CcEvent {
        let (t_us, cwnd) = (self.t_us, self.cwnd);
        if self.entered {
            CcEvent::CssEntered { t_us, cwnd }
        } else {
            CcEvent::CssAborted { t_us, cwnd }
        }
    }
}

/// The decisions of one hook call that the driver turns into events and counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookOut {
    /// A slow-start exit.
    pub exit: Option<SsExit>,
    /// A HyStart++ CSS change.
    pub css: Option<CssChange>,
    /// Kernel divisions by zero or endless loops replaced by a defined path.
    pub guards: u32,
}

impl HookOut {
    /// Nothing decided (the common case: field tests, not a whole-struct comparison, on the
    /// per-ACK path).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.exit.is_none() && self.css.is_none() && self.guards == 0
    }
}

/// `cong_avoid`'s arguments (2.6.20: `ack, rtt, in_flight, good`; 2.6.29: `ack, in_flight`;
/// 3.18+: `ack, acked`). `ack` is `tp->snd_una` of the socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CongAvoidArgs {
    /// `prior_in_flight` (packets in flight before the ACK), read by the cwnd-limited test
    /// before 3.16.
    pub in_flight: u32,
    /// Packets newly acknowledged (1 per ACK in the eras that count ACKs).
    pub acked: u32,
    /// 2.6.20 - 2.6.22: the RTT of the echoed timestamp, for `measure_delay()`. A delayed
    /// ACK echoes the timestamp of the first segment it acknowledges (`tcp_store_ts_recent()`
    /// takes it only from a segment at `rcv_wup`), so this is the oldest acknowledged
    /// packet's RTT (`seq_rtt_us`).
    pub rtt_us: Option<u64>,
    /// 2.6.20 - 2.6.22: `data_acked`, the last argument of `cong_avoid`: false on a dubious ACK
    /// (`tcp_ack_is_dubious()`: outside `TCP_CA_Open`, with ECE, or with new SACK
    /// information, which a QUIC ACK frame that reveals a loss stands for); CUBIC then takes
    /// no delay sample (`if (data_acked) measure_delay(sk)`).
    pub data_acked: bool,
}

/// `pkts_acked`'s arguments (2.6.20: `num_acked`; 2.6.29: `cnt, rtt_us`; 4.6+: `struct
/// ack_sample`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckSample {
    /// Packets acknowledged by the ACK (at least 1).
    pub pkts: u32,
    /// `ca_rtt_us`: RTT of the most recently sent acknowledged packet, when there is one.
    pub rtt_us: Option<u64>,
}

/// `enum tcp_ca_event` values the modules react to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaEvent {
    /// `CA_EVENT_TX_START`: first transmission with nothing in flight; `idle_jiffies` since
    /// the last send (`tcp_jiffies32 - lsndtime`).
    TxStart {
        /// Jiffies since the last data sent.
        idle_jiffies: i32,
    },
}

/// `struct tcp_congestion_ops` as hare's algorithm modules implement it.
pub(crate) trait CongestionOps {
    /// `.init` (`bictcp_init`): module parameters such as `initial_ssthresh`, the first
    /// HyStart round. Runs once, after `tcp_init_congestion_control()` set the window.
    fn init(&mut self, ctx: &mut OpsCtx<'_>);

    /// `.ssthresh`: the threshold after a loss (the module also ends its epoch and records
    /// its loss state); reads `tp->snd_cwnd`.
    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32;

    /// `.cong_avoid`: the cwnd-limited test, slow start, the growth function and the
    /// additive-increase step, each from [`crate::tcp_cong`] in the module's era form.
    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, args: &CongAvoidArgs);

    /// `.set_state`: CUBIC and BIC reset on `TCP_CA_Loss` (`bictcp_reset`).
    fn set_state(&mut self, ctx: &mut OpsCtx<'_>, new_state: CaState);

    /// `.cwnd_event`.
    fn cwnd_event(&mut self, ctx: &mut OpsCtx<'_>, event: CaEvent);

    /// `.pkts_acked`: the `delayed_ack` EWMA (`TCP_CA_Open` only, in every era that has it)
    /// and, in CUBIC, the delay sample and HyStart.
    fn pkts_acked(&mut self, ctx: &mut OpsCtx<'_>, sample: &AckSample);

    /// `.undo_cwnd` of the era.
    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32;
}
