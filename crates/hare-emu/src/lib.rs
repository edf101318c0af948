//! hare-emu: hare-link in wall time, the real-time link emulator of hare's testbed.
//!
//! Two ways to put a path between a sender and a receiver:
//! - **relay mode** ([`relay::RelayEmulator`], no privileges): a UDP relay on loopback;
//! - **namespace mode** ([`namespace::NamespaceEmulator`], root): a sender and a receiver
//!   network namespace joined by two TUN devices, so kernel TCP and QUIC cross the very same
//!   emulated path.
//!
//! Both run one loop ([`emulation_loop`]) on a monotonic nanosecond clock with a 1 ns timer slack,
//! release every packet due at a wakeup, drain inputs until `EAGAIN`, and can pin their thread.
//! Every run checks itself ([`check`]): per-packet lateness (p50, p99, max), drops the path
//! model did not ask for, emulator CPU; a run with p99 lateness above 1 ms or any unintended
//! drop is INVALID.
//!
//! Around them: tcp_cubic module parameters for one run, always restored ([`cubic_sysfs`]);
//! `validate-emulator` ([`validate`]); the kernel-vs-hare scenario runner ([`scenario`]); and
//! the `hare-lab` subcommands as thin wrappers ([`cli`]).
#![warn(missing_docs)]

pub mod check;
pub mod cli;
pub mod cubic_sysfs;
pub mod delay_line;
pub mod emulation_loop;
pub mod error;
pub mod lateness;
pub mod namespace;
pub mod netns;
pub mod path_args;
pub mod relay;
pub mod runner;
pub mod scenario;
pub mod signals;
mod sockopt;
pub mod sysstat;
pub mod traffic;
pub mod tun;
pub mod validate;
pub mod wall_clock;

pub use check::{EmulatorRun, Mode, UnintendedDrop};
pub use cubic_sysfs::{CubicParams, CubicParamsGuard};
pub use error::{EmuError, Result};
pub use namespace::{NamespaceConfig, NamespaceEmulator};
pub use netns::Side;
pub use relay::{RelayConfig, RelayEmulator};
