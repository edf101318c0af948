//! One simulated run, printed nuttcp-style with its events:
//! `cargo run -p hare-sim --example sim_run -- CONTROLLER RATE RTT QUEUE WINDOW SECONDS [MTU]`
//! e.g. `cubic@linux-2.6.20,initial_ssthresh=100 10g 80ms 100m 60m 30 8952`; WINDOW `auto`
//! is hare's autotuned default.

use std::time::Duration;

use hare_link::units::{parse_duration, parse_rate, parse_size};
use hare_link::PathConfig;
use hare_sim::{simulate, SimConfig, Windows, Workload};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 6 {
        return Err("usage: sim_run CONTROLLER RATE RTT QUEUE WINDOW SECONDS [MTU]".into());
    }
    let path = PathConfig::symmetric(
        parse_rate(&a[1])?,
        parse_duration(&a[2])?,
        Some(parse_size(&a[3])?),
    );
    let mut cfg = SimConfig::new("sim_run", path.forward, path.reverse, a[0].clone());
    // `auto`: hare's default, the autotuned window up to its default cap.
    cfg.windows = match a[4].as_str() {
        "auto" => Windows::auto(hare_cc::autotune::DEFAULT_MAX_WINDOW),
        w => Windows::uniform(parse_size(w)?.0),
    };
    cfg.workload = Workload::Duration(Duration::from_secs(a[5].parse()?));
    if let Some(m) = a.get(6) {
        cfg.mtu = m.parse()?;
    }
    cfg.fine_interval = None;
    let out = simulate(&cfg, &mut |_| {})?;
    for i in &out.run.intervals {
        println!(
            "{:7.3} s {:10.4} MB {:10.3} Mbps lost {:6} cwnd {:7} ssthresh {:>7} srtt {:7.2} ms {}{}",
            i.end_s,
            i.bytes as f64 / 1048576.0,
            i.mbps(),
            i.lost_packets,
            i.cwnd_segments.unwrap_or(0),
            i.ssthresh_segments.map_or("-".to_string(), |s| s.to_string()),
            i.srtt_ms.unwrap_or(0.0),
            word(&i.phase),
            if i.flow_control_limited { " window-limited" } else { "" }
        );
    }
    for e in out.run.events.iter().take(40) {
        println!("{:8.3} s {}", e.t_s, serde_json::to_string(&e.kind)?);
    }
    if let Some(s) = &out.run.summary {
        println!(
            "{:.4} MB / {:.2} sec = {:.4} Mbps, lost {}, max cwnd {}, slow-start exit {}",
            s.bytes as f64 / 1048576.0,
            s.seconds,
            s.mbps(),
            s.lost_packets,
            s.max_cwnd_segments.map_or("-".into(), |c| c.to_string()),
            s.slow_start_exit
                .as_ref()
                .map_or("none".into(), |x| format!(
                    "{} at {:.3} s, cwnd {}",
                    x.reason, x.t_s, x.cwnd_segments
                ))
        );
    }
    if let Some(w) = out.max_receive_window {
        println!("autotuned receive window: largest {w} bytes");
    }
    println!(
        "sim {:.2} s in {:.2} wall s ({:.2}x), {} datagrams, forward drops {}",
        out.sim_seconds,
        out.wall_seconds,
        out.speed(),
        out.datagrams,
        serde_json::to_string(&out.link_forward.dropped)?
    );
    Ok(())
}

/// A controller phase as a word (`congestion-avoidance`), `-` when not reported.
fn word<T: serde::Serialize>(v: &Option<T>) -> String {
    v.as_ref()
        .and_then(|p| serde_json::to_value(p).ok())
        .and_then(|j| j.as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".into())
}
