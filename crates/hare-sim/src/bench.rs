//! The speed benchmark core behind `hare-lab bench sim`, and peak-memory helpers.

use std::time::Duration;

use hare_link::units::{BitRate, ByteSize, TimeSpan};
use hare_link::PathConfig;

use crate::config::{SimConfig, Windows, Workload};
use crate::crypto::CryptoMode;
use crate::error::SimError;
use crate::output::Progress;
use crate::run::simulate_with;
use crate::window::Threads;

/// One benchmark configuration: a symmetric path with a one-BDP drop-tail queue and windows
/// of two BDPs, a bulk transfer for `seconds` of virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchCase {
    /// Short name, e.g. `10g-80ms-mtu8952`.
    pub name: String,
    /// Bottleneck rate in bit/s (IP bytes).
    pub rate_bps: u64,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// UDP payload per datagram.
    pub mtu: u16,
    /// Virtual time to simulate.
    pub seconds: Duration,
    /// Controller spec (hare-cc grammar).
    pub controller: String,
    /// 1-RTT packet protection (the simulator's default, null; `Real` is the engine the
    /// speed-ups are measured against).
    pub crypto: CryptoMode,
    /// The engine (the simulator's default, both cores where the path allows; `One` is
    /// the engine the speed-ups are measured against).
    pub threads: Threads,
}

impl BenchCase {
    /// A case named after its rate, RTT and MTU.
    pub fn new(rate_bps: u64, rtt: Duration, mtu: u16, seconds: Duration) -> Self {
        BenchCase {
            name: format!("{}g-{}ms-mtu{mtu}", rate_bps as f64 / 1e9, rtt.as_millis()),
            rate_bps,
            rtt,
            mtu,
            seconds,
            controller: "cubic".to_string(),
            crypto: CryptoMode::default(),
            threads: Threads::default(),
        }
    }

    /// Bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        (self.rate_bps as u128 * self.rtt.as_nanos() / 8 / 1_000_000_000) as u64
    }

    /// The simulator configuration of this case (seed 1, no fine report, no trace).
    pub fn config(&self) -> SimConfig {
        let bdp = self.bdp_bytes().max(1);
        let path = PathConfig::symmetric(
            BitRate(self.rate_bps),
            TimeSpan(u64::try_from(self.rtt.as_nanos()).unwrap_or(u64::MAX)),
            Some(ByteSize(bdp)),
        );
        let mut cfg = SimConfig::new(
            format!("bench-{}", self.name),
            path.forward,
            path.reverse,
            self.controller.clone(),
        );
        cfg.mtu = self.mtu;
        cfg.windows = Windows::uniform(2 * bdp);
        cfg.workload = Workload::Duration(self.seconds);
        cfg.fine_interval = None;
        cfg.crypto = self.crypto;
        cfg
    }
}

/// The four benchmark cases: 1 and 10 Gbit/s x 80 ms, MTU 1452 and 8952.
pub fn standard_cases(seconds: Duration) -> Vec<BenchCase> {
    let rtt = Duration::from_millis(80);
    let mut v = Vec::new();
    for rate in [1_000_000_000, 10_000_000_000] {
        for mtu in [1452, 8952] {
            v.push(BenchCase::new(rate, rtt, mtu, seconds));
        }
    }
    v
}

/// What one benchmark run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// The case.
    pub case: BenchCase,
    /// Virtual seconds simulated (connection start to end).
    pub sim_seconds: f64,
    /// Wall-clock seconds taken.
    pub wall_seconds: f64,
    /// Datagrams moved across both links.
    pub datagrams: u64,
    /// Average goodput of the run in Mbit/s.
    pub mbps: f64,
    /// Peak resident memory of the process after the run (VmHWM), if readable.
    pub peak_rss_bytes: Option<u64>,
    /// CPU seconds (user + system) the process spent during the run, if readable (all its
    /// threads: the two-thread engine can spend more CPU seconds than wall seconds).
    pub cpu_seconds: Option<f64>,
}

impl BenchResult {
    /// Simulated seconds per wall-clock second.
    pub fn speed(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.sim_seconds / self.wall_seconds
        } else {
            f64::INFINITY
        }
    }

    /// Simulated seconds per CPU second, if the CPU time is known.
    pub fn cpu_speed(&self) -> Option<f64> {
        self.cpu_seconds
            .filter(|c| *c > 0.0)
            .map(|c| self.sim_seconds / c)
    }
}

/// Runs one case. Peak memory is the process's high-water mark: call [`reset_peak_rss`]
/// before, or run each case in its own process, to attribute it to this case.
pub fn bench(
    case: &BenchCase,
    progress: &mut dyn FnMut(Progress),
) -> Result<BenchResult, SimError> {
    let cpu_before = process_cpu_seconds();
    let out = simulate_with(&case.config(), case.threads, progress)?;
    let cpu_seconds = match (cpu_before, process_cpu_seconds()) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let mbps = out.run.summary.as_ref().map_or(0.0, |s| s.mbps());
    Ok(BenchResult {
        case: case.clone(),
        sim_seconds: out.sim_seconds,
        wall_seconds: out.wall_seconds,
        datagrams: out.datagrams,
        mbps,
        peak_rss_bytes: peak_rss_bytes(),
        cpu_seconds,
    })
}

/// User + system CPU seconds of this process so far (fields 14 and 15 of
/// `/proc/self/stat`, in clock ticks of 1/100 s, the `USER_HZ` Linux reports on every
/// architecture), `None` where unreadable.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_cpu_ticks(&stat).map(|t| t as f64 / 100.0)
}

fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // Field 2 (the command) is in parentheses and may contain spaces: count from the last ')'.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so utime (14) and stime (15) are at indexes 11, 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Peak resident set size of this process in bytes (`VmHWM` of `/proc/self/status`), `None`
/// where that file does not exist or does not say.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// Resets the peak RSS to the current RSS (writes `5` to `/proc/self/clear_refs`, Linux 4.0+);
/// false when that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut parts = line["VmHWM:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") | None => value.checked_mul(1024),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vm_hwm() {
        let s = "Name:\tx\nVmPeak:\t 100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 10 kB\n";
        assert_eq!(parse_vm_hwm(s), Some(2048 * 1024));
        assert_eq!(parse_vm_hwm("VmRSS: 1 kB\n"), None);
    }

    #[test]
    fn parses_cpu_ticks() {
        let stat = "1234 (sim bench) R 1 2 3 4 5 6 7 8 9 10 250 17 0 0 20 0 1 0";
        assert_eq!(parse_cpu_ticks(stat), Some(267));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert!(process_cpu_seconds().is_some());
    }

    #[test]
    fn peak_rss_is_readable_here() {
        // The project's machines are Linux.
        assert!(peak_rss_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn standard_cases_cover_issue_4() {
        let cases = standard_cases(Duration::from_secs(10));
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "1g-80ms-mtu1452",
                "1g-80ms-mtu8952",
                "10g-80ms-mtu1452",
                "10g-80ms-mtu8952"
            ]
        );
        // 10 Gbit/s x 80 ms = 100 MB.
        assert_eq!(cases[3].bdp_bytes(), 100_000_000);
        let cfg = cases[3].config();
        assert_eq!(cfg.windows.send, 200_000_000);
        assert_eq!(cfg.forward.queue_bytes, Some(ByteSize(100_000_000)));
        assert_eq!(cfg.forward.delay.0 + cfg.reverse.delay.0, 80_000_000);
    }
}
