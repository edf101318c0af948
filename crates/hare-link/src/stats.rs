//! Counters of what a link did with the packets offered to it.

use serde::{Deserialize, Serialize};

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The drop-tail limit (bytes or packets) would have been exceeded.
    QueueFull,
    /// A random loss model (Bernoulli or Gilbert-Elliott) dropped it.
    Loss,
    /// A scheduled loss episode ("1 in N from t0 to t1") dropped it.
    Episode,
    /// The link was down (blackout).
    Blackout,
}

/// Dropped packets, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCounts {
    /// Drops by the drop-tail limit.
    pub queue_full: u64,
    /// Drops by Bernoulli or Gilbert-Elliott models.
    pub loss: u64,
    /// Drops by loss episodes.
    pub episode: u64,
    /// Drops by blackouts.
    pub blackout: u64,
}

impl DropCounts {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.queue_full + self.loss + self.episode + self.blackout
    }

    /// Drops for one reason.
    pub fn get(&self, reason: DropReason) -> u64 {
        match reason {
            DropReason::QueueFull => self.queue_full,
            DropReason::Loss => self.loss,
            DropReason::Episode => self.episode,
            DropReason::Blackout => self.blackout,
        }
    }

    pub(crate) fn count(&mut self, reason: DropReason) {
        match reason {
            DropReason::QueueFull => self.queue_full += 1,
            DropReason::Loss => self.loss += 1,
            DropReason::Episode => self.episode += 1,
            DropReason::Blackout => self.blackout += 1,
        }
    }
}

/// Running counters of a link. "Delivered" counts packets accepted for delivery: their
/// delivery time may still lie in the caller's future.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStats {
    /// Packets offered.
    pub offered_packets: u64,
    /// IP bytes offered.
    pub offered_bytes: u64,
    /// Packets accepted for delivery.
    pub delivered_packets: u64,
    /// IP bytes accepted for delivery.
    pub delivered_bytes: u64,
    /// Packets dropped, by reason.
    pub dropped: DropCounts,
    /// IP bytes dropped.
    pub dropped_bytes: u64,
    /// Largest queue seen, in bytes (including the packet being serialised).
    pub max_queue_bytes: u64,
    /// Largest queue seen, in packets (including the packet being serialised).
    pub max_queue_packets: u64,
}
