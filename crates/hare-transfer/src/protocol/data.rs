//! The fixed header that opens every data channel (QUIC unidirectional stream or TCP
//! connection).

use super::PROTOCOL_VERSION;
use crate::error::{Result, TransferError};

/// Kinds of data channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// A bulk stream (payload is discarded).
    Bulk = 0,
    /// A file stream.
    File = 1,
    /// One range of a file sent over several streams, possibly on several connections of
    /// one job (`--connections`): the stream ends where the range does, and bytes 20..28 of
    /// the header hold the offset the file's data starts at (0, or the resume point), so that
    /// whichever range arrives first opens the file the same way.
    Range = 2,
}

/// The fixed 32-byte header that opens every data channel: magic `HARE`, version byte,
/// kind byte, two reserved bytes, the index (file index or stream number) as big-endian u32,
/// the file offset at which the payload starts as big-endian u64, and (TCP only, zeros on
/// QUIC) the 12 first bytes of the session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// Bulk or file.
    pub kind: DataKind,
    /// File index in the manifest, or stream number for bulk.
    pub index: u32,
    /// File offset of the first payload byte.
    pub offset: u64,
    /// TCP session id prefix (zeros on QUIC).
    pub session: [u8; 12],
    /// Which attempt at a file the channel carries: 0 the first, then the number a
    /// [`ToReceiver::FileRetry`] gave (bytes 6 and 7, which were reserved: zero from senders
    /// before retries were numbered). A receiver drops a channel of an attempt it already
    /// discarded, which can arrive after the retry.
    pub attempt: u16,
}

impl DataHeader {
    /// Encoded length.
    pub const LEN: usize = 32;
    const MAGIC: &'static [u8; 4] = b"HARE";

    /// Encode.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(Self::MAGIC);
        b[4] = PROTOCOL_VERSION as u8;
        b[5] = self.kind as u8;
        b[6..8].copy_from_slice(&self.attempt.to_be_bytes());
        b[8..12].copy_from_slice(&self.index.to_be_bytes());
        b[12..20].copy_from_slice(&self.offset.to_be_bytes());
        b[20..32].copy_from_slice(&self.session);
        b
    }

    /// The header of a range of file `index` at `offset`, of a file whose data starts at
    /// `start`, for attempt `attempt` (QUIC only: the session bytes carry `start`).
    pub fn range(index: u32, offset: u64, start: u64, attempt: u16) -> Self {
        let mut session = [0u8; 12];
        session[..8].copy_from_slice(&start.to_be_bytes());
        Self {
            kind: DataKind::Range,
            index,
            offset,
            session,
            attempt,
        }
    }

    /// Where the data of a range's file starts ([`DataKind::Range`]; 0 for other kinds).
    pub fn range_start(&self) -> u64 {
        if self.kind != DataKind::Range {
            return 0;
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.session[..8]);
        u64::from_be_bytes(b)
    }

    /// Decode, checking magic, version and kind.
    pub fn decode(b: &[u8; Self::LEN]) -> Result<Self> {
        if &b[..4] != Self::MAGIC {
            return Err(TransferError::Protocol(
                "data channel does not start with the HARE magic".into(),
            ));
        }
        if u32::from(b[4]) != PROTOCOL_VERSION {
            return Err(TransferError::Protocol(format!(
                "data channel of protocol version {}, expected {PROTOCOL_VERSION}",
                b[4]
            )));
        }
        let kind = match b[5] {
            0 => DataKind::Bulk,
            1 => DataKind::File,
            2 => DataKind::Range,
            k => {
                return Err(TransferError::Protocol(format!(
                    "unknown data channel kind {k}"
                )))
            }
        };
        let mut index = [0u8; 4];
        index.copy_from_slice(&b[8..12]);
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&b[12..20]);
        let mut session = [0u8; 12];
        session.copy_from_slice(&b[20..32]);
        Ok(Self {
            kind,
            index: u32::from_be_bytes(index),
            offset: u64::from_be_bytes(offset),
            session,
            attempt: u16::from_be_bytes([b[6], b[7]]),
        })
    }
}
