//! The path options every emulator command takes (`--path FILE` or `--rate`, `--rtt`,
//! `--queue`, ...), shared by the emulator commands and the kernel-vs-hare / transfer
//! commands.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use hare_link::{BitRate, ByteSize, PathConfig, TimeSpan};

/// The path, from a file or from a few options.
#[derive(Debug, Args)]
pub struct PathArgs {
    /// Path file (TOML: `[forward]` and `[reverse]` hare-link tables); overrides the options
    /// below.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Bottleneck rate, both directions (IP bytes), e.g. 100m, 1g.
    #[arg(long, default_value = "100m")]
    pub rate: BitRate,
    /// Round-trip propagation delay, split over the two directions.
    #[arg(long, default_value = "80ms")]
    pub rtt: TimeSpan,
    /// Drop-tail limit in bytes (default: one BDP).
    #[arg(long)]
    pub queue: Option<ByteSize>,
    /// Drop-tail limit in packets (instead of, or with, --queue).
    #[arg(long)]
    pub queue_packets: Option<u64>,
    /// Bernoulli loss probability on the forward link.
    #[arg(long)]
    pub loss: Option<f64>,
    /// Seed of the loss models.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl PathArgs {
    /// The path these options describe.
    pub fn to_path(&self) -> Result<PathConfig> {
        if let Some(f) = &self.path {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let p: PathConfig =
                toml::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
            p.validate().with_context(|| f.display().to_string())?;
            return Ok(p);
        }
        let bdp = (u128::from(self.rate.0) * u128::from(self.rtt.0) / 8 / 1_000_000_000) as u64;
        let queue = match (self.queue, self.queue_packets) {
            (None, None) => Some(ByteSize(bdp.max(1))),
            (q, _) => q,
        };
        let mut p = PathConfig::symmetric(self.rate, self.rtt, queue);
        p.forward.queue_packets = self.queue_packets;
        p.forward.seed = self.seed;
        p.reverse.seed = self.seed.wrapping_add(1);
        if let Some(l) = self.loss {
            p.forward
                .loss
                .push(hare_link::LossModel::Bernoulli { p: l });
        }
        p.validate()?;
        Ok(p)
    }
}
