//! The virtual clock and the one reason a step of the loop ends the run: shared by the engine
//! and its two endpoint halves, below all of them.

use std::time::{Duration, Instant};

use crate::error::Endpoint as Side;

/// The virtual clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock whose zero is `base`.
    pub fn new(base: Instant) -> Self {
        Clock { base }
    }

    /// The `Instant` of virtual nanosecond `ns`.
    pub fn at(&self, ns: u64) -> Instant {
        self.base + Duration::from_nanos(ns)
    }

    /// Virtual nanoseconds of `t` (0 before the base).
    pub fn ns(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// What a step of the loop found that ends the run.
pub(crate) enum Stop {
    /// A connection reported an error.
    Lost { side: Side, reason: String },
}
