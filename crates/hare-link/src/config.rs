//! Link configuration as written in scenario files, and its validation.

use serde::{Deserialize, Serialize};

use crate::error::LinkError;
use crate::units::{BitRate, ByteSize, TimeSpan};

/// One direction of a path: a drop-tail FIFO bottleneck serialising at `rate`, then
/// `delay` of propagation, then optional `jitter`; `loss` models act on entry.
///
/// In TOML (all fields but `rate` optional):
///
/// ```toml
/// rate = "10g"            # IP bytes (UDP payload + 28 for IPv4, + 48 for IPv6)
/// delay = "40ms"          # one way
/// queue_bytes = "60m"     # drop-tail limit, 60 MiB
/// queue_packets = 10000   # drop-tail limit in packets (either, both or neither)
/// seed = 7
/// jitter = { distribution = "uniform", amount = "1ms", reorder = false }
/// [[loss]]
/// model = "episode"
/// from = "20s"
/// to = "30s"
/// one_in = 1000
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Bottleneck rate, counting IP bytes (the caller passes IP packet lengths).
    pub rate: BitRate,
    /// One-way propagation delay, added after serialisation. Default 0.
    #[serde(default)]
    pub delay: TimeSpan,
    /// Drop-tail limit in bytes queued (not yet fully serialised). Absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<ByteSize>,
    /// Drop-tail limit in packets queued (not yet fully serialised). Absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_packets: Option<u64>,
    /// Extra random delay after propagation. Absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterConfig>,
    /// Loss models, evaluated in list order on every offered packet (see [`LossModel`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loss: Vec<LossModel>,
    /// Seed of the link's random streams (one ChaCha stream per loss model, one for jitter).
    #[serde(default)]
    pub seed: u64,
}

/// Extra delay drawn per packet and added after the propagation delay. It is never negative,
/// so the path's minimum RTT stays the configured propagation delay.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    /// Shape of the extra delay. Default `uniform`.
    #[serde(default)]
    pub distribution: JitterDistribution,
    /// Scale of the extra delay (the maximum for `uniform`, the mean for `exponential`).
    pub amount: TimeSpan,
    /// Deliver at the drawn time even when that overtakes an earlier packet. When false (the
    /// default) a packet is held until the previous one has been delivered, as a FIFO would.
    #[serde(default)]
    pub reorder: bool,
}

/// Distribution of the jitter's extra delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterDistribution {
    /// Uniform on `[0, amount]` nanoseconds, integers.
    #[default]
    Uniform,
    /// Exponential with mean `amount`, truncated at `10 * amount` so the delay is bounded.
    Exponential,
}

/// A loss model, applied to packets as they are offered (before the queue).
///
/// Every model sees every offered packet (so a Gilbert-Elliott chain advances once per packet
/// whatever the other models decide, and each model's pattern depends only on its own seed
/// stream); the first model in list order that drops the packet names the reason. Queue
/// overflow is checked after all models.
///
/// TOML: `{ model = "bernoulli", p = 0.01 }`, `{ model = "gilbert_elliott", ... }`,
/// `{ model = "episode", from = "20s", to = "30s", one_in = 1000 }`,
/// `{ model = "blackout", from = "12s", to = "14s" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Independent loss with probability `p` per packet.
    Bernoulli {
        /// Loss probability in [0, 1].
        p: f64,
    },
    /// Two-state Markov chain (Gilbert-Elliott). Per packet the state first moves
    /// (good to bad with `p_good_to_bad`, bad to good with `p_bad_to_good`), then the packet
    /// is lost with the loss probability of the new state. Starts in the good state. The
    /// stationary loss rate is `(p_bad_to_good * loss_good + p_good_to_bad * loss_bad) /
    /// (p_good_to_bad + p_bad_to_good)`.
    GilbertElliott {
        /// Per-packet probability of moving from the good to the bad state.
        p_good_to_bad: f64,
        /// Per-packet probability of moving from the bad to the good state.
        p_bad_to_good: f64,
        /// Loss probability in the good state. Default 0.
        #[serde(default)]
        loss_good: f64,
        /// Loss probability in the bad state. Default 1.
        #[serde(default = "one")]
        loss_bad: f64,
    },
    /// "1 in `one_in` from `from` to `to`": packets offered at `from <= now < to` are counted
    /// and exactly every `one_in`-th of them is dropped (the `one_in`-th, the `2*one_in`-th,
    /// ...), a deterministic counter like a periodic loss. With `random = true` each is
    /// instead dropped with probability `1/one_in`.
    Episode {
        /// Start of the episode (time since the clock's origin, inclusive).
        from: TimeSpan,
        /// End of the episode (exclusive).
        to: TimeSpan,
        /// One packet in this many is dropped; 1 drops all.
        one_in: u64,
        /// Draw each loss at random with probability `1/one_in` instead of counting.
        #[serde(default, skip_serializing_if = "is_false")]
        random: bool,
    },
    /// "Down from `from` to `to`": the wire is dead. A packet offered at `from <= now < to` is
    /// lost, and so is one whose serialisation would end inside that interval (the link
    /// transmits into the void; such a packet does not occupy the serialiser).
    Blackout {
        /// Start of the blackout (inclusive).
        from: TimeSpan,
        /// End of the blackout (exclusive).
        to: TimeSpan,
    },
}

fn one() -> f64 {
    1.0
}

fn is_false(b: &bool) -> bool {
    !*b
}

const PROBABILITY: &str = "a probability in [0, 1]";

fn check_probability(field: String, p: f64) -> Result<(), LinkError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(LinkError::new(field, p, PROBABILITY))
    }
}

fn check_interval(at: usize, from: TimeSpan, to: TimeSpan) -> Result<(), LinkError> {
    if from < to {
        Ok(())
    } else {
        Err(LinkError::new(
            format!("loss[{at}].to"),
            format!("\"{to}\" (from = \"{from}\")"),
            "an end later than `from`",
        ))
    }
}

impl LinkConfig {
    /// A link with the given rate and one-way delay, unlimited queue, no jitter, no loss.
    pub fn new(rate: BitRate, delay: TimeSpan) -> Self {
        LinkConfig {
            rate,
            delay,
            queue_bytes: None,
            queue_packets: None,
            jitter: None,
            loss: Vec::new(),
            seed: 0,
        }
    }

    /// Checks every field; the error names the first bad field and its value.
    pub fn validate(&self) -> Result<(), LinkError> {
        if self.rate.0 == 0 {
            return Err(LinkError::new("rate", "\"0 bit/s\"", "a rate above 0"));
        }
        if let Some(q) = self.queue_bytes {
            if q.0 == 0 {
                return Err(LinkError::new(
                    "queue_bytes",
                    q.0,
                    "at least 1 byte (omit the field for an unlimited queue)",
                ));
            }
        }
        if self.queue_packets == Some(0) {
            return Err(LinkError::new(
                "queue_packets",
                0,
                "at least 1 packet (omit the field for an unlimited queue)",
            ));
        }
        for (at, model) in self.loss.iter().enumerate() {
            match *model {
                LossModel::Bernoulli { p } => check_probability(format!("loss[{at}].p"), p)?,
                LossModel::GilbertElliott {
                    p_good_to_bad,
                    p_bad_to_good,
                    loss_good,
                    loss_bad,
                } => {
                    for (name, p) in [
                        ("p_good_to_bad", p_good_to_bad),
                        ("p_bad_to_good", p_bad_to_good),
                        ("loss_good", loss_good),
                        ("loss_bad", loss_bad),
                    ] {
                        check_probability(format!("loss[{at}].{name}"), p)?;
                    }
                }
                LossModel::Episode {
                    from, to, one_in, ..
                } => {
                    check_interval(at, from, to)?;
                    if one_in == 0 {
                        return Err(LinkError::new(
                            format!("loss[{at}].one_in"),
                            0,
                            "at least 1 (1 drops every packet)",
                        ));
                    }
                }
                LossModel::Blackout { from, to } => check_interval(at, from, to)?,
            }
        }
        Ok(())
    }
}
