//! Per-packet extra delay after propagation, optionally order-preserving.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{JitterConfig, JitterDistribution};
use crate::loss::uniform_inclusive;
use crate::Nanos;

/// Exponential jitter is cut at this many means, so every delay is bounded.
const EXPONENTIAL_CAP_MEANS: f64 = 10.0;

#[derive(Debug, Clone)]
pub(crate) struct Jitter {
    cfg: JitterConfig,
    rng: ChaCha8Rng,
    /// Latest delivery time handed out, for order keeping.
    last_at: Nanos,
}

impl Jitter {
    /// Jitter uses ChaCha8 stream 0 of the link's seed.
    pub(crate) fn new(cfg: JitterConfig, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0);
        Jitter {
            cfg,
            rng,
            last_at: 0,
        }
    }

    /// The delivery time of a packet that would arrive at `at` without jitter.
    pub(crate) fn apply(&mut self, at: Nanos) -> Nanos {
        let amount = self.cfg.amount.0;
        let extra = match self.cfg.distribution {
            JitterDistribution::Uniform => uniform_inclusive(&mut self.rng, amount),
            JitterDistribution::Exponential => {
                // Inverse transform on (0, 1]: -ln(u) * mean.
                let u = 1.0 - self.rng.gen::<f64>();
                let x = (-u.ln() * amount as f64).min(EXPONENTIAL_CAP_MEANS * amount as f64);
                x.round() as u64
            }
        };
        let mut out = at.saturating_add(extra);
        if !self.cfg.reorder {
            // A FIFO cannot let a packet overtake its predecessor: hold it until then.
            out = out.max(self.last_at);
        }
        self.last_at = self.last_at.max(out);
        out
    }
}
