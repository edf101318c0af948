//! Control frames: a 4-byte big-endian length, then that many bytes of one JSON message, at
//! most [`MAX_FRAME`].

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::MAX_FRAME;
use crate::error::{Result, TransferError};

/// Write one control frame.
pub async fn write_frame<W, T>(w: &mut W, msg: &T) -> Result<()>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let body = serde_json::to_vec(msg)
        .map_err(|e| TransferError::Protocol(format!("cannot encode a message: {e}")))?;
    if body.len() > MAX_FRAME {
        return Err(TransferError::Protocol(format!(
            "message of {} bytes exceeds the {MAX_FRAME}-byte frame limit (too many files?)",
            body.len()
        )));
    }
    let len = (body.len() as u32).to_be_bytes();
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&len);
    buf.extend_from_slice(&body);
    w.write_all(&buf)
        .await
        .map_err(|e| TransferError::io("writing to the control channel", e))?;
    w.flush()
        .await
        .map_err(|e| TransferError::io("flushing the control channel", e))
}

/// Read one control frame; `Ok(None)` when the channel ended cleanly between frames.
pub async fn read_frame<R, T>(r: &mut R) -> Result<Option<T>>
where
    R: AsyncRead + Unpin,
    T: for<'de> Deserialize<'de>,
{
    let mut len = [0u8; 4];
    // Read the first byte separately to tell a clean end from a cut frame.
    match r.read(&mut len[..1]).await {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(TransferError::io("reading the control channel", e)),
    }
    r.read_exact(&mut len[1..])
        .await
        .map_err(|e| cut_frame(e, "its length"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(TransferError::Protocol(format!(
            "control frame of {len} bytes exceeds the {MAX_FRAME}-byte limit"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .await
        .map_err(|e| cut_frame(e, "its body"))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| TransferError::Protocol(format!("bad control message: {e}")))
}

/// A read error inside a frame: a stream that ends there broke the framing (a protocol
/// error, close code 3); anything else is the connection's own error.
fn cut_frame(e: std::io::Error, what: &str) -> TransferError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        return TransferError::Protocol(format!(
            "the control stream ended inside a frame ({what} cut short)"
        ));
    }
    TransferError::io("reading the control channel", e)
}
