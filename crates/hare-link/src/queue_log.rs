//! An optional, bounded in-memory log of queue occupancy and drops, for plots.

use serde::{Deserialize, Serialize};

use crate::stats::DropReason;
use crate::Nanos;

/// How much to log. Drops are always logged (while there is room); enqueues are sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogConfig {
    /// Most entries kept; later ones are counted in [`Link::log_overflowed`](crate::Link::log_overflowed).
    /// Drain with [`Link::take_log`](crate::Link::take_log) to keep logging a long run.
    pub capacity: usize,
    /// Log an enqueue only if at least this long after the previous logged enqueue
    /// (0 logs every packet).
    pub sample_every: Nanos,
}

/// What happened at a logged instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum LogEvent {
    /// A packet of `len` IP bytes joined the queue.
    Enqueued {
        /// IP bytes.
        len: u32,
    },
    /// A packet of `len` IP bytes was dropped.
    Dropped {
        /// Why.
        reason: DropReason,
        /// IP bytes.
        len: u32,
    },
}

/// One log line: the time, the queue after the event, and the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEntry {
    /// When (the `now` of the offer).
    pub at: Nanos,
    /// Bytes queued after the event (including the packet being serialised).
    pub queue_bytes: u64,
    /// Packets queued after the event.
    pub queue_packets: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: LogEvent,
}

#[derive(Debug, Clone)]
pub(crate) struct QueueLog {
    cfg: LogConfig,
    entries: Vec<LogEntry>,
    next_sample: Nanos,
    pub(crate) overflowed: u64,
}

/// Entries reserved up front: enough for a plot without reserving a huge capacity unused.
const INITIAL_RESERVE: usize = 4096;

impl QueueLog {
    pub(crate) fn new(cfg: LogConfig) -> Self {
        QueueLog {
            cfg,
            entries: Vec::with_capacity(cfg.capacity.min(INITIAL_RESERVE)),
            next_sample: 0,
            overflowed: 0,
        }
    }

    pub(crate) fn record(&mut self, entry: LogEntry) {
        if let LogEvent::Enqueued { .. } = entry.event {
            if entry.at < self.next_sample {
                return;
            }
            self.next_sample = entry.at.saturating_add(self.cfg.sample_every);
        }
        if self.entries.len() < self.cfg.capacity {
            self.entries.push(entry);
        } else {
            self.overflowed += 1;
        }
    }

    pub(crate) fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    pub(crate) fn take(&mut self) -> Vec<LogEntry> {
        let reserve = self.cfg.capacity.min(INITIAL_RESERVE);
        std::mem::replace(&mut self.entries, Vec::with_capacity(reserve))
    }
}
