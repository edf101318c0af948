//! `hare-send bench --connections 1,2,4,8`: one job sent with `-C N` for each N, on loopback
//! or (with `--rate`/`--rtt`) through the namespace emulator, with per N the median goodput,
//! CPU seconds per 10^9 bytes on each side and their ratios to one connection.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use hare_link::{BitRate, TimeSpan};
use hare_transfer::bench::load_average;
use hare_transfer::bench_conns::loopback::{ConnBenchOptions, ConnLoad};
use hare_transfer::bench_conns::{parse_connections, summarise, table, ConnRun};

/// What `bench` was asked, as far as the connections mode reads it.
#[derive(Debug)]
pub struct ConnArgs {
    /// `--connections` as typed.
    pub connections: String,
    /// `-T` (default 3).
    pub seconds: Option<f64>,
    /// `--file`.
    pub file: Option<PathBuf>,
    /// `--rounds` (default 3).
    pub rounds: Option<usize>,
    /// `-w` (default: hare-send's).
    pub window: Option<String>,
    /// `--mtu` (at most one value; default: hare-send's).
    pub mtu: Vec<u16>,
    /// `--rate` (the emulator).
    pub rate: Option<BitRate>,
    /// `--rtt` (the emulator).
    pub rtt: Option<TimeSpan>,
    /// `--loss` (the emulator).
    pub loss: Option<f64>,
}

/// The options both variants share, checked.
pub(crate) struct Checked {
    pub(crate) list: Vec<u16>,
    pub(crate) rounds: usize,
    pub(crate) load: ConnLoad,
}

fn check(a: &ConnArgs) -> Result<Checked> {
    let list = parse_connections(&a.connections)?;
    let rounds = a.rounds.unwrap_or(3);
    if !(1..=50).contains(&rounds) {
        bail!("bench --rounds {rounds}: must be 1 to 50");
    }
    let load = match (&a.file, a.seconds) {
        (Some(f), None) => {
            let meta = std::fs::metadata(f).with_context(|| format!("--file {}", f.display()))?;
            if !meta.is_file() {
                bail!("--file {}: not a regular file", f.display());
            }
            ConnLoad::File(f.clone())
        }
        (Some(_), Some(_)) => bail!("bench: give -T or --file, not both"),
        (None, t) => {
            let t = t.unwrap_or(3.0);
            if !(t.is_finite() && (0.5..=600.0).contains(&t)) {
                bail!("bench -T {t}: must be 0.5 to 600");
            }
            ConnLoad::Seconds(t)
        }
    };
    if a.mtu.len() > 1 {
        bail!("bench --connections takes one --mtu, not {}", a.mtu.len());
    }
    Ok(Checked { list, rounds, load })
}

fn describe(load: &ConnLoad) -> String {
    match load {
        ConnLoad::Seconds(t) => format!("-T {t} bulk"),
        ConnLoad::File(f) => format!("file {}", f.display()),
    }
}

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

/// The header line's description of what runs.
pub(crate) fn what(c: &Checked) -> String {
    format!("{}, {} round(s)", describe(&c.load), c.rounds)
}
