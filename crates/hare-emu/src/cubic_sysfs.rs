//! Kernel tcp_cubic module parameters for one run, always restored.
//!
//! `/sys/module/tcp_cubic/parameters/*` are global to the machine (docs/PLATFORM.md), so a run
//! that changes them holds an exclusive `flock` on [`LOCK_PATH`] from the change to the
//! restore, and a run that relies on the defaults holds it shared: runs that change them are
//! serialised, and never overlap a run that assumes the defaults. The originals are written to
//! [`SAVED_PATH`] before anything changes; the guard restores them on `restore()`, on drop
//! (errors, panics unwinding, Ctrl-C turned into an orderly return by [`crate::signals`]),
//! and a later apply restores them first if a holder was killed before it could.
//!
//! Note (tcp_cubic.c, Linux 2.6.26 and later): `beta` is writable but `beta_scale` (the Reno-
//! friendly estimate's slope) is computed once at module load, so a changed beta moves the
//! multiplicative decrease and fast convergence only.

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{EmuError, Result};

/// Where the kernel exposes the parameters.
pub const PARAM_DIR: &str = "/sys/module/tcp_cubic/parameters";
/// The machine-wide lock serialising runs that change them.
pub const LOCK_PATH: &str = "/run/lock/hare-tcp-cubic.lock";
/// The originals, saved while changed.
pub const SAVED_PATH: &str = "/run/hare-emu/tcp_cubic.saved.json";

/// Parameters to set for one run; `None` leaves a parameter as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CubicParams {
    /// `hystart` (0 off, 1 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart: Option<u32>,
    /// `hystart_detect` (bit 1 ACK train, bit 2 delay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart_detect: Option<u32>,
    /// `hystart_low_window` (segments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart_low_window: Option<u32>,
    /// `hystart_ack_delta_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart_ack_delta_us: Option<u32>,
    /// `initial_ssthresh` (segments; 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_ssthresh: Option<u32>,
    /// `beta` (of 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<u32>,
}

impl CubicParams {
    /// The parameters set, by their sysfs names.
    pub fn entries(&self) -> Vec<(&'static str, u32)> {
        [
            ("hystart", self.hystart),
            ("hystart_detect", self.hystart_detect),
            ("hystart_low_window", self.hystart_low_window),
            ("hystart_ack_delta_us", self.hystart_ack_delta_us),
            ("initial_ssthresh", self.initial_ssthresh),
            ("beta", self.beta),
        ]
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| (n, v)))
        .collect()
    }

    /// True when nothing is to be changed.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// `name=value,...` for logs and report headers.
    pub fn describe(&self) -> String {
        let e = self.entries();
        if e.is_empty() {
            return "defaults".into();
        }
        e.iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Where the guard works (the real sysfs by default; a scratch directory in tests).
#[derive(Debug, Clone)]
pub struct ParamLocations {
    /// The parameter directory.
    pub dir: PathBuf,
    /// The lock file.
    pub lock: PathBuf,
    /// The saved-originals file.
    pub saved: PathBuf,
}

impl Default for ParamLocations {
    fn default() -> Self {
        ParamLocations {
            dir: PARAM_DIR.into(),
            lock: LOCK_PATH.into(),
            saved: SAVED_PATH.into(),
        }
    }
}

fn param_err(name: &str, message: String) -> EmuError {
    EmuError::Param {
        name: name.to_string(),
        message,
    }
}

fn read_param(dir: &Path, name: &str) -> Result<String> {
    let p = dir.join(name);
    fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| param_err(name, format!("read {}: {e}", p.display())))
}

fn write_param(dir: &Path, name: &str, value: &str) -> Result<()> {
    let p = dir.join(name);
    fs::write(&p, value)
        .map_err(|e| param_err(name, format!("write {value} to {}: {e}", p.display())))?;
    let back = read_param(dir, name)?;
    if back != value {
        return Err(param_err(name, format!("wrote {value}, reads back {back}")));
    }
    Ok(())
}

fn restore_saved(loc: &ParamLocations) -> Result<bool> {
    let text = match fs::read_to_string(&loc.saved) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(EmuError::io(format!("read {}", loc.saved.display()), e)),
    };
    let saved: Vec<(String, String)> = serde_json::from_str(&text)
        .map_err(|e| EmuError::config(loc.saved.display().to_string(), e.to_string()))?;
    for (n, v) in &saved {
        write_param(&loc.dir, n, v)?;
    }
    fs::remove_file(&loc.saved)
        .map_err(|e| EmuError::io(format!("remove {}", loc.saved.display()), e))?;
    Ok(true)
}

/// Holds the lock and the originals; restores them when done.
#[derive(Debug)]
pub struct CubicParamsGuard {
    loc: ParamLocations,
    originals: Vec<(String, String)>,
    applied: CubicParams,
    recovered: bool,
    _lock: File,
}

impl CubicParamsGuard {
    /// Waits (up to `wait_s`, or until interrupted) for the lock, restores originals a killed
    /// run left behind, saves the current values and writes `params`. An empty `params`
    /// takes the lock shared and changes nothing.
    pub fn apply(params: &CubicParams, wait_s: f64) -> Result<CubicParamsGuard> {
        Self::apply_at(params, &ParamLocations::default(), wait_s)
    }

    /// [`apply`](Self::apply) at the given locations.
    pub fn apply_at(
        params: &CubicParams,
        loc: &ParamLocations,
        wait_s: f64,
    ) -> Result<CubicParamsGuard> {
        if !loc.dir.is_dir() {
            return Err(param_err(
                "*",
                format!(
                    "{} is missing: is tcp_cubic built in or loaded?",
                    loc.dir.display()
                ),
            ));
        }
        if let Some(parent) = loc.lock.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| EmuError::io(format!("create {}", parent.display()), e))?;
        }
        if let Some(parent) = loc.saved.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| EmuError::io(format!("create {}", parent.display()), e))?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&loc.lock)
            .map_err(|e| EmuError::io(format!("open {}", loc.lock.display()), e))?;
        let exclusive = !params.is_empty();
        let how = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        let deadline = crate::wall_clock::monotonic_ns() + (wait_s.max(0.0) * 1e9) as u64;
        loop {
            // SAFETY: flock on a valid fd.
            if unsafe { libc::flock(lock.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(EmuError::io(format!("flock {}", loc.lock.display()), e));
            }
            if crate::signals::interrupted() {
                return Err(EmuError::Interrupted);
            }
            if crate::wall_clock::monotonic_ns() >= deadline {
                return Err(param_err(
                    "*",
                    format!(
                        "another run holds {} (changing tcp_cubic parameters); waited {wait_s} s",
                        loc.lock.display()
                    ),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // A holder that died left its originals: put them back first (only an exclusive
        // holder writes the saved file, and we now hold the lock).
        let recovered = if exclusive {
            restore_saved(loc)?
        } else {
            false
        };
        let mut guard = CubicParamsGuard {
            loc: loc.clone(),
            originals: Vec::new(),
            applied: params.clone(),
            recovered,
            _lock: lock,
        };
        if !exclusive {
            return Ok(guard);
        }
        for (name, _) in params.entries() {
            guard
                .originals
                .push((name.to_string(), read_param(&loc.dir, name)?));
        }
        let text = serde_json::to_string(&guard.originals)
            .map_err(|e| EmuError::config("saved parameters", e.to_string()))?;
        fs::write(&loc.saved, text)
            .map_err(|e| EmuError::io(format!("write {}", loc.saved.display()), e))?;
        for (name, v) in params.entries() {
            // On failure the guard drops and restores what was already written.
            write_param(&loc.dir, name, &v.to_string())?;
        }
        Ok(guard)
    }

    /// What this guard set.
    pub fn applied(&self) -> &CubicParams {
        &self.applied
    }

    /// True when originals left by a killed run were restored before applying.
    pub fn recovered_stale(&self) -> bool {
        self.recovered
    }

    /// The values found before the change, by name.
    pub fn originals(&self) -> &[(String, String)] {
        &self.originals
    }

    fn restore_now(&mut self) -> Result<()> {
        let mut first_err = None;
        for (n, v) in &self.originals {
            if let Err(e) = write_param(&self.loc.dir, n, v) {
                first_err.get_or_insert(e);
            }
        }
        if first_err.is_none() && !self.originals.is_empty() {
            let _ = fs::remove_file(&self.loc.saved);
        }
        self.originals.clear();
        first_err.map_or(Ok(()), Err)
    }

    /// Restores the originals now and releases the lock.
    pub fn restore(mut self) -> Result<()> {
        self.restore_now()
    }
}

impl Drop for CubicParamsGuard {
    fn drop(&mut self) {
        if let Err(e) = self.restore_now() {
            eprintln!(
                "hare-emu: could not restore tcp_cubic parameters: {e} (saved in {})",
                self.loc.saved.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> (tempfile::TempDir, ParamLocations) {
        let t = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let dir = t.path().join("parameters");
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        for (n, v) in [
            ("hystart", "1"),
            ("hystart_detect", "3"),
            ("hystart_low_window", "16"),
            ("hystart_ack_delta_us", "2000"),
            ("initial_ssthresh", "0"),
            ("beta", "717"),
        ] {
            fs::write(dir.join(n), format!("{v}\n")).unwrap_or_else(|e| panic!("{e}"));
        }
        let loc = ParamLocations {
            lock: t.path().join("lock"),
            saved: t.path().join("saved.json"),
            dir,
        };
        (t, loc)
    }

    fn get(loc: &ParamLocations, n: &str) -> String {
        read_param(&loc.dir, n).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn applies_and_restores_on_drop_and_on_restore() {
        let (_t, loc) = scratch();
        let p = CubicParams {
            hystart: Some(0),
            initial_ssthresh: Some(100),
            ..Default::default()
        };
        assert_eq!(p.describe(), "hystart=0,initial_ssthresh=100");
        {
            let g = CubicParamsGuard::apply_at(&p, &loc, 1.0).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(get(&loc, "hystart"), "0");
            assert_eq!(get(&loc, "initial_ssthresh"), "100");
            assert!(loc.saved.exists());
            assert_eq!(g.originals().len(), 2);
        }
        assert_eq!(get(&loc, "hystart"), "1");
        assert_eq!(get(&loc, "initial_ssthresh"), "0");
        assert!(!loc.saved.exists());
        let g = CubicParamsGuard::apply_at(&p, &loc, 1.0).unwrap_or_else(|e| panic!("{e}"));
        g.restore().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(get(&loc, "hystart"), "1");
    }

    #[test]
    fn runs_that_change_parameters_are_serialised() {
        let (_t, loc) = scratch();
        let p = CubicParams {
            beta: Some(819),
            ..Default::default()
        };
        let g = CubicParamsGuard::apply_at(&p, &loc, 1.0).unwrap_or_else(|e| panic!("{e}"));
        let t0 = std::time::Instant::now();
        let second = CubicParamsGuard::apply_at(&p, &loc, 0.2);
        assert!(second.is_err(), "a second writer got the lock");
        assert!(t0.elapsed().as_secs_f64() >= 0.2);
        // A defaults run waits for the writer too (shared vs exclusive).
        assert!(CubicParamsGuard::apply_at(&CubicParams::default(), &loc, 0.1).is_err());
        drop(g);
        let r = CubicParamsGuard::apply_at(&CubicParams::default(), &loc, 0.1);
        assert!(r.is_ok());
        assert_eq!(get(&loc, "beta"), "717");
    }

    #[test]
    fn originals_of_a_killed_run_are_restored_first() {
        let (_t, loc) = scratch();
        // A run set hystart=0 and died: the sysfs value is changed, the saved file remains.
        fs::write(loc.dir.join("hystart"), "0\n").unwrap_or_else(|e| panic!("{e}"));
        fs::write(&loc.saved, r#"[["hystart","1"]]"#).unwrap_or_else(|e| panic!("{e}"));
        let p = CubicParams {
            hystart_low_window: Some(32),
            ..Default::default()
        };
        let g = CubicParamsGuard::apply_at(&p, &loc, 1.0).unwrap_or_else(|e| panic!("{e}"));
        assert!(g.recovered_stale());
        assert_eq!(get(&loc, "hystart"), "1");
        assert_eq!(get(&loc, "hystart_low_window"), "32");
        drop(g);
        assert_eq!(get(&loc, "hystart_low_window"), "16");
    }

    #[test]
    fn refuses_a_missing_directory() {
        let loc = ParamLocations {
            dir: "/nonexistent/tcp_cubic".into(),
            ..ParamLocations::default()
        };
        let e = CubicParamsGuard::apply_at(&CubicParams::default(), &loc, 0.0);
        assert!(e.is_err());
    }
}
