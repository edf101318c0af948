//! hare-sim: replay bulk transfers in virtual time over real quinn-proto.
//!
//! A discrete-event simulator that drives a real quinn-proto 0.11 client and server
//! (sans-IO: every call gets `now`), with real rustls/ring TLS, across two hare-link
//! directions (the data path and the ACK path), in virtual time. The client opens one
//! unidirectional stream and writes as fast as flow control allows, like nuttcp; the server
//! reads it (unordered by default). The sender's congestion controller is any hare-cc
//! controller or quinn built-in, selected by a hare-cc spec string.
//!
//! The output is the project's report spine ([`hare_report::Run`]): per-interval records at
//! 1 s and, optionally, 100 ms; hare-cc's decisions as events; a summary; plus a per-ACK
//! controller trace for plots and the link counters.
//!
//! ```no_run
//! use hare_link::{PathConfig, units::{parse_rate, parse_duration, parse_size}};
//! use hare_sim::{simulate, SimConfig, Windows, Workload};
//! use std::time::Duration;
//!
//! let path = PathConfig::symmetric(
//!     parse_rate("10g")?, parse_duration("80ms")?, Some(parse_size("100m")?));
//! let mut cfg = SimConfig::new("demo", path.forward, path.reverse,
//!     "cubic@linux-2.6.20,initial_ssthresh=100");
//! cfg.mtu = 8952;
//! cfg.windows = Windows::uniform(60 << 20);
//! cfg.workload = Workload::Duration(Duration::from_secs(30));
//! let out = simulate(&cfg, &mut |p| eprintln!("{:.0}% {:.0} Mbit/s", p.fraction * 100.0, p.interval_mbps))?;
//! hare_report::jsonl::write_run(std::io::stdout(), &out.run)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Determinism
//! The same [`SimConfig`] (seed included) gives byte-identical JSON-lines reports, on one
//! thread or two ([`Threads`]: the two endpoints exchange datagrams only at the end of
//! windows shorter than the path's one-way delay, in a fixed order): the event loop
//! iterates no hash map, quinn's endpoint RNGs, the connection ids
//! and the TLS identity derive from the seed (see `identity.rs` for why Ed25519), and the
//! link loss models and jitter draw from their own seeded streams. Only TLS's own random
//! values differ between reruns, and they never change a packet's size or timing.
//!
//! # Speed
//! See the crate README: [`bench`] and [`standard_cases`] are the core of `hare-lab bench sim`,
//! and [`peak_rss_bytes`] reads the process's peak memory.
#![warn(missing_docs)]

mod bench;
mod client;
mod config;
mod controller;
mod crypto;
mod engine;
mod error;
mod flows;
mod identity;
mod output;
mod peer;
mod pool;
mod probe;
mod queue_sample;
pub mod receiver_acks;
mod report;
mod run;
mod server;
mod setup;
mod tap;
mod tie_order;
mod virtual_clock;
mod window;
mod wire;

pub use bench::{
    bench, peak_rss_bytes, process_cpu_seconds, reset_peak_rss, standard_cases, BenchCase,
    BenchResult,
};
pub use config::{defaults, AckSettings, Limits, ReadMode, SimConfig, Windows, Workload};
pub use crypto::CryptoMode;
pub use error::{Endpoint, SimError};
pub use flows::{flow_seed, simulate_flows, simulate_flows_sampled, Flow, FlowsOutput};
pub use output::{Progress, SimOutput, TracePoint};
pub use queue_sample::QueueSample;
pub use receiver_acks::ReceiverAcks;
pub use run::{simulate, simulate_with};
pub use window::Threads;
