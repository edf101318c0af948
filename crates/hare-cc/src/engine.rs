//! The kernel model of one connection: the `struct tcp_sock` fields congestion control touches
//! and the connection's algorithm module (`inet_csk_ca(sk)` with its `tcp_congestion_ops`).
//!
//! Units: cwnd/ssthresh in segments, time in microseconds since the controller was built
//! (`now_us`), sequence numbers are QUIC packet numbers (the analogue of `snd_nxt` /
//! `snd_una`; the model's `snd_una` is "largest acknowledged + 1").
//!
//! This file is the connection: [`KernelCc`] with its `tcp_sock` ([`TcpSock`], `tcp_sock.rs`)
//! and its algorithm module ([`CcModule`]: `cubic`, `bic` or `reno`, each implementing the
//! crate's `CongestionOps`, the kernel's `struct tcp_congestion_ops`), the ACK record the
//! driver takes ([`AckEvent`]) and the state saved before an ACK's growth step. It builds the
//! model, runs a hook with its context, turns what the hook decided into events, and reads
//! the state. `driver.rs` is the era's `tcp_ack()` and the other inputs (sends, losses, MSS
//! changes, the hook-by-hook entry points of [`crate::hooks`]); the modules call the shared
//! steps of `tcp_cong.rs` (the kernel's `tcp_cong.c`) and the slow-start family of
//! `slow_start/` (HyStart and HyStart++ are CUBIC's; BIC and Reno run them only when a spec
//! names them, `Profile::slow_start_for`).
//!
//! Deviations from TCP, by necessity of QUIC/quinn (documented in `PROFILES.md`): no undo
//! (quinn 0.11 has no spurious-loss callback; [`KernelCc::undo_cwnd`] still computes the era's
//! value), no PRR/rate halving (cwnd = ssthresh at once), ECN-CE handled as a loss (the
//! kernel's CWR state is folded into Recovery), no SACK scoreboard (Disorder only as 2.6.x
//! holds it after an episode, not for reordering), no RFC 2861 idle/app-limited decay.

use crate::bic::{Bic, BicGrowth};
use crate::clock::KernelClock;
use crate::cubic::{Cubic, CubicCounters, CubicGrowth};
use crate::events::{CcEvent, ExitReason, Phase, Snapshot};
use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, HookOut, OpsCtx};
use crate::profile::{Algorithm, Profile, SlowStartKind, UndoRule};
use crate::reno::Reno;
use crate::slow_start::delay::delay_to_us;
use crate::slow_start::hystart::HyStart;
use crate::slow_start::hystart_pp::HyStartPp;
use crate::slow_start::{hystart_ack_delay_us, SlowStart};
use crate::tcp_sock::{CaState, SockGrowth, TcpSock, TCP_INFINITE_SSTHRESH};

pub use crate::events::TRACE_TARGET;

// --- The connection's algorithm module (`inet_csk_ca(sk)` with its `icsk_ca_ops`) ---

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
    pub(crate) fn growth_view(&self, cwnd: u32) -> (u32, u32, u32, u32) {
        match self {
            CcModule::Cubic(c) => (c.last_max_cwnd, c.bic_k, c.bic_origin_point, c.cnt),
            CcModule::Bic(b) => (b.last_max_cwnd, 0, 0, b.cnt),
            CcModule::Reno(_) => (0, 0, 0, cwnd),
        }
    }

    /// Guards counted inside the module (CUBIC's).
    pub(crate) fn own_guards(&self) -> u32 {
        match self {
            CcModule::Cubic(c) => c.guards,
            _ => 0,
        }
    }

    /// Same algorithm as `other`.
    pub(crate) fn same_algorithm(&self, other: &CcModule) -> bool {
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
///   which `cong_avoid` touches it. On an ACK whose growth step writes only counters
///   ([`CcModule::growth_writes_counters_only`], most ACKs), only [`CubicCounters`].
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
    /// CUBIC before a growth step that stops at `bictcp_update()`'s first gate.
    CubicCounters(CubicCounters),
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
    /// Whether the growth step of an ACK, out of slow start, can write nothing in the module
    /// but [`CcModule::save_counters`]'s words, at this `cwnd`, jiffies and HZ: CUBIC's
    /// `cong_avoid` writes the module only in `bictcp_update()`, and only `ack_cnt` (and the
    /// Tsecr eras' `delay_min`) when its first gate stops it.
    #[inline(always)]
    pub(crate) fn growth_writes_counters_only(&self, cwnd: u32, now_j: u32, hz: u32) -> bool {
        match self {
            CcModule::Cubic(c) => c.cnt_is_fresh(cwnd, now_j, hz),
            CcModule::Bic(_) | CcModule::Reno(_) => false,
        }
    }

    /// Save the counters of a growth step that can write nothing else in the module
    /// ([`CcModule::growth_writes_counters_only`]).
    #[inline(always)]
    pub(crate) fn save_counters(&self, slot: &mut ModuleGrowth) {
        if let CcModule::Cubic(c) = self {
            slot.words = GrowthWords::CubicCounters(c.counters());
            slot.ss_saved = false;
        }
    }

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
            (CcModule::Cubic(c), GrowthWords::CubicCounters(g)) => c.set_counters(g),
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
        // BIC's and Reno's hooks are not inlined here: they get copies (`OpsCtx::reborrow`),
        // so that CUBIC's inlined path keeps its context and arguments in registers.
        match self {
            CcModule::Cubic(m) => m.cong_avoid(ctx, args),
            CcModule::Bic(m) => m.cong_avoid(&mut ctx.reborrow(), &{ *args }),
            CcModule::Reno(m) => m.cong_avoid(&mut ctx.reborrow(), &{ *args }),
        }
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
        // As `cong_avoid`.
        match self {
            CcModule::Cubic(m) => m.pkts_acked(ctx, sample),
            CcModule::Bic(m) => m.pkts_acked(&mut ctx.reborrow(), &{ *sample }),
            CcModule::Reno(m) => m.pkts_acked(&mut ctx.reborrow(), &{ *sample }),
        }
    }
    #[inline]
    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        each_module!(self, m => CongestionOps::undo_cwnd(m, tp, profile))
    }
}

// --- One ACK and the state saved before its growth step ---

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

/// What the steps of an ACK after `pkts_acked` read of it (the growth step, the state exit,
/// the loss reaction), with the jiffies and `prior_in_flight` taken at its start: all the
/// save before the growth step keeps of the [`AckEvent`] (`largest_acked`, the newest
/// packet's RTT and the packet count were read before).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AckRest {
    pub(crate) now_us: u64,
    /// `tcp_jiffies32` at `now_us`.
    pub(crate) now_j: u32,
    /// [`AckEvent::prior_in_flight`].
    pub(crate) prior_in_flight: u32,
    /// [`AckEvent::acked_pkts`].
    pub(crate) acked_pkts: u32,
    /// [`AckEvent::packets_in_flight`].
    pub(crate) packets_in_flight: u32,
    /// The RTT of the echoed timestamp (2.6.20 - 2.6.22's `measure_delay()`): the oldest
    /// acknowledged packet's, else the newest's.
    pub(crate) echo_rtt_us: Option<u64>,
    /// [`AckEvent::ends_episode`].
    pub(crate) ends_episode: bool,
    /// [`AckEvent::loss`].
    pub(crate) loss: Option<LossSignal>,
}

impl AckRest {
    /// The part of `ack` its steps after `pkts_acked` read, at `now_j`.
    #[inline(always)]
    pub(crate) fn of(ack: &AckEvent, now_j: u32) -> Self {
        AckRest {
            now_us: ack.now_us,
            now_j,
            prior_in_flight: ack.prior_in_flight(),
            acked_pkts: ack.acked_pkts,
            packets_in_flight: ack.packets_in_flight,
            echo_rtt_us: ack.seq_rtt_us.or(ack.rtt_us),
            ends_episode: ack.ends_episode,
            loss: ack.loss,
        }
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
///
/// quinn calls `on_end_acks` before it looks for the frame's losses, and `window()` (which
/// takes `&self`) may be read in between and after, so the ACK is run whole at
/// `on_end_acks` and rewound when `on_congestion_event` of the same frame follows: 4.x+
/// react to a loss before the growth step, 2.6.x grow with the loss known. What is saved
/// depends on what the ACK can reach ([`KernelCc::save_before_growth`]): on most ACKs
/// (congestion avoidance in Open, no episode ending) only the window counters and the
/// module's counters; otherwise also the rest of the socket's growth fields and the slow-start
/// exit record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BeforeGrowth {
    /// What the rest of the ACK reads of it.
    pub(crate) ack: AckRest,
    /// What the rest of the ACK can write in the socket.
    pub(crate) tp: SockGrowth,
    /// What the growth step can write in the module.
    pub(crate) module: ModuleGrowth,
    /// With a whole save: whether slow start had ended, and its record while it had not.
    pub(crate) ss_exited: bool,
    pub(crate) exit: (Option<ExitReason>, Option<u32>, Option<u64>),
    pub(crate) guards: u32,
    /// Events recorded before the growth step (those after it may be replaced).
    pub(crate) events: usize,
    /// The whole socket, module and exit record, to check the save against (debug builds).
    #[cfg(debug_assertions)]
    pub(crate) whole: (TcpSock, CcModule, SsExitRecord),
}

/// `ss_exited` and the slow-start exit record (`exit_reason`, `exit_cwnd`, `exit_t_us`).
#[cfg(debug_assertions)]
pub(crate) type SsExitRecord = (bool, (Option<ExitReason>, Option<u32>, Option<u64>));

/// What the slot of a [`PendingGrowth`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Saved {
    /// No ACK can be amended.
    Nothing,
    /// The save of an ACK that could write only the window and module counters.
    Counters,
    /// The whole save of an ACK.
    Whole,
}

/// The last ACK's [`BeforeGrowth`] while a loss of the same frame may still amend that ACK.
///
/// One slot, written field by field on every ACK: a fresh `Option<BeforeGrowth>` built per
/// ACK went through a stack temporary and a `memcpy` call of the whole struct.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PendingGrowth {
    saved_kind: Saved,
    saved: BeforeGrowth,
}

impl PendingGrowth {
    /// No ACK pending; `tp` and `module` only fill the slot.
    pub(crate) fn new(tp: TcpSock, module: CcModule) -> Self {
        // Only the debug builds' check keeps a whole socket and module.
        #[cfg(not(debug_assertions))]
        let _ = module;
        PendingGrowth {
            saved_kind: Saved::Nothing,
            saved: BeforeGrowth {
                ack: AckRest::default(),
                tp: tp.empty_growth(),
                module: ModuleGrowth::new(),
                ss_exited: false,
                exit: (None, None, None),
                guards: 0,
                events: 0,
                #[cfg(debug_assertions)]
                whole: (tp, module, (false, (None, None, None))),
            },
        }
    }

    /// The pending ACK is complete: nothing can amend it any more.
    #[inline]
    pub(crate) fn close(&mut self) {
        self.saved_kind = Saved::Nothing;
    }

    /// Open the slot for a new ACK and give its state to fill in (every field, or with
    /// `whole` false every field but `ss_exited` and `exit` and the socket's beyond its
    /// window counters).
    #[inline]
    pub(crate) fn open(&mut self, whole: bool) -> &mut BeforeGrowth {
        self.saved_kind = if whole { Saved::Whole } else { Saved::Counters };
        &mut self.saved
    }

    /// The pending ACK's saved state and whether it is whole, closing the slot.
    pub(crate) fn take(&mut self) -> Option<(BeforeGrowth, bool)> {
        match std::mem::replace(&mut self.saved_kind, Saved::Nothing) {
            Saved::Nothing => None,
            Saved::Counters => Some((self.saved, false)),
            Saved::Whole => Some((self.saved, true)),
        }
    }

    /// Events recorded before the pending ACK's growth step (`None` without one).
    pub(crate) fn events_mut(&mut self) -> Option<&mut usize> {
        (self.saved_kind != Saved::Nothing).then_some(&mut self.saved.events)
    }
}

/// The save before an ACK's growth step and the rewind to it.
impl KernelCc {
    /// Save what the rest of `ack` after `pkts_acked` can write ([`BeforeGrowth`]) and open
    /// the slot that [`KernelCc::amend_last_ack`] rewinds to.
    ///
    /// Most ACKs (CUBIC in congestion avoidance in Open, its slow-start exit recorded, ending
    /// no episode, revealing no loss, `bictcp_update()` stopping at its first gate) can write
    /// only the window counters, the module's counters and the pacing inputs (never saved,
    /// see `SockGrowth`): the state exit has nothing to do and `check_ssthresh_reached()`
    /// returns at once. Their save is those counters, in line; any other ACK's is the whole
    /// save, out of line.
    #[inline(always)]
    pub(crate) fn save_before_growth(&mut self, ack: &AckRest) {
        let counters_only = self.tp.ca_state == CaState::Open
            && self.ss_exited
            && !ack.ends_episode
            && ack.loss.is_none()
            && !self.tp.in_slow_start(self.profile.ss_compare)
            && self.module.growth_writes_counters_only(
                self.tp.snd_cwnd,
                ack.now_j,
                self.clock.hz(),
            );
        if !counters_only {
            // A copy for the call: `ack` itself keeps no address and stays in registers.
            self.save_whole_before_growth(&{ *ack });
            return;
        }
        let b = self.before_growth.open(false);
        b.ack = *ack;
        self.tp.save_growth(&mut b.tp, false);
        self.module.save_counters(&mut b.module);
        b.guards = self.guards;
        b.events = self.events.len();
        #[cfg(debug_assertions)]
        self.keep_whole_before_growth();
    }

    /// [`KernelCc::save_before_growth`] of an ACK that may write more than the counters
    /// (cold: out of the common path's way, although slow start takes it on every ACK).
    #[cold]
    #[inline(never)]
    fn save_whole_before_growth(&mut self, ack: &AckRest) {
        let in_slow_start = self.tp.in_slow_start(self.profile.ss_compare);
        let b = self.before_growth.open(true);
        b.ack = *ack;
        self.tp.save_growth(&mut b.tp, true);
        self.module.save_growth(&mut b.module, in_slow_start);
        b.ss_exited = self.ss_exited;
        if !self.ss_exited {
            // Only `record_exit()` writes the exit record, and only before the exit.
            b.exit = (self.exit_reason, self.exit_cwnd, self.exit_t_us);
        }
        b.guards = self.guards;
        b.events = self.events.len();
        #[cfg(debug_assertions)]
        self.keep_whole_before_growth();
    }

    /// Debug builds: keep the whole socket, module and exit record beside the save, to check
    /// every rewind and amended ACK against.
    #[cfg(debug_assertions)]
    fn keep_whole_before_growth(&mut self) {
        let exit = (self.exit_reason, self.exit_cwnd, self.exit_t_us);
        self.before_growth.saved.whole = (self.tp, self.module, (self.ss_exited, exit));
    }

    /// Put back what [`KernelCc::save_before_growth`] saved in `b` (`whole` as it was).
    pub(crate) fn rewind_growth(&mut self, b: &BeforeGrowth, whole: bool) {
        self.tp.restore_growth(&b.tp, whole);
        self.module.restore_growth(&b.module);
        if whole {
            if !b.ss_exited {
                (self.exit_reason, self.exit_cwnd, self.exit_t_us) = b.exit;
            }
            self.ss_exited = b.ss_exited;
        }
        self.guards = b.guards;
        self.events.truncate(b.events);
        #[cfg(debug_assertions)]
        {
            let (tp, module, exit) = b.whole;
            // The pacing inputs are not saved (see `SockGrowth`).
            let tp = TcpSock {
                pacing: self.tp.pacing,
                ..tp
            };
            debug_assert_eq!(
                self.tp, tp,
                "the rest of the ACK wrote socket state its save does not hold"
            );
            debug_assert_eq!(
                self.module, module,
                "the growth step wrote module state its save does not hold"
            );
            debug_assert_eq!(
                self.exit_record(),
                exit,
                "the rest of the ACK wrote the exit record its save does not hold"
            );
        }
    }

    /// This model put back to the whole state saved in `b` (debug builds: what an amended
    /// ACK is checked against).
    #[cfg(debug_assertions)]
    pub(crate) fn rewound_whole(&self, b: &BeforeGrowth) -> KernelCc {
        let mut whole = self.clone();
        let (tp, module, exit) = b.whole;
        whole.tp = tp;
        whole.module = module;
        (
            whole.ss_exited,
            (whole.exit_reason, whole.exit_cwnd, whole.exit_t_us),
        ) = exit;
        whole.guards = b.guards;
        whole.events.truncate(b.events);
        whole
    }

    /// Debug builds: the state an amended ACK left is the state the same amendment left from
    /// the whole copies (`rewound_whole`).
    #[cfg(debug_assertions)]
    pub(crate) fn assert_same_ack(&self, whole: &KernelCc) {
        debug_assert_eq!(self.tp, whole.tp, "amended ACK: socket differs");
        debug_assert_eq!(self.module, whole.module, "amended ACK: module differs");
        debug_assert_eq!(self.exit_record(), whole.exit_record());
        debug_assert_eq!(self.events, whole.events, "amended ACK: events differ");
        debug_assert_eq!(
            (self.guards, self.reductions, self.rto_resets),
            (whole.guards, whole.reductions, whole.rto_resets)
        );
        debug_assert_eq!(
            (self.rto_unanswered, self.t_us),
            (whole.rto_unanswered, whole.t_us)
        );
    }

    /// `ss_exited` and the exit record.
    #[cfg(debug_assertions)]
    fn exit_record(&self) -> SsExitRecord {
        (
            self.ss_exited,
            (self.exit_reason, self.exit_cwnd, self.exit_t_us),
        )
    }
}

// --- The model ---

/// The kernel model of one connection's congestion control.
#[derive(Debug, Clone)]
pub struct KernelCc {
    pub(crate) algorithm: Algorithm,
    pub(crate) profile: Profile,
    pub(crate) paced: bool,
    pub(crate) clock: KernelClock,
    pub(crate) tp: TcpSock,
    pub(crate) module: CcModule,
    pub(crate) events: Vec<CcEvent>,
    pub(crate) t_us: u64,
    /// Slow start has ended since the last (re)start; the next exit is not reported again.
    pub(crate) ss_exited: bool,
    pub(crate) exit_reason: Option<ExitReason>,
    pub(crate) exit_cwnd: Option<u32>,
    pub(crate) exit_t_us: Option<u64>,
    pub(crate) reductions: u32,
    pub(crate) rto_resets: u32,
    /// An RTO reset came and no ACK of data since: the kernel's `icsk_retransmits != 0`,
    /// which keeps a repeated timeout in Loss from taking a new ssthresh.
    pub(crate) rto_unanswered: bool,
    pub(crate) guards: u32,
    /// The last ACK's state before its growth step (see [`KernelCc::amend_last_ack`]).
    pub(crate) before_growth: PendingGrowth,
    /// The last `now_us` turned into jiffies and the result: an ACK frame and the transmit
    /// it releases share their time.
    jiffies_memo: (u64, u32),
}

impl KernelCc {
    /// Build the model as `tcp_init_congestion_control()` would for this algorithm and profile
    /// (initial cwnd from the profile, ssthresh infinite or the route's, then the module's
    /// `init`). `paced` says whether the sender paces (quinn always does): HyStart 5.6+ uses it.
    pub fn new(algorithm: Algorithm, profile: &Profile, paced: bool, mss: u32) -> Self {
        let p = profile.clone();
        let clock = KernelClock::new(p.hz, p.uptime_ms);
        let (tp, module) = initial_state(algorithm, &p, mss.max(1), &clock);
        let mut cc = KernelCc {
            algorithm,
            paced: p.paced.resolve(paced),
            clock,
            tp,
            module,
            events: Vec::with_capacity(8),
            t_us: 0,
            ss_exited: false,
            exit_reason: None,
            exit_cwnd: None,
            exit_t_us: None,
            reductions: 0,
            rto_resets: 0,
            rto_unanswered: false,
            guards: 0,
            before_growth: PendingGrowth::new(tp, module),
            jiffies_memo: (0, clock.jiffies(0)),
            profile: p,
        };
        cc.run_hook(0, |m, ctx| m.init(ctx));
        cc
    }

    /// The connection is established at `now_us`, before its first data segment is sent.
    ///
    /// The kernel initialises congestion control only then (`tcp_finish_connect()` /
    /// `tcp_init_transfer()` call `tcp_init_congestion_control()` after the handshake's ACK was
    /// processed), so the handshake's ACKs grow no window and start no HyStart round. In QUIC
    /// the controller exists from the first Initial packet and sees the handshake's ACKs; this
    /// undoes what they did: cwnd back to the initial window, ssthresh and the module as
    /// `init` leaves them (HyStart's first round starts here, ending at `snd_nxt` 0), and the
    /// sequence numbers start again at 0 (1-RTT packet numbers start at 0, RFC 9000 section
    /// 12.3). Kept, as the kernel keeps them: the RTT estimator, which the SYN's ACK fed
    /// (`tcp_ack_update_rtt()`), the clock, `lsndtime` and `packets_out`; the pacing rate is
    /// the one that ACK left (the initial window at the SYN's RTT), which 5.6+ HyStart's
    /// ACK-train cushion reads on the first data ACK.
    pub fn establish(&mut self, now_us: u64) {
        let (mut tp, module) =
            initial_state(self.algorithm, &self.profile, self.tp.mss, &self.clock);
        tp.srtt_us = self.tp.srtt_us;
        tp.lsndtime = self.tp.lsndtime;
        tp.packets_out = self.tp.packets_out;
        // The SYN-ACK's tcp_ack() ends in tcp_update_pacing_rate() (4.x+: from
        // tcp_cong_control()) before tcp_init_transfer() sets the initial window; nothing
        // recomputes it until the first data ACK, so HyStart's ACK-train cushion (5.6+,
        // hystart_ack_delay()) reads that rate on the first data ACK: the initial window at
        // the SYN's RTT, in slow start.
        if tp.srtt_us != 0 {
            tp.update_pacing_rate(self.profile.pacing_ss_ratio, self.profile.pacing_ca_ratio);
        }
        self.tp = tp;
        self.module = module;
        self.t_us = self.t_us.max(now_us);
        self.ss_exited = false;
        (self.exit_reason, self.exit_cwnd, self.exit_t_us) = (None, None, None);
        self.reductions = 0;
        self.rto_resets = 0;
        self.rto_unanswered = false;
        self.before_growth.close();
        self.run_hook(now_us, |m, ctx| m.init(ctx));
    }

    /// Put the model on another clock (see [`crate::hooks::KernelCc::set_clock`]); the
    /// remembered jiffies are of the old one.
    pub(crate) fn replace_clock(&mut self, clock: KernelClock) {
        self.clock = clock;
        self.jiffies_memo = (self.t_us, clock.jiffies(self.t_us));
    }

    /// `tcp_jiffies32` at `now_us`, remembered for the next call at the same time.
    #[inline(always)]
    pub(crate) fn jiffies_at(&mut self, now_us: u64) -> u32 {
        if now_us != self.jiffies_memo.0 {
            self.jiffies_memo = (now_us, self.clock.jiffies(now_us));
        }
        self.jiffies_memo.1
    }

    /// Run one hook of the module with its context at `now_us`, then report what it decided
    /// (slow-start exits, CSS changes, guards).
    #[inline]
    pub(crate) fn run_hook<R>(
        &mut self,
        now_us: u64,
        hook: impl FnOnce(&mut CcModule, &mut OpsCtx<'_>) -> R,
    ) -> R {
        let now_j = self.clock.jiffies(now_us);
        self.run_hook_at(now_us, now_j, hook)
    }

    /// [`KernelCc::run_hook`] with the jiffies already computed. Always inlined: on the
    /// per-ACK path the context then lives in registers and the hook's report costs one test.
    #[inline(always)]
    pub(crate) fn run_hook_at<R>(
        &mut self,
        now_us: u64,
        now_j: u32,
        hook: impl FnOnce(&mut CcModule, &mut OpsCtx<'_>) -> R,
    ) -> R {
        let mut out = HookOut::default();
        let (module, mut ctx) = self.hook_parts(now_us, now_j, &mut out);
        let r = hook(module, &mut ctx);
        self.hook_done(&out);
        r
    }

    /// The module and the context of one hook call, reporting into `out`; the per-ACK
    /// hooks (`pkts_acked`, `cong_avoid`) call the module with them directly, so that no
    /// closure stands between the driver and the module's code.
    #[inline(always)]
    pub(crate) fn hook_parts<'a>(
        &'a mut self,
        now_us: u64,
        now_j: u32,
        out: &'a mut HookOut,
    ) -> (&'a mut CcModule, OpsCtx<'a>) {
        let ctx = OpsCtx {
            tp: &mut self.tp,
            profile: &self.profile,
            clock: &self.clock,
            paced: self.paced,
            now_us,
            now_j,
            out,
        };
        (&mut self.module, ctx)
    }

    /// Report what a hook decided (see [`KernelCc::hook_parts`]).
    #[inline(always)]
    pub(crate) fn hook_done(&mut self, out: &HookOut) {
        // By reference: a copy of `out` (written field by field by the hook) would be read
        // back with wide loads that cannot be forwarded from those narrow stores.
        if !out.is_empty() {
            self.absorb(out);
        }
    }

    #[cold]
    fn absorb(&mut self, out: &HookOut) {
        self.guards = self.guards.saturating_add(out.guards);
        if let Some(change) = out.css {
            self.events.push(change.event());
        }
        if let Some(exit) = out.exit {
            if !self.ss_exited {
                self.record_exit(exit.t_us, exit.cwnd, exit.cwnd, exit.reason);
            }
        }
    }

    #[inline]
    pub(crate) fn in_slow_start(&self) -> bool {
        self.tp.in_slow_start(self.profile.ss_compare)
    }

    /// Slow start ended by reaching a preset ssthresh (or one set by HyStart / HyStart++,
    /// already reported).
    #[inline]
    pub(crate) fn check_ssthresh_reached(&mut self) {
        if self.ss_exited || self.tp.ca_state == CaState::Recovery || self.in_slow_start() {
            return;
        }
        let cwnd = self.tp.snd_cwnd;
        let ssthresh = self.tp.snd_ssthresh;
        self.record_exit(self.t_us, cwnd, ssthresh, ExitReason::SsthreshReached);
    }

    // Cold: once per slow start, off the per-ACK path of `check_ssthresh_reached`.
    #[cold]
    pub(crate) fn record_exit(&mut self, t_us: u64, cwnd: u32, ssthresh: u32, reason: ExitReason) {
        self.ss_exited = true;
        self.exit_reason = Some(reason);
        self.exit_cwnd = Some(cwnd);
        self.exit_t_us = Some(t_us);
        tracing::trace!(
            target: TRACE_TARGET,
            t_us,
            cwnd,
            ssthresh,
            reason = reason.as_str(),
            "slow start exit"
        );
        self.events.push(CcEvent::SlowStartExit {
            t_us,
            cwnd,
            ssthresh,
            reason,
        });
    }
}

/// The socket and module `tcp_init_congestion_control()` starts from: the profile's initial
/// window (RFC 3390's when 0), ssthresh infinite or the route's, and the algorithm's fresh
/// state (its `init` hook runs after).
fn initial_state(
    algorithm: Algorithm,
    p: &Profile,
    mss: u32,
    clock: &KernelClock,
) -> (TcpSock, CcModule) {
    let iw = if p.initial_cwnd == 0 {
        rfc3390_initial_cwnd(mss)
    } else {
        p.initial_cwnd
    };
    let mut tp = TcpSock::new(iw, p.cwnd_clamp, mss).with_cwnd_cnt_bits(p.cwnd_cnt_bits);
    tp.lsndtime = clock.jiffies(0);
    // The route metric is the per-path clamp for any algorithm; `initial_ssthresh` is a
    // parameter of tcp_cubic / tcp_bic only (their `init`): Reno (tcp_cong.c) has no init
    // hook and never sees it.
    if p.route_ssthresh != 0 {
        tp.snd_ssthresh = p.route_ssthresh;
    }
    let module = match algorithm {
        Algorithm::Cubic => CcModule::Cubic(Cubic::new(p)),
        Algorithm::Bic => CcModule::Bic(Bic::new(p)),
        Algorithm::Reno => CcModule::Reno(Reno::new(p)),
    };
    (tp, module)
}

/// RFC 3390 initial window by segment size, as `tcp_init_cwnd()` before IW10:
/// 2 above 1460 bytes, 3 above 1095, else 4.
pub fn rfc3390_initial_cwnd(mss: u32) -> u32 {
    if mss > 1460 {
        2
    } else if mss > 1095 {
        3
    } else {
        4
    }
}

/// Reading the model: the window, the module's state, the phase, snapshots for observers,
/// and the events decided since the last read.
impl KernelCc {
    /// `snd_cwnd` in segments.
    pub fn cwnd(&self) -> u32 {
        self.tp.snd_cwnd
    }

    /// `snd_ssthresh` in segments, `None` while infinite.
    pub fn ssthresh(&self) -> Option<u32> {
        (self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH).then_some(self.tp.snd_ssthresh)
    }

    /// Current segment size in bytes.
    pub fn mss(&self) -> u32 {
        self.tp.mss
    }

    /// State for observers.
    pub fn snapshot(&self) -> Snapshot {
        let p = &self.profile;
        let hz = self.clock.hz();
        let (last_max, k, origin, cnt) = self.module.growth_view(self.tp.snd_cwnd);
        let ssthresh = self.ssthresh();
        let profile = match p.non_kernel(self.algorithm) {
            Some(what) => format!("{} (non-kernel: {what})", p.name),
            None => p.name.clone(),
        };
        let ss = self.module.slow_start_state();
        let hystart = ss.map(|s| s.hystart);
        let epoch_start = self.module.epoch_start();
        let delay_min = ss.map_or(0, |s| s.delay_min);
        Snapshot {
            algorithm: self.algorithm.to_string(),
            profile,
            phase: Some(self.phase()),
            t_us: self.t_us,
            mss: self.tp.mss,
            cwnd: self.tp.snd_cwnd,
            cwnd_bytes: u64::from(self.tp.snd_cwnd) * u64::from(self.tp.mss),
            ssthresh,
            ssthresh_bytes: ssthresh.map(|s| u64::from(s) * u64::from(self.tp.mss)),
            last_max_cwnd: last_max,
            cubic_k: k,
            origin_point: origin,
            epoch_start: (epoch_start != 0).then_some(epoch_start),
            cnt,
            delay_min_us: (delay_min != 0).then(|| delay_to_us(delay_min, p.clock, hz)),
            hystart_end_seq: hystart.map_or(0, |h| h.end_seq),
            hystart_sample_cnt: hystart.map_or(0, |h| h.sample_cnt),
            hystart_curr_rtt_us: hystart
                .filter(|h| h.curr_rtt != u32::MAX)
                .map(|h| delay_to_us(h.curr_rtt, p.clock, hz)),
            exit_reason: self.exit_reason,
            exit_cwnd: self.exit_cwnd,
            exit_t_us: self.exit_t_us,
            reductions: self.reductions,
            rto_resets: self.rto_resets,
        }
    }

    /// True when decisions are recorded (some may be held back until the ACK completes).
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Take the decisions made since the last call, except those of the last ACK's growth
    /// step while [`KernelCc::amend_last_ack`] may still replace them (until
    /// [`KernelCc::close_ack`]).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, CcEvent> {
        let end = match self.before_growth.events_mut() {
            Some(events) => std::mem::take(events),
            None => self.events.len(),
        };
        self.events.drain(..end)
    }

    /// The last ACK is complete (nothing more of its frame can follow): its decisions are
    /// final and [`KernelCc::amend_last_ack`] no longer rewinds it. Returns whether events
    /// are waiting.
    pub fn close_ack(&mut self) -> bool {
        self.before_growth.close();
        !self.events.is_empty()
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The profile in force.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Whether the model treats the sender as paced (after resolving `paced=auto`).
    pub fn paced(&self) -> bool {
        self.paced
    }

    /// The `tcp_sock` view.
    pub fn tcp_sock(&self) -> &TcpSock {
        &self.tp
    }

    /// The algorithm module and its state (`struct bictcp` of CUBIC or BIC).
    pub fn module(&self) -> &CcModule {
        &self.module
    }

    /// CUBIC's delay and slow-start state (BIC / Reno: only under a named HyStart or
    /// HyStart++).
    pub fn slow_start_state(&self) -> Option<&SlowStart> {
        self.module.slow_start_state()
    }

    /// `delay_min` in the era's unit (0 = none; always 0 for BIC and Reno, which have none).
    pub fn delay_min(&self) -> u32 {
        self.module.slow_start_state().map_or(0, |s| s.delay_min)
    }

    /// The module's `epoch_start` in jiffies (0 = none; always 0 for Reno).
    pub fn epoch_start(&self) -> u32 {
        self.module.epoch_start()
    }

    /// Kernel HyStart's state (CUBIC's; BIC / Reno only when named).
    pub fn hystart(&self) -> Option<&HyStart> {
        self.module.slow_start_state().map(|s| &s.hystart)
    }

    /// HyStart++'s state (when the module has CUBIC's slow-start code).
    pub fn hystart_pp(&self) -> Option<&HyStartPp> {
        self.module.slow_start_state().map(|s| &s.hspp)
    }

    /// The slow-start strategy in force (HyStart++ becomes `standard` after an RTO).
    pub fn slow_start_kind(&self) -> SlowStartKind {
        match self.module.slow_start_state() {
            Some(s) => s.kind,
            None if self.profile.slow_start == SlowStartKind::Limited => SlowStartKind::Limited,
            None => SlowStartKind::Standard,
        }
    }

    /// The clocks of this connection.
    pub fn clock(&self) -> &KernelClock {
        &self.clock
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        if self.tp.ca_state == CaState::Recovery {
            Phase::Recovery
        } else if self.in_slow_start() {
            if self.module.slow_start_state().is_some_and(|s| s.in_css()) {
                Phase::ConservativeSlowStart
            } else {
                Phase::SlowStart
            }
        } else {
            Phase::CongestionAvoidance
        }
    }

    /// `sk_pacing_rate` in bytes per second (`tcp_update_pacing_rate()`, capped by the
    /// profile's `max_pacing_rate`), 0 before the first RTT sample and in the eras before
    /// 3.12, which had no pacing rate.
    pub fn pacing_rate(&self) -> u64 {
        self.tp.sk_pacing_rate(self.profile.max_pacing_rate)
    }

    /// `hystart_ack_delay()` (5.6+): `min(1 ms, gso_max_size * 4 s / pacing_rate)` in us, 0
    /// without a pacing rate.
    pub fn hystart_ack_delay_us(&self) -> u32 {
        hystart_ack_delay_us(self.profile.gso_max_size, self.pacing_rate())
    }

    /// How many times a kernel overflow, divide-by-zero or endless loop (2.6.20's 32-bit cube
    /// root, a wrapped u16 `delayed_ack`, ...) was replaced by a defined path.
    pub fn overflow_guards(&self) -> u32 {
        self.guards.saturating_add(self.module.own_guards())
    }

    /// The window an undo of the era would restore (quinn 0.11 never undoes; exposed so the
    /// era-specific arithmetic stays tested): cwnd itself when nothing can be undone (no
    /// `undo_marker`: no reduction yet, or an ECN one, which `tcp_enter_cwr()` makes final).
    /// The kernel's undo (`tcp_undo_cwr()` in 2.6.x, `tcp_undo_cwnd_reduction()` later) asks
    /// the module's `undo_cwnd` only when the reduction saved `prior_ssthresh`; without it,
    /// 2.6.20 - 4.4 take `max(cwnd, ssthresh)` and the kernels of the `prior-cwnd` undo rule
    /// (5.0 and 6.x read here) leave cwnd as it is.
    pub fn undo_cwnd(&self) -> u32 {
        if !self.tp.undo_marker {
            return self.tp.snd_cwnd;
        }
        if self.tp.prior_ssthresh != 0 {
            return self.module.undo_cwnd(&self.tp, &self.profile);
        }
        match self.profile.undo {
            UndoRule::PriorCwnd => self.tp.snd_cwnd,
            UndoRule::LastMax | UndoRule::LossCwnd => self.tp.snd_cwnd.max(self.tp.snd_ssthresh),
        }
    }
}
