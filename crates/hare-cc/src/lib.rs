//! hare-cc: Linux-kernel-faithful congestion control for quinn.
//!
//! The crate has two layers:
//! - a *kernel model* in the kernel's own units (cwnd in segments with the fractional
//!   `snd_cwnd_cnt` counter, time on a jiffies / ms / us clock chosen by the [`Profile`]):
//!   [`engine::KernelCc`] runs one algorithm module's `tcp_congestion_ops`
//!   ([`ops::CongestionOps`]: CUBIC with its HyStart, BIC, Reno, calling the shared steps of
//!   [`tcp_cong`]) in the order the named kernel version's `tcp_ack()` runs them, with that
//!   version's arithmetic; [`hooks`] drives it hook by hook from a chosen state;
//! - a *quinn adapter* that converts quinn's bytes and `Instant`s into that model and
//!   implements `quinn_proto::congestion::Controller`.
#![warn(missing_docs)]

pub mod adapter;
pub mod bic;
pub mod clock;
pub mod cuberoot;
pub mod cubic;
mod driver;
pub mod engine;
pub mod events;
pub mod factory;
pub mod hooks;
pub mod observer;
pub mod ops;
pub mod profile;
pub mod profile_kinds;
pub mod reno;
pub mod script;
pub mod spec;
pub mod tcp_cong;
pub mod tcp_sock;
mod view;

pub use adapter::HareController;
pub use events::{CcEvent, ExitReason, Phase, Snapshot};
pub use factory::HareFactory;
pub use observer::{ConnectionId, ConnectionView, Observer};
pub use profile::{Algorithm, Profile, ProfileError};
pub use spec::{CcSpec, SpecAlgorithm, SpecError};
