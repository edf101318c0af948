//! A scripted ACK-clock driver for the kernel model, in kernel units.
//!
//! A sender keeps `min(cwnd, app limit)` packets in flight over a path with a fixed RTT, an
//! optional bottleneck (packets per second, FIFO) with an optional drop-tail limit, and a
//! receiver that ACKs every `ack_every` packets or when its delayed-ACK timer expires. Every
//! ACK is one [`AckEvent`] (one QUIC ACK frame). Time is integer nanoseconds internally and
//! microseconds for the model, so runs are exact and repeatable. Losses are reported to the
//! model once per episode (`on_congestion` when a later packet is acknowledged, recovery
//! ends when a packet sent after the episode began is acknowledged).
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use hare_cc::engine::{AckEvent, KernelCc, LossSignal};
use hare_cc::{Algorithm, CcEvent, ExitReason, Profile};

/// Path and receiver parameters.
#[derive(Debug, Clone, Copy)]
pub struct PathCfg {
    /// Base round-trip time (propagation), microseconds.
    pub rtt_us: u64,
    /// The receiver ACKs every this many packets (1 or 2).
    pub ack_every: u32,
    /// Bottleneck rate in packets per second (`None`: no serialisation delay).
    pub rate_pps: Option<u64>,
    /// Drop-tail queue limit in packets at the bottleneck (`None`: unlimited).
    pub queue_limit: Option<u64>,
    /// Delayed-ACK timer, microseconds.
    pub delack_us: u64,
    /// Segment size in bytes.
    pub mss: u32,
    /// At most this many packets in flight (application limit).
    pub app_limit: Option<u32>,
}

impl PathCfg {
    /// An RTT with no bottleneck, an ACK per `ack_every` packets, 40 ms delayed-ACK timer.
    pub fn new(rtt_us: u64, ack_every: u32) -> Self {
        PathCfg {
            rtt_us,
            ack_every,
            rate_pps: None,
            queue_limit: None,
            delack_us: 40_000,
            mss: 1448,
            app_limit: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A data packet reaches the receiver.
    Arrive { pn: u64, sent_ns: u64 },
    /// The receiver's delayed-ACK timer (generation).
    Delack { gen: u64 },
    /// An ACK reaches the sender.
    Ack {
        largest: u64,
        newest_sent_ns: u64,
        count: u32,
    },
}

/// The driver.
pub struct Driver {
    pub cc: KernelCc,
    pub cfg: PathCfg,
    pub now_ns: u64,
    next_pn: u64,
    /// Packets in flight (pn, sent time, dropped).
    flight: VecDeque<(u64, u64, bool)>,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    link_free_ns: u64,
    // receiver
    pending: u32,
    pending_largest: u64,
    pending_newest_sent: u64,
    delack_gen: u64,
    delack_armed: bool,
    // loss episodes
    recovery_start_pn: Option<u64>,
    /// (time us, cwnd) after every ACK.
    pub trace: Vec<(u64, u32)>,
    /// All events the model emitted.
    pub events: Vec<CcEvent>,
    /// Packets dropped at the bottleneck.
    pub drops: u64,
    /// ACK frames delivered.
    pub acks: u64,
}

impl Driver {
    pub fn new(alg: Algorithm, profile: &Profile, paced: bool, cfg: PathCfg) -> Self {
        let cc = KernelCc::new(alg, profile, paced, cfg.mss);
        let mut d = Driver {
            cc,
            cfg,
            now_ns: 0,
            next_pn: 0,
            flight: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            link_free_ns: 0,
            pending: 0,
            pending_largest: 0,
            pending_newest_sent: 0,
            delack_gen: 0,
            delack_armed: false,
            recovery_start_pn: None,
            trace: Vec::new(),
            events: Vec::new(),
            drops: 0,
            acks: 0,
        };
        d.send();
        d
    }

    pub fn now_us(&self) -> u64 {
        self.now_ns / 1000
    }

    fn push(&mut self, at_ns: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at_ns, self.seq, ev)));
    }

    fn in_flight(&self) -> u32 {
        self.flight.len() as u32
    }

    /// Send while the window (and the application) allows.
    fn send(&mut self) {
        let limit = self
            .cfg
            .app_limit
            .map_or(self.cc.cwnd(), |a| a.min(self.cc.cwnd()));
        let mut sent = false;
        while self.in_flight() < limit {
            let pn = self.next_pn;
            self.next_pn += 1;
            let now = self.now_ns;
            let (depart, dropped) = match self.cfg.rate_pps {
                Some(pps) => {
                    let tx = 1_000_000_000 / pps.max(1);
                    let start = self.link_free_ns.max(now);
                    let queued = (start - now) / tx.max(1);
                    if self.cfg.queue_limit.is_some_and(|q| queued >= q) {
                        (now, true)
                    } else {
                        self.link_free_ns = start + tx;
                        (start + tx, false)
                    }
                }
                None => (now, false),
            };
            if dropped {
                self.drops += 1;
            } else {
                self.push(
                    depart + self.cfg.rtt_us * 500,
                    Ev::Arrive { pn, sent_ns: now },
                );
            }
            self.flight.push_back((pn, now, dropped));
            sent = true;
        }
        if sent {
            self.cc
                .on_sent(self.now_us(), self.next_pn, self.in_flight());
        }
    }

    fn emit_ack(&mut self) {
        if self.pending == 0 {
            return;
        }
        let at = self.now_ns + self.cfg.rtt_us * 500;
        let ev = Ev::Ack {
            largest: self.pending_largest,
            newest_sent_ns: self.pending_newest_sent,
            count: self.pending,
        };
        self.push(at, ev);
        self.pending = 0;
        self.delack_gen += 1;
        self.delack_armed = false;
    }

    /// Process one event; false when nothing is left.
    pub fn step(&mut self) -> bool {
        let Some(Reverse((at, _, ev))) = self.heap.pop() else {
            return false;
        };
        self.now_ns = at;
        match ev {
            Ev::Arrive { pn, sent_ns } => {
                self.pending += 1;
                self.pending_largest = pn;
                self.pending_newest_sent = sent_ns;
                if self.pending >= self.cfg.ack_every {
                    self.emit_ack();
                } else if !self.delack_armed {
                    self.delack_armed = true;
                    let gen = self.delack_gen;
                    self.push(at + self.cfg.delack_us * 1000, Ev::Delack { gen });
                }
            }
            Ev::Delack { gen } => {
                if gen == self.delack_gen {
                    self.emit_ack();
                }
            }
            Ev::Ack {
                largest,
                newest_sent_ns,
                count,
            } => self.on_ack(largest, newest_sent_ns, count),
        }
        true
    }

    fn on_ack(&mut self, largest: u64, newest_sent_ns: u64, count: u32) {
        let now_us = self.now_us();
        self.acks += 1;
        // Remove acknowledged packets; packets dropped below `largest` are lost.
        let mut acked = 0u32;
        let mut lost_any = false;
        while let Some(&(pn, _, dropped)) = self.flight.front() {
            if pn > largest {
                break;
            }
            self.flight.pop_front();
            if dropped {
                lost_any = true;
            } else {
                acked += 1;
            }
        }
        debug_assert_eq!(acked, count);
        // One ACK in the kernel's order: the episode ends when its high_seq is acknowledged,
        // a loss below `largest` starts one (once per episode).
        let ends_episode = self.recovery_start_pn.is_some_and(|start| largest >= start);
        if ends_episode {
            self.recovery_start_pn = None;
        }
        let loss = (lost_any && self.recovery_start_pn.is_none()).then_some(LossSignal::Loss);
        if loss.is_some() {
            self.recovery_start_pn = Some(self.next_pn);
        }
        let ack = AckEvent {
            now_us,
            acked_pkts: acked,
            rtt_us: Some((self.now_ns - newest_sent_ns) / 1000),
            largest_acked: Some(largest),
            packets_in_flight: self.in_flight(),
            ends_episode,
            loss,
            ..Default::default()
        };
        self.cc.on_ack(&ack);
        self.events.extend(self.cc.drain_events());
        self.trace.push((now_us, self.cc.cwnd()));
        self.send();
    }

    /// Run until `pred` holds after an ACK, or the time limit / step bound is hit.
    pub fn run_until(&mut self, limit_us: u64, mut pred: impl FnMut(&Driver) -> bool) -> bool {
        for _ in 0..50_000_000u64 {
            if self.now_us() > limit_us {
                return false;
            }
            let acks = self.acks;
            if !self.step() {
                return false;
            }
            if self.acks != acks && pred(self) {
                return true;
            }
        }
        false
    }

    /// First trace time (us) at which cwnd >= `w`.
    pub fn first_time_cwnd_at_least(&self, w: u32) -> Option<u64> {
        self.trace.iter().find(|(_, c)| *c >= w).map(|(t, _)| *t)
    }

    /// cwnd right after the ACKs at or before time `t_us` (initial cwnd before any).
    pub fn cwnd_at(&self, t_us: u64, initial: u32) -> u32 {
        self.trace
            .iter()
            .take_while(|(t, _)| *t <= t_us)
            .last()
            .map_or(initial, |(_, c)| *c)
    }
}

/// Profile by name with overrides.
pub fn profile(name: &str, kv: &[(&str, &str)]) -> Profile {
    let mut p = Profile::named(name).expect("built-in profile");
    for (k, v) in kv {
        p.set(k, v).expect("valid override");
    }
    p
}

/// A hand-driven sender: every ACK is placed explicitly (time, RTT sample), one packet per
/// ACK, and the window is refilled after each ACK (cwnd-limited throughout).
pub struct Manual {
    pub cc: KernelCc,
    pub now_us: u64,
    next_pn: u64,
    flight: VecDeque<u64>,
    pub events: Vec<CcEvent>,
    /// Stop refilling the window (application-limited from now on).
    pub app_limit: Option<u32>,
}

impl Manual {
    pub fn new(alg: Algorithm, profile: &Profile, paced: bool) -> Self {
        let cc = KernelCc::new(alg, profile, paced, 1448);
        let mut m = Manual {
            cc,
            now_us: 0,
            next_pn: 0,
            flight: VecDeque::new(),
            events: Vec::new(),
            app_limit: None,
        };
        m.fill();
        m
    }

    /// Send up to the window (or the application limit).
    pub fn fill(&mut self) {
        let limit = self
            .app_limit
            .map_or(self.cc.cwnd(), |a| a.min(self.cc.cwnd()));
        let mut sent = false;
        while (self.flight.len() as u32) < limit {
            self.flight.push_back(self.next_pn);
            self.next_pn += 1;
            sent = true;
        }
        if sent {
            self.cc
                .on_sent(self.now_us, self.next_pn, self.flight.len() as u32);
        }
    }

    /// Packet number the next packet will get.
    pub fn snd_nxt(&self) -> u64 {
        self.next_pn
    }

    /// After `dt_us` (but not before `rtt_us`), ACK the `n` oldest packets in one ACK with an
    /// RTT sample of `rtt_us`.
    pub fn ack_n(&mut self, dt_us: u64, n: u32, rtt_us: u64) {
        // Nothing is acknowledged sooner than one RTT after the controller was built.
        self.now_us = (self.now_us + dt_us).max(rtt_us);
        let mut largest = None;
        let mut acked = 0;
        for _ in 0..n {
            if let Some(pn) = self.flight.pop_front() {
                largest = Some(pn);
                acked += 1;
            }
        }
        self.cc.on_ack(&AckEvent {
            now_us: self.now_us,
            acked_pkts: acked,
            rtt_us: Some(rtt_us),
            largest_acked: largest,
            packets_in_flight: self.flight.len() as u32,
            ..Default::default()
        });
        self.events.extend(self.cc.drain_events());
        self.fill();
    }

    /// Like [`Manual::ack_n`], with the ACK also ending the episode (`high_seq` acknowledged)
    /// and/or revealing a loss, handed to the model as one ACK in the kernel's order.
    pub fn ack_with(
        &mut self,
        dt_us: u64,
        n: u32,
        rtt_us: u64,
        ends_episode: bool,
        loss: Option<LossSignal>,
    ) {
        self.now_us = (self.now_us + dt_us).max(rtt_us);
        let mut largest = None;
        let mut acked = 0;
        for _ in 0..n {
            if let Some(pn) = self.flight.pop_front() {
                largest = Some(pn);
                acked += 1;
            }
        }
        self.cc.on_ack(&AckEvent {
            now_us: self.now_us,
            acked_pkts: acked,
            rtt_us: Some(rtt_us),
            largest_acked: largest,
            packets_in_flight: self.flight.len() as u32,
            ends_episode,
            loss,
            ..Default::default()
        });
        self.events.extend(self.cc.drain_events());
        self.fill();
    }

    /// After `dt_us`, ACK the oldest packet.
    pub fn ack(&mut self, dt_us: u64, rtt_us: u64) {
        self.ack_n(dt_us, 1, rtt_us);
    }

    /// ACK, one by one every `spacing_us`, every packet in flight now (one round). Returns the
    /// number of ACKs.
    pub fn round(&mut self, spacing_us: u64, rtt_us: u64) -> u32 {
        let last = self.next_pn;
        let mut n = 0;
        while self.flight.front().is_some_and(|pn| *pn < last) {
            self.ack(spacing_us, rtt_us);
            n += 1;
        }
        n
    }

    /// The slow-start exits reported so far.
    pub fn exits(&self) -> Vec<(u32, ExitReason)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                CcEvent::SlowStartExit { cwnd, reason, .. } => Some((*cwnd, *reason)),
                _ => None,
            })
            .collect()
    }
}
