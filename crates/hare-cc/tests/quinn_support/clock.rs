//! A scripted ACK clock: drives any `quinn_proto::congestion::Controller` through its trait
//! the way quinn-proto does, over a synthetic path with a base RTT, a bottleneck given by its
//! bandwidth-delay product (packets), a delayed-ACK ratio (one ACK frame every `ack_every`
//! packets, or after `max_ack_delay`) and an optional extra delay for packets from a given
//! packet number on (to raise the RTT at a chosen round). Unpaced: the sender puts out every
//! packet the window admits at once, so the bottleneck spaces the ACKs, as for an unpaced
//! kernel sender. Lossless unless the test declares losses itself.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::{Duration, Instant};

use quinn_proto::congestion::Controller;
use quinn_proto::RttEstimator;

/// Path and receiver parameters.
#[derive(Debug, Clone, Copy)]
pub struct PathSpec {
    /// Propagation RTT (no queueing).
    pub rtt: Duration,
    /// Bandwidth-delay product in packets of `mtu` bytes; `None` = unlimited bandwidth.
    pub bdp_packets: Option<u64>,
    /// One ACK frame per this many packets.
    pub ack_every: u32,
    /// Delayed-ACK timer of the receiver.
    pub max_ack_delay: Duration,
    /// Datagram size the sender uses (also the controller's MTU).
    pub mtu: u16,
}

impl PathSpec {
    /// `rtt_ms` RTT, `bdp` packets, ACK every `ack_every`, 1200-byte datagrams, 25 ms timer.
    pub fn new(rtt_ms: u64, bdp_packets: Option<u64>, ack_every: u32) -> Self {
        Self {
            rtt: Duration::from_millis(rtt_ms),
            bdp_packets,
            ack_every: ack_every.max(1),
            max_ack_delay: Duration::from_millis(25),
            mtu: 1200,
        }
    }

    /// Time the bottleneck needs per packet.
    fn service(&self) -> Duration {
        match self.bdp_packets {
            Some(bdp) if bdp > 0 => self.rtt / u32::try_from(bdp).unwrap_or(u32::MAX),
            _ => Duration::ZERO,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Packet reaches the receiver.
    Arrive(u64),
    /// The receiver's delayed-ACK timer for the packet it was armed for.
    AckTimer(u64),
    /// An ACK frame reaches the sender.
    AckFrame(Vec<u64>),
}

/// Counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockStats {
    /// ACK frames delivered to the controller.
    pub frames: u64,
    /// Packets sent.
    pub sent: u64,
}

/// The driver. `C` is the controller under test.
pub struct AckClock<C: Controller> {
    pub ctrl: C,
    pub path: PathSpec,
    rtt_est: RttEstimator,
    pub base: Instant,
    pub now: Duration,
    pub next_pn: u64,
    /// In flight: pn -> (send time, bytes).
    flight: BTreeMap<u64, (Duration, u64)>,
    in_flight_bytes: u64,
    bottleneck_free: Duration,
    queue: BinaryHeap<Reverse<(Duration, u64, Ev)>>,
    seq: u64,
    recv_pending: Vec<u64>,
    largest_acked: Option<u64>,
    /// ACK frames whose newest packet has pn >= .0 take .1 more on the return path.
    pub extra_delay: Option<(u64, Duration)>,
    /// The application stops sending once this many packets are in flight (app-limited).
    pub app_limit_packets: Option<u64>,
    pub stats: ClockStats,
}

impl<C: Controller> AckClock<C> {
    /// A driver starting at `base` (which should be the controller's build time).
    pub fn new(ctrl: C, path: PathSpec, rtt_est: RttEstimator, base: Instant) -> Self {
        Self {
            ctrl,
            path,
            rtt_est,
            base,
            now: Duration::ZERO,
            next_pn: 0,
            flight: BTreeMap::new(),
            in_flight_bytes: 0,
            bottleneck_free: Duration::ZERO,
            queue: BinaryHeap::new(),
            seq: 0,
            recv_pending: Vec::new(),
            largest_acked: None,
            extra_delay: None,
            app_limit_packets: None,
            stats: ClockStats::default(),
        }
    }

    fn at(&self, t: Duration) -> Instant {
        self.base + t
    }

    fn push(&mut self, t: Duration, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    /// Time of the next pending event.
    pub fn next_event_time(&self) -> Option<Duration> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Packets in flight.
    pub fn packets_in_flight(&self) -> u64 {
        self.flight.len() as u64
    }

    /// True when the application (not the window) limits sending.
    pub fn app_limited(&self) -> bool {
        self.app_limit_packets
            .is_some_and(|limit| self.packets_in_flight() >= limit)
    }

    /// Send what quinn's send test admits (`in_flight + mtu < window`) and the app allows.
    pub fn fill(&mut self) {
        let mtu = u64::from(self.path.mtu);
        for _ in 0..1_000_000 {
            if self.in_flight_bytes + mtu >= self.ctrl.window() || self.app_limited() {
                break;
            }
            self.send_one();
        }
    }

    /// Send one full-size packet now, whatever the window says.
    pub fn send_one(&mut self) -> u64 {
        let mtu = u64::from(self.path.mtu);
        let pn = self.next_pn;
        self.next_pn += 1;
        self.flight.insert(pn, (self.now, mtu));
        self.in_flight_bytes += mtu;
        self.stats.sent += 1;
        self.ctrl.on_sent(self.at(self.now), mtu, pn);
        let depart = self.now.max(self.bottleneck_free) + self.path.service();
        self.bottleneck_free = depart;
        self.push(depart + self.path.rtt / 2, Ev::Arrive(pn));
        pn
    }

    /// Process the next event (and refill the window). Returns false when nothing is left.
    pub fn step(&mut self) -> bool {
        let Some(Reverse((t, _, ev))) = self.queue.pop() else {
            return false;
        };
        self.now = self.now.max(t);
        match ev {
            Ev::Arrive(pn) => {
                self.recv_pending.push(pn);
                if self.recv_pending.len() as u32 >= self.path.ack_every {
                    self.send_ack();
                } else if self.recv_pending.len() == 1 {
                    let when = self.now + self.path.max_ack_delay;
                    self.push(when, Ev::AckTimer(pn));
                }
            }
            Ev::AckTimer(pn) => {
                if self.recv_pending.first() == Some(&pn) {
                    self.send_ack();
                }
            }
            Ev::AckFrame(pns) => self.deliver_ack(&pns),
        }
        self.fill();
        true
    }

    fn send_ack(&mut self) {
        let pns = std::mem::take(&mut self.recv_pending);
        let mut when = self.now + self.path.rtt / 2;
        // The extra delay sits on the return path, so that a test can raise the RTT of
        // packets that were already sent when it decides to.
        if let Some((from, extra)) = self.extra_delay {
            if pns.last().is_some_and(|pn| *pn >= from) {
                when += extra;
            }
        }
        self.push(when, Ev::AckFrame(pns));
    }

    /// One ACK frame reaches the sender: `on_ack` per newly acked packet, then `on_end_acks`.
    pub fn deliver_ack(&mut self, pns: &[u64]) {
        let now = self.at(self.now);
        let app_limited = self.app_limited();
        for &pn in pns {
            if let Some((sent, bytes)) = self.flight.remove(&pn) {
                self.in_flight_bytes -= bytes;
                let sent = self.at(sent);
                self.ctrl
                    .on_ack(now, sent, bytes, app_limited, &self.rtt_est);
            }
            self.largest_acked = Some(self.largest_acked.map_or(pn, |l| l.max(pn)));
        }
        self.stats.frames += 1;
        self.ctrl
            .on_end_acks(now, self.in_flight_bytes, app_limited, self.largest_acked);
    }

    /// Declare the oldest `n` packets in flight lost in one batch (quinn's detection order:
    /// `on_congestion_event` with the send time of the newest of them).
    pub fn lose_oldest(&mut self, n: usize, persistent: bool) {
        let pns: Vec<u64> = self.flight.keys().take(n).copied().collect();
        let mut lost = 0;
        let mut newest = Duration::ZERO;
        for pn in pns {
            if let Some((sent, bytes)) = self.flight.remove(&pn) {
                lost += bytes;
                newest = newest.max(sent);
            }
        }
        // Those packets never reach the receiver: drop their pending arrivals.
        let flight = &self.flight;
        let kept: Vec<_> = self
            .queue
            .drain()
            .filter(|Reverse((_, _, ev))| match ev {
                Ev::Arrive(pn) => flight.contains_key(pn),
                _ => true,
            })
            .collect();
        self.queue = kept.into_iter().collect();
        self.in_flight_bytes -= lost;
        let now = self.at(self.now);
        let sent = self.at(newest);
        self.ctrl.on_congestion_event(now, sent, persistent, lost);
    }

    /// Run until `stop` says so, the queue empties, `max_time` passes or `max_steps` events
    /// were processed. Returns true if `stop` fired.
    pub fn run_until(
        &mut self,
        max_time: Duration,
        max_steps: usize,
        mut stop: impl FnMut(&Self) -> bool,
    ) -> bool {
        self.fill();
        for _ in 0..max_steps {
            if stop(self) {
                return true;
            }
            if self.now > max_time || !self.step() {
                return false;
            }
        }
        false
    }

    /// Run for `d` more virtual time (bounded by `max_steps` events).
    pub fn run_for(&mut self, d: Duration, max_steps: usize) {
        let end = self.now + d;
        self.run_until(end, max_steps, |c| {
            c.queue.peek().is_none_or(|Reverse((t, _, _))| *t > end)
        });
        self.now = self.now.max(end);
    }
}
