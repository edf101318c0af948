//! `hare-lab bench sim`: the simulator's speed on the standard cases, the current engine
//! (null 1-RTT protection, both cores) against the single-thread real-crypto engine in the
//! same run.

use crate::runner::Bars;
use anyhow::{Context, Result};
use hare_sim::{BenchCase, BenchResult, CryptoMode, Threads};
use std::io::Write;
use std::time::Duration;

/// One case measured with both engines.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchLine {
    /// Case name (`10g-80ms-mtu8952`).
    pub case: String,
    /// The baseline (real AES-GCM, one thread): simulated seconds per wall second.
    pub baseline_speed: f64,
    /// The baseline: simulated seconds per CPU second of the process.
    pub baseline_cpu_speed: Option<f64>,
    /// The current engine: simulated seconds per wall second.
    pub speed: f64,
    /// The current engine: simulated seconds per CPU second of the process (both threads
    /// counted: the work it does, whatever else loads the machine).
    pub cpu_speed: Option<f64>,
    /// Peak RSS of the baseline run (VmHWM), bytes.
    pub baseline_peak_rss: Option<u64>,
    /// Peak RSS of the current engine's run (VmHWM), bytes.
    pub peak_rss: Option<u64>,
    /// Both engines produced the same run (datagrams, bytes, duration).
    pub identical: bool,
    /// Target speed, if the case has one.
    pub target_speed: Option<f64>,
    /// RSS limit.
    pub rss_limit: Option<u64>,
}

impl BenchLine {
    /// Current speed over the baseline's, measured back to back.
    pub fn speedup(&self) -> f64 {
        if self.baseline_speed > 0.0 {
            self.speed / self.baseline_speed
        } else {
            f64::NAN
        }
    }

    /// Current CPU speed over the baseline's: how much less work the current engine does
    /// (its second thread shows in the wall-clock speed-up, not here).
    pub fn cpu_speedup(&self) -> Option<f64> {
        match (self.cpu_speed, self.baseline_cpu_speed) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }

    /// PASS when every target of the line is met and both engines agreed.
    pub fn pass(&self) -> bool {
        let speed_ok = self.target_speed.is_none_or(|t| self.speed >= t);
        let rss_ok = match (self.rss_limit, self.peak_rss) {
            (Some(l), Some(r)) => r < l,
            (Some(_), None) => false,
            (None, _) => true,
        };
        speed_ok && rss_ok && self.identical
    }
}

/// Peak memory limit of every case: 256 MiB.
pub const RSS_LIMIT: u64 = 256 << 20;

/// The targets: 10 Gbit/s x 80 ms >= 3x real time at MTU 8952 and >= 1x at 1452,
/// 1 Gbit/s x 80 ms at 1452 >= 8x; peak RSS under 256 MiB everywhere.
pub fn targets(rate_bps: u64, mtu: u16) -> (Option<f64>, Option<u64>) {
    let speed = match (rate_bps, mtu) {
        (10_000_000_000, 8952) => Some(3.0),
        (10_000_000_000, 1452) => Some(1.0),
        (1_000_000_000, 1452) => Some(8.0),
        _ => None,
    };
    (speed, Some(RSS_LIMIT))
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.0} MiB", b as f64 / 1048576.0))
}

/// Format the benchmark table.
pub fn bench_table(lines: &[BenchLine]) -> String {
    let mut s = format!(
        "{:<18} {:>9} {:>9} {:>8} {:>10} {:>10} {:>8} {:>7} {:>9} {:>9} {:>7} {:>4}  {}\n",
        "case",
        "base s/s",
        "new s/s",
        "speed-up",
        "base s/CPU",
        "new s/CPU",
        "CPU x",
        "target",
        "RSS base",
        "RSS new",
        "limit",
        "same",
        "result"
    );
    let x = |v: Option<f64>| v.map_or("-".to_string(), |c| format!("{c:.2}x"));
    for l in lines {
        s.push_str(&format!(
            "{:<18} {:>8.2}x {:>8.2}x {:>7.2}x {:>10} {:>10} {:>8} {:>7} {:>9} {:>9} {:>7} {:>4}  {}\n",
            l.case,
            l.baseline_speed,
            l.speed,
            l.speedup(),
            x(l.baseline_cpu_speed),
            x(l.cpu_speed),
            x(l.cpu_speedup()),
            l.target_speed
                .map_or("-".to_string(), |t| format!(">= {t:.0}x")),
            mib(l.baseline_peak_rss),
            mib(l.peak_rss),
            l.rss_limit
                .map_or("-".to_string(), |b| format!("< {}M", b >> 20)),
            if l.identical { "yes" } else { "NO" },
            if l.pass() { "PASS" } else { "FAIL" }
        ));
    }
    s
}

/// One run of `case` with `crypto` on `threads`.
fn measure(
    case: &BenchCase,
    crypto: CryptoMode,
    threads: Threads,
    bars: &Bars,
) -> Result<BenchResult> {
    let mut case = case.clone();
    case.crypto = crypto;
    case.threads = threads;
    let label = match threads {
        Threads::One => format!("{crypto} crypto, one thread"),
        Threads::Auto => format!("{crypto} crypto, two threads"),
    };
    // VmHWM is per process: clear it so each run reports its own peak.
    hare_sim::reset_peak_rss();
    let pb = bars.single(&format!("{} {label}", case.name));
    let result = hare_sim::bench(&case, &mut |p| {
        pb.set_position((p.fraction.clamp(0.0, 1.0) * 1000.0) as u64)
    })
    .with_context(|| format!("benchmark case {} ({label})", case.name))?;
    pb.finish_and_clear();
    Ok(result)
}

/// `hare-lab bench sim`: the four standard cases (1 and 10 Gbit/s x 80 ms, MTU 1452 and
/// 8952) for `seconds` of virtual time each, first with the baseline engine (real crypto,
/// one thread), then with the current one (null crypto, two threads); returns the lines
/// (also printed).
pub fn bench_sim(seconds: u64, progress: bool, out: &mut dyn Write) -> Result<Vec<BenchLine>> {
    let mut lines = Vec::new();
    let bars = Bars::new(progress);
    for case in hare_sim::standard_cases(Duration::from_secs(seconds)) {
        let base = measure(&case, CryptoMode::Real, Threads::One, &bars)?;
        let new = measure(&case, CryptoMode::Null, Threads::Auto, &bars)?;
        for (label, r) in [("base", &base), ("new", &new)] {
            writeln!(
                out,
                "{} {label}: {:.1} s simulated in {:.1} s wall, {} datagrams, {:.0} Mbit/s",
                case.name, r.sim_seconds, r.wall_seconds, r.datagrams, r.mbps
            )?;
        }
        let (target_speed, rss_limit) = targets(case.rate_bps, case.mtu);
        lines.push(BenchLine {
            case: case.name.clone(),
            baseline_speed: base.speed(),
            baseline_cpu_speed: base.cpu_speed(),
            speed: new.speed(),
            cpu_speed: new.cpu_speed(),
            baseline_peak_rss: base.peak_rss_bytes,
            peak_rss: new.peak_rss_bytes,
            identical: base.datagrams == new.datagrams
                && base.sim_seconds == new.sim_seconds
                && base.mbps == new.mbps,
            target_speed,
            rss_limit,
        });
    }
    writeln!(out, "\n{}", bench_table(&lines))?;
    writeln!(
        out,
        "base = the one-thread engine with AES-GCM 1-RTT protection; new = the current engine \
         (keyed null cipher, sender and receiver on two threads where the path's delay \
         allows). Both run back to back in this process, so the speed-up compares runs \
         seconds apart under the same load. s/CPU is simulated seconds per CPU second of the \
         process (all threads) and CPU x its ratio: the work saved, whatever else loads the \
         machine. PASS/FAIL judges the current engine's wall-clock speed and peak RSS, and \
         that both engines produced the same run (`same`)."
    )?;
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_targets_and_verdicts() {
        assert_eq!(targets(10_000_000_000, 8952), (Some(3.0), Some(RSS_LIMIT)));
        assert_eq!(targets(10_000_000_000, 1452), (Some(1.0), Some(RSS_LIMIT)));
        assert_eq!(targets(1_000_000_000, 1452), (Some(8.0), Some(RSS_LIMIT)));
        assert_eq!(targets(1_000_000_000, 8952), (None, Some(RSS_LIMIT)));
        let line = BenchLine {
            case: "10g-80ms-mtu8952".into(),
            baseline_speed: 1.5,
            baseline_cpu_speed: Some(1.8),
            speed: 3.3,
            cpu_speed: Some(3.6),
            baseline_peak_rss: Some(150 << 20),
            peak_rss: Some(140 << 20),
            identical: true,
            target_speed: Some(3.0),
            rss_limit: Some(RSS_LIMIT),
        };
        assert!(line.pass());
        assert!((line.speedup() - 2.2).abs() < 1e-9);
        assert!(!BenchLine {
            speed: 2.9,
            ..line.clone()
        }
        .pass());
        assert!(!BenchLine {
            peak_rss: Some(300 << 20),
            ..line.clone()
        }
        .pass());
        assert!(!BenchLine {
            peak_rss: None,
            ..line.clone()
        }
        .pass());
        assert!(!BenchLine {
            identical: false,
            ..line.clone()
        }
        .pass());
        let table = bench_table(&[line]);
        let row = table.lines().nth(1).unwrap_or_default();
        assert!(row.trim_end().ends_with("PASS"), "{table}");
        for want in [
            "1.50x", "3.30x", "2.20x", "3.60x", ">= 3x", "150 MiB", "140 MiB", "< 256M", "yes",
        ] {
            assert!(row.contains(want), "{want} missing: {table}");
        }
    }
}
