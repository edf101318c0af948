//! Run-time state of the loss models of [`LossModel`](crate::LossModel).

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::LossModel;
use crate::stats::DropReason;
use crate::Nanos;

/// A probability as an integer threshold on a uniform `u64`, so a draw is one integer
/// compare and bit-identical on every platform.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chance {
    always: bool,
    threshold: u64,
}

impl Chance {
    /// `p` must be in [0, 1] (checked by validation).
    pub(crate) fn new(p: f64) -> Self {
        // 2^64 * p, floored; p = 1 cannot be represented as a threshold, so it is a flag.
        Chance {
            always: p >= 1.0,
            threshold: (p * 18_446_744_073_709_551_616.0) as u64,
        }
    }

    fn hit(self, rng: &mut ChaCha8Rng) -> bool {
        // Draw even when the outcome is fixed, so a model's stream does not depend on `p`.
        let draw = rng.next_u64();
        self.always || draw < self.threshold
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Bernoulli(Chance),
    GilbertElliott {
        to_bad: Chance,
        to_good: Chance,
        loss_good: Chance,
        loss_bad: Chance,
        bad: bool,
    },
    EpisodeCounted {
        from: Nanos,
        to: Nanos,
        one_in: u64,
        seen: u64,
    },
    EpisodeRandom {
        from: Nanos,
        to: Nanos,
        chance: Chance,
    },
    Blackout {
        from: Nanos,
        to: Nanos,
    },
}

/// One loss model with its own random stream.
#[derive(Debug, Clone)]
pub(crate) struct LossState {
    kind: Kind,
    rng: ChaCha8Rng,
}

impl LossState {
    /// Model number `index` of a link seeded with `seed`: ChaCha8 stream `index + 1` of that
    /// seed (stream 0 is the jitter's), so models never share random numbers.
    pub(crate) fn new(model: &LossModel, seed: u64, index: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(index as u64 + 1);
        let kind = match *model {
            LossModel::Bernoulli { p } => Kind::Bernoulli(Chance::new(p)),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => Kind::GilbertElliott {
                to_bad: Chance::new(p_good_to_bad),
                to_good: Chance::new(p_bad_to_good),
                loss_good: Chance::new(loss_good),
                loss_bad: Chance::new(loss_bad),
                bad: false,
            },
            LossModel::Episode {
                from,
                to,
                one_in,
                random: false,
            } => Kind::EpisodeCounted {
                from: from.0,
                to: to.0,
                one_in: one_in.max(1),
                seen: 0,
            },
            LossModel::Episode {
                from,
                to,
                one_in,
                random: true,
            } => Kind::EpisodeRandom {
                from: from.0,
                to: to.0,
                chance: Chance::new(1.0 / one_in.max(1) as f64),
            },
            LossModel::Blackout { from, to } => Kind::Blackout {
                from: from.0,
                to: to.0,
            },
        };
        LossState { kind, rng }
    }

    /// Decides for a packet offered at `now`; advances the model's state either way.
    pub(crate) fn decide(&mut self, now: Nanos) -> Option<DropReason> {
        match &mut self.kind {
            Kind::Bernoulli(chance) => chance.hit(&mut self.rng).then_some(DropReason::Loss),
            Kind::GilbertElliott {
                to_bad,
                to_good,
                loss_good,
                loss_bad,
                bad,
            } => {
                let flip = if *bad { *to_good } else { *to_bad };
                if flip.hit(&mut self.rng) {
                    *bad = !*bad;
                }
                let loss = if *bad { *loss_bad } else { *loss_good };
                loss.hit(&mut self.rng).then_some(DropReason::Loss)
            }
            Kind::EpisodeCounted {
                from,
                to,
                one_in,
                seen,
            } => {
                if (*from..*to).contains(&now) {
                    *seen += 1;
                    (*seen % *one_in == 0).then_some(DropReason::Episode)
                } else {
                    None
                }
            }
            Kind::EpisodeRandom { from, to, chance } => ((*from..*to).contains(&now)
                && chance.hit(&mut self.rng))
            .then_some(DropReason::Episode),
            Kind::Blackout { from, to } => {
                (*from..*to).contains(&now).then_some(DropReason::Blackout)
            }
        }
    }

    /// True when this is a blackout covering `t`.
    pub(crate) fn blacks_out(&self, t: Nanos) -> bool {
        matches!(self.kind, Kind::Blackout { from, to } if (from..to).contains(&t))
    }

    /// True for blackouts (which also act on departures).
    pub(crate) fn is_blackout(&self) -> bool {
        matches!(self.kind, Kind::Blackout { .. })
    }
}

/// Draws uniformly in `0..=max` from `rng` (shared with the jitter).
pub(crate) fn uniform_inclusive(rng: &mut ChaCha8Rng, max: u64) -> u64 {
    rng.gen_range(0..=max)
}
