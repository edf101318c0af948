//! Driving the kernel model hook by hook, from a chosen state: the documented entry points for
//! outside programs (differential tests against the kernel sources, research tools) that need
//! no private field.
//!
//! Build a model with [`KernelCc::new`], place it in a state with [`KernelCc::start_from`]
//! (cwnd, ssthresh, `snd_cwnd_cnt`, `snd_cwnd_clamp`, CA state, `snd_una` / `snd_nxt`,
//! `srtt_us` or a captured `sk_pacing_rate`, the algorithm's `struct bictcp` with its
//! `epoch_start`, and for CUBIC `delay_min` and HyStart's round state; the MSS is
//! [`KernelCc::new`]'s, the clock is the
//! profile's `hz` and `uptime_ms`, read back with [`KernelCc::clock`]), then call the
//! `tcp_congestion_ops` hooks
//! of the algorithm and era one at a time: [`KernelCc::hook_pkts_acked`],
//! [`KernelCc::hook_cong_avoid`], [`KernelCc::hook_ssthresh`], [`KernelCc::hook_set_state`],
//! [`KernelCc::hook_cwnd_event_tx_start`], [`KernelCc::undo_cwnd`]. Whole ACKs in the era's order are [`KernelCc::on_ack`].
//!
//! A replay of a captured kernel flow also sets, ACK by ACK, what the kernel's socket holds
//! and the model cannot know: [`KernelCc::set_sequence`], [`KernelCc::set_cwnd_limited`],
//! [`KernelCc::set_pacing_rate`], [`KernelCc::set_clock`] with [`KernelClock::aligned`], and
//! CUBIC's `struct bictcp` by the kernel's field names ([`BictcpState`],
//! [`KernelCc::set_bictcp_state`], [`KernelCc::bictcp_state`]).
//!
//! ```
//! use hare_cc::engine::{AckEvent, KernelCc};
//! use hare_cc::hooks::StartState;
//! use hare_cc::{Algorithm, Profile};
//!
//! let profile = Profile::named("linux-6").expect("built in");
//! let mut cc = KernelCc::new(Algorithm::Reno, &profile, true, 1448);
//! cc.start_from(&StartState { cwnd: 100, ssthresh: Some(50), ..StartState::default() })?;
//! // tcp_reno_cong_avoid(): congestion avoidance, tcp_cong_avoid_ai(tp, 100, 100).
//! cc.hook_cong_avoid(&AckEvent { now_us: 1000, acked_pkts: 100, ..AckEvent::default() });
//! assert_eq!(cc.cwnd(), 101);
//! assert_eq!(cc.hook_ssthresh(), 50); // tcp_reno_ssthresh(): max(cwnd >> 1, 2)
//! # Ok::<(), hare_cc::hooks::StartError>(())
//! ```

// The types a start state and the model's read-back are made of (the modules that define them
// are private). Their fields are the crate's: outside it they are built with their
// constructors and read and set through getters and setters.
pub use crate::bic::Bic;
pub use crate::clock::KernelClock;
pub use crate::cubic::Cubic;
pub use crate::engine::{AckEvent, CcModule, KernelCc, LossSignal};
pub use crate::hook_setters::BictcpState;
pub use crate::reno::Reno;
pub use crate::slow_start::hystart::HyStart;
pub use crate::slow_start::hystart_pp::HyStartPp;
pub use crate::slow_start::SlowStart;
pub use crate::start_error::StartError;
pub use crate::tcp_sock::{CaState, TcpSock, TCP_INFINITE_SSTHRESH};

/// A state to start the model from. Fields left `None` keep what `init` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartState {
    /// `snd_cwnd` (segments, at least 1).
    pub cwnd: u32,
    /// `snd_ssthresh` (`None`: `TCP_INFINITE_SSTHRESH`).
    pub ssthresh: Option<u32>,
    /// `snd_cwnd_cnt` (kept to the era's width).
    pub snd_cwnd_cnt: u32,
    /// `icsk_ca_state`. `Disorder` (2.6.x's hold after an episode) lasts until a packet sent
    /// after `start_from` is acknowledged.
    pub ca_state: CaState,
    /// The sender is cwnd-limited (`tp->is_cwnd_limited` with `max_packets_out = cwnd`);
    /// the old in-flight rules take `prior_in_flight` from each ACK instead.
    pub cwnd_limited: bool,
    /// The algorithm module's state (`struct bictcp` of CUBIC or BIC, with `epoch_start` in
    /// jiffies of [`KernelCc::clock`]; CUBIC's `delay_min` and HyStart round state are in
    /// [`Cubic::slow_start`]); must match the algorithm.
    pub module: Option<CcModule>,
    /// `tp->srtt_us`: the smoothed RTT in the kernel's scaling (8 times microseconds).
    /// `None` keeps the model's (0 before any RTT sample) and its pacing rate. With a value,
    /// the pacing rate that HyStart's ACK-train cushion reads from 5.6 on (`sk_pacing_rate`
    /// in `hystart_ack_delay()`) is recomputed from the start state as
    /// `tcp_update_pacing_rate()` computes it.
    pub srtt_us: Option<u32>,
    /// `tp->snd_una` (largest acknowledged packet number + 1; the HyStart rounds compare it
    /// with `end_seq`). `None` keeps the model's.
    pub snd_una: Option<u64>,
    /// `tp->snd_nxt` (the next packet number to send; a new HyStart round ends there).
    /// `None` keeps the model's; with only `snd_una` given, `snd_nxt` is raised to it when
    /// below.
    pub snd_nxt: Option<u64>,
    /// `sk_pacing_rate` in bytes per second, as captured (after [`StartState::srtt_us`]'s
    /// recomputation, which it replaces); it holds until the next ACK's
    /// `tcp_update_pacing_rate()`. HyStart's ACK-train cushion (5.6+) reads it.
    pub pacing_rate: Option<u64>,
    /// `tp->snd_cwnd_clamp` (`None`: the profile's `cwnd_clamp`); `cwnd` is clamped to it.
    pub cwnd_clamp: Option<u32>,
}

impl Default for StartState {
    /// cwnd 10, infinite ssthresh, Open, cwnd-limited, the algorithm's init state.
    fn default() -> Self {
        StartState {
            cwnd: 10,
            ssthresh: None,
            snd_cwnd_cnt: 0,
            ca_state: CaState::Open,
            cwnd_limited: true,
            module: None,
            srtt_us: None,
            snd_una: None,
            snd_nxt: None,
            pacing_rate: None,
            cwnd_clamp: None,
        }
    }
}
