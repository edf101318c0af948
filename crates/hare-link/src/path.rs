//! Two directions of a path.

use serde::{Deserialize, Serialize};

use crate::config::LinkConfig;
use crate::error::LinkError;
use crate::link::Link;
use crate::units::{BitRate, ByteSize, TimeSpan};

/// A path: the data direction (`forward`, sender to receiver) and the ACK direction
/// (`reverse`), each an independent [`LinkConfig`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    /// Sender to receiver.
    pub forward: LinkConfig,
    /// Receiver to sender.
    pub reverse: LinkConfig,
}

impl PathConfig {
    /// Both directions at `rate` with the same drop-tail byte limit (`None` = unlimited) and
    /// half of `rtt` each (the forward direction takes the odd nanosecond, so the two delays
    /// add up to `rtt` exactly). No jitter, no loss; seeds 0 (forward) and 1 (reverse).
    pub fn symmetric(rate: BitRate, rtt: TimeSpan, queue: Option<ByteSize>) -> Self {
        let back = rtt.0 / 2;
        let mut forward = LinkConfig::new(rate, TimeSpan(rtt.0 - back));
        forward.queue_bytes = queue;
        let mut reverse = LinkConfig::new(rate, TimeSpan(back));
        reverse.queue_bytes = queue;
        reverse.seed = 1;
        PathConfig { forward, reverse }
    }

    /// The round-trip propagation delay (sum of both one-way delays, no serialisation).
    pub fn rtt(&self) -> TimeSpan {
        TimeSpan(self.forward.delay.0.saturating_add(self.reverse.delay.0))
    }

    /// Validates both directions; errors name `forward.<field>` or `reverse.<field>`.
    pub fn validate(&self) -> Result<(), LinkError> {
        self.forward.validate().map_err(|e| e.within("forward"))?;
        self.reverse.validate().map_err(|e| e.within("reverse"))
    }
}

/// The two links of a [`PathConfig`].
#[derive(Debug, Clone)]
pub struct Path {
    /// Sender to receiver.
    pub forward: Link,
    /// Receiver to sender.
    pub reverse: Link,
}

impl Path {
    /// Builds both links; errors name `forward.<field>` or `reverse.<field>`.
    pub fn new(cfg: &PathConfig) -> Result<Path, LinkError> {
        Ok(Path {
            forward: Link::new(&cfg.forward).map_err(|e| e.within("forward"))?,
            reverse: Link::new(&cfg.reverse).map_err(|e| e.within("reverse"))?,
        })
    }
}
