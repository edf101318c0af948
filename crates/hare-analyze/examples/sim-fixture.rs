//! Writes a small hare-sim run (report JSON lines + both qlog files) into a directory, for
//! trying the analysis by hand: `cargo run -p hare-analyze --example sim-fixture -- DIR
//! [CONTROLLER] [SECONDS]`.

use std::time::Duration;

use anyhow::{Context, Result};
use hare_link::{units::parse_duration, units::parse_rate, units::parse_size, PathConfig};
use hare_sim::{simulate, SimConfig, Workload};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().context("usage: sim-fixture DIR [CC] [S]")?);
    let cc = args
        .next()
        .unwrap_or_else(|| "cubic@linux-2.6.39".to_string());
    let secs: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(3);
    let path = PathConfig::symmetric(
        parse_rate("100m")?,
        parse_duration("20ms")?,
        Some(parse_size("125k")?),
    );
    let mut cfg = SimConfig::new("fixture", path.forward, path.reverse, cc);
    cfg.workload = Workload::Duration(Duration::from_secs(secs));
    cfg.qlog_dir = Some(dir.clone());
    let out = simulate(&cfg, &mut |_| {})?;
    let report = dir.join("fixture.jsonl");
    let f = std::fs::File::create(&report).context("creating report")?;
    hare_report::jsonl::write_run(std::io::BufWriter::new(f), &out.run)?;
    println!("origin_s {}", out.origin_s);
    println!("{}", serde_json::to_string(&out.run.summary)?);
    Ok(())
}
