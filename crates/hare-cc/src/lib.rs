//! hare-cc: Linux-kernel-faithful congestion control for quinn.
//!
//! The crate has two layers:
//! - a *kernel model* in the kernel's own units (cwnd in segments with the fractional
//!   `snd_cwnd_cnt` counter, time on a jiffies / ms / us clock chosen by the [`Profile`]):
//!   [`engine::KernelCc`] drives a window-growth algorithm (CUBIC, BIC, Reno) and a slow-start
//!   strategy (standard, `initial_ssthresh` clamp, RFC 3742, kernel HyStart of an era,
//!   HyStart++) exactly as `tcp_cubic.c` / `tcp_bic.c` / `tcp_cong.c` of the named version do;
//! - a *quinn adapter* that converts quinn's bytes and `Instant`s into that model and
//!   implements `quinn_proto::congestion::Controller`.
#![warn(missing_docs)]

pub mod adapter;
pub mod bic;
pub mod clock;
pub mod cuberoot;
pub mod cubic;
pub mod delay;
mod driver;
pub mod engine;
pub mod events;
pub mod factory;
pub mod hooks;
pub mod hystart;
pub mod hystart_pp;
pub mod observer;
pub mod ops;
pub mod profile;
pub mod profile_kinds;
pub mod reno;
pub mod script;
pub mod spec;
pub mod tcp_sock;

pub use adapter::HareController;
pub use events::{CcEvent, ExitReason, Phase, Snapshot};
pub use factory::HareFactory;
pub use observer::{ConnectionId, ConnectionView, Observer};
pub use profile::{Algorithm, Profile, ProfileError};
pub use spec::{CcSpec, SpecAlgorithm, SpecError};
