//! What one ACK brings to the model ([`AckEvent`], [`LossSignal`]) and the state saved before
//! its growth step (`BeforeGrowth`): held by the engine, run by the per-era driver, and below
//! both so that neither depends on the other for them.

use crate::cc_module::{CcModule, ModuleGrowth};
use crate::events::ExitReason;
use crate::tcp_sock::TcpSock;

/// One ACK (in QUIC: one ACK frame, i.e. one `on_end_acks` batch) as the kernel sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckEvent {
    /// Microseconds since the controller was built.
    pub now_us: u64,
    /// Newly acknowledged ack-eliciting packets (any: `FLAG_DATA_ACKED`). The kernel counts
    /// packets, so an ACK of less than one segment of bytes still runs `pkts_acked` (with
    /// its RTT sample) and `cong_avoid`. 0 is treated as `acked_pkts`.
    pub packets: u32,
    /// Segments newly acknowledged (bytes / MSS with the adapter's carry): the `acked` of
    /// `cong_avoid` and (at least 1) the count of `pkts_acked`.
    pub acked_pkts: u32,
    /// RTT of the most recently sent newly acked packet in microseconds (the kernel's
    /// `ca_rtt_us`, given to `pkts_acked`), `None` when there is none.
    pub rtt_us: Option<u64>,
    /// RTT of the oldest newly acked packet (the kernel's `seq_rtt_us`, fed to
    /// `tcp_rtt_estimator`); `None` = use `rtt_us`.
    pub seq_rtt_us: Option<u64>,
    /// Largest packet number acknowledged (the `snd_una` analogue for HyStart rounds).
    pub largest_acked: Option<u64>,
    /// Packets still in flight after this ACK (`packets_out`).
    pub packets_in_flight: u32,
    /// The ACK covers the current Recovery / Loss episode's `high_seq` (a packet sent after
    /// the episode began is acknowledged): `tcp_fastretrans_alert` leaves the state.
    pub ends_episode: bool,
    /// The loss reaction this ACK triggers (quinn reports it after the frame's acks).
    pub loss: Option<LossSignal>,
}

impl AckEvent {
    /// Packets in flight before this ACK, `tcp_ack()`'s `prior_in_flight`
    /// (`tcp_packets_in_flight()` taken before `tcp_clean_rtx_queue()`): those still in flight
    /// plus the packets the ACK took out of flight. The kernel counts packets, so a packet of
    /// less than one segment of bytes (the first 1-RTT datagram, which shares its datagram
    /// with the handshake's last packets) counts as one here, as it did in flight.
    pub fn prior_in_flight(&self) -> u32 {
        self.packets_in_flight
            .saturating_add(self.packets.max(self.acked_pkts))
    }
}

/// What an ACK (or a timer) reveals about congestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossSignal {
    /// A packet loss: `tcp_enter_recovery` (`ssthresh()`, `TCP_CA_Recovery`).
    Loss,
    /// An ECN-CE echo: `tcp_enter_cwr` (folded into Recovery; quinn has no separate state).
    Ecn,
    /// A retransmission timeout (quinn: persistent congestion): `tcp_enter_loss`.
    Rto,
}

/// The state the growth step of one ACK may change, saved before it so that a loss quinn
/// reports after the frame can be put where the era's `tcp_ack()` has it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BeforeGrowth {
    pub(crate) ack: AckEvent,
    pub(crate) now_j: u32,
    pub(crate) prior_in_flight: u32,
    pub(crate) tp: TcpSock,
    /// What the growth step can write in the module.
    pub(crate) module: ModuleGrowth,
    /// The whole module, to check [`ModuleGrowth`] against (debug builds).
    #[cfg(debug_assertions)]
    pub(crate) whole_module: CcModule,
    pub(crate) ss_exited: bool,
    pub(crate) exit: (Option<ExitReason>, Option<u32>, Option<u64>),
    pub(crate) guards: u32,
    /// Events recorded before the growth step (those after it may be replaced).
    pub(crate) events: usize,
}

/// The last ACK's [`BeforeGrowth`] while a loss of the same frame may still amend that ACK.
///
/// One slot, written field by field on every ACK: a fresh `Option<BeforeGrowth>` built per
/// ACK went through a stack temporary and a `memcpy` call of the whole struct.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingGrowth {
    open: bool,
    saved: BeforeGrowth,
}

impl PendingGrowth {
    /// No ACK pending; `tp` and `module` only fill the slot.
    pub(crate) fn new(tp: TcpSock, module: CcModule) -> Self {
        // Only the debug builds' check keeps a whole module.
        #[cfg(not(debug_assertions))]
        let _ = module;
        PendingGrowth {
            open: false,
            saved: BeforeGrowth {
                ack: AckEvent::default(),
                now_j: 0,
                prior_in_flight: 0,
                tp,
                module: ModuleGrowth::new(),
                #[cfg(debug_assertions)]
                whole_module: module,
                ss_exited: false,
                exit: (None, None, None),
                guards: 0,
                events: 0,
            },
        }
    }

    /// The pending ACK is complete: nothing can amend it any more.
    #[inline]
    pub(crate) fn close(&mut self) {
        self.open = false;
    }

    /// Open the slot for a new ACK and give its state to fill in (every field).
    #[inline]
    pub(crate) fn open(&mut self) -> &mut BeforeGrowth {
        self.open = true;
        &mut self.saved
    }

    /// The pending ACK's saved state, closing the slot.
    pub(crate) fn take(&mut self) -> Option<BeforeGrowth> {
        std::mem::replace(&mut self.open, false).then_some(self.saved)
    }

    /// Events recorded before the pending ACK's growth step (`None` without one).
    pub(crate) fn events_mut(&mut self) -> Option<&mut usize> {
        self.open.then_some(&mut self.saved.events)
    }
}
