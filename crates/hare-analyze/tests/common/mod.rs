//! Fixtures: small hare-sim runs (100 Mbit/s x 20 ms) written as a report and qlog files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use hare_link::units::{parse_duration, parse_rate, parse_size};
use hare_link::PathConfig;
use hare_sim::{simulate, SimConfig, SimOutput, Workload};

/// A simulated run on disk.
pub struct Fixture {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The report (JSON lines).
    pub report: PathBuf,
    /// The sender's (client's) qlog.
    pub client_qlog: PathBuf,
    /// The receiver's (server's) qlog.
    pub server_qlog: PathBuf,
    /// The simulator's output.
    pub out: SimOutput,
}

/// Runs `controller` for `secs` seconds over 100 Mbit/s x 20 ms with a `queue` drop-tail
/// limit, seed 7, writing the report and qlogs under a fresh temporary directory.
pub fn fixture(run_id: &str, controller: &str, secs: u64, queue: &str) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = PathConfig::symmetric(
        parse_rate("100m").expect("rate"),
        parse_duration("20ms").expect("rtt"),
        Some(parse_size(queue).expect("queue")),
    );
    let mut cfg = SimConfig::new(run_id, path.forward, path.reverse, controller).with_seed(7);
    cfg.workload = Workload::Duration(Duration::from_secs(secs));
    cfg.fine_interval = None;
    cfg.qlog_dir = Some(dir.path().to_path_buf());
    let out = simulate(&cfg, &mut |_| {}).expect("simulate");
    let report = dir.path().join(format!("{run_id}.jsonl"));
    let f = std::fs::File::create(&report).expect("report file");
    hare_report::jsonl::write_run(std::io::BufWriter::new(f), &out.run).expect("write report");
    Fixture {
        client_qlog: dir.path().join(format!("{run_id}-client.sqlog")),
        server_qlog: dir.path().join(format!("{run_id}-server.sqlog")),
        report,
        out,
        dir,
    }
}

/// Writes `bytes` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write file");
    p
}
