//! The kernel-vs-hare scenario: kernel TCP CUBIC (via `hare-send --tcp`) and hare's QUIC
//! CUBIC over the same namespace path, knob by knob, paced and unpaced, repeated in random
//! order; a comparison table and one cwnd plot per path.
//!
//! File format (`testbed/scenarios/kernel-vs-hare.toml`, `kind = "kernel-vs-hare"` tells it
//! from the virtual-time scenarios):
//!
//! ```toml
//! kind = "kernel-vs-hare"
//! name = "kernel-vs-hare"
//! mtu = 1500                 # IP MTU of the TUN devices (QUIC payload mtu-28, TCP MSS mtu-52)
//! duration = "20s"           # hare-send -T
//! interval = "100ms"         # hare-send -i
//! repetitions = 3
//! seed = 1                   # run order
//! quic_window = "64m"        # hare-send/-recv -w (kernel TCP autotunes)
//! pacing_rate_factor = 10    # paced kernel runs: SO_MAX_PACING_RATE = factor x link rate
//! [paths]
//! rates = ["100m", "500m"]
//! rtt = "80ms"
//! queues_bdp = [1.0, 0.25]   # drop-tail limit in BDPs (IP bytes)
//! [[knobs]]
//! name = "hystart"
//! kernel = {}                # tcp_cubic parameters for the kernel runs
//! hare = "cubic@linux-6"     # hare-cc spec; ",paced=no|yes" is appended to match
//! ```

pub mod cli;
pub mod compete;
pub mod metrics;
pub mod plot;
pub mod runner;
pub mod transfer;
pub mod transfer_report;

use hare_link::{BitRate, ByteSize, PathConfig, TimeSpan};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::cubic_sysfs::CubicParams;

/// A kernel-vs-hare scenario file (`Kvh` = kernel vs hare: kernel TCP CUBIC and hare's
/// CUBIC over the same namespace path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvhScenario {
    /// Must be `kernel-vs-hare`.
    pub kind: String,
    /// Name (output directory by default).
    pub name: String,
    /// What the scenario is for.
    #[serde(default)]
    pub description: String,
    /// IP MTU of the TUN devices.
    pub mtu: u32,
    /// Seconds each transfer runs.
    pub duration: TimeSpan,
    /// Report interval.
    pub interval: TimeSpan,
    /// Runs per (path, knob, pacing, implementation).
    pub repetitions: u32,
    /// Seed of the run order.
    pub seed: u64,
    /// QUIC windows.
    pub quic_window: ByteSize,
    /// Paced kernel runs: SO_MAX_PACING_RATE = this x the link rate.
    pub pacing_rate_factor: u32,
    /// The paths.
    pub paths: PathMatrix,
    /// The knob settings.
    pub knobs: Vec<Knob>,
}

/// Rates x queue sizes at one RTT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathMatrix {
    /// Bottleneck rates (both directions).
    pub rates: Vec<BitRate>,
    /// Round-trip propagation delay.
    pub rtt: TimeSpan,
    /// Drop-tail limits in BDPs.
    pub queues_bdp: Vec<f64>,
}

/// One knob setting, on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knob {
    /// Short name.
    pub name: String,
    /// tcp_cubic parameters for the kernel runs.
    #[serde(default)]
    pub kernel: CubicParams,
    /// hare-cc spec of the matching hare controller.
    pub hare: String,
}

/// Kernel TCP or hare's QUIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Impl {
    /// Kernel TCP CUBIC (hare-send --tcp).
    Kernel,
    /// hare CUBIC over QUIC.
    Hare,
}

/// One emulated path of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathPoint {
    /// Name, e.g. `100m-80ms-q1bdp`.
    pub name: String,
    /// Rate.
    pub rate: BitRate,
    /// RTT.
    pub rtt: TimeSpan,
    /// Queue in BDPs.
    pub queue_bdp: f64,
    /// Queue in bytes.
    pub queue_bytes: u64,
}

impl PathPoint {
    /// The hare-link path.
    pub fn config(&self) -> PathConfig {
        PathConfig::symmetric(self.rate, self.rtt, Some(ByteSize(self.queue_bytes)))
    }

    /// BDP in packets of `mtu` bytes.
    pub fn bdp_packets(&self, mtu: u32) -> f64 {
        self.rate.0 as f64 / 8.0 * self.rtt.0 as f64 / 1e9 / f64::from(mtu)
    }
}

/// One planned run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Unique id, used in file names.
    pub id: String,
    /// The path.
    pub path: PathPoint,
    /// Knob name.
    pub knob: String,
    /// Paced (kernel: SO_MAX_PACING_RATE; hare: `paced=yes`) or not.
    pub paced: bool,
    /// Kernel or hare.
    pub implementation: Impl,
    /// Repetition, from 0.
    pub repetition: u32,
    /// `--cc` value.
    pub cc: String,
    /// tcp_cubic parameters (kernel runs).
    pub kernel_params: CubicParams,
    /// SO_MAX_PACING_RATE, bit/s (paced kernel runs).
    pub pacing_rate: Option<u64>,
}

impl RunPlan {
    /// The group this run belongs to (all but the repetition).
    pub fn group(&self) -> (String, String, bool, Impl) {
        (
            self.path.name.clone(),
            self.knob.clone(),
            self.paced,
            self.implementation,
        )
    }
}

fn fmt_rate(r: BitRate) -> String {
    if r.0 % 1_000_000_000 == 0 {
        format!("{}g", r.0 / 1_000_000_000)
    } else if r.0 % 1_000_000 == 0 {
        format!("{}m", r.0 / 1_000_000)
    } else {
        format!("{}", r.0)
    }
}

impl KvhScenario {
    /// Parses and checks a scenario file's text.
    pub fn parse(text: &str) -> Result<KvhScenario, String> {
        let s: KvhScenario = toml::from_str(text).map_err(|e| e.to_string())?;
        if s.kind != "kernel-vs-hare" {
            return Err(format!("kind = {:?}: expected \"kernel-vs-hare\"", s.kind));
        }
        if !(1280..=9000).contains(&s.mtu) {
            return Err(format!("mtu = {}: expected 1280 to 9000", s.mtu));
        }
        if s.repetitions == 0 || s.repetitions > 100 {
            return Err(format!(
                "repetitions = {}: expected 1 to 100",
                s.repetitions
            ));
        }
        if s.paths.rates.is_empty() || s.paths.queues_bdp.is_empty() || s.knobs.is_empty() {
            return Err("paths.rates, paths.queues_bdp and knobs must not be empty".into());
        }
        if s.paths
            .queues_bdp
            .iter()
            .any(|q| !(*q > 0.0 && *q <= 100.0))
        {
            return Err("paths.queues_bdp: each in (0, 100]".into());
        }
        if s.interval.0 < 10_000_000 || s.duration.0 == 0 {
            return Err("interval >= 10ms and duration > 0".into());
        }
        for k in &s.knobs {
            k.hare
                .parse::<hare_cc::CcSpec>()
                .map_err(|e| format!("knobs {:?}: hare = {:?}: {e}", k.name, k.hare))?;
        }
        Ok(s)
    }

    /// Every path of the matrix.
    pub fn path_points(&self) -> Vec<PathPoint> {
        let mut out = Vec::new();
        for &rate in &self.paths.rates {
            for &q in &self.paths.queues_bdp {
                let bdp = rate.0 as f64 / 8.0 * self.paths.rtt.0 as f64 / 1e9;
                let name = format!(
                    "{}-{}ms-q{}bdp",
                    fmt_rate(rate),
                    self.paths.rtt.0 / 1_000_000,
                    if q == 1.0 {
                        "1".to_string()
                    } else {
                        format!("{q}")
                    }
                );
                out.push(PathPoint {
                    name,
                    rate,
                    rtt: self.paths.rtt,
                    queue_bdp: q,
                    queue_bytes: (bdp * q).round().max(f64::from(self.mtu)) as u64,
                });
            }
        }
        out
    }

    /// Every run, in random order (seeded).
    pub fn plan(&self) -> Vec<RunPlan> {
        let mut out = Vec::new();
        for p in self.path_points() {
            for k in &self.knobs {
                for paced in [false, true] {
                    for imp in [Impl::Kernel, Impl::Hare] {
                        for rep in 0..self.repetitions {
                            let (cc, params, pacing) = match imp {
                                Impl::Kernel => (
                                    "cubic".to_string(),
                                    k.kernel.clone(),
                                    paced.then(|| {
                                        p.rate.0.saturating_mul(u64::from(self.pacing_rate_factor))
                                    }),
                                ),
                                Impl::Hare => (
                                    format!(
                                        "{},paced={}",
                                        k.hare,
                                        if paced { "yes" } else { "no" }
                                    ),
                                    CubicParams::default(),
                                    None,
                                ),
                            };
                            out.push(RunPlan {
                                id: format!(
                                    "{}-{}-{}-{}-r{rep}",
                                    p.name,
                                    k.name,
                                    if paced { "paced" } else { "unpaced" },
                                    match imp {
                                        Impl::Kernel => "kernel",
                                        Impl::Hare => "hare",
                                    }
                                ),
                                path: p.clone(),
                                knob: k.name.clone(),
                                paced,
                                implementation: imp,
                                repetition: rep,
                                cc,
                                kernel_params: params,
                                pacing_rate: pacing,
                            });
                        }
                    }
                }
            }
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.seed);
        out.shuffle(&mut rng);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = include_str!("../../../../testbed/scenarios/kernel-vs-hare.toml");

    #[test]
    fn shipped_scenario_parses_and_plans_every_combination() {
        let s = KvhScenario::parse(FILE).unwrap();
        let points = s.path_points();
        assert_eq!(points.len(), 4);
        assert_eq!(points[0].name, "100m-80ms-q1bdp");
        assert_eq!(points[0].queue_bytes, 1_000_000);
        assert_eq!(points[1].queue_bytes, 250_000);
        assert_eq!(points[2].queue_bytes, 5_000_000);
        let plan = s.plan();
        // 4 paths x 3 knobs x 2 pacings x 2 implementations x 3 repetitions.
        assert_eq!(plan.len(), 144);
        let mut ids: Vec<&str> = plan.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 144);
        // Random order, but reproducible.
        assert_eq!(s.plan(), plan);
        let in_order = plan.windows(2).all(|w| w[0].path.name <= w[1].path.name);
        assert!(!in_order);
        let paced_kernel = plan
            .iter()
            .find(|r| r.paced && r.implementation == Impl::Kernel)
            .unwrap();
        assert_eq!(
            paced_kernel.pacing_rate,
            Some(paced_kernel.path.rate.0 * 10)
        );
        assert!(plan
            .iter()
            .any(|r| r.cc == "cubic@linux-6,hystart=0,initial_ssthresh=100,paced=no"));
    }

    #[test]
    fn rejects_other_kinds() {
        let t = FILE.replace("kind = \"kernel-vs-hare\"", "kind = \"sim\"");
        assert!(KvhScenario::parse(&t).is_err());
    }
}

#[cfg(test)]
mod path_file_tests {
    #[test]
    fn shipped_faults_path_parses() {
        let text = include_str!("../../paths/faults-100m-80ms.toml");
        let p: hare_link::PathConfig = toml::from_str(text).unwrap();
        p.validate().unwrap();
        assert_eq!(p.rtt().0, 80_000_000);
        assert_eq!(p.forward.loss.len(), 2);
        assert_eq!(p.reverse.loss.len(), 1);
    }
}
