//! hare-transfer: the real-time engine behind `hare-send` and `hare-recv`.
//!
//! - [`receiver::Receiver`] serves many senders at once over QUIC (quinn) or, for reference
//!   runs, kernel TCP; [`sender::send`] runs one transfer.
//! - Jobs: bulk memory-to-memory data by size or time over `P` streams (like nuttcp), or files
//!   and directory trees, each file on its own stream, read unordered and written at its
//!   offsets, verified with BLAKE3 and renamed only once verified ([`recvfile`]).
//! - Trust: the receiver's self-signed identity ([`identity`]) pinned by SHA-256 fingerprint,
//!   or a CA ([`trust`]); senders authenticated by their own certificate (mutual TLS) against
//!   an allow list, and/or a token ([`senders`]).
//! - Reports: nuttcp interval lines, hare-report JSON lines, iperf3-shaped JSON ([`report`]),
//!   with the controller's own decisions from hare-cc's observer ([`sampler`]); qlog per
//!   connection ([`qlog`]).
//! - The job protocol is in [`protocol`] and `docs/TRANSFER.md`.
#![warn(missing_docs)]

pub mod bench;
pub mod bench_conns;
pub mod bench_files;
pub mod cc;
mod channels;
mod cpu;
mod error;
pub mod exit;
mod fail_code;
mod hystart_mib;
pub mod identity;
mod intervals;
mod iperf_extra;
mod iperf_streams;
mod limits;
mod loopback;
mod names;
mod peer_gone;
mod peer_log;
// The wire protocol's messages are the library's own business; tests that play a peer by
// hand (a hostile client) reach them through the `testkit` feature.
#[cfg(feature = "testkit")]
pub mod protocol;
#[cfg(not(feature = "testkit"))]
mod protocol;
mod qlog;
pub mod quic_config;
pub mod receiver;
mod recvfile;
pub mod report;
mod sampler;
pub mod screen;
pub mod sender;
pub mod senders;
pub mod sendfiles;
mod socket;
mod space;
mod stop;
pub mod tcp;
#[cfg(feature = "testkit")]
pub mod testkit;
pub mod trust;

pub use error::{Result, TransferError};
pub use protocol::SkipRule;
pub use receiver::{Limits, Receiver, RecvOptions};
pub use sender::{send, SendJob, SendOptions, SendOutcome, TcpSendOptions};
pub use stop::{stop_pair, Stop, StopTrigger};
