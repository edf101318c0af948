//! What a replay found: agreement counts per field and per CA state, the first divergences,
//! the loss reactions, the slow-start exits, and the printed report with its last line.

use std::collections::BTreeMap;

/// Agreements out of comparisons.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Comparisons that agreed.
    pub agree: u64,
    /// Comparisons made.
    pub total: u64,
}

impl Tally {
    /// Count one comparison.
    pub fn add(&mut self, same: bool) {
        self.total += 1;
        self.agree += u64::from(same);
    }

    /// `agree/total`.
    pub fn ratio(&self) -> String {
        format!("{}/{}", self.agree, self.total)
    }

    /// The share that agreed (1 when nothing was compared).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.agree as f64 / self.total as f64
        }
    }
}

/// One ACK where a compared field differed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// ACK index (the record before it).
    pub ack: usize,
    /// The kernel's CA state label of the ACK.
    pub state: &'static str,
    /// `field kernel=.. hare=..` for each differing field.
    pub fields: Vec<String>,
}

/// A loss reaction: the ssthresh the kernel set and the one hare's `ssthresh` op gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossReaction {
    /// ACK index.
    pub ack: usize,
    /// The state entered (Recovery, CWR, Loss).
    pub into: &'static str,
    /// cwnd before the reaction.
    pub cwnd: u32,
    /// The kernel's new ssthresh.
    pub kernel: u32,
    /// hare's.
    pub hare: u32,
}

/// The end of a cwnd-reduction episode: cwnd after its last ACK on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeEnd {
    /// ACK index.
    pub ack: usize,
    /// The state left.
    pub from: &'static str,
    /// The kernel's cwnd after the ACK.
    pub kernel: u32,
    /// hare's.
    pub hare: u32,
    /// The kernel undid the reduction (hare, under quinn, never does).
    pub undo: bool,
}

/// A slow-start exit: where, at which cwnd, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// ACK index.
    pub ack: usize,
    /// cwnd after that ACK.
    pub cwnd: u32,
    /// ssthresh set.
    pub ssthresh: u32,
    /// `ack-train`, `delay`, `loss`, `rto`.
    pub reason: &'static str,
}

/// Everything a replay counted.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Records of the flow's socket.
    pub records: usize,
    /// Records after which nothing the replay reads changed (no ACK of data, no state change).
    pub unchanged: usize,
    /// ACKs replayed.
    pub acks: usize,
    /// cwnd in Open.
    pub cwnd_open: Tally,
    /// cwnd by the other states (label of the ACK).
    pub cwnd_other: BTreeMap<&'static str, Tally>,
    /// ACKs in CWR / Recovery whose cwnd PRR set (not compared).
    pub prr_acks: usize,
    /// ACKs on which the kernel or hare set ssthresh.
    pub ssthresh_decisions: Tally,
    /// Each other field on every ACK compared.
    pub fields: BTreeMap<&'static str, Tally>,
    /// The first divergences.
    pub divergences: Vec<Divergence>,
    /// Every loss reaction.
    pub loss_reactions: Vec<LossReaction>,
    /// Every episode end.
    pub episode_ends: Vec<EpisodeEnd>,
    /// The kernel's slow-start exit.
    pub exit_kernel: Option<Exit>,
    /// hare's.
    pub exit_hare: Option<Exit>,
}

/// How many divergences are kept.
pub const KEEP_DIVERGENCES: usize = 10;

impl Outcome {
    /// cwnd over every state but Open.
    pub fn cwnd_other_total(&self) -> Tally {
        self.cwnd_other
            .values()
            .fold(Tally::default(), |a, t| Tally {
                agree: a.agree + t.agree,
                total: a.total + t.total,
            })
    }

    /// Both sides left slow start at the same ACK with the same cwnd and ssthresh.
    pub fn exit_same(&self) -> bool {
        self.exit_kernel == self.exit_hare
    }

    /// Every loss reaction's ssthresh was the same.
    pub fn loss_reactions_same(&self) -> bool {
        self.loss_reactions.iter().all(|r| r.kernel == r.hare)
    }

    /// The last line: `agreement: cwnd A/B (Open), C/D (other states); ssthresh E/F; exit
    /// same|differs`.
    pub fn last_line(&self) -> String {
        format!(
            "agreement: cwnd {} (Open), {} (other states); ssthresh {}; exit {}",
            self.cwnd_open.ratio(),
            self.cwnd_other_total().ratio(),
            self.ssthresh_decisions.ratio(),
            if self.exit_same() { "same" } else { "differs" }
        )
    }
}
