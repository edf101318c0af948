//! One file sent as ranges over the job's connections (`-C N`, a file with more than
//! `--chunk` bytes to send). The file is still read once, in order, by its file task (so its
//! digest and its change checks are those of a single stream); each full range is handed to a
//! task that writes it on a stream of the first free connection and waits until the receiver
//! acknowledged all of it. A range lost with its connection is read again from the file and
//! sent on another one; the file is finished only once every range was acknowledged.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::stripes::Stripes;
use crate::error::{Result, TransferError};
use crate::protocol::{close, DataHeader, HaveRange};

/// How a range's task ended.
enum RangeEnd {
    /// The receiver acknowledged every byte of the range at this offset.
    Delivered(u64),
    /// Its connection failed first: send it again elsewhere.
    Lost { offset: u64, len: u64 },
    /// The receiver stopped the stream (it gave the file up).
    Stopped(String),
}

/// The ranges of one file in flight.
pub(super) struct Striper {
    stripes: Arc<Stripes>,
    file: std::fs::File,
    index: u32,
    start: u64,
    /// The file's listed size (where its last stretch is).
    size: u64,
    attempt: u16,
    /// The range being filled: its offset and buffers.
    at: u64,
    bufs: Vec<Bytes>,
    len: u64,
    tasks: JoinSet<RangeEnd>,
    /// Offsets of the ranges sent and not yet acknowledged.
    open: std::collections::BTreeSet<u64>,
    /// Pieces the receiver holds already (a resumed file), by offset: (length, digest).
    have: std::collections::HashMap<u64, (u64, String)>,
    /// Bytes not sent because the receiver had them.
    pub(super) skipped: u64,
    /// Set to reset every stream of the file (it is abandoned).
    cancel: watch::Sender<bool>,
}

impl Striper {
    /// Ranges of file `index` of `size` bytes, whose data starts at `start`, for attempt
    /// `attempt`; `file` is read again for a range that is lost.
    pub(super) fn new(
        stripes: Arc<Stripes>,
        (file, size): (std::fs::File, u64),
        (index, start, attempt): (u32, u64, u16),
        have: Vec<HaveRange>,
    ) -> Self {
        Self {
            stripes,
            file,
            index,
            start,
            size,
            attempt,
            at: start,
            bufs: Vec::new(),
            len: 0,
            tasks: JoinSet::new(),
            open: std::collections::BTreeSet::new(),
            have: have
                .into_iter()
                .map(|h| (h.offset, (h.len, h.blake3)))
                .collect(),
            skipped: 0,
            cancel: watch::channel(false).0,
        }
    }

    /// The next bytes of the file, in order. Ranges end where [`Striping::range_end`]
    /// says (chunk multiples, pieces in the last stretch), so that a rerun's ranges are those
    /// the receiver kept pieces of.
    ///
    /// [`Striping::range_end`]: crate::protocol::Striping
    pub(super) async fn write(&mut self, mut b: Bytes) -> Result<()> {
        while !b.is_empty() {
            let end = self.stripes.striping.range_end(self.at, self.size);
            let room = end - (self.at + self.len);
            let piece = b.split_to(room.min(b.len() as u64) as usize);
            self.len += piece.len() as u64;
            self.bufs.push(piece);
            if self.at + self.len == end {
                self.resend_lost().await?;
                self.ship().await?;
            }
        }
        Ok(())
    }

    /// The receiver holds the range at `at` already, with these very bytes.
    fn held(&self, at: u64, bufs: &[Bytes]) -> bool {
        let Some((len, digest)) = self.have.get(&at) else {
            return false;
        };
        let mut h = blake3::Hasher::new();
        bufs.iter().for_each(|b| {
            h.update(b);
        });
        *len == bufs.iter().map(|b| b.len() as u64).sum::<u64>()
            && h.finalize().to_hex().as_str() == digest
    }

    /// Send what is left, then wait until every range is acknowledged (sending lost ones
    /// again).
    pub(super) async fn finish(&mut self) -> Result<()> {
        if self.len > 0 {
            self.ship().await?;
        }
        while let Some(end) = self.tasks.join_next().await {
            self.settle(end).await?;
        }
        Ok(())
    }

    /// Abandon the file: every stream of it is reset.
    pub(super) fn reset(&mut self) {
        let _ = self.cancel.send(true);
        self.tasks.detach_all();
    }

    /// Hand the range being filled to the first free connection, once it ends within
    /// [`Stripes::ahead`] of the oldest range not yet acknowledged (the receiver bounds the
    /// data it holds ahead of its in-order frontier).
    async fn ship(&mut self) -> Result<()> {
        let bufs = std::mem::take(&mut self.bufs);
        let (at, len) = (self.at, self.len);
        self.at += len;
        self.len = 0;
        if self.held(at, &bufs) {
            self.skipped += len;
            return Ok(());
        }
        while let Some(&oldest) = self.open.first() {
            if at + len - oldest <= self.stripes.ahead {
                break;
            }
            match self.tasks.join_next().await {
                Some(end) => self.settle(end).await?,
                None => break,
            }
        }
        self.spawn(at, len, bufs).await
    }

    async fn spawn(&mut self, at: u64, len: u64, bufs: Vec<Bytes>) -> Result<()> {
        self.open.insert(at);
        let i = self.stripes.take_free(len).await?;
        let h = DataHeader::range(self.index, at, self.start, self.attempt);
        let stripes = self.stripes.clone();
        let cancel = self.cancel.subscribe();
        self.tasks.spawn(async move {
            let end = send_range(stripes.clone(), i, h, (len, bufs), cancel).await;
            stripes.settled(i, len);
            end
        });
        Ok(())
    }

    /// Ranges whose task ended: send lost ones again, fail on a stop.
    async fn resend_lost(&mut self) -> Result<()> {
        while let Some(end) = self.tasks.try_join_next() {
            self.settle(end).await?;
        }
        Ok(())
    }

    async fn settle(
        &mut self,
        end: std::result::Result<RangeEnd, tokio::task::JoinError>,
    ) -> Result<()> {
        match end {
            Ok(RangeEnd::Delivered(at)) => {
                self.open.remove(&at);
                Ok(())
            }
            Ok(RangeEnd::Lost { offset, len }) => {
                let bufs = vec![self.read_again(offset, len)?];
                self.spawn(offset, len, bufs).await
            }
            Ok(RangeEnd::Stopped(why)) => Err(TransferError::Connection(why)),
            Err(e) => Err(TransferError::Connection(format!(
                "a range task failed: {e}"
            ))),
        }
    }

    /// A lost range, read again from the file (the file task's final checks still judge
    /// whether the file changed meanwhile).
    fn read_again(&self, offset: u64, len: u64) -> Result<Bytes> {
        let n = usize::try_from(len)
            .map_err(|_| TransferError::Config("a range larger than memory".into()))?;
        let mut buf = vec![0u8; n];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| TransferError::Connection(format!("reading a range again: {e}")))?;
        Ok(Bytes::from(buf))
    }
}

/// The receiver stopped the stream of the range `h` with `code`.
fn stopped(h: &DataHeader, code: quinn::VarInt) -> RangeEnd {
    RangeEnd::Stopped(format!(
        "the receiver stopped range {} of file {} (code {code})",
        h.offset, h.index
    ))
}

/// The priority of the range at `offset`: lower for each later one (ranges start at least
/// the smallest chunk apart).
fn range_priority(offset: u64) -> i32 {
    let k = offset / crate::protocol::MIN_CHUNK;
    -i32::try_from(k).unwrap_or(i32::MAX)
}

/// Write one range on connection `i` and wait for its acknowledgement; reset the stream if
/// the file is abandoned meanwhile.
async fn send_range(
    stripes: Arc<Stripes>,
    i: usize,
    h: DataHeader,
    (len, bufs): (u64, Vec<Bytes>),
    mut cancel: watch::Receiver<bool>,
) -> RangeEnd {
    let mut writing = true;
    let lost = |stripes: &Stripes, writing: bool| {
        if writing {
            stripes.done_writing(i);
        }
        stripes.broke(i);
        RangeEnd::Lost {
            offset: h.offset,
            len,
        }
    };
    // `take_free` gave a joined connection: one without a handle is lost all the same.
    let Some(conn) = stripes.conn(i) else {
        return lost(&stripes, writing);
    };
    let Ok(mut s) = conn.open_uni().await else {
        return lost(&stripes, writing);
    };
    // quinn sends a connection's streams of equal priority round-robin: ranges queued on one
    // connection would all advance at once, and a stop would leave each of them partial.
    // The earlier range goes first (below the control stream's priority 1).
    let _ = s.set_priority(range_priority(h.offset));
    let sent = async {
        s.write_all(&h.encode()).await?;
        for b in bufs {
            s.write_chunk(b).await?;
        }
        s.finish().map_err(|_| quinn::WriteError::ClosedStream)
    };
    let written = tokio::select! {
        r = sent => r,
        _ = cancel.wait_for(|c| *c) => {
            let _ = s.reset(quinn::VarInt::from_u32(close::PROTOCOL));
            stripes.done_writing(i);
            return RangeEnd::Delivered(h.offset);
        }
    };
    match written {
        Ok(()) => {}
        // The receiver gave the file up (its disk is full, the data broke a limit): the
        // connection is fine, and the file's verdict says why.
        Err(quinn::WriteError::Stopped(code)) => {
            stripes.done_writing(i);
            return stopped(&h, code);
        }
        Err(_) => return lost(&stripes, writing),
    }
    stripes.done_writing(i);
    writing = false;
    match s.stopped().await {
        Ok(None) => RangeEnd::Delivered(h.offset),
        Ok(Some(code)) => stopped(&h, code),
        Err(_) => lost(&stripes, writing),
    }
}
