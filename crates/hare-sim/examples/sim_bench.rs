//! Speed of the simulator: `cargo run --release -p hare-sim --example sim_bench -- [SECONDS] [CASE...]`
//! (cases `1g-80ms-mtu1452`, ...; default all four, 10 s of virtual time each).
//! `hare-lab bench sim` is the user-facing version of this.

use std::time::Duration;

use hare_sim::{bench, reset_peak_rss, standard_cases};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = match args.next() {
        Some(s) => s.parse()?,
        None => 10,
    };
    let wanted: Vec<String> = args.collect();
    let mut cases = standard_cases(Duration::from_secs(seconds));
    if let Ok(cc) = std::env::var("HARE_SIM_CC") {
        for c in &mut cases {
            c.controller = cc.clone();
        }
    }
    for case in cases {
        if !wanted.is_empty() && !wanted.contains(&case.name) {
            continue;
        }
        reset_peak_rss();
        let r = bench(&case, &mut |_| {})?;
        let cpu = r.cpu_seconds.unwrap_or(0.0);
        println!(
            "{:<18} {:>6.1} sim s in {:>6.2} wall s = {:>5.2}x real time, {:>9} datagrams, {:>8.1} Mbit/s, peak RSS {:>6.1} MiB, CPU {:.2} s = {:.2}x per CPU s",
            case.name,
            r.sim_seconds,
            r.wall_seconds,
            r.speed(),
            r.datagrams,
            r.mbps,
            r.peak_rss_bytes.unwrap_or(0) as f64 / 1048576.0,
            cpu,
            r.cpu_speed().unwrap_or(0.0)
        );
    }
    Ok(())
}
