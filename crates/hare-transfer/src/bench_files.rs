//! The many-small-files benchmark: a tree of small files sent by hare over loopback (sender and
//! receiver in this process, each on its own runtime thread, the receiver making the files
//! durable as it does for every job) against `cp -r` followed by `sync` of the same tree to the
//! same file system, interleaved round by round; the median of each and their ratio.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::error::{Result, TransferError};
use crate::loopback::{recv_options, send_options, BackgroundReceiver};
use crate::sender::SendJob;
use crate::stop::Stop;

/// Files per directory of the generated tree.
const PER_DIR: usize = 100;

/// What to measure.
#[derive(Debug, Clone)]
pub struct FilesBenchOptions {
    /// Files in the tree.
    pub files: usize,
    /// Bytes per file.
    pub size: usize,
    /// hare's files in flight (`-P`).
    pub parallel: u16,
    /// Interleaved rounds (the median is reported).
    pub rounds: usize,
    /// Scratch directory (the tree and every copy go there).
    pub scratch: PathBuf,
}

/// The medians of one benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilesBench {
    /// Files in the tree.
    pub files: usize,
    /// Median seconds of a hare job (connect to last verdict).
    pub hare_s: f64,
    /// Median seconds of `cp -r` + `sync`.
    pub cp_s: f64,
}

impl FilesBench {
    /// hare's time over `cp -r` + `sync`'s (the target is at most 1.1).
    pub fn ratio(&self) -> f64 {
        self.hare_s / self.cp_s
    }
}

impl std::fmt::Display for FilesBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.files as f64;
        writeln!(
            f,
            "hare            {:>9.0} files/s  ({:.3} s)",
            n / self.hare_s,
            self.hare_s
        )?;
        writeln!(
            f,
            "cp -r + sync    {:>9.0} files/s  ({:.3} s)",
            n / self.cp_s,
            self.cp_s
        )?;
        write!(f, "time ratio hare / (cp -r + sync): {:.2}x", self.ratio())
    }
}

/// Write the tree: `files` files of `size` seeded bytes, [`PER_DIR`] to a directory.
fn make_tree(root: &Path, files: usize, size: usize) -> Result<()> {
    for i in 0..files {
        let dir = root.join(format!("d{:04}", i / PER_DIR));
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(&dir)
                .map_err(|e| TransferError::io(format!("creating {}", dir.display()), e))?;
        }
        let data: Vec<u8> = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
        let p = dir.join(format!("f{i:06}.bin"));
        std::fs::write(&p, data)
            .map_err(|e| TransferError::io(format!("writing {}", p.display()), e))?;
    }
    Ok(())
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let st = cmd
        .status()
        .map_err(|e| TransferError::io(format!("running {shown}"), e))?;
    if st.success() {
        Ok(())
    } else {
        Err(TransferError::Config(format!("{shown} failed: {st}")))
    }
}

/// One `cp -r SRC DST && sync`, timed.
fn time_cp(src: &Path, dst: &Path) -> Result<f64> {
    let t = Instant::now();
    run_cmd(Command::new("cp").arg("-r").arg(src).arg(dst))?;
    run_cmd(&mut Command::new("sync"))?;
    Ok(t.elapsed().as_secs_f64())
}

/// One hare job of the tree into `dst`, timed from connecting to the last verdict; every
/// file must arrive.
fn time_hare(o: &FilesBenchOptions, src: &Path, dst: &Path) -> Result<f64> {
    let id = o.scratch.join("receiver-identity");
    std::fs::create_dir_all(dst).map_err(|e| TransferError::io("creating the target", e))?;
    let recv = BackgroundReceiver::start(recv_options(id, Some(dst.to_path_buf())))?;
    let job = SendJob::Files {
        paths: vec![src.to_path_buf()],
        resume: false,
        force: false,
        parallel: o.parallel,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| TransferError::io("starting a runtime", e))?;
    let opts = send_options(recv.addr, recv.trust(), job);
    let t = Instant::now();
    let outcome = rt.block_on(crate::sender::send(opts, Stop::never()))?;
    let secs = t.elapsed().as_secs_f64();
    let ok = outcome.files.iter().filter(|f| f.ok).count();
    if ok != o.files {
        return Err(TransferError::Config(format!(
            "only {ok} of {} files arrived",
            o.files
        )));
    }
    Ok(secs)
}

/// Run the benchmark: `rounds` interleaved pairs (hare first in odd rounds, `cp` first in
/// even ones), each into a fresh directory removed afterwards.
pub fn run(o: &FilesBenchOptions, mut progress: impl FnMut(&str)) -> Result<FilesBench> {
    if o.files == 0 || o.files > crate::protocol::MAX_FILES || o.rounds == 0 {
        return Err(TransferError::Usage(format!(
            "bench-files: --files must be 1 to {} and --rounds at least 1",
            crate::protocol::MAX_FILES
        )));
    }
    let src = o.scratch.join("tree");
    make_tree(&src, o.files, o.size)?;
    run_cmd(&mut Command::new("sync"))?;
    let (mut hare, mut cp) = (Vec::new(), Vec::new());
    for r in 0..o.rounds {
        let (h_dst, c_dst) = (
            o.scratch.join(format!("hare{r}")),
            o.scratch.join(format!("cp{r}")),
        );
        // An untimed `sync` before each measurement: without it one side's flush also pays
        // for the other's writes and the last round's removals (the rounds came out bimodal,
        // 0.3 s or 1.6 s for the same `cp -r` + `sync`).
        let (h, c) = if r % 2 == 0 {
            run_cmd(&mut Command::new("sync"))?;
            let h = time_hare(o, &src, &h_dst)?;
            run_cmd(&mut Command::new("sync"))?;
            (h, time_cp(&src, &c_dst)?)
        } else {
            run_cmd(&mut Command::new("sync"))?;
            let c = time_cp(&src, &c_dst)?;
            run_cmd(&mut Command::new("sync"))?;
            (time_hare(o, &src, &h_dst)?, c)
        };
        progress(&format!(
            "round {}: hare {h:.3} s, cp -r + sync {c:.3} s ({:.2}x)",
            r + 1,
            h / c
        ));
        hare.push(h);
        cp.push(c);
        let _ = std::fs::remove_dir_all(&h_dst);
        let _ = std::fs::remove_dir_all(&c_dst);
    }
    Ok(FilesBench {
        files: o.files,
        hare_s: crate::bench::median(&hare).unwrap_or(f64::NAN),
        cp_s: crate::bench::median(&cp).unwrap_or(f64::NAN),
    })
}
