//! Helpers shared by the integration tests: small paths that run fast in debug builds.
#![allow(dead_code)]

use std::time::Duration;

use hare_link::units::{parse_duration, parse_rate, parse_size};
use hare_link::PathConfig;
pub use hare_sim::Workload;
use hare_sim::{SimConfig, Windows};

/// A symmetric path `rate` x `rtt` with a drop-tail queue of `queue` (None = unlimited).
pub fn path(rate: &str, rtt: &str, queue: Option<&str>) -> PathConfig {
    PathConfig::symmetric(
        parse_rate(rate).expect("rate"),
        parse_duration(rtt).expect("rtt"),
        queue.map(|q| parse_size(q).expect("queue")),
    )
}

/// A run over `path` with `controller`, windows of `window` bytes, `workload`, no fine report.
pub fn config(
    id: &str,
    path: PathConfig,
    controller: &str,
    window: u64,
    workload: Workload,
) -> SimConfig {
    let mut cfg = SimConfig::new(id, path.forward, path.reverse, controller);
    cfg.windows = Windows::uniform(window);
    cfg.workload = workload;
    cfg
}

/// `secs` seconds.
pub fn secs(s: u64) -> Workload {
    Workload::Duration(Duration::from_secs(s))
}
