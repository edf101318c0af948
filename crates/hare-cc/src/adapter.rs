//! The quinn adapter: [`HareController`] implements `quinn_proto::congestion::Controller` over
//! the kernel model [`KernelCc`].
//!
//! # Translation rules (QUIC callbacks -> kernel events)
//! - **Units.** The model counts segments of the current maximum datagram size (quinn's
//!   `current_mtu`, what quinn's own controllers use as the MSS). Acknowledged bytes are turned
//!   into segments with the byte remainder carried to the next ACK frame, so a run of
//!   half-size packets counts as half as many segments. Bytes in flight become packets by
//!   rounding up.
//! - **One ACK = one ACK frame.** quinn calls `on_ack` once per newly acknowledged
//!   ack-eliciting packet and then `on_end_acks` once per frame. The adapter collects the
//!   frame (bytes, newest send time) and calls [`KernelCc::on_ack`] once, in `on_end_acks`,
//!   like `tcp_ack()` processes one ACK segment.
//! - **RTT.** The frame's sample is `now - sent` of its most recently sent packet, the
//!   kernel's `ca_rtt_us` (`tcp_clean_rtx_queue`). quinn's `RttEstimator` is not used: it is
//!   updated after the callbacks (one frame stale) and its `min()` starts at the 333 ms initial
//!   RTT. Like the kernel's sample, it includes the peer's ACK delay.
//! - **Rounds.** `on_sent`'s last packet number + 1 is `snd_nxt`; `on_end_acks`'s largest
//!   acknowledged packet number is the `snd_una` analogue, so HyStart's rounds are windows of
//!   1-RTT packet numbers as the kernel's are windows of sequence numbers.
//! - **Handshake.** The kernel initialises congestion control when the connection is
//!   established (`tcp_init_congestion_control()` from `tcp_finish_connect()` /
//!   `tcp_init_transfer()`): the SYN's ACK grows no window and starts no HyStart round, it
//!   only feeds the RTT estimator. A quinn controller exists from the first Initial packet and
//!   is called for the Initial and Handshake packet-number spaces too, without being told the
//!   space. Each space numbers its packets from 0 (RFC 9000 section 12.3) and `on_sent` gets
//!   the number of the datagram's last packet, which is in its highest space. So a datagram
//!   numbered 0 after an earlier one starts a later space (Handshake, then 1-RTT), and the
//!   last such start is the data's. There the adapter establishes the model
//!   ([`KernelCc::establish`]: initial window, the module's `init`, numbers from 0, the RTT
//!   estimate kept), and from then on ignores ACK frames of packets all sent before that
//!   datagram (the handshake spaces'). Without this the Initial packet's ACK took HyStart's
//!   first round and every later round started one ACK into its ACK train instead of at its
//!   head. Starts are looked for only until the first ACK of a 1-RTT packet, and only while
//!   the numbers stay below [`HANDSHAKE_MAX_PACKETS`] and fewer than [`HANDSHAKE_MAX_FRAMES`]
//!   ACK frames came before any start (a handshake is a few packets), so that a caller
//!   without a handshake (a test driving the callbacks from 0) is never re-initialised. Not modelled:
//!   RFC 5681's one-segment window after a lost SYN (a lost Initial is a loss like any other).
//! - **Loss.** quinn reports a loss batch per detection, not per episode. As the kernel enters
//!   `TCP_CA_Recovery` once per window of data (RFC 6582 `high_seq`), the adapter remembers when
//!   the current recovery started and ignores congestion events for packets sent before it;
//!   the first acknowledgement of a packet sent after it ends the episode
//!   ([`KernelCc::on_recovery_end`]). ECN-CE (`lost_bytes == 0`) reduces like a loss (RFC 9002
//!   section 7.1; the kernel's `tcp_enter_cwr`). Persistent congestion (RFC 9002 section 7.6)
//!   takes the kernel's RTO path ([`KernelCc::on_rto`], `tcp_enter_loss`) whatever the episode.
//! - **Send test.** quinn blocks sending when `in_flight + mtu >= window()`, the kernel sends
//!   while `packets_out < cwnd` (`tcp_cwnd_test`). `window()` therefore reports
//!   `cwnd * mss + 1` bytes so that exactly `cwnd` full-size packets fit, as in the kernel
//!   (without the extra byte a 1-segment loss window would block everything but probes).
//!   `metrics()` and the snapshot report the kernel window `cwnd * mss`.
//! - **Unpaced sending** ([`HareController::set_unpaced_sending`], virtual time only). quinn
//!   paces every connection unless the window exceeds `u32::MAX` bytes (`Pacer::delay` in
//!   quinn-proto 0.11's `connection/pacing.rs` returns no delay for such windows). In this mode
//!   `window()` reports [`UNPACED_OPEN_WINDOW`] while the kernel's `tcp_cwnd_test` passes
//!   (packets in flight, from the adapter's own count, below `cwnd`) and one segment (which
//!   blocks every ack-eliciting datagram in quinn's `in_flight + mtu >= window` test) once it
//!   fails. quinn then neither paces nor applies its own window; ACK-only packets and loss
//!   probes still go out, as a kernel sends ACKs and RTO retransmissions whatever cwnd says.
//!   The caller must ask quinn for one datagram per `poll_transmit`: quinn reports a whole
//!   batch to `on_sent` at once, so a batch could overrun cwnd by up to its size.
//! - **MTU changes.** `on_mtu_update` is the kernel's MSS change: a larger segment rescales cwnd
//!   as `tcp_mtup_probe_success()`, a smaller one keeps cwnd in segments (`tcp_sync_mss()`).
//!   The kernel changes the MSS between ACKs, never inside one ACK's congestion-control
//!   processing; quinn's black-hole detection reports a smaller MTU after a frame's acks and
//!   before that frame's loss report. Such a change waits until the loss has gone into the
//!   frame's ACK in the era's order, and at the latest until the next callback.
//! - **Time.** Microseconds since the `now` given to `ControllerFactory::build`.
//!   `on_mtu_update` has no `now`: the last time seen is used.

use std::any::Any;

use quinn_proto::congestion::{Controller, ControllerMetrics};
use quinn_proto::RttEstimator;
use std::time::Instant;

use crate::engine::{AckEvent, KernelCc, LossSignal};
use crate::events::{CcEvent, Snapshot};
use crate::observer::{ControllerId, Observer, Tap};
use crate::profile::{Algorithm, Profile};
use crate::stamps::Stamps;
use crate::tcp_sock::CaState;

/// Extra byte added to `window()` so that quinn's `>=` send test admits `cwnd` full packets.
const SEND_TEST_SLACK: u64 = 1;

/// What `window()` reports in unpaced mode while cwnd has room: above `u32::MAX`, so that
/// quinn-proto 0.11's pacer never delays a datagram, and far below any arithmetic limit.
pub const UNPACED_OPEN_WINDOW: u64 = 1 << 40;

/// Packet numbers at or above this are past any handshake space: no space starts after them.
/// A QUIC handshake's Initial and Handshake spaces carry a handful of packets each (a
/// ClientHello; the server's flight, whose certificate chain of a few kilobytes fills a few
/// 1200-byte datagrams; acknowledgements; probe retransmissions). The bound only has to
/// exceed any handshake space, with room for many retransmissions: too low, and a slow
/// handshake's space would be taken as data; too high costs nothing but a longer watch for
/// a space start, which no data packet (numbered on from the 1-RTT space's 0) can fake.
const HANDSHAKE_MAX_PACKETS: u64 = 64;

/// ACK frames after which, with no space start seen, the connection is taken as established
/// from its first packet. A handshake acknowledges each flight of each of its two spaces
/// once or twice, more under probe retransmissions, before the 1-RTT space starts: 16
/// leaves room for those, while a caller that drives the callbacks from packet 0 without a
/// handshake (tests, simulators) stops being watched after 16 ACK frames.
const HANDSHAKE_MAX_FRAMES: u32 = 16;

/// What the adapter has seen of QUIC's handshake (module docs, "Handshake").
#[derive(Debug, Clone, Copy, Default)]
struct Handshake {
    /// A datagram was sent before: a later one numbered 0 starts another space.
    sent_any: bool,
    /// When the first datagram of the data's space (1-RTT) was sent: ACK frames of packets
    /// all sent before it are the handshake's.
    data_from: Option<Instant>,
    /// No more space starts are looked for.
    settled: bool,
    /// ACK frames seen while no space start was.
    frames: u32,
}

impl Handshake {
    /// A datagram whose last packet number is `pn` is sent at `now`: true when it starts a
    /// later packet-number space (the caller establishes the model).
    fn starts_space(&mut self, now: Instant, pn: u64) -> bool {
        let starts = pn == 0 && self.sent_any;
        self.sent_any = true;
        if starts {
            self.data_from = Some(now);
        } else if pn >= HANDSHAKE_MAX_PACKETS {
            self.settled = true;
        }
        starts
    }

    /// An ACK frame whose newest packet was sent at `newest_sent`: true when it is the
    /// handshake's (the model does not see it).
    fn is_handshake_ack(&mut self, newest_sent: Instant) -> bool {
        match self.data_from {
            Some(from) => {
                if newest_sent < from {
                    return true;
                }
                self.settled = true;
            }
            None if !self.settled => {
                self.frames += 1;
                self.settled = self.frames >= HANDSHAKE_MAX_FRAMES;
            }
            None => {}
        }
        false
    }
}

/// The ACK frame being collected between `on_ack` calls and `on_end_acks`. The send times
/// are meaningful only while `packets > 0` (plain `Instant`s, not `Option`s: this is written
/// for every acknowledged packet).
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Ack-eliciting packets acknowledged in this frame.
    packets: u32,
    /// One of them was sent after the current recovery episode started.
    ends_recovery: bool,
    /// Their bytes.
    bytes: u64,
    /// Send time of the most recently sent of them (`ca_rtt_us`).
    newest_sent: Instant,
    /// Send time of the earliest sent of them (`seq_rtt_us`, for srtt).
    oldest_sent: Instant,
}

impl Frame {
    /// No packet yet; `at` only fills the send times.
    fn empty(at: Instant) -> Self {
        Frame {
            packets: 0,
            ends_recovery: false,
            bytes: 0,
            newest_sent: at,
            oldest_sent: at,
        }
    }
}

/// A quinn congestion controller running the Linux kernel model of one algorithm and profile.
///
/// Built by [`crate::HareFactory`] (usually through [`crate::CcSpec::factory`]). Read its state
/// with [`HareController::snapshot`] after
/// `connection.congestion_state().clone_box().into_any().downcast::<HareController>()`, or
/// through an [`Observer`].
#[derive(Clone)]
pub struct HareController {
    cc: KernelCc,
    /// The controller's clock: `Instant`s as microseconds since the origin, and RTT samples
    /// (`stamps.rs`).
    stamps: Stamps,
    /// The model's segment size (`cc.mss()`, equal at every step: both change together in
    /// `change_mss`), kept here beside its reciprocal, which the model has no use for.
    mss: u32,
    /// `ceil(2^64 / mss)`: bytes in flight become packets by a multiplication (on every
    /// send and ACK frame) instead of a division; see [`div_ceil_by`].
    mss_reciprocal: u64,
    initial_window: u64,
    frame: Frame,
    /// Acknowledged bytes not yet worth a whole segment (always `< mss` after a frame).
    ack_carry: u64,
    /// Bytes in flight: quinn's figure from the last `on_end_acks`, plus sends since.
    in_flight: u64,
    /// `now` of the congestion event that started the current (or last) recovery episode.
    /// quinn's loss events name the send time of the newest lost packet, not an episode: a
    /// later event for a packet sent before this belongs to the episode already answered.
    /// The model keeps `high_seq` in packet numbers, which quinn does not give here.
    recovery_start: Option<Instant>,
    /// `now` of the last `on_end_acks` while its frame may still report a loss (quinn calls
    /// `on_congestion_event` after the acks of the frame that revealed it).
    open_frame: Option<Instant>,
    /// A segment size quinn reported while that frame was open: applied once the frame's ACK
    /// is complete (the kernel's `tcp_sync_mss()` runs between ACKs).
    pending_mss: Option<u32>,
    /// The caller gates sending by [`HareController::can_send`] (see the module docs).
    unpaced: bool,
    handshake: Handshake,
    tap: Option<Tap>,
}

impl std::fmt::Debug for HareController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HareController")
            .field("cwnd", &self.cc.cwnd())
            .field("ssthresh", &self.cc.ssthresh())
            .field("mss", &self.mss)
            .field("in_flight", &self.in_flight)
            .field("in_recovery", &self.in_recovery())
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

impl HareController {
    /// Build a controller as `tcp_init_congestion_control()` would, at time `now` (the time
    /// origin of every kernel timestamp) with quinn's current MTU as the segment size.
    /// `paced` is what the kernel model's HyStart assumes (quinn always paces).
    pub fn new(
        algorithm: Algorithm,
        profile: &Profile,
        paced: bool,
        now: Instant,
        current_mtu: u16,
        observer: Option<&Observer>,
    ) -> Self {
        let mss = u32::from(current_mtu).max(1);
        let cc = KernelCc::new(algorithm, profile, paced, mss);
        let initial_window = u64::from(cc.cwnd()) * u64::from(mss) + SEND_TEST_SLACK;
        let mut this = Self {
            cc,
            stamps: Stamps::new(now),
            mss,
            mss_reciprocal: reciprocal(mss),
            initial_window,
            frame: Frame::empty(now),
            ack_carry: 0,
            in_flight: 0,
            recovery_start: None,
            open_frame: None,
            pending_mss: None,
            unpaced: false,
            handshake: Handshake::default(),
            tap: None,
        };
        if let Some(observer) = observer {
            let tap = observer.register(now, this.snapshot());
            this.tap = Some(tap);
        }
        this
    }

    /// The id this controller got from the [`Observer`] its factory was given (`None`
    /// without one). A copy made by quinn (`clone_box`) keeps the id, so the copy that
    /// `connection.congestion_state().clone_box().into_any().downcast::<HareController>()`
    /// gives names the connection's registration.
    pub fn id(&self) -> Option<ControllerId> {
        self.tap.as_ref().map(Tap::id)
    }

    /// The `Instant` the controller was built at: event and snapshot times (`t_us`) are
    /// microseconds since it.
    pub fn origin(&self) -> Instant {
        self.stamps.origin()
    }

    /// The kernel model's state, with byte figures for the current segment size.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = self.cc.snapshot();
        s.mss = self.mss;
        s.cwnd = self.cc.cwnd();
        s.cwnd_bytes = self.cwnd_bytes();
        s.ssthresh = self.cc.ssthresh();
        s.ssthresh_bytes = self.ssthresh_bytes();
        s.t_us = s.t_us.max(self.stamps.last_now_us());
        s
    }

    /// The kernel model behind this controller (read-only): its socket fields, the
    /// algorithm's state and the clock, in the kernel's units ([`KernelCc`]).
    pub fn kernel(&self) -> &KernelCc {
        &self.cc
    }

    /// `snd_cwnd` in segments.
    pub fn cwnd_segments(&self) -> u32 {
        self.cc.cwnd()
    }

    /// The segment size in bytes (quinn's current MTU).
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Acknowledged bytes carried to the next frame (less than one segment between frames).
    pub fn ack_carry(&self) -> u64 {
        self.ack_carry
    }

    /// Bytes in flight as the adapter tracks them.
    pub fn bytes_in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Switch unpaced sending on or off (see the module docs): `window()` then reports a
    /// window that turns quinn's pacer and congestion check off while [`Self::can_send`] holds
    /// and blocks ack-eliciting data otherwise. For a simulator that asks quinn for one
    /// datagram at a time; the kernel model's own `paced` assumption is set separately
    /// ([`crate::HareFactory::paced`]).
    pub fn set_unpaced_sending(&mut self, on: bool) {
        self.unpaced = on;
    }

    /// Whether unpaced sending is on.
    pub fn is_unpaced_sending(&self) -> bool {
        self.unpaced
    }

    /// The kernel's `tcp_cwnd_test()`: another full segment may be sent while the packets in
    /// flight (the adapter's count: quinn's figure at the last ACK frame, plus sends, minus
    /// acknowledged and lost bytes since) are fewer than `snd_cwnd`.
    pub fn can_send(&self) -> bool {
        self.packets_in_flight(self.in_flight) < self.cc.cwnd()
    }

    /// True between a window reduction and the first acknowledgement of a packet sent after it:
    /// the model's Recovery (or the folded CWR) and Loss states.
    pub fn in_recovery(&self) -> bool {
        matches!(
            self.cc.tcp_sock().ca_state(),
            CaState::Recovery | CaState::Loss
        )
    }

    /// The kernel's pacing-rate estimate in bytes per second, the kernel's own unit: the
    /// model's `sk_pacing_rate` (`tcp_update_pacing_rate`, Linux 4.3+, updated on every ACK):
    /// `mss * max(cwnd, packets_out) / srtt` times the profile's `pacing_ss_ratio` (200%)
    /// while `cwnd < ssthresh / 2` (slow start well below ssthresh, including while ssthresh
    /// is infinite) and `pacing_ca_ratio` (120%) otherwise, srtt being the kernel's 1/8-gain
    /// average of the per-frame samples, capped by the profile's `max_pacing_rate`. `None`
    /// before the first RTT sample and for the 2.6.x profiles (no pacing rate before 3.12).
    /// Informational: quinn 0.11 paces with its own pacer. `metrics()` reports it to quinn in bits per second, the unit
    /// quinn-proto 0.11 documents for `ControllerMetrics::pacing_rate` (and its qlog's
    /// `pacing_rate`); quinn's development branch changed that field to bytes per second and
    /// paces from it, so the adapter's unit changes with the move to that quinn.
    pub fn pacing_rate(&self) -> Option<u64> {
        match self.cc.pacing_rate() {
            0 => None,
            bytes_per_s => Some(bytes_per_s),
        }
    }

    /// The last ACK frame is complete: publish its decisions, then apply a segment size
    /// change that waited for it.
    #[inline]
    fn close_frame(&mut self) {
        if self.open_frame.take().is_some() && self.cc.close_ack() {
            self.after_decision(false);
        }
        self.apply_pending_mss();
    }

    /// The first datagram of the data's packet-number space is being sent: the connection is
    /// established for the kernel model (module docs, "Handshake"). The handshake's loss
    /// episode, if any, and its byte carry end with it.
    // Cold, as the other rare paths of the per-frame callbacks (an MSS change, forwarding
    // decisions): the frame's common path then runs without taken jumps around them.
    #[cold]
    fn establish(&mut self, now_us: u64) {
        self.cc.establish(now_us);
        self.ack_carry = 0;
        self.recovery_start = None;
        self.after_decision(false);
    }

    /// A segment size change held back while its ACK frame was open.
    #[inline]
    fn apply_pending_mss(&mut self) {
        if let Some(new_mss) = self.pending_mss.take() {
            self.change_mss(new_mss);
        }
    }

    /// The kernel's MSS change between two ACKs ([`KernelCc::on_mss_change`]).
    #[cold]
    fn change_mss(&mut self, new_mss: u32) {
        if new_mss == self.mss {
            return;
        }
        self.cc.on_mss_change(self.stamps.last_now_us(), new_mss);
        self.mss = new_mss;
        self.mss_reciprocal = reciprocal(new_mss);
        self.after_decision(false);
    }

    /// A segment size change waiting for its ACK frame to complete (see the module docs,
    /// "MTU changes"), in bytes.
    pub fn pending_mss(&self) -> Option<u32> {
        self.pending_mss
    }

    /// quinn's per-packet `on_ack` without its `RttEstimator` (which the adapter does not
    /// read and which cannot be built outside quinn-proto): `bytes` of a packet sent at `sent`
    /// acknowledged at `now`. For programs that drive the controller without a quinn
    /// connection (event-sequence tests, fuzzing, simulators): call it once per packet of an
    /// ACK frame, then `Controller::on_end_acks`, as quinn does.
    pub fn on_packet_acked(&mut self, now: Instant, sent: Instant, bytes: u64) {
        self.packet_acked(now, sent, bytes);
    }

    /// The per-packet part of `on_ack`.
    #[inline(always)]
    fn packet_acked(&mut self, now: Instant, sent: Instant, bytes: u64) {
        // `now` is converted once per frame, in on_end_acks (same `now` for the whole frame).
        let _ = now;
        self.in_flight = self.in_flight.saturating_sub(bytes);
        if self.frame.packets == 0 {
            self.close_frame();
            self.frame.newest_sent = sent;
            self.frame.oldest_sent = sent;
        } else if sent > self.frame.newest_sent {
            self.frame.newest_sent = sent;
        } else if sent < self.frame.oldest_sent {
            self.frame.oldest_sent = sent;
        }
        if self.in_recovery() && self.recovery_start.is_some_and(|r| sent > r) {
            self.frame.ends_recovery = true;
        }
        let f = &mut self.frame;
        f.packets = f.packets.saturating_add(1);
        f.bytes = f.bytes.saturating_add(bytes);
    }

    /// Microseconds since the origin, never less than the last value; also becomes the "last
    /// time seen" and the time the frame's RTTs are measured at.
    #[inline]
    fn now_us(&mut self, now: Instant) -> u64 {
        self.stamps.now_us(now)
    }

    /// The RTTs of the frame's newest and oldest packet (`ca_rtt_us`, `seq_rtt_us`) at the
    /// frame's `now` (already given to [`Self::now_us`]). The oldest is converted first: it
    /// is often the previous frame's newest send time, which [`Stamps`] remembers.
    fn frame_rtts(&mut self, frame: &Frame) -> (u64, u64) {
        if frame.newest_sent == frame.oldest_sent {
            let rtt = self.stamps.rtt_us(frame.newest_sent);
            (rtt, rtt)
        } else {
            let oldest = self.stamps.rtt_us(frame.oldest_sent);
            (self.stamps.rtt_us(frame.newest_sent), oldest)
        }
    }

    fn packets_in_flight(&self, bytes: u64) -> u32 {
        let packets = div_ceil_by(bytes, self.mss, self.mss_reciprocal);
        u32::try_from(packets).unwrap_or(u32::MAX)
    }

    fn cwnd_bytes(&self) -> u64 {
        u64::from(self.cc.cwnd()) * u64::from(self.mss)
    }

    fn ssthresh_bytes(&self) -> Option<u64> {
        self.cc
            .ssthresh()
            .map(|s| u64::from(s) * u64::from(self.mss))
    }

    /// Forward the model's decisions to `tracing` and the observer; publish when due.
    #[inline]
    fn after_decision(&mut self, frame_done: bool) {
        if self.tap.is_none() && !self.cc.has_events() {
            // Nothing to forward and nobody to publish to (the common case per ACK).
            return;
        }
        self.forward_decisions(frame_done);
    }

    #[cold]
    fn forward_decisions(&mut self, frame_done: bool) {
        let controller = self.id().map_or(0, ControllerId::get);
        let mut had_events = false;
        for event in self.cc.drain_events() {
            had_events = true;
            trace_event(controller, &event);
            if let Some(tap) = self.tap.as_mut() {
                tap.push(event);
            }
        }
        let due = match self.tap.as_mut() {
            None => false,
            Some(tap) if frame_done => tap.frame_done(),
            Some(tap) => had_events || tap.has_pending(),
        };
        if due {
            // The tap leaves `self` for the call so that the snapshot can borrow `self`.
            if let Some(mut tap) = self.tap.take() {
                tap.try_publish(|| self.snapshot());
                self.tap = Some(tap);
            }
        }
    }
}

impl Drop for HareController {
    fn drop(&mut self) {
        self.cc.close_ack();
        if let Some(mut tap) = self.tap.take() {
            for event in self.cc.drain_events() {
                tap.push(event);
            }
            tap.publish_blocking(|| self.snapshot());
        }
    }
}

/// `ceil(2^64 / d)` for `d >= 2` (0 for `d <= 1`, which [`div_ceil_by`] divides by itself).
fn reciprocal(d: u32) -> u64 {
    if d <= 1 {
        0
    } else {
        u64::MAX / u64::from(d) + 1
    }
}

/// `ceil(n / d)` with `r = reciprocal(d)`: `floor(m / d)` for `m = n + d - 1` is the high
/// half of `m * r` whenever `d >= 2` and `m * d < 2^64` (Lemire, Kaser and Kurz, "Faster
/// remainder by direct computation", 2019: `r` exceeds `2^64 / d` by less than 1, so the
/// product's error stays below `1/d`), which holds for any window quinn can have (`d` is a
/// u16 MTU, `n` below 2^47); other figures divide.
#[inline]
fn div_ceil_by(n: u64, d: u32, r: u64) -> u64 {
    if r != 0 && n < 1 << 47 {
        let m = n + u64::from(d) - 1;
        return ((u128::from(m) * u128::from(r)) >> 64) as u64;
    }
    n.div_ceil(u64::from(d.max(1)))
}

/// Forward one kernel-model decision to `tracing` (target `hare_cc`, debug level: one line
/// per decision is too much for `info` inside an application) with the controller id. The
/// kernel model itself logs each decision at trace level without the id.
fn trace_event(controller: u64, event: &CcEvent) {
    tracing::debug!(target: "hare_cc", controller, "{event}");
}

impl Controller for HareController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.close_frame();
        let now_us = self.now_us(now);
        if !self.handshake.settled && self.handshake.starts_space(now, last_packet_number) {
            self.establish(now_us);
        }
        self.in_flight = self.in_flight.saturating_add(bytes);
        let packets_out = self.packets_in_flight(self.in_flight);
        self.cc
            .on_sent(now_us, last_packet_number.saturating_add(1), packets_out);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        _app_limited: bool,
        _rtt: &RttEstimator,
    ) {
        self.packet_acked(now, sent, bytes);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        _app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.close_frame();
        let now_us = self.now_us(now);
        // quinn's figure is authoritative; it also removes the non-ack-eliciting bytes that
        // on_sent counted.
        self.in_flight = in_flight;
        let frame = self.frame;
        self.frame.packets = 0;
        self.frame.bytes = 0;
        self.frame.ends_recovery = false;
        if frame.packets == 0 {
            // An ACK of ACK-only packets (or of an old path): the kernel sees no data ACKed.
            return;
        }
        if self.handshake.is_handshake_ack(frame.newest_sent) {
            return;
        }
        let mss = u64::from(self.mss);
        let acked_pkts = if self.ack_carry == 0 && frame.bytes == u64::from(frame.packets) * mss {
            // Full-size packets only (bulk transfer): no division needed.
            frame.packets
        } else {
            let total = self.ack_carry.saturating_add(frame.bytes);
            self.ack_carry = total % mss;
            u32::try_from(total / mss).unwrap_or(u32::MAX)
        };
        let (rtt_us, seq_rtt_us) = self.frame_rtts(&frame);
        self.cc.on_ack(&AckEvent {
            now_us,
            packets: frame.packets,
            acked_pkts,
            rtt_us: Some(rtt_us),
            seq_rtt_us: Some(seq_rtt_us),
            largest_acked: largest_packet_num_acked,
            packets_in_flight: self.packets_in_flight(in_flight),
            ends_episode: frame.ends_recovery,
            loss: None,
        });
        self.open_frame = Some(now);
        self.after_decision(true);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        // The same frame's loss (quinn detects losses right after the frame's acks, with the
        // same `now`) goes into that ACK in the kernel's order; any other is a timer's.
        let same_frame = self.open_frame == Some(now);
        if !same_frame {
            self.close_frame();
        }
        let now_us = self.now_us(now);
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        let signal = if is_persistent_congestion {
            Some(LossSignal::Rto)
        } else if self.recovery_start.is_some_and(|start| sent <= start) {
            // A later loss batch (or CE mark) of the episode already answered.
            tracing::trace!(target: "hare_cc", t_us = now_us, "congestion event within recovery ignored");
            None
        } else if lost_bytes == 0 {
            Some(LossSignal::Ecn)
        } else {
            Some(LossSignal::Loss)
        };
        if let Some(signal) = signal {
            self.cc.amend_last_ack(now_us, signal);
            self.recovery_start = Some(now);
            self.after_decision(false);
        }
        // The frame's loss report is in its ACK: an MTU change quinn reported before it
        // (black-hole detection) comes after that ACK, as between two kernel ACKs.
        self.apply_pending_mss();
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        let new_mss = u32::from(new_mtu).max(1);
        if self.open_frame.is_some() {
            // Between a frame's acks and its loss report: after the whole ACK.
            self.pending_mss = Some(new_mss);
            return;
        }
        self.close_frame();
        self.change_mss(new_mss);
    }

    fn window(&self) -> u64 {
        if !self.unpaced {
            self.cwnd_bytes() + SEND_TEST_SLACK
        } else if self.can_send() {
            UNPACED_OPEN_WINDOW
        } else {
            // quinn blocks when in_flight + mtu >= window: one segment blocks any datagram.
            u64::from(self.mss)
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.cwnd_bytes();
        m.ssthresh = self.ssthresh_bytes();
        // quinn-proto 0.11: "Pacing rate (bits/s)".
        m.pacing_rate = self.pacing_rate().map(|bytes| bytes.saturating_mul(8));
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// The crate README's examples (plugging a controller into `quinn::TransportConfig`),
/// compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CcSpec;

    fn controller(spec: &str, now: Instant) -> HareController {
        let spec: CcSpec = spec.parse().expect("valid spec");
        let factory = spec.hare_factory().expect("a hare controller");
        factory.build_controller(now, 1000)
    }

    #[test]
    fn div_ceil_by_the_reciprocal_is_div_ceil() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for d in [
            1u32, 2, 3, 7, 1200, 1201, 1350, 1452, 1500, 8999, 9000, 65_527,
        ] {
            let r = reciprocal(d);
            let edges = [0u64, 1, 2, u64::from(d) - 1, u64::from(d), u64::from(d) + 1];
            for n in edges.into_iter().chain([(1 << 48) - 1, 1 << 48, u64::MAX]) {
                assert_eq!(div_ceil_by(n, d, r), n.div_ceil(u64::from(d)), "{n} / {d}");
            }
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let n = x >> (16 + x % 32);
                assert_eq!(div_ceil_by(n, d, r), n.div_ceil(u64::from(d)), "{n} / {d}");
            }
        }
    }

    #[test]
    fn unpaced_window_opens_while_cwnd_has_room_and_blocks_after() {
        let t0 = Instant::now();
        let mut c = controller("cubic@linux-2.6.39", t0);
        assert_eq!(c.window(), 10 * 1000 + 1);
        c.set_unpaced_sending(true);
        assert!(c.is_unpaced_sending());
        // Nine full segments out of a 10-segment window: room for one more.
        for pn in 0..9 {
            c.on_sent(t0, 1000, pn);
        }
        assert!(c.can_send());
        assert_eq!(c.window(), UNPACED_OPEN_WINDOW);
        assert!(c.window() > u64::from(u32::MAX));
        c.on_sent(t0, 1000, 9);
        assert!(!c.can_send());
        assert_eq!(c.window(), 1000);
        // The kernel window itself is still what metrics report.
        assert_eq!(c.metrics().congestion_window, 10_000);
        // One segment acknowledged: slow start adds one, two fit again.
        let t1 = t0 + std::time::Duration::from_millis(50);
        c.on_packet_acked(t1, t0, 1000);
        c.on_end_acks(t1, 9000, false, Some(0));
        assert_eq!(c.cwnd_segments(), 11);
        assert!(c.can_send());
        // A loss of three segments frees their room too.
        c.on_sent(t1, 2000, 11);
        assert!(!c.can_send());
        c.on_congestion_event(t1, t1, false, 3000);
        assert_eq!(c.bytes_in_flight(), 8000);
        assert_eq!(c.can_send(), 8 < c.cwnd_segments());
    }
}
