//! Durability for many files at once. A job does not fsync each file: verified files wait
//! under their temporary names in a batch; a flush then runs `syncfs(2)` on the job
//! directory's file system (the data of every file of the batch is on disk), renames each file
//! to its final name, and runs `syncfs(2)` again (the names are on disk). Only then does the
//! sender hear "done" for those files. So a final name only ever names complete, verified data,
//! and nothing is reported done before it and its name survive a crash, as with one fsync per
//! file and per directory, for two syncs per batch instead of one per file (the cost
//! `cp -r` + `sync` pays).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{os_reason, Failure, Verified};
use crate::protocol::FailCode;

/// Most files waiting in one batch (each holds no descriptor while it waits).
pub const BATCH_FILES: usize = 4096;
/// Longest a verified file waits for its batch to be flushed: each flush costs two file
/// system syncs, which on a busy disk take long, so a job of many files flushes rarely.
pub const BATCH_DELAY: Duration = Duration::from_secs(1);

/// Verified files waiting to be made durable and published, by manifest index.
#[derive(Debug)]
pub struct Batch {
    dir: Arc<File>,
    items: Vec<(u32, Verified)>,
    since: Option<Instant>,
}

/// What a flush decided for each file: `Err` holds the reason for the sender.
pub type Published = Vec<(u32, Result<(), Failure>)>;

impl Batch {
    /// A batch for files beneath `root` (its directory, for `syncfs`).
    pub fn open(root: &super::Root) -> std::io::Result<Self> {
        let dir = root.dir_file()?;
        Ok(Self {
            dir: Arc::new(dir),
            items: Vec::new(),
            since: None,
        })
    }

    /// Add a verified file.
    pub fn push(&mut self, index: u32, v: Verified) {
        self.since.get_or_insert_with(Instant::now);
        self.items.push((index, v));
    }

    #[cfg(test)]
    /// Files waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when no file waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// True when the batch is full.
    pub fn full(&self) -> bool {
        self.items.len() >= BATCH_FILES
    }

    /// When the oldest waiting file must be flushed at the latest.
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|t| t + BATCH_DELAY)
    }

    /// Make every waiting file durable and publish it (blocking: call it off the runtime
    /// thread, e.g. through `spawn_blocking`).
    pub fn flush(&mut self) -> Published {
        self.since = None;
        let items = std::mem::take(&mut self.items);
        if items.is_empty() {
            return Vec::new();
        }
        if let Err(e) = syncfs(&self.dir) {
            let why = format!("cannot make it durable (syncfs): {}", os_reason(&e));
            let code = FailCode::of_io(&e);
            return items
                .into_iter()
                .map(|(i, v)| {
                    let r = Err(Failure::new(code, format!("{}: {why}", v.name())));
                    v.discard();
                    (i, r)
                })
                .collect();
        }
        let mut out: Published = items
            .into_iter()
            .map(|(i, v)| (i, v.publish().map_err(Failure::from)))
            .collect();
        if let Err(e) = syncfs(&self.dir) {
            // The data is durable but its name may not be: not reported done.
            let why = format!("its name may not be durable (syncfs): {}", os_reason(&e));
            for (_, r) in out.iter_mut().filter(|(_, r)| r.is_ok()) {
                *r = Err(Failure::new(FailCode::of_io(&e), why.clone()));
            }
        }
        out
    }
}

/// `syncfs(2)` on the file system holding `f` (Linux 2.6.39).
pub(crate) fn syncfs(f: &File) -> std::io::Result<()> {
    // SAFETY: the descriptor is open for the duration of the call.
    if unsafe { libc::syncfs(f.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{plan_file, tests::target, Decision, Existing, FileSink, FinalNames};
    use super::*;
    use crate::protocol::FileEntry;

    #[test]
    fn nothing_is_published_before_the_flush() {
        let d = tempfile::tempdir().expect("tempdir");
        let names = FinalNames::default();
        let t = target(d.path());
        let mut batch = Batch::open(&t.root).expect("batch");
        for (i, n) in ["a", "sub/b"].into_iter().enumerate() {
            let e = FileEntry::new(n, 3);
            let Ok(Decision::Send(p)) = plan_file(&t, &e, false, Existing::Refuse, &names) else {
                panic!("{n} not planned");
            };
            let mut s = FileSink::open(&t, *p, 0).expect("open");
            s.write(0, b"xyz").expect("write");
            let v = s
                .verify(blake3::hash(b"xyz").to_hex().as_str())
                .expect("ok");
            batch.push(i as u32, v);
        }
        assert_eq!(batch.len(), 2);
        assert!(!d.path().join("a").exists());
        let out = batch.flush();
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|(_, r)| r.is_ok()), "{out:?}");
        assert!(batch.is_empty() && batch.due().is_none());
        assert_eq!(std::fs::read(d.path().join("sub/b")).expect("r"), b"xyz");
    }
}
