//! Why the model refused a start state: its own module, below `hooks` and the model that
//! checks it, so that neither imports the other to reach it.

use thiserror::Error;

/// A [`StartState`](crate::hooks::StartState) the model cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StartError {
    /// The algorithm state is of another algorithm.
    #[error("the start state's algorithm state is not {expected}'s")]
    AlgorithmMismatch {
        /// The model's algorithm.
        expected: &'static str,
    },
    /// cwnd 0 (the kernel never has it).
    #[error("cwnd must be at least 1 segment")]
    ZeroCwnd,
    /// `snd_una` after `snd_nxt` (nothing can be acknowledged before it is sent).
    #[error("snd_una {snd_una} is after snd_nxt {snd_nxt}")]
    UnaAfterNxt {
        /// The requested `snd_una`.
        snd_una: u64,
        /// The requested (or kept) `snd_nxt`.
        snd_nxt: u64,
    },
}
