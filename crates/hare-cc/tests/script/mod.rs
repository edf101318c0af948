//! An event-sequence API over [`HareController`]: scripted sends, ACK frames, losses, ECN
//! marks and MTU changes on a virtual clock, decodable from arbitrary bytes. It is the input
//! language of the fuzz target (`crates/hare-cc/fuzz`) and of the property tests, and it
//! checks the adapter's invariants after every step. Test support (each test binary uses
//! part of it), built on the public API users get.
#![allow(dead_code)]
//!
//! The driver calls quinn's `Controller` methods in quinn's order (`on_sent` per burst,
//! one [`HareController::on_packet_acked`] per acknowledged burst then `on_end_acks`, or
//! `on_congestion_event`), except that `on_ack` is replaced by its seam
//! [`HareController::on_packet_acked`], because quinn's `RttEstimator` cannot be built
//! outside quinn-proto (the adapter does not read it).

use std::collections::VecDeque;
use std::time::Duration;

use quinn_proto::congestion::Controller;
use std::time::Instant;

use hare_cc::HareController;
use hare_cc::HareFactory;

/// Smallest MTU quinn uses (RFC 9000 section 14: 1200-byte datagrams).
pub const MIN_MTU: u16 = 1200;
/// Largest MTU the script produces (65,527 = 65,535 - 8 bytes of UDP header).
pub const MAX_MTU: u16 = 65_527;
/// At most this many events are decoded from one input (bounds every run).
pub const MAX_EVENTS: usize = 4096;

/// One scripted step. Times are deltas in microseconds on the virtual clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptEvent {
    /// Send one burst (one `on_sent`) of `bytes` bytes; it takes `ceil(bytes / mtu)` packet
    /// numbers (at least one).
    Send {
        /// Clock advance before the send.
        dt_us: u32,
        /// Bytes in the burst.
        bytes: u32,
    },
    /// One ACK frame acknowledging the oldest `bursts` bursts in flight (at least one if any).
    Ack {
        /// Clock advance before the frame.
        dt_us: u32,
        /// How many of the oldest bursts it covers.
        bursts: u16,
        /// quinn's `app_limited` flag.
        app_limited: bool,
    },
    /// The oldest `bursts` bursts in flight are declared lost in one batch.
    Lose {
        /// Clock advance before the loss detection.
        dt_us: u32,
        /// How many of the oldest bursts are lost (at least one if any).
        bursts: u16,
        /// quinn's persistent-congestion flag.
        persistent: bool,
    },
    /// An ECN-CE increase reported for the newest burst acknowledged so far.
    EcnCe {
        /// Clock advance before the report.
        dt_us: u32,
    },
    /// `on_mtu_update` (clamped to [`MIN_MTU`]..=[`MAX_MTU`]).
    Mtu {
        /// The new MTU.
        mtu: u16,
    },
}

impl ScriptEvent {
    /// Decode a byte string into events: one opcode byte (`(op & 0x7f) % 5` selects send, ACK,
    /// loss, ECN-CE, MTU; bit 7 is the ACK's `app_limited` or the loss's `persistent` flag)
    /// then its little-endian operands (missing bytes read as zero); at most [`MAX_EVENTS`]
    /// events.
    pub fn decode(data: &[u8]) -> Vec<ScriptEvent> {
        let mut r = Reader { data, pos: 0 };
        let mut out = Vec::new();
        while r.pos < data.len() && out.len() < MAX_EVENTS {
            let op = r.u8();
            let event = match (op & 0x7f) % 5 {
                0 => ScriptEvent::Send {
                    dt_us: r.u16().into(),
                    bytes: r.u32(),
                },
                1 => ScriptEvent::Ack {
                    dt_us: r.u32(),
                    bursts: r.u16(),
                    app_limited: op & 0x80 != 0,
                },
                2 => ScriptEvent::Lose {
                    dt_us: r.u32(),
                    bursts: r.u16(),
                    persistent: op & 0x80 != 0,
                },
                3 => ScriptEvent::EcnCe { dt_us: r.u32() },
                _ => ScriptEvent::Mtu { mtu: r.u16() },
            };
            out.push(event);
        }
        out
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
}

/// A burst in flight.
#[derive(Debug, Clone, Copy)]
struct Burst {
    last_pn: u64,
    sent: Instant,
    bytes: u64,
}

/// A violated invariant, with the step that broke it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {step} ({event:?}): {what}")]
pub struct InvariantViolation {
    /// Index of the event after which the check failed.
    pub step: usize,
    /// The event.
    pub event: ScriptEvent,
    /// What went wrong.
    pub what: String,
}

/// Drives one [`HareController`] through [`ScriptEvent`]s and checks invariants.
#[derive(Debug)]
pub struct ScriptDriver {
    ctrl: HareController,
    base: Instant,
    now: Duration,
    mtu: u16,
    next_pn: u64,
    largest_acked: Option<u64>,
    newest_acked_sent: Option<Instant>,
    flight: VecDeque<Burst>,
    flight_bytes: u64,
    steps: usize,
    lossless: bool,
    max_cwnd_seen: u32,
    /// The 2-segment floor no longer holds (an RTO reset or an MTU increase happened).
    floor_is_one: bool,
    floor: u32,
    /// The last event was an ACK frame that acknowledged something.
    frame_had_packets: bool,
}

impl ScriptDriver {
    /// A controller from `factory` built at a fresh base time with `mtu`.
    pub fn new(factory: &HareFactory, mtu: u16) -> Self {
        let mtu = mtu.clamp(MIN_MTU, MAX_MTU);
        let base = Instant::now();
        let ctrl = factory.build_controller(base, mtu);
        let cwnd = ctrl.cwnd_segments();
        Self {
            ctrl,
            base,
            now: Duration::ZERO,
            mtu,
            next_pn: 0,
            largest_acked: None,
            newest_acked_sent: None,
            flight: VecDeque::new(),
            flight_bytes: 0,
            steps: 0,
            lossless: true,
            max_cwnd_seen: cwnd,
            floor_is_one: false,
            floor: cwnd.min(2),
            frame_had_packets: false,
        }
    }

    /// The controller under test.
    pub fn controller(&self) -> &HareController {
        &self.ctrl
    }

    /// Bytes the driver has in flight.
    pub fn bytes_in_flight(&self) -> u64 {
        self.flight_bytes
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.base + self.now
    }

    fn advance(&mut self, dt_us: u32) -> Instant {
        self.now += Duration::from_micros(dt_us.into());
        self.now()
    }

    /// Apply one event, then check the invariants: cwnd is at least one segment (the kernel's
    /// loss window after an RTO; otherwise the kernel's floor of two segments
    /// (`max(cwnd * beta, 2)`), or the initial window if smaller), `window()` and the snapshot agree with the segment count, the
    /// ACK carry stays below one segment, and cwnd never decreases while no loss, ECN mark or
    /// MTU change has happened.
    pub fn apply(&mut self, event: ScriptEvent) -> Result<(), InvariantViolation> {
        let mut acked_any = false;
        match event {
            ScriptEvent::Send { dt_us, bytes } => {
                let now = self.advance(dt_us);
                let bytes = u64::from(bytes.max(1));
                let packets = bytes.div_ceil(u64::from(self.mtu)).max(1);
                let last_pn = self.next_pn + packets - 1;
                self.next_pn += packets;
                self.flight.push_back(Burst {
                    last_pn,
                    sent: now,
                    bytes,
                });
                self.flight_bytes += bytes;
                self.ctrl.on_sent(now, bytes, last_pn);
            }
            ScriptEvent::Ack {
                dt_us,
                bursts,
                app_limited,
            } => {
                let now = self.advance(dt_us);
                let n = usize::from(bursts.max(1)).min(self.flight.len());
                acked_any = n > 0;
                for burst in self.flight.drain(..n) {
                    self.flight_bytes -= burst.bytes;
                    self.largest_acked = Some(burst.last_pn);
                    self.newest_acked_sent = Some(burst.sent);
                    self.ctrl.on_packet_acked(now, burst.sent, burst.bytes);
                }
                self.ctrl
                    .on_end_acks(now, self.flight_bytes, app_limited, self.largest_acked);
            }
            ScriptEvent::Lose {
                dt_us,
                bursts,
                persistent,
            } => {
                let now = self.advance(dt_us);
                let n = usize::from(bursts.max(1)).min(self.flight.len());
                if n > 0 {
                    let mut lost = 0;
                    let mut newest = self.base;
                    for burst in self.flight.drain(..n) {
                        lost += burst.bytes;
                        newest = burst.sent;
                    }
                    self.flight_bytes -= lost;
                    self.lossless = false;
                    self.floor_is_one |= persistent;
                    self.ctrl.on_congestion_event(now, newest, persistent, lost);
                }
            }
            ScriptEvent::EcnCe { dt_us } => {
                let now = self.advance(dt_us);
                if let Some(sent) = self.newest_acked_sent {
                    self.lossless = false;
                    self.ctrl.on_congestion_event(now, sent, false, 0);
                }
            }
            ScriptEvent::Mtu { mtu } => {
                let mtu = mtu.clamp(MIN_MTU, MAX_MTU);
                if mtu != self.mtu {
                    // An MSS change rescales cwnd (kernel tcp_mtup_probe_success): the
                    // segment count may fall even without loss.
                    self.lossless = false;
                    self.floor_is_one |= mtu > self.mtu;
                }
                self.mtu = mtu;
                self.ctrl.on_mtu_update(mtu);
            }
        }
        self.frame_had_packets = acked_any;
        let step = self.steps;
        self.steps += 1;
        self.check()
            .map_err(|what| InvariantViolation { step, event, what })
    }

    /// Run a whole script, stopping at the first violation.
    pub fn run(&mut self, events: &[ScriptEvent]) -> Result<(), InvariantViolation> {
        events.iter().try_for_each(|e| self.apply(*e))
    }

    fn check(&mut self) -> Result<(), String> {
        let cwnd = self.ctrl.cwnd_segments();
        let mss = self.ctrl.mss();
        // An MTU change reported between a frame's acks and its loss report waits for the
        // frame's ACK to complete (see the adapter's "MTU changes").
        if mss != u32::from(self.mtu) && self.ctrl.pending_mss() != Some(u32::from(self.mtu)) {
            return Err(format!("mss {mss} != mtu {}", self.mtu));
        }
        let floor = if self.floor_is_one { 1 } else { self.floor };
        if cwnd < floor {
            return Err(format!("cwnd {cwnd} below the minimum window {floor}"));
        }
        let expected = u64::from(cwnd) * u64::from(mss) + 1;
        if self.ctrl.window() != expected {
            return Err(format!(
                "window {} != cwnd {cwnd} x mss {mss} + 1",
                self.ctrl.window()
            ));
        }
        // The carry is folded into segments at each ACK frame; an MTU decrease in between can
        // leave it above the new segment size until the next frame.
        if self.frame_had_packets && self.ctrl.ack_carry() >= u64::from(mss) {
            return Err(format!("ack carry {} >= mss {mss}", self.ctrl.ack_carry()));
        }
        if self.lossless && cwnd < self.max_cwnd_seen {
            return Err(format!(
                "cwnd fell from {} to {cwnd} without any loss",
                self.max_cwnd_seen
            ));
        }
        self.max_cwnd_seen = self.max_cwnd_seen.max(cwnd);
        let snap = self.ctrl.snapshot();
        if snap.cwnd != cwnd || snap.cwnd_bytes != u64::from(cwnd) * u64::from(mss) {
            return Err(format!("snapshot disagrees: {snap:?}"));
        }
        Ok(())
    }
}
