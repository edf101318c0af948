//! One direction of the emulated path: a drop-tail bottleneck of a fixed rate and queue
//! size, then a fixed one-way delay, plus a deterministic drop of every Nth 1-RTT datagram.
//! Time is virtual: the caller says what "now" is.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use neqo_common::Datagram;

/// What a direction did with the datagrams it was given.
#[derive(Debug, Default, Clone, Copy)]
pub struct PipeCounts {
    /// 1-RTT datagrams seen (short header).
    pub short_seen: u64,
    /// Dropped as the Nth 1-RTT datagram.
    pub dropped_nth: u64,
    /// Dropped because the queue was full.
    pub dropped_queue: u64,
    /// Delivered (or in flight).
    pub carried: u64,
}

/// One direction.
pub struct Pipe {
    /// (arrival time, datagram), in arrival order (FIFO: the delay is fixed).
    queue: VecDeque<(Instant, Datagram)>,
    /// When the bottleneck finishes serialising what it holds.
    busy_until: Instant,
    rate_bps: f64,
    delay: Duration,
    queue_bytes: usize,
    /// Drop every Nth 1-RTT datagram (0: never).
    drop_every: u64,
    /// What happened to the datagrams offered.
    pub counts: PipeCounts,
}

impl Pipe {
    /// An idle direction.
    pub fn new(
        now: Instant,
        rate_bps: f64,
        delay: Duration,
        queue_bytes: usize,
        drop_every: u64,
    ) -> Self {
        Pipe {
            queue: VecDeque::new(),
            busy_until: now,
            rate_bps,
            delay,
            queue_bytes,
            drop_every,
            counts: PipeCounts::default(),
        }
    }

    /// Offers a datagram at `now`: dropped, or queued behind what the bottleneck holds.
    pub fn push(&mut self, now: Instant, d: Datagram) {
        // A short-header (1-RTT) datagram has the high bit of its first byte clear.
        if d.first().is_some_and(|b| b & 0x80 == 0) {
            self.counts.short_seen += 1;
            if self.drop_every > 0 && self.counts.short_seen % self.drop_every == 0 {
                self.counts.dropped_nth += 1;
                return;
            }
        }
        let start = self.busy_until.max(now);
        let backlog = start.duration_since(now).as_secs_f64() * self.rate_bps / 8.0;
        if backlog + d.len() as f64 > self.queue_bytes as f64 {
            self.counts.dropped_queue += 1;
            return;
        }
        let tx = Duration::from_secs_f64(d.len() as f64 * 8.0 / self.rate_bps);
        self.busy_until = start + tx;
        self.counts.carried += 1;
        self.queue.push_back((self.busy_until + self.delay, d));
    }

    /// When the next datagram arrives at the far end.
    pub fn next_arrival(&self) -> Option<Instant> {
        self.queue.front().map(|q| q.0)
    }

    /// The next datagram that has arrived by `now`.
    pub fn pop_arrived(&mut self, now: Instant) -> Option<Datagram> {
        if self.next_arrival().is_some_and(|t| t <= now) {
            self.queue.pop_front().map(|q| q.1)
        } else {
            None
        }
    }
}
