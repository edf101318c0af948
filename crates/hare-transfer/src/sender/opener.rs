//! Opening data channels: QUIC unidirectional streams or further TCP connections.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::channels::{DataOut, TcpDataSocket};
use crate::error::{Result, TransferError};
use crate::protocol::{DataHeader, DataKind};
use crate::tcp::{self, TcpOptions};

/// Opens data channels of the job.
#[derive(Clone)]
pub(super) enum Opener {
    Quic(quinn::Connection),
    Tcp {
        addr: SocketAddr,
        opts: TcpOptions,
        session: [u8; 12],
        sockets: DataSockets,
        /// Reverse mode on the receiver: the data connections the client opened, by bulk
        /// stream number, written to instead of connecting.
        given: Option<GivenSockets>,
    },
}

/// Data connections a reverse client opened, by bulk stream number (taken as opened).
pub(super) type GivenSockets = Arc<Mutex<HashMap<u32, tokio::net::TcpStream>>>;

/// The data connections of a kernel-TCP job in opening order, each with its bulk stream
/// number (`None` for a file's connection), for `TCP_INFO` by stream.
pub(super) type DataSockets = Arc<Mutex<Vec<(Option<u32>, TcpDataSocket)>>>;

impl Opener {
    pub(super) async fn open(&self, mut h: DataHeader) -> Result<DataOut> {
        match self {
            Opener::Quic(c) => {
                let mut s = c
                    .open_uni()
                    .await
                    .map_err(|e| TransferError::Connection(format!("opening a stream: {e}")))?;
                s.write_all(&h.encode()).await.map_err(|e| {
                    TransferError::Connection(format!("writing a stream header: {e}"))
                })?;
                Ok(DataOut::Quic(s))
            }
            Opener::Tcp {
                given: Some(given),
                sockets,
                ..
            } => {
                let stream = lock(given).remove(&h.index).ok_or_else(|| {
                    TransferError::Protocol(format!("no data connection for stream {}", h.index))
                })?;
                let s = TcpDataSocket::new(stream);
                lock(sockets).push((Some(h.index), s.clone()));
                Ok(DataOut::Tcp(s))
            }
            Opener::Tcp {
                addr,
                opts,
                session,
                sockets,
                given: None,
            } => {
                h.session = *session;
                let s = TcpDataSocket::new(tcp::connect(*addr, opts).await?);
                let bulk = (h.kind == DataKind::Bulk).then_some(h.index);
                lock(sockets).push((bulk, s.clone()));
                let mut out = DataOut::Tcp(s);
                out.write(Bytes::copy_from_slice(&h.encode())).await?;
                Ok(out)
            }
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
