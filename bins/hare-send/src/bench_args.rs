//! What `hare-send bench --connections` was asked, checked: shared by the loopback run
//! (module `bench_conns`) and the emulator's (module `bench_emu`).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use hare_link::{BitRate, TimeSpan};
use hare_transfer::bench_conns::loopback::ConnLoad;
use hare_transfer::bench_conns::parse_connections;

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

pub(crate) fn check(a: &ConnArgs) -> Result<Checked> {
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

pub(crate) fn describe(load: &ConnLoad) -> String {
    match load {
        ConnLoad::Seconds(t) => format!("-T {t} bulk"),
        ConnLoad::File(f) => format!("file {}", f.display()),
    }
}

/// The header line's description of what runs.
pub(crate) fn what(c: &Checked) -> String {
    format!("{}, {} round(s)", describe(&c.load), c.rounds)
}
