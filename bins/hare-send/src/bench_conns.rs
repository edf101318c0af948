//! `hare-send bench --connections 1,2,4,8`: one job sent with `-C N` for each N, on loopback
//! or (with `--rate`/`--rtt`) through the namespace emulator, with per N the median goodput,
//! CPU seconds per 10^9 bytes on each side and their ratios to one connection.

use std::path::Path;

use anyhow::{Context, Result};
use hare_transfer::bench::load_average;
use hare_transfer::bench_conns::loopback::ConnBenchOptions;
use hare_transfer::bench_conns::{summarise, table, ConnRun};

use crate::bench_args::{check, describe, Checked, ConnArgs};

/// Runs the connections benchmark: on loopback, or through the emulator with `--rate`.
pub fn run(a: ConnArgs, exe_dir: &Path) -> Result<()> {
    let c = check(&a)?;
    if a.rate.is_some() {
        crate::bench_emu::check_available()?;
    }
    let scratch = std::env::temp_dir().join(format!("hare-bench-conns-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let res = match (a.rate, a.rtt) {
        (Some(rate), Some(rtt)) => {
            let path = crate::bench_emu::EmuPath {
                rate,
                rtt,
                loss: a.loss,
            };
            crate::bench_emu::run(&a, &c, &path, exe_dir, &scratch)
        }
        _ => loopback(&a, &c, exe_dir, &scratch),
    };
    match &res {
        Ok(_) => {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        Err(_) => eprintln!("hare-send: bench files kept in {}", scratch.display()),
    }
    let runs = res?;
    print!("{}", table(&summarise(&c.list, &runs)));
    println!("load average after: {}", load_average());
    Ok(())
}

fn loopback(a: &ConnArgs, c: &Checked, exe_dir: &Path, scratch: &Path) -> Result<Vec<ConnRun>> {
    let o = ConnBenchOptions {
        connections: c.list.clone(),
        rounds: c.rounds,
        load: c.load.clone(),
        window: a.window.clone(),
        mtu: a.mtu.first().copied(),
        exe_dir: exe_dir.to_path_buf(),
        scratch: scratch.to_path_buf(),
    };
    println!(
        "hare bench --connections: loopback, {}, {} round(s), -w {}, load average before: {}",
        describe(&c.load),
        c.rounds,
        a.window.as_deref().unwrap_or("auto"),
        load_average()
    );
    Ok(hare_transfer::bench_conns::loopback::run(&o, |l| {
        println!("  {l}")
    })?)
}
